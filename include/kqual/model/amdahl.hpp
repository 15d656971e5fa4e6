#pragma once
// End-to-end arithmetic that ties one kernel to the service it runs in (docs/models.md, "Amdahl"
// and "Break-even"). Pure CPU code: the memo and `kqual model amdahl|breakeven` both call it.
#include <string>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::model {

// Ceiling of the end-to-end speedup when a kernel taking `share` of the end-to-end time becomes
// infinitely fast: 1/(1-share). +infinity when share == 1; throws Error(usage) outside [0,1].
double amdahl_ceiling(double share);
// End-to-end speedup when that kernel becomes kernel_speedup times faster:
// 1/((1-share) + share/kernel_speedup). Throws Error(usage) for share outside [0,1] or
// kernel_speedup <= 0 (or not finite).
double amdahl_speedup(double share, double kernel_speedup);

struct Breakeven {
  double calls = 0;          // [calls per process] after which the warm gain repays the cold cost
  bool never = false;        // the warm saving never repays the cold cost
  std::string explanation;   // plain language: what the number establishes, what still needs measuring
};
// Calls after which a warm gain repays an extra cold-start cost: extra_cold_cost_s /
// warm_saving_per_call_s; never = true (calls = +infinity) when the warm saving is <= 0 while the
// cold cost is > 0, and whenever the change is slower warm (a warm loss is never repaid, even when
// the change starts faster: the explanation then names the calls it stays ahead for); calls = 0
// when the cold cost is <= 0 and the warm saving >= 0. Throws Error(usage) for non-finite inputs.
Breakeven breakeven_calls(double extra_cold_cost_s, double warm_saving_per_call_s);

// The report behind `kqual model amdahl`: the ceiling and the speedup at each kernel speedup asked.
struct AmdahlPoint {
  double kernel_speedup = 1;
  double end_to_end_speedup = 1;
  double time_saved_fraction = 0;  // [fraction of end-to-end time] 1 - 1/end_to_end_speedup
};
struct AmdahlReport {
  double share = 0;
  double ceiling = 1;  // +infinity when share == 1
  std::vector<AmdahlPoint> points;
  std::string explanation;
};
AmdahlReport amdahl_report(double share, const std::vector<double>& kernel_speedups);

// The report behind `kqual model breakeven`: the break-even point, and — when the caller knows how
// many calls a process serves — the net effect over that lifetime.
struct BreakevenReport {
  double extra_cold_cost_s = 0;
  double warm_saving_per_call_s = 0;
  Breakeven breakeven;
  bool has_calls_per_process = false;
  double calls_per_process = 0;
  double net_saving_per_process_s = 0;  // [s] calls * saving - extra cold cost; > 0: the change pays
  std::string verdict;                  // "pays off", "does not pay off", "" without calls_per_process
};
BreakevenReport breakeven_report(double extra_cold_cost_s, double warm_saving_per_call_s,
                                 double calls_per_process = -1);

json to_json(const AmdahlReport& r);
json to_json(const BreakevenReport& r);

}  // namespace kqual::model
