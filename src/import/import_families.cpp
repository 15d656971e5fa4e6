// Value families written into imported contracts (import_common.hpp). A Definition or a KernelBench
// problem states one distribution per input (or none: N(0, 1)); on it, defects that only show at other
// scales pass — an RMSNorm without eps (1e-6 against a mean square near 1), a softmax without its max
// subtracted (exp of values below 5), a LayerNorm that never subtracts the mean (rows of mean ~0).
// Three generic families redraw the operation's data inputs at other scales; the comments written with
// them say why each exists and where the imported tolerance leaves little of it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "import_common.hpp"

namespace kqual::contract::detail {

namespace {

constexpr double kSmall = 1e-3, kLarge = 1e3;  // the factors of small_scale and large_scale
constexpr double kMean = 4, kStd = 0.5;        // nonzero_mean: normal inputs
constexpr double kLo = 3, kHi = 5;             // nonzero_mean: uniform inputs (mean 4, positive)

constexpr double kExtremeShare = 0.01;          // extreme_scale of f16 / fp8 inputs: values near the largest finite one

std::string names(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); }

// f16, e4m3 and e5m2: a range too short for extreme_scale's factor.
bool is_narrow_input(const FamilyInput& in) { return in.dtype == "f16" || is_fp8_dtype(in.dtype); }

}  // namespace

std::vector<FamilyInput> data_inputs(const std::vector<FamilyInput>& offered, const std::vector<std::vector<std::string>>& output_shapes) {
  std::vector<FamilyInput> data;
  for (const auto& in : offered)
    for (const auto& shape : output_shapes)
      if (in.shape == shape) {
        data.push_back(in);
        break;
      }
  if (data.empty() && !offered.empty()) data.push_back(offered.front());
  return data;
}

std::string value_families_toml(const std::vector<FamilyInput>& data, const FamilyText& how) {
  if (data.empty()) return "";
  std::vector<std::string> scaled;
  for (const auto& in : data) scaled.push_back(in.name);
  std::ostringstream t;
  t << "# ---- Value families, written by " << how.tool << " (the source states no value ranges) ----\n"
    << "# The base family draws every input as its `values` say. Each family below redraws the data inputs\n"
    << "# (" << names(scaled) << ": those with an output's shape, else the first input) on the cases whose largest\n"
    << "# tensor is within " << kFamilyMaxElements << " elements (max_elements: the small cases and the workload shapes\n"
    << "# the CPU reference takes in a few hundred ms).";
  if (!how.kept.empty())
    t << " The other inputs (" << names(how.kept) << ") keep their values, so an output moves\n"
      << "# by the family's factor once, not once per factor of a product (1e-3 x 1e-3 is under any tolerance).";
  t << "\n# Integer inputs (indices, offsets, masks), constants and scalars are never redrawn.\n#\n";
  t << "# small_scale: the data 1000 times smaller (normal: std 1e-3; uniform: its range scaled, so a\n"
    << "#   non-negative input stays non-negative). Where the output keeps its size (RMSNorm, LayerNorm),\n"
    << "#   additive terms decide it: eps (1e-6 to 1e-5) against a mean square of 1e-6 - a kernel that\n"
    << "#   drops eps, or adds it outside the square root, is off by far more than the tolerance.\n"
    << "#   Where the output shrinks with its input (elementwise operations, products, rotations) it is\n";
  const double ratio = how.atol / kSmall;
  if (ratio >= 1)
    t << "#   ~1e-3 here, and the imported atol = " << fmt::format("{:g}", how.atol) << " is " << fmt::format("{:.3g}", ratio)
      << " times such an output: for those operations this\n"
      << "#   family checks little beyond every element being written and finite. That is the imported\n"
      << "#   tolerance's limit (an absolute term sized for outputs of order 1), not a pass on the arithmetic.\n";
  else
    t << "#   ~1e-3 here, and the imported atol = " << fmt::format("{:g}", how.atol) << " is " << fmt::format("{:.3g}", 100 * ratio)
      << " % of such an output: their error is\n"
      << "#   checked only to about that share, on top of rtol.\n";
  t << "# large_scale: the data 1000 times larger (far inside the range of f32 and bf16, 3.4e38): exp without\n"
    << "#   the row maximum subtracted (softmax, log-softmax, log(1 + exp(x))) overflows to Inf or NaN, and a\n"
    << "#   kernel assuming values of order 1 (a clamp, an approximation valid on a short range) goes wrong.\n"
    << "#   An output the reference itself takes past the output dtype's range is expected as Inf, as the\n"
    << "#   reference rounds to that dtype.\n"
    << "# nonzero_mean: mean 4, std 0.5 (uniform inputs: [3, 5], positive either way). A kernel that assumes\n"
    << "#   zero-mean data fails (a LayerNorm that never subtracts the mean passes N(0, 1) rows, whose mean is\n"
    << "#   about 1/sqrt(row length)); a one-pass variance E[x^2] - E[x]^2 cancels 16.25 - 16 and loses ~6\n"
    << "#   bits, visible when accumulated in bf16.\n";
  if (!how.no_scale_up.empty()) t << "# large_scale is not written: " << how.no_scale_up << "\n";
  std::vector<std::string> narrow_range;  // e4m3 inputs: normal values only within [2^-6, 448]
  for (const auto& in : data)
    if (in.dtype == "e4m3") narrow_range.push_back(in.name);
  if (!narrow_range.empty())
    t << "# " << names(narrow_range) << " (e4m3: normal values in [2^-6, 448]) get no small_scale or large_scale: 1e-3 x N(0, 1)\n"
      << "#   is mostly below e4m3's smallest normal (zeros and subnormals, which denormals covers), 1e3 x N(0, 1) past its\n"
      << "#   largest finite value; extreme_scale puts values near 448 instead.\n";
  if (!how.any_small_case)
    t << "# NOTE: no case of this contract has every tensor within " << kFamilyMaxElements << " elements (its constant axes make\n"
      << "#   each case larger), so as written these families run on no case. `small_only = false` in a family runs\n"
      << "#   it on every case (one more reference evaluation per case, on the CPU in float64: slow for large\n"
      << "#   constant tensors).\n";
  // A family over the inputs `keep` accepts; not written when none does.
  auto table = [&](const char* family, bool (*keep)(const FamilyInput&), auto&& value) {
    if (std::none_of(data.begin(), data.end(), keep)) return;
    t << "[families." << family << "]\nmax_elements = " << kFamilyMaxElements << "\n";
    for (const auto& in : data)
      if (keep(in)) t << in.name << " = " << value(in) << "\n";
  };
  auto every = [](const FamilyInput&) { return true; };
  auto scalable = [](const FamilyInput& in) { return in.dtype != "e4m3"; };
  table("small_scale", scalable, [](const FamilyInput&) { return fmt::format("{{ scale = {:g} }}", kSmall); });
  if (how.no_scale_up.empty()) table("large_scale", scalable, [](const FamilyInput&) { return fmt::format("{{ scale = {:g} }}", kLarge); });
  table("nonzero_mean", every, [](const FamilyInput& in) {
    return in.dist == "uniform" ? fmt::format("{{ lo = {:g}, hi = {:g} }}", kLo, kHi) : fmt::format("{{ mean = {:g}, std = {:g} }}", kMean, kStd);
  });
  t << "\n";
  return t.str();
}

std::string special_families_toml(const std::vector<FamilyInput>& data, const FamilyText& how, std::vector<std::string>& written) {
  if (data.empty()) return "";
  std::vector<std::string> redrawn;
  for (const auto& in : data) redrawn.push_back(in.name);
  std::ostringstream t;
  t << "# ---- Special values, written by " << how.tool << " (the source never feeds them) ----\n"
    << "# The same data inputs (" << names(redrawn) << "), floating ones only, on the cases up to " << kFamilyMaxElements << " elements.\n"
    << "# The expected output is the reference's own output on these inputs, evaluated as the policy says\n"
    << "# (its real precision), rounded once to the output dtype. NaN and Inf are matched exactly\n"
    << "# (nan = \"propagate\"): NaN where the reference gives NaN and nowhere else, +-Inf where it gives\n"
    << "# the same infinity; -0 compares equal to +0 under the tolerance.\n"
    << "# specials: NaN, +Inf, -Inf and -0 at random positions (1 %, each at least once per input): a kernel\n"
    << "#   whose max or sum swallows NaN (fmaxf), or turns Inf into a finite value, is caught.\n"
    << "# denormals: every value a subnormal of the input's dtype. Under the tolerance a flushed subnormal\n"
    << "#   moves an output by ~1e-38, which no absolute term sees; what this family catches is a kernel\n"
    << "#   that flushes them and then divides by the zero it made (a norm without eps, 0 * Inf = NaN).\n";
  std::vector<std::string> narrow;  // f16 and fp8 inputs: their own largest values
  for (const auto& in : data)
    if (is_narrow_input(in)) narrow.push_back(in.name);
  if (how.no_scale_up.empty()) {
    if (narrow.size() < data.size())
      t << "# extreme_scale: the data 2^50 times larger in f32 and bf16 (2^400 in f64): as large as squares and\n"
        << "#   dot products of the values still fit the dtype (2^100 x 2^20 terms < 2^128), so the reference's\n"
        << "#   precision and the input dtype's agree; a kernel that accumulates in a narrower type (f16 overflows\n"
        << "#   at 65504), or approximates exp, tanh or rsqrt on a short range, goes wrong.\n";
    if (!narrow.empty())
      t << "# extreme_scale for " << names(narrow) << " (f16 / fp8): 1 % of the values at +-[0.5, 1) x the dtype's own largest\n"
        << "#   finite value (65504 f16, 448 e4m3, 57344 e5m2; a scale of 2^50 would make them all Inf). Their squares and\n"
        << "#   products fit f32 (65504^2 < 2^32), where a kernel computing in f16 or fp8 overflows.\n";
  } else {
    t << "# extreme_scale is not written: " << how.no_scale_up << "\n";
  }
  t << "# Values near the dtype's largest finite value are not written" << (narrow.empty() ? "" : " for f32, bf16 and f64 inputs")
    << ": a sum of their squares or products\n"
    << "#   overflows in the input dtype (as PyTorch does in float32) where a float64 reference does not, so\n"
    << "#   the expected output would not be the source's.\n";
  auto table = [&](const char* family, auto&& value) {
    t << "[families." << family << "]\nmax_elements = " << kFamilyMaxElements << "\n";
    for (const auto& in : data) t << in.name << " = " << value(in) << "\n";
    written.push_back(family);
  };
  table("specials", [](const FamilyInput&) { return std::string("{ specials = 0.01 }"); });
  table("denormals", [](const FamilyInput&) { return std::string("{ denormals = 1 }"); });
  if (how.no_scale_up.empty())
    table("extreme_scale", [](const FamilyInput& in) {
      if (is_narrow_input(in)) return fmt::format("{{ extremes = {:g} }}", kExtremeShare);
      return fmt::format("{{ scale = {:.17g} }}", std::ldexp(1.0, in.dtype == "f64" ? 400 : 50));
    });
  t << "\n";
  return t.str();
}

std::string special_values_policy(const std::vector<std::string>& families, const std::vector<std::string>& never) {
  std::string s;
  if (!families.empty())
    s = fmt::format("Special values (families {}) are checked against the reference's own output on them: NaN must be NaN exactly "
                    "where the reference gives NaN, +-Inf exactly where it gives the same infinity (nan = propagate)",
                    fmt::join(families, ", "));
  else
    s = "No special-value family is written (no floating data input)";
  if (!never.empty())
    s += fmt::format("; {} never get NaN, Inf, subnormal or extreme values (integers, indices and constants have no such values, "
                     "and inputs that keep their values are not redrawn)", fmt::join(never, ", "));
  return s + ".";
}

}  // namespace kqual::contract::detail
