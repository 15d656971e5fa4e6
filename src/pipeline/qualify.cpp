#include "kqual/pipeline/qualify.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "kqual/bench/timing.hpp"
#include "kqual/bench/torch_baseline.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/pipeline/baseline_reuse.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/report/results.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/self.hpp"
#include "kqual/worker/worker.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

std::optional<fs::path> find_bundled(const std::string& name, const fs::path& hint) { return find_project_folder(name, hint); }

std::vector<fs::path> baseline_roots(const std::vector<fs::path>& user_dirs) {
  std::vector<fs::path> roots = user_dirs;
  if (const char* env = std::getenv("KQUAL_BASELINES"))
    for (const std::string& d : split_path_list(env)) roots.push_back(d);
  if (auto p = find_bundled("baselines", {})) roots.push_back(*p);  // no hint: never the candidate's tree
  return roots;
}

std::vector<fs::path> find_baselines(const std::string& contract, const std::vector<fs::path>& roots) {
  std::vector<fs::path> out, seen;
  std::error_code ec;
  for (const auto& root : roots) {
    if (!fs::is_directory(root / contract, ec)) continue;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root / contract, ec))
      if (fs::exists(e.path() / "kqual.toml", ec)) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      const fs::path c = fs::weakly_canonical(d, ec);
      if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
      seen.push_back(c);
      out.push_back(d);
    }
  }
  return out;
}

namespace {

report::QualifyContract contract_block(const contract::Contract& c, const contract::Supports& claims,
                                       const contract::ContractLookup& contracts) {
  report::QualifyContract out;
  out.name = c.name();
  out.summary = c.summary();
  out.numerical_policy = c.numerical_policy();
  out.domain = c.domain_json();
  const contract::ContractProvenance p = contracts.provenance(c);
  out.origin = contract::to_string(p.origin);
  out.file = p.file.string();
  out.file_sha256 = p.sha256;
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

// The bundled and user baselines of the contract, compiled for the target. Baselines matter for
// timing only (`check` leaves them out; `qualify` also checks them, since a wrong baseline is no
// baseline). They come from the user's and the project's folders only.
template <class Say>
std::vector<build::BuiltCandidate> build_baselines(const QualifyOptions& o, const build::Manifest& m, const std::string& arch,
                                                   worker::Session& s, report::PhaseList& phases, const Say& say) {
  std::vector<build::BuiltCandidate> baselines;
  const std::vector<fs::path> baseline_dirs = baseline_roots(o.baseline_dirs);
  if (o.timing) {
    const std::vector<fs::path> dirs = find_baselines(m.contract, baseline_dirs);
    if (!dirs.empty()) say(fmt::format("compile: {} baseline(s) of {}", dirs.size(), m.contract));
    for (const auto& d : dirs)
      baselines.push_back(build::build_candidate(build::load_manifest(d, contract::ContractLookup(o.sources)), arch, s.scratch()));
  }
  std::vector<std::string> searched;
  for (const auto& d : baseline_dirs) searched.push_back((d / m.contract).string());
  phases.set("baselines", !o.timing            ? std::string("not needed (no timing)")
                         : baselines.empty() ? fmt::format("none found (searched {})", searched.empty() ? std::string("no baselines folder")
                                                                                                       : fmt::format("{}", fmt::join(searched, ", ")))
                                             : fmt::format("{} compiled", baselines.size()));
  return baselines;
}

}  // namespace

void add_timed_shapes(decision::QualifyFindings& f, const bench::TimingReport& tr) {
  for (const auto& sh : tr.shapes) {
    if (sh.series.empty()) continue;
    const auto& cs = sh.series.front();  // the candidate
    decision::ShapeSamples q;
    q.shape = sh.shape;
    if (bench::refused_before_launch(cs)) q.not_timed = cs.error.substr(bench::kRefusedBeforeLaunch.size());
    else if (!cs.error.empty() || !cs.verified) q.failure = cs.error.empty() ? cs.verify_detail : cs.error;
    if (f.harness_failure.empty() && worker::is_harness_failure(cs.error)) f.harness_failure = sh.shape + ": " + cs.error;
    q.baseline = sh.fastest_baseline;
    q.candidate_ms = cs.samples_ms;
    for (const auto& b : sh.series)
      if (!sh.fastest_baseline.empty() && b.label == sh.fastest_baseline) q.baseline_ms = b.samples_ms;
    f.shapes.push_back(std::move(q));
  }
}

decision::ShapeMix contract_shape_mix(const contract::Contract& c, const decision::DeploymentProfile& p) {
  decision::ShapeMix m = decision::shape_mix_of(p);
  std::map<std::string, std::string> seen;  // completed dims → the profile's text
  for (auto& [text, calls] : m.calls) {
    const std::string key = contract::format_dims(contract::parse_shape(c, text));
    if (const auto it = seen.find(key); it != seen.end())
      throw_error(ErrorKind::input, fmt::format("profile '{}': [[shape]] '{}' and '{}' name the same shape of contract {} ({}): "
                                                "list each shape once, with all its calls",
                                                p.name, it->second, text, c.name(), key));
    seen.emplace(key, text);
    text = key;
  }
  return m;
}

namespace {

// What the timing phase runs with, from qualify's options.
bench::TimingOptions timing_options_of(const QualifyOptions& o, DType dtype, const std::vector<contract::Dims>& shapes) {
  bench::TimingOptions to;
  to.dtype = dtype;
  to.shapes = shapes;
  to.rounds = o.rounds;
  to.samples_per_round = o.samples_per_round;
  if (o.verify_launches > 0) {
    to.verify_launches = o.verify_launches;
    to.verify_element_budget = 0;
  }
  to.seed = o.seed;
  to.flush_mode = o.flush_mode;
  to.flush_l2 = o.flush_mode != "none";
  to.timer = o.timer;
  to.graph_launches = o.graph_launches;
  to.fresh_inputs = o.timed_inputs != "datasets";
  to.clock_guard = o.clock_guard;
  to.progress = o.progress;
  return to;
}

// The correctness phase's summary into the decision's findings and the phase list.
void record_correctness(const CorrectnessSummary& sum, decision::QualifyFindings& f, report::PhaseList& phases) {
  f.correct = sum.accepted;
  f.counts() = sum.counts();
  f.primary_code = sum.primary_code;
  f.settled_not_run = sum.settled_not_run;
  f.harness_failure = sum.harness_failure;  // cases kqual could not run: no verdict on the candidate
  f.first_failure = sum.first_failure();
  phases.set("correctness", sum.phase_line());
  phases.set("sanitizer_pass", sum.sanitizer);
}

// What qualify's GPU phases work on: the candidate and its baselines, built, in one session; the
// results and the decision's findings they fill.
struct QualifyGpuRun {
  const QualifyOptions& o;
  worker::Session& s;
  build::BuiltCandidate& cand;
  std::vector<build::BuiltCandidate>& baselines;
  report::QualifyResult& r;
  decision::QualifyFindings& f;
  const std::function<void(const std::string&)>& say;
  std::shared_ptr<bench::TorchEarlyStart> torch_early = {};  // the PyTorch baselines' worker, started ahead
};

// Adds the wall time from its making to its end to r.wall_seconds under `step` (the memo's "Wall time").
class StepClock {
 public:
  StepClock(report::QualifyResult& r, std::string step) : r_(r), step_(std::move(step)), t0_(std::chrono::steady_clock::now()) {}
  ~StepClock() { r_.wall_seconds.emplace_back(step_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count()); }
  StepClock(const StepClock&) = delete;
  StepClock& operator=(const StepClock&) = delete;

 private:
  report::QualifyResult& r_;
  std::string step_;
  std::chrono::steady_clock::time_point t0_;
};

// Phase "load": every module in the worker; registers, shared and local bytes; argument sizes. A
// candidate the worker refuses is the user's input error; a baseline it refuses is kqual's.
void qualify_load(QualifyGpuRun& q, const Target& tg) {
  q.say(fmt::format("load: {} module(s) on {}", 1 + q.baselines.size(), tg.arch));
  const StepClock clock(q.r, "load");
  CheckOneOptions load_only;
  load_only.correctness = false;
  const std::string load_err = check_one(q.s, q.cand, load_only).load_error;
  if (!load_err.empty()) throw_error(ErrorKind::input, load_err);
  for (auto& b : q.baselines) {
    const std::string e = check_one(q.s, b, load_only).load_error;
    if (!e.empty()) throw_error(ErrorKind::internal, "baseline " + b.manifest.name + ": " + e);
  }
  q.r.phases.set("load", fmt::format("done on {} ({})", tg.device->device.value("name", "?"), tg.arch));
}

// Phase "check": the contract's cases, references out of the candidate's reach; the baselines on
// the small cases (a wrong baseline is no baseline).
void qualify_check(QualifyGpuRun& q) {
  const QualifyOptions& o = q.o;
  if (!o.correctness) {
    q.r.phases.set("correctness", "not run: not part of `kqual bench` (timing only)");
    return;
  }
  CheckOneOptions checked;
  checked.load = false;  // qualify_load loaded every module
  checked.check.seed = o.seed;
  checked.check.include_large = o.large_cases;
  checked.check.all_cases = o.all_cases;
  checked.check.sanitizer_pass = o.sanitizer_pass;
  checked.check.only_case = o.only_case;
  q.say(fmt::format("correctness: {} against {}{}", q.cand.manifest.name, q.cand.manifest.contract,
                    o.large_cases ? " (with the large cases)" : ""));
  const CheckedOne one = [&] {
    const StepClock clock(q.r, "correctness");
    return check_one(q.s, q.cand, checked);
  }();
  q.r.correctness = one.report->to_json(false);
  record_correctness(*one.correctness, q.f, q.r.phases);
  if (!o.only_case.empty()) q.r.phases.set("correctness", q.r.phases.get("correctness") + " (--case " + o.only_case + " only)");
  std::vector<json> bc;
  CheckOneOptions small = checked;
  small.check.include_large = false;
  small.check.sanitizer_pass = false;
  small.check.only_case.clear();
  // An accepted verdict kept for the same baseline, contract, kqual, NVRTC, GPU and options is reused
  // (baseline_reuse.hpp); the seed is not in the key: a baseline is kqual's trusted kernel.
  const BaselineVerdicts kept(kqual_cache_dir() / "baseline-correctness", q.s.device().device,
                              json{{"large_cases", small.check.include_large}, {"sanitizer_pass", small.check.sanitizer_pass},
                                   {"all_cases", small.check.all_cases}},
                              contract::ContractLookup(o.sources));
  for (auto& b : q.baselines) {
    const std::string key = kept.key(b.manifest.dir, "");  // "": the manifest's own contract
    const StepClock clock(q.r, "baseline " + b.manifest.name);
    if (!o.recheck_baselines)
      if (std::optional<json> was = kept.find(key)) {
        q.say(fmt::format("correctness: baseline {} accepted when checked at {}; reused (same content, contract, kqual, NVRTC, "
                          "GPU and options)", b.manifest.name, (*was)["reused"].value("checked_at", std::string("?"))));
        bc.push_back(std::move(*was));
        continue;
      }
    q.say("correctness: baseline " + b.manifest.name);
    bc.push_back(check_one(q.s, b, small).report->to_json(false));
    kept.keep(key, bc.back());
  }
  q.r.baselines_correctness = std::move(bc);
}

// Phase "time": against the baselines, L2 flushed, interleaved, timed outputs re-checked; PyTorch
// eager / compiled next to them where the reference is PyTorch. Returns the PyTorch block (null
// when timing did not run).
json qualify_time(QualifyGpuRun& q, const bench::TimingOptions& to, const decision::DeploymentProfile& profile,
                  const decision::SpeedPolicy& policy) {
  if (!q.f.correct) {
    q.r.phases.set("timing", "not run: the candidate is incorrect");
    return json();
  }
  if (!q.o.timing) {
    q.r.phases.set("timing", "not run: not part of `kqual check` (correctness only)");
    return json();
  }
  q.f.policy = policy;
  q.f.mix = contract_shape_mix(q.cand.manifest.resolved_contract(), profile);
  std::vector<const build::BuiltCandidate*> bptr;
  for (const auto& b : q.baselines) bptr.push_back(&b);
  bench::TimingReport tr = [&] {
    const StepClock clock(q.r, "timing");
    return bench::time_against_baselines(q.s, q.cand, bptr, to);
  }();
  q.r.phases.set("timing", fmt::format("done: {} shapes, {} baselines", tr.shapes.size(), q.baselines.size()));
  json torch_report = [&] {
    const StepClock clock(q.r, "PyTorch baselines");
    return bench::run_torch_baselines(q.s, q.cand, tr, to, bench::parse_torch_baselines(q.o.torch_baselines), q.o.recheck_baselines,
                                      std::move(q.torch_early))
        .to_json();
  }();
  q.r.phases.set("torch_baselines", torch_report.value("status", std::string()));
  add_timed_shapes(q.f, tr);
  q.r.timing = std::move(tr);
  return torch_report;
}

}  // namespace

std::optional<report::ReproduceCommands> reproduce_commands(const QualifyOptions& o, const json& correctness) {
  if (!correctness.contains("failing_cases") || !correctness.at("failing_cases").is_array()) return std::nullopt;
  for (const json& cs : correctness.at("failing_cases")) {
    if (cs.value("status", std::string()) != "fail" || !cs.contains("id")) continue;
    const std::string id = cs.at("id").get<std::string>();
    // A sanitizer finding spans cases that passed alone: no folder or one-case run reproduces it (the
    // check itself does, its sanitizer pass included).
    if (check::is_sanitizer_finding_id(id)) continue;
    const fs::path out = fs::absolute(o.out_dir).lexically_normal();
    // Where the contract came from, as the run found it: the replay and the rerun find it there too.
    std::string sources;
    for (const auto& d : o.sources.user_dirs) sources += " --contracts " + shell_word(fs::absolute(d).lexically_normal().string());
    if (o.sources.allow_candidate_contract) sources += " --allow-candidate-contract";
    const std::string kq = shell_word(self_command());
    report::ReproduceCommands c;
    c.case_id = id;
    c.replay = fmt::format("{} replay {} --case {} --out {}{}", kq, shell_word((out / "results.json").string()), shell_word(id),
                           shell_word((out / "replay").string()), sources);
    c.check = fmt::format("{} check {} --case {} --seed {}{} --out {}", kq,
                          shell_word(fs::absolute(o.candidate).lexically_normal().string()), shell_word(id), o.seed, sources,
                          shell_word((out / "rerun").string()));
    return c;
  }
  return std::nullopt;
}

QualifyOutcome qualify(const QualifyOptions& o) {
  // ---- target: manifest, contract, device and arch ----
  QualifyOutcome out;
  const std::function<void(const std::string&)> say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  say("manifest: " + o.candidate.string());
  build::Manifest m = build::load_manifest(o.candidate, contract::ContractLookup(o.sources));
  const contract::Contract& c = m.resolved_contract();
  if (!o.only_case.empty()) (void)check::require_case(c, m.supports, o.seed, o.only_case);  // an unknown id: exit 2 before any GPU work
  // Timed at a dtype the candidate claims (--dtype, or its first claim): a usage error before any GPU work.
  const DType bench_dtype = timing_dtype(o.dtype, m.supports.dtypes, "candidate " + m.name);
  (void)bench::parse_torch_baselines(o.torch_baselines);  // a bad --torch-baselines is a usage error before any GPU work
  // The decision's policy and shape mix, checked before any GPU work (a bad profile or margin is an
  // input error, not a lost run).
  const decision::DeploymentProfile profile = o.profile.empty() ? decision::DeploymentProfile{} : decision::load_profile(o.profile);
  const decision::SpeedPolicy policy = decision::speed_policy(profile, o.margin, o.regression_limit);
  (void)contract_shape_mix(c, profile);  // a shape named twice is an input error before any GPU work
  std::vector<contract::Dims> shapes;
  for (const auto& text : o.shapes) shapes.push_back(contract::parse_shape(c, text));
  // A profile's shape mix names the shapes to time when none are asked for.
  if (o.shapes.empty())
    for (const auto& [text, calls] : profile.shape_calls) shapes.push_back(contract::parse_shape(c, text));
  report::QualifyResult r;
  r.command = o.command;
  report::PhaseList& phases = r.phases;
  r.candidate = {m.name, m.file.string(), m.contract, m.description, claims_of(m)};
  r.contract = contract_block(c, m.supports, contract::ContractLookup(o.sources));
  phases.set("manifest", "valid");
  phases.set("contract_refusals", fmt::format("{} unsupported requests refused with the expected reason",
                                              r.contract.refusals_checked.size()));
  Target tg = open_target({o.use_gpu, o.watchdog_seconds, o.arch});
  worker::Session& s = *tg.session;

  // ---- build: the candidate and (for timing) every bundled baseline ----
  say(fmt::format("compile: {} for {}", m.name, tg.arch));
  std::optional<StepClock> compile_clock(std::in_place, r, "compile");
  build::BuiltCandidate cand = build::build_candidate(m, tg.arch, s.scratch());
  phases.set("compile", cand.image_file.empty()
                         ? fmt::format("done: {} for {} in {:.1f} ms", cand.compiler, tg.arch, cand.compile_ms)
                         : fmt::format("nothing to compile: {}, loads on {} by {}", cand.compiler, tg.arch, cand.load_path));
  std::vector<build::BuiltCandidate> baselines = build_baselines(o, m, tg.arch, s, phases, say);
  compile_clock.reset();

  json torch_report;  // bench::TorchBaselineReport, when timing ran
  decision::QualifyFindings f;
  f.arch = tg.arch;
  f.gpu = tg.gpu();
  f.why_no_gpu = tg.why_no_gpu;
  f.correctness_run = o.correctness;
  f.timing_run = o.timing;
  if (!tg.gpu()) {
    // The reason once (the progress line, the verdict); each phase says only what it is missing.
    say("no GPU: load, correctness and timing not run (" + tg.why_no_gpu + ")");
    phases.set("load", "not run: needs a GPU (see the verdict)");
    phases.set("correctness", o.correctness ? "not run: needs a GPU (see the verdict)"
                                            : "not run: not part of `kqual bench` (timing only)");
    phases.set("timing", o.timing ? "not run: needs a GPU (see the verdict)" : "not run: not part of `kqual check` (correctness only)");
  } else {
    QualifyGpuRun q{o, s, cand, baselines, r, f, say};
    // PyTorch's import and CUDA start run while the candidate is loaded and checked.
    if (o.timing) q.torch_early = bench::start_torch_baselines_early(s, cand, timing_options_of(o, bench_dtype, shapes),
                                                                     bench::parse_torch_baselines(o.torch_baselines));
    qualify_load(q, tg);
    qualify_check(q);
    torch_report = qualify_time(q, timing_options_of(o, bench_dtype, shapes), profile, policy);
  }
  r.artifact = cand.to_json();
  for (const auto& b : baselines) r.baselines.push_back(b.to_json());

  // ---- decide, then write ----
  const decision::QualifyVerdict v = decision::decide_qualify(f);
  say(fmt::format("verdict: {}; writing results.json and memo.md to {}", decision::to_string(v.verdict), o.out_dir.string()));
  r.verdict = v;
  if (r.correctness) r.reproduce = reproduce_commands(o, *r.correctness);
  r.provenance = report::provenance(o.command_line, tg.device_json());
  if (!torch_report.is_null()) r.torch_baselines = torch_report;
  out.results = report::to_json(r);
  out.exit_code = decision::exit_code(v.verdict);
  const Written w = write_results(o.out_dir, out.results, {{"memo.md", report::render_qualify_memo(r)}});
  out.result = std::move(r);
  out.results_path = w.results;
  out.memo_path = w.files.at(0);
  return out;
}

}  // namespace kqual::pipeline
