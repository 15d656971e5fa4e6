// The compare page (kqual.compare/1): NEW against OLD per shape, startup per JIT cache mode,
// correctness of both, decision per profile, the service view (html_service.cpp).
#include "html_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "html_service.hpp"
#include "kqual/report/memo.hpp"

namespace kqual::report::detail {

namespace {

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
  std::string rows, missing;
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
    rows += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
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
  s += table("<th>shape</th><th>OLD median</th><th>NEW median</th><th>speed-up</th><th>95 % CI</th><th>verdict</th><th>why</th>",
             rows);
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
  std::string rows;
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
    rows += fmt::format("<tr><td>{}</td><td class=\"num\">{} / {}</td><td class=\"num\">{}</td><td class=\"num\">{} / {}</td>"
                        "<td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                        esc(mode), esc(med(m, "old", "module_load_summary_ms")), esc(med(m, "new", "module_load_summary_ms")),
                        esc(med(m, "new", "jit_wall_summary_ms")), esc(med(m, "old", "first_request_summary_ms")),
                        esc(med(m, "new", "first_request_summary_ms")), esc(delta), verdict_word(verdict), esc(detect));
  }
  s += fmt::format("<p class=\"note\">{} fresh processes per side per mode. Delta: {}</p>\n", st->scalar("runs_per_side_per_mode", "?"),
                   esc(st->text("delta_definition")));
  if (!c.rows.empty()) s += svg_chart(c);
  else s += not_run("no cache mode has startup samples on both sides");
  s += table("<th>mode</th><th>module load OLD / NEW</th><th>JIT wall NEW</th><th>first request OLD / NEW</th>"
             "<th>delta [ms]</th><th>verdict</th><th>detectable (95 %)</th>",
             rows);
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
    s += "<h3>First failing cases</h3>\n" + table("<th>side</th><th>case</th><th>code</th><th>detail</th>", fails);
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

// The contract that judged both builds and where it came from (results.json contract.source).
std::string compare_contract_html(const Node& c) {
  std::string s = c.text("name", "?");
  auto src = c.opt("source");
  if (!src) return s;
  const bool supplied = src->has("supplied_with_candidate") && src->at("supplied_with_candidate").boolean();
  if (supplied) s += ": contract supplied with the candidate (--allow-candidate-contract)";
  else s += fmt::format(" ({})", src->text("origin", "?"));
  if (src->has("file")) s += fmt::format(", {}; SHA-256 {}", src->text("file"), src->text("sha256"));
  return s;
}

}  // namespace

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
  if (auto c = r.opt("contract")) art.emplace_back("contract", compare_contract_html(*c));
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

}  // namespace kqual::report::detail
