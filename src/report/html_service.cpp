// The compare page's service view (docs/service-view.md): per profile, the latency distributions of
// OLD and NEW as quantile curves on a log latency axis (one chart per population), the objectives as
// vertical lines, and the table of percentiles with intervals. Reads decisions[].service only.
#include "html_service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include "html_text.hpp"
#include "latency_text.hpp"

namespace kqual::report {
namespace {

using detail::esc;

const json* population(const json& side, std::string_view name) {
  if (!side.is_object() || !side.contains("populations") || !side.at("populations").is_array()) return nullptr;
  for (const auto& p : side.at("populations"))
    if (p.is_object() && p.value("population", std::string()) == name) return &p;
  return nullptr;
}

// y: the percentile on a tail scale, -log10(1 - p/100): p50 → 0.3, p90 → 1, p99 → 2, p99.9 → 3.
double tail(double p) { return -std::log10(1.0 - std::min(p, 99.99) / 100.0); }

std::string chart(const json& sv, std::string_view pop, const std::string& id) {
  const json* a = population(sv.at("old"), pop);
  const json* b = population(sv.at("new"), pop);
  if (!a || !b || !a->contains("distribution_ms") || !b->contains("distribution_ms")) return "";
  std::vector<double> xs;
  for (const json* d : {a, b})
    for (const auto& q : d->at("distribution_ms"))
      if (q.is_array() && q.size() == 2 && q.at(1).is_number() && q.at(1).get<double>() > 0) xs.push_back(q.at(1).get<double>());
  std::vector<std::pair<double, std::string>> bounds;
  for (const auto& o : sv.value("objectives", json::array()))
    if (o.at("old").value("population", std::string()) == pop && o.at("old").at("max_ms").is_number())
      bounds.emplace_back(o.at("old").at("max_ms").get<double>(), o.value("objective", std::string()));
  for (const auto& [v, t] : bounds) xs.push_back(v);
  if (xs.empty()) return "";
  double lo = *std::min_element(xs.begin(), xs.end()) / 1.2, hi = *std::max_element(xs.begin(), xs.end()) * 1.2;
  if (hi / lo < 10) lo = hi / 10;
  constexpr double kW = 920, kL = 70, kR = 880, kT = 12, kB = 200, kH = 240;
  auto x = [&](double v) { return kL + (std::log(std::clamp(v, lo, hi)) - std::log(lo)) / (std::log(hi) - std::log(lo)) * (kR - kL); };
  auto y = [&](double p) { return kB - tail(p) / tail(99.9) * (kB - kT); };
  std::string s = fmt::format(
      "<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} "
      "{:.0f}\" role=\"img\" aria-label=\"latency distribution, {} requests\">\n<desc>Latency percentiles of {} requests, OLD "
      "(grey) and NEW (blue), latency on a log axis</desc>\n",
      esc(id), kW, kH, kW, kH, esc(pop), esc(pop));
  for (double p : {50.0, 90.0, 99.0, 99.9})
    s += fmt::format("<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"label\" x=\"{:.1f}\" "
                     "y=\"{:.1f}\">p{:g}</text>\n",
                     kL, y(p), kR, y(p), kL - 6, y(p) + 4, p);
  for (int e = int(std::floor(std::log10(lo))); e <= int(std::ceil(std::log10(hi))); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (v < lo || v > hi) continue;
      s += fmt::format("<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick\" x=\"{:.1f}\" "
                       "y=\"{:.1f}\">{}</text>\n",
                       x(v), kT, x(v), kB, x(v), kB + 14, esc(detail::latency_text(json(v))));
    }
  for (const auto& [v, t] : bounds)
    s += fmt::format("<line class=\"ref\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"><title>{}</title></line>\n", x(v), kT,
                     x(v), kB, esc(t));
  const char* colour[2] = {"#9aa3b0", "#1f6fd1"};
  int k = 0;
  for (const json* d : {a, b}) {
    std::string pts;
    for (const auto& q : d->at("distribution_ms")) {
      if (!q.is_array() || q.size() != 2 || !q.at(0).is_number()) continue;
      const double px = q.at(1).is_number() ? x(q.at(1).get<double>()) : kR;  // a miss sits at the right edge
      pts += fmt::format("{:.1f},{:.1f} ", px, y(q.at(0).get<double>()));
    }
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" points=\"{}\"><title>{}</title></polyline>\n",
                     colour[k], pts, k == 0 ? "OLD" : "NEW");
    ++k;
  }
  s += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\">latency of {} requests (log scale); grey OLD, blue NEW; dashed: "
                   "objectives</text>\n</svg>\n",
                   (kL + kR) / 2, kB + 34, esc(pop));
  return s;
}

std::string table(const json& sv) {
  std::string s = "<table>\n<tr><th>requests</th><th>percentile</th><th>OLD [95 % CI]</th><th>NEW [95 % CI]</th></tr>\n";
  for (const char* pop : {"first_request", "first_k", "all"}) {
    const json* a = population(sv.at("old"), pop);
    const json* b = population(sv.at("new"), pop);
    if (!a || !b) continue;
    const json& pa = a->value("percentiles", json::array());
    const json& pb = b->value("percentiles", json::array());
    for (std::size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
      auto cell = [](const json& e) {
        std::string t = detail::latency_text(e.value("value_ms", json()));
        const json ci = e.value("ci_ms", json());
        if (ci.is_array() && ci.size() == 2) t += " [" + detail::latency_text(ci.at(0)) + ", " + detail::latency_text(ci.at(1)) + "]";
        if (e.value("too_few", false)) t += " ⚠";
        return esc(t);
      };
      s += fmt::format("<tr><td>{} (n {})</td><td>p{:g}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n", esc(pop),
                       a->value("n", 0), pa.at(i).value("percentile", 0.0), cell(pa.at(i)), cell(pb.at(i)));
    }
  }
  return s + "</table>\n";
}

}  // namespace

std::string compare_service_html(const json& results) {
  std::string s = "<section id=\"service\">\n<h2>Service view</h2>\n";
  const json* ds = results.is_object() && results.contains("decisions") ? &results.at("decisions") : nullptr;
  if (!ds || !ds->is_array() || ds->empty())
    return s + "<p class=\"note notrun\">not run: no decision was made, so no service was simulated</p>\n</section>\n";
  int i = 0;
  for (const auto& d : *ds) {
    const std::string name = d.contains("profile") ? d.at("profile").value("name", std::string("?")) : "?";
    s += "<h3>Profile: " + esc(name) + "</h3>\n";
    const json sv = d.value("service", json());
    if (!sv.is_object() || !sv.value("computed", false)) {
      s += "<p class=\"note notrun\">not run: " + esc(sv.is_object() ? sv.value("reason", std::string("not computed")) : "not computed") +
           "</p>\n";
      continue;
    }
    for (const char* pop : {"first_request", "all"}) s += chart(sv, pop, fmt::format("service-{}-{}", i, pop));
    s += table(sv);
    std::string items;
    for (const auto& o : sv.value("objectives", json::array())) items += "<li>" + esc(o.value("verdict", std::string())) + "</li>\n";
    for (const auto& w : sv.value("warnings", json::array()))
      if (w.is_string()) items += "<li class=\"warn-text\">" + esc(w.get<std::string>()) + "</li>\n";
    if (!items.empty()) s += "<ul>\n" + items + "</ul>\n";
    ++i;
  }
  return s + "</section>\n";
}

}  // namespace kqual::report
