#include "kqual/pipeline/qualify.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>

#include "kqual/bench/timing.hpp"
#include "kqual/bench/torch_baseline.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/pipeline/stages.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/report/results.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/worker/sanitizer.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

std::optional<fs::path> find_bundled(const std::string& name, const fs::path& hint) {
  if (const char* home = std::getenv("KQUAL_HOME")) {
    fs::path p = fs::path(home) / name;
    if (fs::is_directory(p)) return p;
  }
  auto walk = [&](fs::path start) -> std::optional<fs::path> {
    std::error_code ec;
    start = fs::weakly_canonical(fs::absolute(start), ec);
    for (fs::path p = start; !p.empty(); p = p.parent_path()) {
      if (fs::is_directory(p / name)) return p / name;
      if (p == p.parent_path()) break;
    }
    return std::nullopt;
  };
  if (!hint.empty())
    if (auto p = walk(hint)) return p;
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0)
    if (auto p = walk(fs::path(std::string(buf, std::size_t(n))).parent_path())) return p;
  return std::nullopt;
}

namespace {

report::QualifyContract contract_block(const contract::Contract& c, const contract::Supports& claims) {
  report::QualifyContract out;
  out.name = c.name();
  out.summary = c.summary();
  out.numerical_policy = c.numerical_policy();
  out.domain = c.domain_json();
  // The examples exercise the contract's own refusals: a candidate claiming fewer dtypes must not
  // pre-empt them with "dtype not claimed".
  contract::Supports all_dtypes = claims;
  all_dtypes.dtypes = c.dtypes();
  for (const auto& [req, code] : c.unsupported_examples()) {
    auto got = c.validate(req, all_dtypes);
    std::string desc = std::string(to_string(req.dtype));
    if (!req.dims.empty()) desc += " " + contract::format_dims(req.dims);
    std::vector<std::string> lens;
    for (const auto& [t, n] : req.lengths) lens.push_back(fmt::format("{}={}", t, n));
    desc += fmt::format(" elements({})", fmt::join(lens, ", "));
    if (req.offset_elements) desc += fmt::format(" offset={}", req.offset_elements);
    for (const auto& [t, s] : req.strides) desc += fmt::format(" stride({})={}", t, s);
    if (req.in_place) desc += " in-place";
    if (!got || got->code != code)
      throw_error(ErrorKind::internal, fmt::format("contract {} accepted or misclassified an unsupported request ({}): expected "
                                                   "refusal '{}', got '{}'",
                                                   c.name(), desc, code, got ? got->code : "accepted"));
    out.refusals_checked.push_back({desc, got->code, got->reason});
  }
  return out;
}

report::Claims claims_of(const build::Manifest& m) {
  report::Claims c;
  for (DType t : m.supports.dtypes) c.dtypes.push_back(std::string(to_string(t)));
  c.min_alignment_bytes = m.supports.min_alignment_bytes;
  c.max_n = m.supports.max_n;
  c.in_place = m.supports.in_place;
  return c;
}

}  // namespace

QualifyOutcome qualify(const QualifyOptions& o) {
  // ---- target: manifest, contract, device and arch ----
  QualifyOutcome out;
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  say("manifest: " + o.candidate.string());
  build::Manifest m = build::load_manifest(o.candidate);
  const contract::Contract& c = contract::find_contract(m.contract);
  auto bench_dtype = parse_dtype(o.dtype);
  if (!bench_dtype) throw_error(ErrorKind::usage, fmt::format("--dtype: unknown dtype '{}'", o.dtype));
  (void)bench::parse_torch_baselines(o.torch_baselines);  // a bad --torch-baselines is a usage error before any GPU work
  std::vector<contract::Dims> shapes;
  for (const auto& text : o.shapes) shapes.push_back(contract::parse_shape(c, text));
  report::QualifyResult r;
  r.command = o.command;
  report::PhaseList& phases = r.phases;
  r.candidate = {m.name, m.file.string(), m.contract, m.description, claims_of(m)};
  r.contract = contract_block(c, m.supports);
  phases.set("manifest", "valid");
  phases.set("contract_refusals", fmt::format("{} unsupported requests refused with the expected reason",
                                              r.contract.refusals_checked.size()));
  Target tg = open_target({o.use_gpu, o.watchdog_seconds, o.arch});
  worker::Session& s = *tg.session;

  // ---- build: the candidate and (for timing) every bundled baseline ----
  say(fmt::format("compile: {} for {}", m.name, tg.arch));
  build::BuiltCandidate cand = build::build_candidate(m, tg.arch, s.scratch());
  phases.set("compile", cand.image_file.empty()
                         ? fmt::format("done: {} for {} in {:.1f} ms", cand.compiler, tg.arch, cand.compile_ms)
                         : fmt::format("nothing to compile: {}, loads on {} by {}", cand.compiler, tg.arch, cand.load_path));
  auto baseline_dir = find_bundled("baselines", m.dir);
  std::vector<build::BuiltCandidate> baselines;
  // Baselines matter for timing only (`check` leaves them out; `qualify` also checks them, since a
  // wrong baseline is no baseline).
  if (o.timing && baseline_dir && fs::is_directory(*baseline_dir / m.contract)) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(*baseline_dir / m.contract))
      if (fs::exists(e.path() / "kqual.toml")) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    if (!dirs.empty()) say(fmt::format("compile: {} baseline(s) from {}", dirs.size(), (*baseline_dir / m.contract).string()));
    for (const auto& d : dirs) baselines.push_back(build::build_candidate(build::load_manifest(d), tg.arch, s.scratch()));
  }
  phases.set("baselines", !o.timing            ? std::string("not needed (no timing)")
                         : baselines.empty() ? std::string("none found (baselines/") + m.contract + ")"
                                             : fmt::format("{} compiled", baselines.size()));

  json torch_report;  // bench::TorchBaselineReport, when timing ran
  decision::QualifyFindings f;
  f.arch = tg.arch;
  f.gpu = tg.gpu();
  f.why_no_gpu = tg.why_no_gpu;
  f.correctness_run = o.correctness;
  f.timing_run = o.timing;
  if (!tg.gpu()) {
    say("no GPU: load, correctness and timing not run (" + tg.why_no_gpu + ")");
    for (const char* ph : {"load", "correctness", "timing"}) phases.set(ph, "not run: needs a GPU (" + tg.why_no_gpu + ")");
  } else {
    // ---- load: the module in the worker; registers, shared and local bytes; argument sizes ----
    say(fmt::format("load: {} module(s) on {}", 1 + baselines.size(), tg.arch));
    std::string load_err = check::load_and_describe(s, cand);
    if (!load_err.empty()) throw_error(ErrorKind::input, load_err);
    for (auto& b : baselines) {
      std::string e = check::load_and_describe(s, b);
      if (!e.empty()) throw_error(ErrorKind::internal, "baseline " + b.manifest.name + ": " + e);
    }
    phases.set("load", fmt::format("done on {} ({})", tg.device->device.value("name", "?"), tg.arch));

    // ---- check: the contract's cases, references out of the candidate's reach ----
    check::CheckOptions co;
    co.seed = o.seed;
    co.include_large = o.large_cases;
    co.all_cases = o.all_cases;
    co.sanitizer_pass = o.sanitizer_pass;
    if (o.correctness) {
      say(fmt::format("correctness: {} against {}{}", m.name, m.contract, o.large_cases ? " (with the large cases)" : ""));
      check::CorrectnessReport rep = check::check_correctness(s, cand, co);
      r.correctness = rep.to_json(false);
      f.correct = rep.accepted();
      f.cases = rep.cases;
      f.passed = rep.passed;
      f.failed = rep.failed;
      f.refused = rep.refused;
      f.primary_code = rep.primary_code();
      f.settled_not_run = int(rep.settled_not_run.size());
      for (const auto& x : rep.results)
        if (x.status == "fail") { f.first_failure = x.detail; break; }
      phases.set("correctness", fmt::format("{}: {} passed, {} failed, {} refused of {} cases",
                                            rep.accepted() ? "accepted" : "rejected", rep.passed, rep.failed, rep.refused, rep.cases));
      phases.set("sanitizer_pass", rep.sanitizer.is_object() ? rep.sanitizer.value("status", "not_run") +
                                                                   (rep.sanitizer.contains("why") ? ": " + rep.sanitizer.value("why", "") : "")
                                                             : std::string("not run"));
      std::vector<json> bc;
      check::CheckOptions small = co;
      small.include_large = false;
      small.sanitizer_pass = false;
      for (const auto& b : baselines) {
        say("correctness: baseline " + b.manifest.name);
        bc.push_back(check::check_correctness(s, b, small).to_json(false));
      }
      r.baselines_correctness = std::move(bc);
    } else {
      phases.set("correctness", "not run: not part of `kqual bench` (timing only)");
    }

    // ---- time: against the baselines, L2 flushed, interleaved, timed outputs re-checked ----
    if (!f.correct) {
      phases.set("timing", "not run: the candidate is incorrect");
    } else if (!o.timing) {
      phases.set("timing", "not run: not part of `kqual check` (correctness only)");
    } else {
      bench::TimingOptions to;
      to.dtype = *bench_dtype;
      to.shapes = shapes;
      to.rounds = o.rounds;
      to.samples_per_round = o.samples_per_round;
      to.seed = o.seed;
      to.flush_mode = o.flush_mode;
      to.flush_l2 = o.flush_mode != "none";
      to.timer = o.timer;
      to.graph_launches = o.graph_launches;
      to.fresh_inputs = o.timed_inputs != "datasets";
      to.clock_guard = o.clock_guard;
      to.progress = o.progress;
      f.equivalence_margin = to.equivalence_margin;
      std::vector<const build::BuiltCandidate*> bptr;
      for (const auto& b : baselines) bptr.push_back(&b);
      bench::TimingReport tr = bench::time_against_baselines(s, cand, bptr, to);
      phases.set("timing", fmt::format("done: {} shapes, {} baselines", tr.shapes.size(), baselines.size()));
      // PyTorch eager / compiled next to the native baselines, where the reference is PyTorch.
      torch_report = bench::run_torch_baselines(s, cand, tr, to, bench::parse_torch_baselines(o.torch_baselines)).to_json();
      phases.set("torch_baselines", torch_report.value("status", std::string()));
      for (const auto& sh : tr.shapes) {
        const auto& cs = sh.series.at(0);
        decision::QualifyShape q;
        q.shape = sh.shape;
        if (!cs.error.empty() || !cs.verified) q.failure = cs.error.empty() ? cs.verify_detail : cs.error;
        q.fastest_baseline = sh.fastest_baseline;
        if (!sh.fastest_baseline.empty()) q.vs_fastest = sh.vs_fastest;
        f.shapes.push_back(std::move(q));
      }
      r.timing = std::move(tr);
    }
  }
  r.artifact = cand.to_json();
  for (const auto& b : baselines) r.baselines.push_back(b.to_json());

  // ---- decide, then write ----
  const decision::QualifyVerdict v = decision::decide_qualify(f);
  say(fmt::format("verdict: {}; writing results.json and memo.md to {}", decision::to_string(v.verdict), o.out_dir.string()));
  r.verdict = v;
  r.provenance = report::provenance(o.command_line, tg.device_json());
  out.results = report::to_json(r);
  if (!torch_report.is_null()) out.results["torch_baselines"] = torch_report;
  out.exit_code = decision::exit_code(v.verdict);
  const Written w = write_results(o.out_dir, out.results, report::render_qualify_memo(r));
  out.result = std::move(r);
  out.results_path = w.results;
  out.memo_path = w.memo;
  return out;
}

namespace {

struct SelftestEntry {
  fs::path dir;
  std::string kind;  // "good", "broken", "baseline"
};

}  // namespace

SelftestOutcome selftest(const SelftestOptions& o) {
  SelftestOutcome out;
  fs::path root = o.root;
  std::optional<fs::path> baselines_root;
  if (root.empty()) {
    auto c = find_bundled("candidates", fs::current_path());
    if (!c) throw_error(ErrorKind::input, "cannot find the bundled candidates/ folder (set KQUAL_HOME)");
    root = *c;
    baselines_root = find_bundled("baselines", fs::current_path());
  } else {
    if (fs::is_directory(root / "baselines")) baselines_root = root / "baselines";
    root /= "candidates";
  }
  if (!o.sanitize.empty() && o.sanitize != "memcheck" && o.sanitize != "racecheck" && o.sanitize != "initcheck" &&
      o.sanitize != "synccheck")
    throw_error(ErrorKind::usage, fmt::format("--sanitize {}: expected memcheck, racecheck, initcheck or synccheck", o.sanitize));
  std::vector<std::string> only = o.contracts;
  for (const auto& name : only) (void)contract::find_contract(name);  // unknown names: a clear error now
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
  if (baselines_root && o.include_baselines)
    for (const auto& op : fs::directory_iterator(*baselines_root))
      if (op.is_directory())
        for (const auto& e : fs::directory_iterator(op.path()))
          if (fs::exists(e.path() / "kqual.toml")) entries.push_back({e.path(), "baseline"});
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.dir < b.dir; });
  if (o.progress)
    o.progress(fmt::format("{} candidate folder(s) under {}{}", entries.size(), root.string(),
                           dev.present ? "" : "; no GPU: compile only"));

  report::SelftestResult res;
  std::vector<report::SelftestCandidate>& rows = res.candidates;
  int bad = 0, total = 0;
  std::map<std::string, report::SelftestClassRow> by_class;  // per stated reason of the known-broken candidates
  std::map<std::string, report::SelftestContractRow> per_contract;
  auto contract_row = [&](const std::string& name) -> report::SelftestContractRow& {
    report::SelftestContractRow& pc = per_contract[name];
    pc.contract = name;
    return pc;
  };
  for (const auto& entry : entries) {
    build::Manifest m;
    try {
      m = build::load_manifest(entry.dir);
    } catch (const Error& e) {
      if (!only.empty()) continue;  // another contract's folder; not asked for
      std::string cname = (entry.kind == "broken" ? entry.dir.parent_path().parent_path() : entry.dir.parent_path()).filename().string();
      contract_row(cname);
      report::SelftestCandidate row;
      row.candidate = entry.dir.filename().string();
      row.contract = cname;
      row.dir = entry.dir.string();
      row.kind = entry.kind;
      row.expected = "a valid manifest";
      row.outcome = std::string("manifest invalid: ") + e.what();
      row.as_expected = false;
      rows.push_back(std::move(row));
      ++bad;
      ++total;
      continue;
    }
    if (!wanted(m.contract)) continue;
    bool broken = entry.kind == "broken";
    if (broken && !m.expect_rejected_for)
      throw_error(ErrorKind::input, fmt::format("{}: a known-broken candidate must state [expect] rejected_for",
                                                m.file.string()));
    const std::string& arch = tg.arch;
    std::vector<std::string> expected_codes;
    if (broken) {
      expected_codes.push_back(*m.expect_rejected_for);
      for (const auto& x : m.expect_also_rejected_for) expected_codes.push_back(x);
    }
    const std::string expected_text = broken ? "rejected: " + fmt::format("{}", fmt::join(expected_codes, " or ")) : std::string("accepted");
    // A defect that shows only when timed: the candidate is also timed (small shapes, no baselines),
    // in a worker of its own per seed (a launch counter in the module must start from zero).
    const bool timed_class = std::find(expected_codes.begin(), expected_codes.end(), "timed_output_wrong") != expected_codes.end();
    report::SelftestCandidate row;
    row.candidate = m.name;
    row.contract = m.contract;
    row.dir = entry.dir.string();
    row.kind = entry.kind;
    row.expected = expected_text;
    report::SelftestContractRow& pc = contract_row(m.contract);
    build::BuiltCandidate b;
    try {
      b = build::build_candidate(m, arch, s.scratch());
    } catch (const Error& e) {
      row.outcome = std::string("build failed: ") + e.what();
      row.as_expected = false;
      ++bad;
      ++total;
      ++(broken ? pc.broken : pc.good);
      rows.push_back(row);
      continue;
    }
    if (!dev.present) {
      row.outcome = "compiled; not run (no GPU)";
      rows.push_back(row);
      continue;
    }
    // Under a sanitizer every candidate gets its own worker (and log); the sanitizer writes its
    // summary when that worker exits.
    std::unique_ptr<worker::Session> san_session;
    worker::Session* run_in = &s;
    fs::path san_log;
    if (sanitizer) {
      worker::SessionOptions so2 = s.options();
      so2.watchdog_seconds = std::max(o.watchdog_seconds, 600.0);
      san_log = s.scratch() / fmt::format("sanitizer-{}-{}.log", m.contract, m.name);
      so2.worker_wrapper = {*sanitizer, "--tool", o.sanitize, "--log-file", san_log.string(), "--print-limit", "20"};
      san_session = std::make_unique<worker::Session>(so2);
      run_in = san_session.get();
      if (!run_in->device().present) {
        row.outcome = "the worker did not start under compute-sanitizer: " + run_in->device().why_absent;
        row.as_expected = false;
        ++bad;
        rows.push_back(row);
        continue;
      }
    }
    std::string load_err = check::load_and_describe(*run_in, b);
    std::vector<report::SelftestSeed> seeds;
    bool as_expected = true, rejected_any = false, intended_all = true;
    for (std::size_t si = 0; si < o.seeds.size(); ++si) {
      const std::uint64_t seed = o.seeds[si];
      ++total;
      std::unique_ptr<worker::Session> own;
      worker::Session* ses = run_in;
      if (timed_class && !sanitizer) {
        own = std::make_unique<worker::Session>(s.options());
        ses = own.get();
      }
      check::CheckOptions co;
      co.seed = seed;
      co.include_large = o.large_cases;
      co.sanitizer_pass = o.sanitizer_pass && si == 0 && !sanitizer;
      if (sanitizer) co.max_case_elements = std::int64_t(1) << 22;  // sanitizers run kernels 10-100x slower
      check::CorrectnessReport rep;
      if (load_err.empty()) rep = check::check_correctness(*ses, b, co);
      std::map<std::string, int> codes = rep.failure_codes;
      std::string timed_detail;
      if (load_err.empty() && timed_class && rep.accepted() && !sanitizer) {
        const contract::Contract& c = contract::find_contract(m.contract);
        bench::TimingOptions to;
        to.seed = seed;
        to.rounds = 2;
        to.samples_per_round = 10;
        to.measure_copy = false;
        for (const auto& d : c.benchmark_shapes()) {
          std::int64_t elements = 0;
          for (const auto& t : c.tensors()) elements += c.tensor_elements(t.name, d);
          if (elements <= (std::int64_t(1) << 24)) to.shapes.push_back(d);
        }
        bench::TimingReport tr = bench::time_against_baselines(*ses, b, {}, to);
        for (const auto& sh : tr.shapes) {
          const auto& cs = sh.series.at(0);
          if (!cs.verified && timed_detail.empty()) {
            ++codes[cs.verify_code.empty() ? "timed_output_wrong" : cs.verify_code];
            timed_detail = fmt::format("shape {}: {}", sh.shape, cs.verify_detail);
          }
        }
      }
      const bool rejected = !rep.accepted() || !timed_detail.empty();
      bool ok;
      std::string got;
      std::string primary = !rep.accepted() ? rep.primary_code() : timed_detail.empty() ? "" : "timed_output_wrong";
      if (!load_err.empty()) {
        got = "load failed: " + load_err;
        ok = false;
      } else if (broken) {
        ok = rejected && std::any_of(expected_codes.begin(), expected_codes.end(), [&](const std::string& e) { return codes.count(e) > 0; });
        got = rejected ? "rejected: " + primary : "accepted";
      } else {
        ok = rep.accepted();
        got = rep.accepted() ? "accepted" : "rejected: " + rep.primary_code();
      }
      if (rejected) rejected_any = true;
      if (broken && !ok) intended_all = false;
      std::string detail;
      for (const auto& x : rep.results)
        if (x.status == "fail" && (!broken || std::find(expected_codes.begin(), expected_codes.end(), x.code) != expected_codes.end())) {
          detail = x.detail;
          break;
        }
      if (detail.empty()) detail = timed_detail;
      if (detail.empty())
        for (const auto& x : rep.results)
          if (x.status == "fail") { detail = x.detail; break; }
      report::SelftestSeed sd;
      sd.seed = seed;
      sd.outcome = got;
      sd.as_expected = ok;
      sd.cases = rep.cases;
      sd.passed = rep.passed;
      sd.failed = rep.failed;
      sd.evidence = rep.evidence;
      sd.skipped = rep.skipped;
      sd.failure_codes = codes;
      sd.first_failure = detail;
      sd.timed = timed_class;
      sd.sanitizer_pass = rep.sanitizer.is_null() ? json("not run") : rep.sanitizer;
      sd.wall_ms = rep.wall_ms;
      sd.slowest_cases = rep.to_json(false).at("slowest_cases");
      seeds.push_back(std::move(sd));
      if (!ok) { as_expected = false; ++bad; }
      if (broken) {  // per class of defect (the stated reason), across contracts
        report::SelftestClassRow& bc = by_class[expected_codes.front()];
        bc.defect_class = expected_codes.front();
        ++bc.checks;
        if (ok) ++bc.rejected_for_it;
        if (si == 0) bc.candidates.push_back(m.contract + "/" + m.name);
      }
    }
    if (sanitizer) {
      san_session.reset();  // the worker exits; the sanitizer writes its summary
      json sj = worker::read_sanitizer_log(san_log).to_json();
      sj["log"] = san_log.string();
      sj["tool"] = o.sanitize;
      row.sanitizer = sj;
    }
    if (o.progress) {  // progress as it goes (a run stopped by a time limit still shows what it did)
      std::string outcomes;
      for (const auto& sd : seeds) outcomes += fmt::format(" {}{}", sd.as_expected ? "" : "UNEXPECTED ", sd.outcome);
      o.progress(fmt::format("{} {} {} (expected {}):{}", m.contract, entry.kind, m.name, expected_text, outcomes));
    }
    row.seeds = std::move(seeds);
    row.as_expected = as_expected;
    if (broken) {
      ++pc.broken;
      if (rejected_any) ++pc.broken_rejected;
      if (intended_all) ++pc.broken_for_intended_reason;
    } else {
      ++pc.good;
      if (as_expected) ++pc.good_accepted;
    }
    rows.push_back(std::move(row));
  }
  for (auto& [name, pc] : per_contract) res.contracts.push_back(pc);
  for (auto& [name, bc] : by_class) res.classes.push_back(bc);
  res.provenance = report::provenance(o.command_line, dev.present ? dev.device : json());
  res.device_present = dev.present;
  res.why_no_device = dev.why_absent;
  res.seeds = o.seeds;
  res.checks = total;
  res.unexpected = bad;
  if (!o.sanitize.empty()) res.sanitizer = report::SelftestSanitizer{o.sanitize, sanitizer ? *sanitizer : "", sanitizer_note};
  out.results = report::to_json(res);
  out.result = std::move(res);
  out.exit_code = !dev.present ? kExitIncomplete : bad ? kExitFail : (!o.sanitize.empty() && !sanitizer) ? kExitIncomplete : kExitPass;
  return out;
}

}  // namespace kqual::pipeline
