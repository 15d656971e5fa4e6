// What a Definition may say that kqual's declared contracts hold another way (import_definition_parts.hpp),
// rewritten in the Definition before its translation: literal dims and 0-d tensors as constant axes,
// a tensor's `.shape[i]` in a constraint as its axis, a var axis an equality constraint fixes as a
// derived axis, boolean scalars as i32 0/1; and the reference adapter that hands run() what the
// Definition promised it (0-d tensors, Python bools).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "import_definition_parts.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::detail {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void rewrite_refuse(const fs::path& f, const std::string& key, const std::string& why) {
  throw_error(ErrorKind::input, fmt::format("{}: {}: {}", f.string(), key, why));
}

bool rewrite_all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::string rewrite_trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Every name the Definition uses (axes, inputs, outputs): a constant axis added here takes another.
std::set<std::string> definition_names(const json& def) {
  std::set<std::string> names;
  for (const char* group : {"axes", "inputs", "outputs"})
    for (const auto& [n, v] : def[group].items()) names.insert(n);
  return names;
}

// SOL-ExecBench allows a literal size in a shape ("1", as its `axis_name.isdigit()` reads it) and a
// 0-d tensor (shape []): each becomes a constant axis c<N> (a name no Definition entry has), a 0-d
// tensor one element along c1, listed in zero_d for the reference adapter.
void literal_dims(const fs::path& f, json& def, DefinitionRewrite& rw) {
  std::set<std::string> names = definition_names(def);
  std::map<std::int64_t, std::string> axis_of;
  std::set<std::int64_t> literals;  // sizes written as numbers (0-d tensors add c1 without one)
  auto axis_for = [&](std::int64_t v) {
    if (auto it = axis_of.find(v); it != axis_of.end()) return it->second;
    std::string n = fmt::format("c{}", v);
    while (names.count(n)) n += "_";
    names.insert(n);
    def["axes"][n] = json{{"type", "const"}, {"value", v}};
    return axis_of[v] = n;
  };
  for (const char* group : {"inputs", "outputs"})
    for (auto& [tn, spec] : def[group].items()) {
      if (!spec.contains("shape") || !spec["shape"].is_array()) continue;
      json& shape = spec["shape"];
      const std::string key = fmt::format("{}.{}.shape", group, tn);
      if (shape.empty()) {
        rw.zero_d.insert(tn);
        shape.push_back(axis_for(1));
        rw.notes.push_back(fmt::format("{}: [] (a 0-d tensor): held as one element along the constant axis {}; the reference "
                                       "receives it 0-d again", key, axis_of[1]));
        continue;
      }
      for (std::size_t i = 0; i < shape.size(); ++i) {
        if (!shape[i].is_string() || !rewrite_all_digits(shape[i].get<std::string>())) continue;
        const std::string lit = shape[i].get<std::string>();
        const std::int64_t v = lit.size() > 10 ? std::int64_t(1) << 40 : std::stoll(lit);
        if (v == 0)
          rewrite_refuse(f, fmt::format("{}[{}]", key, i),
                         "\"0\": a zero-sized dim (an empty tensor): kqual's axes are at least 1 (the declared-contract engine runs "
                         "no empty tensor)");
        if (v > 2147483647) rewrite_refuse(f, fmt::format("{}[{}]", key, i), fmt::format("\"{}\" is past 2^31 - 1, the sizes an axis takes", lit));
        shape[i] = axis_for(v);
        literals.insert(v);
      }
    }
  for (const auto& [v, n] : axis_of)
    if (literals.count(v)) rw.notes.push_back(fmt::format("a literal size {} in a shape: the constant axis {} (value = {})", v, n, v));
}

// `T.shape[i]` in a constraint is the axis at position i of tensor T's shape.
void shape_reads(json& def, DefinitionRewrite& rw) {
  if (!def.contains("constraints") || !def["constraints"].is_array()) return;
  static const std::regex read(R"(([A-Za-z_][A-Za-z0-9_]*)\.shape\[\s*(-?[0-9]+)\s*\])");
  for (auto& c : def["constraints"]) {
    if (!c.is_string()) continue;  // refused by name when the constraints are read
    const std::string text = c.get<std::string>();
    std::string out;
    auto from = text.cbegin();
    bool changed = false;
    for (std::sregex_iterator it(text.begin(), text.end(), read), end; it != end; ++it) {
      const std::string tn = (*it)[1];
      const json* spec = nullptr;
      for (const char* group : {"inputs", "outputs"})
        if (def[group].contains(tn)) spec = &def[group][tn];
      if (!spec || !spec->contains("shape") || !(*spec)["shape"].is_array()) continue;
      const json& shape = (*spec)["shape"];
      std::int64_t i = std::stoll((*it)[2]);
      if (i < 0) i += std::int64_t(shape.size());
      if (i < 0 || i >= std::int64_t(shape.size()) || !shape[std::size_t(i)].is_string()) continue;
      out.append(from, (*it)[0].first);
      out += shape[std::size_t(i)].get<std::string>();
      from = (*it)[0].second;
      changed = true;
    }
    if (!changed) continue;
    out.append(from, text.cend());
    rw.notes.push_back(fmt::format("constraint \"{}\" reads tensor shapes: written as \"{}\"", text, out));
    c = out;
  }
}

// `e` with every axis an equality already made derived replaced by its expression (parenthesised), so
// that each derived expression reads var and constant axes only (the workloads' check and the base
// evaluate it over those).
std::string substitute_derived(std::string e, const std::map<std::string, std::string>& equal_to) {
  for (const auto& [axis, expr] : equal_to)
    e = std::regex_replace(e, std::regex("\\b" + axis + "\\b"), "(" + expr + ")");
  return e;
}

// A constraint "X == E" with X a var axis and E an expression over other var axes and constant axes
// fixes X: it becomes a derived axis (expr = E), so that every case, not only the base, satisfies it
// (chosen independently, flashinfer-bench's `len_indptr == batch_size + 1` would hold at no case that
// varies one axis). One equality per axis; an axis the Definition's own expr axes read stays as it is.
// Equalities chain: E may read an axis an earlier equality made derived (its expression is put in),
// and an axis an earlier derived expression reads may still be fixed by a later equality (it is put
// into that expression), so `l == b + 1` and `p == 2 * l` make both l and p follow b in either order.
void equality_axes(json& def, DefinitionRewrite& rw) {
  if (!def.contains("constraints") || !def["constraints"].is_array()) return;
  auto type_of = [&](const std::string& a) {
    const json& ax = def["axes"][a];
    return ax.is_object() && ax.contains("type") && ax["type"].is_string() ? ax["type"].get<std::string>() : std::string();
  };
  std::set<std::string> read_by_expr;
  for (const auto& [an, ax] : def["axes"].items())
    if (type_of(an) == "expr" && ax.contains("expression") && ax["expression"].is_string()) try {
        for (const auto& v : Expr::parse(kqual_expr_text(ax["expression"].get<std::string>())).variables()) read_by_expr.insert(v);
      } catch (const Error&) {
      }
  for (const auto& c : def["constraints"]) {
    if (!c.is_string()) continue;
    const std::string text = kqual_expr_text(c.get<std::string>());
    const auto eq = text.find("==");
    if (eq == std::string::npos || text.find("==", eq + 2) != std::string::npos) continue;
    if (text.find("&&") != std::string::npos || text.find("||") != std::string::npos) continue;
    for (auto [x, e] : {std::pair{rewrite_trimmed(text.substr(0, eq)), rewrite_trimmed(text.substr(eq + 2))}, {rewrite_trimmed(text.substr(eq + 2)), rewrite_trimmed(text.substr(0, eq))}}) {
      if (!def["axes"].contains(x) || type_of(x) != "var" || read_by_expr.count(x) || rw.equal_to.count(x)) continue;
      Expr parsed;
      try {
        e = substitute_derived(e, rw.equal_to);
        parsed = Expr::parse(e);
      } catch (const Error&) {
        continue;
      }
      // After the substitution E reads no derived axis; reading X itself is a cycle (a == b + 1 and b == a - 1).
      const auto vars = parsed.variables();
      const bool over_axes = std::all_of(vars.begin(), vars.end(), [&](const std::string& v) {
        return v != x && def["axes"].contains(v) && (type_of(v) == "var" || type_of(v) == "const");
      });
      if (!over_axes || vars.empty()) continue;
      def["axes"][x] = json{{"type", "expr"}, {"expression", e}};
      rw.equal_to[x] = e;
      rw.notes.push_back(fmt::format("axis {}: the constraint \"{}\" fixes it: written as a derived axis (expr = \"{}\") so that every "
                                     "case satisfies the constraint; a workload giving another value for it is left out",
                                     x, c.get<std::string>(), e));
      for (auto& [y, ey] : rw.equal_to) {  // the axes already derived from X now follow what X follows
        if (y == x) continue;
        const std::string put = substitute_derived(ey, {{x, e}});
        if (put == ey) continue;
        ey = put;
        def["axes"][y]["expression"] = put;
        rw.notes.push_back(fmt::format("axis {}: expr = \"{}\" (axis {} is derived too)", y, put, x));
      }
      break;
    }
  }
}

}  // namespace

std::string kqual_expr_text(std::string text) {
  for (auto [from, to] : {std::pair{" and ", " && "}, {" or ", " || "}, {"not ", "!"}, {"//", "/"}})  // '/' floors non-negative integers
    for (std::size_t p; (p = text.find(from)) != std::string::npos;) text.replace(p, std::string(from).size(), to);
  return text;
}

DefinitionRewrite rewrite_definition(const fs::path& f, json& def) {
  DefinitionRewrite rw;
  literal_dims(f, def, rw);
  shape_reads(def, rw);
  value_constraints(def, rw);  // import_integer_inputs.cpp
  equality_axes(def, rw);
  bool any_tensor_input = false;
  std::vector<std::string> scalars;
  for (auto& [tn, spec] : def["inputs"].items()) {
    const bool scalar = !spec.contains("shape") || spec["shape"].is_null();
    any_tensor_input |= !scalar;
    // Packed fp4 (PyTorch's float4_e2m1fn_x2: one byte, two e2m1 values): every byte is a valid pair
    // (+-0, 0.5, 1, 1.5, 2, 3, 4, 6), so kqual holds it as u8 bytes drawn over all 256 patterns and
    // kqual_run views them as float4_e2m1fn_x2 for run().
    if (!scalar && spec.contains("dtype") && spec["dtype"] == "float4_e2m1fn_x2") {
      rw.fp4_inputs.insert(tn);
      spec["dtype"] = "uint8";
      rw.notes.push_back(fmt::format("inputs.{}: float4_e2m1fn_x2 (two e2m1 values per byte, every byte a valid pair): held as u8 "
                                     "bytes drawn over all 256 patterns; the reference receives them viewed as torch.float4_e2m1fn_x2",
                                     tn));
    }
    if (!scalar) continue;
    scalars.push_back(tn);
    // A Python bool the reference receives: held as an i32 scalar 0 or 1 (what a kernel's bool
    // parameter reads on a little-endian device) and given back to run() as a bool.
    if (spec.contains("dtype") && spec["dtype"] == "bool") {
      rw.bool_scalars.insert(tn);
      spec["dtype"] = "int32";
      rw.notes.push_back(fmt::format("inputs.{}: a boolean scalar: held as an i32 scalar (0 or 1); the reference receives a Python bool", tn));
    }
  }
  if (!any_tensor_input)
    rewrite_refuse(f, "inputs",
                   scalars.empty() ? std::string("no input: a declared contract generates at least one input tensor for the kernel")
                                   : fmt::format("every input is a scalar ({}): the declared-contract engine needs at least one input "
                                                 "tensor (it generates the inputs a case gives the kernel); not expressible yet",
                                                 fmt::join(scalars, ", ")));
  return rw;
}

std::string reference_adapter_py(const DefinitionRewrite& rw, const std::vector<std::string>& outputs) {
  if (rw.zero_d.empty() && rw.bool_scalars.empty() && rw.fp4_inputs.empty()) return "";
  auto py_list = [](const auto& names) {
    std::vector<std::string> q;
    for (const auto& n : names) q.push_back("\"" + n + "\"");
    return fmt::format("[{}]", fmt::join(q, ", "));
  };
  std::vector<std::string> zero_d_out;
  for (const auto& o : outputs)
    if (rw.zero_d.count(o)) zero_d_out.push_back(o);
  return fmt::format(
      "\n\n# ---- added by `kqual import-definition`: kqual holds what the Definition declares 0-d as one element and its\n"
      "# boolean scalars as i32 0/1; kqual_run (the contract's [reference] function) hands run() the 0-d tensors and\n"
      "# Python bools it was written for, its packed fp4 inputs (held as u8 bytes) as float4_e2m1fn_x2, and its 0-d\n"
      "# outputs back as one element.\n"
      "import inspect as _kqual_inspect\n\n"
      "_KQUAL_ZERO_D = {}\n_KQUAL_BOOL = {}\n_KQUAL_FP4 = {}\n_KQUAL_OUTPUTS = {}\n_KQUAL_ZERO_D_OUT = {}\n\n\n"
      "def kqual_run(**kw):\n"
      "    params = _kqual_inspect.signature(run).parameters\n"
      "    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):\n"
      "        kw = {{k: v for k, v in kw.items() if k in params}}\n"
      "    for n in _KQUAL_ZERO_D:\n"
      "        if n in kw:\n"
      "            kw[n] = kw[n].reshape(())\n"
      "    for n in _KQUAL_BOOL:\n"
      "        if n in kw:\n"
      "            kw[n] = bool(kw[n])\n"
      "    for n in _KQUAL_FP4:\n"
      "        if n in kw:\n"
      "            import torch as _kqual_torch\n"
      "            kw[n] = kw[n].to(_kqual_torch.uint8).view(_kqual_torch.float4_e2m1fn_x2)  # handed over as int64\n"
      "    out = run(**kw)\n"
      "    if not _KQUAL_ZERO_D_OUT:\n"
      "        return out\n"
      "    if isinstance(out, dict):\n"
      "        return {{k: (_kqual_one(v) if k in _KQUAL_ZERO_D_OUT else v) for k, v in out.items()}}\n"
      "    if isinstance(out, (tuple, list)) and len(_KQUAL_OUTPUTS) > 1:\n"
      "        return [_kqual_one(v) if n in _KQUAL_ZERO_D_OUT else v for n, v in zip(_KQUAL_OUTPUTS, out)]\n"
      "    return _kqual_one(out)\n\n\n"
      "def _kqual_one(v):\n"
      "    return v.reshape(1) if hasattr(v, \"reshape\") else [v]\n",
      py_list(rw.zero_d), py_list(rw.bool_scalars), py_list(rw.fp4_inputs), py_list(outputs), py_list(zero_d_out));
}

}  // namespace kqual::contract::detail
