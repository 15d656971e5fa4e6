// KernelBench problem → declared contract (import_kernelbench.hpp; docs/kernelbench.md).
// The translation, term by term:
//   forward's tensor inputs (named by forward's parameters) → input tensors; its numbers → scalars;
//   Model's parameters (nn.Linear weights, norm weights, ...) → input tensors too, so a kernel gets
//     them as arguments; the reference puts them into the model (torch.func.functional_call);
//   buffers (running statistics) → the model's own state, restored before every call;
//   a dim that moves with a module-level integer (dim = a * constant + b, found by perturbing it on the
//     meta device) → that constant as a variable axis (a derived one when a, b != 1, 0); any other dim
//     → a constant axis;
//   the fixed shape → the benchmark shape (scaled down along those axes to max_elements) and the
//     large case; small cases around tile widths along each axis;
//   sampled values → a value distribution per input (uniform [0, 1) for torch.rand, normal for
//     torch.randn, indices for torch.randint into an axis), said in the contract; value families
//     (small_scale, large_scale, nonzero_mean) over forward's data inputs (import_families.cpp).
#include "kqual/contract/importers/import_kernelbench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "import_common.hpp"

namespace kqual::contract {

std::string kernelbench_reference_py(const json& config, const std::string& problem_name);  // import_kernelbench_reference.cpp

namespace {

struct Dim {
  std::string axis;  // the axis this dim is
  std::int64_t value = 0;
};

struct AxisInfo {
  std::string name, constant;
  std::int64_t value = 0, min = 1;
  std::int64_t base = 0, large = 0;
};

struct TensorInfo {
  std::string group, source_name, name, dtype;  // dtype: kqual's
  std::vector<Dim> dims;
  const json* j = nullptr;
};

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "t_" + s;
  return s;
}

std::string toml_str(const std::string& s) { return detail::toml_quoted(s); }

std::string num(double v) { return fmt::format("{:.6g}", v); }

}  // namespace

KernelBenchImport translate_kernelbench(const json& cap, const KernelBenchImportOptions& o) {
  const bool named = cap.is_object() && cap.contains("file") && cap["file"].is_string();
  const std::string file = !o.problem.empty() ? o.problem.string() : named ? cap["file"].get<std::string>() : "problem";
  auto refuse = [&](const std::string& what, const std::string& why) -> void {
    throw_error(ErrorKind::input, fmt::format("{}: {}: {}", file, what, why));
  };
  // Every field read below has the type the capture script writes (else an input error naming the
  // capture file and the key); a random forward is refused there.
  const std::vector<std::string> capture_notes = detail::check_capture(cap, file, o.capture.string());
  if (o.max_elements < 1 || o.max_elements > (std::int64_t(1) << 28))
    throw_error(ErrorKind::usage, fmt::format("--max-elements {}: outside [1, 2^28]", o.max_elements));

  KernelBenchImport r;
  r.out = o.out;
  r.notes = capture_notes;
  std::string stem = o.problem.empty() ? std::filesystem::path(file).stem().string() : o.problem.stem().string();
  std::transform(stem.begin(), stem.end(), stem.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  r.name = o.name.empty() ? sanitize("kb_" + stem) : o.name;
  while (r.name.size() > 1 && r.name.back() == '_') r.name.pop_back();
  if (sanitize(r.name) != r.name) throw_error(ErrorKind::usage, fmt::format("--name {}: letters, digits and _ only", r.name));

  // ---- dtypes ----
  auto kdtype = [&](const std::string& what, const std::string& d) -> std::string {
    static const std::map<std::string, std::string> known = {
        {"float32", "f32"}, {"float64", "f64"}, {"bfloat16", "bf16"}, {"int32", "i32"}, {"int64", "i64"}};
    if (auto it = known.find(d); it != known.end()) return it->second;
    if (d.rfind("unsupported:", 0) == 0)
      refuse(what, fmt::format("is a Python {}: forward's inputs and outputs must be tensors (or, for inputs, numbers)", d.substr(12)));
    refuse(what, fmt::format("has dtype {}: kqual stores float32, float64, bfloat16, int32 and int64 (float16, float8, bool, "
                             "uint8 and complex are not supported yet)", d));
    return "";
  };

  // ---- axes: the module-level constants that shapes move with ----
  std::map<std::string, AxisInfo> axes;      // by constant
  struct Derived {
    std::string constant;
    std::int64_t a = 1, b = 0;
  };
  std::map<std::string, Derived> derived;  // "@name" → a * constant + b
  std::map<std::string, std::int64_t> fixed;   // constant axis name → value
  std::set<std::string> tensor_names;
  std::vector<TensorInfo> tensors;
  std::vector<std::pair<std::string, json>> scalars;
  const json& consts = cap["axis_constants"];
  int in_index = 0, out_count = 0;
  for (const auto& t : cap["tensors"])
    if (t.value("group", "") == "output") ++out_count;
  if (out_count == 0) refuse("forward", "returns no tensor");
  int out_index = 0;
  for (const auto& t : cap["tensors"]) {
    const std::string group = t.value("group", ""), src = t.value("name", "");
    if (group == "buffer") {
      r.notes.push_back(fmt::format("buffer '{}' ({}, {}) is the model's own state, as constructed with seed {}; it is restored "
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
      refuse("tensors", fmt::format("unknown group '{}' in the capture", group));
    }
    while (tensor_names.count(ti.name)) ti.name += "_";
    tensor_names.insert(ti.name);
    if (group == "input" && t.value("dtype", "") == "scalar") {
      scalars.push_back({ti.name, t.at("value")});
      continue;
    }
    ti.dtype = kdtype(what, t.value("dtype", "?"));
    std::int64_t elements = 1;
    for (const auto& d : t.at("dims")) {
      const std::int64_t v = d.at("value").get<std::int64_t>();
      elements *= v;
      if (!d.value("fixed", false) && d.contains("const") && consts.contains(d["const"].get<std::string>())) {
        const std::string c = d["const"].get<std::string>();
        const std::int64_t a = d.at("a").get<std::int64_t>(), b = d.at("b").get<std::int64_t>();
        if (a >= 1) {
          AxisInfo& ax = axes[c];
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
            derived["@" + dn] = {c, a, b};
          }
          continue;
        }
      }
      ti.dims.push_back({fmt::format("c{}", v), v});
      fixed[fmt::format("c{}", v)] = v;
    }
    if (group == "output" && elements <= 1)
      refuse(what, fmt::format("has {} element (shape {}: a loss or another reduction to one value): kqual checks that every "
                               "output varies across its elements, so a kernel writing a constant cannot pass; import the "
                               "operation before its final reduction",
                               elements, t["shape"].dump()));
    tensors.push_back(std::move(ti));
  }
  if (in_index == 0) refuse("get_inputs()", "returns no input");
  if (std::none_of(tensors.begin(), tensors.end(), [](const TensorInfo& t) { return t.group == "input"; }))
    refuse("get_inputs()", "returns no tensor");

  // Axis names: the constant's own name, unless a tensor has it.
  std::map<std::string, std::string> axis_name;  // "@const" or "@derived" → final name
  auto name_for = [&](const std::string& want) {
    std::string n = sanitize(want);
    while (tensor_names.count(n) || fixed.count(n)) n = "ax_" + n;
    return n;
  };
  for (auto& [c, ax] : axes) axis_name["@" + c] = ax.name = name_for(c);
  for (const auto& [d, e] : derived) axis_name[d] = name_for(d.substr(1));
  auto final_axis = [&](const std::string& a) { return a[0] == '@' ? axis_name.at(a) : a; };

  // ---- sizes: the benchmark shape (cut to max_elements) and the base of the small cases ----
  auto largest = [&](const std::map<std::string, std::int64_t>& size) {
    std::int64_t worst = 0;
    std::string who;
    for (const auto& t : tensors) {
      std::int64_t n = 1;
      for (const auto& d : t.dims) {
        std::int64_t v = d.value;
        if (d.axis[0] == '@') {
          if (axes.count(d.axis.substr(1))) {
            v = size.at(d.axis.substr(1));
          } else {
            const Derived& e = derived.at(d.axis);
            v = e.a * size.at(e.constant) + e.b;
          }
        }
        n *= v;
      }
      if (n > worst) worst = n, who = t.name;
    }
    return std::pair{worst, who};
  };
  auto shrink_to = [&](std::int64_t limit) {
    std::map<std::string, std::int64_t> size;
    for (const auto& [c, ax] : axes) size[c] = ax.value;
    while (largest(size).first > limit) {
      std::string pick;
      for (const auto& [c, ax] : axes)
        if (size[c] / 2 >= ax.min && size[c] > 1 && (pick.empty() || size[c] > size[pick])) pick = c;
      if (pick.empty()) break;
      size[pick] /= 2;
    }
    return size;
  };
  const auto bench = shrink_to(o.max_elements);
  if (auto [n, who] = largest(bench); n > o.max_elements)
    refuse(fmt::format("tensor '{}'", who),
           fmt::format("has {} elements at the smallest benchmark shape kqual can reach, over --max-elements {} (no module-level "
                       "integer left to scale down: its dims are fixed)", n, o.max_elements));
  if (axes.empty())  // a declared contract needs an axis to vary; this shape is fixed
    refuse("shapes", fmt::format("no module-level integer moves a tensor's shape (constants that are not axes, and why: {}); kqual "
                                 "needs one to vary", cap.value("not_axes", json::object()).dump()));
  const auto base = shrink_to(4096);
  std::vector<std::string> bench_parts, scaled;
  for (auto& [c, ax] : axes) {
    ax.large = bench.at(c);
    ax.base = base.at(c);
    bench_parts.push_back(fmt::format("{}={}", ax.name, ax.large));
    if (ax.large != ax.value) scaled.push_back(fmt::format("{} {} → {}", ax.name, ax.value, ax.large));
  }
  r.bench_shape = fmt::format("{}", fmt::join(bench_parts, ","));
  const std::int64_t bench_elements = largest(bench).first;
  if (!scaled.empty())
    r.notes.push_back(fmt::format("KernelBench's fixed shape has a tensor of {} elements, over --max-elements {}: the benchmark "
                                  "shape is scaled down ({}); the largest tensor there has {} elements",
                                  largest(shrink_to(std::numeric_limits<std::int64_t>::max())).first, o.max_elements,
                                  fmt::join(scaled, ", "), bench_elements));

  // ---- contract.toml ----
  std::ostringstream t;
  t << "# Imported by `kqual import-kernelbench` from " << std::filesystem::path(file).filename().string()
    << " (PyTorch " << cap.value("torch", std::string("?")) << "). What was inferred, and why: the comments below and\n"
    << "# docs/kernelbench.md. The reference is the module's Model.forward (reference.py, problem.py).\n";
  t << "[contract]\nname = " << toml_str(r.name) << "\n";
  t << "summary = " << toml_str(fmt::format("KernelBench problem {}: Model.forward", std::filesystem::path(file).filename().string()))
    << "\n";
  // The precision the problem's forward really computes in: float64 unless its source casts.
  std::string problem_source;
  if (std::error_code ec; !o.problem.empty() && std::filesystem::is_regular_file(o.problem, ec)) problem_source = read_text_file(o.problem);
  const std::string precision = problem_source.empty() ? std::string("float64 (the problem's source was not read: casts in it are not known)")
                                                       : detail::reference_precision(problem_source, "forward");
  t << "policy = "
    << toml_str(fmt::format("The reference is the problem's Model (torch.manual_seed({}) before Model(*get_init_inputs()), training mode "
                          "as KernelBench runs it) evaluated on the CPU in {}; KernelBench itself compares in float32 with "
                          "torch.allclose. Parameters are inputs a kernel receives.SPECIAL_VALUES_POLICY", o.seed, precision))
    << "\n";
  const bool any_float_output = std::any_of(tensors.begin(), tensors.end(), [](const auto& ti) {
    return ti.group == "output" && ti.dtype != "i32" && ti.dtype != "i64";
  });
  t << detail::determinism_toml(any_float_output, "KernelBench");
  if (bench_elements > (std::int64_t(1) << 24))
    t << "max_case_elements = " << bench_elements << "   # the benchmark shape is checked too (the reference runs there)\n";
  t << "\n";
  for (const auto& [c, ax] : axes) {
    t << "# " << c << " = " << ax.value << " in the module: every dim that moves with it (found by changing it by +3 and +7 on\n"
      << "# the meta device) is this axis. Small cases around a warp and a block (32, 256); large = the benchmark.\n";
    t << "[axes." << ax.name << "]\nrange = [" << ax.min << ", 2147483647]\n";
    std::vector<std::int64_t> hints;
    for (std::int64_t h : {32, 256})
      if (h <= ax.value && h >= ax.min + 2) hints.push_back(h);
    if (!hints.empty()) t << "hints = [" << fmt::format("{}", fmt::join(hints, ", ")) << "]\n";
    t << "base = " << ax.base << "\nlarge = " << ax.large << "\n\n";
  }
  for (const auto& [n, v] : fixed)
    t << "[axes." << n << "]\nvalue = " << v << "   # a dim no module-level integer changes: held fixed\n\n";
  for (const auto& [d, e] : derived)
    t << "[axes." << axis_name.at(d) << "]\nexpr = " << toml_str(fmt::format("{} * {} + {}", e.a, axes.at(e.constant).name, e.b))
      << "   # moves with " << e.constant << ", not 1:1\n\n";
  for (const auto& [n, v] : scalars) {
    const bool integer = v.is_number_integer();
    t << "[scalars." << n << "]   # a number forward takes\ndtype = " << (integer ? "\"i64\"" : "\"f64\"") << "\nvalue = "
      << (integer ? std::to_string(v.get<std::int64_t>()) : fmt::format("{:.17g}", v.get<double>())) << "\n\n";
  }

  std::map<std::string, std::string> row;
  std::vector<std::string> signed_family;
  std::vector<detail::FamilyInput> offered;  // forward's float inputs value families may redraw
  std::vector<std::vector<std::string>> output_shapes;
  double widest_atol = 0;
  const json& sampled = cap.value("sampled_at", json());
  for (const auto& ti : tensors) {
    std::vector<std::string> shape;
    for (const auto& d : ti.dims) shape.push_back(toml_str(final_axis(d.axis)));
    row[ti.name] = ti.dtype;
    const bool is_int = ti.dtype == "i32" || ti.dtype == "i64";
    t << "[tensors." << ti.name << "]\n";
    if (ti.group == "parameter") t << "description = " << toml_str("Model parameter " + ti.source_name) << "\n";
    t << "role = " << (ti.group == "output" ? "\"output\"" : "\"input\"") << "\nshape = [" << fmt::format("{}", fmt::join(shape, ", "))
      << "]\n";
    if (ti.group == "output") {
      if (is_int) {
        t << "error = { model = \"exact\" }\n\n";
      } else {
        const double dflt = ti.dtype == "bf16" ? 1e-2 : 1e-4;
        const double atol = o.atol >= 0 ? o.atol : dflt, rtol = o.rtol >= 0 ? o.rtol : dflt;
        widest_atol = std::max(widest_atol, atol);
        output_shapes.push_back({});
        for (const auto& d : ti.dims) output_shapes.back().push_back(final_axis(d.axis));
        t << "# KernelBench's tolerance (torch.allclose, atol = rtol = " << num(dflt) << " for " << ti.dtype << ") unless --atol/--rtol\n"
          << "error = { model = \"allclose\", atol = " << num(atol) << ", rtol = " << num(rtol) << " }\n\n";
      }
      continue;
    }
    const json* st = ti.j->contains("values") && (*ti.j)["values"].is_object() ? &(*ti.j)["values"] : nullptr;
    std::string values, why;
    if (!st || !st->contains("min")) {
      values = is_int ? "{ dist = \"int\", lo = 0, hi = 1 }" : "{ dist = \"normal\" }";
      why = "not sampled: assumed";
      r.notes.push_back(fmt::format("{}: values not sampled; {} assumed", ti.name, values));
    } else {
      const double lo = (*st)["min"].get<double>(), hi = (*st)["max"].get<double>(), mean = (*st)["mean"].get<double>(),
                   sd = (*st)["std"].get<double>();
      const std::string seen = fmt::format("sampled {} values: min {}, max {}, mean {}, std {}", st->value("n", 0), num(lo), num(hi),
                                           num(mean), num(sd));
      if (is_int) {
        std::string into;
        if (lo >= 0 && sampled.is_object())
          for (const auto& [c, ax] : axes)
            if (sampled.contains(c) && hi < sampled[c].get<double>() && hi >= sampled[c].get<double>() / 2) into = ax.name;
        if (!into.empty()) {
          values = fmt::format("{{ dist = \"indices\", axis = \"{}\" }}", into);
          why = seen + "; all below " + into + ": indices into it";
        } else {
          values = fmt::format("{{ dist = \"int\", lo = {}, hi = {} }}", std::llround(lo), std::llround(hi));
          why = seen;
        }
      } else if (lo == hi) {
        if (ti.group == "parameter") {
          const double a = lo == 0 ? -0.5 : std::min(0.5 * lo, 1.5 * lo), b = lo == 0 ? 0.5 : std::max(0.5 * lo, 1.5 * lo);
          values = fmt::format("{{ dist = \"uniform\", lo = {}, hi = {} }}", num(a), num(b));
          why = fmt::format("the model initialises it to {} everywhere; drawn around it instead, so a kernel that ignores it fails",
                            num(lo));
          r.notes.push_back(fmt::format("parameter {}: initialised to {} everywhere; kqual draws it from [{}, {}] so a kernel that "
                                        "ignores it cannot pass", ti.source_name, num(lo), num(a), num(b)));
        } else {
          values = fmt::format("{{ dist = \"constant\", value = {} }}", num(lo));
          why = seen + "; constant";
        }
      } else if (lo >= 0 && hi <= 1 && std::fabs(mean - 0.5) < 0.05) {
        values = "{ dist = \"uniform\", lo = 0, hi = 1 }";
        why = seen + ": torch.rand";
        signed_family.push_back(ti.name);
      } else if (std::fabs(mean) < 0.05 && std::fabs(sd - 1) < 0.05) {
        values = "{ dist = \"normal\" }";
        why = seen + ": torch.randn";
      } else if (std::fabs(mean - 0.5 * (lo + hi)) < 0.05 * (hi - lo) && std::fabs(sd - (hi - lo) / std::sqrt(12.0)) < 0.1 * (hi - lo)) {
        values = fmt::format("{{ dist = \"uniform\", lo = {}, hi = {} }}", num(lo), num(hi));
        why = seen + ": uniform";
      } else {
        values = fmt::format("{{ dist = \"normal\", mean = {}, std = {} }}", num(mean), num(sd));
        why = seen;
      }
    }
    t << "values = " << values << "   # " << why << "\n\n";
    // Forward's data (not the model's parameters, which keep their values) drawn from a normal or a
    // uniform distribution; indices, integers and constants are never redrawn.
    for (const char* dist : {"normal", "uniform"})
      if (!is_int && ti.group == "input" && values.rfind(fmt::format("{{ dist = \"{}\"", dist), 0) == 0) {
        std::vector<std::string> axes_of;
        for (const auto& d : ti.dims) axes_of.push_back(final_axis(d.axis));
        offered.push_back({ti.name, dist, axes_of, ti.dtype});
      }
  }
  t << "[dtypes]\nrows = [{ ";
  {
    std::vector<std::string> parts;
    for (const auto& ti : tensors) parts.push_back(ti.name + " = " + toml_str(row[ti.name]));
    t << fmt::format("{}", fmt::join(parts, ", "));
  }
  t << " }]\n\n";
  if (!signed_family.empty()) {
    t << "# KernelBench draws these from [0, 1) only (torch.rand): on it ReLU is the identity and abs does nothing. The family\n"
      << "# signed draws them from [-1, 1), so a kernel must handle negative inputs too.\n[families.signed]\n";
    for (const auto& n : signed_family) t << n << " = { lo = -1 }\n";
    t << "\n";
    r.notes.push_back(fmt::format("{}: drawn from [0, 1) as KernelBench does; the family 'signed' adds [-1, 1)", fmt::join(signed_family, ", ")));
  }
  std::vector<std::string> special, never;  // the special families written; inputs they leave alone
  {
    const auto data = detail::data_inputs(offered, output_shapes);
    detail::FamilyText how;
    how.tool = "kqual import-kernelbench";
    how.atol = widest_atol;
    for (const auto& ti : tensors)
      if (ti.group != "output" && ti.dtype != "i32" && ti.dtype != "i64" && std::none_of(data.begin(), data.end(), [&](const auto& d) { return d.name == ti.name; }))
        how.kept.push_back(ti.name);
    // Families run on cases whose every tensor is within 2^16 elements; the smallest cases hold one
    // axis at its minimum and the others at their base.
    how.any_small_case = axes.empty() && largest(base).first <= detail::kFamilyMaxElements;
    for (const auto& [c, ax] : axes) {
      auto size = base;
      size[c] = ax.min;
      how.any_small_case |= largest(size).first <= detail::kFamilyMaxElements;
    }
    t << detail::value_families_toml(data, how);
    t << detail::special_families_toml(data, how, special);
    std::vector<std::string> names;
    for (const auto& d : data) names.push_back(d.name);
    if (!data.empty())
      r.notes.push_back(fmt::format("value families small_scale, large_scale, nonzero_mean, {} redraw {} on the cases up to {} elements{}",
                                    fmt::join(special, ", "), fmt::join(names, ", "), detail::kFamilyMaxElements,
                                    how.any_small_case ? "" : " (none here: every case has a tensor over that; see contract.toml)"));
    for (const auto& ti : tensors)
      if (ti.group != "output" && std::none_of(data.begin(), data.end(), [&](const auto& d) { return d.name == ti.name; }))
        never.push_back(ti.name);
  }
  t << "[cost]\nflops = \"0\"   # not in a KernelBench problem: give the operation's count to place it on the FMA roofline\n\n";
  t << "[bench]\nshapes = [" << toml_str(r.bench_shape) << "]   # KernelBench's fixed shape" << (scaled.empty() ? "" : ", scaled down")
    << "\n\n";
  t << "[reference]\npython = \"reference.py\"\nfunction = \"forward\"\nkind = \"torch\"\n# read from the problem's source: what "
       "Model.forward computes in here (kqual's reference process hands it float64 tensors and a float64 model)\nprecision = "
    << toml_str(precision) << "\n";
  r.notes.push_back("the reference computes in " + precision);
  r.contract_toml = t.str();
  // Written once the families are known: which special values are checked, and how.
  const std::string special_text = " " + detail::special_values_policy(special, never) + "\"";
  r.contract_toml.replace(r.contract_toml.find("SPECIAL_VALUES_POLICY\""), 22, special_text);
  if (!cap.value("not_axes", json::object()).empty())
    for (const auto& [c, why] : cap["not_axes"].items())
      r.notes.push_back(fmt::format("constant {} is not an axis: {}", c, why.get<std::string>()));
  if (fixed.size())
    r.notes.push_back(fmt::format("held fixed (no module-level integer moves them): {}", fmt::join([&] {
      std::vector<std::string> v;
      for (const auto& [n, x] : fixed) v.push_back(fmt::format("{} = {}", n, x));
      return v;
    }(), ", ")));
  for (const auto& n : cap.value("notes", json::array())) r.notes.push_back(n.get<std::string>());

  // ---- reference.py's configuration ----
  json config{{"seed", o.seed}, {"args", json::array()}, {"parameters", json::object()}, {"axes", json::object()},
              {"outputs", json::array()}};
  for (const auto& [c, ax] : axes) config["axes"][ax.name] = c;
  std::size_t si = 0;
  for (const auto& tj : cap["tensors"]) {
    if (tj.value("group", "") != "input") continue;
    // The same names as above, in forward's order.
    std::string name;
    if (tj.value("dtype", "") == "scalar") {
      name = scalars.at(si++).first;
    } else {
      for (const auto& ti : tensors)
        if (ti.group == "input" && ti.j == &tj) name = ti.name;
    }
    config["args"].push_back(name);
  }
  for (const auto& ti : tensors) {
    if (ti.group == "parameter") config["parameters"][ti.name] = ti.source_name;
    if (ti.group == "output") {
      json shape = json::array();
      for (const auto& d : ti.dims) shape.push_back(final_axis(d.axis));
      config["outputs"].push_back({{"name", ti.name}, {"shape", shape}});
    }
  }
  r.reference_py = kernelbench_reference_py(config, std::filesystem::path(file).filename().string());
  return r;
}

}  // namespace kqual::contract
