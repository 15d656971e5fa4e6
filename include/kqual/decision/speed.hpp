#pragma once
// The speed half of a ship decision (docs/decision.md): per shape, the candidate's time against the
// fastest baseline, a difference counted only beyond a practical margin with a relative and an
// absolute part, judged on the bootstrap CI; shapes weighted by the deployment profile's mix; an
// overall effect (weighted geometric mean of the time ratios, with its CI) beside the table; and a
// per-shape regression limit that blocks shipping whatever the average says. Pure arithmetic on
// recorded samples, so `kqual decide` re-judges a result offline with the same numbers.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/stats/compare.hpp"

namespace kqual::decision {

struct DeploymentProfile;

// A difference (or a regression) counts at a shape only beyond max(relative, absolute_s / baseline
// time): 3 % is about what the H200 reproduces between runs of one kernel at large sizes, and 0.5 us
// is about the spread of a launch-bound kernel's time between processes, below which no service
// notices (docs/decision.md, "Why these defaults").
struct SpeedPolicy {
  double margin_relative = 0.03;      // [fraction of the baseline's time]
  double margin_absolute_s = 0.5e-6;  // [s]
  double regression_limit = 0.10;     // [fraction] no shape may be this much slower (or the absolute margin)
  stats::BootstrapOptions bootstrap{};
};

// Parses --margin: "REL[,ABS]" with REL "3%" or "0.03" and ABS "0.5us", "500ns", "0.0005ms" or
// "5e-7s"; --regression-limit: "10%" or "0.1". Error(usage) naming the text otherwise.
void parse_margin(const std::string& text, SpeedPolicy& p);
double parse_fraction(const std::string& option, const std::string& text);

// One timed shape as the rule needs it: the samples of the candidate and of the fastest baseline
// that passed its own checks. `failure` non-empty: the candidate failed or was wrong while timed.
struct ShapeSamples {
  std::string shape;                 // "n=4096"
  std::string baseline;              // "" when no valid baseline was timed here
  std::vector<double> baseline_ms;   // [ms]
  std::vector<double> candidate_ms;  // [ms]
  std::string failure;
  // Non-empty: the shape could not be timed (the contract or the launch plan refused it for the
  // candidate before any launch, e.g. outside its claims): not compared, never its failure.
  std::string not_timed;
};

// How much each shape counts: calls per shape from the profile's [[shape]] mix, or equal calls for
// every timed shape (the default profile). The weight of a shape is its share of the deployment's
// time in this operation, calls x the baseline's median time: a shape that is called often but takes
// 4 us weighs what it costs.
struct ShapeMix {
  std::string profile = "default";  // the profile's name, or "default"
  bool from_profile = false;        // false: every timed shape called equally often
  std::vector<std::pair<std::string, double>> calls;  // shape → calls (from the profile)
};
ShapeMix shape_mix_of(const DeploymentProfile& p);

// The policy a run decides with: kqual's defaults, then the profile's [decision] keys, then the
// command line's --margin / --regression-limit ("" when not given).
SpeedPolicy speed_policy(const DeploymentProfile& p, const std::string& margin, const std::string& regression_limit);

enum class ShapeCall { faster, slower, no_difference, inconclusive, not_compared, failed };
const char* to_string(ShapeCall c);  // "faster", "slower", "no_difference", "inconclusive", "not_compared", "failed"
std::optional<ShapeCall> shape_call_from_string(std::string_view s);  // to_string's words; nullopt for any other

struct ShapeJudgement {
  std::string shape, baseline;
  double baseline_median_s = 0, candidate_median_s = 0;  // [s]
  double ratio = 0;                 // candidate / baseline median time
  stats::Interval ci;               // 95 % bootstrap CI of the ratio
  double margin = 0;                // effective relative margin here: max(relative, absolute / baseline time)
  double limit = 0;                 // effective regression limit: max(regression_limit, absolute / baseline time)
  double calls = 0;                 // from the mix (0: not in the profile's mix)
  double weight = 0;                // share of the deployment's time [0, 1]
  ShapeCall call = ShapeCall::not_compared;
  bool beyond_limit = false;        // the CI lies wholly above 1 + limit: blocks ship
  bool may_exceed_limit = false;    // the CI reaches above 1 + limit: ship cannot be claimed
  std::string sentence;             // the row's verdict in words
};

struct OverallEffect {
  bool computed = false;
  double ratio = 1;                 // weighted geometric mean of the shapes' time ratios
  stats::Interval ci;
  double margin = 0;                // weighted (geometric) mean of the shapes' margins
  std::string why_not;              // when not computed
};

struct SpeedJudgement {
  // ship, no_difference, do_not_ship, inconclusive or incomplete (a shape of the mix not compared)
  std::string verdict;
  std::string deciding;             // the one sentence that decided it
  std::vector<std::string> would_reverse;
  std::vector<std::string> notes;   // e.g. a slower shape inside the regression limit
  SpeedPolicy policy;
  ShapeMix mix;
  std::vector<ShapeJudgement> shapes;
  OverallEffect overall;
};

// The rule, first match wins (docs/decision.md):
//   1. a shape failed or was wrong while timed          → do_not_ship;
//   2. a shape of the mix was not compared              → incomplete;
//   3. a weighted shape's CI wholly above 1 + its limit → do_not_ship (the regression limit);
//   4. overall CI wholly above 1 + margin               → do_not_ship;
//   5. a weighted shape's CI reaches above 1 + its limit → inconclusive (it may regress past the limit);
//   6. overall CI wholly below 1 - margin               → ship;
//   7. overall CI inside [1 - margin, 1 + margin]       → no_difference;
//   8. otherwise                                        → inconclusive (the overall CI crosses the margin).
SpeedJudgement judge_speed(const std::vector<ShapeSamples>& shapes, const ShapeMix& mix, const SpeedPolicy& policy);

json to_json(const SpeedJudgement& j);
SpeedJudgement speed_judgement_from_json(const json& j);  // Error(input) naming the field
std::string speed_table_markdown(const SpeedJudgement& j);  // the memo's per-shape table and overall row

}  // namespace kqual::decision
