// A declared contract's cases (declared_contract.hpp): per axis its boundaries and hints, primes, a
// shape drawn from the seed, the large shape, row strides with padding of several sizes; and the
// cases past 2^31 elements with their windows.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "declared_contract.hpp"
#include "kqual/contract/generated.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::declared {
namespace {

bool prime(std::int64_t v) {
  if (v < 2) return false;
  for (std::int64_t d = 2; d * d <= v; ++d)
    if (v % d == 0) return false;
  return true;
}

}  // namespace

// The smallest stride increment of a row-stride axis: its multiple_of, and the candidate's alignment
// in elements of each tensor using it in each claimed dtype row (a stride breaking it is refused).
std::int64_t DeclaredContract::stride_step(const Axis& a, const Supports& cand) const {
  std::int64_t step = a.multiple_of;
  for (const auto& td : s_.tensors) {
    if (td.stride_axis != a.name) continue;
    for (const auto& [key, r] : s_.rows) {
      if (!cand.supports(key)) continue;
      const std::int64_t es = std::int64_t(dtype_size(tensor_dtype(td.name, key)));
      step = std::lcm(step, std::max<std::int64_t>(1, cand.min_alignment_bytes / es));
    }
  }
  return step;
}

// `given` with every row stride at its row length rounded up to the step, plus `k` steps of
// padding (k < 0: twice the rounded row). The j-th stride axis gets 2j steps more (k > 0; k < 0: j
// rows more): tensors with strides of their own never share one in a case, so a kernel that
// indexes one with another's stride is caught.
Dims DeclaredContract::with_strides(Dims given, const Supports& cand, std::int64_t k) const {
  Dims all;
  try {
    all = s_.complete(given);
  } catch (const Error&) {
    return given;  // not a shape the cases keep
  }
  std::int64_t j = 0;
  for (const auto& a : s_.axes) {
    if (a.kind != Axis::stride) continue;
    const std::int64_t step = stride_step(a, cand), row = (all.at(a.of) + step - 1) / step * step;
    given[a.name] = k < 0 ? (2 + j) * row : k == 0 ? row : row + (k + 2 * j) * step;
    ++j;
  }
  return given;
}

std::vector<CaseSpec> DeclaredContract::correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const {
  return plan_cases(cand, seed, include_large, nullptr);
}

std::vector<CaseSpec> DeclaredContract::plan_cases(const Supports& cand, std::uint64_t seed, bool include_large,
                                                   std::vector<NotRun>* not_run) const {
  // Per variable axis: its minimum, each hint t as t-1, t, t+1, the base, a prime above the base;
  // every other axis held at its base. Then every free axis at its prime at once, one shape drawn
  // from the seed (a size the candidate cannot predict) and the large shape.
  Dims base;
  for (const auto& a : s_.axes)
    if (a.kind == Axis::variable) base[a.name] = a.base;
  std::vector<Dims> shapes = {base};
  auto prime_above_base = [](const Axis& a) {
    std::int64_t p = a.base + a.base / 2 + 1;
    while (!prime(p) && p < a.base * 4 + 64) ++p;
    return p;
  };
  for (const auto& a : s_.axes) {
    if (a.kind != Axis::variable) continue;
    std::set<std::int64_t> vals = {a.min, a.min + 1, a.base, prime_above_base(a)};
    for (std::int64_t t : a.hints)
      for (std::int64_t v : {t - 1, t, t + 1, 2 * t + 1}) vals.insert(v);
    for (std::int64_t v : vals) {
      Dims g = base;
      g[a.name] = v;
      shapes.push_back(g);
    }
  }
  {
    // Every free axis at its prime at once. With one axis varied at a time, the others sit at bases
    // that are often multiples of 4, so the flattened element count is too: a kernel that drops the
    // tail of its last vector never meets a tail. A product of primes has no small factor.
    Dims g = base;
    int moved = 0;
    for (const auto& a : s_.axes)
      if (a.kind == Axis::variable && !a.power_of_two && a.multiple_of == 1) g[a.name] = prime_above_base(a), ++moved;
    if (moved > 1) shapes.push_back(g);
  }
  const std::size_t seeded_at = shapes.size();
  {
    Rng pick(mix_seed(seed, 0x5151));
    Dims g = base;
    for (const auto& a : s_.axes) {
      if (a.kind != Axis::variable || a.power_of_two) continue;
      std::int64_t v = a.base + std::int64_t(pick.below(std::uint64_t(3 * a.base + 8)));
      g[a.name] = (v + a.multiple_of - 1) / a.multiple_of * a.multiple_of;
    }
    shapes.push_back(g);
  }
  std::optional<Dims> large;
  if (include_large) {
    Dims g = base;
    bool any = false;
    for (const auto& a : s_.axes)
      if (a.kind == Axis::variable && a.large) g[a.name] = a.large, any = true;
    if (any) shapes.push_back(*(large = g));
  }
  Dims offset_base = base;
  if (s_.has_strided()) {
    // Row strides: every shape with one step of padding, a step being the smallest stride increment
    // the contract's stride_multiple_of and the candidate's alignment admit (one element for a
    // candidate claiming element alignment: rows then start off every vector alignment); the seeded
    // shape with a seeded padding; the base shape also with none (stride == cols), 3, 4 and 37 steps,
    // and a stride of twice its row (rows of something else in between, as in a KV cache).
    std::vector<Dims> padded;
    Rng pick(mix_seed(seed, 0x57d1));
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const bool is_large = large && shapes[i] == *large;
      padded.push_back(with_strides(shapes[i], cand, i == seeded_at ? std::int64_t(pick.below(9)) : 1));
      if (is_large) large = padded.back();
    }
    for (std::int64_t k : {0, 3, 4, 37, -1}) padded.push_back(with_strides(base, cand, k));
    offset_base = with_strides(base, cand, 1);
    shapes = std::move(padded);
  }
  std::vector<std::pair<std::int64_t, Dims>> kept, over_cap;
  std::set<Dims> seen;
  for (const auto& g : shapes) {
    if (!admissible(g) || !seen.insert(g).second) continue;
    const Dims all = s_.complete(g);
    const std::int64_t big = largest_tensor(all);
    if (big > cand.max_n) continue;  // outside the candidate's claim: refused, not a gap
    // Regular shapes stay within the CPU reference; the large one may go to the CUDA reference.
    // Past the cap: generated on the device where the contract allows it (large_generated), else
    // said in not_run — never left out without a word.
    const bool is_large = large && g == *large;
    if (big > (is_large ? case_cap() : s_.max_case_elements)) {
      over_cap.push_back({big, all});
      continue;
    }
    kept.push_back({big, all});
  }
  std::stable_sort(kept.begin(), kept.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::stable_sort(over_cap.begin(), over_cap.end(), [](const auto& x, const auto& y) { return x.first < y.first; });

  std::vector<CaseSpec> cases;
  for (const auto& [key, r] : s_.rows) {
    if (!cand.supports(key)) continue;
    bool offset_ok = true;
    for (const auto& t : s_.tensors) {
      const std::int64_t es = std::int64_t(dtype_size(tensor_dtype(t.name, key)));
      offset_ok &= es % cand.min_alignment_bytes == 0 && (t.alignment <= 0 || es % t.alignment == 0);
    }
    auto add = [&](const Dims& all, const std::string& fam, std::int64_t off) {
      CaseSpec c;
      c.dtype = key;
      c.dims = all;
      c.family = fam;
      c.offset_elements = off;
      c.seed = mix_seed(seed, std::hash<std::string>{}(format_dims(all) + "/" + fam) + std::uint64_t(key) * 7 + std::uint64_t(off));
      c.id = fmt::format("{}/{}/{}{}", to_string(key), format_dims(all), fam, off ? "/offset=1" : "");
      cases.push_back(c);
    };
    for (const auto& [big, all] : kept)
      for (const auto& f : s_.families)
        if (f.name == "base" || big <= f.max_elements) add(all, f.name, 0);
    if (offset_ok && !kept.empty()) add(s_.complete(offset_base), "base", 1);
  }
  large_generated(cand, seed, include_large, over_cap, cases, not_run);
  if (not_run) family_limits(kept, *not_run);
  return cases;
}

// Shapes past the reference's cap: with an [index_cases] axis and inputs the device generator makes,
// up to kMostGenerated of them (spread over their sizes) run as generated cases, checked in windows
// of the axis against the CPU reference (as past 2^31); the others are described into not_run.
void DeclaredContract::large_generated(const Supports& cand, std::uint64_t seed, bool include_large,
                                       const std::vector<std::pair<std::int64_t, Dims>>& over_cap, std::vector<CaseSpec>& cases,
                                       std::vector<NotRun>* not_run) const {
  constexpr std::size_t kMostGenerated = 4;
  constexpr std::int64_t kPastInt32 = std::int64_t(1) << 31;
  std::vector<std::pair<std::int64_t, Dims>> fit;  // below 2^31 elements: past it, index_cases
  for (const auto& x : over_cap)
    if (x.first <= kPastInt32) fit.push_back(x);
    else if (not_run) not_run->push_back({"past 2^31 elements, left to the index cases", fmt::format("{} ({} elements)", format_dims(x.second), x.first)});
  std::vector<bool> pick(fit.size(), fit.size() <= kMostGenerated);
  if (fit.size() > kMostGenerated)
    for (std::size_t k = 0; k < kMostGenerated; ++k) pick[k * (fit.size() - 1) / (kMostGenerated - 1)] = true;
  const std::string cap_text = fmt::format("over the CPU reference's cap of {} elements (contract.max_case_elements)", s_.max_case_elements);
  for (std::size_t i = 0; i < fit.size(); ++i) {
    const auto& [big, all] = fit[i];
    const std::string shape = fmt::format("{} ({} elements)", format_dims(all), big);
    if (s_.independent_axis.empty()) {
      if (not_run) not_run->push_back({cap_text + ", and the contract declares no [index_cases] axis to check them in windows", shape});
      continue;
    }
    if (!pick[i]) {
      if (not_run) not_run->push_back({fmt::format("{}; {} such shapes run on the device, spread over their sizes, these not", cap_text, kMostGenerated), shape});
      continue;
    }
    if (!include_large) {
      if (not_run) not_run->push_back({"generated on the device, not run without the large cases", shape});
      continue;
    }
    for (const auto& [key, r] : s_.rows) {
      if (!cand.supports(key)) continue;
      CaseSpec c;
      c.dtype = key;
      c.dims = all;
      c.family = kGeneratedFamily;
      c.seed = mix_seed(seed, std::hash<std::string>{}(format_dims(all) + "/large") + std::uint64_t(key) * 13);
      c.id = fmt::format("{}/{}/{}", to_string(key), format_dims(all), kGeneratedFamily);
      if (inputs_generatable(c)) cases.push_back(c);
      else if (not_run) not_run->push_back({fmt::format("in {}: {}, and its inputs are not ones the device generator makes", to_string(key), cap_text), shape});
    }
  }
}

// Value families limited to cases up to a size: said once per limit, when some checked shape is larger.
void DeclaredContract::family_limits(const std::vector<std::pair<std::int64_t, Dims>>& kept, std::vector<NotRun>& not_run) const {
  std::map<std::int64_t, std::vector<std::string>> by_limit;
  const std::int64_t biggest = kept.empty() ? 0 : kept.back().first;
  for (const auto& f : s_.families)
    if (f.name != "base" && f.max_elements < biggest) by_limit[f.max_elements].push_back(f.name);
  for (const auto& [limit, names] : by_limit) {
    int above = 0;
    for (const auto& k : kept) above += k.first > limit;
    not_run.push_back({fmt::format("value families {} on shapes whose largest tensor is over {} elements (those run the base values only)",
                                   fmt::join(names, ", "), limit),
                       fmt::format("{} checked shape(s)", above)});
  }
}

std::string DeclaredContract::coverage_gaps() const {
  Supports all;
  for (const auto& [key, r] : s_.rows) all.dtypes.push_back(key);
  all.max_n = std::numeric_limits<std::int64_t>::max();
  std::vector<NotRun> gaps;
  (void)plan_cases(all, 20261202, true, &gaps);
  // Grouped by why, in the order first met; each group names up to kShown shapes.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> by_why;
  // Only where the axes' ranges reach past 2^31 elements: a contract whose ranges stop below (one with
  // f16 or bool inputs, which the device generator does not make) has no such shape to leave out.
  if (s_.independent_axis.empty() && claimed_range(all).past_int32())
    order.push_back("every shape past 2^31 elements: no [index_cases] axis, so a claim reaching there is not checked there");
  for (const auto& g : gaps) {
    if (!by_why.count(g.why)) order.push_back(g.why);
    by_why[g.why].push_back(g.what);
  }
  if (order.empty()) return "";
  constexpr std::size_t kShown = 6;
  std::vector<std::string> parts;
  for (const auto& why : order) {
    const auto it = by_why.find(why);
    if (it == by_why.end()) {
      parts.push_back(why);
      continue;
    }
    const auto& v = it->second;
    std::vector<std::string> shown(v.begin(), v.begin() + std::ptrdiff_t(std::min(kShown, v.size())));
    parts.push_back(fmt::format("{}{} ({})", fmt::join(shown, ", "), v.size() > kShown ? fmt::format(" and {} more", v.size() - kShown) : "", why));
  }
  return fmt::format("Cases not run: {}.", fmt::join(parts, "; "));
}

// Past 2^31 elements (and 2^32 in the narrowest dtype row when the claim reaches there): the
// independent axis grown, every other axis at its base; inputs generated on the device.
std::vector<CaseSpec> DeclaredContract::index_cases(const Supports& cand, std::uint64_t seed) const {
  std::vector<CaseSpec> out;
  if (s_.independent_axis.empty() || !claimed_range(cand).past_int32()) return out;
  const std::string& ax = s_.independent_axis;
  Dims unit;
  for (const auto& a : s_.axes)
    if (a.kind == Axis::variable) unit[a.name] = a.base;
  unit[ax] = 1;
  const std::int64_t per = largest_tensor(s_.complete(unit));  // elements of the largest tensor per unit of the axis
  auto make = [&](DType t, std::int64_t target, const char* what) {
    Dims g = unit;
    g[ax] = (target + per - 1) / per;
    // Past the axis's range: the axis at its largest, the next variable axis grown instead.
    if (const Axis* a = s_.axis(ax); g[ax] > a->max) {
      g[ax] = a->max;
      for (const auto& b : s_.axes) {
        if (b.kind != Axis::variable || b.name == ax || largest_tensor(s_.complete(g)) > target) continue;
        Dims one = g;
        one[b.name] = 1;
        const std::int64_t per_b = std::max<std::int64_t>(1, largest_tensor(s_.complete(one)));
        std::int64_t v = (target + per_b - 1) / per_b;
        v = (v + b.multiple_of - 1) / b.multiple_of * b.multiple_of;
        g[b.name] = std::min(std::max(v, g[b.name]), b.max);
      }
    }
    if (!admissible(g) || largest_tensor(s_.complete(g)) <= (std::int64_t(1) << 31)) return;
    const Dims all = s_.complete(g);
    if (largest_tensor(all) > cand.max_n) return;
    CaseSpec c;
    c.dtype = t;
    c.dims = all;
    c.family = kGeneratedFamily;
    c.seed = mix_seed(seed, std::uint64_t(g[ax]) * 977 + std::uint64_t(t));
    c.id = fmt::format("{}/{}/{}", to_string(t), format_dims(all), what);
    out.push_back(c);
  };
  std::optional<DType> narrowest;
  std::size_t narrow_size = 0;
  for (const auto& [key, row] : s_.rows) {
    if (!cand.supports(key)) continue;
    make(key, (std::int64_t(1) << 31) + (1 << 20) + 3, "past-2^31");
    std::size_t es = 0;
    for (const auto& [n, d] : row) es = std::max(es, dtype_size(d));
    if (!narrowest || es < narrow_size) narrowest = key, narrow_size = es;
  }
  if (narrowest && cand.max_n > (std::int64_t(1) << 32)) make(*narrowest, (std::int64_t(1) << 32) + (1 << 20) + 5, "past-2^32");
  return out;
}

// Windows of whole units of the independent axis: the first and last, those holding element 2^31 and
// 2^32 of the largest tensor, and three seeded ones; each a sub-case of that many units whose
// inputs are the same units of every input along the axis, and the whole of every other input.
std::vector<OutputWindow> DeclaredContract::index_case_windows(const CaseSpec& spec) const {
  std::vector<OutputWindow> out;
  const std::string& ax = s_.independent_axis;
  if (ax.empty()) return out;
  const Dims all = s_.complete(spec.dims);
  const std::int64_t units = all.at(ax);
  auto per_unit = [&](const TensorDef& t) { return tensor_elements(t.name, all) / units; };
  const std::int64_t per = largest_tensor(all) / units;
  const std::int64_t len = std::max<std::int64_t>(1, (std::int64_t(1) << 16) / std::max<std::int64_t>(per, 1));
  for (const auto& [u0, k] : row_windows(units, per, len, spec.seed, 3)) {
    Dims sub_given;
    for (const auto& a : s_.axes)
      if (a.kind == Axis::variable) sub_given[a.name] = all.at(a.name);
    sub_given[ax] = k;
    const Dims sub = s_.complete(sub_given);
    for (const auto& o : s_.tensors) {
      if (o.role != Role::output) continue;
      OutputWindow w;
      w.tensor = o.name;
      w.begin = u0 * per_unit(o);
      w.count = k * per_unit(o);
      w.sub_dims = sub;
      for (const auto& in : s_.tensors) {
        if (in.role != Role::input) continue;
        const bool along = std::find(in.shape.begin(), in.shape.end(), ax) != in.shape.end();
        w.gather[in.name] = {along ? std::pair{u0 * per_unit(in), k * per_unit(in)} : std::pair{std::int64_t(0), tensor_elements(in.name, all)}};
      }
      w.why = fmt::format("{} {}..{}", ax, u0, u0 + k);
      out.push_back(std::move(w));
    }
  }
  return out;
}

}  // namespace kqual::contract::declared
