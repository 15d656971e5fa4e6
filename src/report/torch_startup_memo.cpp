// kqual startup-torch's memo.md, rendered from its results document (memo.hpp).
#include <fmt/format.h>

#include "kqual/report/memo.hpp"

namespace kqual::report {
namespace {

// The first-request p99 of one side of a service view, as text.
std::string first_p99(const json& view, const char* side) {
  if (!view.value("computed", false)) return "—";
  for (const auto& pop : view.at(side).at("populations"))
    if (pop.value("population", "") == "first_request")
      for (const auto& e : pop.at("percentiles"))
        if (e.value("percentile", 0.0) == 99.0)
          return e.at("value_ms").is_null() ? "miss" : fmt::format("{:.0f} ms", e.at("value_ms").get<double>());
  return "—";
}

std::string median_text(const json& summary) {
  return summary.is_null() ? "—" : fmt::format("{:.1f}", summary.at("median").get<double>());
}

}  // namespace

std::string render_torch_startup_memo(const json& r) {
  std::string s = "# kqual startup-torch: what a fresh PyTorch process pays before its first step\n\n";
  s += fmt::format("**{}**\n\n", r.at("summary").get<std::string>());
  if (r.contains("not_run")) return s + "Nothing was measured; no claim is made about the first request or the service.\n";
  const json& st = r.at("step");
  s += fmt::format("Step: matmul {} and conv2d {} (N,C,H,W,K,R) in {}; {} fresh processes per loading mode, run i of every "
                   "mode before run i + 1; each with a fresh empty JIT cache. Medians [ms]:\n\n",
                   st.at("matmul").get<std::string>(), st.at("conv").get<std::string>(), st.at("dtype").get<std::string>(),
                   r.at("runs_per_mode").get<int>());
  s += "| loading | process start | import torch | context | first matmul | first conv | first request | warm step | "
       "cold start |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : r.at("modes")) {
    const json& ph = m.at("phases_ms");
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", m.at("loading").get<std::string>(),
                     median_text(ph.at("process_start")), median_text(ph.at("import_torch")), median_text(ph.at("context")),
                     median_text(ph.at("first_matmul")), median_text(ph.at("first_conv")),
                     median_text(ph.at("first_request")), median_text(ph.at("warm_step")), median_text(ph.at("cold_start")));
    for (const auto& f : m.at("failures")) s += fmt::format("- {}: failed: {}\n", m.at("loading").get<std::string>(), f.get<std::string>());
  }
  s += "\nCold start = process start + import + context + what the first matmul and conv took beyond a warm one: the "
       "distribution fed to the service below (and written as first_request_*_ms.txt for kqual model service).\n";
  s += "\n## The service (per profile; compare's service view, docs/service-view.md)\n\n"
       "| profile | loading | first-request p99, warm starts | first-request p99, measured cold starts | objectives |\n"
       "|---|---|---|---|---|\n";
  for (const auto& sv : r.at("service")) {
    const json& v = sv.at("view");
    std::string obj;
    if (v.value("computed", false))
      for (const auto& o : v.at("objectives"))
        obj += fmt::format("{}: warm starts {}, cold starts {}; ", o.value("objective", ""),
                           o.at("old").value("standing", "?"), o.at("new").value("standing", "?"));
    else
      obj = v.value("reason", "");
    s += fmt::format("| {} | {} | {} | {} | {} |\n", sv.at("profile").get<std::string>(), sv.at("loading").get<std::string>(),
                     first_p99(v, "old"), first_p99(v, "new"), obj);
  }
  s += "\nWhat ran (from the first successful process):\n\n```json\n" + r.at("what_ran").dump(2) + "\n```\n";
  for (const auto& n : r.at("notes")) s += "- " + n.get<std::string>() + "\n";
  return s;
}

}  // namespace kqual::report
