#include "kqual/run/qualify.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "kqual/bench/timing.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/harness/evaluate.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/run/exit_codes.hpp"

namespace kqual::run {
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

json contract_json(const contract::Contract& c, const contract::Supports& claims) {
  json refusals = json::array();
  for (const auto& [req, code] : c.unsupported_examples()) {
    auto got = c.validate(req, claims);
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
    refusals.push_back({{"request", desc}, {"code", got->code}, {"reason", got->reason}});
  }
  return json{{"name", c.name()},
              {"summary", c.summary()},
              {"numerical_policy", c.numerical_policy()},
              {"domain", c.domain_json()},
              {"refusals_checked", refusals}};
}

json claims_json(const harness::Manifest& m) {
  json d = json::array();
  for (DType t : m.supports.dtypes) d.push_back(std::string(to_string(t)));
  return json{{"dtypes", d}, {"min_alignment_bytes", m.supports.min_alignment_bytes}, {"max_n", m.supports.max_n},
              {"in_place", m.supports.in_place}};
}

void write_outputs(QualifyOutcome& out, const fs::path& dir, const std::string& memo) {
  fs::create_directories(dir);
  out.results_path = dir / "results.json";
  out.memo_path = dir / "memo.md";
  write_file_atomic(out.results_path, out.results.dump(2) + "\n");
  write_file_atomic(out.memo_path, memo);
}

}  // namespace

QualifyOutcome qualify(const QualifyOptions& o) {
  QualifyOutcome out;
  harness::Manifest m = harness::load_manifest(o.candidate);
  const contract::Contract& c = contract::find_contract(m.contract);
  auto bench_dtype = parse_dtype(o.dtype);
  if (!bench_dtype) throw_error(ErrorKind::usage, fmt::format("--dtype: unknown dtype '{}'", o.dtype));

  harness::SessionOptions so;
  so.use_gpu = o.use_gpu;
  so.watchdog_seconds = o.watchdog_seconds;
  harness::Session s(so);
  const harness::DeviceFacts& dev = s.device();
  std::string arch = dev.present ? dev.arch : (o.arch.empty() ? std::string(KQUAL_DEFAULT_ARCH) : o.arch);
  if (dev.present && !o.arch.empty() && o.arch != dev.arch)
    throw_error(ErrorKind::usage, fmt::format("--arch {} given but the device is {}", o.arch, dev.arch));

  json phases = json::object();
  json r{{"schema", "kqual.qualify"}, {"schema_version", kJsonSchemaVersion}};
  r["provenance"] = report::provenance(o.command_line, dev.present ? dev.device : json());
  r["candidate"] = {{"name", m.name}, {"manifest", m.file.string()}, {"contract", m.contract},
                    {"description", m.description}, {"claims", claims_json(m)}};
  r["contract"] = contract_json(c, m.supports);
  phases["manifest"] = "valid";
  phases["contract_refusals"] = fmt::format("{} unsupported requests refused with the expected reason",
                                            r["contract"]["refusals_checked"].size());

  harness::BuiltCandidate cand = harness::build_candidate(m, arch, s.scratch());
  phases["compile"] = fmt::format("done: {} for {} in {:.1f} ms", cand.compiler, arch, cand.compile_ms);
  auto baseline_dir = find_bundled("baselines", m.dir);
  std::vector<harness::BuiltCandidate> baselines;
  if (baseline_dir && fs::is_directory(*baseline_dir / m.contract)) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(*baseline_dir / m.contract))
      if (fs::exists(e.path() / "kqual.toml")) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) baselines.push_back(harness::build_candidate(harness::load_manifest(d), arch, s.scratch()));
  }
  phases["baselines"] = baselines.empty() ? std::string("none found (baselines/") + m.contract + ")"
                                          : fmt::format("{} compiled", baselines.size());

  json verdict{{"reasons", json::array()}, {"would_reverse", json::array()}};
  auto finish = [&](const std::string& decision, int code, const std::string& summary) {
    verdict["decision"] = decision;
    verdict["exit_code"] = code;
    verdict["summary"] = summary;
    r["phases"] = phases;
    r["verdict"] = verdict;
    out.results = r;
    out.exit_code = code;
    write_outputs(out, o.out_dir, report::render_qualify_memo(r));
    return out;
  };
  r["artifact"] = cand.to_json();
  json bl = json::array();
  for (const auto& b : baselines) bl.push_back(b.to_json());
  r["baselines"] = bl;

  if (!dev.present) {
    std::string why = o.use_gpu ? dev.why_absent : "GPU phases disabled (--no-gpu)";
    for (const char* ph : {"load", "correctness", "timing"}) phases[ph] = "not run: needs a GPU (" + why + ")";
    verdict["reasons"].push_back("static phases passed: manifest valid, contract refusals checked, candidate and baselines "
                                 "compiled with NVRTC for " + arch);
    verdict["reasons"].push_back("not run without a GPU: module load (driver-reported registers/shared/local bytes), "
                                 "correctness against the contract, timing against baselines");
    return finish("incomplete", kExitIncomplete, "No GPU: only the static phases ran. " + why);
  }

  std::string load_err = harness::load_and_describe(s, cand);
  if (!load_err.empty()) throw_error(ErrorKind::input, load_err);
  for (auto& b : baselines) {
    std::string e = harness::load_and_describe(s, b);
    if (!e.empty()) throw_error(ErrorKind::internal, "baseline " + b.manifest.name + ": " + e);
  }
  r["artifact"] = cand.to_json();
  bl = json::array();
  for (const auto& b : baselines) bl.push_back(b.to_json());
  r["baselines"] = bl;
  phases["load"] = fmt::format("done on {} ({})", dev.device.value("name", "?"), dev.arch);

  harness::CheckOptions co;
  co.seed = o.seed;
  co.include_large = o.large_cases;
  bool correct = true;
  if (o.correctness) {
    harness::CorrectnessReport rep = harness::check_correctness(s, cand, co);
    r["correctness"] = rep.to_json(false);
    correct = rep.accepted();
    phases["correctness"] = fmt::format("{}: {} passed, {} failed, {} refused of {} cases", rep.accepted() ? "accepted" : "rejected",
                                        rep.passed, rep.failed, rep.refused, rep.cases);
    json bc = json::array();
    harness::CheckOptions small = co;
    small.include_large = false;
    for (const auto& b : baselines) bc.push_back(harness::check_correctness(s, b, small).to_json(false));
    r["baselines_correctness"] = bc;
    if (!correct) {
      verdict["reasons"].push_back(fmt::format("rejected by the contract: {} of {} cases failed, mostly `{}`: {}", rep.failed,
                                               rep.cases, rep.primary_code(),
                                               [&] { for (const auto& x : rep.results) if (x.status == "fail") return x.detail; return std::string(); }()));
      phases["timing"] = "not run: the candidate is incorrect";
      verdict["would_reverse"].push_back("a build that passes every correctness case");
      return finish("do_not_ship", kExitFail, "The candidate computes the wrong answer.");
    }
    verdict["reasons"].push_back(fmt::format("correct on all {} cases run ({} refused as outside its claimed domain)",
                                             rep.passed, rep.refused));
  } else {
    phases["correctness"] = "skipped (--no-correctness)";
  }

  if (!o.timing) {
    phases["timing"] = "skipped (--no-timing)";
    return finish(correct ? "ship" : "do_not_ship", correct ? kExitPass : kExitFail,
                  "Correctness only; no performance claim was checked.");
  }
  bench::TimingOptions to;
  to.dtype = *bench_dtype;
  for (const auto& text : o.shapes) to.shapes.push_back(contract::parse_shape(c, text));
  to.rounds = o.rounds;
  to.samples_per_round = o.samples_per_round;
  to.seed = o.seed;
  std::vector<const harness::BuiltCandidate*> bptr;
  for (const auto& b : baselines) bptr.push_back(&b);
  bench::TimingReport tr = bench::time_against_baselines(s, cand, bptr, to);
  r["timing"] = tr.to_json();
  phases["timing"] = fmt::format("done: {} shapes, {} baselines", tr.shapes.size(), baselines.size());
  bool slower = false, broken_timed = false;
  for (const auto& sh : tr.shapes) {
    const auto& cs = sh.series.at(0);
    if (!cs.error.empty() || !cs.verified) {
      broken_timed = true;
      verdict["reasons"].push_back(fmt::format("{}: {}", sh.shape, cs.error.empty() ? cs.verify_detail : cs.error));
      continue;
    }
    if (sh.fastest_baseline.empty()) continue;
    const auto& v = sh.vs_fastest;
    std::string line = fmt::format("{}: {:.2f}x the fastest baseline ({}), time ratio 95 % CI [{:.3f}, {:.3f}] → {}", sh.shape,
                                   1.0 / v.estimate, sh.fastest_baseline, v.ci.lo, v.ci.hi, stats::to_string(v.verdict));
    verdict["reasons"].push_back(line);
    if (v.verdict == stats::Verdict::slower) slower = true;
    verdict["would_reverse"].push_back(fmt::format(
        "{}: a candidate/baseline time ratio above {:.3f} (now {:.3f}) would make it slower than {}", sh.shape,
        1.0 + to.equivalence_margin, v.estimate, sh.fastest_baseline));
  }
  verdict["would_reverse"].push_back("a correctness failure on inputs outside the tested set (other sizes, dtypes, offsets)");
  if (broken_timed) return finish("do_not_ship", kExitFail, "The candidate failed while being timed.");
  if (slower) return finish("do_not_ship", kExitFail, "Correct, but slower than a baseline on at least one shape.");
  return finish("ship", kExitPass, "Correct on every case, and no shape slower than the fastest baseline.");
}

QualifyOutcome selftest(const SelftestOptions& o) {
  QualifyOutcome out;
  fs::path root = o.root;
  if (root.empty()) {
    auto c = find_bundled("candidates", fs::current_path());
    if (!c) throw_error(ErrorKind::input, "cannot find the bundled candidates/ folder (set KQUAL_HOME)");
    root = *c;
  } else {
    root /= "candidates";
  }
  harness::SessionOptions so;
  so.watchdog_seconds = o.watchdog_seconds;
  harness::Session s(so);
  const harness::DeviceFacts& dev = s.device();
  json rows = json::array();
  int bad = 0, total = 0;
  std::vector<fs::path> dirs;
  for (const auto& op : fs::directory_iterator(root)) {
    for (const char* kind : {"good", "broken"}) {
      fs::path k = op.path() / kind;
      if (!fs::is_directory(k)) continue;
      if (fs::exists(k / "kqual.toml")) dirs.push_back(k);
      for (const auto& e : fs::directory_iterator(k))
        if (fs::exists(e.path() / "kqual.toml")) dirs.push_back(e.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    harness::Manifest m = harness::load_manifest(d);
    std::string arch = dev.present ? dev.arch : std::string(KQUAL_DEFAULT_ARCH);
    harness::BuiltCandidate b = harness::build_candidate(m, arch, s.scratch());
    json row{{"candidate", m.name}, {"contract", m.contract}, {"dir", d.string()},
             {"expected", m.expect_rejected_for ? "rejected: " + *m.expect_rejected_for : std::string("accepted")}};
    if (!dev.present) {
      row["outcome"] = "compiled; not run (no GPU)";
      rows.push_back(row);
      continue;
    }
    std::string load_err = harness::load_and_describe(s, b);
    json seeds = json::array();
    bool as_expected = true;
    for (std::uint64_t seed : o.seeds) {
      ++total;
      harness::CheckOptions co;
      co.seed = seed;
      co.include_large = o.large_cases;
      harness::CorrectnessReport rep;
      if (load_err.empty()) rep = harness::check_correctness(s, b, co);
      bool ok;
      std::string got;
      if (!load_err.empty()) {
        got = "load failed: " + load_err;
        ok = false;
      } else if (m.expect_rejected_for) {
        ok = rep.failure_codes.count(*m.expect_rejected_for) > 0;
        got = rep.accepted() ? "accepted" : "rejected: " + rep.primary_code();
      } else {
        ok = rep.accepted();
        got = rep.accepted() ? "accepted" : "rejected: " + rep.primary_code();
      }
      std::string detail;
      for (const auto& x : rep.results)
        if (x.status == "fail") { detail = x.detail; break; }
      seeds.push_back({{"seed", seed}, {"outcome", got}, {"as_expected", ok}, {"cases", rep.cases}, {"failed", rep.failed},
                       {"failure_codes", rep.to_json(false).at("failure_codes")}, {"first_failure", detail}});
      if (!ok) { as_expected = false; ++bad; }
    }
    row["seeds"] = seeds;
    row["as_expected"] = as_expected;
    rows.push_back(row);
  }
  out.results = json{{"schema", "kqual.selftest"}, {"schema_version", kJsonSchemaVersion},
                     {"provenance", report::provenance(o.command_line, dev.present ? dev.device : json())},
                     {"device_present", dev.present}, {"why_no_device", dev.why_absent},
                     {"candidates", rows}, {"checks", total}, {"unexpected", bad}};
  out.exit_code = !dev.present ? kExitIncomplete : bad ? kExitFail : kExitPass;
  return out;
}

}  // namespace kqual::run
