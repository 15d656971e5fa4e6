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
#include "kqual/import/import_kernelbench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "import_common.hpp"
#include "import_kernelbench_shapes.hpp"

namespace kqual::contract {

std::string kernelbench_reference_py(const json& config, const std::string& problem_name);  // import_kernelbench_reference.cpp

namespace {

using kb::AxisInfo;
using kb::Dim;
using kb::KbDerived;
using kb::KbShapes;
using kb::KbSizes;
using kb::TensorInfo;
using kb::kb_collect_tensors;
using kb::kb_plan_sizes;
using kb::kb_refuse;
using kb::sanitize;

std::string toml_str(const std::string& s) { return detail::toml_quoted(s); }

std::string num(double v) { return fmt::format("{:.6g}", v); }

// What the tensor sections leave for the families and the notes.
struct KbTensorsWritten {
  std::map<std::string, std::string> row;  // the dtypes row
  std::vector<std::string> signed_family;
  std::vector<detail::FamilyInput> offered;  // forward's float inputs value families may redraw
  std::vector<std::vector<std::string>> output_shapes;
  double widest_atol = 0;
};

std::string kb_contract_name(const std::string& file, const KernelBenchImportOptions& o) {
  std::string stem = o.problem.empty() ? std::filesystem::path(file).stem().string() : o.problem.stem().string();
  std::transform(stem.begin(), stem.end(), stem.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  std::string name = o.name.empty() ? sanitize("kb_" + stem) : o.name;
  while (name.size() > 1 && name.back() == '_') name.pop_back();
  if (sanitize(name) != name) throw_error(ErrorKind::usage, fmt::format("--name {}: letters, digits and _ only", name));
  return name;
}

// [contract], the axes (variable, fixed, derived) and the scalars. The policy ends in a placeholder
// the special values' policy replaces once the families are known.
void kb_write_contract_and_axes(std::ostringstream& t, const json& cap, const KernelBenchImportOptions& o, const std::string& file,
                                const std::string& name, const std::string& precision, const KbShapes& s, const KbSizes& z) {
  t << "# Imported by `kqual import-kernelbench` from " << std::filesystem::path(file).filename().string()
    << " (PyTorch " << cap.value("torch", std::string("?")) << "). What was inferred, and why: the comments below and\n"
    << "# docs/kernelbench.md. The reference is the module's Model.forward (reference.py, problem.py).\n";
  t << "[contract]\nname = " << toml_str(name) << "\n";
  t << "summary = " << toml_str(fmt::format("KernelBench problem {}: Model.forward", std::filesystem::path(file).filename().string()))
    << "\n";
  t << "policy = "
    << toml_str(fmt::format("The reference is the problem's Model (torch.manual_seed({}) before Model(*get_init_inputs()), training mode "
                          "as KernelBench runs it) evaluated on the CPU in {}; KernelBench itself compares in float32 with "
                          "torch.allclose. Parameters are inputs a kernel receives.SPECIAL_VALUES_POLICY", o.seed, precision))
    << "\n";
  const bool any_float_output = std::any_of(s.tensors.begin(), s.tensors.end(), [](const auto& ti) {
    return ti.group == "output" && !detail::is_exact_dtype(ti.dtype);
  });
  t << detail::determinism_toml(any_float_output, "KernelBench");
  // A Model's parameters are its inputs here, and a model may hold some its forward never feels: a conv
  // bias ahead of a training-mode BatchNorm (which subtracts the batch mean), a projection the returned
  // state does not use. Such inputs are named in the policy instead of refusing the problem.
  t << "ignored_inputs = \"a KernelBench Model may hold parameters its forward cancels or never uses (a bias ahead of a "
       "training-mode BatchNorm, a projection the returned state does not need)\"\n";
  if (z.bench_elements > (std::int64_t(1) << 24))
    t << "max_case_elements = " << z.bench_elements << "   # the benchmark shape is checked too (the reference runs there)\n";
  t << "\n";
  for (const auto& [c, ax] : s.axes) {
    t << "# " << c << " = " << ax.value << " in the module: every dim that moves with it (found by changing it by +3, +7 and x2 on\n"
      << "# the meta device) is this axis. Small cases around a warp and a block (32, 256); large = the benchmark.\n";
    t << "[axes." << ax.name << "]\nrange = [" << ax.min << ", 2147483647]\n";
    std::vector<std::int64_t> hints;
    for (std::int64_t h : {32, 256})
      if (h <= ax.value && h >= ax.min + 2) hints.push_back(h);
    if (!hints.empty()) t << "hints = [" << fmt::format("{}", fmt::join(hints, ", ")) << "]\n";
    t << "base = " << ax.base << "\nlarge = " << ax.large << "\n\n";
  }
  for (const auto& [n, v] : s.fixed)
    t << "[axes." << n << "]\nvalue = " << v << "   # a dim no module-level integer changes: held fixed\n\n";
  for (const auto& [d, e] : s.derived)
    t << "[axes." << s.axis_name.at(d) << "]\nexpr = " << toml_str(fmt::format("{} * {} + {}", e.a, s.axes.at(e.constant).name, e.b))
      << "   # moves with " << e.constant << ", not 1:1\n\n";
  for (const auto& [n, v] : s.scalars) {
    const bool integer = v.is_number_integer();
    t << "[scalars." << n << "]   # a number forward takes\ndtype = " << (integer ? "\"i64\"" : "\"f64\"") << "\nvalue = "
      << (integer ? std::to_string(v.get<std::int64_t>()) : fmt::format("{:.17g}", v.get<double>())) << "\n\n";
  }
}

// An input's value distribution from the capture's sampled statistics, and why (for the comment).
std::pair<std::string, std::string> kb_input_values(const TensorInfo& ti, const json& sampled, const KbShapes& s,
                                                    KernelBenchImport& r, KbTensorsWritten& w) {
  const bool is_int = detail::is_exact_dtype(ti.dtype);
  const json* st = ti.j->contains("values") && (*ti.j)["values"].is_object() ? &(*ti.j)["values"] : nullptr;
  std::string values, why;
  if (ti.dtype == "i8" || ti.dtype == "u8") {  // a quantized kernel's data: every value of the dtype
    values = detail::exact_input_values(ti.dtype);
    why = "a quantized kernel's data (weights, activations): every value of the dtype";
    return {values, why};
  }
  if (ti.dtype == "bool") {  // a mask, true as often as sampled
    const double p = st && st->contains("mean") ? (*st)["mean"].get<double>() : 0.5;
    const double share = p > 0 && p < 1 ? p : 0.5;
    values = fmt::format("{{ dist = \"mask\", p = {} }}", num(share));
    why = st && st->contains("mean") ? fmt::format("a mask, true in {} of the sampled values", num(p)) : "a mask: not sampled, p = 0.5";
    return {values, why};
  }
  if (!st || !st->contains("min")) {
    values = is_int ? "{ dist = \"int\", lo = 0, hi = 1 }" : "{ dist = \"normal\" }";
    why = "not sampled: assumed";
    r.notes.push_back(fmt::format("{}: values not sampled; {} assumed", ti.name, values));
    return {values, why};
  }
  const double lo = (*st)["min"].get<double>(), hi = (*st)["max"].get<double>(), mean = (*st)["mean"].get<double>(),
               sd = (*st)["std"].get<double>();
  const std::string seen = fmt::format("sampled {} values: min {}, max {}, mean {}, std {}", st->value("n", 0), num(lo), num(hi),
                                       num(mean), num(sd));
  if (is_int) {
    std::string into;
    if (lo >= 0 && sampled.is_object())
      for (const auto& [c, ax] : s.axes)
        if (sampled.contains(c) && hi < sampled[c].get<double>() && hi >= sampled[c].get<double>() / 2) into = ax.name;
    if (!into.empty()) {
      values = fmt::format("{{ dist = \"indices\", axis = \"{}\" }}", into);
      why = seen + "; all below " + into + ": indices into it";
    } else {
      values = fmt::format("{{ dist = \"int\", lo = {}, hi = {} }}", std::llround(lo), std::llround(hi));
      why = seen;
    }
  } else if (lo == hi) {
    // A parameter initialised to one value, or a 0-d input (one value sampled): drawn around it.
    if (ti.group == "parameter" || std::find(s.zero_d.begin(), s.zero_d.end(), ti.name) != s.zero_d.end()) {
      const double a = lo == 0 ? -0.5 : std::min(0.5 * lo, 1.5 * lo), b = lo == 0 ? 0.5 : std::max(0.5 * lo, 1.5 * lo);
      values = fmt::format("{{ dist = \"uniform\", lo = {}, hi = {} }}", num(a), num(b));
      const std::string was = ti.group == "parameter" ? fmt::format("parameter {}: initialised to {} everywhere", ti.source_name, num(lo))
                                                      : fmt::format("0-d input {}: {} when sampled", ti.name, num(lo));
      why = (ti.group == "parameter" ? fmt::format("the model initialises it to {} everywhere", num(lo)) : was) +
            "; drawn around it instead, so a kernel that ignores it fails";
      r.notes.push_back(fmt::format("{}; kqual draws it from [{}, {}] so a kernel that ignores it cannot pass", was, num(a), num(b)));
    } else {
      values = fmt::format("{{ dist = \"constant\", value = {} }}", num(lo));
      why = seen + "; constant";
    }
  } else if (lo >= 0 && st->value("rows_sum_to_one", false)) {
    // Probabilities along the last dim (a softmax of get_inputs'): kqual draws rows that sum to 1 too
    // (a loss over log(x) is NaN on anything else).
    values = "{ dist = \"softmax_rows\" }";
    why = seen + "; every row (last dim) sums to 1: probabilities";
  } else if (lo >= 0 && hi <= 1 && std::fabs(mean - 0.5) < 0.05) {
    values = "{ dist = \"uniform\", lo = 0, hi = 1 }";
    why = seen + ": torch.rand";
    w.signed_family.push_back(ti.name);
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
  return {values, why};
}

// One [tensors.X] section per tensor: outputs with their tolerance, inputs with their values.
KbTensorsWritten kb_write_tensors(std::ostringstream& t, const json& cap, const KernelBenchImportOptions& o, const KbShapes& s,
                                  KernelBenchImport& r) {
  KbTensorsWritten w;
  const json& sampled = cap.value("sampled_at", json());
  for (const auto& ti : s.tensors) {
    std::vector<std::string> shape;
    for (const auto& d : ti.dims) shape.push_back(toml_str(s.final_axis(d.axis)));
    w.row[ti.name] = ti.dtype;
    const bool is_int = detail::is_exact_dtype(ti.dtype);
    t << "[tensors." << ti.name << "]\n";
    if (ti.group == "parameter") t << "description = " << toml_str("Model parameter " + ti.source_name) << "\n";
    t << "role = " << (ti.group == "output" ? "\"output\"" : "\"input\"") << "\nshape = [" << fmt::format("{}", fmt::join(shape, ", "))
      << "]\n";
    if (ti.group == "output") {
      if (is_int) {
        t << "error = { model = \"exact\" }\n\n";
      } else {
        // KernelBench's get_tolerance_for_precision: 1e-2 for the half-width floats, 1e-4 otherwise.
        const bool half_width = ti.dtype == "bf16" || ti.dtype == "f16" || detail::is_fp8_dtype(ti.dtype);
        const double dflt = half_width ? 1e-2 : 1e-4;
        double atol = o.atol >= 0 ? o.atol : dflt, rtol = o.rtol >= 0 ? o.rtol : dflt;
        const detail::Fp8Floor fl = detail::fp8_floor(ti.dtype);
        atol = std::max(atol, fl.atol);
        rtol = std::max(rtol, fl.rtol);
        w.widest_atol = std::max(w.widest_atol, atol);
        w.output_shapes.push_back({});
        for (const auto& d : ti.dims) w.output_shapes.back().push_back(s.final_axis(d.axis));
        t << "# KernelBench's tolerance (torch.allclose, atol = rtol = " << num(dflt) << " for " << ti.dtype << ") unless --atol/--rtol\n";
        if (fl.rtol > 0)
          t << "# " << ti.dtype << ": at least one " << ti.dtype << " ulp at the value (rtol " << num(fl.rtol) << ", atol " << num(fl.atol)
            << " among the subnormals): a kernel rounding another f32 value lands on a neighbour\n";
        const detail::MagnitudeBound mb = detail::magnitude_bound(cap.value("ops", json()));
        t << "# " << mb.why << "\n";
        t << "error = { model = \"allclose\", atol = " << num(atol) << ", rtol = " << num(rtol)
          << (mb.abs_inputs ? ", magnitude = \"abs_inputs\"" : "") << " }\n\n";
      }
      continue;
    }
    const auto [values, why] = kb_input_values(ti, sampled, s, r, w);
    t << "values = " << values << "   # " << why << "\n\n";
    // Forward's data (not the model's parameters, which keep their values) drawn from a normal or a
    // uniform distribution; indices, integers and constants are never redrawn.
    for (const char* dist : {"normal", "uniform"})
      if (!is_int && ti.group == "input" && values.rfind(fmt::format("{{ dist = \"{}\"", dist), 0) == 0) {
        std::vector<std::string> axes_of;
        for (const auto& d : ti.dims) axes_of.push_back(s.final_axis(d.axis));
        w.offered.push_back({ti.name, dist, axes_of, ti.dtype});
      }
  }
  t << "[dtypes]\nrows = [{ ";
  {
    std::vector<std::string> parts;
    for (const auto& ti : s.tensors) parts.push_back(ti.name + " = " + toml_str(w.row[ti.name]));
    t << fmt::format("{}", fmt::join(parts, ", "));
  }
  t << " }]\n\n";
  return w;
}

// The families: signed (for inputs KernelBench draws from [0, 1)), the value families and the special
// ones; fills special (the special families written) and never (inputs they leave alone).
void kb_write_families(std::ostringstream& t, const KbShapes& s, const KbSizes& z, const KbTensorsWritten& w, KernelBenchImport& r,
                       std::vector<std::string>& special, std::vector<std::string>& never) {
  if (!w.signed_family.empty()) {
    t << "# KernelBench draws these from [0, 1) only (torch.rand): on it ReLU is the identity and abs does nothing. The family\n"
      << "# signed draws them from [-1, 1), so a kernel must handle negative inputs too.\n[families.signed]\n";
    for (const auto& n : w.signed_family) t << n << " = { lo = -1 }\n";
    t << "\n";
    r.notes.push_back(fmt::format("{}: drawn from [0, 1) as KernelBench does; the family 'signed' adds [-1, 1)", fmt::join(w.signed_family, ", ")));
  }
  const auto data = detail::data_inputs(w.offered, w.output_shapes);
  detail::FamilyText how;
  how.tool = "kqual import-kernelbench";
  how.atol = w.widest_atol;
  for (const auto& ti : s.tensors)
    if (ti.group != "output" && !detail::is_exact_dtype(ti.dtype) && std::none_of(data.begin(), data.end(), [&](const auto& d) { return d.name == ti.name; }))
      how.kept.push_back(ti.name);
  // Families run on cases whose every tensor is within 2^16 elements; the smallest cases hold one
  // axis at its minimum and the others at their base.
  how.any_small_case = s.axes.empty() && s.largest(z.base).first <= detail::kFamilyMaxElements;
  for (const auto& [c, ax] : s.axes) {
    auto size = z.base;
    size[c] = ax.min;
    how.any_small_case |= s.largest(size).first <= detail::kFamilyMaxElements;
  }
  t << detail::value_families_toml(data, how);
  t << detail::special_families_toml(data, how, special);
  std::vector<std::string> names;
  for (const auto& d : data) names.push_back(d.name);
  if (!data.empty())
    r.notes.push_back(fmt::format("value families small_scale, large_scale, nonzero_mean, {} redraw {} on the cases up to {} elements{}",
                                  fmt::join(special, ", "), fmt::join(names, ", "), detail::kFamilyMaxElements,
                                  how.any_small_case ? "" : " (none here: every case has a tensor over that; see contract.toml)"));
  for (const auto& ti : s.tensors)
    if (ti.group != "output" && std::none_of(data.begin(), data.end(), [&](const auto& d) { return d.name == ti.name; }))
      never.push_back(ti.name);
}

// What the notes say last: the constants that are not axes, the fixed dims, the capture's own notes.
void kb_closing_notes(const json& cap, const KbShapes& s, KernelBenchImport& r) {
  if (!cap.value("not_axes", json::object()).empty())
    for (const auto& [c, why] : cap["not_axes"].items())
      r.notes.push_back(fmt::format("constant {} is not an axis: {}", c, why.get<std::string>()));
  if (s.fixed.size())
    r.notes.push_back(fmt::format("held fixed (no module-level integer moves them): {}", fmt::join([&] {
      std::vector<std::string> v;
      for (const auto& [n, x] : s.fixed) v.push_back(fmt::format("{} = {}", n, x));
      return v;
    }(), ", ")));
  for (const auto& n : cap.value("notes", json::array())) r.notes.push_back(n.get<std::string>());
}

// reference.py's configuration: the seed, forward's arguments in order, the parameters, the axes and
// the outputs' shapes.
json kb_reference_config(const json& cap, const KernelBenchImportOptions& o, const KbShapes& s) {
  json config{{"seed", o.seed}, {"args", json::array()}, {"parameters", json::object()}, {"axes", json::object()},
              {"outputs", json::array()}, {"zero_d", s.zero_d}};
  for (const auto& [c, ax] : s.axes) config["axes"][ax.name] = c;
  std::size_t si = 0;
  for (const auto& tj : cap["tensors"]) {
    if (tj.value("group", "") != "input") continue;
    // The same names as above, in forward's order.
    std::string name;
    if (tj.value("dtype", "") == "scalar") {
      name = s.scalars.at(si++).first;
    } else {
      for (const auto& ti : s.tensors)
        if (ti.group == "input" && ti.j == &tj) name = ti.name;
    }
    config["args"].push_back(name);
  }
  for (const auto& ti : s.tensors) {
    if (ti.group == "parameter") config["parameters"][ti.name] = ti.source_name;
    if (ti.group == "output") {
      json shape = json::array();
      for (const auto& d : ti.dims) shape.push_back(s.final_axis(d.axis));
      config["outputs"].push_back({{"name", ti.name}, {"shape", shape}});
    }
  }
  return config;
}

}  // namespace

KernelBenchImport translate_kernelbench(const json& cap, const KernelBenchImportOptions& o) {
  const bool named = cap.is_object() && cap.contains("file") && cap["file"].is_string();
  const std::string file = !o.problem.empty() ? o.problem.string() : named ? cap["file"].get<std::string>() : "problem";
  // Every field read below has the type the capture script writes (else an input error naming the
  // capture file and the key); a random forward is refused there.
  detail::refuse_sampling_forward(o.problem);
  const std::vector<std::string> capture_notes = detail::check_capture(cap, file, o.capture.string());
  if (o.max_elements < 1 || o.max_elements > (std::int64_t(1) << 28))
    throw_error(ErrorKind::usage, fmt::format("--max-elements {}: outside [1, 2^28]", o.max_elements));

  KernelBenchImport r;
  r.out = o.out;
  r.notes = capture_notes;
  r.name = kb_contract_name(file, o);
  KbShapes shapes = kb_collect_tensors(cap, o, file, r.notes);
  const KbSizes sizes = kb_plan_sizes(cap, o, file, shapes, r);

  // The precision the problem's forward really computes in: float64 unless its source casts.
  std::string problem_source;
  if (std::error_code ec; !o.problem.empty() && std::filesystem::is_regular_file(o.problem, ec)) problem_source = read_text_file(o.problem);
  const std::string precision = problem_source.empty() ? std::string("float64 (the problem's source was not read: casts in it are not known)")
                                                       : detail::reference_precision(detail::without_input_makers(problem_source), "forward");
  std::ostringstream t;
  kb_write_contract_and_axes(t, cap, o, file, r.name, precision, shapes, sizes);
  const KbTensorsWritten written = kb_write_tensors(t, cap, o, shapes, r);
  std::vector<std::string> special, never;  // the special families written; inputs they leave alone
  kb_write_families(t, shapes, sizes, written, r, special, never);
  t << "[cost]\nflops = \"0\"   # not in a KernelBench problem: give the operation's count to place it on the FMA roofline\n\n";
  t << "[bench]\nshapes = [" << toml_str(r.bench_shape) << "]   # KernelBench's fixed shape" << (sizes.scaled.empty() ? "" : ", scaled down")
    << "\n\n";
  t << "[reference]\npython = \"reference.py\"\nfunction = \"forward\"\nkind = \"torch\"\n# read from the problem's source: what "
       "Model.forward computes in here (kqual's reference process hands it float64 tensors and a float64 model)\nprecision = "
    << toml_str(precision) << "\n";
  r.notes.push_back("the reference computes in " + precision);
  r.contract_toml = t.str();
  // Written once the families are known: which special values are checked, and how.
  const std::string special_text = " " + detail::special_values_policy(special, never) + "\"";
  r.contract_toml.replace(r.contract_toml.find("SPECIAL_VALUES_POLICY\""), 22, special_text);
  kb_closing_notes(cap, shapes, r);
  r.reference_py = kernelbench_reference_py(kb_reference_config(cap, o, shapes), std::filesystem::path(file).filename().string());
  return r;
}

}  // namespace kqual::contract
