// contract.toml → declared::Spec, validated whole: every error names the file, the key and the value
// (docs/declared-contracts.md is the format's reference; tests/contract/declared_test.cpp the cases).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <set>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "declared_spec.hpp"
#include "declared_spec_read.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::declared {
namespace fs = std::filesystem;
using namespace read;

bool reference_gives_integers(const TensorDef& t, DType d) { return is_integral(d) && t.error.kind != ErrorModel::quantized; }

const TensorDef* Spec::tensor(const std::string& n) const {
  for (const auto& t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}
std::vector<std::string> Spec::raw_outputs() const {
  std::vector<std::string> v;
  for (const auto& t : tensors)
    if (t.role == Role::output) {
      v.push_back(t.name);
      if (t.error.uses_abs_inputs()) v.push_back(t.name + "_magnitude");
    }
  return v;
}

const Axis* Spec::axis(const std::string& n) const {
  for (const auto& a : axes)
    if (a.name == n) return &a;
  return nullptr;
}

Dims Spec::complete(const Dims& variable) const {
  Dims d = variable;
  // Constants first, then derived axes in declaration order (each may use the ones before it).
  for (const auto& a : axes)
    if (a.kind == Axis::constant) d[a.name] = a.expr.eval(d);
  for (const auto& a : axes)
    if (a.kind == Axis::derived) d[a.name] = a.expr.eval(d);
  for (const auto& a : axes)
    if (a.kind == Axis::stride && !d.count(a.name) && d.count(a.of)) d[a.name] = (d.at(a.of) + a.multiple_of - 1) / a.multiple_of * a.multiple_of;
  return d;
}

std::int64_t Spec::dense_elements(const TensorDef& t, const Dims& all) const {
  std::int64_t n = 1;
  for (const auto& a : t.shape) n *= all.at(a);
  return n;
}

bool Spec::has_strided() const {
  return std::any_of(tensors.begin(), tensors.end(), [](const TensorDef& t) { return t.layout == "strided"; });
}

std::string Spec::layout_violated(const Dims& all) const {
  for (const auto& a : axes) {
    if (a.kind != Axis::stride) continue;
    const std::int64_t v = all.at(a.name), len = all.at(a.of);
    if (v < len) return fmt::format("row stride {} = {} is below the row length {} = {}", a.name, v, a.of, len);
    if (v % a.multiple_of) return fmt::format("row stride {} = {} is not a multiple of {}", a.name, v, a.multiple_of);
  }
  return "";
}

std::string first_violated(const std::vector<Constraint>& cs, const Dims& all, std::string_view eval_lead) {
  for (const auto& c : cs) {
    std::int64_t ok = 0;
    try {
      ok = c.expr.eval(all);
    } catch (const Error& e) {
      return fmt::format("{} ({}{})", c.reason, eval_lead, e.what());
    }
    if (!ok) return fmt::format("{} ('{}' is false for {})", c.reason, c.expr.text(), format_dims(all));
  }
  return "";
}

std::string Spec::violated(const Dims& all) const { return first_violated(constraints, all, "cannot be evaluated: "); }
namespace {

void spec_contract_table(const TomlContext& cx, const toml::table& root, Spec& s) {
  const toml::table& c = table_at(cx, root.get("contract"), "contract");
  check_keys(cx, c, "contract", {"name", "summary", "policy", "deterministic", "deterministic_reason", "max_case_elements",
                                      "ignored_inputs"});
  s.name = str(cx, c, "contract", "name", true);
  if (s.name.empty() || !std::all_of(s.name.begin(), s.name.end(), [](char ch) { return std::isalnum((unsigned char)ch) || ch == '_'; }))
    cx.fail("contract.name", fmt::format("\"{}\": letters, digits and _ only", s.name));
  s.summary = str(cx, c, "contract", "summary", true);
  s.policy = str(cx, c, "contract", "policy", false);
  s.deterministic = boolean(cx, c, "contract", "deterministic", true);
  s.deterministic_reason = str(cx, c, "contract", "deterministic_reason", false);
  s.ignored_inputs = str(cx, c, "contract", "ignored_inputs", false);
  if (c.get("ignored_inputs") && s.ignored_inputs.empty())
    cx.fail("contract.ignored_inputs", "empty: say why the reference may leave an input without effect");
  s.max_case_elements = integer(cx, c, "contract", "max_case_elements", s.max_case_elements);
  if (s.max_case_elements < 1 || s.max_case_elements > (std::int64_t(1) << 28))
    cx.fail("contract.max_case_elements", fmt::format("{} is outside [1, 2^28]", s.max_case_elements));
}

// A variable axis: range, hints, multiple_of, power_of_two, base and large.
void spec_variable_axis(const TomlContext& cx, const toml::table& t, const std::string& where, const toml::node& r, Axis& a) {
  const auto* arr = r.as_array();
  if (!arr || arr->size() != 2 || !arr->get(0)->is_integer() || !arr->get(1)->is_integer())
    cx.fail(where + ".range", fmt::format("expected [min, max] integers, got {}", toml_value_text(r)));
  a.min = *arr->get(0)->value<std::int64_t>();
  a.max = *arr->get(1)->value<std::int64_t>();
  if (a.min < 1 || a.max < a.min) cx.fail(where + ".range", fmt::format("[{}, {}]: need 1 <= min <= max", a.min, a.max));
  if (const toml::node* h = t.get("hints")) {
    const auto* ha = h->as_array();
    if (!ha) cx.fail(where + ".hints", fmt::format("expected an array of integers, got {}", toml_value_text(*h)));
    for (std::size_t i = 0; i < ha->size(); ++i) {
      if (!ha->get(i)->is_integer() || *ha->get(i)->value<std::int64_t>() < 1)
        cx.fail(fmt::format("{}.hints[{}]", where, i), fmt::format("expected a positive integer, got {}", toml_value_text(*ha->get(i))));
      a.hints.push_back(*ha->get(i)->value<std::int64_t>());
    }
  }
  a.multiple_of = integer(cx, t, where, "multiple_of", 1);
  if (a.multiple_of < 1) cx.fail(where + ".multiple_of", fmt::format("{} is below 1", a.multiple_of));
  a.power_of_two = boolean(cx, t, where, "power_of_two", false);
  a.base = integer(cx, t, where, "base", a.hints.empty() ? std::min<std::int64_t>(a.max, 64) : a.hints.front());
  a.large = integer(cx, t, where, "large", 0);
  for (auto [key, val] : {std::pair{"base", a.base}, {"large", a.large}})
    if ((val != 0 || std::string(key) == "base") && (val < a.min || val > a.max || val % a.multiple_of || (a.power_of_two && (val & (val - 1)))))
      cx.fail(where + "." + key, fmt::format("{} is outside the axis range [{}, {}] or breaks its claims", val, a.min, a.max));
  a.kind = Axis::variable;
}

// [axes]: variable ones first in the file's order; constants; derived ones may use any before.
void spec_axes_table(const TomlContext& cx, const toml::table& root, Spec& s, std::set<std::string>& known) {
  const toml::table& axes = table_at(cx, root.get("axes"), "axes");
  for (const auto& [k, v] : in_file_order(axes)) {
    const std::string where = "axes." + k;
    const toml::table& t = table_at(cx, v, where);
    check_keys(cx, t, where, {"range", "hints", "base", "large", "multiple_of", "power_of_two", "value", "expr", "description"});
    Axis a;
    a.name = k;
    const int kinds = int(t.get("range") != nullptr) + int(t.get("value") != nullptr) + int(t.get("expr") != nullptr);
    if (kinds != 1) cx.fail(where, "exactly one of range (variable), value (constant) or expr (derived) is needed");
    if (const toml::node* r = t.get("range")) {
      spec_variable_axis(cx, t, where, *r, a);
    } else {
      for (const char* k2 : {"hints", "base", "large", "multiple_of", "power_of_two"})
        if (t.get(k2)) cx.fail(where + "." + k2, "only a variable axis (with range) takes it");
      if (const toml::node* v2 = t.get("value")) {
        if (!v2->is_integer() || *v2->value<std::int64_t>() < 1)
          cx.fail(where + ".value", fmt::format("expected a positive integer, got {}", toml_value_text(*v2)));
        a.kind = Axis::constant;
        a.expr = Expr::constant(*v2->value<std::int64_t>());
      } else {
        a.kind = Axis::derived;
        a.expr = expr_of(cx, where + ".expr", *t.get("expr"), known);
      }
    }
    known.insert(a.name);
    s.axes.push_back(a);
  }
  if (s.axes.empty()) cx.fail("axes", "no axis is declared");
  if (std::none_of(s.axes.begin(), s.axes.end(), [](const Axis& a) { return a.kind == Axis::variable; }))
    cx.fail("axes", "no variable axis (with range) is declared");
  // A derived axis may only use axes declared before it (known grew in order); constants are
  // evaluated first, so put variables first in the vector for Spec::complete.
  std::stable_sort(s.axes.begin(), s.axes.end(), [](const Axis& x, const Axis& y) {
    return x.kind == Axis::variable && y.kind != Axis::variable;
  });
}

void spec_scalars_table(const TomlContext& cx, const toml::table& root, Spec& s, const std::set<std::string>& known) {
  const toml::node* sn = root.get("scalars");
  if (!sn) return;
  for (const auto& [k, v] : table_at(cx, sn, "scalars")) {
    const std::string where = "scalars." + std::string(k.str());
    const toml::table& t = table_at(cx, &v, where);
    check_keys(cx, t, where, {"dtype", "value", "description"});
    Scalar sc;
    sc.name = std::string(k.str());
    if (known.count(sc.name)) cx.fail(where, fmt::format("'{}' is already an axis", sc.name));
    sc.dtype = dtype_of(cx, where + ".dtype", str(cx, t, where, "dtype", false, "f32"));
    if (sc.dtype != DType::f32 && sc.dtype != DType::f64 && sc.dtype != DType::i32 && sc.dtype != DType::i64)
      cx.fail(where + ".dtype", "a scalar is f32, f64, i32 or i64");
    if (!t.get("value")) cx.fail(where + ".value", "missing (required)");
    sc.value = num(cx, t, where, "value", 0);
    s.scalars.push_back(sc);
  }
}

// One [tensors.X]: role, shape, dtype, layout, aliasing, alignment, and an input's values or an
// output's error model.
TensorDef spec_tensor(const TomlContext& cx, const std::string& k, const toml::node* v, Spec& s, std::set<std::string>& known) {
  const std::string where = "tensors." + k;
  const toml::table& t = table_at(cx, v, where);
  check_keys(cx, t, where, {"role", "shape", "dtype", "layout", "stride", "stride_multiple_of", "aliases", "alignment", "description",
                            "values", "error", "unread"});
  TensorDef td;
  td.name = k;
  if (known.count(td.name)) cx.fail(where, fmt::format("'{}' is already an axis", td.name));
  for (const auto& sc : s.scalars)
    if (sc.name == td.name) cx.fail(where, fmt::format("'{}' is already a scalar", td.name));
  const std::string role = str(cx, t, where, "role", true);
  if (role == "input") td.role = Role::input;
  else if (role == "output") td.role = Role::output;
  else cx.fail(where + ".role", fmt::format("\"{}\": expected \"input\" or \"output\"", role));
  const auto* shape = t.get("shape") ? t.get("shape")->as_array() : nullptr;
  if (!shape || shape->empty()) cx.fail(where + ".shape", "missing or empty: the axes of the tensor, outermost first");
  for (std::size_t i = 0; i < shape->size(); ++i) {
    const auto* n = shape->get(i);
    if (!n->is_string()) cx.fail(fmt::format("{}.shape[{}]", where, i), fmt::format("expected an axis name, got {}", toml_value_text(*n)));
    std::string ax(*n->value<std::string>());
    if (!known.count(ax)) cx.fail(fmt::format("{}.shape[{}]", where, i), fmt::format("unknown axis \"{}\"", ax));
    td.shape.push_back(ax);
  }
  if (t.get("dtype")) td.dtype = dtype_of(cx, where + ".dtype", str(cx, t, where, "dtype", true));
  read_layout(cx, t, where, td, s, known);
  td.description = str(cx, t, where, "description", false, fmt::format("{}, [{}]", role, fmt::join(td.shape, ", ")));
  td.aliases = str(cx, t, where, "aliases", false);
  td.alignment = integer(cx, t, where, "alignment", 0);
  if (td.alignment < 0 || (td.alignment & (td.alignment - 1)) || td.alignment > 4096)
    cx.fail(where + ".alignment", fmt::format("{} is not a power of two up to 4096 bytes", td.alignment));
  if (td.role == Role::input) {
    if (!td.aliases.empty()) cx.fail(where + ".aliases", "only an output may alias an input");
    if (t.get("error")) cx.fail(where + ".error", "an input has no error model (outputs do)");
    if (const toml::node* vn = t.get("values")) read_values(cx, table_at(cx, vn, where + ".values"), where + ".values", td.values, s);
    // An input the operation takes but its reference does not read (a backward pass given the saved
    // activation, and the forward's bias beside it): said, with why, instead of failing the check that
    // every input moves an output.
    td.unread = str(cx, t, where, "unread", false);
    if (t.get("unread") && td.unread.empty()) cx.fail(where + ".unread", "empty: say why the reference never reads this input");
  } else {
    if (t.get("unread")) cx.fail(where + ".unread", "only an input can be unread (an output is always written)");
    if (t.get("values")) cx.fail(where + ".values", "an output has no generated values (inputs do)");
    if (const toml::node* en = t.get("error")) td.error = read_error(cx, table_at(cx, en, where + ".error"), where + ".error", s);
    else if (!td.dtype || !is_int(*td.dtype)) cx.fail(where + ".error", "missing: a floating output needs its error model (exact, ulps, allclose or reduction)");
  }
  return td;
}

std::vector<std::string> spec_tensor_names(const Spec& s) {
  std::vector<std::string> names;
  for (const auto& t : s.tensors) names.push_back(t.name);
  return names;
}

// [tensors]: each tensor, then at least one input and one output, and at most one output aliasing
// an input of its shape.
void spec_tensors_table(const TomlContext& cx, const toml::table& root, Spec& s, std::set<std::string>& known) {
  const toml::table& tensors = table_at(cx, root.get("tensors"), "tensors");
  for (const auto& [k, v] : in_file_order(tensors)) s.tensors.push_back(spec_tensor(cx, k, v, s, known));
  const std::vector<std::string> tensor_names = spec_tensor_names(s);
  if (std::none_of(s.tensors.begin(), s.tensors.end(), [](const TensorDef& t) { return t.role == Role::input; }))
    cx.fail("tensors", "no input tensor is declared");
  if (std::none_of(s.tensors.begin(), s.tensors.end(), [](const TensorDef& t) { return t.role == Role::output; }))
    cx.fail("tensors", "no output tensor is declared");
  int aliased = 0;
  for (const auto& t : s.tensors) {
    if (t.aliases.empty()) continue;
    const TensorDef* in = s.tensor(t.aliases);
    if (!in || in->role != Role::input)
      cx.fail("tensors." + t.name + ".aliases", fmt::format("\"{}\" is not an input tensor (known: {})", t.aliases, fmt::join(tensor_names, ", ")));
    if (in->shape != t.shape) cx.fail("tensors." + t.name + ".aliases", fmt::format("\"{}\" has another shape", t.aliases));
    if (++aliased > 1) cx.fail("tensors." + t.name + ".aliases", "only one output may alias an input");
  }
}

// dtypes.rows: one table {tensor = dtype, ...} per row, naming every tensor without a fixed dtype.
void spec_dtype_rows(const TomlContext& cx, const toml::node& rows, const std::vector<std::string>& free, Spec& s) {
  const std::vector<std::string> tensor_names = spec_tensor_names(s);
  const auto* arr = rows.as_array();
  if (!arr || arr->empty()) cx.fail("dtypes.rows", "expected a non-empty array of tables {tensor = dtype, ...}");
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const std::string key = fmt::format("dtypes.rows[{}]", i);
    const auto* rt = arr->get(i)->as_table();
    if (!rt) cx.fail(key, fmt::format("expected a table {{tensor = dtype, ...}}, got {}", toml_value_text(*arr->get(i))));
    std::map<std::string, DType> row;
    for (const auto& [tk, tv] : *rt) {
      const std::string tn(tk.str());
      const TensorDef* td = s.tensor(tn);
      if (!td) cx.fail(key + "." + tn, fmt::format("unknown tensor \"{}\" (known: {})", tn, fmt::join(tensor_names, ", ")));
      if (td->dtype) cx.fail(key + "." + tn, fmt::format("tensor \"{}\" has a fixed dtype ({})", tn, to_string(*td->dtype)));
      if (!tv.is_string()) cx.fail(key + "." + tn, fmt::format("expected a dtype, got {}", toml_value_text(tv)));
      row[tn] = dtype_of(cx, key + "." + tn, std::string(*tv.value<std::string>()));
    }
    for (const auto& n : free)
      if (!row.count(n)) cx.fail(key, fmt::format("tensor \"{}\" has no dtype in this row", n));
    s.rows.push_back({free.empty() ? DType::f32 : row.at(free.front()), row});
  }
}

// [dtypes]: rows or all; rows named by their first free tensor's dtype; integer outputs exact and
// aliased tensors of one dtype in every row.
void spec_dtypes_table(const TomlContext& cx, const toml::table& root, Spec& s) {
  const toml::table& dt = table_at(cx, root.get("dtypes"), "dtypes");
  check_keys(cx, dt, "dtypes", {"rows", "all"});
  std::vector<std::string> free;
  for (const auto& t : s.tensors)
    if (!t.dtype) free.push_back(t.name);
  if (dt.get("rows") && dt.get("all")) cx.fail("dtypes", "give either rows or all, not both");
  if (const toml::node* all = dt.get("all")) {
    const auto* arr = all->as_array();
    if (!arr || arr->empty()) cx.fail("dtypes.all", "expected a non-empty array of dtypes");
    for (std::size_t i = 0; i < arr->size(); ++i) {
      const std::string key = fmt::format("dtypes.all[{}]", i);
      if (!arr->get(i)->is_string()) cx.fail(key, fmt::format("expected a dtype, got {}", toml_value_text(*arr->get(i))));
      DType d = dtype_of(cx, key, std::string(*arr->get(i)->value<std::string>()));
      std::map<std::string, DType> row;
      for (const auto& n : free) row[n] = d;
      s.rows.push_back({d, row});
    }
  } else if (const toml::node* rows = dt.get("rows")) {
    spec_dtype_rows(cx, *rows, free, s);
  } else {
    cx.fail("dtypes", "missing: rows = [{tensor = dtype, ...}] or all = [dtypes]");
  }
  if (free.empty() && s.rows.size() > 1) cx.fail("dtypes", "every tensor has a fixed dtype: give one row");
  {
    std::set<DType> keys;
    for (std::size_t i = 0; i < s.rows.size(); ++i)
      if (!keys.insert(s.rows[i].first).second)
        cx.fail(fmt::format("dtypes.rows[{}]", i), fmt::format("a second row with {} = {}: rows are named by the dtype of "
                                                              "the first tensor without a fixed dtype ('{}'), so it must differ",
                                                              free.front(), to_string(s.rows[i].first), free.front()));
  }
  for (const auto& t : s.tensors) {
    if (t.role != Role::output) continue;
    for (const auto& [key, row] : s.rows) {
      const DType d = t.dtype ? *t.dtype : row.at(t.name);
      if (is_int(d) && t.error.kind != ErrorModel::exact && t.error.kind != ErrorModel::quantized)
        cx.fail("tensors." + t.name + ".error.model",
                fmt::format("an integer output ({}) is compared exactly, or quantized from a real value: never cast to float", to_string(d)));
      if (t.error.kind == ErrorModel::quantized && !is_int(d) && (t.error.rounding != ErrorModel::half_even || t.error.clamp))
        cx.fail("tensors." + t.name + ".error",
                fmt::format("a floating output ({}) rounds to nearest even and saturates or not: rounding and clamp are for integer outputs", to_string(d)));
      if (!t.aliases.empty()) {
        const TensorDef* in = s.tensor(t.aliases);
        const DType di = in->dtype ? *in->dtype : row.at(in->name);
        if (di != d) cx.fail("tensors." + t.name + ".aliases", fmt::format("\"{}\" is {} where \"{}\" is {}", in->name, to_string(di), t.name, to_string(d)));
      }
    }
  }
}

// Constraints, from the axes' claims and the file's [[constraints]].
void spec_constraints(const TomlContext& cx, const toml::table& root, Spec& s, const std::set<std::string>& known) {
  for (const auto& a : s.axes) {
    if (a.kind != Axis::variable) continue;
    if (a.multiple_of > 1)
      s.constraints.push_back({Expr::parse(fmt::format("{} % {} == 0", a.name, a.multiple_of)),
                               fmt::format("{} must be a multiple of {}", a.name, a.multiple_of)});
    if (a.power_of_two) s.constraints.push_back({Expr::parse(fmt::format("is_pow2({})", a.name)), fmt::format("{} must be a power of two", a.name)});
  }
  for (const auto& a : s.axes)
    if (a.kind == Axis::constant || a.kind == Axis::derived)  // a row stride below 1 is refused as empty
      s.constraints.push_back({Expr::parse(fmt::format("{} >= 1", a.name)), fmt::format("{} (= {}) must be at least 1", a.name, a.expr.text())});
  // Offsets start at 0 and end at their axis's value (at least 1): two elements at least.
  for (const auto& t : s.tensors)
    if (t.role == Role::input && t.values.dist == "offsets" && !t.shape.empty())
      s.constraints.push_back({Expr::parse(fmt::format("{} >= 2", fmt::join(t.shape, " * "))),
                               fmt::format("tensors.{} holds offsets from 0 to {}: it needs at least two elements", t.name, t.values.axis)});
  if (const toml::node* cn = root.get("constraints")) {
    const auto* arr = cn->as_array();
    if (!arr) cx.fail("constraints", "expected [[constraints]] tables");
    for (std::size_t i = 0; i < arr->size(); ++i) {
      const std::string where = fmt::format("constraints[{}]", i);
      const toml::table& t = table_at(cx, arr->get(i), where);
      check_keys(cx, t, where, {"expr", "reason"});
      if (!t.get("expr")) cx.fail(where + ".expr", "missing (required)");
      Constraint k;
      k.expr = expr_of(cx, where + ".expr", *t.get("expr"), known);
      k.reason = str(cx, t, where, "reason", false, "constraint " + k.expr.text());
      s.constraints.push_back(k);
    }
  }
}

// [families]: base (each input's values) first, then the declared ones over it.
void spec_families_table(const TomlContext& cx, const toml::table& root, Spec& s) {
  Family base;
  base.name = "base";
  base.small_only = false;
  for (const auto& t : s.tensors)
    if (t.role == Role::input) base.values[t.name] = t.values;
  s.families.push_back(base);
  const toml::node* fn = root.get("families");
  if (!fn) return;
  for (const auto& [k, v] : table_at(cx, fn, "families")) {
    const std::string where = "families." + std::string(k.str());
    const toml::table& t = table_at(cx, &v, where);
    Family f = base;
    f.name = std::string(k.str());
    if (f.name == "base") cx.fail(where, "\"base\" is the family of each input's own values; name this one otherwise");
    f.small_only = boolean(cx, t, where, "small_only", true);
    f.max_elements = f.small_only ? std::int64_t(1) << 16 : std::numeric_limits<std::int64_t>::max();
    if (t.get("max_elements")) {
      f.max_elements = integer(cx, t, where, "max_elements", f.max_elements);
      if (f.max_elements < 1) cx.fail(where + ".max_elements", fmt::format("{}: expected at least 1 (elements of a case's largest tensor)", f.max_elements));
    }
    for (const auto& [tk, tv] : t) {
      const std::string tn(tk.str());
      if (tn == "small_only" || tn == "max_elements") continue;
      const TensorDef* td = s.tensor(tn);
      if (!td || td->role != Role::input)
        cx.fail(where + "." + tn, fmt::format("\"{}\" is not an input tensor (or the key small_only or max_elements)", tn));
      if (td->values.generated)
        cx.fail(where + "." + tn, fmt::format("'{}' takes its values from the [generator] in every family: a family redraws the inputs "
                                              "kqual draws", tn));
      read_values(cx, table_at(cx, &tv, where + "." + tn), where + "." + tn, f.values[tn], s);
    }
    s.families.push_back(f);
  }
}

// dist = "bits" draws the dtype's own bit patterns as values: an i64 has more than a double holds
// exactly, and a bool byte other than 0 and 1 is no value of it.
void check_bit_patterns(const TomlContext& cx, const Spec& s) {
  for (const Family& f : s.families)
    for (const auto& [tn, v] : f.values) {
      if (v.dist != "bits") continue;
      const TensorDef* td = s.tensor(tn);
      for (const auto& [key, row] : s.rows) {
        const DType d = td->dtype ? *td->dtype : row.at(tn);
        if (d == DType::i64 || d == DType::boolean)
          cx.fail(f.name == "base" ? "tensors." + tn + ".values.dist" : "families." + f.name + "." + tn + ".dist",
                  fmt::format("\"bits\" draws bit patterns of floating dtypes and integers up to 32 bits; '{}' is {}", tn, to_string(d)));
      }
    }
}

void spec_cost_table(const TomlContext& cx, const toml::table& root, Spec& s, const std::set<std::string>& known) {
  std::set<std::string> cost_names = known;
  for (const auto& t : s.tensors) cost_names.insert("size_" + t.name);
  const toml::table& cost = table_at(cx, root.get("cost"), "cost");
  check_keys(cx, cost, "cost", {"flops", "bytes", "ceiling"});
  if (!cost.get("flops")) cx.fail("cost.flops", "missing (required): floating-point operations as a formula over the axes");
  s.flops = expr_of(cx, "cost.flops", *cost.get("flops"), cost_names);
  if (const toml::node* b = cost.get("bytes")) s.bytes = expr_of(cx, "cost.bytes", *b, cost_names);
  s.ceiling = str(cx, cost, "cost", "ceiling", false, "bandwidth");
  if (s.ceiling != "bandwidth" && s.ceiling != "fma") cx.fail("cost.ceiling", fmt::format("\"{}\": expected bandwidth or fma", s.ceiling));
}

// [bench]: its shapes (each within the constraints and layouts) and family; without shapes, each
// variable axis at its large (else base) size.
void spec_bench_table(const TomlContext& cx, const toml::table& root, Spec& s) {
  if (const toml::node* bn = root.get("bench")) {
    const toml::table& b = table_at(cx, bn, "bench");
    check_keys(cx, b, "bench", {"shapes", "family"});
    if (const toml::node* sh = b.get("shapes")) {
      const auto* arr = sh->as_array();
      if (!arr) cx.fail("bench.shapes", "expected an array of \"axis=value,...\" strings");
      for (std::size_t i = 0; i < arr->size(); ++i) {
        const std::string key = fmt::format("bench.shapes[{}]", i);
        if (!arr->get(i)->is_string()) cx.fail(key, fmt::format("expected a string, got {}", toml_value_text(*arr->get(i))));
        Dims d = parse_dims_text(cx, key, std::string(*arr->get(i)->value<std::string>()), s);
        Dims all;
        try {
          all = s.complete(d);
        } catch (const Error& e) {
          cx.fail(key, e.what());
        }
        if (auto why = s.violated(all); !why.empty()) cx.fail(key, why);
        if (auto why = s.layout_violated(all); !why.empty()) cx.fail(key, why);
        s.bench_shapes.push_back(d);
      }
    }
    s.bench_family = str(cx, b, "bench", "family", false, "base");
    if (std::none_of(s.families.begin(), s.families.end(), [&](const Family& f) { return f.name == s.bench_family; }))
      cx.fail("bench.family", fmt::format("unknown family \"{}\"", s.bench_family));
  }
  if (s.bench_shapes.empty()) {
    Dims d;
    for (const auto& a : s.axes)
      if (a.kind == Axis::variable) d[a.name] = a.large ? a.large : a.base;
    s.bench_shapes.push_back(d);
  }
}

void spec_reference_table(const TomlContext& cx, const toml::table& root, Spec& s, const std::set<std::string>& known) {
  const toml::table& ref = table_at(cx, root.get("reference"), "reference");
  check_keys(cx, ref, "reference", {"python", "function", "kind", "cuda", "precision", "alternative"});
  s.reference.precision = str(cx, ref, "reference", "precision", false, "");
  const std::string py = str(cx, ref, "reference", "python", true);
  s.reference.file = fs::path(py).is_absolute() ? fs::path(py) : s.dir / py;
  if (!fs::is_regular_file(s.reference.file))
    cx.fail("reference.python", fmt::format("\"{}\": no such file ({})", py, s.reference.file.string()));
  s.reference.function = str(cx, ref, "reference", "function", true);
  s.reference.kind = str(cx, ref, "reference", "kind", false, "numpy");
  s.reference.alternative = str(cx, ref, "reference", "alternative", false, "");
  if (s.reference.alternative == s.reference.function)
    cx.fail("reference.alternative", fmt::format("\"{}\" is the reference function itself: name another function of {}", s.reference.alternative, py));
  if (s.reference.kind != "numpy" && s.reference.kind != "torch")
    cx.fail("reference.kind", fmt::format("\"{}\": expected \"numpy\" or \"torch\"", s.reference.kind));
  if (const toml::node* cn = ref.get("cuda")) s.reference.cuda = read_cuda(cx, table_at(cx, cn, "reference.cuda"), s, known);
}

// [index_cases]: past 2^31 elements, generated on the device, checked in windows of an axis.
void spec_index_cases_table(const TomlContext& cx, const toml::table& root, Spec& s) {
  const toml::node* ic = root.get("index_cases");
  if (!ic) return;
  const toml::table& t = table_at(cx, ic, "index_cases");
  check_keys(cx, t, "index_cases", {"axis"});
  s.independent_axis = str(cx, t, "index_cases", "axis", true);
  const Axis* a = s.axis(s.independent_axis);
  if (!a || a->kind != Axis::variable)
    cx.fail("index_cases.axis", fmt::format("\"{}\" is not a variable axis", s.independent_axis));
  for (const auto& td : s.tensors) {
    const auto pos = std::find(td.shape.begin(), td.shape.end(), s.independent_axis);
    if (pos != td.shape.end() && pos != td.shape.begin())
      cx.fail("index_cases.axis", fmt::format("\"{}\" is not the outermost axis of tensor '{}' ([{}]): a window of it would not "
                                              "be one stretch of memory", s.independent_axis, td.name, fmt::join(td.shape, ", ")));
    if (td.role == Role::output && pos == td.shape.end())
      cx.fail("index_cases.axis", fmt::format("output '{}' does not run along \"{}\"", td.name, s.independent_axis));
    if (td.role == Role::input && td.values.generated)
      cx.fail("index_cases.axis", fmt::format("input '{}' takes its values from the [generator], which the device generator does not "
                                              "run", td.name));
    if (td.role == Role::input && td.values.dist != "normal" && td.values.dist != "uniform" && td.values.dist != "constant")
      cx.fail("index_cases.axis", fmt::format("input '{}' draws {} values, which the device generator does not make (it draws "
                                              "uniform values in [-1, 1))", td.name, td.values.dist));
  }
  for (const auto& [key, row] : s.rows)
    for (const auto& [tn, d] : row)
      if (s.tensor(tn)->role == Role::input && d != DType::f32 && d != DType::bf16 && d != DType::i32)
        cx.fail("index_cases.axis", fmt::format("input '{}' is {} in a dtype row: the device generator makes f32, bf16 and i32", tn, to_string(d)));
}

}  // namespace

Spec parse_spec(const std::string& text, const fs::path& file) {
  TomlContext cx(file);
  Spec s;
  s.file = file;
  s.dir = file.parent_path();
  toml::table root = parse_toml(text, file);
  check_keys(cx, root, "", {"contract", "axes", "scalars", "tensors", "dtypes", "constraints", "families", "cost", "bench",
                            "reference", "generator", "index_cases"});
  std::set<std::string> known;  // axis names, as the tables below may use them
  spec_contract_table(cx, root, s);
  spec_axes_table(cx, root, s, known);
  spec_scalars_table(cx, root, s, known);
  spec_tensors_table(cx, root, s, known);
  spec_dtypes_table(cx, root, s);
  spec_constraints(cx, root, s, known);
  spec_families_table(cx, root, s);
  check_bit_patterns(cx, s);
  spec_cost_table(cx, root, s, known);
  spec_bench_table(cx, root, s);
  spec_reference_table(cx, root, s, known);
  read_generator(cx, root, s);  // declared_generated.cpp
  spec_index_cases_table(cx, root, s);
  check_layouts(cx, s);
  return s;
}

}  // namespace kqual::contract::declared
