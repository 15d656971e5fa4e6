// The Definition importer's whole-Definition parts (import_definition_parts.hpp): per-output error
// models (the source's tolerance, else kqual's dtype-aware default) and the [index_cases] axis.
#include "import_definition_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "import_common.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::detail {

namespace {

bool holds_axis(const DefTensor& t, const std::string& a) { return std::find(t.shape.begin(), t.shape.end(), a) != t.shape.end(); }

}  // namespace

std::int64_t contraction_length(const DefShape& d) {
  std::set<std::string> in_outputs, contracted;
  for (const auto& o : d.outputs)
    for (const auto& a : o.shape) in_outputs.insert(a);
  // The wide integer and bool inputs (indices, offsets, lengths, masks) span index space, and a table
  // an integer input indexes (a paged KV cache's pages) is read at the entries selected, not summed
  // over; i8 / u8 inputs are data (a quantized GEMM's operands) and count.
  for (const auto& i : d.inputs)
    if (!is_exact_dtype(i.dtype) || i.dtype == "i8" || i.dtype == "u8")
      for (const auto& a : i.shape)
        if (!in_outputs.count(a) && !d.gathered.count(a)) contracted.insert(a);
  std::int64_t k = 1;
  for (const auto& a : contracted) k = std::min<std::int64_t>(k * std::max<std::int64_t>(1, d.widest.at(a)), std::int64_t(1) << 40);
  return k;
}

ErrorModels definition_error_models(const DefShape& d, const SourceTolerance& src) {
  ErrorModels m;
  const std::int64_t kc = contraction_length(d);
  std::vector<std::string> said;
  for (const auto& o : d.outputs) {
    if (is_exact_dtype(o.dtype)) continue;
    const DefaultTolerance dflt = default_tolerance(o.dtype, kc, d.widest.at(o.shape.back()));
    double atol = dflt.atol, rtol = dflt.rtol;
    bool defaulted = false;
    if (src.atol) atol = *src.atol;
    else if (src.cli_atol >= 0) atol = src.cli_atol;
    else defaulted = true;
    if (src.rtol) rtol = *src.rtol;
    else if (src.cli_rtol >= 0) rtol = src.cli_rtol;
    else defaulted = true;
    // An fp8 output: at least one fp8 ulp at the value, whatever the source states (kqual's default
    // includes it already); the output's own rounding is admitted on top by the allclose model.
    if (const Fp8Floor fl = fp8_floor(o.dtype); fl.rtol > 0 && (atol < fl.atol || rtol < fl.rtol)) {
      m.notes.push_back(fmt::format("output '{}' ({}): the tolerance raised to at least one {} ulp (atol {:g} -> {:g}, rtol {:g} -> {:g}): a "
                                    "kernel rounding a value computed in another order lands on a neighbour of the reference's rounding",
                                    o.name, o.dtype, o.dtype, atol, std::max(atol, fl.atol), rtol, std::max(rtol, fl.rtol)));
      atol = std::max(atol, fl.atol);
      rtol = std::max(rtol, fl.rtol);
    }
    m.widest_atol = std::max(m.widest_atol, atol);
    m.by_output[o.name] = fmt::format("{{ model = \"allclose\", atol = {:.6g}, rtol = {:.6g}, combine = \"{}\"{} }}", atol, rtol,
                                      src.combine, src.ratio);
    if (defaulted) {
      m.defaulted = true;
      m.notes.push_back(fmt::format("output '{}': {}{}", o.name, dflt.why,
                                    src.atol || src.rtol || src.cli_atol >= 0 || src.cli_rtol >= 0 ? " (for the term the source leaves out)" : ""));
      said.push_back(fmt::format("{} ({}): atol = {:.3g}, rtol = {:.3g}", o.name, o.dtype, atol, rtol));
    }
  }
  if (m.defaulted)
    m.policy = fmt::format(
        "The Definition states no tolerance{}: kqual's default from the output dtype and the reduction length K (a kernel computing "
        "in f32, or f64 for f64 outputs, eps its machine epsilon: rtol = eps max(64, 16 sqrt(K)), atol = eps max(64, 8 x the "
        "contraction); bf16 outputs one more half ulp of bf16 and atol at least 2^-7{}), not flashinfer-bench's 1e-2: {}.",
        src.atol || src.rtol ? " for every term" : "",
        std::any_of(d.outputs.begin(), d.outputs.end(), [](const DefTensor& o) { return o.dtype == "f16" || is_fp8_dtype(o.dtype); })
            ? "; f16 outputs 2^-11 more and atol at least 2^-10; fp8 outputs one fp8 ulp more (2^-3 e4m3, 2^-2 e5m2) and atol at least "
              "its smallest subnormal"
            : "",
        fmt::join(said, "; "));
  return m;
}

std::string definition_index_cases(const DefShape& d, std::vector<std::string>& notes) {
  for (const auto& in : d.inputs)
    if (in.dtype != "f32" && in.dtype != "bf16") {
      notes.push_back(fmt::format("no [index_cases]: input '{}' is {}, which the device generator does not make (f32, bf16): shapes "
                                  "over the CPU reference's cap and past 2^31 elements are not checked (listed in the policy)",
                                  in.name, in.dtype));
      return "";
    }
  for (const auto& a : d.var) {
    bool ok = !d.outputs.empty();
    for (const auto& o : d.outputs) ok &= !o.shape.empty() && o.shape.front() == a;
    for (const auto& in : d.inputs) ok &= !holds_axis(in, a) || in.shape.front() == a;
    for (const auto& [x, reads] : d.derived_reads)
      if (reads.count(a))
        for (const auto* group : {&d.inputs, &d.outputs})
          for (const auto& t : *group) ok &= !holds_axis(t, x);
    if (!ok) continue;
    notes.push_back(fmt::format("[index_cases] axis = \"{}\": the outermost axis of every output and of every input holding it, so shapes "
                                "over the CPU reference's cap and past 2^31 elements are generated on the device and checked in windows "
                                "of it. Assumed: outputs are independent across {} (a batch or token axis); remove the table if "
                                "the operation mixes values along it",
                                a, a));
    return fmt::format(
        "# Shapes over the CPU reference's cap (the workloads' sizes) and past 2^31 elements: inputs generated on the\n"
        "# device (uniform in [-1, 1)), the whole output scanned for poison, windows of whole units of {0} compared\n"
        "# with the reference on exactly those units. {0} is the outermost axis of every output and of every input\n"
        "# holding it; the Definition does not say that outputs are independent across it (a batch or token axis):\n"
        "# that is assumed here. Remove this table if the operation mixes values along {0}.\n"
        "[index_cases]\naxis = {1}\n\n",
        a, toml_quoted(a));
  }
  notes.push_back("no [index_cases]: no var axis is the outermost axis of every output and of every input holding it (and sizes no "
                  "tensor through a derived axis); shapes over the "
                  "CPU reference's cap and past 2^31 elements are not checked (listed in the policy)");
  return "";
}

// The value families (import_families.cpp) over the data inputs: the scale families and the special
// ones, appended to `text`, with a note each. `contraction_default`: the tolerance is kqual's default
// for a contraction (an absolute term sized for data of order 1), so no family scales the data up.
// Returns the special families written.
std::vector<std::string> definition_families(const std::vector<FamilyInput>& offered, const std::vector<std::vector<std::string>>& output_shapes,
                                             const std::vector<std::string>& var_axes, const std::map<std::string, std::int64_t>& base,
                                             const std::vector<std::pair<std::string, Expr>>& derived,
                                             const std::vector<std::vector<std::string>>& tensor_shapes, double atol, bool contraction_default,
                                             std::string& text, std::vector<std::string>& notes) {
  const auto data = data_inputs(offered, output_shapes);
  FamilyText how;
  how.tool = "kqual import-definition";
  how.atol = atol;
  if (contraction_default)
    how.no_scale_up = "the tolerance is kqual's default for a contraction, whose absolute term is sized for data of order 1; a "
                      "correct kernel's error on near-zero outputs grows with the data's scale and would exceed it";
  for (const auto& x : offered)
    if (std::none_of(data.begin(), data.end(), [&](const auto& d) { return d.name == x.name; })) how.kept.push_back(x.name);
  // Families run on cases whose largest tensor is within kFamilyMaxElements; the smallest cases hold
  // one var axis at 1 and the others at their base.
  how.any_small_case = false;
  for (const auto& a : var_axes) {
    std::map<std::string, std::int64_t> v = base;
    v[a] = 1;
    try {
      for (const auto& [n, e] : derived) v[n] = e.eval(v);
    } catch (const Error&) {
      continue;
    }
    std::int64_t most = 0;
    for (const auto& sh : tensor_shapes) {
      std::int64_t n = 1;
      for (const auto& an : sh) n = v.at(an) > 0 && n > (std::int64_t(1) << 40) / v.at(an) ? std::int64_t(1) << 40 : n * v.at(an);
      most = std::max(most, n);
    }
    how.any_small_case |= most <= kFamilyMaxElements;
  }
  text += value_families_toml(data, how);
  std::vector<std::string> special;
  text += special_families_toml(data, how, special);
  std::vector<std::string> names;
  for (const auto& d : data) names.push_back(d.name);
  if (!data.empty())
    notes.push_back(fmt::format("value families small_scale, {}nonzero_mean, {} redraw {} on the cases up to {} elements{}",
                                how.no_scale_up.empty() ? "large_scale, " : "", fmt::join(special, ", "), fmt::join(names, ", "),
                                kFamilyMaxElements,
                                how.any_small_case ? "" : fmt::format(" (none here: every case has a tensor over {} elements; see contract.toml)",
                                                                      kFamilyMaxElements)));
  return special;
}

}  // namespace kqual::contract::detail
