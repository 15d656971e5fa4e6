// kqual screen's journal and verdict records: the line format, reading a journal back, the
// candidate list, and the counts, exit code and summary table that screen and screen merge share.
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

std::string first_line(const std::string& s, std::size_t max) {
  std::string t = s.substr(0, s.find('\n'));
  if (t.size() > max) t = t.substr(0, max) + "...";
  return t;
}

json ScreenVerdict::to_json() const {
  json c = json::object();
  for (const auto& [k, n] : codes) c[k] = n;
  json j{{"candidate", candidate}, {"name", name},         {"manifest_sha256", manifest_sha256}, {"key", key},
         {"contract", contract},   {"verdict", to_string(verdict)}, {"reason", reason},
         {"codes", c},             {"detail", detail},     {"wall_ms", wall_ms},
         {"compile_ms", compile_ms}, {"finished", finished}};
  if (gpu >= 0) j["gpu"] = gpu;  // with --gpus only: the ordinal (PCI bus order) that judged it
  if (!speed.is_null()) j["speed"] = speed;  // with --timing only
  return j;
}

ScreenVerdict ScreenVerdict::from_json(const json& j) {
  ScreenVerdict v;
  try {
    v.candidate = j.at("candidate").get<std::string>();
    v.name = j.at("name").get<std::string>();
    v.manifest_sha256 = j.at("manifest_sha256").get<std::string>();
    v.key = j.value("key", std::string());  // absent in journals from before the key: never reused
    v.contract = j.value("contract", std::string());
    const std::string word = j.at("verdict").get<std::string>();
    const std::optional<ScreenVerdictKind> kind = kScreenVerdictNames.parse(word);
    if (!kind)
      throw_error(ErrorKind::input, fmt::format("a screen verdict \"{}\" is none of {}", word, kScreenVerdictNames.choices()));
    v.verdict = *kind;
    v.reason = j.value("reason", std::string());
    for (const auto& [k, n] : j.at("codes").items()) v.codes[k] = n.get<int>();
    v.detail = j.value("detail", std::string());
    v.wall_ms = j.value("wall_ms", 0.0);
    v.compile_ms = j.value("compile_ms", 0.0);
    v.finished = j.value("finished", std::string());
    if (j.contains("gpu") && j.at("gpu").is_number_integer()) v.gpu = j.at("gpu").get<int>();
    if (j.contains("speed") && j.at("speed").is_object()) v.speed = j.at("speed");
  } catch (const json::exception& e) {
    throw_error(ErrorKind::input, std::string("a screen journal entry lacks a field: ") + e.what());
  }
  return v;
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

json ScreenCounts::to_json() const {
  json j = json::object();
  for (const auto& [kind, word] : kScreenVerdictNames.entries) j[word] = (*this)[kind];
  return j;
}

ScreenCounts verdict_counts(const std::vector<ScreenVerdict>& verdicts) {
  ScreenCounts counts;
  for (const auto& v : verdicts) ++counts.n[std::size_t(v.verdict)];
  return counts;
}

int screen_exit_code(const ScreenCounts& c, std::size_t missing) {
  using K = ScreenVerdictKind;
  return c[K::error] ? kExitInternal
         : c[K::rejected] ? kExitFail
         : c[K::refused] ? kExitInputError
         : c[K::incomplete] || missing ? kExitIncomplete
                                       : kExitPass;
}

std::string screen_summary_table(const std::vector<ScreenVerdict>& verdicts) {
  const bool gpus = std::any_of(verdicts.begin(), verdicts.end(), [](const ScreenVerdict& v) { return v.gpu >= 0; });
  std::string md = fmt::format("| # | candidate | contract | verdict | reason | wall [ms] |{} from journal |\n|---|---|---|---|---|---|{}---|\n",
                               gpus ? " GPU |" : "", gpus ? "---|" : "");
  auto cell = [](std::string s) {
    s = first_line(s, 160);
    for (std::size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
    return s;
  };
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const auto& v = verdicts[i];
    md += fmt::format("| {} | {} | {} | {} | {} | {:.0f} |{} {} |\n", i + 1, cell(v.name), cell(v.contract), to_string(v.verdict),
                      cell(v.reason + (v.detail.empty() || v.verdict == ScreenVerdictKind::accepted ? "" : ": " + v.detail)),
                      v.wall_ms,
                      gpus ? (v.gpu >= 0 ? fmt::format(" {} |", v.gpu) : std::string("  |")) : std::string(),
                      v.resumed ? "yes" : "");
  }
  return md;
}

}  // namespace kqual::pipeline
