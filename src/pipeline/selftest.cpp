// kqual selftest: every bundled good, known-broken and baseline folder, judged as `kqual check` judges
// a candidate. Candidates are compiled by a pool of NVRTC threads ahead of the GPU, and checked by
// several worker sessions ("lanes") on the one device at once: a correctness check is mostly host
// work (references, comparisons, worker round trips) and small kernels, so lanes overlap it.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "kqual/bench/timing.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/pipeline/lanes.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/report/results.hpp"
#include "kqual/worker/sanitizer.hpp"
#include "build_pool.hpp"
#include "selftest_outcome.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

struct SelftestEntry {
  fs::path dir;
  std::string kind;  // "good", "broken", "baseline"
};

// What the compile threads hand to the lanes.
struct SelftestSlot {
  bool skip = false;  // another contract's folder (--contract), or the builders stopped
  BuiltOne one;
};

// One folder's verdicts, folded into the tables in folder order once every lane is done.
struct Judged {
  bool skip = false;
  report::SelftestCandidate row;
  bool broken = false, counted = false;  // counted: in the per-contract table
  int checks = 0, unexpected = 0;
  bool rejected_any = false, intended_all = true, good_accepted = false;
  std::string defect_class;             // broken: the stated reason
  int class_checks = 0, class_ok = 0;
};

unsigned hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// A defect that shows only when timed: the candidate timed alone (no baselines) at every benchmark
// shape up to 2^30 elements.
bench::TimingOptions selftest_timing_options(const build::Manifest& m, std::uint64_t seed) {
  const contract::Contract& c = m.resolved_contract();
  bench::TimingOptions to;
  to.seed = seed;
  to.rounds = 2;
  to.samples_per_round = 10;
  to.measure_copy = false;
  to.give_hash_slots = m.expect_given_hash_slots;
  for (const auto& d : c.benchmark_shapes()) {
    std::int64_t elements = 0;
    for (const auto& t : c.tensors()) elements += c.tensor_elements(t.name, d);
    // Every benchmark shape up to 2^30 elements over all tensors: a timing cheat may act only at
    // the benchmark size (broken/dataset_memo: 2^28); fresh inputs keep larger shapes cheap.
    if (elements <= (std::int64_t(1) << 30)) to.shapes.push_back(d);
  }
  return to;
}

// The timed finding: the first unverified series gives the code and detail.
void timed_finding(const bench::TimingReport& tr, std::map<std::string, int>& codes, std::string& timed_code,
                   std::string& timed_detail) {
  for (const auto& sh : tr.shapes) {
    const auto& cs = sh.series.at(0);
    if (!cs.verified && timed_detail.empty()) {
      timed_code = cs.verify_code.empty() ? "timed_output_wrong" : cs.verify_code;
      ++codes[timed_code];
      timed_detail = fmt::format("shape {}: {}", sh.shape, cs.verify_detail);
    }
  }
}

// One seed's row: the outcome, the case counts, and the first failure worth reading (of the stated
// reason when the candidate is known-broken, else the timed finding, else any).
report::SelftestSeed seed_row(const check::CorrectnessReport& rep, const CorrectnessSummary& sum, std::uint64_t seed,
                              const std::string& got, bool ok, const std::map<std::string, int>& codes,
                              const std::vector<std::string>* expected_codes, const std::string& timed_detail, bool timed_class) {
  std::string detail = expected_codes ? sum.first_failure_with(*expected_codes) : sum.first_failure();
  if (detail.empty()) detail = timed_detail;
  if (detail.empty()) detail = sum.first_failure();
  report::SelftestSeed sd;
  sd.seed = seed;
  sd.outcome = got;
  sd.as_expected = ok;
  sd.counts() = sum.counts();
  sd.failure_codes = codes;
  sd.first_failure = detail;
  sd.timed = timed_class;
  sd.sanitizer_pass = rep.sanitizer.is_null() ? json("not run") : rep.sanitizer;
  sd.wall_ms = sum.wall_ms;
  sd.slowest_cases = rep.to_json(false).at("slowest_cases");
  return sd;
}

// What judging one folder needs from the run.
struct JudgeRun {
  const SelftestOptions& o;
  bool device_present = false;
  std::optional<std::string> sanitizer;
  std::function<void(const std::string&)> say;
};

// One seed's row, and whether the candidate was rejected there (by its cases or when timed).
struct SeedJudged {
  report::SelftestSeed row;
  bool rejected = false;
};

// One seed of a folder: load, check (and time, for a defect class that shows only when timed) in
// `run_in`, or in a worker of its own for a timed class (a launch counter in the module must start
// from zero); the outcome against what the folder expects.
SeedJudged judge_seed(const JudgeRun& run, const SelftestExpectation& x, const build::Manifest& m,
                                build::BuiltCandidate& b, worker::Session& run_in, std::size_t si) {
  const SelftestOptions& o = run.o;
  const bool sanitized = run.sanitizer.has_value();
  const std::uint64_t seed = o.seeds[si];
  std::unique_ptr<worker::Session> own;
  worker::Session* ses = &run_in;
  if (x.timed_class && !sanitized) {
    own = std::make_unique<worker::Session>(run_in.options());
    ses = own.get();
  }
  CheckOneOptions co;
  co.check.seed = seed;
  co.check.include_large = o.large_cases;
  co.check.sanitizer_pass = o.sanitizer_pass && si == 0 && !sanitized;
  if (sanitized) co.check.max_case_elements = std::int64_t(1) << 22;  // sanitizers run kernels 10-100x slower
  if (x.timed_class && !sanitized) co.timing = selftest_timing_options(m, seed);
  const CheckedOne one = check_one(*ses, b, co);
  const check::CorrectnessReport rep = one.report.value_or(check::CorrectnessReport{});
  const CorrectnessSummary sum = one.correctness.value_or(summarize_correctness(rep));
  std::map<std::string, int> codes = sum.failure_codes;
  std::string timed_detail, timed_code;
  if (one.timing) timed_finding(*one.timing, codes, timed_code, timed_detail);
  const SeedOutcome out = seed_outcome(x, one.loaded() ? std::string() : one.load_error, sum, codes, timed_code, timed_detail);
  return {seed_row(rep, sum, seed, out.got, out.ok, codes, x.broken ? &x.codes : nullptr, timed_detail, x.timed_class),
          out.rejected};
}

// Under a sanitizer every candidate gets its own worker (and log); the sanitizer writes its summary
// when that worker exits. `why_not` says why it did not start.
std::unique_ptr<worker::Session> sanitized_session(const JudgeRun& run, worker::Session& lane, const build::Manifest& m,
                                                   std::size_t i, fs::path& log, std::string& why_not) {
  worker::SessionOptions so = lane.options();
  so.watchdog_seconds = std::max(run.o.watchdog_seconds, 600.0);
  log = lane.scratch() / fmt::format("sanitizer-{}-{}-{}.log", m.contract, m.name, i);
  so.worker_wrapper = {*run.sanitizer, "--tool", run.o.sanitize, "--log-file", log.string(), "--print-limit", "20"};
  auto s = std::make_unique<worker::Session>(so);
  if (!s->device().present) why_not = "the worker did not start under compute-sanitizer: " + s->device().why_absent;
  return s;
}

// One folder judged in a lane's session: its manifest and build, then each seed, against what the
// folder expects.
Judged judge_folder(const JudgeRun& run, const SelftestEntry& entry, SelftestSlot slot, worker::Session& lane, std::size_t i) {
  Judged j;
  if (slot.skip) {
    j.skip = true;
    return j;
  }
  BuiltOne& bt = slot.one;
  report::SelftestCandidate& row = j.row;
  row.dir = entry.dir.string();
  row.kind = entry.kind;
  if (!bt.manifest) {
    row.candidate = entry.dir.filename().string();
    row.contract = (entry.kind == "broken" ? entry.dir.parent_path().parent_path() : entry.dir.parent_path()).filename().string();
    row.expected = "a valid manifest";
    row.outcome = "manifest invalid: " + bt.manifest_error;
    row.as_expected = false;
    j.unexpected = j.checks = 1;
    return j;
  }
  const build::Manifest& m = *bt.manifest;
  const SelftestExpectation x = selftest_expectation(m, entry.kind == "broken");
  j.broken = x.broken;
  j.counted = true;
  if (x.broken) j.defect_class = x.codes.front();
  row.candidate = m.name;
  row.contract = m.contract;
  row.expected = x.text;
  if (!bt.built) {
    row.outcome = "build failed: " + bt.build_error;
    row.as_expected = false;
    j.unexpected = j.checks = 1;
    j.intended_all = !x.broken;
    return j;
  }
  if (!run.device_present) {
    row.outcome = "compiled; not run (no GPU)";
    return j;
  }
  std::unique_ptr<worker::Session> san_session;
  worker::Session* run_in = &lane;
  fs::path san_log;
  if (run.sanitizer) {
    std::string why_not;
    san_session = sanitized_session(run, lane, m, i, san_log, why_not);
    run_in = san_session.get();
    if (!why_not.empty()) {
      row.outcome = why_not;
      row.as_expected = false;
      j.unexpected = 1;
      return j;
    }
  }
  std::vector<report::SelftestSeed> seeds;
  bool as_expected = true;
  for (std::size_t si = 0; si < run.o.seeds.size(); ++si) {
    ++j.checks;
    SeedJudged judged = judge_seed(run, x, m, *bt.built, *run_in, si);
    report::SelftestSeed& sd = judged.row;
    if (judged.rejected) j.rejected_any = true;
    if (x.broken && !sd.as_expected) j.intended_all = false;
    if (!sd.as_expected) {
      as_expected = false;
      ++j.unexpected;
    }
    if (x.broken) {
      ++j.class_checks;
      if (sd.as_expected) ++j.class_ok;
    }
    seeds.push_back(std::move(sd));
  }
  if (run.sanitizer) {
    san_session.reset();  // the worker exits; the sanitizer writes its summary
    json sj = worker::read_sanitizer_log(san_log).to_json();
    sj["log"] = san_log.string();
    sj["tool"] = run.o.sanitize;
    row.sanitizer = sj;
  }
  {  // progress as it goes (a run stopped by a time limit still shows what it did)
    std::string outcomes;
    for (const auto& sd : seeds) outcomes += fmt::format(" {}{}", sd.as_expected ? "" : "UNEXPECTED ", sd.outcome);
    run.say(fmt::format("{} {} {} (expected {}):{}", m.contract, entry.kind, m.name, x.text, outcomes));
  }
  row.seeds = std::move(seeds);
  row.as_expected = as_expected;
  j.good_accepted = !x.broken && as_expected;
  return j;
}

// The folders selftest judges: every good and known-broken candidate under root (a folder with a
// kqual.toml, or folders of them), then the baselines, in path order.
std::vector<SelftestEntry> selftest_entries(const fs::path& root, const std::optional<fs::path>& baselines_root) {
  std::vector<SelftestEntry> entries;
  for (const auto& op : fs::directory_iterator(root)) {
    for (const char* kind : {"good", "broken"}) {
      fs::path k = op.path() / kind;
      if (!fs::is_directory(k)) continue;
      if (fs::exists(k / "kqual.toml")) entries.push_back({k, kind});
      for (const auto& e : fs::directory_iterator(k))
        if (fs::exists(e.path() / "kqual.toml")) entries.push_back({e.path(), kind});
    }
  }
  if (baselines_root)
    for (const auto& op : fs::directory_iterator(*baselines_root))
      if (op.is_directory())
        for (const auto& e : fs::directory_iterator(op.path()))
          if (fs::exists(e.path() / "kqual.toml")) entries.push_back({e.path(), "baseline"});
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.dir < b.dir; });
  return entries;
}

// The folders' verdicts folded into the per-candidate, per-contract and per-class tables, in folder
// order; returns (checks, unexpected).
std::pair<int, int> fold_judged(std::vector<Judged>& judged, report::SelftestResult& res) {
  int bad = 0, total = 0;
  std::map<std::string, report::SelftestClassRow> by_class;  // per stated reason of the known-broken candidates
  std::map<std::string, report::SelftestContractRow> per_contract;
  for (auto& j : judged) {
    if (j.skip) continue;
    report::SelftestContractRow& pc = per_contract[j.row.contract];
    pc.contract = j.row.contract;
    total += j.checks;
    bad += j.unexpected;
    if (j.counted && (j.row.seeds || j.row.outcome.value_or("").rfind("build failed", 0) == 0)) {
      if (j.broken) {
        ++pc.broken;
        if (j.rejected_any) ++pc.broken_rejected;
        if (j.intended_all && j.row.seeds) ++pc.broken_for_intended_reason;
      } else {
        ++pc.good;
        if (j.good_accepted) ++pc.good_accepted;
      }
    }
    if (j.broken && j.class_checks > 0) {
      report::SelftestClassRow& bc = by_class[j.defect_class];
      bc.defect_class = j.defect_class;
      bc.checks += j.class_checks;
      bc.rejected_for_it += j.class_ok;
      bc.candidates.push_back(j.row.contract + "/" + j.row.candidate);
    }
    res.candidates.push_back(std::move(j.row));
  }
  for (auto& [name, pc] : per_contract) res.contracts.push_back(pc);
  for (auto& [name, bc] : by_class) res.classes.push_back(bc);
  return {total, bad};
}

int selftest_lanes(int asked, bool gpu) {
  if (!gpu) return 1;
  if (asked > 0) return asked;
  // A lane is a worker process with its own context, its own references and comparisons on the
  // host: one per four host threads, at most four (more contend for the GPU's time slices).
  return int(std::clamp(hardware_threads() / 4, 1u, 4u));
}

// Where the candidates (and baselines) come from: --root's candidates/ and baselines/, else the
// bundled folders. The tree selftest runs is the user's choice: its contracts/ folder is one of
// theirs, a contract folder of the run's lookup.
struct SelftestRoots {
  fs::path candidates;
  std::optional<fs::path> baselines;
  contract::ContractLookup contracts;
};

SelftestRoots selftest_roots(const SelftestOptions& o) {
  SelftestRoots r;
  if (o.root.empty()) {
    auto c = find_bundled("candidates", fs::current_path());
    if (!c) throw_error(ErrorKind::input, "cannot find the bundled candidates/ folder (set KQUAL_HOME)");
    r.candidates = *c;
    r.baselines = find_bundled("baselines", fs::current_path());
  } else {
    if (fs::is_directory(o.root / "baselines")) r.baselines = o.root / "baselines";
    r.candidates = o.root / "candidates";
  }
  contract::ContractSources sources = o.sources;
  if (!o.root.empty() && fs::is_directory(o.root / "contracts")) sources.user_dirs.push_back(o.root / "contracts");
  r.contracts = contract::ContractLookup(sources);
  return r;
}

// The options refused before any work; --contract names checked now (an unknown one is a clear error).
void check_selftest_options(const SelftestOptions& o, const contract::ContractLookup& contracts) {
  if (!o.sanitize.empty() && o.sanitize != "memcheck" && o.sanitize != "racecheck" && o.sanitize != "initcheck" &&
      o.sanitize != "synccheck")
    throw_error(ErrorKind::usage, fmt::format("--sanitize {}: expected memcheck, racecheck, initcheck or synccheck", o.sanitize));
  if (o.lanes < 0) throw_error(ErrorKind::usage, fmt::format("--lanes {}: must be at least 1 (0: automatic)", o.lanes));
  if (o.jobs < 0) throw_error(ErrorKind::usage, fmt::format("--jobs {}: must be at least 1 (0: one per host thread)", o.jobs));
  for (const auto& name : o.contracts) (void)contracts.resolve(name, {});
}

// The lanes: each takes the next folder and judges it in its own worker session (lane 0 in `s`, the
// target's). The first failure stops every lane and the builders, then is thrown again.
std::vector<Judged> judge_in_lanes(int lanes, std::size_t n, worker::Session& s, BuildPool<SelftestSlot>& pool,
                                   const std::function<Judged(worker::Session&, std::size_t)>& judge) {
  std::vector<Judged> judged(n);
  std::vector<std::unique_ptr<worker::Session>> mine(std::size_t(std::max(lanes, 1)));
  std::mutex mu;
  run_lanes(
      std::size_t(lanes), n,
      [&](std::size_t lane, std::size_t i) {
        if (lane > 0 && !mine[lane]) mine[lane] = std::make_unique<worker::Session>(s.options());
        Judged jd = judge(lane > 0 ? *mine[lane] : s, i);
        std::lock_guard<std::mutex> lk(mu);
        judged[i] = std::move(jd);
        return true;
      },
      [&] { pool.stop(); });  // a lane waiting on a build gets "skip" instead of waiting forever
  return judged;
}

}  // namespace

SelftestOutcome selftest(const SelftestOptions& o) {
  SelftestOutcome out;
  const SelftestRoots roots = selftest_roots(o);
  check_selftest_options(o, roots.contracts);
  const std::vector<std::string>& only = o.contracts;
  auto wanted = [&](const std::string& contract) {
    return only.empty() || std::find(only.begin(), only.end(), contract) != only.end();
  };

  Target tg = open_target({true, o.watchdog_seconds, ""});
  worker::Session& s = *tg.session;
  const worker::DeviceFacts& dev = *tg.device;

  std::optional<std::string> sanitizer;
  std::string sanitizer_note;
  if (!o.sanitize.empty()) {
    sanitizer = worker::find_compute_sanitizer();
    if (!sanitizer) sanitizer_note = "compute-sanitizer not found (PATH, /usr/local/cuda/bin; or set KQUAL_COMPUTE_SANITIZER)";
  }

  const std::vector<SelftestEntry> entries =
      selftest_entries(roots.candidates, o.include_baselines ? roots.baselines : std::nullopt);
  const std::size_t n = entries.size();
  const int lanes = selftest_lanes(o.lanes, dev.present);
  const int jobs = o.jobs > 0 ? o.jobs : int(hardware_threads());
  std::mutex say_mu;
  auto say = [&](const std::string& line) {
    if (!o.progress) return;
    std::lock_guard<std::mutex> lk(say_mu);
    o.progress(line);
  };
  say(fmt::format("{} candidate folder(s) under {}; {} compile thread(s); {}", n, roots.candidates.string(), jobs,
                  dev.present ? fmt::format("{} lane(s) (worker sessions) on the GPU", lanes) : std::string("no GPU: compile only")));

  // ---- compile: a pool of NVRTC threads, each folder into a scratch folder of its own ----
  BuildOneOptions bo;
  bo.arch = tg.arch;
  bo.contracts = roots.contracts;
  bo.pass_over = [&](const build::Manifest& m) { return wanted(m.contract) ? std::string() : "not asked for (--contract)"; };
  auto build_folder = [&](std::size_t i) {
    BuildOneOptions mine = bo;
    mine.dir = s.scratch() / fmt::format("selftest-{}", i);
    SelftestSlot slot;
    slot.one = build_one(entries[i].dir, mine);
    // A manifest that does not load may be another contract's folder, not asked for.
    slot.skip = slot.one.manifest ? !slot.one.passed_over.empty() : !only.empty();
    return slot;
  };
  BuildPool<SelftestSlot> pool(n, jobs, build_folder);
  auto take = [&](std::size_t i) {
    std::optional<SelftestSlot> slot = pool.take(i);
    if (slot) return std::move(*slot);
    SelftestSlot stopped;  // another lane failed: the builders stopped
    stopped.skip = true;
    return stopped;
  };

  const JudgeRun run{o, dev.present, sanitizer, say};
  auto judge = [&](worker::Session& lane, std::size_t i) { return judge_folder(run, entries[i], take(i), lane, i); };

  // ---- lanes: each takes the next folder; lane 0 is the target's session ----
  std::vector<Judged> judged = judge_in_lanes(lanes, n, s, pool, judge);

  // ---- fold, in folder order ----
  report::SelftestResult res;
  const auto [total, bad] = fold_judged(judged, res);
  res.provenance = report::provenance(o.command_line, dev.present ? dev.device : json());
  res.device_present = dev.present;
  res.why_no_device = dev.why_absent;
  res.seeds = o.seeds;
  res.checks = total;
  res.unexpected = bad;
  if (!o.sanitize.empty()) res.sanitizer = report::SelftestSanitizer{o.sanitize, sanitizer ? *sanitizer : "", sanitizer_note};
  res.lanes = int(lanes);
  res.compile_threads = int(jobs);
  out.results = report::to_json(res);
  out.result = std::move(res);
  out.exit_code = !dev.present ? kExitIncomplete : bad ? kExitFail : (!o.sanitize.empty() && !sanitizer) ? kExitIncomplete : kExitPass;
  return out;
}

}  // namespace kqual::pipeline
