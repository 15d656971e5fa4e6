// kqual screen's journal and verdict records: the line format, reading a journal back, the
// candidate list, and the exit code that screen and screen merge share.
#include "kqual/pipeline/screen_journal.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>

#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void append_journal_line(int fd, const fs::path& file, const std::string& line) {
  const std::string text = line + "\n";
  ssize_t n;
  do {
    n = ::write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  if (n != ssize_t(text.size()))
    throw_error(ErrorKind::io, fmt::format("{}: journal write failed ({})", file.string(),
                                           n < 0 ? std::strerror(errno) : "short write"));
  if (::fsync(fd) != 0) throw_error(ErrorKind::io, fmt::format("{}: fsync failed: {}", file.string(), std::strerror(errno)));
}

json screen_verdict_options(const ScreenOptions& o, const std::string& arch, const std::string& shard) {
  json j{{"contract", o.contract.empty() ? std::string("(each candidate's own)") : o.contract},
         {"seed", o.seed},
         {"large_cases", o.large_cases},
         {"all_cases", o.all_cases},
         {"sanitizer_pass", o.sanitizer_pass},
         {"arch", arch}};
  if (!shard.empty()) j["shard"] = shard;  // absent unsharded: journals from before --shard still resume
  if (o.timing.on) j["timing"] = o.timing.verdict_options();  // absent without --timing: older journals still resume
  return j;
}

std::string option_differences(const json& journal, const json& now, const std::string& was_name, const std::string& now_name) {
  std::vector<std::string> diffs;
  for (const auto& [k, v] : now.items()) {
    const json was = journal.contains(k) ? journal.at(k) : json();
    if (was != v) {
      std::string flag = k;
      std::replace(flag.begin(), flag.end(), '_', '-');
      diffs.push_back(fmt::format("--{}: {} {}, {} {}", flag, was_name, was.is_null() ? "(absent)" : was.dump(), now_name, v.dump()));
    }
  }
  for (const auto& [k, v] : journal.items())
    if (!now.contains(k)) diffs.push_back(fmt::format("{}: in the {} only ({})", k, was_name, v.dump()));
  return fmt::format("{}", fmt::join(diffs, "; "));
}

std::string display_name(const fs::path& dir) {
  std::string n = dir.filename().string();
  return n.empty() ? dir.string() : n;
}

bool reusable(const ScreenVerdict& j, const std::string& key, bool gpu) {
  if (key.empty() || j.key != key || j.verdict == ScreenVerdictKind::error || j.codes.count("harness_error")) return false;
  return !(j.verdict == ScreenVerdictKind::incomplete && gpu);
}

ScreenJournal read_screen_journal(const fs::path& file) {
  ScreenJournal jr;
  if (!fs::exists(file)) return jr;
  const std::string text = read_text_file(file);
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) {  // the last line never got its newline: a write cut short
      jr.torn_tail = true;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    json j;
    bool parsed = true;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      parsed = false;
    }
    if (!parsed) {
      if (nl + 1 == text.size()) {  // a damaged last line is a torn write too
        jr.torn_tail = true;
        break;
      }
      throw_error(ErrorKind::input, fmt::format("{}: line {} is not JSON and is not the last line: the journal is damaged "
                                                "(--restart starts a fresh one)", file.string(), line_no));
    }
    if (line_no == 1) {
      if (!j.is_object() || j.value("journal", std::string()) != kScreenJournalName)
        throw_error(ErrorKind::input, fmt::format("{}: not a kqual screen journal (its first line does not name {}); "
                                                  "use another --out or --restart", file.string(), kScreenJournalName));
      jr.header = j;
    } else {
      try {
        jr.entries.push_back(ScreenVerdict::from_json(j));
      } catch (const Error& e) {
        throw_error(ErrorKind::input, fmt::format("{}: line {}: {} (--restart starts a fresh journal)", file.string(), line_no, e.what()));
      }
    }
    pos = nl + 1;
    jr.good_bytes = pos;
  }
  return jr;
}

std::vector<fs::path> screen_candidates(const std::vector<fs::path>& inputs, std::vector<fs::path>* skipped) {
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& dir) {
    fs::path canon = fs::weakly_canonical(fs::absolute(dir));
    if (seen.insert(canon).second) out.push_back(canon);
  };
  if (inputs.empty()) throw_error(ErrorKind::usage, "screen: no candidate folder given");
  for (const auto& in : inputs) {
    if (!fs::exists(in)) throw_error(ErrorKind::usage, fmt::format("{}: no such file or folder", in.string()));
    if (fs::is_regular_file(in)) {
      if (in.filename() != "kqual.toml")
        throw_error(ErrorKind::usage, fmt::format("{}: expected a candidate folder (or its kqual.toml)", in.string()));
      add(in.parent_path().empty() ? fs::path(".") : in.parent_path());
      continue;
    }
    if (fs::exists(in / "kqual.toml")) {
      add(in);
      continue;
    }
    std::vector<fs::path> found, without;
    for (const auto& e : fs::directory_iterator(in)) {
      if (!e.is_directory()) continue;
      (fs::exists(e.path() / "kqual.toml") ? found : without).push_back(e.path());
    }
    if (found.empty())
      throw_error(ErrorKind::usage, fmt::format("{}: holds no kqual.toml and no candidate folder one level down", in.string()));
    std::sort(found.begin(), found.end());
    std::sort(without.begin(), without.end());
    for (const auto& f : found) add(f);
    if (skipped)
      for (const auto& w : without) skipped->push_back(w);
  }
  return out;
}

int screen_exit_code(const ScreenCounts& c, std::size_t missing) {
  using K = ScreenVerdictKind;
  return c[K::error] ? kExitInternal
         : c[K::rejected] ? kExitFail
         : c[K::refused] ? kExitInputError
         : c[K::incomplete] || missing ? kExitIncomplete
                                       : kExitPass;
}

}  // namespace kqual::pipeline
