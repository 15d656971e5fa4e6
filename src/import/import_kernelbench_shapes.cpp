// The KernelBench importer's reading of a capture: axes, derived and constant dims, tensors and scalars,
// and the sizes planned from them (import_kernelbench_shapes.hpp).
#include "import_kernelbench_shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "import_common.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::kb {

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "t_" + s;
  return s;
}

[[noreturn]] void kb_refuse(const std::string& file, const std::string& what, const std::string& why) {
  throw_error(ErrorKind::input, fmt::format("{}: {}: {}", file, what, why));
}

namespace {

std::string kb_dtype(const std::string& file, const std::string& what, const std::string& d) {
  // uint32 is not a dtype PyTorch tensors are made in by KernelBench problems; the rest as the Definition importer.
  if (std::string k = detail::imported_dtype(d); !k.empty() && k != "u32") return k;
  if (d.rfind("unsupported:", 0) == 0)
    kb_refuse(file, what, fmt::format("is a Python {}: forward's inputs and outputs must be tensors (or, for inputs, numbers)", d.substr(12)));
  kb_refuse(file, what, fmt::format("has dtype {}: kqual stores float32, float64, bfloat16, float16, float8_e4m3fn, float8_e5m2, int8, "
                                    "uint8, int32, int64 and bool (fp4, complex and other formats are not supported)", d));
}

// One captured dim: an axis when it moves with a module-level constant (a >= 1), else a constant axis.
void kb_add_dim(const json& d, const json& consts, TensorInfo& ti, KbShapes& s) {
  const std::int64_t v = d.at("value").get<std::int64_t>();
  if (!d.value("fixed", false) && d.contains("const") && consts.contains(d["const"].get<std::string>())) {
    const std::string c = d["const"].get<std::string>();
    const std::int64_t a = d.at("a").get<std::int64_t>(), b = d.at("b").get<std::int64_t>();
    if (a >= 1) {
      AxisInfo& ax = s.axes[c];
      ax.constant = c;
      ax.value = consts[c].at("value").get<std::int64_t>();
      ax.min = std::max<std::int64_t>(1, consts[c].value("min", std::int64_t(1)));
      if (a == 1 && b == 0) {
        ti.dims.push_back({"", v});  // named below, once every tensor name is known
        ti.dims.back().axis = "@" + c;
      } else {
        const std::string dn = fmt::format("{}_{}{}{}", c, a == 1 ? "" : fmt::format("x{}", a), b > 0 ? "p" : b < 0 ? "m" : "",
                                           b ? std::to_string(std::llabs(b)) : "");
        ti.dims.push_back({"@" + dn, v});
        s.derived["@" + dn] = {c, a, b};
      }
      return;
    }
  }
  ti.dims.push_back({fmt::format("c{}", v), v});
  s.fixed[fmt::format("c{}", v)] = v;
}

}  // namespace

// The capture's tensors: buffers become notes, forward's numbers scalars, the rest tensors with
// their dims classified; then the axes are named.
KbShapes kb_collect_tensors(const json& cap, const KernelBenchImportOptions& o, const std::string& file,
                            std::vector<std::string>& notes) {
  KbShapes s;
  const json& consts = cap["axis_constants"];
  int in_index = 0, out_count = 0;
  for (const auto& t : cap["tensors"])
    if (t.value("group", "") == "output") ++out_count;
  if (out_count == 0) kb_refuse(file, "forward", "returns no tensor");
  int out_index = 0;
  for (const auto& t : cap["tensors"]) {
    const std::string group = t.value("group", ""), src = t.value("name", "");
    if (group == "buffer") {
      notes.push_back(fmt::format("buffer '{}' ({}, {}) is the model's own state, as constructed with seed {}; it is restored "
                                  "before every call (a forward that updates it, as BatchNorm in training mode does, starts "
                                  "from the same state each time)", src, t.value("dtype", ""), t["shape"].dump(), o.seed));
      continue;
    }
    TensorInfo ti;
    ti.group = group;
    ti.source_name = src;
    ti.j = &t;
    const std::string what = group == "input" ? fmt::format("forward input {} ({})", src, t.value("param_name", json()).is_string()
                                                                                             ? t["param_name"].get<std::string>()
                                                                                             : "unnamed")
                           : group == "parameter" ? fmt::format("parameter '{}'", src)
                                                  : fmt::format("output {}", src);
    if (group == "input") {
      ti.name = t.contains("param_name") && t["param_name"].is_string() ? sanitize(t["param_name"].get<std::string>())
                                                                          : fmt::format("in{}", in_index);
      ++in_index;
    } else if (group == "parameter") {
      ti.name = sanitize(src);
    } else if (group == "output") {
      ti.name = out_count == 1 ? "out" : fmt::format("out{}", out_index++);
    } else {
      kb_refuse(file, "tensors", fmt::format("unknown group '{}' in the capture", group));
    }
    while (s.tensor_names.count(ti.name)) ti.name += "_";
    s.tensor_names.insert(ti.name);
    if (group == "input" && t.value("dtype", "") == "scalar") {
      s.scalars.push_back({ti.name, t.at("value")});
      continue;
    }
    ti.dtype = kb_dtype(file, what, t.value("dtype", "?"));
    std::int64_t elements = 1;
    for (const auto& d : t.at("dims")) {
      elements *= d.at("value").get<std::int64_t>();
      kb_add_dim(d, consts, ti, s);
    }
    if (ti.dims.empty()) {  // a 0-d tensor (torch.tensor(0.5), a loss): one element along c1
      kb_add_dim(json{{"value", 1}, {"fixed", true}}, consts, ti, s);
      if (group != "output") s.zero_d.push_back(ti.name);  // the reference gets an input 0-d again
      notes.push_back(fmt::format("{} is 0-d: held as one element along the constant axis c1{}", what,
                                  group == "output" ? "" : "; the reference receives it 0-d"));
    }
    // One value (a loss, a norm): it cannot vary across its elements, so the contract's non-triviality
    // check requires instead that redrawing every input changes it (a constant-writing kernel fails).
    if (group == "output" && elements <= 1)
      notes.push_back(fmt::format("{} has one element (a loss or another reduction to one value): judged as any output; the reference "
                                  "must change it when every input is redrawn, so a kernel writing a constant cannot pass", what));
    s.tensors.push_back(std::move(ti));
  }
  if (in_index == 0) kb_refuse(file, "get_inputs()", "returns no input");
  if (std::none_of(s.tensors.begin(), s.tensors.end(), [](const TensorInfo& t) { return t.group == "input"; }))
    kb_refuse(file, "get_inputs()", "returns no tensor");

  // Axis names: the constant's own name, unless a tensor has it.
  auto name_for = [&](const std::string& want) {
    std::string n = sanitize(want);
    while (s.tensor_names.count(n) || s.fixed.count(n)) n = "ax_" + n;
    return n;
  };
  for (auto& [c, ax] : s.axes) s.axis_name["@" + c] = ax.name = name_for(c);
  for (const auto& [d, e] : s.derived) s.axis_name[d] = name_for(d.substr(1));
  // A dim a * c + b (an output's width after a kernel of width 1 - b) is at least 1 only where c is at
  // least (1 - b) / a: the axis's minimum is raised to that, so that no case (nor the base the small
  // cases grow from) empties it. The capture's minimum can be lower: the meta device accepts an empty dim.
  for (const auto& [d, e] : s.derived) {
    AxisInfo& ax = s.axes.at(e.constant);
    if (e.a > 0 && e.a * ax.min + e.b < 1) ax.min = std::min(ax.value, (1 - e.b + e.a - 1) / e.a);
  }
  return s;
}

// The benchmark shape (KernelBench's fixed shape cut to max_elements) and the base of the small cases;
// sets each axis's large and base.
KbSizes kb_plan_sizes(const json& cap, const KernelBenchImportOptions& o, const std::string& file, KbShapes& s,
                      KernelBenchImport& r) {
  KbSizes z;
  // A tensor no axis moves (a weight whose sizes are literals) is as large at every shape: past
  // --max-elements, the benchmark shape may hold it as long as the reference can (2^28, the ceiling
  // of contract.max_case_elements); the other tensors are still cut to --max-elements.
  constexpr std::int64_t kReferenceCeiling = std::int64_t(1) << 28;
  std::int64_t limit = o.max_elements;
  if (auto [n, who] = s.largest(s.shrink_to(0)); n > o.max_elements) {
    if (n > kReferenceCeiling)
      kb_refuse(file, fmt::format("tensor '{}'", who),
                fmt::format("has {} elements at the smallest shape kqual can reach, over 2^28, the most a case's reference takes "
                            "(no module-level integer left to scale down: its dims are fixed)",
                            n));
    limit = n;
    r.notes.push_back(fmt::format("tensor '{}' has {} elements at every shape (no module-level integer moves its dims), over "
                                  "--max-elements {}: every case holds it, and the benchmark shape's other tensors are cut to it",
                                  who, n, o.max_elements));
  }
  z.bench = s.shrink_to(limit);
  if (s.axes.empty())  // a declared contract needs an axis to vary; this shape is fixed
    kb_refuse(file, "shapes", fmt::format("no module-level integer moves a tensor's shape (constants that are not axes, and why: {}); kqual "
                                          "needs one to vary", cap.value("not_axes", json::object()).dump()));
  z.base = s.shrink_to(4096);
  std::vector<std::string> bench_parts;
  for (auto& [c, ax] : s.axes) {
    ax.large = z.bench.at(c);
    ax.base = z.base.at(c);
    bench_parts.push_back(fmt::format("{}={}", ax.name, ax.large));
    if (ax.large != ax.value) z.scaled.push_back(fmt::format("{} {} → {}", ax.name, ax.value, ax.large));
  }
  r.bench_shape = fmt::format("{}", fmt::join(bench_parts, ","));
  z.bench_elements = s.largest(z.bench).first;
  if (!z.scaled.empty())
    r.notes.push_back(fmt::format("KernelBench's fixed shape has a tensor of {} elements, over {} {}: the benchmark "
                                  "shape is scaled down ({}); the largest tensor there has {} elements",
                                  s.largest(s.shrink_to(std::numeric_limits<std::int64_t>::max())).first,
                                  limit == o.max_elements ? "--max-elements" : "the fixed tensor's", limit,
                                  fmt::join(z.scaled, ", "), z.bench_elements));
  return z;
}

}  // namespace kqual::contract::kb
