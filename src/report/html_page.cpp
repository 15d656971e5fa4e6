// The HTML page's pieces shared by the qualify and compare pages: verdict, phases and provenance
// sections, the page frame and style, number and verdict text, correctness rows (html_page.hpp).
#include "html_page.hpp"

#include <fmt/format.h>

#include <cmath>

#include "kqual/report/memo.hpp"

namespace kqual::report::detail {

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

namespace {

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

}  // namespace

std::string verdict_word(const std::string& v) {
  return fmt::format("<span class=\"{}-text\">{}</span>", verdict_class(v), esc(verdict_words(json(v))));
}

std::string list(const std::vector<std::string>& items) {
  std::string s = "<ul>\n";
  for (const auto& x : items) s += "<li>" + esc(x) + "</li>\n";
  return s + "</ul>\n";
}

std::string table(const std::string& header_cells, const std::string& rows) {
  return "<table>\n<tr>" + header_cells + "</tr>\n" + rows + "</table>\n";
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

const char* const kCorrectnessHeader =
    "<table>\n<tr><th>implementation</th><th>verdict</th><th>cases</th><th>passed</th><th>failed</th><th>refused</th>"
    "<th>failed by code</th></tr>\n";

}  // namespace kqual::report::detail
