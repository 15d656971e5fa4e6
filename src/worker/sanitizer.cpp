#include "kqual/worker/sanitizer.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::worker {
namespace fs = std::filesystem;

std::optional<std::string> find_compute_sanitizer() {
  if (const char* e = std::getenv("KQUAL_COMPUTE_SANITIZER"); e && *e) {
    if (access(e, X_OK) == 0) return std::string(e);
    throw_error(ErrorKind::input, fmt::format("KQUAL_COMPUTE_SANITIZER={} is not an executable file", e));
  }
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH"))
    for (const std::string& d : split_path_list(path)) dirs.emplace_back(d);
  for (const char* d : {"/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer", "/opt/nvidia/compute-sanitizer"})
    dirs.emplace_back(d);
  for (const auto& d : dirs)
    if (access((d / "compute-sanitizer").c_str(), X_OK) == 0) return (d / "compute-sanitizer").string();
  return std::nullopt;
}

namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string classify(const std::string& line) {
  auto has = [&](const char* s) { return line.find(s) != std::string::npos; };
  // racecheck prints "ERROR: Race reported ..." for hazards it is sure of and "WARNING: ..." for
  // those it is not (e.g. same-value writes): only the first are races here.
  if (has("Race reported") || has("hazard")) return lower(line).rfind("warning", 0) == 0 ? "race_warning" : "race";
  if (has("Invalid") && has("read")) return "out_of_bounds_read";
  if (has("Invalid") && has("write")) return "out_of_bounds_write";
  if (has("Invalid") && has("atomic")) return "out_of_bounds_write";
  if (has("Misaligned")) return "misaligned_access";
  if (has("Uninitialized")) return "uninitialized_read";
  return "sanitizer_error";
}

}  // namespace

SanitizerLog read_sanitizer_log(const fs::path& log) {
  SanitizerLog out;
  std::error_code ec;
  if (!fs::exists(log, ec)) return out;
  out.written = true;
  const std::string text = read_text_file(log);
  std::vector<std::string> lines;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  auto strip = [](std::string s) {
    const std::string prefix = "=========";
    if (s.rfind(prefix, 0) == 0) s.erase(0, prefix.size());
    while (!s.empty() && s.front() == ' ') s.erase(0, 1);
    return s.substr(0, 300);
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (auto k = line.find("ERROR SUMMARY:"); k != std::string::npos) {
      out.errors = std::atoi(line.c_str() + k + 14);
      continue;
    }
    // racecheck: "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)" (no ERROR SUMMARY).
    if (auto k = line.find("RACECHECK SUMMARY:"); k != std::string::npos) {
      if (auto p = line.find('(', k); p != std::string::npos && out.errors < 0) out.errors = std::atoi(line.c_str() + p + 1);
      continue;
    }
    const std::string body = strip(line);
    const std::string low = lower(body);
    const bool finding = low.find("summary") == std::string::npos &&
                         (body.rfind("Invalid", 0) == 0 || low.find("race reported") != std::string::npos ||
                          body.rfind("Uninitialized", 0) == 0 || body.rfind("Misaligned", 0) == 0 ||
                          (low.find("hazard detected") != std::string::npos));
    if (!finding || out.findings.size() >= 20) continue;
    SanitizerFinding f;
    f.code = classify(body);
    f.headline = body;
    for (std::size_t j = i + 1; j < lines.size() && f.context.size() < 4; ++j) {
      std::string c = strip(lines[j]);
      if (c.empty()) break;
      if (c.rfind("Saved host backtrace", 0) == 0) break;
      f.context.push_back(c);
      if (auto k = c.find("of size "); k != std::string::npos && c.find("allocation") != std::string::npos)
        f.allocation_bytes = std::size_t(std::strtoull(c.c_str() + k + 8, nullptr, 10));
    }
    out.findings.push_back(std::move(f));
  }
  return out;
}

json SanitizerLog::to_json() const {
  json fs_j = json::array();
  for (const auto& f : findings)
    fs_j.push_back({{"code", f.code}, {"headline", f.headline}, {"context", f.context}, {"allocation_bytes", f.allocation_bytes}});
  return json{{"written", written}, {"errors", errors < 0 ? json() : json(errors)}, {"findings", fs_j}};
}

}  // namespace kqual::worker
