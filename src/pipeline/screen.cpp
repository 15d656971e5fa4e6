#include "kqual/pipeline/screen.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <thread>

#include "kqual/build/candidate.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/check/plan.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/pipeline/stages.hpp"
#include "kqual/report/provenance.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

constexpr const char* kJournalName = "kqual.screen-journal/1";

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One journal line: the whole line in one write() on an O_APPEND descriptor, then fsync, so a kill
// at any moment leaves either the whole line or a torn tail that the next run drops.
void append_line(int fd, const fs::path& file, const std::string& line) {
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

// The options that decide a verdict; a journal is resumed only under the same ones.
json journal_options(const ScreenOptions& o, const std::string& arch) {
  return json{{"contract", o.contract.empty() ? std::string("(each candidate's own)") : o.contract},
              {"seed", o.seed},
              {"large_cases", o.large_cases},
              {"all_cases", o.all_cases},
              {"sanitizer_pass", o.sanitizer_pass},
              {"arch", arch}};
}

// "--seed: journal 1, this run 2; ..." — empty when the options agree.
std::string option_differences(const json& journal, const json& now) {
  std::vector<std::string> diffs;
  for (const auto& [k, v] : now.items()) {
    const json was = journal.contains(k) ? journal.at(k) : json();
    if (was != v) {
      std::string flag = k;
      std::replace(flag.begin(), flag.end(), '_', '-');
      diffs.push_back(fmt::format("--{}: journal {}, this run {}", flag, was.is_null() ? "(absent)" : was.dump(), v.dump()));
    }
  }
  for (const auto& [k, v] : journal.items())
    if (!now.contains(k)) diffs.push_back(fmt::format("{}: in the journal only ({})", k, v.dump()));
  return fmt::format("{}", fmt::join(diffs, "; "));
}

std::string display_name(const fs::path& dir) {
  std::string n = dir.filename().string();
  return n.empty() ? dir.string() : n;
}

// What the builder threads hand to the GPU loop.
struct BuildSlot {
  bool done = false;
  std::optional<build::BuiltCandidate> built;
  std::optional<ScreenVerdict> verdict;  // set when the candidate ends before the GPU (refused, error)
  double build_ms = 0;
  std::string contract;
};

ScreenVerdict refused(const std::string& kind, const std::string& why) {
  ScreenVerdict v;
  v.verdict = "refused";
  v.reason = kind;
  v.codes[kind] = 1;
  v.detail = why;
  return v;
}

std::string first_line(const std::string& s, std::size_t max = 300) {
  std::string t = s.substr(0, s.find('\n'));
  if (t.size() > max) t = t.substr(0, max) + "...";
  return t;
}

}  // namespace

json ScreenVerdict::to_json() const {
  json c = json::object();
  for (const auto& [k, n] : codes) c[k] = n;
  return json{{"candidate", candidate}, {"name", name},         {"manifest_sha256", manifest_sha256},
              {"contract", contract},   {"verdict", verdict},   {"reason", reason},
              {"codes", c},             {"detail", detail},     {"wall_ms", wall_ms},
              {"compile_ms", compile_ms}, {"finished", finished}};
}

ScreenVerdict ScreenVerdict::from_json(const json& j) {
  ScreenVerdict v;
  try {
    v.candidate = j.at("candidate").get<std::string>();
    v.name = j.at("name").get<std::string>();
    v.manifest_sha256 = j.at("manifest_sha256").get<std::string>();
    v.contract = j.value("contract", std::string());
    v.verdict = j.at("verdict").get<std::string>();
    v.reason = j.value("reason", std::string());
    for (const auto& [k, n] : j.at("codes").items()) v.codes[k] = n.get<int>();
    v.detail = j.value("detail", std::string());
    v.wall_ms = j.value("wall_ms", 0.0);
    v.compile_ms = j.value("compile_ms", 0.0);
    v.finished = j.value("finished", std::string());
  } catch (const json::exception& e) {
    throw_error(ErrorKind::input, std::string("a screen journal entry lacks a field: ") + e.what());
  }
  return v;
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
      if (!j.is_object() || j.value("journal", std::string()) != kJournalName)
        throw_error(ErrorKind::input, fmt::format("{}: not a kqual screen journal (its first line does not name {}); "
                                                  "use another --out or --restart", file.string(), kJournalName));
      jr.header = j;
    } else {
      jr.entries.push_back(ScreenVerdict::from_json(j));
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

ScreenOutcome screen(const ScreenOptions& o) {
  const auto t_start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  if (o.jobs < 1) throw_error(ErrorKind::usage, fmt::format("--jobs {}: must be at least 1", o.jobs));
  if (!o.contract.empty()) (void)contract::find_contract(o.contract);  // an unknown name: a clear error now
  std::vector<fs::path> skipped;
  const std::vector<fs::path> cands = screen_candidates(o.inputs, &skipped);
  for (const auto& s : skipped) say(fmt::format("not a candidate (no kqual.toml): {}", s.string()));

  // ---- target: one session for every candidate ----
  Target tg = open_target({o.use_gpu, o.watchdog_seconds, o.arch});
  worker::Session& session = *tg.session;
  const json options = journal_options(o, tg.arch);

  // ---- journal: resume under the same options, or start fresh ----
  ScreenOutcome out;
  fs::create_directories(o.out_dir);
  out.journal_path = o.out_dir / "journal.jsonl";
  ScreenJournal jr;
  if (o.restart) {
    std::error_code ec;
    fs::remove(out.journal_path, ec);
  } else {
    jr = read_screen_journal(out.journal_path);
  }
  if (!jr.header.is_null()) {
    const std::string diff = option_differences(jr.header.value("options", json::object()), options);
    if (!diff.empty())
      throw_error(ErrorKind::usage, fmt::format("{} was made with other options ({}); run with the same options, "
                                                "another --out, or --restart to start a fresh journal",
                                                out.journal_path.string(), diff));
  }
  if (jr.torn_tail) {
    say(fmt::format("journal: dropped a torn last line (a write cut short); that candidate runs again"));
    if (::truncate(out.journal_path.c_str(), off_t(jr.good_bytes)) != 0)
      throw_error(ErrorKind::io, fmt::format("{}: cannot drop the torn last line: {}", out.journal_path.string(), std::strerror(errno)));
  }
  const int fd = ::open(out.journal_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw_error(ErrorKind::io, fmt::format("{}: cannot open the journal: {}", out.journal_path.string(), std::strerror(errno)));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  if (jr.header.is_null())
    append_line(fd, out.journal_path,
                json{{"journal", kJournalName}, {"options", options}, {"started", utc_now()}, {"command_line", o.command_line}}
                    .dump(-1, ' ', false, json::error_handler_t::replace));

  // ---- which candidates the journal already answers (same folder, same manifest bytes) ----
  std::map<std::string, ScreenVerdict> journaled;  // the last line per folder wins
  for (const auto& e : jr.entries) journaled[e.candidate] = e;
  const std::size_t n = cands.size();
  std::vector<ScreenVerdict> verdicts(n);
  std::vector<std::string> hashes(n);
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < n; ++i) {
    std::error_code ec;
    if (fs::is_regular_file(cands[i] / "kqual.toml", ec)) {
      try {
        hashes[i] = sha256_file_hex((cands[i] / "kqual.toml").string());
      } catch (const std::exception&) {
        hashes[i].clear();  // unreadable: load_manifest says why, and the candidate always runs
      }
    }
    auto it = journaled.find(cands[i].string());
    const bool reuse = it != journaled.end() && !hashes[i].empty() && it->second.manifest_sha256 == hashes[i] &&
                       it->second.verdict != "error" && !(it->second.verdict == "incomplete" && tg.gpu());
    if (reuse) {
      verdicts[i] = it->second;
      verdicts[i].resumed = true;
    } else {
      todo.push_back(i);
    }
  }
  const std::size_t resumed = n - todo.size();
  say(fmt::format("{} candidate(s): {} from the journal, {} to run; {} compile thread(s); {}", n, resumed, todo.size(), o.jobs,
                  tg.gpu() ? "GPU checks in one worker session" : "no GPU (" + tg.why_no_gpu + "): static phases only"));

  // ---- build: a pool of NVRTC threads, ahead of the GPU loop ----
  std::vector<BuildSlot> slots(n);
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  auto builder = [&] {
    for (;;) {
      const std::size_t k = next.fetch_add(1);
      if (k >= todo.size() || stop.load()) return;
      const std::size_t i = todo[k];
      BuildSlot slot;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        build::Manifest m;
        try {
          m = build::load_manifest(cands[i]);
        } catch (const Error& e) {
          slot.verdict = refused("manifest_invalid", e.what());
        }
        if (!slot.verdict) {
          slot.contract = m.contract;
          if (!o.contract.empty() && m.contract != o.contract) {
            slot.verdict = refused("contract_mismatch", fmt::format("{} is a {} candidate; this screen is against {}",
                                                                    m.file.string(), m.contract, o.contract));
          } else {
            try {
              // A folder per candidate: copies of one manifest share its name and image file name.
              const fs::path dir = session.scratch() / fmt::format("c{}", i);
              fs::create_directories(dir);
              slot.built = build::build_candidate(m, tg.arch, dir);
            } catch (const Error& e) {
              slot.verdict = refused("build_failed", e.what());
            }
          }
        }
      } catch (const std::exception& e) {
        ScreenVerdict v;
        v.verdict = "error";
        v.reason = "internal error";
        v.detail = e.what();
        slot.verdict = v;
      }
      slot.build_ms = ms_since(t0);
      slot.done = true;
      {
        std::lock_guard<std::mutex> lk(mu);
        slots[i] = std::move(slot);
      }
      cv.notify_all();
    }
  };
  std::vector<std::jthread> pool;
  struct PoolStopper {  // an exception in the GPU loop stops the builders before the pool joins
    std::atomic<bool>& stop;
    std::vector<std::jthread>& pool;
    ~PoolStopper() {
      stop.store(true);
      pool.clear();
    }
  } stopper{stop, pool};
  const int threads = int(std::min<std::size_t>(std::size_t(o.jobs), std::max<std::size_t>(todo.size(), 1)));
  for (int t = 0; t < threads; ++t) pool.emplace_back(builder);

  // ---- check: one candidate at a time in the session's worker; journal each verdict ----
  check::CheckOptions co;
  co.seed = o.seed;
  co.include_large = o.large_cases;
  co.all_cases = o.all_cases;
  co.sanitizer_pass = o.sanitizer_pass;
  std::size_t shown = 0;  // progress lines count 1..n in candidate order
  for (std::size_t i = 0; i < n; ++i) {
    if (verdicts[i].resumed) {
      say(fmt::format("screen [{}/{}] {}: {} ({}; from the journal)", ++shown, n, display_name(cands[i]), verdicts[i].verdict,
                      verdicts[i].reason));
      continue;
    }
    BuildSlot slot;
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return slots[i].done; });
      slot = std::move(slots[i]);
    }
    ScreenVerdict v;
    double check_ms = 0;
    if (slot.verdict) {
      v = *slot.verdict;
    } else if (!tg.gpu()) {
      v.verdict = "incomplete";
      v.reason = "compiled; no GPU";
      v.detail = tg.why_no_gpu + ": load and correctness not run";
    } else {
      build::BuiltCandidate& b = *slot.built;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        const std::string load_err = check::load_and_describe(session, b);
        if (!load_err.empty()) {
          v.verdict = "rejected";
          v.reason = "load_failed";
          v.codes["load_failed"] = 1;
          v.detail = load_err;
        } else {
          const check::CorrectnessReport rep = check::check_correctness(session, b, co);
          v.codes = rep.failure_codes;
          if (rep.accepted()) {
            v.verdict = "accepted";
            v.reason = fmt::format("{} of {} cases passed, {} refused as the contract requires", rep.passed, rep.cases, rep.refused);
          } else {
            v.verdict = "rejected";
            v.reason = rep.primary_code();
            if (v.reason.empty()) {  // nothing failed, but nothing proved anything either
              v.reason = "no_evidence";
              v.codes["no_evidence"] = 1;
              v.detail = "every passed case's expected output is degenerate (all zero or all equal)";
            }
            for (const auto& x : rep.results)
              if (x.status == "fail") {
                v.detail = x.detail;
                break;
              }
          }
        }
      } catch (const Error& e) {
        // A worker that broke down on this candidate is the candidate's verdict; anything else is kqual's.
        if (e.kind() == ErrorKind::worker) {
          v.verdict = "rejected";
          v.reason = "worker_fault";
          v.codes["worker_fault"] = 1;
        } else {
          v.verdict = "error";
          v.reason = std::string("internal error (") + to_string(e.kind()) + ")";
        }
        v.detail = e.what();
      }
      check_ms = ms_since(t0);
    }
    v.candidate = cands[i].string();
    v.name = display_name(cands[i]);
    v.manifest_sha256 = hashes[i];
    v.contract = slot.contract;
    v.compile_ms = slot.built ? slot.built->compile_ms : 0;
    v.wall_ms = slot.build_ms + check_ms;
    v.finished = utc_now();
    append_line(fd, out.journal_path, v.to_json().dump(-1, ' ', false, json::error_handler_t::replace));
    verdicts[i] = v;
    std::error_code ec;
    fs::remove_all(session.scratch() / fmt::format("c{}", i), ec);  // scratch holds only what is still to run
    say(fmt::format("screen [{}/{}] {}: {} ({})", ++shown, n, v.name, v.verdict, first_line(v.reason, 200)));
  }
  const double wall_s = ms_since(t_start) / 1000.0;

  // ---- write: results.json and summary.md ----
  std::map<std::string, int> counts{{"accepted", 0}, {"rejected", 0}, {"refused", 0}, {"incomplete", 0}, {"error", 0}};
  json rows = json::array();
  for (const auto& v : verdicts) {
    ++counts[v.verdict];
    json j = v.to_json();
    j["resumed"] = v.resumed;
    rows.push_back(j);
  }
  const std::size_t ran = todo.size();
  json r = schema_header("screen");
  r["provenance"] = report::provenance(o.command_line, tg.device_json());
  r["options"] = options;
  r["journal"] = out.journal_path.string();
  r["device_present"] = tg.gpu();
  r["why_no_gpu"] = tg.why_no_gpu;
  r["candidates"] = n;
  r["resumed"] = resumed;
  r["run"] = ran;
  r["counts"] = json{{"accepted", counts["accepted"]}, {"rejected", counts["rejected"]}, {"refused", counts["refused"]},
                     {"incomplete", counts["incomplete"]}, {"error", counts["error"]}};
  r["compile_threads"] = o.jobs;
  r["wall_s"] = wall_s;
  // Throughput of this invocation (resumed verdicts cost nothing here), by wall time: with a GPU,
  // the time the GPU was held.
  r["candidates_per_hour"] = ran > 0 && wall_s > 0 ? json(double(ran) / (wall_s / 3600.0)) : json();
  r["worker_processes_started"] = tg.gpu() ? session.worker().processes_started() : 0;
  json skipped_j = json::array();
  for (const auto& s : skipped) skipped_j.push_back(s.string());
  r["not_candidates"] = skipped_j;
  r["verdicts"] = rows;

  std::string md = "# kqual screen\n\n";
  md += fmt::format("{} candidate(s) — accepted {}, rejected {}, refused {}, incomplete {}{} — {} run in {:.1f} s, {} from the "
                    "journal.\n\n",
                    n, counts["accepted"], counts["rejected"], counts["refused"], counts["incomplete"],
                    counts["error"] ? fmt::format(", kqual errors {}", counts["error"]) : std::string(), ran, wall_s, resumed);
  md += tg.gpu() ? fmt::format("Device: {} ({}).\n\n", tg.device->device.value("name", std::string("?")), tg.arch)
                 : fmt::format("No GPU ({}): only manifests and builds were checked, for {}.\n\n", tg.why_no_gpu, tg.arch);
  md += "| # | candidate | contract | verdict | reason | wall [ms] | from journal |\n|---|---|---|---|---|---|---|\n";
  auto cell = [](std::string s) {
    s = first_line(s, 160);
    for (std::size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
    return s;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto& v = verdicts[i];
    md += fmt::format("| {} | {} | {} | {} | {} | {:.0f} | {} |\n", i + 1, cell(v.name), cell(v.contract), v.verdict,
                      cell(v.reason + (v.detail.empty() || v.verdict == "accepted" ? "" : ": " + v.detail)), v.wall_ms,
                      v.resumed ? "yes" : "");
  }
  out.results_path = o.out_dir / "results.json";
  out.summary_path = o.out_dir / "summary.md";
  write_file_atomic(out.results_path, r.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  write_file_atomic(out.summary_path, md);
  out.results = r;
  out.verdicts = verdicts;
  out.exit_code = counts["error"] ? kExitInternal
                  : counts["rejected"] ? kExitFail
                  : counts["refused"] ? kExitInputError
                  : counts["incomplete"] ? kExitIncomplete
                                         : kExitPass;
  return out;
}

}  // namespace kqual::pipeline
