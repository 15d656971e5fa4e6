// kqual screen's summary.md and ranking.html, rendered from the typed result (screen_result.hpp):
// the same document gives the same bytes, for a run and for a merge of shards.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "kqual/core/text.hpp"
#include "kqual/report/html.hpp"
#include "kqual/report/screen_result.hpp"

namespace kqual::report {
namespace {

std::string count_words(const ScreenCounts& c) {
  using K = ScreenVerdictKind;
  return fmt::format("accepted {}, rejected {}, refused {}, incomplete {}{}", c[K::accepted], c[K::rejected], c[K::refused],
                     c[K::incomplete], c[K::error] ? fmt::format(", kqual errors {}", c[K::error]) : std::string());
}

std::string name_of(const json& device) {
  return device.is_object() ? device.value("name", std::string("?")) : std::string("?");
}

// A screen run: what ran, where, and what came from the journal.
std::string run_header(const ScreenResult& r, const ScreenRunFacts& run) {
  std::string md = "# kqual screen\n\n";
  md += fmt::format("{} candidate(s) — {} — {} run in {:.1f} s, {} from the journal.\n\n", r.candidates, count_words(r.counts),
                    run.run, run.wall_s, run.resumed);
  if (run.shard)
    md += fmt::format("Shard {} of a campaign of {} candidate(s).\n\n", run.shard->value("spec", std::string("?")),
                      run.shard->value("total", std::size_t(0)));
  const std::string arch = r.options.value("arch", std::string("?"));
  if (!run.device_present)
    md += fmt::format("No GPU ({}): only manifests and builds were checked, for {}.\n\n", run.why_no_gpu, arch);
  else if (!run.gpus)
    md += fmt::format("Device: {} ({}).\n\n", name_of(r.provenance.value("gpu", json())), arch);
  else
    for (const ScreenGpu& g : *run.gpus)
      md += fmt::format("GPU {} (PCI bus order{}): {} ({}), {} judged{}.\n\n", g.ordinal, g.pci_bus_id.empty() ? "" : ", " + g.pci_bus_id,
                        name_of(g.device), arch, g.judged, g.retired.empty() ? "" : "; retired: " + first_line(g.retired, 200));
  if (run.device_present && run.workers_per_gpu > 1)
    md += fmt::format("{} worker(s) per GPU checked side by side; every timing had its GPU alone.\n\n", run.workers_per_gpu);
  return md;
}

// A merge of shards: how many came, and what is missing, each named.
std::string merge_header(const ScreenResult& r, const json& m) {
  std::set<std::string> finished;  // distinct shards (a copy of a shard's folder is the same shard)
  for (const auto& s : m.value("shards", json::array()))
    if (s.value("finished", false)) finished.insert(s.value("shard", std::string()));
  std::string md = "# kqual screen (merged)\n\n";
  md += fmt::format("{} candidate(s) of {} expected, from {} of {} shard(s) — {}; {} duplicate verdict(s) dropped, {} candidate(s) "
                    "missing.\n\n",
                    r.verdicts.size(), m.value("expected_candidates", std::size_t(0)), finished.size(), m.value("shard_count", 1),
                    count_words(r.counts), m.value("duplicates", std::size_t(0)), m.value("missing", std::size_t(0)));
  const json missing_shards = m.value("missing_shards", json::array());
  const json missing_candidates = m.value("missing_candidates", json::array());
  for (const auto& s : missing_shards)
    md += fmt::format("- shard {} has no results: its {} candidate(s) are missing\n", s.value("shard", std::string("?")),
                      s.value("candidates", std::size_t(0)));
  for (const auto& c : missing_candidates) md += fmt::format("- missing: {}\n", c.is_string() ? c.get<std::string>() : c.dump());
  if (!missing_shards.empty() || !missing_candidates.empty()) md += "\n";
  return md;
}

std::string speed_cell(const json& r) {
  if (!r.contains("speedup")) return "-";
  return fmt::format("{:.3f}x [{:.3f}, {:.3f}]", r["speedup"].get<double>(), 1.0 / r["ci"][1].get<double>(), 1.0 / r["ci"][0].get<double>());
}

std::string rank_cell(const json& r) { return r["rank"].get<int>() > 0 ? std::to_string(r["rank"].get<int>()) : "-"; }

}  // namespace

std::string screen_summary_table(const std::vector<ScreenVerdict>& verdicts) {
  const bool gpus = std::any_of(verdicts.begin(), verdicts.end(), [](const ScreenVerdict& v) { return v.gpu >= 0; });
  std::string md = fmt::format("| # | candidate | contract | verdict | reason | wall [ms] |{} from journal |\n|---|---|---|---|---|---|{}---|\n",
                               gpus ? " GPU |" : "", gpus ? "---|" : "");
  auto cell = [](std::string s) {
    s = first_line(s, 160);
    for (std::size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
    return s;
  };
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const auto& v = verdicts[i];
    md += fmt::format("| {} | {} | {} | {} | {} | {:.0f} |{} {} |\n", i + 1, cell(v.name), cell(v.contract), to_string(v.verdict),
                      cell(v.reason + (v.detail.empty() || v.verdict == ScreenVerdictKind::accepted ? "" : ": " + v.detail)),
                      v.wall_ms,
                      gpus ? (v.gpu >= 0 ? fmt::format(" {} |", v.gpu) : std::string("  |")) : std::string(),
                      v.resumed ? "yes" : "");
  }
  return md;
}

std::string render_screen_summary_md(const ScreenResult& r) {
  std::string md = r.merged ? merge_header(r, *r.merged) : r.run ? run_header(r, *r.run) : std::string("# kqual screen\n\n");
  md += screen_summary_table(r.verdicts);
  if (r.ranking) md += render_screen_ranking_md(*r.ranking);
  return md;
}

std::string render_screen_ranking_md(const json& ranking) {
  const json& p = ranking["population"];
  std::string md = "\n## Ranking (timing tier)\n\n";
  md += fmt::format("{} of {} judged candidate(s) correct; faster than the fastest baseline by more than 1.0x: {}, by more than "
                    "1.5x: {} (the whole 95 % interval of the overall effect; by the point estimate alone: {} and {}).\n\n",
                    p["correct"].get<int>(), p["judged"].get<int>(), p["faster_1_0x"].get<int>(), p["faster_1_5x"].get<int>(),
                    p["point_estimate_faster_1_0x"].get<int>(), p["point_estimate_faster_1_5x"].get<int>());
  if (p["torch_submissions_timed_against_eager"].get<int>() > 0)
    md += fmt::format("PyTorch submissions against PyTorch eager: {} timed; faster by more than 1.0x: {}, by more than 1.5x: {} "
                      "(whole interval; point estimate: {} and {}).\n\n",
                      p["torch_submissions_timed_against_eager"].get<int>(), p["faster_than_eager_1_0x"].get<int>(),
                      p["faster_than_eager_1_5x"].get<int>(), p["point_estimate_faster_than_eager_1_0x"].get<int>(),
                      p["point_estimate_faster_than_eager_1_5x"].get<int>());
  md += "| rank | candidate | contract | speed-up over the fastest baseline [95% CI] | decision |\n|---|---|---|---|---|\n";
  for (const auto& r : ranking["ranked"])
    md += fmt::format("| {} | {} | {} | {} | {} |\n", rank_cell(r), r.value("name", ""), r.value("contract", ""),
                      r.contains("speedup") ? speed_cell(r) : "not compared: " + r.value("why_not", json("")).dump(),
                      r.value("decision", ""));
  return md;
}

std::string render_screen_ranking_html(const json& ranking, const std::vector<ScreenVerdict>& verdicts) {
  std::string h = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kqual screen: ranking</title>\n"
                  "<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px}"
                  "td.n{text-align:right}</style></head><body>\n<h1>kqual screen: ranking</h1>\n";
  const json& p = ranking["population"];
  h += fmt::format("<p>{} of {} judged candidate(s) correct; faster than the fastest baseline by more than 1.0x: {}, by more than "
                   "1.5x: {} (whole 95 % interval of the overall effect).</p>\n",
                   p["correct"].get<int>(), p["judged"].get<int>(), p["faster_1_0x"].get<int>(), p["faster_1_5x"].get<int>());
  h += "<table>\n<tr><th>rank</th><th>candidate</th><th>contract</th><th>speed-up [95% CI]</th><th>decision</th></tr>\n";
  for (const auto& r : ranking["ranked"])
    h += fmt::format("<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n", rank_cell(r),
                     html_escape(r.value("name", "")), html_escape(r.value("contract", "")),
                     html_escape(r.contains("speedup") ? speed_cell(r) : "not compared"), html_escape(r.value("decision", "")));
  h += "</table>\n<h2>Every verdict</h2>\n<table>\n<tr><th>candidate</th><th>verdict</th><th>reason</th></tr>\n";
  for (const auto& v : verdicts)
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(v.name), to_string(v.verdict), html_escape(v.reason));
  return h + "</table>\n</body></html>\n";
}

}  // namespace kqual::report
