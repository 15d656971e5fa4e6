// Inputs from a declared contract's [generator] (declared_generated.hpp): the table read and checked
// with the rest of the file, the generator's values checked against each input's declaration, the
// generator held to its seed. kqual draws every other input (value families included); these keep
// the generator's values in every family, so a kernel meets the structure its caller guarantees
// (CSR offsets, indices into an axis, masks, probability rows) and nothing outside it.
#include "declared_generated.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "declared_spec_read.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::declared {
namespace fs = std::filesystem;

namespace read {

namespace {

// Unique indices need a row that fits in their axis: a constraint of the contract, so a request
// asking for more is refused before launch instead of failing while its inputs are drawn.
void add_unique_constraints(Spec& s) {
  for (const auto& td : s.tensors) {
    if (td.role != Role::input || td.values.dist != "indices" || !td.values.unique || td.shape.back() == td.values.axis) continue;
    Constraint k;
    k.expr = Expr::parse(td.shape.back() + " <= " + td.values.axis);
    k.reason = fmt::format("tensors.{}: {} unique indices per row into {} need {} <= {}", td.name, td.shape.back(), td.values.axis,
                           td.shape.back(), td.values.axis);
    s.constraints.push_back(k);
  }
}

// The structure a generated input declares must make sense at its dtype in every dtype row.
void check_generated_dtype(const TomlContext& cx, const Spec& s, const TensorDef& td) {
  const std::string where = "tensors." + td.name + ".values";
  std::vector<DType> dts;
  if (td.dtype) dts.push_back(*td.dtype);
  else
    for (const auto& [key, row] : s.rows) dts.push_back(row.at(td.name));
  for (DType d : dts) {
    const bool integer = is_integral(d) && d != DType::boolean;
    const std::string& dist = td.values.dist;
    if ((dist == "indices" || dist == "offsets") && !integer)
      cx.fail(where + ".dist", fmt::format("\"{}\" holds integers; '{}' is {} (declare it i32 or i64)", dist, td.name, to_string(d)));
    if (dist == "softmax_rows" && !is_floating(d))
      cx.fail(where + ".dist", fmt::format("\"softmax_rows\" holds probabilities; '{}' is {} (declare a floating dtype)", td.name, to_string(d)));
    if (d == DType::boolean && dist != "any" && dist != "mask")
      cx.fail(where + ".dist", fmt::format("\"{}\" for a bool tensor: a bool input is a mask (\"mask\" or \"any\")", dist));
  }
}

}  // namespace

void read_generator(const TomlContext& cx, const toml::table& root, Spec& s) {
  std::vector<const TensorDef*> generated;
  for (const auto& td : s.tensors)
    if (td.role == Role::input && td.values.generated) generated.push_back(&td);
  const toml::node* gn = root.get("generator");
  if (!gn) {
    if (!generated.empty())
      cx.fail("tensors." + generated.front()->name + ".values.source",
              "\"generator\": the contract has no [generator] table naming the function that makes this input");
    add_unique_constraints(s);
    return;
  }
  const toml::table& g = table_at(cx, gn, "generator");
  check_keys(cx, g, "generator", {"python", "function", "kind"});
  Generator gen;
  const std::string py = str(cx, g, "generator", "python", true);
  gen.file = fs::path(py).is_absolute() ? fs::path(py) : s.dir / py;
  if (!fs::is_regular_file(gen.file)) cx.fail("generator.python", fmt::format("\"{}\": no such file ({})", py, gen.file.string()));
  gen.function = str(cx, g, "generator", "function", true);
  gen.kind = str(cx, g, "generator", "kind", false, "numpy");
  if (gen.kind != "numpy" && gen.kind != "torch") cx.fail("generator.kind", fmt::format("\"{}\": expected \"numpy\" or \"torch\"", gen.kind));
  if (generated.empty())
    cx.fail("generator", "no input takes its values from it: give those inputs values = { source = \"generator\", dist = ... }");
  for (const TensorDef* td : generated) {
    if (td->layout == "strided")
      cx.fail("tensors." + td->name + ".values.source", "a strided input is drawn by kqual (its padding poisoned): not from a generator");
    check_generated_dtype(cx, s, *td);
  }
  s.generator = gen;
  add_unique_constraints(s);
}

}  // namespace read

namespace {

// The value a float becomes when stored at d (one rounding; fp8 saturates as store_element does).
double stored(DType d, double x) {
  std::uint8_t b[8];
  store_element(d, b, 0, x);
  return element_as_double(d, b, 0);
}

// Checks of one dist over the values (as the kernel gets them): the first element that breaks it.
struct ValueCheck {
  const TensorDef& td;
  const std::vector<double>& x;
  std::size_t row;     // elements of the innermost axis
  std::int64_t range;  // the value of `axis` (indices, offsets)
  double tol;          // softmax_rows

  std::string operator()() const {
    const Values& v = td.values;
    const std::size_t n = x.size();
    for (std::size_t i = 0; i < n; ++i) {
      const double e = x[i];
      const bool integral = std::isfinite(e) && e == std::nearbyint(e);
      if (v.dist == "int" && (!integral || e < v.lo || e > v.hi))
        return fmt::format("element {} is {}, not an integer in [{}, {}]", i, e, v.lo, v.hi);
      if (v.dist == "uniform" && !(e >= v.lo && e <= v.hi)) return fmt::format("element {} is {}, outside [{}, {}]", i, e, v.lo, v.hi);
      if (v.dist == "indices" && (!integral || e < 0 || e >= double(range)))
        return fmt::format("element {} is {}, not an index into {} = {} (0 to {})", i, e, v.axis, range, range - 1);
      if (v.dist == "mask" && e != 0 && e != 1) return fmt::format("element {} is {}, not 0 or 1", i, e);
      if (v.dist == "softmax_rows" && !(e >= 0 && std::isfinite(e))) return fmt::format("element {} is {}, not a probability", i, e);
    }
    if (v.dist == "offsets") return offsets();
    if (v.dist == "indices" && v.unique) return repeats();
    if (v.dist == "softmax_rows") return row_sums();
    return "";
  }
  std::string offsets() const {
    if (x.front() != 0) return fmt::format("element 0 is {}: offsets start at 0", x.front());
    for (std::size_t i = 1; i < x.size(); ++i)
      if (x[i] < x[i - 1]) return fmt::format("element {} is {} after {}: offsets never decrease", i, x[i], x[i - 1]);
    if (x.back() != double(range))
      return fmt::format("the last element is {}: offsets end at {} = {} (the total the segments cover)", x.back(), td.values.axis, range);
    return "";
  }
  std::string repeats() const {
    for (std::size_t b = 0; b < x.size(); b += row) {
      std::vector<double> r(x.begin() + std::ptrdiff_t(b), x.begin() + std::ptrdiff_t(std::min(x.size(), b + row)));
      std::sort(r.begin(), r.end());
      if (auto it = std::adjacent_find(r.begin(), r.end()); it != r.end())
        return fmt::format("row {} holds index {} twice: unique = true", b / row, *it);
    }
    return "";
  }
  std::string row_sums() const {
    for (std::size_t b = 0; b < x.size(); b += row) {
      double sum = 0;
      for (std::size_t i = b; i < std::min(x.size(), b + row); ++i) sum += x[i];
      if (!(std::fabs(sum - 1) <= tol))
        return fmt::format("row {} sums to {:.17g}, not 1 within {:g} (softmax_rows: each row a probability distribution)", b / row, sum, tol);
    }
    return "";
  }
};

std::string values_text(const Values& v, const Dims& dims) {
  std::string t = fmt::format("dist = \"{}\"", v.dist);
  if (!v.axis.empty()) t += fmt::format(", axis = \"{}\" ({} = {})", v.axis, v.axis, dims.at(v.axis));
  if (std::isfinite(v.lo)) t += fmt::format(", lo = {}", v.lo);
  if (std::isfinite(v.hi)) t += fmt::format(", hi = {}", v.hi);
  if (v.unique) t += ", unique = true";
  return "{ source = \"generator\", " + t + " }";
}

bool same_values(const RefOutput& a, const RefOutput& b, std::size_t& at) {
  const std::size_t n = std::max(a.i.size(), a.f.size());
  for (at = 0; at < n; ++at) {
    if (!a.i.empty() && a.i[at] != b.i[at]) return false;
    if (!a.f.empty() && !(a.f[at] == b.f[at] || (std::isnan(a.f[at]) && std::isnan(b.f[at])))) return false;
  }
  return a.i.size() == b.i.size() && a.f.size() == b.f.size();
}

}  // namespace

std::uint32_t generator_seed(std::uint64_t case_seed) { return std::uint32_t(mix_seed(case_seed, 0x67656e) >> 32); }

std::string generated_values_violation(const TensorDef& td, DType d, const RefOutput& values, const Dims& dims) {
  const bool integer = is_integral(d);
  std::vector<double> x;
  if (integer) {
    const auto [lo, hi] = integer_range(d);
    x.reserve(values.i.size());
    for (std::size_t i = 0; i < values.i.size(); ++i) {
      const std::int64_t e = values.i[i];
      if (d != DType::i64 && (double(e) < lo || double(e) > hi))
        return fmt::format("element {} is {}, outside {}'s range [{}, {}]", i, e, to_string(d), lo, hi);
      x.push_back(double(e));
    }
  } else {
    const double big = largest_finite(d);
    x.reserve(values.f.size());
    for (std::size_t i = 0; i < values.f.size(); ++i) {
      const double e = values.f[i];
      if (std::isfinite(e) && std::fabs(e) > big)
        return fmt::format("element {} is {:g}, past the largest finite {} ({:g})", i, e, to_string(d), big);
      x.push_back(stored(d, e));
    }
  }
  if (x.empty()) return "";
  const std::size_t row = std::size_t(std::max<std::int64_t>(1, dims.at(td.shape.back())));
  const std::int64_t range = td.values.axis.empty() ? 0 : dims.at(td.values.axis);
  // Probability rows stored at d: each element rounded once (a relative error of one unit roundoff u,
  // so a row moves by at most u), plus 1e-5 for a generator normalising in float32.
  const double tol = td.values.tol >= 0 ? td.values.tol : 4 * unit_roundoff(d) + 1e-5;
  const std::string why = ValueCheck{td, x, row, range, tol}();
  return why.empty() ? "" : why + " (declared " + values_text(td.values, dims) + ")";
}

void fill_generated(const Spec& s, PythonReference& py, const CaseSpec& spec, const Dims& dims, const std::map<std::string, DType>& dtypes,
                    std::uint32_t seed, std::vector<Tensor>& inputs) {
  const std::map<std::string, RefOutput> got = py.generate(s, dims, spec.family, seed, spec.id, dtypes);
  for (auto& t : inputs) {
    const TensorDef* td = s.tensor(t.name);
    if (!td->values.generated) continue;
    const RefOutput& v = got.at(t.name);
    if (const std::string why = generated_values_violation(*td, t.dtype, v, dims); !why.empty())
      throw_error(ErrorKind::input, fmt::format("contract {}: generator {}:{} on case {} (seed {}): input '{}' breaks its declared values: {}",
                                                s.file.string(), s.generator->file.filename().string(), s.generator->function, spec.id,
                                                seed, t.name, why));
    const std::size_t n = std::size_t(t.elements);
    t.bytes.assign(n * dtype_size(t.dtype), 0);
    if (t.dtype == DType::i64) std::memcpy(t.bytes.data(), v.i.data(), n * 8);
    else if (is_integral(t.dtype)) for (std::size_t i = 0; i < n; ++i) store_element(t.dtype, t.bytes.data(), i, double(v.i[i]));
    else for (std::size_t i = 0; i < n; ++i) store_element(t.dtype, t.bytes.data(), i, v.f[i]);
  }
}

void check_generator_deterministic(const Spec& s, PythonReference& py, const CaseSpec& spec, const Dims& dims,
                                   const std::map<std::string, DType>& dtypes) {
  const std::uint32_t seed = generator_seed(spec.seed);
  const auto a = py.generate(s, dims, spec.family, seed, spec.id, dtypes);
  const auto b = py.generate(s, dims, spec.family, seed, spec.id, dtypes);
  for (const auto& [name, x] : a) {
    std::size_t at = 0;
    if (same_values(x, b.at(name), at)) continue;
    auto show = [&](const RefOutput& o) { return o.i.empty() ? fmt::format("{:g}", o.f.at(at)) : std::to_string(o.i.at(at)); };
    throw_error(ErrorKind::input,
                fmt::format("contract {}: generator {}:{} is not deterministic under its seed: two calls with seed {} on case {} gave input "
                            "'{}' different values (element {}: {}, then {}); draw from the seed it is given (its `seed` parameter) or "
                            "from NumPy's, PyTorch's or Python's global generator, which kqual seeds with it",
                            s.file.string(), s.generator->file.filename().string(), s.generator->function, seed, spec.id, name, at,
                            show(x), show(b.at(name))));
  }
}

}  // namespace kqual::contract::declared
