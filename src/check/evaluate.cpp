// check_correctness: a candidate's cases in order (cheapest and most decisive first), each run,
// counted and the verdict settled by the first failure; then the cases past 2^31 elements
// (index_cases.cpp) and the sanitizer pass (sanitizer_pass.cpp). One case runs in host_case.cpp,
// generated_case.cpp or device_case.cpp, and is judged in judge_runs.cpp.
#include "kqual/check/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>

#include "kqual/check/claims.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/core/error.hpp"
#include "kqual/worker/protocol.hpp"
#include "internal.hpp"

namespace kqual::check {

namespace detail {

// A case kqual could not run for its own reasons (its allocation, the upload, the worker lost outside
// the candidate's launch, its reference): not run, never counted against the candidate.
bool harness_not_run(CaseResult& r, CorrectnessReport& rep) {
  if (r.status != CaseStatus::fail || r.code != "harness_error") return false;
  r.status = CaseStatus::not_run;
  ++rep.harness_errors;
  if (rep.harness_failure.empty()) rep.harness_failure = fmt::format("{}: {}", r.spec.id, r.detail);
  rep.results.push_back(r);
  return true;
}

// The expected outputs come from a reference worker or kernel (Error(cuda) when it fails): kqual's
// failure on this case, not the candidate's.
CaseResult harness_guarded(const contract::CaseSpec& spec, const std::function<CaseResult()>& run) {
  try {
    return run();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::cuda) throw;
    CaseResult r;
    r.spec = spec;
    r.status = CaseStatus::fail;
    r.code = "harness_error";
    r.detail = fmt::format("{} (the reference): {} — not the candidate's", worker::kHarnessFailure, e.what());
    return r;
  }
}

std::int64_t case_elements(const contract::Contract& c, const contract::CaseSpec& spec) {
  std::int64_t total = 0;
  for (const auto& t : c.tensors()) total += c.tensor_elements(t.name, spec.dims);
  return total;
}

// One case through the harness: host-made cases run styled; large cases generated on the device are
// verified there against the contract's device reference when it has one, else in windows against
// the CPU reference. The wall time is the case's.
CaseResult run_one_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                        const CheckOptions& o, int* diagnoses) {
  auto t0 = std::chrono::steady_clock::now();
  RunStyle style;
  style.diagnoses_left = diagnoses;
  CaseResult r = harness_guarded(spec, [&] {
    return spec.family != contract::kGeneratedFamily ? run_case_styled(s, b, c, spec, style)
           : c.device_reference(spec)               ? run_device_verified_case(s, b, c, spec, o.index_case_timeout_s)
                                                    : run_generated_case(s, b, c, spec, o.index_case_timeout_s);
  });
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

bool over_size_cap(const contract::Contract& c, const contract::CaseSpec& spec, const CheckOptions& o) {
  return o.max_case_elements > 0 && case_elements(c, spec) > o.max_case_elements;
}

// Counts a case that ran (pass, refused or fail) into the report.
void count_case(CorrectnessReport& rep, const CaseResult& r) {
  ++rep.cases;
  if (!r.checks_not_run.empty()) rep.checks_not_run.insert(r.checks_not_run);
  if (r.status == CaseStatus::pass) {
    ++rep.passed;
    if (r.degenerate.empty()) ++rep.evidence;
  } else if (r.status == CaseStatus::refused) {
    ++rep.refused;
  } else {
    ++rep.failed;
    ++rep.failure_codes[r.code];
  }
}

}  // namespace detail

using namespace detail;

void order_cases(const contract::Contract& c, std::vector<contract::CaseSpec>& cases) {
  // Plain value families catch tails, offsets and wrong arithmetic; the special ones catch NaN/Inf
  // policy, denormal flushing and overflow. Large cases cost seconds each, small ones milliseconds.
  static const std::set<std::string> special = {"specials", "denormals", "near_max", "neg_inf", "large_logits", "all_equal",
                                                "wrap"};
  constexpr std::int64_t kSmall = std::int64_t(1) << 22;
  auto key = [&](const contract::CaseSpec& x) {
    const std::int64_t e = case_elements(c, x);
    const int group = e > kSmall ? 2 : special.count(x.family) ? 1 : 0;
    return std::pair<int, std::int64_t>(group, e);
  };
  std::stable_sort(cases.begin(), cases.end(), [&](const contract::CaseSpec& a, const contract::CaseSpec& bb) { return key(a) < key(bb); });
}

namespace {

// The run-to-run rule of each dtype the candidate claims, as the report states it.
json run_to_run_rules(const contract::Contract& c, const BuiltCandidate& b) {
  json rules = json::array();
  for (DType t : b.manifest.supports.dtypes) {
    const RunToRunPolicy p = run_to_run_policy(c, b.manifest.supports, t);
    rules.push_back({{"dtype", std::string(to_string(t))}, {"required", p.required}, {"reason", p.reason},
                     {"opt_out", p.opt_out}, {"rule_from", p.rule_from}});
  }
  return rules;
}

// The contract's cases in order, into rep: after the first failing case the rest are listed as not
// run (unless all_cases); a fault stops them (stop_on_fault), kqual's own failure too. True when a
// fault stopped them.
bool run_ordered_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                       CorrectnessReport& rep, int* diagnoses) {
  std::vector<contract::CaseSpec> cases = c.correctness_cases(b.manifest.supports, o.seed, o.include_large);
  order_cases(c, cases);
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const contract::CaseSpec& spec = cases[ci];
    if (!o.all_cases && rep.failed > 0) {
      // The verdict is settled: the first failing case rejected the candidate (and was diagnosed).
      for (std::size_t k = ci; k < cases.size(); ++k) rep.settled_not_run.push_back(cases[k].id);
      break;
    }
    if (over_size_cap(c, spec, o)) {
      ++rep.skipped;
      continue;
    }
    CaseResult r = run_one_case(s, b, c, spec, o, diagnoses);
    rep.wall_ms += r.wall_ms;
    if (harness_not_run(r, rep)) break;  // kqual cannot run this candidate's cases now: no verdict
    if (r.status == CaseStatus::skipped) {
      ++rep.skipped;
      rep.results.push_back(r);
      continue;
    }
    count_case(rep, r);
    rep.results.push_back(r);
    if (o.stop_on_fault && (is_fault(r.code) || r.code == "hang" || r.code == "worker_protocol" || r.code == "harness_error" ||
                            r.code == "out_of_bounds_read"))
      return true;
  }
  return false;
}

// CheckOptions::only_case: that one case, counted as the case loop counts it.
void run_only_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o, CorrectnessReport& rep,
                   int* diagnoses) {
  const contract::CaseSpec spec = require_case(c, b.manifest.supports, o.seed, o.only_case);
  if (over_size_cap(c, spec, o)) {
    ++rep.skipped;
    return;
  }
  CaseResult r = run_one_case(s, b, c, spec, o, diagnoses);
  rep.wall_ms += r.wall_ms;
  if (harness_not_run(r, rep)) return;
  if (r.status == CaseStatus::skipped) {
    ++rep.skipped;
  } else {
    count_case(rep, r);
  }
  rep.results.push_back(r);
}

// Which claims of the manifest the cases exercised, into the report (claims.hpp).
void record_claims(const contract::Contract& c, const BuiltCandidate& b, CorrectnessReport& rep) {
  rep.claims = json::array();
  for (const auto& e : claims_exercised(c, b.manifest.supports, rep)) rep.claims.push_back(e.to_json());
}

}  // namespace

std::optional<contract::CaseSpec> find_case(const contract::Contract& c, const contract::Supports& cand, std::uint64_t seed,
                                            const std::string& id) {
  for (auto& spec : c.correctness_cases(cand, seed, true))
    if (spec.id == id) return spec;
  for (auto& spec : c.index_cases(cand, seed))
    if (spec.id == id) return spec;
  return std::nullopt;
}

contract::CaseSpec require_case(const contract::Contract& c, const contract::Supports& cand, std::uint64_t seed,
                                const std::string& id) {
  if (auto spec = find_case(c, cand, seed, id)) return *spec;
  std::vector<contract::CaseSpec> cases = c.correctness_cases(cand, seed, true);
  std::string some;
  for (std::size_t i = 0; i < cases.size() && i < 4; ++i) some += (i ? ", " : "") + cases[i].id;
  throw_error(ErrorKind::input, fmt::format("--case '{}': contract {} has no case with this id for the candidate's claims under "
                                            "seed {} ({} cases, e.g. {})",
                                            id, c.name(), seed, cases.size(), some));
}

CorrectnessReport check_correctness(Session& s, const BuiltCandidate& b, const CheckOptions& o) {
  const contract::Contract& c = b.manifest.resolved_contract();
  CorrectnessReport rep;
  rep.candidate = b.manifest.name;
  rep.run_to_run_rule = run_to_run_rules(c, b);
  int diagnoses = 4;  // failing cases diagnosed (out-of-bounds read? leftover shared memory?) per candidate
  if (!o.only_case.empty()) {
    run_only_case(s, b, c, o, rep, &diagnoses);
    sanitizer_after_cases(s, b, c, o, rep);
    record_claims(c, b, rep);
    return rep;
  }
  const bool stopped_on_fault = run_ordered_cases(s, b, c, o, rep, &diagnoses);
  const bool settled = !o.all_cases && rep.failed > 0;
  if (o.index_cases && s.device().present && settled)
    for (const auto& spec : c.index_cases(b.manifest.supports, o.seed)) rep.settled_not_run.push_back(spec.id);
  if (o.index_cases && s.device().present && !settled && !(o.stop_on_fault && rep.failed && stopped_on_fault))
    run_index_cases(s, b, c, o, rep, &diagnoses);
  sanitizer_after_cases(s, b, c, o, rep);
  record_claims(c, b, rep);
  return rep;
}

}  // namespace kqual::check
