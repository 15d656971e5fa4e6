// kqual compare's pure arithmetic (exposed for tests): the A/B process order, the decision's inputs
// from raw samples, the first-request resolution, and how the two sides' correctness relate.
#include "kqual/pipeline/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kqual/core/error.hpp"
#include "kqual/stats/compare.hpp"

namespace kqual::compare {

std::vector<int> interleave_order(int count) {
  // A B | B A | A B | B A ...: pair p is (A, B) for even p, (B, A) for odd p.
  std::vector<int> out;
  for (int i = 0; i < count; ++i) {
    int pair = i / 2, pos = i % 2;
    out.push_back(pair % 2 == 0 ? pos : 1 - pos);
  }
  return out;
}


namespace {

std::vector<double> to_seconds(const std::vector<double>& ms) {
  std::vector<double> s;
  s.reserve(ms.size());
  for (double v : ms) s.push_back(v * 1e-3);
  return s;
}

}  // namespace

decision::DecisionInput decision_input(const std::vector<StartupPair>& startup, const std::vector<double>& warm_old_ms,
                                       const std::vector<double>& warm_new_ms, std::optional<bool> new_uses_ptx_jit,
                                       const std::string& target_arch, double cold_noise_floor_ms,
                                       const stats::EquivalenceMargin& warm_margin) {
  decision::DecisionInput in;
  in.new_uses_ptx_jit = new_uses_ptx_jit;
  in.target_arch = target_arch;
  if (startup.empty()) throw_error(ErrorKind::input, "no startup measurement to decide on");
  const startup::LoadingMode loading = startup.front().loading;
  stats::DecisionOptions cold_opt;
  cold_opt.test.effect = stats::Effect::difference;
  cold_opt.margin.absolute = cold_noise_floor_ms * 1e-3;  // [s]
  for (const auto& p : startup) {
    if (p.loading != loading) continue;
    if (p.old_side.kernel_first_use_ms.empty() || p.new_side.kernel_first_use_ms.empty()) {
      in.failed_modes.emplace_back(p.cache, fmt::format("every startup probe of {} failed in it",
                                                        p.old_side.kernel_first_use_ms.empty() ? "OLD" : "NEW"));
      continue;
    }
    const auto of = to_seconds(p.old_side.first_request_ms), nf = to_seconds(p.new_side.first_request_ms);
    const auto ok = to_seconds(p.old_side.kernel_first_use_ms), nk = to_seconds(p.new_side.kernel_first_use_ms);
    in.cold.push_back(decision::cold_start_delta(p.cache, of, nf, ok, nk, cold_opt));
  }
  if (in.cold.empty()) throw_error(ErrorKind::input, "no cache mode has startup samples on both sides");
  if (warm_old_ms.empty() || warm_new_ms.empty()) throw_error(ErrorKind::input, "no warm timing on both sides");
  stats::DecisionOptions warm_opt;
  warm_opt.test.paired = warm_old_ms.size() == warm_new_ms.size();
  warm_opt.reversal_check = true;  // process pairs that disagree in order: no reliable difference
  // The warm samples are decided in seconds; the margin's absolute part comes in ms (as the per-shape tables use it).
  warm_opt.margin = {warm_margin.relative, warm_margin.absolute * 1e-3};
  in.warm = decision::warm_delta(to_seconds(warm_old_ms), to_seconds(warm_new_ms), warm_opt);
  return in;
}

const char* to_string(CorrectnessRelation r) {
  switch (r) {
    case CorrectnessRelation::not_run: return "not run";
    case CorrectnessRelation::both_accepted: return "both accepted";
    case CorrectnessRelation::new_rejected: return "new rejected";
    case CorrectnessRelation::old_rejected: return "old rejected";
    case CorrectnessRelation::both_rejected_alike: return "both rejected alike";
    case CorrectnessRelation::both_rejected_differently: return "both rejected differently";
  }
  return "?";
}

CorrectnessRelation relate(const CorrectnessSide& a, const CorrectnessSide& b) {
  if (!a.ran || !b.ran) return CorrectnessRelation::not_run;
  if (a.accepted && b.accepted) return CorrectnessRelation::both_accepted;
  if (a.accepted) return CorrectnessRelation::new_rejected;
  if (b.accepted) return CorrectnessRelation::old_rejected;
  return a.failing == b.failing ? CorrectnessRelation::both_rejected_alike : CorrectnessRelation::both_rejected_differently;
}

Resolution resolution(const std::vector<double>& old_ms, const std::vector<double>& new_ms, double target_ms) {
  Resolution r;
  r.runs_per_side = int(std::min(old_ms.size(), new_ms.size()));
  if (old_ms.size() < 2 || new_ms.size() < 2) {
    r.half_width_ms = std::numeric_limits<double>::infinity();
    r.runs_needed = 2;
    return r;
  }
  stats::DecisionOptions d;
  d.test.effect = stats::Effect::difference;
  const stats::Comparison c = stats::compare(old_ms, new_ms, d);
  r.half_width_ms = 0.5 * (c.ci.hi - c.ci.lo);
  // The half-width shrinks as 1/sqrt(n): n' = n (h / target)^2.
  const double need = double(r.runs_per_side) * std::pow(r.half_width_ms / target_ms, 2.0);
  r.runs_needed = std::max(2, int(std::ceil(need)));
  return r;
}

}  // namespace kqual::compare
