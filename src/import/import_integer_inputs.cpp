// Integer inputs of a Definition (indices, offsets, lengths: import_definition_parts.hpp): what their
// values are, from the problem itself — its input generator (SOL-ExecBench's custom_inputs_entrypoint,
// run as the contract's [generator]), a constraint on their values (`total_q == qo_indptr[-1].item()`:
// offsets ending at total_q), or how run() uses them (a static read of its source: an index into a dim
// of another input, a slice stop along one). Nothing is guessed from names or descriptions; an input
// none of these explains is refused by name.
#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

#include "import_definition_parts.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/process.hpp"

namespace kqual::contract::detail {
namespace fs = std::filesystem;

namespace {

// The static read, in Python's own parser (stdlib only). For each integer input: where run() uses its
// element values (the input itself, a subscript or slice of it, a cast, .item(), int(), a for loop over
// it, a name assigned from any of these) as an index into, a slice stop along, or both bounds of a
// slice along (offsets) a dim of another input (an integer one too) or of a name assigned from one
// without moving that dim (casts, .clone(), .squeeze(k >= 1) for dim 0).
// Arithmetic on the values ends the read: `topk_ids >> 16` says nothing of the range.
constexpr const char* kIndexRead = R"PY(
import ast, json, sys
cfg = json.loads(sys.argv[1])
KEEP = {"to", "float", "double", "half", "bfloat16", "contiguous", "clone", "detach", "cpu", "cuda", "long", "int"}
def main():
    tree = ast.parse(cfg["source"])
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == cfg["function"]), None)
    if fn is None:
        return {}
    holds = {i: i for i in cfg["ints"]}
    views = {t: (t, "all") for t in cfg["tensors"] + cfg["ints"]}
    def int_source(e):
        while True:
            if isinstance(e, ast.Name):
                return holds.get(e.id)
            if isinstance(e, ast.Subscript):
                e = e.value
            elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in KEEP | {"item", "tolist", "flatten"}:
                e = e.func.value
            elif isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("int", "enumerate", "list") and len(e.args) == 1:
                e = e.args[0]
            else:
                return None
    def view_source(e):
        if isinstance(e, ast.Name):
            return views.get(e.id)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
            base = view_source(e.func.value)
            if base is None:
                return None
            if e.func.attr in KEEP:
                return base
            a = e.args[0] if len(e.args) == 1 else None
            if e.func.attr == "squeeze" and isinstance(a, ast.Constant) and isinstance(a.value, int) and a.value >= 1:
                return (base[0], "first")
        return None
    def bind(target, value):
        i = int_source(value)
        if isinstance(target, ast.Name):
            if i:
                holds[target.id] = i
            elif view_source(value):
                views[target.id] = view_source(value)
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                and value.func.id == "enumerate" and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name) and i:
            holds[target.elts[1].id] = i
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            bind(node.targets[0], node.value)
        elif isinstance(node, ast.For):
            bind(node.target, node.iter)
    written = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(t, ast.Subscript):
                    written.add(id(t))
    uses = {}
    def note(i, t, dim, how, w, line):
        uses.setdefault(i, []).append({"tensor": t, "dim": dim, "how": how, "written": w, "line": line})
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript):
            base = view_source(node.value)
            if base is None:
                continue
            idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for k, e in enumerate(idx):
                if k > 0 and base[1] != "all":
                    break
                if isinstance(e, ast.Slice):
                    i = int_source(e.upper) if e.upper is not None and e.step is None else None
                    lo = int_source(e.lower) if e.lower is not None else None
                    if i and e.lower is None:
                        note(i, base[0], k, "stop", id(node) in written, node.lineno)
                    elif i and lo == i:
                        note(i, base[0], k, "range", id(node) in written, node.lineno)
                    continue
                i = int_source(e)
                if i:
                    note(i, base[0], k, "index", id(node) in written, node.lineno)
    return uses
def relations():
    # run() stating an axis from another tensor's dim: `batch_size = int(qo_indptr.shape[0]) - 1`.
    tree = ast.parse(cfg["source"])
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == cfg["function"]), None)
    def shape_read(e):  # T.shape[k], int(T.shape[k]): (T, k)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "int" and len(e.args) == 1:
            e = e.args[0]
        if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and e.value.attr == "shape" \
                and isinstance(e.value.value, ast.Name) and isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, int):
            return (e.value.value.id, e.slice.value)
        return None
    out, shapes = [], {}
    for node in (ast.walk(fn) if fn else []):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        x, e, c = node.targets[0].id, node.value, 0
        if shape_read(e):
            shapes[x] = shape_read(e)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)) and isinstance(e.right, ast.Constant) \
                and isinstance(e.right.value, int):
            c, e = (e.right.value if isinstance(e.op, ast.Add) else -e.right.value), e.left
        if x not in cfg["axes"]:
            continue
        read = shape_read(e) or (shapes.get(e.id) if isinstance(e, ast.Name) else None)
        if read:
            out.append({"axis": x, "tensor": read[0], "dim": read[1], "plus": c, "line": node.lineno})
        elif isinstance(e, ast.Name) and e.id in cfg["axes"] and c != 0:
            out.append({"axis": x, "other_axis": e.id, "plus": c, "line": node.lineno})
    return out
def asserted():
    # run()'s own checks of its inputs, `assert num_kv_indices == kv_indptr[-1].item()` and `assert
    # len_indptr == batch_size + 1`: an equality over axis names (as run() binds them), integer constants,
    # + - *, and an integer input's last value; at least one var axis or last value in it.
    tree = ast.parse(cfg["source"])
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == cfg["function"]), None)
    def bare(e):  # int(x) is x
        while isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "int" and len(e.args) == 1:
            e = e.args[0]
        return e
    def last_value(e):
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "item" and not e.args:
            e = e.func.value
        return isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and e.value.id in cfg["ints"] \
            and isinstance(e.slice, ast.UnaryOp) and isinstance(e.slice.op, ast.USub) \
            and isinstance(e.slice.operand, ast.Constant) and e.slice.operand.value == 1
    def norm(e):  # the expression with int() wrappers removed, or None where it is not one kqual states
        e = bare(e)
        if isinstance(e, ast.Name) and e.id in cfg["axes"]:
            return e
        if isinstance(e, ast.Constant) and type(e.value) is int:
            return e
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
            l, r = norm(e.left), norm(e.right)
            return ast.BinOp(left=l, op=e.op, right=r) if l is not None and r is not None else None
        if last_value(e):
            v = e.func.value if isinstance(e, ast.Call) else e
            return ast.Call(func=ast.Attribute(value=v, attr="item", ctx=ast.Load()), args=[], keywords=[])
        return None
    out = []
    for node in (ast.walk(fn) if fn else []):
        t = node.test if isinstance(node, ast.Assert) else None
        if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq)):
            continue
        l, r = norm(t.left), norm(t.comparators[0])
        if l is None or r is None:
            continue
        e = ast.Compare(left=l, ops=[ast.Eq()], comparators=[r])
        if not any((isinstance(n, ast.Name) and n.id in cfg["var_axes"]) or (isinstance(n, ast.Attribute) and n.attr == "item")
                   for n in ast.walk(e)):
            continue
        out.append({"text": ast.unparse(e), "line": node.lineno})
    return out
try:
    print(json.dumps({"ok": True, "uses": main(), "relations": relations(), "asserted": asserted()}))
except SyntaxError as e:
    print(json.dumps({"ok": False, "error": "run() does not parse as Python: %s" % e}))
)PY";

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

namespace {

// run()'s statements of an axis as another tensor's dim plus a constant (`batch_size =
// int(qo_indptr.shape[0]) - 1`), where the two are different var axes no constraint ties: written as
// that equality constraint (equality_axes makes one of them derived), so no case gives run() a
// batch_size its indexing goes past.
void relation_constraints(json& def, const json& relations, DefinitionRewrite& rw) {
  auto is_var = [&](const std::string& a) {
    return def["axes"].contains(a) && def["axes"][a].is_object() && def["axes"][a].value("type", "") == "var";
  };
  for (const auto& r : relations) {
    const std::string x = r.at("axis").get<std::string>();
    std::string l, from;  // the other axis, and where run() read it
    if (r.contains("other_axis")) {
      l = r.at("other_axis").get<std::string>();
      from = "axis " + l;
    } else {
      const std::string tn = r.at("tensor").get<std::string>();
      const json* spec = nullptr;
      for (const char* group : {"inputs", "outputs"})
        if (def[group].contains(tn)) spec = &def[group][tn];
      const int dim = r.at("dim").get<int>();
      if (!spec || !spec->contains("shape") || !(*spec)["shape"].is_array() || dim < 0 || dim >= int((*spec)["shape"].size()) ||
          !(*spec)["shape"][std::size_t(dim)].is_string())
        continue;
      l = (*spec)["shape"][std::size_t(dim)].get<std::string>();
      from = tn + "'s shape";
    }
    if (l == x || !is_var(x) || !is_var(l)) continue;
    bool tied = false;  // a constraint already relating the two
    for (const auto& c : def["constraints"])
      if (c.is_string() && c.get<std::string>().find(x) != std::string::npos && c.get<std::string>().find(l) != std::string::npos) tied = true;
    if (tied) continue;
    const std::int64_t plus = r.at("plus").get<std::int64_t>();
    const std::string text = plus == 0 ? fmt::format("{} == {}", x, l) : fmt::format("{} == {} {} {}", x, l, plus > 0 ? "+" : "-", std::llabs(plus));
    def["constraints"].push_back(text);
    rw.notes.push_back(fmt::format("run() states {} from {} (line {}): the constraint \"{}\" added", x, from, r.at("line").get<int>(), text));
  }
}

// run()'s asserts of an equality between axes (and an integer input's last value) that the Definition
// does not state as a constraint: the reference refuses any case that breaks them, so they are the
// Definition's constraints too (SOL-ExecBench's copies of flashinfer-trace Definitions drop the
// `constraints` list and keep the asserts).
void asserted_constraints(json& def, const json& asserted, DefinitionRewrite& rw) {
  auto spaced = [](std::string t) {
    t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == ' ' || c == '\t'; }), t.end());
    return t;
  };
  for (const auto& a : asserted) {
    const std::string text = a.at("text").get<std::string>();
    bool stated = false;
    for (const auto& c : def["constraints"]) stated = stated || (c.is_string() && spaced(c.get<std::string>()) == spaced(text));
    if (stated) continue;
    def["constraints"].push_back(text);
    rw.notes.push_back(fmt::format("run() asserts \"{}\" (line {}): added as a constraint (the reference refuses a case that breaks it)",
                                   text, a.at("line").get<int>()));
  }
}

}  // namespace

void value_constraints(json& def, DefinitionRewrite& rw) {
  // run()'s uses of the integer inputs and its statements of axes (one static read for both).
  std::vector<std::string> ints, tensors, axes, var_axes;
  for (const auto& [tn, spec] : def["inputs"].items()) {
    if (!spec.is_object() || !spec.contains("shape") || spec["shape"].is_null()) continue;
    const std::string dt = spec.contains("dtype") && spec["dtype"].is_string() ? spec["dtype"].get<std::string>() : "";
    (dt == "int32" || dt == "int64" || dt == "uint32" ? ints : tensors).push_back(tn);
  }
  for (const auto& [an, a] : def["axes"].items()) {
    axes.push_back(an);
    if (a.is_object() && a.contains("type") && a["type"].is_string() && a["type"].get<std::string>() == "var") var_axes.push_back(an);
  }
  json relations = json::array(), asserted = json::array();
  if (def["reference"].is_string())
    rw.index_uses = read_index_uses(def["reference"].get<std::string>(), "run", ints, tensors, axes, var_axes, rw.why_no_read,
                                    relations, asserted);
  if (!def.contains("constraints") || !def["constraints"].is_array()) def["constraints"] = json::array();
  asserted_constraints(def, asserted, rw);
  relation_constraints(def, relations, rw);
  // AXIS == T[-1].item() (or T[-1] == AXIS): a 1-D integer input whose last value is the axis.
  static const std::regex last(R"(^([A-Za-z_][A-Za-z0-9_]*)\[\s*-1\s*\](\.item\(\))?$)");
  json kept = json::array();
  for (const auto& c : def["constraints"]) {
    if (!c.is_string()) {
      kept.push_back(c);
      continue;
    }
    const std::string text = c.get<std::string>();
    const auto eq = text.find("==");
    bool taken = false;
    if (eq != std::string::npos && text.find("==", eq + 2) == std::string::npos)
      for (auto [a, b] : {std::pair{trimmed(text.substr(0, eq)), trimmed(text.substr(eq + 2))}, {trimmed(text.substr(eq + 2)), trimmed(text.substr(0, eq))}}) {
        std::smatch m;
        if (taken || !std::regex_match(b, m, last) || !def["axes"].contains(a)) continue;
        const std::string tn = m[1];
        if (!def["inputs"].contains(tn)) continue;
        const json& spec = def["inputs"][tn];
        const bool integer = spec.contains("dtype") && spec["dtype"].is_string() &&
                             (spec["dtype"] == "int32" || spec["dtype"] == "int64" || spec["dtype"] == "uint32");
        if (!integer || !spec.contains("shape") || !spec["shape"].is_array() || spec["shape"].size() != 1 || rw.offsets_of.count(tn)) continue;
        rw.offsets_of[tn] = a;
        rw.offsets_constraint[tn] = text;
        rw.notes.push_back(fmt::format("constraint \"{}\": '{}' holds offsets (0 first, never decreasing) ending at {}, declared as its "
                                       "values; kqual checks every case holds it", text, tn, a));
        taken = true;
      }
    if (!taken) kept.push_back(c);
  }
  def["constraints"] = kept;
}

std::map<std::string, std::vector<IndexUse>> read_index_uses(const std::string& source, const std::string& function,
                                                             const std::vector<std::string>& ints, const std::vector<std::string>& tensors,
                                                             const std::vector<std::string>& axes, const std::vector<std::string>& var_axes,
                                                             std::string& why_not, json& relations, json& asserted) {
  std::map<std::string, std::vector<IndexUse>> out;
  std::string py;
  try {
    py = reference_python();
  } catch (const Error& e) {
    why_not = e.what();
    return out;
  }
  const json cfg{{"source", source}, {"function", function}, {"ints", ints}, {"tensors", tensors}, {"axes", axes}, {"var_axes", var_axes}};
  const ProcessResult r = run_process(py, {"-c", kIndexRead, cfg.dump()}, {}, {}, 60);
  json j = json::parse(r.out, nullptr, false);
  if (!r.exited || r.exit_code != 0 || j.is_discarded() || !j.is_object()) {
    why_not = fmt::format("the static read of run() failed ({})", r.err.substr(0, 300));
    return out;
  }
  if (!j.value("ok", false)) {
    why_not = j.value("error", std::string("?"));
    return out;
  }
  relations = j.value("relations", json::array());
  asserted = j.value("asserted", json::array());
  for (const auto& [name, list] : j["uses"].items())
    for (const auto& u : list)
      out[name].push_back({u.at("tensor").get<std::string>(), u.at("dim").get<int>(), u.at("how").get<std::string>(),
                           u.at("written").get<bool>(), u.at("line").get<int>()});
  return out;
}

IntegerInputValues integer_input_values(const fs::path& f, const std::string& tn, const json& def, const DefinitionRewrite& rw,
                                        const std::map<std::string, std::vector<IndexUse>>& uses, const std::string& why_no_read,
                                        bool from_generator) {
  IntegerInputValues v;
  std::string dist, why;
  if (auto it = rw.offsets_of.find(tn); it != rw.offsets_of.end()) {
    dist = fmt::format("dist = \"offsets\", axis = \"{}\"", it->second);
    why = fmt::format("the constraint \"{}\"", rw.offsets_constraint.at(tn));
  } else if (auto u = uses.find(tn); u != uses.end() && !u->second.empty()) {
    std::set<std::pair<std::string, std::string>> kinds;  // (axis, how)
    bool written = false;
    const IndexUse* first = &u->second.front();
    for (const auto& x : u->second) {
      const json& shape = def["inputs"][x.tensor]["shape"];
      if (!shape.is_array() || x.dim >= int(shape.size()) || !shape[std::size_t(x.dim)].is_string()) continue;
      kinds.insert({shape[std::size_t(x.dim)].get<std::string>(), x.how});
      written |= x.written;
    }
    if (kinds.size() == 1) {
      const auto& [axis, how] = *kinds.begin();
      const json& ax = def["axes"][axis];
      if (how == "range") {
        dist = fmt::format("dist = \"offsets\", axis = \"{}\"", axis);
        why = fmt::format("run() slices {} along {} between two of its values (line {}): offsets into that axis (0 first, never "
                          "decreasing), made to end at its length so that every element along it is read",
                          first->tensor, axis, first->line);
      } else if (how == "index") {
        dist = fmt::format("dist = \"indices\", axis = \"{}\"{}", axis, written ? ", unique = true" : "");
        why = fmt::format("run() indexes {} along {} with it (line {}){}", first->tensor, axis, first->line,
                          written ? " and writes through it: no index twice, or the result would depend on the order of the writes" : "");
      } else if (ax.is_object() && ax.value("type", "") == "const" && ax.contains("value") && ax["value"].is_number_integer()) {
        dist = fmt::format("dist = \"int\", lo = 1, hi = {}", ax["value"].get<std::int64_t>());
        why = fmt::format("run() slices {} along {} up to it (line {}): a length, at least one element kept", first->tensor, axis,
                          first->line);
      }
    }
    if (dist.empty()) {
      std::vector<std::string> seen;
      for (const auto& [axis, how] : kinds)
        seen.push_back(fmt::format("{} along {}", how == "index" ? "an index" : how == "range" ? "a slice's bounds" : "a slice stop", axis));
      if (!from_generator)
        throw_error(ErrorKind::input, fmt::format("{}: inputs.{}.dtype: integer input '{}': run() uses its values as {}: no one range "
                                                  "states them; declare its values by hand (docs/declared-contracts.md, values)",
                                                  f.string(), tn, tn, fmt::join(seen, " and as ")));
    }
  }
  if (from_generator) {
    v.values = "{ source = \"generator\", " + (dist.empty() ? std::string("dist = \"any\"") : dist) + " }";
    v.comment = dist.empty() ? "made by the Definition's custom_inputs_entrypoint (kqual checks its dtype and shape)"
                             : "made by the Definition's custom_inputs_entrypoint; kqual checks them against " + why;
    v.note = fmt::format("input '{}': from the Definition's input generator (custom_inputs_entrypoint){}", tn,
                         dist.empty() ? "" : ", checked as " + dist + " (" + why + ")");
    return v;
  }
  if (dist.empty())
    throw_error(ErrorKind::input,
                fmt::format("{}: inputs.{}.dtype: integer input '{}': what its values are is not in the Definition — no input generator "
                            "(SOL-ExecBench's custom_inputs_entrypoint), no constraint on its values, and run() never uses them as an "
                            "index into or a slice stop along another input{}; declare its values by hand (docs/declared-contracts.md, "
                            "values)",
                            f.string(), tn, tn, why_no_read.empty() ? "" : " (" + why_no_read + ")"));
  v.values = "{ " + dist + " }";
  v.comment = "from " + why;
  v.note = fmt::format("input '{}': {} (from {})", tn, dist, why);
  return v;
}

std::string generator_adapter_py(const std::string& entrypoint) {
  return fmt::format(
      "\n\n# kqual's [generator]: the Definition's custom_inputs_entrypoint, called as SOL-ExecBench's evaluator calls it (every\n"
      "# axis and scalar by name, a device), on the CPU; kqual seeds torch's generator with the case's seed before the call.\n"
      "def kqual_inputs(seed, family, **axes_and_scalars):\n"
      "    import torch as _kqual_torch\n"
      "    return {}(dict(axes_and_scalars), _kqual_torch.device(\"cpu\"))\n",
      entrypoint);
}

}  // namespace kqual::contract::detail
