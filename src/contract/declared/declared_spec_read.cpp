// The pieces of a contract.toml every table is read with (declared_spec_read.hpp): typed keys that
// name the file, the key and the value on error; unknown keys refused by name; the values, error
// model and CUDA reference tables. parse_spec (declared_spec.cpp) reads the file's structure with them.
#include "declared_spec_read.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::declared::read {
namespace fs = std::filesystem;

const toml::table& table_at(const TomlContext& cx, const toml::node* n, const std::string& key) {
  if (!n || !n->is_table()) cx.fail(key, n ? fmt::format("expected a table, got {}", toml_value_text(*n)) : "missing (required)");
  return *n->as_table();
}

std::string str(const TomlContext& cx, const toml::table& t, const std::string& where, const char* key, bool required,
                std::string def) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) cx.fail(where + "." + key, "missing (required)");
    return def;
  }
  if (!n->is_string()) cx.fail(where + "." + key, fmt::format("expected a string, got {}", toml_value_text(*n)));
  return std::string(*n->value<std::string>());
}

double num(const TomlContext& cx, const toml::table& t, const std::string& where, const char* key, double def) {
  const toml::node* n = t.get(key);
  if (!n) return def;
  if (n->is_integer()) return double(*n->value<std::int64_t>());
  if (n->is_floating_point()) return *n->value<double>();
  cx.fail(where + "." + key, fmt::format("expected a number, got {}", toml_value_text(*n)));
}

std::int64_t integer(const TomlContext& cx, const toml::table& t, const std::string& where, const char* key, std::int64_t def) {
  const toml::node* n = t.get(key);
  if (!n) return def;
  if (!n->is_integer()) cx.fail(where + "." + key, fmt::format("expected an integer, got {}", toml_value_text(*n)));
  return *n->value<std::int64_t>();
}

bool boolean(const TomlContext& cx, const toml::table& t, const std::string& where, const char* key, bool def) {
  const toml::node* n = t.get(key);
  if (!n) return def;
  if (!n->is_boolean()) cx.fail(where + "." + key, fmt::format("expected true or false, got {}", toml_value_text(*n)));
  return *n->value<bool>();
}

DType dtype_of(const TomlContext& cx, const std::string& key, const std::string& text, bool allow_int) {
  auto t = parse_dtype(text);
  if (!t) {
    std::vector<std::string_view> words;
    for (DType d : kAllDTypes) words.push_back(to_string(d));
    cx.fail(key, fmt::format("unknown dtype \"{}\" (known: {})", text, fmt::join(words, ", ")));
  }
  if (!allow_int && is_integral(*t))
    cx.fail(key, fmt::format("\"{}\": a floating dtype is needed here", text));
  return *t;
}

Expr expr_of(const TomlContext& cx, const std::string& key, const toml::node& n, const std::set<std::string>& names) {
  Expr e;
  if (n.is_integer()) return Expr::constant(*n.value<std::int64_t>());
  if (!n.is_string()) cx.fail(key, fmt::format("expected an integer or an expression string, got {}", toml_value_text(n)));
  try {
    e = Expr::parse(*n.value<std::string>());
  } catch (const Error& err) {
    cx.fail(key, err.what());
  }
  for (const auto& v : e.variables())
    if (!names.count(v))
      cx.fail(key, fmt::format("expression '{}' uses unknown name '{}' (known: {})", e.text(), v, fmt::join(names, ", ")));
  return e;
}

// A table's entries in the order the file declares them (toml++ keeps keys sorted): tensor order
// names the dtype rows, and a derived axis may use the axes declared before it.
std::vector<std::pair<std::string, const toml::node*>> in_file_order(const toml::table& t) {
  std::vector<std::pair<std::string, const toml::node*>> v;
  for (const auto& [k, n] : t) v.push_back({std::string(k.str()), &n});
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    const auto& x = a.second->source().begin;
    const auto& y = b.second->source().begin;
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  return v;
}

bool is_int(DType t) { return is_integral(t); }

const char* const kDists[] = {"normal", "uniform", "constant", "int", "indices", "offsets", "softmax_rows", "mask", "bits"};
// What kqual checks a generator's values against (declared_generated.cpp); "any": dtype and shape only.
const char* const kGeneratedDists[] = {"any", "int", "uniform", "indices", "offsets", "softmax_rows", "mask"};

namespace {

// A generated input's values table: which structure kqual checks the generator's values for; keys
// that would alter values (a scale, special values) have no place there.
void read_generated_values(const TomlContext& cx, const toml::table& t, const std::string& where, Values& v) {
  check_keys(cx, t, where, {"source", "dist", "lo", "hi", "axis", "unique", "tol"});
  v.dist = str(cx, t, where, "dist", false, "any");
  if (std::find(std::begin(kGeneratedDists), std::end(kGeneratedDists), v.dist) == std::end(kGeneratedDists))
    cx.fail(where + ".dist", fmt::format("\"{}\": with source = \"generator\" the dist is the structure kqual checks the generated values "
                                         "for, one of {}", v.dist, fmt::join(kGeneratedDists, ", ")));
  // Bounds not given: the dtype's range (checked for every integer tensor anyway).
  v.lo = num(cx, t, where, "lo", -std::numeric_limits<double>::infinity());
  v.hi = num(cx, t, where, "hi", std::numeric_limits<double>::infinity());
  v.tol = num(cx, t, where, "tol", -1);
  if (t.get("tol") && !(v.tol >= 0 && v.tol < 1)) cx.fail(where + ".tol", fmt::format("{} is not in [0, 1)", v.tol));
  if (t.get("tol") && v.dist != "softmax_rows") cx.fail(where + ".tol", "only softmax_rows has a row-sum tolerance");
}

}  // namespace

// Applies the keys of `t` over `v` (a tensor's values, or a family's overrides of them).
void read_values(const TomlContext& cx, const toml::table& t, const std::string& where, Values& v, const Spec& s) {
  const std::string source = str(cx, t, where, "source", false, "kqual");
  if (source != "kqual" && source != "generator")
    cx.fail(where + ".source", fmt::format("\"{}\": expected \"kqual\" (drawn as declared here, the default) or \"generator\" (made by "
                                           "the [generator] function)", source));
  v.generated = source == "generator";
  if (v.generated) {
    read_generated_values(cx, t, where, v);
  } else {
    check_keys(cx, t, where, {"source", "dist", "mean", "std", "lo", "hi", "value", "p", "scale", "axis", "unique", "specials",
                              "denormals", "extremes"});
    v.dist = str(cx, t, where, "dist", false, v.dist);
    if (std::find(std::begin(kDists), std::end(kDists), v.dist) == std::end(kDists))
      cx.fail(where + ".dist", fmt::format("unknown distribution \"{}\" (known: {}; \"any\" only with source = \"generator\")", v.dist,
                                           fmt::join(kDists, ", ")));
    v.mean = num(cx, t, where, "mean", v.mean);
    v.std = num(cx, t, where, "std", v.std);
    v.lo = num(cx, t, where, "lo", v.lo);
    v.hi = num(cx, t, where, "hi", v.hi);
    v.value = num(cx, t, where, "value", v.value);
    v.p = num(cx, t, where, "p", v.p);
    v.scale = num(cx, t, where, "scale", v.scale);
    v.specials = num(cx, t, where, "specials", v.specials);
    v.denormals = num(cx, t, where, "denormals", v.denormals);
    v.extremes = num(cx, t, where, "extremes", v.extremes);
  }
  v.axis = str(cx, t, where, "axis", false, v.axis);
  v.unique = boolean(cx, t, where, "unique", v.unique);
  for (auto [key, share] : {std::pair{"specials", v.specials}, {"denormals", v.denormals}, {"extremes", v.extremes}, {"p", v.p}})
    if (!(share >= 0 && share <= 1)) cx.fail(where + "." + key, fmt::format("{} is not a share in [0, 1]", share));
  if (v.std < 0) cx.fail(where + ".std", fmt::format("{} is negative", v.std));
  if ((v.dist == "uniform" || v.dist == "int") && !(v.lo <= v.hi))
    cx.fail(where + ".lo", fmt::format("lo = {} is above hi = {}", v.lo, v.hi));
  if (v.dist == "indices" || v.dist == "offsets") {
    if (v.axis.empty()) cx.fail(where + ".axis", fmt::format("missing: dist \"{}\" needs the axis it ranges over", v.dist));
    if (!s.axis(v.axis)) cx.fail(where + ".axis", fmt::format("unknown axis \"{}\"", v.axis));
  }
}

// The quantized model's keys: how the real value becomes the output's (docs/declared-contracts.md).
void read_quantized(const TomlContext& cx, const toml::table& t, const std::string& where, ErrorModel& e) {
  static constexpr EnumNames<ErrorModel::Rounding, 5> kRoundings{{{{ErrorModel::half_even, "half_even"},
                                                                   {ErrorModel::half_away, "half_away"},
                                                                   {ErrorModel::floor, "floor"},
                                                                   {ErrorModel::ceil, "ceil"},
                                                                   {ErrorModel::toward_zero, "toward_zero"}}}};
  const std::string r = str(cx, t, where, "rounding", false, "half_even");
  const auto rounding = kRoundings.parse(r);
  if (!rounding) cx.fail(where + ".rounding", fmt::format("unknown rounding \"{}\" (known: {})", r, kRoundings.choices()));
  e.rounding = *rounding;
  e.saturate = boolean(cx, t, where, "saturate", false);
  e.band = num(cx, t, where, "band", 8);
  if (!(e.band >= 0) || e.band > 1e6) cx.fail(where + ".band", fmt::format("{} is not in [0, 1e6] (units of 2^-24 |value|)", e.band));
  if (const toml::node* n = t.get("clamp")) {
    const toml::array* a = n->as_array();
    if (!a || a->size() != 2 || !(*a)[0].is_number() || !(*a)[1].is_number())
      cx.fail(where + ".clamp", fmt::format("expected [lo, hi], two numbers, got {}", toml_value_text(*n)));
    const double lo = (*a)[0].value<double>().value_or(0), hi = (*a)[1].value<double>().value_or(0);
    if (!(lo <= hi)) cx.fail(where + ".clamp", fmt::format("[{:g}, {:g}] is empty", lo, hi));
    e.clamp = std::pair{lo, hi};
  }
}

ErrorModel read_error(const TomlContext& cx, const toml::table& t, const std::string& where, const Spec& s) {
  check_keys(cx, t, where, {"model", "ulps", "atol", "rtol", "match_ratio", "cap", "c", "axis", "magnitude", "eps", "nan", "combine",
                            "rounding", "saturate", "clamp", "band"});
  ErrorModel e;
  const std::string m = str(cx, t, where, "model", false, "exact");
  if (m == "exact") e.kind = ErrorModel::exact;
  else if (m == "ulps") e.kind = ErrorModel::ulp;
  else if (m == "allclose") e.kind = ErrorModel::allclose;
  else if (m == "reduction") e.kind = ErrorModel::reduction;
  else if (m == "quantized") e.kind = ErrorModel::quantized;
  else cx.fail(where + ".model", fmt::format("unknown error model \"{}\" (known: exact, ulps, allclose, reduction, quantized)", m));
  auto only = [&](std::initializer_list<const char*> keys, const char* model) {
    for (const char* k : keys)
      if (t.get(k)) cx.fail(where + "." + k, fmt::format("not a parameter of model \"{}\"", model));
  };
  e.ulps = num(cx, t, where, "ulps", 0);
  e.atol = num(cx, t, where, "atol", 0);
  e.rtol = num(cx, t, where, "rtol", 0);
  e.match_ratio = num(cx, t, where, "match_ratio", 1);
  e.cap = num(cx, t, where, "cap", 0);
  e.c = num(cx, t, where, "c", 0);
  e.axis = str(cx, t, where, "axis", false);
  e.magnitude = str(cx, t, where, "magnitude", false, e.kind == ErrorModel::allclose ? "reference" : "abs_inputs");
  const std::string combine = str(cx, t, where, "combine", false, "sum");
  if (combine != "sum" && combine != "max") cx.fail(where + ".combine", fmt::format("\"{}\": expected \"sum\" or \"max\"", combine));
  e.either = combine == "max";
  if (t.get("eps")) e.eps_dtype = dtype_of(cx, where + ".eps", str(cx, t, where, "eps", true), false);
  switch (e.kind) {
    case ErrorModel::exact:
      only({"ulps", "atol", "rtol", "match_ratio", "cap", "c", "axis", "magnitude", "eps", "combine", "rounding", "saturate", "clamp", "band"}, "exact");
      break;
    case ErrorModel::quantized:
      only({"ulps", "atol", "rtol", "match_ratio", "cap", "c", "axis", "magnitude", "eps", "combine"}, "quantized");
      read_quantized(cx, t, where, e);
      break;
    case ErrorModel::ulp:
      only({"atol", "rtol", "match_ratio", "cap", "c", "axis", "magnitude", "eps", "combine", "rounding", "saturate", "clamp", "band"}, "ulps");
      if (!(e.ulps > 0)) cx.fail(where + ".ulps", "missing or not positive: the admitted distance in units in the last place");
      break;
    case ErrorModel::allclose:
      only({"ulps", "c", "axis", "eps", "rounding", "saturate", "clamp", "band"}, "allclose");
      if (e.magnitude != "abs_inputs" && e.magnitude != "reference")
        cx.fail(where + ".magnitude", fmt::format("\"{}\": expected \"reference\" (|ref|) or \"abs_inputs\" (the larger of |ref| and the "
                                                  "reference on the inputs' absolute values)",
                                                  e.magnitude));
      if (e.atol < 0 || e.rtol < 0) cx.fail(where, "atol and rtol must be >= 0");
      if (!(e.match_ratio > 0 && e.match_ratio <= 1))
        cx.fail(where + ".match_ratio", fmt::format("{} is not in (0, 1]", e.match_ratio));
      if (e.match_ratio < 1 && !(e.cap > 0))
        cx.fail(where + ".cap", "missing: match_ratio below 1 needs a hard cap on the worst error (a share of elements "
                                "must never be allowed to be arbitrarily wrong)");
      if (e.match_ratio == 1 && t.get("cap")) cx.fail(where + ".cap", "only meaningful with match_ratio below 1");
      break;
    case ErrorModel::reduction:
      only({"ulps", "match_ratio", "cap", "rtol", "combine", "rounding", "saturate", "clamp", "band"}, "reduction");
      if (!(e.c > 0)) cx.fail(where + ".c", "missing or not positive: the constant of c * eps * K * magnitude");
      if (e.axis.empty()) cx.fail(where + ".axis", "missing: the reduction axis K");
      if (!s.axis(e.axis)) cx.fail(where + ".axis", fmt::format("unknown axis \"{}\"", e.axis));
      if (e.magnitude != "abs_inputs" && e.magnitude != "reference")
        cx.fail(where + ".magnitude", fmt::format("\"{}\": expected \"abs_inputs\" or \"reference\"", e.magnitude));
      break;
  }
  const std::string nan = str(cx, t, where, "nan", false, "propagate");
  if (nan == "propagate") e.nan = ErrorModel::propagate;
  else if (nan == "finite") e.nan = ErrorModel::finite;
  else if (nan == "same_class") e.nan = ErrorModel::same_class;
  else cx.fail(where + ".nan", fmt::format("unknown NaN/Inf policy \"{}\" (known: propagate, finite, same_class)", nan));
  return e;
}

Dims parse_dims_text(const TomlContext& cx, const std::string& key, const std::string& text, const Spec& s) {
  Dims d;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto eq = part.find('=');
    if (eq == std::string::npos) cx.fail(key, fmt::format("\"{}\": expected axis=value pairs, comma separated", text));
    std::string name = part.substr(0, eq);
    name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
    const Axis* a = s.axis(name);
    if (!a || (a->kind != Axis::variable && a->kind != Axis::stride))
      cx.fail(key, fmt::format("\"{}\": '{}' is not a variable axis or a row stride", text, name));
    try {
      d[name] = std::stoll(part.substr(eq + 1));
    } catch (const std::exception&) {
      cx.fail(key, fmt::format("\"{}\": '{}' is not an integer", text, part.substr(eq + 1)));
    }
  }
  for (const auto& a : s.axes)
    if (a.kind == Axis::variable && !d.count(a.name)) cx.fail(key, fmt::format("\"{}\": axis '{}' is missing", text, a.name));
  return d;
}

CudaReference read_cuda(const TomlContext& cx, const toml::table& t, const Spec& s, const std::set<std::string>& axes) {
  check_keys(cx, t, "reference.cuda", {"source", "launch", "max_case_elements"});
  CudaReference c;
  const std::string src = str(cx, t, "reference.cuda", "source", true);
  c.file = fs::path(src).is_absolute() ? fs::path(src) : s.dir / src;
  if (!fs::is_regular_file(c.file)) cx.fail("reference.cuda.source", fmt::format("\"{}\": no such file ({})", src, c.file.string()));
  std::ifstream in(c.file);
  std::stringstream ss;
  ss << in.rdbuf();
  c.source = ss.str();
  c.max_case_elements = integer(cx, t, "reference.cuda", "max_case_elements", c.max_case_elements);
  if (c.max_case_elements < s.max_case_elements)
    cx.fail("reference.cuda.max_case_elements", fmt::format("{} is below contract.max_case_elements = {}", c.max_case_elements, s.max_case_elements));
  const std::set<std::string>& names = axes;  // grids over the axes only: the reference does not size itself to a device
  const auto* arr = t.get("launch") ? t.get("launch")->as_array() : nullptr;
  if (!arr || arr->empty()) cx.fail("reference.cuda.launch", "missing: [[reference.cuda.launch]] tables (kernel, grid, block, args)");
  const std::vector<std::string> raw = s.raw_outputs();
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const std::string where = fmt::format("reference.cuda.launch[{}]", i);
    const toml::table& lt = table_at(cx, arr->get(i), where);
    check_keys(cx, lt, where, {"kernel", "grid", "block", "args"});
    CudaReference::Launch l;
    l.kernel = str(cx, lt, where, "kernel", true);
    auto dim3 = [&](const char* key, std::array<Expr, 3>& out) {
      const toml::node* n = lt.get(key);
      if (!n) cx.fail(where + "." + key, "missing (required)");
      if (const auto* a = n->as_array()) {
        if (a->empty() || a->size() > 3) cx.fail(where + "." + key, "expected 1 to 3 entries");
        for (std::size_t k = 0; k < a->size(); ++k) out[k] = expr_of(cx, fmt::format("{}.{}[{}]", where, key, k), *a->get(k), names);
      } else {
        out[0] = expr_of(cx, where + "." + key, *n, names);
      }
    };
    dim3("grid", l.grid);
    dim3("block", l.block);
    const auto* args = lt.get("args") ? lt.get("args")->as_array() : nullptr;
    if (!args) cx.fail(where + ".args", "missing: the kernel's parameters (tensors, raw outputs, axis:i64, scalars)");
    for (std::size_t k = 0; k < args->size(); ++k) {
      const std::string key = fmt::format("{}.args[{}]", where, k);
      if (!args->get(k)->is_string()) cx.fail(key, fmt::format("expected a string, got {}", toml_value_text(*args->get(k))));
      const std::string a(*args->get(k)->value<std::string>());
      const std::string name = a.substr(0, a.find(':'));
      const bool input = s.tensor(name) && s.tensor(name)->role == Role::input;
      const bool out = std::find(raw.begin(), raw.end(), name) != raw.end();
      const bool scalar = std::any_of(s.scalars.begin(), s.scalars.end(), [&](const Scalar& x) { return x.name == name; });
      const bool axis = axes.count(name) > 0;
      if (axis && a != name + ":i64" && a != name + ":i32") cx.fail(key, fmt::format("\"{}\": an axis takes its type, {}:i64 or {}:i32", a, name, name));
      if (!input && !out && !scalar && !axis)
        cx.fail(key, fmt::format("\"{}\" is neither an input, a raw output ({}), a scalar nor an axis", a, fmt::join(raw, ", ")));
      l.args.push_back(a);
    }
    c.launches.push_back(l);
  }
  return c;
}


}  // namespace kqual::contract::declared::read
