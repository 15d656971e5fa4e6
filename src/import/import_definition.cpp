// flashinfer-bench / SOL-ExecBench Definition → declared contract (import_definition.hpp).
// The translation, term by term (docs/declared-contracts.md, "Importing a Definition"):
//   axes: const → value; var → a variable axis, range [1, 2^31 - 1], the workloads' values as its
//     base and hints (their t-1, t, t+1 become boundary cases); expr → a derived axis when kqual's
//     integer expressions can evaluate it, refused otherwise.
//   inputs/outputs: shape over the axes, one dtype row; a null shape is a scalar whose value comes
//     from the workloads (the same in all of them, or refused). A literal size ("1") or a 0-d tensor
//     is a constant axis c<N>, a bool scalar an i32 0/1 (rewritten first: import_definition_rewrite.cpp).
//   constraints: Python boolean expressions over the axes (and/or/not), evaluated before launch;
//     T.shape[i] is that axis, and a var axis an equality fixes is a derived axis.
//   reference: the `run` source, as reference.py with kind = "torch", in kqual's reference process
//     (through kqual_run, which restores 0-d tensors and bools, when the rewrite changed them).
//   tolerance: flashinfer-bench fails an element only past both atol and rtol·|ref| (combine =
//     "max"); SOL-ExecBench (its max_atol/max_rtol keys, unwrapped workload lines) passes an element
//     within atol + rtol·|ref| (combine = "sum", torch.allclose's form); SOL's required_matched_ratio
//     with max_error_cap (without a cap, every element within the bound); across workloads the
//     strictest of each. kqual's own bundled contracts are
//     stricter (bounds from the arithmetic).
//   values: the Definition states none: every input N(0, 1), plus value families (small_scale,
//     large_scale, nonzero_mean) over the data inputs, each with a comment saying why
//     (import_families.cpp).
#include "kqual/import/import_definition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/expr.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "import_common.hpp"
#include "import_definition_parts.hpp"

namespace kqual::contract {
namespace fs = std::filesystem;

// The source's tolerance terms (the strictest across the Definition and its workloads), and which
// judge the file was written for: sol is true for SOL-ExecBench's (import_definition_tolerance.cpp).
detail::SourceTolerance definition_tolerance(const DefinitionImportOptions& o, const detail::JsonIn& in, const json& def,
                                             const std::vector<std::pair<std::string, json>>& workloads, bool& sol,
                                             std::vector<std::string>& notes);

namespace {

[[noreturn]] void refuse(const fs::path& file, const std::string& key, const std::string& why) {
  throw_error(ErrorKind::input, fmt::format("{}: {}: {}", file.string(), key, why));
}

using detail::toml_quoted;

std::string kqual_dtype(const fs::path& f, const std::string& key, const std::string& d) {
  if (std::string k = detail::imported_dtype(d); !k.empty()) return k;
  refuse(f, key, fmt::format("dtype \"{}\" has no kqual storage type (kqual takes {}, and float4_e2m1fn_x2 inputs as their bytes; "
                             "other formats are not supported)", d,
                             detail::imported_dtype_names()));
}

using detail::kqual_expr_text;

// The translated expression must parse and use only axes.
Expr constraint_expr(const fs::path& f, const std::string& key, std::string text, const std::set<std::string>& axes,
                     const std::set<std::string>& tensors = {}) {
  text = kqual_expr_text(text);
  Expr e;
  try {
    e = Expr::parse(text);
  } catch (const Error& err) {
    // flashinfer-bench ties axes to data ("total_q == qo_indptr[-1].item()"): say whose values it reads.
    for (const auto& t : tensors)
      if (text.find(t + ".shape[") != std::string::npos)
        refuse(f, key, fmt::format("\"{}\" reads a dim of tensor '{}' that its shape does not have", text, t));
    for (const auto& t : tensors)
      for (const char* read : {"[", ".item()", ".sum(", ".max(", ".min("})
        if (text.find(t + read) != std::string::npos)
          refuse(f, key, fmt::format("\"{}\" reads the values of tensor '{}': kqual's constraints relate axes only, and the values of "
                                     "an input are drawn for each case (docs/declared-contracts.md, values)", text, t));
    refuse(f, key, fmt::format("\"{}\" is not an integer expression kqual can evaluate ({})", text, err.what()));
  }
  for (const auto& v : e.variables())
    if (!axes.count(v)) refuse(f, key, fmt::format("\"{}\" uses '{}', which is not an axis", text, v));
  return e;
}

using detail::outside_domain;

// The Definition's top level: an object whose name, axes, inputs, outputs and reference have the
// types the translation reads. Its name is returned in `name`.
json read_definition(const fs::path& f, std::string& name) {
  json def;
  try {
    def = json::parse(read_text_file(f));
  } catch (const json::exception& e) {
    throw_error(ErrorKind::input, fmt::format("{}: not JSON: {}", f.string(), e.what()));
  }
  const detail::JsonIn in(f.string());
  if (!def.is_object()) refuse(f, "(top level)", "expected a JSON object (a Definition), got " + detail::json_kind(def));
  for (const char* k : {"name", "axes", "inputs", "outputs", "reference"})
    if (!def.contains(k)) refuse(f, k, "missing (a Definition has name, axes, inputs, outputs and reference)");
  name = in.string(def["name"], "name", "a string (the Definition's name)");
  for (const char* k : {"axes", "inputs", "outputs"}) in.object(def[k], k);
  (void)in.string(def["reference"], "reference", "a string (the Python source of run)");
  if (def.contains("constraints")) in.array(def["constraints"], "constraints");
  if (def.contains("tolerance")) in.object(def["tolerance"], "tolerance");
  // Every name becomes a TOML key, an expression variable or a keyword argument of run(): "x.y" would
  // write a nested table, "2d" an expression that does not parse.
  std::set<std::string> seen;
  for (const char* group : {"axes", "inputs", "outputs"})
    for (const auto& [n, v] : def[group].items()) {
      const std::string key = std::string(group) + "." + n;
      if (!detail::is_plain_name(n))
        refuse(f, key, fmt::format("\"{}\" is not a name kqual can write (letters, digits and _, not starting with a digit): it "
                                   "becomes a TOML key and a keyword argument of the reference's run()", n));
      if (!seen.insert(n).second) refuse(f, key, fmt::format("\"{}\" is already the name of an axis or a tensor", n));
      in.object(v, key);
    }
  return def;
}

using detail::Workloads;
using detail::workload_axis;
using detail::workload_body;

struct Axes {
  std::set<std::string> names;
  std::vector<std::string> var;                              // var axes, in the order written
  std::map<std::string, std::int64_t> value;                 // at the base shape: how large a case's tensors get
  std::vector<std::pair<std::string, Expr>> derived;         // expr axes, in the order they are written
  std::vector<std::pair<std::string, Expr>> constraints;     // the Definition's text, the expression
};

// The [axes.*] tables into `t` (a var axis's base as BASE_OF_<name>, replaced once the text is
// whole), the constraints parsed, the base shape settled inside them (settle_base).
Axes translate_axes(const fs::path& f, const detail::JsonIn& in, const json& def, const Workloads& workloads, std::ostream& t,
                    std::vector<std::string>& notes) {
  Axes out;
  std::set<std::string>& axes = out.names;
  std::vector<std::string>& var_axes = out.var;
  std::map<std::string, std::int64_t>& axis_value = out.value;
  std::vector<std::pair<std::string, Expr>>& derived = out.derived;
  // Constants first, then variables, then expressions (a derived axis uses the others).
  std::vector<std::pair<std::string, json>> ordered;
  for (const auto& [an, a] : def["axes"].items()) ordered.push_back({an, a});
  auto type_of = [&](const std::string& an, const json& a) { return in.string_or(a, "axes." + an, "type", ""); };
  auto rank = [&](const std::pair<std::string, json>& a) {
    const std::string ty = type_of(a.first, a.second);
    return ty == "var" ? 0 : ty == "const" ? 1 : 2;
  };
  std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  for (const auto& [an, a] : ordered) {
    const std::string key = "axes." + an;
    const std::string ty = type_of(an, a);
    t << "[axes." << an << "]\n";
    if (ty == "const") {
      if (!a.contains("value") || !a["value"].is_number_integer() || in.integer(a["value"], key + ".value") < 0)
        refuse(f, key + ".value", "a const axis needs a positive integer value");
      if (a["value"].get<std::int64_t>() == 0)  // as a literal "0" in a shape (import_definition_rewrite.cpp)
        refuse(f, key + ".value", "0: a zero-sized axis (every tensor along it is empty): kqual's axes are at least 1 (the "
                                  "declared-contract engine runs no empty tensor)");
      t << "value = " << (axis_value[an] = a["value"].get<std::int64_t>()) << "\n";
    } else if (ty == "var") {
      std::vector<std::int64_t> seen;
      for (const auto& w : workloads)
        if (auto v = workload_axis(w, an)) seen.push_back(*v);
      std::vector<std::int64_t> hints = seen;
      std::sort(hints.begin(), hints.end());
      hints.erase(std::unique(hints.begin(), hints.end()), hints.end());
      // The six smallest workload values, and the largest (a workload's own size: over the CPU
      // reference's cap it is generated on the device where [index_cases] allows, else listed as not run).
      if (hints.size() > 7) hints.erase(hints.begin() + 6, hints.end() - 1);
      t << "range = [1, 2147483647]\n";
      if (!hints.empty()) t << "hints = [" << fmt::format("{}", fmt::join(hints, ", ")) << "]   # the workloads' values (the six smallest, the largest)\n";
      // The base (where the other axes' cases hold this one, and every value family runs): the
      // smallest workload value above 1. One row is a degenerate base: every case of the other axes
      // would have a single row, with no row-to-row indexing to get wrong (SOL's softmax_h4096 lists
      // batch_size 1 first; the domain's refusal examples no longer depend on it: domain.cpp).
      std::int64_t base = seen.empty() ? 64 : seen.front();
      for (std::int64_t v : hints)
        if (v > 1) {
          base = v;
          break;
        }
      axis_value[an] = base;
      t << "base = BASE_OF_" << an << "\n";  // settled once the constraints are known (settle_base)
      var_axes.push_back(an);
    } else if (ty == "expr") {
      const std::string ex = in.string_or(a, key, "expression", "");
      const Expr e = constraint_expr(f, key + ".expression", ex, axes);
      try {
        axis_value[an] = e.eval(axis_value);
        derived.push_back({an, e});
      } catch (const Error& err) {
        refuse(f, key + ".expression", fmt::format("\"{}\" cannot be evaluated at the base shape ({})", ex, err.what()));
      }
      if (axis_value[an] < 1) refuse(f, key + ".expression", fmt::format("\"{}\" is {} at the base shape: an axis is at least 1", ex, axis_value[an]));
      t << "expr = " << toml_quoted(kqual_expr_text(ex)) << "\n";
    } else {
      refuse(f, key + ".type", fmt::format("\"{}\": expected const, var or expr", ty));
    }
    axes.insert(an);
    t << "\n";
  }
  if (var_axes.empty()) refuse(f, "axes", "no var axis: kqual needs at least one axis to vary");
  std::vector<std::pair<std::string, Expr>>& constraints = out.constraints;
  std::set<std::string> tensor_names;  // named when a constraint reads one's values
  for (const char* group : {"inputs", "outputs"})
    for (const auto& [tn, spec] : def[group].items()) tensor_names.insert(tn);
  if (def.contains("constraints"))
    for (std::size_t i = 0; i < def["constraints"].size(); ++i) {
      const std::string c = in.string(def["constraints"][i], fmt::format("constraints[{}]", i), "a string (a Python boolean expression)");
      constraints.push_back({c, constraint_expr(f, fmt::format("constraints[{}]", i), c, axes, tensor_names)});
    }
  {
    std::vector<std::map<std::string, std::int64_t>> shapes;  // the workloads that give every var axis
    for (const auto& w : workloads) {
      std::map<std::string, std::int64_t> v;
      for (const auto& a : var_axes)
        if (auto x = workload_axis(w, a)) v[a] = *x;
      if (v.size() == var_axes.size()) shapes.push_back(v);
    }
    detail::settle_base(f, axis_value, var_axes, derived, constraints, shapes, notes);
  }
  return out;
}

// The contract's name: the Definition's, with what is not a letter, digit or _ as _.
std::string definition_contract_name(const std::string& def_name) {
  std::string name = def_name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "def_" + name;
  return name;
}

// What the tensor sections leave for the dtype row, the error models and the families.
struct DefTensorsRead {
  std::map<std::string, std::string> row;
  bool any_float_output = false;
  std::pair<std::string, std::int64_t> base_largest{"", 0};  // the largest tensor at the base shape
  std::vector<detail::FamilyInput> offered;                  // the inputs value families may redraw
  std::vector<std::vector<std::string>> output_shapes, tensor_shapes;
  detail::DefShape shape_of;  // for the error models and [index_cases] (import_definition_parts.cpp)
  std::vector<std::string> notes;                            // for the import's notes
  std::set<std::string> unread;                              // run()'s parameters its body never names
};

// What the integer inputs' values are read from (import_integer_inputs.cpp): run()'s uses of them, and
// the Definition's input generator (SOL-ExecBench's custom_inputs_entrypoint) with the inputs its
// workloads mark "custom".
struct IntegerSources {
  const json* def = nullptr;     // the Definition, rewritten
  std::map<std::string, std::vector<detail::IndexUse>> uses;
  std::string why_no_read;
  std::string entrypoint;        // "" when the Definition has no input generator
  std::set<std::string> custom;  // inputs some workload marks {"type": "custom"}
  bool any_generated = false;    // some input takes its values from the generator: [generator] written
};

// One input or output: a [scalars.X] (a null shape) or a [tensors.X] section, its error model left
// as ERROR_MODEL_OF_<name> until the tolerances are known.
void definition_tensor(const DefinitionImportOptions& o, const detail::JsonIn& in, const Workloads& workloads, Axes& axes_read,
                       const detail::DefinitionRewrite& rw, IntegerSources& ints, const std::string& tn, const json& spec, bool input,
                       std::ostream& t, DefTensorsRead& d) {
  const fs::path& f = o.definition;
  std::map<std::string, std::int64_t>& axis_value = axes_read.value;
  const std::string key = std::string(input ? "inputs." : "outputs.") + tn;
  const std::string dt = kqual_dtype(f, key + ".dtype", in.string_or(spec, key, "dtype", "?"));
  if (!spec.contains("shape") || spec["shape"].is_null()) {
    if (!input) refuse(f, key + ".shape", "a scalar output is not supported");
    t << detail::definition_scalar_toml(f, o.workloads, workloads, tn, key, dt, rw.bool_scalars.count(tn) > 0, d.notes);
    return;
  }
  std::vector<std::string> shape, axis_names;
  std::int64_t elements = 1;
  const json& shape_j = in.array(spec["shape"], key + ".shape");
  for (std::size_t i = 0; i < shape_j.size(); ++i) {
    const std::string ax = in.string(shape_j[i], fmt::format("{}.shape[{}]", key, i), "a string (an axis name)");
    if (!axes_read.names.count(ax)) refuse(f, key + ".shape", fmt::format("unknown axis \"{}\"", ax));
    shape.push_back(toml_quoted(ax));
    axis_names.push_back(ax);
    elements = axis_value[ax] > 0 && elements > (std::int64_t(1) << 40) / axis_value[ax] ? std::int64_t(1) << 40 : elements * axis_value[ax];
  }
  if (elements > d.base_largest.second) d.base_largest = {tn, elements};
  // i8 / u8 inputs are a quantized kernel's data (weights, activations) and bool ones masks; the wider
  // integers are indices, offsets or lengths: their values from the problem's generator, a constraint
  // on them or run()'s use of them (import_integer_inputs.cpp), else refused there by name.
  std::string exact_values = detail::exact_input_values(dt), values_comment;
  const bool generated = input && detail::is_exact_dtype(dt) && !ints.entrypoint.empty() && (exact_values.empty() || ints.custom.count(tn));
  if (input && detail::is_exact_dtype(dt) && (exact_values.empty() || generated)) {
    const detail::IntegerInputValues iv =
        exact_values.empty() ? detail::integer_input_values(f, tn, *ints.def, rw, ints.uses, ints.why_no_read, generated)
                             : detail::IntegerInputValues{fmt::format("{{ source = \"generator\", dist = \"{}\" }}", dt == "bool" ? "mask" : "any"),
                                                          "made by the Definition's custom_inputs_entrypoint (its workloads mark it custom)",
                                                          fmt::format("input '{}': from the Definition's input generator (custom_inputs_entrypoint)", tn)};
    exact_values = iv.values;
    values_comment = iv.comment;
    d.notes.push_back(iv.note);
    ints.any_generated |= generated;
  }
  d.row[tn] = dt;
  t << "[tensors." << tn << "]\nrole = " << (input ? "\"input\"" : "\"output\"") << "\nshape = [" << fmt::format("{}", fmt::join(shape, ", "))
    << "]\n";
  if (input && d.unread.count(tn)) {
    t << "unread = " << toml_quoted("run() never names it: the operation takes it, its reference does not read it") << "\n";
    d.notes.push_back(fmt::format("input '{}': run() never names it (a backward pass given the saved activation takes the forward's "
                                  "bias so): declared unread, so the non-triviality check does not ask that it move an output "
                                  "(and checks that it moves none)", tn));
  }
  d.tensor_shapes.push_back(axis_names);
  if (!input) d.output_shapes.push_back(axis_names);
  (input ? d.shape_of.inputs : d.shape_of.outputs).push_back({tn, dt, axis_names});
  if (input && !values_comment.empty()) {
    t << "values = " << exact_values << "   # " << values_comment << "\n\n";
  } else if (input && !exact_values.empty()) {
    t << "values = " << exact_values
      << (dt == "bool" ? "   # a mask: the Definition states no share of true values\n\n"
                       : "   # a quantized kernel's data (weights, activations): every value of the dtype\n\n");
    d.notes.push_back(fmt::format("input '{}' ({}): values = {}; no float value family redraws it", tn, dt, exact_values));
  } else if (input) {
    t << "values = { dist = \"normal\" }\n\n";
    if (!ints.entrypoint.empty() && ints.custom.count(tn))
      d.notes.push_back(fmt::format("input '{}': the Definition's input generator makes it (its workloads mark it custom); kqual draws "
                                    "it and its value families instead (values = {{ source = \"generator\" }} takes the source's values)", tn));
    d.offered.push_back({tn, "normal", axis_names, dt});  // the wider integer inputs were refused above
  } else if (detail::is_exact_dtype(dt)) {
    t << "error = { model = \"exact\" }\n\n";
  } else {
    d.any_float_output = true;
    t << "error = ERROR_MODEL_OF_" << tn << "\n\n";
  }
}

// The scalars, the tensors (inputs, then outputs) and the dtype row.
DefTensorsRead definition_tensors(const DefinitionImportOptions& o, const detail::JsonIn& in, const json& def, const Workloads& workloads,
                                  Axes& axes_read, const detail::DefinitionRewrite& rw, IntegerSources& ints, std::ostream& t) {
  DefTensorsRead d;
  if (def.contains("reference") && def["reference"].is_string()) d.unread = detail::unread_parameters(def["reference"].get<std::string>(), "run");
  for (const auto& [tn, spec] : def["inputs"].items()) definition_tensor(o, in, workloads, axes_read, rw, ints, tn, spec, true, t, d);
  for (const auto& [tn, spec] : def["outputs"].items()) definition_tensor(o, in, workloads, axes_read, rw, ints, tn, spec, false, t, d);
  if (d.row.empty()) refuse(o.definition, "inputs", "no tensor");
  t << "[dtypes]\nrows = [{ ";
  {
    std::vector<std::string> parts;
    for (const auto& [n, dt] : d.row) parts.push_back(n + " = " + toml_quoted(dt));
    t << fmt::format("{}", fmt::join(parts, ", "));
  }
  t << " }]\n\n";
  return d;
}

// The markers left in the text, filled: each var axis's base, each floating output's error model, the
// determinism lines and max_case_elements (raised when the base shape is past 2^24). The policy's
// marker becomes POLICY_TEXT_LATER, written once the families are known.
void definition_fill_markers(const fs::path& f, const Axes& axes_read, const detail::ErrorModels& models, const DefTensorsRead& d,
                             bool sol, std::string& text, std::vector<std::string>& notes) {
  for (const auto& a : axes_read.var) {
    const std::string mark = "BASE_OF_" + a + "\n";
    text.replace(text.find(mark), mark.size(), std::to_string(axes_read.value.at(a)) + "\n");
  }
  for (const auto& [out, model] : models.by_output) {
    const std::string mark = "ERROR_MODEL_OF_" + out + "\n";
    text.replace(text.find(mark), mark.size(), model + "\n");
  }
  text.replace(text.find("POLICY_TEXT"), 11, "POLICY_TEXT_LATER");  // once the families are known
  // Cases whose largest tensor is past contract.max_case_elements (2^24 by default) are left out
  // (the reference runs on the CPU). Constant axes can make every case larger than that (Gemma 3's
  // 24576 x 3072 projections): without this, the contract would have no case at all.
  std::string cap_line;
  constexpr std::int64_t kDefaultCap = std::int64_t(1) << 24, kMostCap = std::int64_t(1) << 28;
  if (d.base_largest.second > kMostCap)
    refuse(f, "inputs." + d.base_largest.first + ".shape",
           fmt::format("{} elements at the base shape: past 2^28, the largest case kqual's CPU reference evaluates", d.base_largest.second));
  if (d.base_largest.second > kDefaultCap) {
    cap_line = fmt::format("max_case_elements = {}   # '{}' at the base shape: no case would fit the default 2^24\n", d.base_largest.second,
                           d.base_largest.first);
    notes.push_back(fmt::format("'{}' has {} elements at the base shape: max_case_elements raised to it (the reference runs on the "
                                "CPU in float64 for every case: slow)", d.base_largest.first, d.base_largest.second));
  }
  // Written once every output's dtype is known (an integer-only operation is exact).
  text.replace(text.find("DETERMINISM\n"), 12,
               detail::determinism_toml(d.any_float_output, sol ? "SOL-ExecBench" : "flashinfer-bench"));
  text.replace(text.find("MAX_CASE_ELEMENTS\n"), 18, cap_line + "\n");
  if (!d.any_float_output) notes.push_back("every output is an integer: compared exactly");
}

// The value families over the data inputs, special values and [index_cases]; then the policy, which
// names the special values checked.
void definition_families_and_policy(const Axes& axes_read, const DefTensorsRead& d, const detail::ErrorModels& models, bool sol,
                                    std::string& text, std::vector<std::string>& notes) {
  const std::vector<std::string> special = detail::definition_families(d.offered, d.output_shapes, axes_read.var, axes_read.value, axes_read.derived, d.tensor_shapes, models.widest_atol,
                                                           models.defaulted && detail::contraction_length(d.shape_of) > 1, text, notes);
  text += detail::definition_index_cases(d.shape_of, notes);
  std::vector<std::string> never;  // floating inputs the special families leave alone (weights, tables)
  for (const auto& x : d.offered)
    if (text.find("\n" + x.name + " = { specials") == std::string::npos) never.push_back(x.name);
  const std::string policy =
      std::string("Imported from a ") + (sol ? "SOL-ExecBench" : "flashinfer-bench") + " Definition: the reference is its PyTorch run(); " +
      (sol ? "an element passes within atol + rtol |ref|, as SOL-ExecBench judges." : "an element fails only past both atol and rtol |ref|, as flashinfer-bench judges.") +
      (models.policy.empty() ? "" : " " + models.policy) + " " + detail::special_values_policy(special, never);
  text.replace(text.find("POLICY_TEXT_LATER"), 17, "policy = " + toml_quoted(policy));
}

// The benchmark shapes: the workloads that give every var axis and lie in the contract's domain, the
// first eight distinct ones.
std::vector<std::string> definition_bench_shapes(const Workloads& workloads, const Axes& axes_read, const detail::DefinitionRewrite& rw,
                                                 std::vector<std::string>& notes) {
  std::vector<std::string> shapes;
  auto workload_values = [&](const auto& wl) {
    std::map<std::string, std::int64_t> v = axes_read.value;
    for (const auto& a : axes_read.var) v[a] = *workload_axis(wl, a);
    return v;
  };
  for (const auto& w : workloads) {
    std::vector<std::string> parts;
    for (const auto& a : axes_read.var)
      if (auto v = workload_axis(w, a)) parts.push_back(fmt::format("{}={}", a, *v));
    if (parts.size() != axes_read.var.size()) continue;
    const std::string sh = fmt::format("{}", fmt::join(parts, ","));
    // An axis an equality constraint fixes (now derived) must have that value in the workload too.
    std::string differs;
    for (const auto& [x, e] : axes_read.derived)
      if (rw.equal_to.count(x))
        if (auto given = workload_axis(w, x); given && *given != e.eval(workload_values(w)))
          differs = fmt::format("it gives {} = {}, the constraint fixes {} = {}", x, *given, x, e.eval(workload_values(w)));
    if (!differs.empty()) {
      notes.push_back(fmt::format("{}: workload {} is not a benchmark shape: {}", w.first, sh, differs));
      continue;
    }
    // A benchmark shape must lie in the contract's domain (the loader checks it): a workload the
    // Definition's own constraints or derived axes exclude is named and left out.
    if (const std::string why = outside_domain(workload_values(w), axes_read.derived, axes_read.constraints); !why.empty()) {
      notes.push_back(fmt::format("{}: workload {} is not a benchmark shape: {}", w.first, sh, why));
      continue;
    }
    if (std::find(shapes.begin(), shapes.end(), sh) == shapes.end() && shapes.size() < 8) shapes.push_back(sh);
  }
  return shapes;
}

// The integer inputs' sources: run()'s uses of them (one static read for all), the input generator
// when the Definition names one its reference defines, and the inputs its workloads mark custom.
IntegerSources integer_sources(const json& def, const detail::DefinitionRewrite& rw, const Workloads& workloads, const std::string& inputs_maker) {
  IntegerSources s;
  s.def = &def;
  s.uses = rw.index_uses;  // read with the rewrite (import_integer_inputs.cpp)
  s.why_no_read = rw.why_no_read;
  const std::string source = def["reference"].get<std::string>();
  if (detail::is_plain_name(inputs_maker) && source.find("def " + inputs_maker + "(") != std::string::npos) s.entrypoint = inputs_maker;
  for (const auto& w : workloads) {
    const json& b = workload_body(w);
    if (!b.contains("inputs") || !b["inputs"].is_object()) continue;
    for (const auto& [tn, x] : b["inputs"].items())
      if (x.is_object() && x.contains("type") && x["type"] == "custom") s.custom.insert(tn);
  }
  return s;
}

}  // namespace

DefinitionImport import_definition(const DefinitionImportOptions& o) {
  const fs::path& f = o.definition;
  const detail::JsonIn in(f.string());
  std::string def_name;
  json def = read_definition(f, def_name);
  // A reference that samples has no element-by-element expected output (import_sampling.cpp).
  // SOL-ExecBench's custom_inputs_entrypoint names a function of the source that draws the inputs: not the reference.
  const std::string inputs_maker = def.contains("custom_inputs_entrypoint") && def["custom_inputs_entrypoint"].is_string()
                                       ? def["custom_inputs_entrypoint"].get<std::string>()
                                       : "";
  if (const std::string where = detail::sampling_call_reached(def["reference"].get<std::string>(), "run",
                                                                detail::is_plain_name(inputs_maker) ? inputs_maker : "");
      !where.empty())
    refuse(f, "reference", detail::sampling_refusal(where));
  DefinitionImport r;
  r.out = o.out;
  r.name = definition_contract_name(def_name);
  // One import per value of a scalar the workloads vary: each under its own name (--scalar eps=1e-6:
  // NAME_eps_1e_6), so the imports load side by side.
  for (const auto& [scalar, value] : o.scalars) r.name += definition_contract_name("_" + scalar + "_" + value);
  // Literal dims, 0-d tensors, shape reads and equalities in constraints, boolean scalars.
  const detail::DefinitionRewrite rw = detail::rewrite_definition(f, def);
  r.notes = rw.notes;

  // ---- workloads: axis values, scalar values, tolerances ----
  Workloads workloads;
  if (!o.workloads.empty()) {
    workloads = detail::read_workloads(o.workloads, def_name);
    r.workloads = int(workloads.size());
    if (workloads.empty()) refuse(o.workloads, "(lines)", fmt::format("no workload of definition \"{}\"", def_name));
  }
  workloads = detail::one_value_per_scalar(f, o.workloads, workloads, def, rw.bool_scalars, o.scalars, r.notes);
  const Workloads sized = detail::sized_workloads(workloads, def, r.notes);  // those without an empty tensor give the shapes
  // ---- [contract] (its policy, determinism and case cap filled in later), axes, tensors ----
  std::ostringstream t;
  t << "# Imported by `kqual import-definition` from " << f.filename().string()
    << (o.workloads.empty() ? "" : " and " + o.workloads.filename().string()) << ".\n"
    << "# Translation notes: docs/declared-contracts.md, \"Importing a Definition\".\n";
  t << "[contract]\nname = " << toml_quoted(r.name) << "\nsummary = "
    << toml_quoted(in.string_or(def, "", "description", "imported Definition " + def_name)) << "\n";
  t << "POLICY_TEXT\nDETERMINISM\nMAX_CASE_ELEMENTS\n";
  Axes axes_read = translate_axes(f, in, def, sized, t, r.notes);
  IntegerSources ints = integer_sources(def, rw, workloads, inputs_maker);
  DefTensorsRead tensors_read = definition_tensors(o, in, def, workloads, axes_read, rw, ints, t);
  r.notes.insert(r.notes.end(), tensors_read.notes.begin(), tensors_read.notes.end());
  for (const auto& [c, e] : axes_read.constraints)  // parsed with the axes
    t << "[[constraints]]\nexpr = " << toml_quoted(kqual_expr_text(c)) << "\nreason = " << toml_quoted("the Definition's constraint " + c) << "\n\n";

  // ---- tolerance → the error model ----
  bool sol = false;
  const detail::SourceTolerance src = definition_tolerance(o, in, def, workloads, sol, r.notes);
  // Per floating output: the source's terms, else kqual's default from the output dtype and the
  // reduction length (import_definition_parts.cpp); axes at their widest workload values.
  detail::DefShape& shape_of = tensors_read.shape_of;
  shape_of.var = axes_read.var;
  shape_of.base = axes_read.value;
  shape_of.widest = axes_read.value;
  for (const auto& [x, e] : axes_read.derived) shape_of.derived_reads[x] = e.variables();
  for (const auto& [tn, uses] : ints.uses)
    for (const auto& u : uses)
      if (u.how == "index" && def["inputs"][u.tensor]["shape"].is_array() && u.dim < int(def["inputs"][u.tensor]["shape"].size()))
        shape_of.gathered.insert(def["inputs"][u.tensor]["shape"][std::size_t(u.dim)].get<std::string>());
  for (const auto& w : sized)
    for (const auto& a : axes_read.var)
      if (auto v = workload_axis(w, a)) shape_of.widest[a] = std::max(shape_of.widest[a], *v);
  const detail::ErrorModels models = detail::definition_error_models(shape_of, src);
  for (const auto& n : models.notes) r.notes.push_back(n);
  std::string text = t.str();
  definition_fill_markers(f, axes_read, models, tensors_read, sol, text, r.notes);
  definition_families_and_policy(axes_read, tensors_read, models, sol, text, r.notes);

  // ---- cost, bench, reference ----
  text += "[cost]\nflops = \"0\"   # not in the Definition: give the operation's count to place it on the FMA roofline\n\n";
  r.bench_shapes = definition_bench_shapes(sized, axes_read, rw, r.notes);
  if (!r.bench_shapes.empty()) {
    std::vector<std::string> q;
    for (const auto& s : r.bench_shapes) q.push_back(toml_quoted(s));
    text += "[bench]\nshapes = [" + fmt::format("{}", fmt::join(q, ", ")) + "]   # the workloads\n\n";
  }
  const std::string precision = detail::reference_precision(def["reference"].get<std::string>(), "run");
  // 0-d tensors and boolean scalars reach run() through kqual_run, which gives them back their form.
  std::vector<std::string> output_names;
  for (const auto& [tn, spec] : def["outputs"].items()) output_names.push_back(tn);
  const std::string adapter = detail::reference_adapter_py(rw, output_names);
  text += fmt::format("[reference]\npython = \"reference.py\"\nfunction = \"{}\"\nkind = \"torch\"\n", adapter.empty() ? "run" : "kqual_run") +
          "# read from run()'s source: what it computes in here (kqual's reference process hands it float64 tensors)\nprecision = " +
          toml_quoted(precision) + "\n";
  const std::string generator = ints.any_generated ? detail::generator_adapter_py(ints.entrypoint) : "";
  if (ints.any_generated)
    text += "\n# The Definition's own input generator (custom_inputs_entrypoint) makes the inputs with source = \"generator\";\n"
            "# kqual draws the others.\n[generator]\npython = \"reference.py\"\nfunction = \"kqual_inputs\"\nkind = \"torch\"\n";
  r.notes.push_back("the reference computes in " + precision);
  r.contract_toml = text;

  // ---- written whole or not at all, and loaded back ----
  detail::write_imported_contract(
      o.out, {{"contract.toml", text},
              {"reference.py", "# The Definition's reference, as imported (kind = \"torch\": run in kqual's reference process).\n" +
                                   def["reference"].get<std::string>() + "\n" + adapter + generator}});  // a string: read_definition
  // The cases the written contract's plan leaves out (its policy lists them; declared_cases.cpp).
  const std::string policy_text = load_declared_contract(o.out).numerical_policy();
  if (const auto at = policy_text.find("Cases not run: "); at != std::string::npos) r.notes.push_back(policy_text.substr(at));
  return r;
}

}  // namespace kqual::contract
