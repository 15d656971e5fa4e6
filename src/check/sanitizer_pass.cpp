// The sanitizer pass: small passed cases again under compute-sanitizer (memcheck, racecheck); on a
// candidate already wrong, racecheck on the smallest wrong case (a shared-memory race as the cause?).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "internal.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/sanitizer.hpp"

namespace kqual::check {
namespace fs = std::filesystem;

namespace detail {

// Small passed cases, odd sizes and offsets first (their tails are where over-reads hide), one per
// size, dtype and offset.
std::vector<contract::CaseSpec> sanitizer_picks(const contract::Contract& c, const CheckOptions& o, const CorrectnessReport& rep) {
  std::vector<const CaseResult*> pool;
  for (const auto& r : rep.results)
    if (r.status == CaseStatus::pass && r.spec.family != contract::kGeneratedFamily && case_elements(c, r.spec) <= o.sanitizer_max_elements)
      pool.push_back(&r);
  std::stable_sort(pool.begin(), pool.end(), [&](const CaseResult* a, const CaseResult* bb) {
    auto odd = [&](const CaseResult* x) { return (case_elements(c, x->spec) % 8) != 0 || x->spec.offset_elements != 0; };
    if (odd(a) != odd(bb)) return odd(a);
    return case_elements(c, a->spec) > case_elements(c, bb->spec);
  });
  std::vector<contract::CaseSpec> picks;
  std::set<std::string> sizes;
  for (const CaseResult* r : pool) {
    const std::string key = contract::format_dims(r->spec.dims) + "/" + std::to_string(int(r->spec.dtype)) + "/" +
                            std::to_string(r->spec.offset_elements);
    if (!sizes.insert(key).second) continue;
    picks.push_back(r->spec);
    if (int(picks.size()) >= o.sanitizer_cases) break;
  }
  return picks;
}

// Cases run again in a worker under compute-sanitizer, one worker per tool: memcheck with every
// buffer its own exact-size allocation (so a read one byte past a tensor is reported), racecheck
// (shared-memory hazards between threads of a block). Findings become failing results.
void sanitizer_pass(Session& s, const BuiltCandidate& b, const contract::Contract& c, const std::vector<contract::CaseSpec>& picks,
                    const std::vector<std::string>& tools, CorrectnessReport& rep) {
  json& out = rep.sanitizer;
  std::optional<std::string> tool = worker::find_compute_sanitizer();
  if (!tool) {
    out = {{"status", "not_run"},
           {"why", "compute-sanitizer not found (PATH, /usr/local/cuda/bin; or set KQUAL_COMPUTE_SANITIZER): reads past a "
                   "tensor within its last aligned vector and shared-memory races were not looked for"}};
    return;
  }
  out = {{"status", "clean"}, {"path", *tool}, {"cases", json::array()}, {"tools", json::array()}};
  for (const auto& p : picks) out["cases"].push_back(p.id);
  if (picks.empty()) {
    out["status"] = "not_run";
    out["why"] = "no passed case small enough for the sanitizer";
    return;
  }
  for (const std::string& name_s : tools) {
    const char* name = name_s.c_str();
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path log = s.scratch() / fmt::format("sanitizer-{}-{}.log", b.manifest.name, name);
    std::error_code ec;
    fs::remove(log, ec);
    worker::SessionOptions so = s.options();
    so.watchdog_seconds = std::max(so.watchdog_seconds, 300.0);
    so.worker_wrapper = {*tool, "--tool", name, "--log-file", log.string(), "--print-limit", "10"};
    json tj{{"tool", name}};
    std::vector<CaseResult> runs;
    {
      worker::Session ss(so);
      if (!ss.device().present) {
        tj["status"] = "not_run";
        tj["why"] = "the worker did not start under compute-sanitizer: " + ss.device().why_absent;
        out["tools"].push_back(tj);
        out["status"] = "incomplete";
        continue;
      }
      RunStyle style;
      style.traps = false;
      style.scribble = false;
      style.diagnose = false;
      style.guard_bytes = 0;
      style.runs = 1;
      style.in_place = false;  // the cases ran in place already; the tools look at the separate-buffer accesses
      for (const auto& spec : picks) runs.push_back(run_case_styled(ss, b, c, spec, style));
    }  // the worker exits here; the sanitizer writes its summary
    const worker::SanitizerLog sl = worker::read_sanitizer_log(log);
    tj["log"] = sl.to_json();
    tj["wall_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const worker::SanitizerFinding* first = nullptr;
    for (const auto& f : sl.findings)
      if (f.code != "race_warning") {
        first = &f;
        break;
      }
    // Errors counted but none parsed (a format this reader does not know): reported as such; only
    // racecheck's warnings, and nothing else: not a failure (they stay in the log's JSON).
    if (first || (sl.errors > 0 && sl.findings.empty())) {
      CaseResult r;
      r.spec.id = fmt::format("{}{}", kSanitizerFindingPrefix, name);
      r.spec.family = name;
      r.sanitizer_finding = true;
      r.status = CaseStatus::fail;
      r.code = first ? first->code : "sanitizer_error";
      std::string where;
      if (first) {
        for (const auto& ctx : first->context) where += (where.empty() ? "" : "; ") + ctx;
        // Name the tensor: the allocation the tool names is exactly one buffer's offset + bytes.
        std::set<std::string> names;
        for (const auto& p : picks)
          for (const auto& t : c.tensors()) {
            const std::size_t es = dtype_size(c.tensor_dtype(t.name, p.dtype));
            const std::size_t bytes = std::size_t(c.tensor_elements(t.name, p.dims)) * es + std::size_t(p.offset_elements) * es;
            if (first->allocation_bytes && bytes == first->allocation_bytes) names.insert(t.name);
          }
        if (!names.empty()) where += fmt::format("; the allocation is tensor '{}'", fmt::join(names, "' or '"));
      }
      r.detail = fmt::format("compute-sanitizer {} on {} small case(s) ({}): {}{}{}", name, picks.size(),
                             fmt::join(out["cases"].get<std::vector<std::string>>(), ", "),
                             first ? first->headline : fmt::format("{} error(s)", sl.errors), where.empty() ? "" : " — ", where);
      rep.results.push_back(r);
      ++rep.cases;
      ++rep.failed;
      ++rep.failure_codes[r.code];
      tj["status"] = "findings";
      out["status"] = "findings";
    } else if (!sl.written || sl.errors < 0) {
      tj["status"] = "incomplete";
      tj["why"] = sl.written ? "the sanitizer log has no ERROR SUMMARY (the worker died?)" : "no sanitizer log was written";
      if (out["status"] == "clean") out["status"] = "incomplete";
    } else {
      tj["status"] = "clean";
    }
    for (const auto& r : runs)
      if (r.status == CaseStatus::fail && !first) tj["case_failure"] = r.code + ": " + r.detail;
    out["tools"].push_back(tj);
  }
}

// The sanitizer pass after the cases: memcheck and racecheck on passed candidates; on a wrong one,
// racecheck over two passed cases and the smallest wrong one (a shared-memory race as the cause?).
void sanitizer_after_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                           CorrectnessReport& rep) {
  if (!o.sanitizer_pass) return;
  if (rep.harness_errors > 0) {
    rep.sanitizer = {{"status", "not_run"}, {"why", "kqual's own failure stopped the cases (harness_error)"}};
    return;
  }
  if (!s.device().present) {
    rep.sanitizer = {{"status", "not_run"}, {"why", "no GPU"}};
    return;
  }
  if (rep.failed == 0) {
    sanitizer_pass(s, b, c, sanitizer_picks(c, o, rep), {"memcheck", "racecheck"}, rep);
    return;
  }
  const CaseResult* smallest = nullptr;
  for (const auto& r : rep.results)
    if (r.status == CaseStatus::fail && is_value_failure(r.code) && r.spec.family != contract::kGeneratedFamily &&
        case_elements(c, r.spec) <= (std::int64_t(1) << 22) && (!smallest || case_elements(c, r.spec) < case_elements(c, smallest->spec)))
      smallest = &r;
  if (!smallest) {
    rep.sanitizer = {{"status", "not_run"}, {"why", "the candidate already failed (no wrong case small enough for racecheck)"}};
    return;
  }
  // racecheck sees shared-memory hazards only: a kernel that uses none is not run under it (a
  // sanitizer worker costs seconds, and a rejection should not wait on a diagnosis that cannot apply).
  bool uses_shared = false;
  for (const auto& [name, k] : b.kernels.items())
    if (k.is_object() && k.value("static_shared_bytes", std::int64_t(0)) > 0) uses_shared = true;
  for (const auto& l : resolve_plan(b, smallest->spec.dtype, smallest->spec.dims, s.device()).launches)
    if (l.shared > 0) uses_shared = true;
  if (!uses_shared) {
    rep.sanitizer = {{"status", "not_run"},
                     {"why", "the candidate already failed, and its kernels use no shared memory (racecheck would see nothing)"}};
    return;
  }
  CheckOptions small = o;
  small.sanitizer_cases = 2;
  std::vector<contract::CaseSpec> picks = sanitizer_picks(c, small, rep);
  picks.push_back(smallest->spec);
  sanitizer_pass(s, b, c, picks, {"racecheck"}, rep);
}

}  // namespace detail
}  // namespace kqual::check
