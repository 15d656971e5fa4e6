// The HTML page's SVG bar charts: one row per value with its interval, a reference line, an optional
// band, linear or log axis (html_page.hpp).
#include "html_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kqual::report::detail {

namespace {

double nice_step(double span) {
  const double raw = span / 5.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10.0 * mag;
}

std::vector<double> linear_ticks(double lo, double hi) {
  std::vector<double> t;
  const double step = nice_step(hi - lo);
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) t.push_back(std::abs(v) < 1e-12 * step ? 0.0 : v);
  return t;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (hi / lo < 3.0) return linear_ticks(lo, hi);
  std::vector<double> t;
  for (int e = int(std::floor(std::log10(lo))) - 1; e <= int(std::ceil(std::log10(hi))); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (v >= lo && v <= hi) t.push_back(v);
    }
  return t;
}

}  // namespace

std::string svg_chart(const Chart& c) {
  constexpr double kWidth = 920, kPlotLeft = 250, kPlotRight = 690, kRowH = 22, kGroupH = 22, kTop = 8, kBottom = 40;
  // Domain over every finite value, the reference and the band.
  const double base = c.base.value_or(c.ref);
  double lo = std::min(c.ref, base), hi = std::max(c.ref, base);
  auto take = [&](double v) {
    if (!std::isfinite(v) || (c.log_scale && v <= 0)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  for (const Row& r : c.rows) {
    take(r.value);
    if (r.ci) take(r.ci->first), take(r.ci->second);
  }
  if (c.band) take(c.band->first), take(c.band->second);
  if (c.log_scale) {
    lo /= 1.15;
    hi *= 1.15;
  } else {
    const double pad = hi > lo ? 0.06 * (hi - lo) : 1.0;
    lo -= pad;
    hi += pad;
  }
  auto x = [&](double v) {
    if (c.log_scale) v = std::max(v, lo);
    const double t = c.log_scale ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return kPlotLeft + std::clamp(t, 0.0, 1.0) * (kPlotRight - kPlotLeft);
  };

  // Rows and group headings, top to bottom.
  std::string body;
  double y = kTop;
  std::string group;
  bool first = true;
  for (const Row& r : c.rows) {
    if (first || r.group != group) {
      group = r.group;
      first = false;
      if (!group.empty()) {
        body += fmt::format("<text class=\"group\" x=\"6\" y=\"{:.1f}\">{}</text>\n", y + 15, esc(group));
        y += kGroupH;
      }
    }
    const double mid = y + kRowH / 2;
    body += fmt::format("<g class=\"row\"><text class=\"label\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", kPlotLeft - 8, mid + 4,
                        esc(r.label));
    if (std::isfinite(r.value) && (!c.log_scale || r.value > 0)) {
      const double a = x(base), b = x(r.value);
      body += fmt::format("<rect class=\"bar {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"12\"><title>{}</title></rect>",
                          verdict_class(r.verdict), std::min(a, b), mid - 6, std::max(1.0, std::abs(b - a)), esc(r.tooltip));
    }
    if (r.ci && std::isfinite(r.ci->first) && std::isfinite(r.ci->second)) {
      const double a = x(r.ci->first), b = x(r.ci->second);
      body += fmt::format("<line class=\"ci\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", std::min(a, b), mid,
                          std::max(a, b) + (std::abs(b - a) < 1 ? 1 : 0), mid);
    }
    body += fmt::format("<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text></g>\n", kPlotRight + 10, mid + 4,
                        esc(r.value_text));
    y += kRowH;
  }
  const double plot_bottom = y;
  const double height = plot_bottom + kBottom;

  std::string s = fmt::format(
      "<svg id=\"{}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"{}\">\n<desc>{}</desc>\n",
      esc(c.id), kWidth, height, kWidth, height, esc(c.caption), esc(c.caption));
  if (c.band) {
    const double a = x(c.band->first), b = x(c.band->second);
    s += fmt::format("<rect class=\"band\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>{}</title></rect>\n",
                     std::min(a, b), kTop, std::max(1.0, std::abs(b - a)), plot_bottom - kTop, esc(c.band_label));
  }
  for (double t : c.log_scale ? log_ticks(lo, hi) : linear_ticks(lo, hi)) {
    const double tx = x(t);
    s += fmt::format("<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
                     "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                     tx, kTop, tx, plot_bottom, tx, plot_bottom + 14, esc(c.tick_text(t)));
  }
  s += fmt::format("<line class=\"ref\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"><title>{}</title></line>\n",
                   x(c.ref), kTop, x(c.ref), plot_bottom, esc(c.ref_label));
  s += body;
  s += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n</svg>\n", (kPlotLeft + kPlotRight) / 2,
                   plot_bottom + 32, esc(c.caption));
  return s;
}

// The speed-up chart both reports draw: log scale around 1x ("no difference").
Chart speedup_chart(std::string caption) {
  Chart c;
  c.id = "speedup-chart";
  c.caption = std::move(caption);
  c.log_scale = true;
  c.ref = 1.0;
  c.ref_label = "1x: no difference";
  c.tick_text = [](double v) { return fmt::format("{:g}x", v); };
  return c;
}

}  // namespace kqual::report::detail
