#include "kqual/bench/torch_baseline.hpp"
#include "kqual/report/memo.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cctype>
#include <sstream>

#include "kqual/core/dtype.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/stats/compare.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::report {
namespace {

std::string ms(double v) { return v < 0.1 ? fmt::format("{:.2f} us", v * 1000) : fmt::format("{:.4f} ms", v); }
std::string tbps(double bps) { return fmt::format("{:.2f} TB/s", bps / 1e12); }

std::string str(const json& j, const char* key, const std::string& def = "") {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : def;
}

// Run-to-run reproducibility in a correctness report: the contract's rule per dtype and what the
// two runs of each case measured ("" when the report has no such block).
std::string run_to_run_text(const json& k) {
  if (!k.contains("run_to_run") || !k.at("run_to_run").is_object()) return "";
  const json& rr = k.at("run_to_run");
  std::string m;
  if (rr.contains("rule") && rr.at("rule").is_array())
    for (const auto& x : rr.at("rule"))
      m += fmt::format("Run-to-run rule for {} ({}): bitwise reproducibility {} — {}\n\n", str(x, "dtype"),
                       str(x, "rule_from", "contract"), x.value("required", true) ? "**required**" : "not required",
                       str(x, "reason"));
  const int differing = rr.value("cases_differing", 0);
  m += fmt::format("Two runs per case: {} of {} compared case(s) gave different bytes", differing, rr.value("cases_compared", 0));
  if (differing > 0 && rr.contains("max_ulps") && rr.contains("max_abs"))
    m += fmt::format(" (at most {} ulps, {:.3g} absolute{})", rr.at("max_ulps").dump(), rr.value("max_abs", 0.0),
                     rr.contains("bound") && rr.at("bound").is_number()
                         ? fmt::format(", against an error bound of {:.3g} there{}", rr.at("bound").get<double>(),
                                       rr.contains("ratio") && rr.at("ratio").is_number()
                                           ? fmt::format(": {:.3g}x the bound", rr.at("ratio").get<double>())
                                           : std::string())
                         : std::string());
  return m + ".\n\n";
}

}  // namespace

std::string verdict_words(const json& decision) {
  if (!decision.is_string()) return "no verdict";
  const std::string word = decision.get<std::string>();
  const auto v = decision::ship_verdict_from_string(word);
  return v ? decision::describe(*v) : word;
}

std::string render_qualify_memo(const json& results) { return render_qualify_memo(qualify_result_from_json(results)); }

namespace {

// The title, the verdict in capitals with its exit code and summary, and its reasons.
void append_memo_verdict_heading(std::ostringstream& m, const QualifyResult& r, const std::string& headline) {
  m << fmt::format("# kqual qualification memo: {} ({})\n\n", r.candidate.name, r.candidate.contract);
  m << fmt::format("**Verdict: {}** (exit code {}). {}\n\n", headline, decision::exit_code(r.verdict.verdict), r.verdict.summary);
  for (const auto& reason : r.verdict.reasons) m << "- " << reason << "\n";
  m << "\n";
}

// The contract (and where its file came from), the candidate's claims and the refusals checked.
void append_memo_input_domain(std::ostringstream& m, const QualifyResult& r) {
  const QualifyContract& c = r.contract;
  const QualifyCandidate& cand = r.candidate;
  m << "## Input domain\n\n";
  m << fmt::format("Operation: {}. Contract `{}`.\n\n", c.summary, c.name);
  if (c.origin == "candidate")
    m << fmt::format("**Contract supplied with the candidate**: `{}` SHA-256 `{}` (accepted by --allow-candidate-contract: "
                     "the candidate's own file, not one from the project's or your contract folders, judged it).\n\n",
                     c.file, c.file_sha256);
  else if (!c.file.empty())
    m << fmt::format("Contract file ({} folder): `{}` SHA-256 `{}`.\n\n", c.origin, c.file, c.file_sha256);
  m << fmt::format("Candidate claims: dtypes {}, pointer alignment {} bytes, n up to {}{}.\n\n", json(cand.claims.dtypes).dump(),
                   cand.claims.min_alignment_bytes, cand.claims.max_n, cand.claims.in_place ? ", in place allowed" : "");
  m << "Numerical policy: " << c.numerical_policy << "\n\n";
  m << "Requests refused before launch (each checked in this run):\n\n| request | refusal | reason |\n|---|---|---|\n";
  for (const auto& x : c.refusals_checked) m << fmt::format("| {} | `{}` | {} |\n", x.request, x.code, x.reason);
  m << "\n";
}

// The per-kernel resources the driver reported after loading the image (a table), or why there are none.
void append_memo_kernel_resources(std::ostringstream& m, const json& a) {
  if (a.contains("kernels") && a.at("kernels").is_object() && !a.at("kernels").empty()) {
    m << "\n| kernel | symbol | registers | static shared [B] | local [B/thread] | max threads/block | binary version |\n"
         "|---|---|---|---|---|---|---|\n";
    for (const auto& [name, k] : a.at("kernels").items())
      m << fmt::format("| `{}` | `{}` | {} | {} | {} | {} | {} |\n", name, str(k, "symbol"), k.value("registers", 0),
                       k.value("static_shared_bytes", 0), k.value("local_bytes", 0), k.value("max_threads_per_block", 0),
                       k.value("binary_version", 0));
    m << "\n(Registers, shared and local bytes as reported by the driver, cuFuncGetAttribute, after loading this image.)\n\n";
  } else {
    m << "\nPer-kernel resources from the driver: not available (the image was not loaded: no GPU).\n\n";
  }
}

// How the image was made (adopted or compiled), its hashes, how the driver loads it, and its kernels.
void append_memo_artifact_identity(std::ostringstream& m, const QualifyResult& r) {
  m << "## Artifact identity\n\n";
  const json& a = r.artifact;  // build::BuiltCandidate::to_json()
  if (a.at("image").contains("file"))
    m << fmt::format("Adopted as built ({}): kqual compiled nothing; the target is `{}`.\n\n", str(a, "compiler"),
                     str(a, "arch"));
  else
    m << fmt::format("Compiled by {} for `{}` in {:.1f} ms (build time, not part of any load or run time). "
                     "Options: `{}`.\n\n",
                     str(a, "compiler"), str(a, "arch"), a.value("compile_ms", 0.0),
                     [&] { std::string s; for (const auto& o : a.at("options")) s += (s.empty() ? "" : " ") + o.get<std::string>(); return s; }());
  const json& img = a.at("image");
  if (img.contains("file"))
    m << fmt::format("- Prebuilt image `{}` SHA-256 `{}` (no source: kqual compiled nothing)\n", str(img, "file"),
                     str(img, "file_sha256"));
  else
    m << fmt::format("- Source `{}` SHA-256 `{}`\n", str(a, "source"), str(a, "source_sha256"));
  const std::string load = img.value("load_path", std::string("native_sass"));
  m << fmt::format("- Loaded image: {} of {} bytes, SHA-256 `{}` — {}.\n", str(img, "kind"), img.value("bytes", 0),
                   str(img, "sha256"),
                   load == "ptx_jit" ? fmt::format("PTX the driver JIT-compiles for `{}` when the module loads (a cost of every "
                                                   "cold first load)",
                                                   str(a, "arch"))
                                     : fmt::format("native SASS for `{}`, so the driver performs no JIT", str(a, "arch")));
  if (a.contains("notes"))
    for (const auto& n : a.at("notes")) m << "- " << n.get<std::string>() << "\n";
  append_memo_kernel_resources(m, a);
}

// The compute-sanitizer pass of a correctness report: not run (and why), or each tool's status.
void append_memo_sanitizer_pass(std::ostringstream& m, const json& k) {
  if (!k.contains("sanitizer") || !k.at("sanitizer").is_object()) return;
  const json& sp = k.at("sanitizer");
  const std::string st = str(sp, "status");
  if (st == "not_run") {
    m << "Sanitizer pass (memcheck, racecheck on small cases): **not run** — " << str(sp, "why") << "\n\n";
    return;
  }
  m << fmt::format("Sanitizer pass: **{}** — compute-sanitizer memcheck (exact-size allocations) and racecheck on {} "
                   "small case(s)",
                   st, sp.contains("cases") ? sp.at("cases").size() : 0);
  if (sp.contains("tools"))
    for (const auto& t : sp.at("tools"))
      m << fmt::format("; {}: {}", str(t, "tool"), str(t, "status"));
  m << ".\n\n";
}

// Each claim of the manifest and the cases that exercised it; a claim no case tested is named so.
void append_memo_claims(std::ostringstream& m, const json& k) {
  if (!k.contains("claims") || !k.at("claims").is_array() || k.at("claims").empty()) return;
  m << "Claims and the cases that exercised them:\n\n| claim | value | exercised | by |\n|---|---|---|---|\n";
  for (const auto& c : k.at("claims")) {
    const std::string cov = str(c, "coverage");
    const std::string shown = cov == "not_exercised" ? "**not exercised**"
                              : cov == "partly"      ? "partly"
                              : cov == "not_claimed" ? "not claimed"
                                                     : "yes";
    m << fmt::format("| `{}` | {} | {} | {} |\n", str(c, "claim"), str(c, "value"), shown, str(c, "by"));
  }
  m << "\n";
}

// Failures counted by reason, and the first five failing cases.
void append_memo_failures(std::ostringstream& m, const json& k) {
  if (k.at("failure_codes").empty()) return;
  m << "Failures by reason: ";
  for (const auto& [code, n] : k.at("failure_codes").items()) m << fmt::format("`{}` x{}  ", code, n.get<int>());
  m << "\n\nFirst failing cases:\n\n";
  int shown = 0;
  for (const auto& cs : k.at("failing_cases")) {
    if (cs.at("status") != "fail" || ++shown > 5) continue;
    m << fmt::format("- `{}`: `{}` — {}\n", str(cs, "id"), str(cs, "code"), str(cs, "detail"));
  }
  m << "\n";
}

// What did not run: checks this platform lacks, cases left once the verdict was settled, skipped cases.
void append_memo_cases_not_run(std::ostringstream& m, const json& k) {
  if (k.contains("checks_not_run") && k.at("checks_not_run").is_array())
    for (const auto& why : k.at("checks_not_run"))
      m << "**Not run** on this platform: " << why.get<std::string>() << " — the cases ran with guarded inputs instead.\n\n";
  if (k.contains("settled_not_run") && k.at("settled_not_run").is_array() && !k.at("settled_not_run").empty()) {
    const json& left = k.at("settled_not_run");
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < std::min<std::size_t>(left.size(), 8); ++i) ids.push_back("`" + left[i].get<std::string>() + "`");
    m << fmt::format("Not run because the verdict was already settled (the first failing case rejects the candidate): {} "
                     "case(s) — {}{}. `--all-cases` runs them for a report of every failing case.\n\n",
                     left.size(), fmt::join(ids, ", "), left.size() > ids.size() ? fmt::format(" and {} more", left.size() - ids.size()) : "");
  }
  if (k.value("skipped", 0) > 0 && k.contains("failing_cases")) {
    m << fmt::format("Not run: {} case(s) —", k.value("skipped", 0));
    for (const auto& cs : k.at("failing_cases"))
      if (cs.value("status", std::string()) == "skipped") m << fmt::format(" `{}`: {};", str(cs, "id"), str(cs, "detail"));
    m << "\n\n";
  }
}

// The candidate's correctness report (counts, harness, run to run, notes, sanitizer, failures, what
// did not run) and the baselines' verdicts; without a report, the phase's status.
void append_memo_correctness_evidence(std::ostringstream& m, const QualifyResult& r) {
  m << "## Correctness evidence\n\n";
  if (!r.correctness) {
    m << r.phases.get("correctness") << "\n\n";
    return;
  }
  // The correctness reports are JSON (check::CorrectnessReport::to_json keeps only the failing cases).
  const json& k = *r.correctness;
  m << fmt::format("{}: **{}** — {} cases, {} passed, {} failed, {} refused (outside the claimed domain).\n\n",
                   str(k, "candidate"), str(k, "verdict"), k.value("cases", 0), k.value("passed", 0), k.value("failed", 0),
                   k.value("refused", 0));
  m << "Harness: every output poisoned before each run (0xFF, then 0x7F bytes — two runs per case), 4 KiB guard "
       "regions around every output checked after the launch; each input placed against an unmapped page (its last "
       "byte ending the mapping in run 1, its first byte starting it in run 2), so a read past it faults; every SM's "
       "shared memory filled with a pattern before each run; inputs hashed before and after, fresh inputs for every "
       "case, the two runs compared (bit for bit, then by ulps against the error bound where they differ), the "
       "reference computed outside the candidate's process — never in its address space.\n\n";
  m << run_to_run_text(k);
  if (k.contains("notes") && k.at("notes").is_array())
    for (const auto& n : k.at("notes"))
      if (n.is_string()) m << "- Note: " << n.get<std::string>() << "\n";
  append_memo_sanitizer_pass(m, k);
  append_memo_claims(m, k);
  append_memo_failures(m, k);
  append_memo_cases_not_run(m, k);
  if (r.baselines_correctness)
    for (const auto& b : *r.baselines_correctness)
      m << fmt::format("Baseline `{}`: {} ({} of {} cases passed{}).\n", str(b, "candidate"), str(b, "verdict"),
                       b.value("passed", 0), b.value("cases", 0),
                       b.contains("reused") ? fmt::format("; checked at {} and reused: the same baseline, contract, kqual, "
                                                          "NVRTC, GPU and options; --recheck-baselines checks it again",
                                                          b["reused"].value("checked_at", std::string("?")))
                                            : std::string());
  m << "\n";
}

// One row per shape and implementation: the sample summary, bandwidth, ratio to the candidate and
// whether the timed output was re-checked.
void append_memo_timing_table(std::ostringstream& m, const bench::TimingReport& t) {
  m << "| shape | dtype | implementation | median | min | max | p10–p90 | samples | achieved | vs candidate | timed output |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|\n";
  // A series has a summary exactly when it has samples (bench::TimingReport::to_json).
  for (const auto& sh : t.shapes) {
    const std::string dtype(to_string(sh.dtype));
    double cand_med = 0;
    for (const auto& s : sh.series)
      if (s.role == "candidate" && !s.samples_ms.empty()) cand_med = s.summary.median;
    for (const auto& s : sh.series) {
      if (s.samples_ms.empty()) {
        m << fmt::format("| {} | {} | {} | — | | | | | | | {} |\n", sh.shape, dtype, s.label, s.error);
        continue;
      }
      const stats::Summary& su = s.summary;
      const bool is_cand = s.role == "candidate";
      m << fmt::format("| {} | {} | {}{} | {} | {} | {} | {}–{} | {} | {} | {} | {} |\n", sh.shape, dtype, s.label,
                       is_cand ? " (candidate)" : "", ms(su.median), ms(su.min), ms(su.max), ms(su.p10), ms(su.p90), su.n,
                       tbps(s.bytes_per_s), is_cand ? "—" : fmt::format("{:.2f}x", su.median / cand_med),
                       s.verified ? "re-checked" : "WRONG: " + s.verify_detail);
    }
  }
}

// One line per timed series: what the clocks (and temperature) did while its samples were taken.
std::string memo_series_clock_line(const bench::ShapeResult& sh, const bench::Series& s) {
  std::string line = fmt::format("- {} {}: ", sh.shape, s.label);
  if (!s.sm_clock_mhz.empty()) {
    std::vector<double> clk = s.sm_clock_mhz;
    std::sort(clk.begin(), clk.end());
    line += fmt::format("SM clock {:.0f}–{:.0f} MHz (median {:.0f}; reference {} MHz)", clk.front(), clk.back(),
                        clk[clk.size() / 2], s.reference_sm_mhz);
  } else {
    line += s.clocks_note.empty() ? "clocks not recorded" : s.clocks_note;
  }
  if (s.max_temperature_c) line += fmt::format(", up to {} °C", s.max_temperature_c);
  line += fmt::format("; {} sample(s) discarded by the clock guard", s.discarded);
  if (s.clock_guard_exhausted) line += " — guard exhausted: later slow samples kept, **the clock did not hold**";
  if (!s.clock_events.empty()) line += " (first: " + s.clock_events.front() + ")";
  if (!s.event_ms.empty()) {
    std::vector<double> e = s.event_ms;
    std::sort(e.begin(), e.end());
    line += fmt::format("; CUDA events of the same samples: median {}", ms(e[e.size() / 2]));
  }
  if (s.graph_launches) line += fmt::format("; {} launches per graph replay", s.graph_launches);
  return line;
}

// The result by shape against the fastest baseline (the speed rule's table, or an older
// document's per-shape comparisons), and the candidate's share of the device copy bandwidth.
void append_memo_speed_result(std::ostringstream& m, const bench::TimingReport& t, const decision::QualifyVerdict& verdict) {
  m << "### Result by shape (candidate against the fastest baseline), and the decision\n\n";
  if (verdict.speed) {
    m << decision::speed_table_markdown(*verdict.speed) << "\n";
  } else {
    // A document written before the speed rule: its per-shape comparisons as recorded
    // (`kqual decide` judges it by the current rule).
    for (const auto& sh : t.shapes) {
      if (sh.fastest_baseline.empty()) continue;
      const stats::Comparison& v = sh.vs_fastest;
      m << fmt::format("- {}: fastest baseline `{}`; candidate time ratio {:.3f} (95 % CI {:.3f}–{:.3f}), i.e. {:.2f}x "
                       "speed-up → **{}**. {}\n",
                       sh.shape, sh.fastest_baseline, v.estimate, v.ci.lo, v.ci.hi, 1.0 / v.estimate,
                       stats::to_string(v.verdict), v.reason);
    }
  }
  for (const auto& sh : t.shapes) {
    if (sh.fastest_baseline.empty() || sh.copy_bytes_per_s <= 0) continue;
    const double copy = sh.copy_bytes_per_s;
    double cand_bw = 0;
    for (const auto& s : sh.series)
      if (s.role == "candidate") cand_bw = s.bytes_per_s;
    m << fmt::format("- {}: device-to-device copy measured in the same run: {} (bytes read + written); the candidate "
                     "moves {} = {:.1f} % of it.\n",
                     sh.shape, tbps(copy), tbps(cand_bw), 100.0 * cand_bw / copy);
  }
  m << "\n";
}

// PyTorch eager / compiled / custom per shape (bench/torch_baseline.hpp), when they were timed; else
// the phase's status, if it has one.
void append_memo_torch_baselines(std::ostringstream& m, const bench::TimingReport& t, const PhaseList& phases) {
  if (const auto lines = bench::torch_shape_lines(t); !lines.empty()) {
    m << "### PyTorch baselines (eager, compiled, custom)\n\n";
    for (const auto& l : lines) m << "- " << l << "\n";
    m << "\n" << bench::torch_largest_shape_verdict(t) << "\n\nPhase: " << phases.get("torch_baselines") << "\n\n";
  } else if (!phases.get("torch_baselines").empty()) {
    m << "PyTorch baselines: " << phases.get("torch_baselines") << "\n\n";
  }
}

// The timing section: boundary, the table, verification, timer and clocks, the result by shape and
// PyTorch's baselines; without a timing report, the phase's status.
void append_memo_timing(std::ostringstream& m, const QualifyResult& r) {
  m << "## Timing\n\n";
  if (!r.timing) {
    m << r.phases.get("timing") << "\n\n";
    return;
  }
  const bench::TimingReport& t = *r.timing;
  m << "Boundary: " << t.boundary << "\n\n";
  append_memo_timing_table(m, t);
  m << "\nAchieved bandwidth = the contract's minimum bytes (every input read once, every output written once) / "
       "median time.\n\n";
  // How much of the candidate's timed work was verified, and the detection power that gives.
  if (t.verification.is_object() && t.verification.contains("statement"))
    m << "Timed outputs verified: " << t.verification["statement"].get<std::string>() << "\n\n";
  // How the samples were taken, and what the clocks did meanwhile.
  m << fmt::format("Timer: {}; L2: {}.\n", to_string(t.timer), t.l2_mode.empty() ? "cold_l2_write_flush" : t.l2_mode);
  for (const auto& sh : t.shapes)
    for (const auto& s : sh.series)
      if (!s.samples_ms.empty()) m << memo_series_clock_line(sh, s) << "\n";
  m << "\n";
  append_memo_speed_result(m, t, r.verdict);
  append_memo_torch_baselines(m, t, r.phases);
}

// The decision again, and what would reverse it.
void append_memo_reversal(std::ostringstream& m, const decision::QualifyVerdict& verdict, const std::string& headline) {
  m << "## Verdict, and what would reverse it\n\n";
  m << fmt::format("Decision: **{}**.\n\n", headline);
  for (const auto& w : verdict.would_reverse) m << "- Would reverse: " << w << "\n";
}

void append_memo_phases(std::ostringstream& m, const PhaseList& phases, const std::vector<std::pair<std::string, double>>& wall) {
  m << "\n## Phases\n\n| phase | status |\n|---|---|\n";
  for (const auto& [k, v] : phases.entries()) m << fmt::format("| {} | {} |\n", k, v);
  if (wall.empty()) return;
  double total = 0;
  std::string steps;
  for (const auto& [step, sec] : wall) {
    steps += fmt::format("{}{} {:.1f} s", steps.empty() ? "" : " · ", step, sec);
    total += sec;
  }
  m << fmt::format("\nWall time: {} (these steps {:.1f} s).\n", steps, total);
}

// kqual, the command, host, toolkit, GPU and driver.
void append_memo_provenance(std::ostringstream& m, const json& prov) {
  m << "\n## Provenance\n\n";
  m << fmt::format("- kqual {} (git {}), command: `{}`\n", str(prov, "kqual_version"), str(prov, "git_revision"),
                   str(prov, "command_line"));
  m << fmt::format("- host {} ({}), {}\n", str(prov, "host"), str(prov, "os"), str(prov, "timestamp_utc"));
  m << fmt::format("- toolkit: CUDA headers {}, NVRTC {}\n", str(prov.at("toolkit"), "cuda_headers"), str(prov.at("toolkit"), "nvrtc"));
  if (!prov.at("gpu").is_null())
    m << fmt::format("- GPU: {} ({}, {} SMs, L2 {} MiB), driver API {}{}\n", str(prov.at("gpu"), "name"), str(prov.at("gpu"), "arch"),
                     prov.at("gpu").value("sms", 0), prov.at("gpu").value("l2_bytes", 0) >> 20,
                     str(prov.at("driver"), "cuda_driver_api_version"),
                     prov.at("driver").contains("nvidia_driver") ? ", NVIDIA driver " + str(prov.at("driver"), "nvidia_driver") : "");
  else
    m << "- GPU: none available to this run\n";
}

}  // namespace

std::string reproduce_text(const std::optional<ReproduceCommands>& c) {
  if (!c) return {};
  return fmt::format("## Reproduce the failing case\n\nCase `{}` failed. A folder that stands alone (the candidate, the case's "
                     "inputs and reference output, the failing elements, a README; no GPU needed to write it):\n\n```sh\n{}\n"
                     "```\n\nThe one case again, on a GPU, under every rule of the check:\n\n```sh\n{}\n```\n",
                     c->case_id, c->replay, c->check);
}

std::string render_qualify_memo(const QualifyResult& r) {
  std::string headline = decision::describe(r.verdict.verdict);
  for (auto& ch : headline) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  std::ostringstream m;
  append_memo_verdict_heading(m, r, headline);
  append_memo_input_domain(m, r);
  append_memo_artifact_identity(m, r);
  append_memo_correctness_evidence(m, r);
  append_memo_timing(m, r);
  append_memo_reversal(m, r.verdict, headline);
  append_memo_phases(m, r.phases, r.wall_seconds);
  append_memo_provenance(m, r.provenance);
  if (r.reproduce) m << "\n" << reproduce_text(r.reproduce);
  return m.str();
}

}  // namespace kqual::report
