// The qualify page (kqual.qualify/1, kqual.check/1, kqual.bench/1): speed-up against each baseline,
// PyTorch baselines, roofline placement, correctness of candidate and baselines.
#include "html_page.hpp"

#include <fmt/format.h>

#include <map>

#include <algorithm>
#include <cctype>

#include "html_torch.hpp"
#include "kqual/report/memo.hpp"

namespace kqual::report::detail {

namespace {

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

std::string qualify_speedup(const Node& r) {
  std::string s = "<section id=\"speedup\">\n<h2>Speed-up per shape against each baseline (95 % CI)</h2>\n";
  auto t = r.opt("timing");
  if (!t) return s + not_run(phase_text(r, "timing", "the results hold no timing")) + "</section>\n";
  Chart c = speedup_chart("speed-up = baseline time / candidate time (log scale; > 1: the candidate is faster)");
  // One rule's call per shape on the page: the decision's (docs/decision.md), against the fastest
  // baseline. The timing phase's own comparisons (another margin, a rank test) are shown as data.
  std::map<std::string, std::string> decided;
  if (auto v = r.opt("verdict"))
    if (auto sp = v->opt("speed"))
      if (auto rows_node = sp->opt("shapes"))
        for (const Node& d : rows_node->items()) decided[d.text("shape")] = d.text("verdict");
  std::optional<double> margin;
  std::string rows;
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
      const bool fastest = row.label.ends_with(" (fastest)");
      const auto call = decided.find(sh.at("shape").str());
      const std::string decision = fastest && call != decided.end() ? call->second : std::string();
      row.verdict = decision;  // coloured by the decision's call only
      row.value_text = fmt::format("{} [{}, {}]{}", speedup_text(row.value), speedup_text(row.ci->first),
                                   speedup_text(row.ci->second), decision.empty() ? "" : " " + decision);
      row.tooltip = fmt::format("{} vs {}", shape, row.label);
      rows += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td>{}</td></tr>\n",
                          esc(shape), esc(row.label), esc(speedup_text(row.value)), esc(speedup_text(row.ci->first)),
                          esc(speedup_text(row.ci->second)), decision.empty() ? std::string("—") : verdict_word(decision));
      c.rows.push_back(std::move(row));
    }
  }
  if (margin && *margin > 0 && *margin < 1) {
    c.band = std::make_pair(1.0 / (1.0 + *margin), 1.0 / (1.0 - *margin));
    c.band_label = fmt::format("the timing phase's equivalence margin ±{:g} % (data; the decision's margin is in its table)", *margin * 100);
  }
  if (c.rows.empty()) return s + not_run("no shape has a candidate and a baseline both timed (see the timing phase: " +
                                         phase_text(r, "timing", "?") + ")") + "</section>\n";
  if (t->has("boundary")) s += "<p class=\"note\">Timed region: " + esc(t->text("boundary")) + "</p>\n";
  return s + svg_chart(c) + table("<th>shape</th><th>baseline</th><th>speed-up</th><th>95 % CI</th><th>decision's call (speed rule, fastest baseline)</th>", rows) +
         "</section>\n";
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
  std::string rows;
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
      rows += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{:.1f} %</td><td class=\"num\">{}</td></tr>\n",
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
  return s + svg_chart(c) +
         table("<th>shape</th><th>implementation</th><th>achieved [TB/s]</th><th>of the ceiling</th><th>GFLOP/s</th>", rows) +
         "</section>\n";
}

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
    s += "<h3>First failing cases</h3>\n" + table("<th>implementation</th><th>case</th><th>code</th><th>detail</th>", fails);
  return s + "</section>\n";
}

// The speed rule's table (verdict.speed, docs/decision.md): per shape against the fastest baseline,
// its margin and weight, and the overall effect; absent in documents written before the rule.
std::string qualify_decision(const Node& verdict) {
  auto sp = verdict.opt("speed");
  if (!sp) return "";
  std::string s = "<section id=\"decision\">\n<h2>The decision: each shape against its fastest baseline, and overall</h2>\n";
  const Node pol = sp->at("policy");
  const Node mix = sp->at("mix");
  s += fmt::format("<p>A difference counts only beyond max({:.1f} %, {:.2f} us / baseline time) at a shape, judged on the 95 % "
                   "CI; no shape of the mix may be more than {:.0f} % slower (or the absolute margin); shapes weighted by "
                   "profile <b>{}</b>{} (docs/decision.md).</p>\n",
                   100 * pol.at("margin_relative").num(), 1e6 * pol.at("margin_absolute_s").num(),
                   100 * pol.at("regression_limit").num(), esc(mix.text("profile", "default")),
                   mix.at("from_profile").raw().get<bool>() ? " (calls per shape x baseline time)"
                                                           : ", the default: every timed shape equally often, by its time");
  s += "<table>\n<tr><th>shape</th><th>baseline</th><th>time ratio</th><th>95 % CI</th><th>margin</th><th>weight</th>"
       "<th>verdict</th></tr>\n";
  for (const Node& row : sp->at("shapes").items()) {
    if (!row.has("ratio")) {
      s += fmt::format("<tr><td>{}</td><td>{}</td><td colspan=\"4\"></td><td>{}</td></tr>\n", esc(row.text("shape")),
                       esc(row.text("baseline")), esc(row.text("sentence")));
      continue;
    }
    const auto ci = row.at("ci").raw();
    s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{:.3f}</td><td class=\"num\">{:.3f} – {:.3f}</td><td "
                     "class=\"num\">±{:.1f} %</td><td class=\"num\">{:.1f} %</td><td>{}</td></tr>\n",
                     esc(row.text("shape")), esc(row.text("baseline")), row.at("ratio").num(), ci.at(0).get<double>(),
                     ci.at(1).get<double>(), 100 * row.at("margin").num(), 100 * row.at("weight").num(), esc(row.text("verdict")));
  }
  const Node o = sp->at("overall");
  if (o.at("computed").raw().get<bool>()) {
    const auto ci = o.at("ci").raw();
    s += fmt::format("<tr><td><b>overall</b></td><td></td><td class=\"num\"><b>{:.3f}</b></td><td class=\"num\">{:.3f} – {:.3f}"
                     "</td><td class=\"num\">±{:.1f} %</td><td class=\"num\">100 %</td><td><b>{}</b></td></tr>\n",
                     o.at("ratio").num(), ci.at(0).get<double>(), ci.at(1).get<double>(), 100 * o.at("margin").num(),
                     esc(sp->text("verdict")));
  }
  return s + "</table>\n<p><b>" + esc(sp->text("deciding")) + "</b></p>\n</section>\n";
}

}  // namespace

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
  body += qualify_decision(verdict);
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
  if (auto rp = r.opt("reproduce"))
    body += fmt::format("<section id=\"reproduce\">\n<h2>Reproduce the failing case</h2>\n<p>Case <code>{}</code> failed. A "
                        "folder that stands alone (the candidate, the case's inputs and reference output, the failing "
                        "elements, a README; no GPU needed to write it):</p>\n<pre><code>{}</code></pre>\n<p>The one case "
                        "again, on a GPU, under every rule of the check:</p>\n<pre><code>{}</code></pre>\n</section>\n",
                        esc(rp->text("case", "?")), esc(rp->text("replay", "?")), esc(rp->text("check", "?")));
  return page(fmt::format("kqual {}: {} ({})", command, name, contract),
              fmt::format("{} — {}", headline, verdict.text("summary")), body, schema);
}

}  // namespace kqual::report::detail
