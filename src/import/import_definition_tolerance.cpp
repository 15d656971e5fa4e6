// A Definition's tolerance terms (import_definition.cpp): the strictest across the Definition and its
// workloads, and which judge the files were written for (flashinfer-bench or SOL-ExecBench).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "kqual/import/import_definition.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "import_common.hpp"
#include "import_definition_parts.hpp"

namespace kqual::contract {

namespace {

struct Tolerance {
  std::optional<double> atol, rtol, ratio, cap;
  std::optional<double> uncapped;  // the largest ratio below 1 a source gave without a cap (read as 1)
  bool allow_negative_inf = false;
  bool sol_keys = false;  // max_atol / max_rtol: SOL-ExecBench's ToleranceSpec
};

// `j` is the tolerance object at `key` of the file `in` names; cli_cap is --cap.
void tighten(Tolerance& t, const detail::JsonIn& in, const json& j, const std::string& key, std::optional<double> cli_cap) {
  auto min_into = [](std::optional<double>& into, double v) { into = into ? std::min(*into, v) : v; };
  auto number = [&](const char* k) -> std::optional<double> {
    const json* v = in.member(j, key, k, false);
    return v ? std::optional<double>(in.number(*v, detail::JsonIn::at(key, k))) : std::nullopt;
  };
  for (const char* k : {"atol", "max_atol"})
    if (auto v = number(k)) min_into(t.atol, *v);
  for (const char* k : {"rtol", "max_rtol"})
    if (auto v = number(k)) min_into(t.rtol, *v);
  if (j.contains("max_atol") || j.contains("max_rtol")) t.sol_keys = true;
  const std::optional<double> cap = number("max_error_cap");
  if (cap) min_into(t.cap, *cap);
  if (auto r = number("required_matched_ratio")) {
    if (!(*r > 0 && *r <= 1)) in.fail(detail::JsonIn::at(key, "required_matched_ratio"), fmt::format("{:g} is not in (0, 1]", *r));
    // A ratio below 1 applies only with a hard cap (this source's, else --cap); without one it is read
    // as SOL-ExecBench's default is, every element within the bound (ratio 1), also when another
    // workload gives a ratio with a cap: the strictest reading wins.
    double effective = *r;
    if (*r < 1 && !cap && !cli_cap) {
      t.uncapped = t.uncapped ? std::max(*t.uncapped, *r) : *r;
      effective = 1;
    }
    t.ratio = t.ratio ? std::max(*t.ratio, effective) : effective;
  }
  for (const auto* v : {&t.atol, &t.rtol, &t.cap})
    if (*v && !(**v >= 0)) in.fail(key, fmt::format("a negative tolerance ({:g})", **v));
  if (in.boolean_or(j, key, "allow_negative_inf", false)) t.allow_negative_inf = true;
}

const json& tolerance_workload_body(const std::pair<std::string, json>& w) {
  return w.second.contains("workload") ? w.second["workload"] : w.second;
}

}  // namespace

// The source's tolerance terms (the strictest across the Definition and its workloads), and which
// judge the file was written for: sol is true for SOL-ExecBench's.
detail::SourceTolerance definition_tolerance(const DefinitionImportOptions& o, const detail::JsonIn& in, const json& def,
                                             const std::vector<std::pair<std::string, json>>& workloads, bool& sol, std::vector<std::string>& notes) {
  Tolerance tol;
  if (def.contains("tolerance")) tighten(tol, in, def["tolerance"], "tolerance", o.cap);
  for (const auto& w : workloads) {
    const detail::JsonIn win(w.first);
    if (w.second.contains("tolerance")) tighten(tol, win, w.second["tolerance"], "tolerance", o.cap);
    if (w.second.contains("workload") && tolerance_workload_body(w).contains("tolerance"))
      tighten(tol, win, tolerance_workload_body(w)["tolerance"], "workload.tolerance", o.cap);
  }
  // Which judge the file was written for: SOL-ExecBench's workload lines are unwrapped ({"uuid",
  // "axes", "inputs", "tolerance"}) with max_atol / max_rtol, and its Definitions carry
  // custom_inputs_entrypoint; flashinfer-bench wraps lines as {"definition", "workload"}.
  sol = tol.sol_keys || def.contains("custom_inputs_entrypoint");
  for (const auto& w : workloads) sol |= !w.second.contains("workload") && w.second.contains("axes");
  detail::SourceTolerance src;
  src.atol = tol.atol;
  src.rtol = tol.rtol;
  src.combine = sol ? "sum" : "max";
  src.cli_atol = o.atol;
  src.cli_rtol = o.rtol;
  notes.push_back(sol ? "SOL-ExecBench's judge: an element passes within atol + rtol |ref| (combine = \"sum\")"
                      : "flashinfer-bench's judge: an element fails only past both atol and rtol |ref| (combine = \"max\")");
  if (sol && !tol.ratio && !workloads.empty())
    notes.push_back("SOL-ExecBench's default required_matched_ratio 0.99 (no max_error_cap) not applied: every element must be "
                    "within the bound");
  // Without a hard cap a share of elements could be arbitrarily wrong (NaN, garbage): a ratio given
  // without one is written as SOL-ExecBench's own default 0.99 is, every element within the bound.
  if (tol.uncapped)
    notes.push_back(fmt::format("required_matched_ratio {:g} without max_error_cap: treated as SOL-ExecBench's default is, every "
                                "element must be within the bound (give --cap C to apply the ratio with every element within C)",
                                *tol.uncapped));
  if (tol.ratio && *tol.ratio < 1) {  // every source's ratio below 1 came with a cap (its own or --cap)
    const double cap = tol.cap ? *tol.cap : *o.cap;
    src.ratio = fmt::format(", match_ratio = {:g}, cap = {:g}", *tol.ratio, cap);
    notes.push_back(fmt::format("required_matched_ratio {:g} with every element within {:g} (the strictest across workloads)",
                                *tol.ratio, cap));
  }
  if (tol.allow_negative_inf)
    notes.push_back("allow_negative_inf: kqual's NaN/Inf policy 'propagate' admits -Inf exactly where the reference has it");
  return src;
}


}  // namespace kqual::contract
