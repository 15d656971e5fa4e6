// PyTorch eager / compiled / custom on the qualify page (html_torch.hpp). Reads only the results
// document: series labelled torch_eager / torch_compiled in timing.shapes, and the torch_baselines block.
#include "html_torch.hpp"

#include <fmt/format.h>

#include "kqual/bench/torch_baseline.hpp"
#include "html_text.hpp"

namespace kqual::report {

namespace {

using detail::esc;

std::string series_cell(const json* s) {
  if (!s) return "not run";
  if (s->contains("summary_ms") && (*s)["summary_ms"].contains("median")) {
    std::string t = fmt::format("{:.4g} ms", (*s)["summary_ms"]["median"].get<double>());
    if (!s->value("verified", true)) t += " <strong>wrong output: not a baseline</strong>";
    return t;
  }
  return "not timed: " + esc(s->value("error", std::string("?")));
}

}  // namespace

std::string torch_baselines_html(const json& results) {
  if (!results.is_object() || !results.contains("torch_baselines") || !results["torch_baselines"].is_object()) return "";
  const json& tb = results["torch_baselines"];
  std::string h = "<section id=\"torch\">\n<h2>PyTorch baselines: eager, compiled, custom</h2>\n";
  h += "<p>" + esc(tb.value("status", std::string())) + "</p>\n";
  const json* shapes = results.contains("timing") && results["timing"].is_object() && results["timing"].contains("shapes")
                           ? &results["timing"]["shapes"]
                           : nullptr;
  std::string rows;
  if (shapes && shapes->is_array())
    for (const auto& sh : *shapes) {
      const json *eager = nullptr, *compiled = nullptr, *cand = nullptr;
      for (const auto& s : sh.value("series", json::array())) {
        const std::string label = s.value("label", std::string());
        if (label == bench::kTorchEager) eager = &s;
        if (label == bench::kTorchCompiled) compiled = &s;
        if (s.value("role", std::string()) == "candidate") cand = &s;
      }
      if (!eager && !compiled) continue;
      std::string verdict = "—";
      if (sh.contains("candidate_vs_fastest") && sh["candidate_vs_fastest"].is_object()) {
        const json& v = sh["candidate_vs_fastest"];
        verdict = esc(fmt::format("{} ({:.3f}x the time of {})", v.value("verdict", std::string("?")), v.value("estimate", 0.0),
                                  sh.value("fastest_baseline", std::string("?"))));
      }
      rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", esc(sh.value("shape", std::string())),
                          series_cell(eager), series_cell(compiled), series_cell(cand), esc(sh.value("fastest_baseline", std::string("none"))),
                          verdict);
    }
  if (!rows.empty())
    h += "<table>\n<tr><th>shape</th><th>eager</th><th>compiled</th><th>custom (candidate)</th><th>fastest baseline</th>"
         "<th>candidate against it</th></tr>\n" + rows + "</table>\n";
  std::string compile;
  for (const auto& st : tb.value("startup", json::array()))
    if (st.contains("torch_compile_s"))
      compile += fmt::format("<li>{}: {:.2f} s</li>", esc(st.value("shape", std::string())), st["torch_compile_s"].get<double>());
  if (!compile.empty())
    h += "<p>torch.compile's compilation (its first call at each shape, host clock), a startup cost not in the times above:</p><ul>" +
         compile + "</ul>\n";
  for (const auto& n : tb.value("notes", json::array())) h += "<p>" + esc(n.get<std::string>()) + "</p>\n";
  return h + "</section>\n";
}

}  // namespace kqual::report
