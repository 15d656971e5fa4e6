// The HTML report: results document → one self-contained page (docs/report.md).
//
// Everything is read through Node, which knows where in the document it is, so a field of the wrong
// type is reported by its path instead of as an exception from deep inside the JSON library. A
// section that is absent is not an error: the run did not produce it, and the page says why.
#include "html_torch.hpp"
#include "kqual/report/html.hpp"

#include "kqual/report/memo.hpp"
#include "html_service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "kqual/core/error.hpp"
#include "html_text.hpp"

namespace kqual::report {
namespace {

// ---- Reading the document -----------------------------------------------------------------------

class Node {
 public:
  Node(const json& j, std::string path) : j_(&j), path_(std::move(path)) {}
  const json& raw() const { return *j_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw_error(ErrorKind::input, path_.empty() ? what : fmt::format("{}: {}", path_, what));
  }
  void expect(bool ok, const char* wanted) const {
    if (!ok) fail(fmt::format("expected {}, found {}", wanted, j_->type_name()));
  }
  bool is_object() const { return j_->is_object(); }

  // Present and not null.
  bool has(std::string_view key) const {
    return j_->is_object() && j_->contains(key) && !j_->at(key).is_null();
  }
  Node child(std::string_view key) const {
    return Node(j_->at(key), path_.empty() ? std::string(key) : path_ + "." + std::string(key));
  }
  // A field the section cannot do without.
  Node at(std::string_view key) const {
    expect(j_->is_object(), "an object");
    if (!has(key)) fail(fmt::format("no '{}'", key));
    return child(key);
  }
  std::optional<Node> opt(std::string_view key) const {
    expect(j_->is_object(), "an object");
    if (!has(key)) return std::nullopt;
    return child(key);
  }
  std::vector<Node> items() const {
    expect(j_->is_array(), "an array");
    std::vector<Node> v;
    for (std::size_t i = 0; i < j_->size(); ++i) v.emplace_back(j_->at(i), fmt::format("{}[{}]", path_, i));
    return v;
  }
  std::vector<std::pair<std::string, Node>> members() const {
    expect(j_->is_object(), "an object");
    std::vector<std::pair<std::string, Node>> v;
    for (const auto& [k, x] : j_->items()) v.emplace_back(k, child(k));
    return v;
  }
  std::string str() const {
    expect(j_->is_string(), "a string");
    return j_->get<std::string>();
  }
  double num() const {
    expect(j_->is_number(), "a number");
    return j_->get<double>();
  }
  bool boolean() const {
    expect(j_->is_boolean(), "a boolean");
    return j_->get<bool>();
  }
  // Optional fields with a default; present with the wrong type is still an error.
  std::string text(std::string_view key, const std::string& dflt = "") const {
    auto n = opt(key);
    return n ? n->str() : dflt;
  }
  std::optional<double> number(std::string_view key) const {
    auto n = opt(key);
    return n ? std::optional<double>(n->num()) : std::nullopt;
  }
  // A scalar as text: strings as they are, numbers and booleans as JSON writes them.
  std::string scalar(std::string_view key, const std::string& dflt = "") const {
    auto n = opt(key);
    if (!n) return dflt;
    if (n->raw().is_string()) return n->raw().get<std::string>();
    n->expect(n->raw().is_number() || n->raw().is_boolean(), "a string or a number");
    return n->raw().dump();
  }

 private:
  const json* j_;
  std::string path_;
};

// A comparison as stats writes it: estimate, ci [lo, hi], verdict, reason.
struct Interval {
  double estimate = 0, lo = 0, hi = 0;
  std::string verdict, reason;
};

Interval read_interval(const Node& c) {
  Interval i;
  i.estimate = c.at("estimate").num();
  const Node ci = c.at("ci");
  const auto ends = ci.items();
  if (ends.size() != 2) ci.fail(fmt::format("expected [lo, hi], found {} element(s)", ends.size()));
  i.lo = ends[0].num();
  i.hi = ends[1].num();
  i.verdict = c.text("verdict");
  i.reason = c.text("reason");
  return i;
}

// ---- Writing HTML -------------------------------------------------------------------------------

using detail::esc;

// CSS class for a verdict word; a fixed set, so nothing from the document reaches an attribute raw.
const char* verdict_class(std::string_view v) {
  if (v == "faster" || v == "ship" || v == "accepted" || v == "both accepted") return "good";
  if (v == "slower" || v == "do_not_ship" || v == "do not ship as built" || v == "rejected" || v == "new rejected")
    return "bad";
  if (v == "no difference") return "neutral";
  return "warn";  // inconclusive, incomplete, anything new
}

std::string not_run(const std::string& why) {
  std::string w = why;
  if (w.rfind("not run", 0) == 0) {
    w = w.substr(7);
    while (!w.empty() && (w.front() == ':' || w.front() == ' ')) w.erase(0, 1);
  }
  return "<p class=\"note notrun\">not run: " + esc(w) + "</p>\n";
}

// The reason a phase did not run, as the results' phases table states it.
std::string phase_text(const Node& r, const char* phase, const std::string& dflt) {
  if (auto ph = r.opt("phases")) {
    if (auto p = ph->opt(phase)) return p->raw().is_string() ? p->str() : dflt;
  }
  return dflt;
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "—";
  return fmt::format("{:.{}f}", v, digits);
}

std::string ms_text(double v) {
  if (!std::isfinite(v)) return "—";
  return v < 0.1 ? fmt::format("{:.2f} µs", v * 1000) : fmt::format("{:.4g} ms", v);
}

// ---- SVG charts ---------------------------------------------------------------------------------

struct Row {
  std::string group;    // rows with the same group are drawn under one heading
  std::string label;
  double value = std::nan("");                  // the bar runs from the reference to here
  std::optional<std::pair<double, double>> ci;  // the interval line
  std::string verdict;                          // colours the bar
  std::string value_text;                       // printed right of the plot
  std::string tooltip;
};

struct Chart {
  std::string id;
  std::string caption;  // <desc> and the axis title
  bool log_scale = false;
  double ref = 0;       // the reference line
  std::optional<double> base;  // where bars start (default: the reference)
  std::string ref_label;
  std::optional<std::pair<double, double>> band;  // e.g. the equivalence margin
  std::string band_label;
  std::function<std::string(double)> tick_text;
  std::vector<Row> rows;
};

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

// ---- Page pieces shared by both kinds -----------------------------------------------------------

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2430; background: #fff;
       margin: 0 auto; max-width: 1000px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d8dde6;
padding-bottom: 4px; } h3 { font-size: 15px; margin: 16px 0 6px; }
.sub { color: #5a6372; margin: 0 0 16px; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.verdict { border-left: 8px solid; padding: 12px 16px; border-radius: 4px; margin: 12px 0; }
.verdict .headline { font-size: 20px; font-weight: 700; }
.verdict.good { border-color: #1f8a4c; background: #e8f6ee; } .verdict.bad { border-color: #c0392b; background: #fbeaea; }
.verdict.warn { border-color: #c98a00; background: #fdf5e2; } .verdict.neutral { border-color: #6b7380; background: #f0f2f5; }
table { border-collapse: collapse; margin: 8px 0; width: 100%; } th, td { border: 1px solid #d8dde6; padding: 4px 8px;
text-align: left; vertical-align: top; } th { background: #f3f5f8; font-weight: 600; } td.num { text-align: right;
font-variant-numeric: tabular-nums; }
.note { color: #5a6372; font-style: italic; } .notrun { border: 1px dashed #b8c0cc; padding: 8px 12px; border-radius: 4px;
background: #fafbfc; }
svg.chart { display: block; margin: 8px 0; max-width: 100%; height: auto; }
svg .label { text-anchor: end; font-size: 12px; fill: #1d2430; } svg .group { font-size: 12.5px; font-weight: 700; fill: #1d2430; }
svg .value { font-size: 12px; fill: #1d2430; } svg .tick { text-anchor: middle; font-size: 11px; fill: #5a6372; }
svg .axis { text-anchor: middle; font-size: 12px; fill: #5a6372; }
svg .grid { stroke: #e4e8ee; stroke-width: 1; } svg .ref { stroke: #1d2430; stroke-width: 1.5; stroke-dasharray: 4 3; }
svg .band { fill: #e9ecf1; } svg .ci { stroke: #1d2430; stroke-width: 2.5; }
svg .bar.good { fill: #2fa866; } svg .bar.bad { fill: #d9534f; } svg .bar.warn { fill: #e0a82e; } svg .bar.neutral { fill: #9aa3b0; }
.good-text { color: #1f8a4c; font-weight: 600; } .bad-text { color: #c0392b; font-weight: 600; }
.warn-text { color: #a87000; font-weight: 600; } .neutral-text { color: #5a6372; font-weight: 600; }
footer { margin-top: 32px; color: #7a8392; font-size: 12px; }
)css";

std::string verdict_word(const std::string& v) {
  return fmt::format("<span class=\"{}-text\">{}</span>", verdict_class(v), esc(verdict_words(json(v))));
}

std::string list(const std::vector<std::string>& items) {
  std::string s = "<ul>\n";
  for (const auto& x : items) s += "<li>" + esc(x) + "</li>\n";
  return s + "</ul>\n";
}

std::vector<std::string> strings(const Node& arr) {
  std::vector<std::string> v;
  for (const Node& n : arr.items()) v.push_back(n.str());
  return v;
}

// Verdict block: decision, summary, reasons, and what would reverse it.
std::string verdict_section(const Node& verdict, const std::string& headline, const std::vector<std::string>& reverse,
                            const std::string& reverse_missing) {
  const std::string decision = verdict.at("decision").str();
  std::string s = fmt::format("<section id=\"verdict\" class=\"verdict {}\">\n", verdict_class(decision));
  std::string code;
  if (auto c = verdict.opt("exit_code")) code = fmt::format(" (exit code {})", fixed(c->num(), 0));
  s += fmt::format("<div class=\"headline\">Verdict: {}{}</div>\n<p>{}</p>\n", esc(headline), esc(code),
                   esc(verdict.text("summary")));
  if (auto reasons = verdict.opt("reasons")) {
    s += "<h3>Reasons</h3>\n" + list(strings(*reasons));
  }
  s += "<h3>What would reverse it</h3>\n";
  s += reverse.empty() ? "<p class=\"note\">" + esc(reverse_missing) + "</p>\n" : list(reverse);
  return s + "</section>\n";
}

std::string phases_section(const Node& r) {
  std::string s = "<section id=\"phases\">\n<h2>Phases</h2>\n";
  auto ph = r.opt("phases");
  if (!ph) return s + not_run("the results list no phases") + "</section>\n";
  s += "<table>\n<tr><th>phase</th><th>status</th></tr>\n";
  for (const auto& [k, v] : ph->members())
    s += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", esc(k), esc(v.raw().is_string() ? v.str() : v.raw().dump()));
  s += "</table>\n";
  if (auto nr = r.opt("not_run")) {
    const auto items = strings(*nr);
    if (!items.empty()) s += "<p><strong>Not run</strong> (no claim is made about these):</p>\n" + list(items);
  }
  return s + "</section>\n";
}

std::string provenance_section(const Node& r, const std::vector<std::pair<std::string, std::string>>& artifacts) {
  std::string s = "<section id=\"provenance\">\n<h2>Provenance</h2>\n";
  auto p = r.opt("provenance");
  if (!p) return s + not_run("the results carry no provenance block") + "</section>\n";
  std::vector<std::pair<std::string, std::string>> rows;
  if (auto gpu = p->opt("gpu")) {
    std::string d = gpu->text("name", "?");
    std::vector<std::string> parts;
    if (gpu->has("arch")) parts.push_back(gpu->scalar("arch"));
    if (gpu->has("sms")) parts.push_back(gpu->scalar("sms") + " SMs");
    if (auto l2 = gpu->number("l2_bytes")) parts.push_back(fmt::format("L2 {:.0f} MiB", *l2 / (1 << 20)));
    if (!parts.empty()) d += fmt::format(" ({})", fmt::join(parts, ", "));
    rows.emplace_back("device", d);
  } else {
    rows.emplace_back("device", "none: no GPU was used by this run");
  }
  if (auto drv = p->opt("driver")) {
    std::string d = "CUDA driver API " + drv->scalar("cuda_driver_api_version", "?");
    if (drv->has("nvidia_driver")) d += ", NVIDIA driver " + drv->scalar("nvidia_driver");
    rows.emplace_back("driver", d);
  } else {
    rows.emplace_back("driver", "none: no GPU was used by this run");
  }
  if (auto tk = p->opt("toolkit"))
    rows.emplace_back("toolkit", fmt::format("CUDA headers {}, NVRTC {}", tk->scalar("cuda_headers", "?"), tk->scalar("nvrtc", "?")));
  rows.emplace_back("kqual", fmt::format("{} (git revision {})", p->scalar("kqual_version", "?"), p->scalar("git_revision", "?")));
  rows.emplace_back("command", p->scalar("command_line", "?"));
  rows.emplace_back("host", fmt::format("{} ({})", p->scalar("host", "?"), p->scalar("os", "?")));
  rows.emplace_back("time (UTC)", p->scalar("timestamp_utc", "?"));
  for (const auto& a : artifacts) rows.push_back(a);
  s += "<table>\n";
  for (const auto& [k, v] : rows)
    s += fmt::format("<tr><th>{}</th><td class=\"{}\">{}</td></tr>\n", esc(k), k == "command" ? "mono" : "", esc(v));
  return s + "</table>\n</section>\n";
}

std::string page(const std::string& title, const std::string& subtitle, const std::string& body, const std::string& schema) {
  std::string s;
  s += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // Nothing may be fetched or run: inline styles only.
  s += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n";
  s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += "<title>" + esc(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  s += "<header>\n<h1>" + esc(title) + "</h1>\n<p class=\"sub\">" + esc(subtitle) + "</p>\n</header>\n";
  s += body;
  s += "<footer>Rendered by <code>kqual report</code> from a <code>" + esc(schema) +
       "</code> results document. Self-contained: no scripts, nothing fetched.</footer>\n</body>\n</html>\n";
  return s;
}

std::string speedup_text(double s) { return fmt::format("{:.3g}x", s); }

// ---- Qualify ------------------------------------------------------------------------------------

// The baseline a comparison is against: named in newer documents, else by position among the
// baselines that were timed (time_against_baselines compares those, in series order).
std::vector<std::string> compared_baselines(const Node& shape) {
  std::vector<std::string> names;
  const auto series = shape.at("series").items();
  bool cand_timed = false;
  for (const Node& s : series)
    if (s.text("role") == "candidate" && s.has("summary_ms")) cand_timed = true;
  if (!cand_timed) return names;
  for (const Node& s : series)
    if (s.text("role") == "baseline" && s.has("summary_ms")) names.push_back(s.text("label", "?"));
  return names;
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

std::string qualify_speedup(const Node& r) {
  std::string s = "<section id=\"speedup\">\n<h2>Speed-up per shape against each baseline (95 % CI)</h2>\n";
  auto t = r.opt("timing");
  if (!t) return s + not_run(phase_text(r, "timing", "the results hold no timing")) + "</section>\n";
  Chart c = speedup_chart("speed-up = baseline time / candidate time (log scale; > 1: the candidate is faster)");
  std::optional<double> margin;
  std::string table;
  for (const Node& sh : t->at("shapes").items()) {
    const std::string shape = sh.at("shape").str() + (sh.has("dtype") ? " " + sh.text("dtype") : "");
    const auto names = compared_baselines(sh);
    const auto cmps = sh.opt("candidate_vs_baselines") ? sh.at("candidate_vs_baselines").items() : std::vector<Node>{};
    for (std::size_t i = 0; i < cmps.size(); ++i) {
      const Node& cmp = cmps[i];
      const Interval iv = read_interval(cmp);
      if (!margin) margin = cmp.number("margin");
      Row row;
      row.group = shape;
      row.label = cmp.text("baseline", i < names.size() ? names[i] : fmt::format("baseline {}", i + 1));
      if (row.label == sh.text("fastest_baseline")) row.label += " (fastest)";
      // The comparison is of time (candidate / baseline); speed-up is its inverse.
      row.value = 1.0 / iv.estimate;
      row.ci = std::make_pair(1.0 / iv.hi, 1.0 / iv.lo);
      row.verdict = iv.verdict;
      row.value_text = fmt::format("{} [{}, {}] {}", speedup_text(row.value), speedup_text(row.ci->first),
                                   speedup_text(row.ci->second), iv.verdict);
      row.tooltip = fmt::format("{} vs {}: {}", shape, row.label, iv.reason);
      table += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td>{}</td><td>{}</td></tr>\n",
                           esc(shape), esc(row.label), esc(speedup_text(row.value)), esc(speedup_text(row.ci->first)),
                           esc(speedup_text(row.ci->second)), verdict_word(iv.verdict), esc(iv.reason));
      c.rows.push_back(std::move(row));
    }
  }
  if (margin && *margin > 0 && *margin < 1) {
    c.band = std::make_pair(1.0 / (1.0 + *margin), 1.0 / (1.0 - *margin));
    c.band_label = fmt::format("equivalence margin ±{:g} %: no difference", *margin * 100);
  }
  if (c.rows.empty()) return s + not_run("no shape has a candidate and a baseline both timed (see the timing phase: " +
                                         phase_text(r, "timing", "?") + ")") + "</section>\n";
  if (t->has("boundary")) s += "<p class=\"note\">Timed region: " + esc(t->text("boundary")) + "</p>\n";
  s += svg_chart(c);
  s += "<table>\n<tr><th>shape</th><th>baseline</th><th>speed-up</th><th>95 % CI</th><th>verdict</th><th>why</th></tr>\n" +
       table + "</table>\n";
  return s + "</section>\n";
}

std::string qualify_roofline(const Node& r) {
  std::string s = "<section id=\"roofline\">\n<h2>Roofline placement (fraction of the measured ceiling)</h2>\n";
  auto t = r.opt("timing");
  if (!t) return s + not_run(phase_text(r, "timing", "the results hold no timing")) + "</section>\n";
  const auto shapes = t->at("shapes").items();
  std::optional<double> ceiling;
  std::string ceiling_shape;
  for (const Node& sh : shapes)
    if (auto dc = sh.opt("device_copy"); dc && !ceiling) {
      ceiling = dc->at("bytes_per_s").num();
      ceiling_shape = sh.at("shape").str();
    }
  if (!ceiling || !(*ceiling > 0))
    return s + not_run("this run measured no ceiling (the device-to-device copy is measured with timing, at the largest "
                       "shape)") + "</section>\n";
  Chart c;
  c.id = "roofline-chart";
  c.caption = "achieved bandwidth / measured copy bandwidth (1.0 = the ceiling)";
  c.ref = 1.0;
  c.base = 0.0;
  c.ref_label = "1.0: the measured copy ceiling";
  c.tick_text = [](double v) { return fmt::format("{:g}", v); };
  std::string table;
  for (const Node& sh : shapes) {
    const std::string shape = sh.at("shape").str();
    for (const Node& se : sh.at("series").items()) {
      if (!se.has("summary_ms")) continue;
      const double bps = se.number("bytes_per_s").value_or(0.0);
      if (!(bps > 0)) continue;
      Row row;
      row.group = shape;
      row.label = se.text("label", "?") + (se.text("role") == "candidate" ? " (candidate)" : "");
      row.value = bps / *ceiling;
      row.verdict = se.text("role") == "candidate" ? "faster" : "no difference";  // candidate green, baselines grey
      row.value_text = fmt::format("{:.1f} % ({:.2f} TB/s)", 100 * row.value, bps / 1e12);
      row.tooltip = fmt::format("{} {}: {:.2f} TB/s of {:.2f} TB/s", shape, row.label, bps / 1e12, *ceiling / 1e12);
      const double flops = se.number("flops_per_s").value_or(0.0);
      table += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{:.1f} %</td><td class=\"num\">{}</td></tr>\n",
                           esc(shape), esc(row.label), bps / 1e12, 100 * row.value,
                           flops > 0 ? fmt::format("{:.1f}", flops / 1e9) : std::string("—"));
      c.rows.push_back(std::move(row));
    }
  }
  if (c.rows.empty()) return s + not_run("no implementation was timed") + "</section>\n";
  s += fmt::format("<p>Ceiling: device-to-device copy measured in this run, <strong>{:.2f} TB/s</strong> (bytes read + "
                   "written, at {}). Achieved bandwidth = the contract's minimum bytes / median time, so a fraction near 1 "
                   "means the kernel moves its data as fast as a copy does. Compute-bound contracts (GEMM) are limited "
                   "by arithmetic instead; their FLOP/s are listed.</p>\n",
                   *ceiling / 1e12, esc(ceiling_shape));
  s += svg_chart(c);
  s += "<table>\n<tr><th>shape</th><th>implementation</th><th>achieved [TB/s]</th><th>of the ceiling</th><th>GFLOP/s</th></tr>\n" +
       table + "</table>\n";
  return s + "</section>\n";
}

std::string correctness_row(const Node& k, const std::string& name) {
  std::string codes;
  if (auto fc = k.opt("failure_codes"))
    for (const auto& [code, n] : fc->members())
      codes += fmt::format("{}<code>{}</code> × {}", codes.empty() ? "" : ", ", esc(code), fixed(n.num(), 0));
  const std::string verdict = k.text("verdict", "?");
  auto count = [&](const char* key) { return k.has(key) ? fixed(k.at(key).num(), 0) : std::string("—"); };
  return fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                     "<td class=\"num\">{}</td><td>{}</td></tr>\n",
                     esc(name), verdict_word(verdict), count("cases"), count("passed"), count("failed"), count("refused"),
                     codes.empty() ? "—" : codes);
}

std::string failing_cases(const Node& k, const std::string& who) {
  auto fc = k.opt("failing_cases");
  if (!fc) return "";
  std::string rows;
  int shown = 0;
  for (const Node& c : fc->items()) {
    if (c.text("status") != "fail") continue;
    if (++shown > 10) break;
    rows += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>\n", esc(who),
                        esc(c.text("id")), esc(c.text("code")), esc(c.text("detail")));
  }
  return rows;
}

const char* kCorrectnessHeader =
    "<table>\n<tr><th>implementation</th><th>verdict</th><th>cases</th><th>passed</th><th>failed</th><th>refused</th>"
    "<th>failed by code</th></tr>\n";

std::string qualify_correctness(const Node& r) {
  std::string s = "<section id=\"correctness\">\n<h2>Correctness against the contract</h2>\n";
  auto k = r.opt("correctness");
  if (!k) return s + not_run(phase_text(r, "correctness", "the results hold no correctness section")) + "</section>\n";
  s += kCorrectnessHeader;
  s += correctness_row(*k, k->text("candidate", "candidate") + " (candidate)");
  std::string fails = failing_cases(*k, k->text("candidate", "candidate"));
  if (auto bc = r.opt("baselines_correctness"))
    for (const Node& b : bc->items()) {
      s += correctness_row(b, b.text("candidate", "?") + " (baseline)");
      fails += failing_cases(b, b.text("candidate", "?"));
    }
  s += "</table>\n";
  if (!fails.empty())
    s += "<h3>First failing cases</h3>\n<table>\n<tr><th>implementation</th><th>case</th><th>code</th><th>detail</th></tr>\n" +
         fails + "</table>\n";
  return s + "</section>\n";
}

std::string render_qualify(const Node& r, const std::string& schema, const std::string& command) {
  const Node verdict = r.at("verdict");
  const std::string decision = verdict.at("decision").str();
  std::string headline = verdict_words(json(decision));
  std::transform(headline.begin(), headline.end(), headline.begin(), [](char ch) { return char(std::toupper(static_cast<unsigned char>(ch))); });
  std::string name = "?", contract = "?";
  if (auto c = r.opt("candidate")) {
    name = c->text("name", "?");
    contract = c->text("contract", "?");
  }
  std::vector<std::string> reverse;
  if (auto w = verdict.opt("would_reverse")) reverse = strings(*w);

  std::string body;
  body += verdict_section(verdict, headline, reverse,
                          decision == "incomplete" ? "no decision was made, so nothing to reverse (see what was not run)"
                                                   : "the results state nothing that would reverse this verdict");
  body += qualify_speedup(r);
  body += torch_baselines_html(r.raw());  // html_torch.cpp: eager / compiled / custom, where timed
  body += "<section id=\"startup\">\n<h2>Startup per JIT cache mode</h2>\n" +
          not_run("kqual " + command + " measures warm time only; `kqual startup ART` and `kqual compare OLD NEW` measure "
                  "startup in fresh processes") +
          "</section>\n";
  body += qualify_roofline(r);
  body += qualify_correctness(r);
  body += phases_section(r);
  std::vector<std::pair<std::string, std::string>> art;
  if (auto a = r.opt("artifact")) {
    std::string image;
    if (auto im = a->opt("image"))
      image = fmt::format(", {} of {} bytes, SHA-256 {}", im->text("kind", "image"), im->scalar("bytes", "?"), im->text("sha256", "?"));
    art.emplace_back("candidate artifact", fmt::format("{} for {}{}", a->text("compiler", "?"), a->text("arch", "?"), image));
  }
  if (auto c = r.opt("contract")) art.emplace_back("contract", c->text("name", "?") + ": " + c->text("summary"));
  body += provenance_section(r, art);
  return page(fmt::format("kqual {}: {} ({})", command, name, contract),
              fmt::format("{} — {}", headline, verdict.text("summary")), body, schema);
}

// ---- Compare ------------------------------------------------------------------------------------

std::string side_text(const Node& r, const char* side) {
  auto sides = r.opt("sides");
  if (!sides || !sides->has(side)) return "?";
  const Node x = sides->at(side);
  std::string input = x.text("input", "?");
  if (auto slash = input.find_last_of('/'); slash != std::string::npos && slash + 1 < input.size()) input = input.substr(slash + 1);
  std::string recipe;
  if (auto b = x.opt("build")) recipe = b->text("recipe");
  return recipe.empty() ? input : input + " [" + recipe + "]";
}

std::string compare_speedup(const Node& r) {
  std::string s = "<section id=\"speedup\">\n<h2>Warm speed-up per shape: NEW against OLD (95 % CI)</h2>\n";
  auto w = r.opt("warm");
  if (!w) return s + not_run(phase_text(r, "warm_timing", "the results hold no warm timing")) + "</section>\n";
  Chart c = speedup_chart("speed-up = OLD time / NEW time (log scale; > 1: NEW is faster)");
  if (auto m = w->number("margin_relative"); m && *m > 0 && *m < 1) {
    c.band = std::make_pair(1.0 / (1.0 + *m), 1.0 / (1.0 - *m));
    c.band_label = fmt::format("equivalence margin ±{:g} %: no difference", *m * 100);
  }
  std::string table, missing;
  for (const Node& sh : w->at("shapes").items()) {
    const std::string shape = sh.at("shape").str();
    const bool decides = sh.has("decision_shape") && sh.at("decision_shape").boolean();
    auto cmp = sh.opt("comparison");
    std::string errs;
    for (const char* side : {"old", "new"})
      if (auto sd = sh.opt(side); sd && sd->has("errors"))
        for (const auto& e : strings(sd->at("errors"))) errs += fmt::format("{}{}: {}", errs.empty() ? "" : "; ", side, e);
    if (!cmp) {
      missing += fmt::format("<li>{}: not compared ({})</li>\n", esc(shape), esc(errs.empty() ? "a side has no samples" : errs));
      continue;
    }
    const Interval iv = read_interval(*cmp);
    Row row;
    row.label = shape + (decides ? " (decision shape)" : "");
    row.value = 1.0 / iv.estimate;  // the comparison is NEW / OLD time
    row.ci = std::make_pair(1.0 / iv.hi, 1.0 / iv.lo);
    row.verdict = iv.verdict;
    row.value_text = fmt::format("{} [{}, {}] {}", speedup_text(row.value), speedup_text(row.ci->first),
                                 speedup_text(row.ci->second), iv.verdict);
    row.tooltip = shape + ": " + iv.reason;
    auto med = [&](const char* side) {
      auto sd = sh.opt(side);
      if (!sd) return std::string("—");
      auto su = sd->opt("summary_of_process_medians_ms");
      return su ? ms_text(su->at("median").num()) : std::string("—");
    };
    table += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                         "<td class=\"num\">{} – {}</td><td>{}</td><td>{}</td></tr>\n",
                         esc(row.label), esc(med("old")), esc(med("new")), esc(speedup_text(row.value)),
                         esc(speedup_text(row.ci->first)), esc(speedup_text(row.ci->second)), verdict_word(iv.verdict),
                         esc(iv.reason + (errs.empty() ? "" : "; " + errs)));
    c.rows.push_back(std::move(row));
  }
  if (c.rows.empty())
    return s + not_run("no shape was timed on both sides") + (missing.empty() ? "" : "<ul>\n" + missing + "</ul>\n") + "</section>\n";
  s += fmt::format("<p class=\"note\">{} fresh worker processes per side, {} samples each; one sample = one process's "
                   "median. Timed region: {}</p>\n",
                   w->scalar("processes_per_side", "?"), w->scalar("samples_per_process", "?"), esc(w->text("boundary")));
  s += svg_chart(c);
  s += "<table>\n<tr><th>shape</th><th>OLD median</th><th>NEW median</th><th>speed-up</th><th>95 % CI</th><th>verdict</th>"
       "<th>why</th></tr>\n" + table + "</table>\n";
  if (!missing.empty()) s += "<ul>\n" + missing + "</ul>\n";
  return s + "</section>\n";
}

std::string compare_startup(const Node& r) {
  std::string s = "<section id=\"startup\">\n<h2>Startup per JIT cache mode: first-request delta NEW − OLD (95 % CI)</h2>\n";
  auto st = r.opt("startup");
  if (!st) return s + not_run(phase_text(r, "startup", "the results hold no startup measurement")) + "</section>\n";
  const auto modes = st->opt("modes") ? st->at("modes").items() : std::vector<Node>{};
  if (modes.empty()) return s + not_run(phase_text(r, "startup", "no startup samples")) + "</section>\n";
  Chart c;
  c.id = "startup-chart";
  c.caption = "first-request delta NEW − OLD [ms] (> 0: NEW starts slower)";
  c.ref = 0;
  c.ref_label = "0 ms: no difference";
  c.tick_text = [](double v) { return fmt::format("{:g}", v); };
  if (auto nf = st->number("noise_floor_ms"); nf && *nf > 0) {
    c.band = std::make_pair(-*nf, *nf);
    c.band_label = fmt::format("noise floor ±{:g} ms: no difference", *nf);
  }
  std::string table;
  auto med = [](const Node& m, const char* side, const char* key) {
    auto sd = m.opt(side);
    if (!sd) return std::string("—");
    auto su = sd->opt(key);
    return su ? ms_text(su->at("median").num()) : std::string("—");
  };
  for (const Node& m : modes) {
    const std::string mode = fmt::format("JIT cache {}, {} loading", m.text("cache", "?"), m.text("loading", "?"));
    std::string delta = "—", detect = "—", verdict = "not compared";
    if (auto d = m.opt("first_request_delta_ms")) {
      const Interval iv = read_interval(*d);
      Row row;
      row.label = mode;
      row.value = iv.estimate;
      row.ci = std::make_pair(iv.lo, iv.hi);
      row.verdict = iv.verdict;
      row.value_text = fmt::format("{:+.2f} ms [{:+.2f}, {:+.2f}] {}", iv.estimate, iv.lo, iv.hi, iv.verdict);
      row.tooltip = mode + ": " + iv.reason;
      delta = fmt::format("{:+.2f} [{:+.2f}, {:+.2f}]", iv.estimate, iv.lo, iv.hi);
      verdict = iv.verdict;
      c.rows.push_back(std::move(row));
    }
    if (auto res = m.opt("resolution"))
      detect = fmt::format("±{} ms{}", fixed(res->at("detectable_difference_ms").num(), 2),
                           res->has("resolved") && !res->at("resolved").boolean() ? " (target not reached)" : "");
    table += fmt::format("<tr><td>{}</td><td class=\"num\">{} / {}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td>"
                         "<td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                         esc(mode), esc(med(m, "old", "module_load_summary_ms")), esc(med(m, "new", "module_load_summary_ms")),
                         esc(med(m, "new", "jit_wall_summary_ms")), esc(med(m, "old", "first_request_summary_ms")),
                         esc(med(m, "new", "first_request_summary_ms")), esc(delta), verdict_word(verdict), esc(detect));
  }
  s += fmt::format("<p class=\"note\">{} fresh processes per side per mode. Delta: {}</p>\n", st->scalar("runs_per_side_per_mode", "?"),
                   esc(st->text("delta_definition")));
  if (!c.rows.empty()) s += svg_chart(c);
  else s += not_run("no cache mode has startup samples on both sides");
  s += "<table>\n<tr><th>mode</th><th>module load OLD / NEW</th><th>JIT wall NEW</th><th>first request OLD / NEW</th>"
       "<th>delta [ms]</th><th>verdict</th><th>detectable (95 %)</th></tr>\n" + table + "</table>\n";
  if (auto notes = st->opt("notes")) {
    const auto n = strings(*notes);
    if (!n.empty()) s += list(n);
  }
  return s + "</section>\n";
}

std::string compare_correctness(const Node& r) {
  std::string s = "<section id=\"correctness\">\n<h2>Correctness against the contract (both builds)</h2>\n";
  auto k = r.opt("correctness");
  if (!k || k->raw().empty()) return s + not_run(phase_text(r, "correctness", "the results hold no correctness section")) + "</section>\n";
  s += kCorrectnessHeader;
  std::string fails;
  for (const char* side : {"old", "new"})
    if (auto x = k->opt(side)) {
      s += correctness_row(*x, side == std::string("old") ? "OLD" : "NEW");
      fails += failing_cases(*x, side == std::string("old") ? "OLD" : "NEW");
    }
  s += "</table>\n";
  if (auto rel = r.opt("correctness_relation"))
    s += fmt::format("<p><strong>{}</strong>: {}</p>\n", esc(rel->text("relation")), esc(rel->text("explanation")));
  if (!fails.empty())
    s += "<h3>First failing cases</h3>\n<table>\n<tr><th>side</th><th>case</th><th>code</th><th>detail</th></tr>\n" + fails +
         "</table>\n";
  return s + "</section>\n";
}

std::string compare_decisions(const Node& r) {
  std::string s = "<section id=\"decisions\">\n<h2>Decision per deployment profile</h2>\n";
  auto ds = r.opt("decisions");
  if (!ds) return s + not_run(phase_text(r, "decision", "no decision was made (see the verdict)")) + "</section>\n";
  s += "<table>\n<tr><th>profile</th><th>verdict</th><th>break-even [calls per process]</th><th>headline</th></tr>\n";
  for (const Node& d : ds->items()) {
    const Node dec = d.at("decision");
    std::string be = "—";
    if (auto b = dec.number("breakeven_calls")) be = fmt::format("{:.4g}", *b);
    else if (dec.has("breakeven_never") && dec.at("breakeven_never").boolean()) be = "never";
    s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                     esc(d.at("profile").text("name", "?")), verdict_word(dec.text("verdict", "?")), esc(be),
                     esc(dec.text("headline")));
  }
  return s + "</table>\n</section>\n";
}

std::string render_compare(const Node& r, const std::string& schema) {
  const Node verdict = r.at("verdict");
  const std::string decision = verdict.at("decision").str();
  std::string headline = verdict_words(json(decision));
  std::transform(headline.begin(), headline.end(), headline.begin(), [](char ch) { return char(std::toupper(static_cast<unsigned char>(ch))); });
  if (verdict.has("profile")) headline += " (profile " + verdict.text("profile") + ")";
  // What would reverse it: the deciding profile's (the first).
  std::vector<std::string> reverse;
  if (auto ds = r.opt("decisions"); ds && !ds->items().empty()) {
    const Node first = ds->items().front().at("decision");
    if (auto w = first.opt("would_reverse")) reverse = strings(*w);
  }
  std::string body;
  body += verdict_section(verdict, headline, reverse,
                          r.has("decisions") ? "the deciding profile states nothing that would reverse it"
                                             : "no decision was made, so nothing to reverse (see what was not run)");
  body += compare_speedup(r);
  body += compare_startup(r);
  body += "<section id=\"roofline\">\n<h2>Roofline placement</h2>\n" +
          not_run("kqual compare times NEW against OLD and records no bytes or ceiling per shape; `kqual qualify` places "
                  "a candidate against the measured copy ceiling") +
          "</section>\n";
  body += compare_correctness(r);
  body += compare_decisions(r);
  body += compare_service_html(r.raw());
  body += phases_section(r);
  std::vector<std::pair<std::string, std::string>> art;
  if (auto t = r.opt("target")) art.emplace_back("target", fmt::format("{} ({})", t->text("arch", "?"), t->text("source")));
  if (auto sides = r.opt("sides"))
    for (const char* side : {"old", "new"})
      if (auto x = sides->opt(side)) {
        std::string sha;
        if (auto im = x->opt("image")) sha = im->text("sha256");
        art.emplace_back(side == std::string("old") ? "OLD artifact" : "NEW artifact",
                         fmt::format("{}; loads by {}; SHA-256 {}", side_text(r, side), x->text("loading_path", "?"), sha));
      }
  body += provenance_section(r, art);
  return page(fmt::format("kqual compare: {} → {}", side_text(r, "old"), side_text(r, "new")),
              fmt::format("{} — {}", headline, verdict.text("summary")), body, schema);
}

}  // namespace

ResultsKind results_kind(const json& results) {
  const Node r(results, "");
  r.expect(results.is_object(), "a JSON object (a kqual results document)");
  if (!r.has("schema")) r.fail("no 'schema': not a kqual results document");
  const std::string schema = r.at("schema").str();
  constexpr const char* kAccepted = "kqual.qualify/1, kqual.check/1, kqual.bench/1 or kqual.compare/1";
  // Before the one naming scheme, qualify wrote "kqual.qualify" without a version.
  if (schema == "kqual.qualify") return ResultsKind::qualify;
  const auto name = parse_schema_name(schema);
  if (!name) r.fail(fmt::format("schema '{}' is not a kqual schema name (kqual.<command>/<version>); kqual report reads {}",
                                schema.substr(0, 80), kAccepted));
  if (name->version > kJsonSchemaVersion)
    r.fail(fmt::format("schema '{}' was written by a newer kqual (version {}; this one reads version {})", schema,
                       name->version, kJsonSchemaVersion));
  if (name->command == "qualify" || name->command == "check" || name->command == "bench") return ResultsKind::qualify;
  if (name->command == "compare") return ResultsKind::compare;
  r.fail(fmt::format("schema '{}': kqual {} results have no report page; kqual report reads {}", schema, name->command,
                     kAccepted));
}

std::string render_html(const json& results) {
  const ResultsKind kind = results_kind(results);
  const Node r(results, "");
  const std::string schema = r.at("schema").str();
  if (kind == ResultsKind::compare) return render_compare(r, schema);
  const auto name = parse_schema_name(schema);
  return render_qualify(r, schema, name ? name->command : "qualify");
}

}  // namespace kqual::report
