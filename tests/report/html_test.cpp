// The HTML report renderer on documents shaped as kqual writes them (fixtures.hpp): every section,
// one chart bar per shape and baseline (or mode), "not run" notes for what a run did not produce,
// escaping of every text from the document, and errors that name the bad field.
#include <gtest/gtest.h>

#include <regex>

#include "fixtures.hpp"
#include "kqual/core/error.hpp"
#include "kqual/report/html.hpp"
#include "kqual/pipeline/decide.hpp"

namespace kqual::report {
namespace {
namespace fs = std::filesystem;
namespace fx = test::fixtures;

// Built once per suite: each one compiles the bundled candidate with NVRTC.
const json& html_doc(const std::string& which) {
  static test::TempDir s;
  static std::map<std::string, json> cache;
  auto it = cache.find(which);
  if (it != cache.end()) return it->second;
  json d;
  if (which == "qualify") d = fx::qualify_gpu(s.path / which);
  else if (which == "check") d = fx::qualify_static(s.path / which, "check");
  else if (which == "rejected") d = fx::qualify_rejected(s.path / which);
  else if (which == "qualify-nogpu") d = fx::qualify_static(s.path / which);
  else if (which == "compare") d = fx::compare_gpu(s.path / which);
  else if (which == "compare-nogpu") d = fx::compare_static(s.path / which);
  return cache[which] = d;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// The markup of one chart (<svg id="ID" ...> ... </svg>).
std::string chart(const std::string& page, const std::string& id) {
  const std::size_t b = page.find("<svg id=\"" + id + "\"");
  if (b == std::string::npos) return "";
  return page.substr(b, page.find("</svg>", b) - b);
}

std::string section(const std::string& page, const std::string& id) {
  const std::size_t b = page.find("<section id=\"" + id + "\"");
  if (b == std::string::npos) return "";
  return page.substr(b, page.find("</section>", b) - b);
}

std::string error_of(const json& d) {
  try {
    (void)render_html(d);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Html, QualifyPageHasEverySection) {
  const json& d = html_doc("qualify");
  ASSERT_EQ(d.at("schema"), "kqual.qualify/1");
  const std::string page = render_html(d);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"verdict", "speedup", "startup", "roofline", "correctness", "phases", "provenance"})
    EXPECT_FALSE(section(page, id).empty()) << id;
  const std::string verdict = section(page, "verdict");
  EXPECT_NE(verdict.find("Verdict: SHIP"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("class=\"verdict good\""), std::string::npos);
  // Every reason and every would-reverse line of the results is on the page.
  for (const auto& x : d.at("verdict").at("would_reverse")) EXPECT_NE(verdict.find(x.get<std::string>()), std::string::npos);
  EXPECT_NE(verdict.find("What would reverse it"), std::string::npos);
  // Provenance: device, driver, toolkit, git revision, command.
  const std::string prov = section(page, "provenance");
  for (const char* s : {"NVIDIA H200 (sm_90, 132 SMs, L2 60 MiB)", "CUDA driver API 13.0", "CUDA headers", "git revision",
                        "kqual qualify candidates/residual_add_relu/good"})
    EXPECT_NE(prov.find(s), std::string::npos) << s << "\n" << prov;
  // Correctness: the candidate and both baselines, with the counts.
  const std::string corr = section(page, "correctness");
  EXPECT_EQ(count(corr, "<tr>"), 4u) << corr;  // header + candidate + 2 baselines
  EXPECT_NE(corr.find("<td class=\"num\">44</td>"), std::string::npos) << corr;  // 40 passed + 4 refused cases
  // Qualify measures no startup: the section says so.
  EXPECT_NE(section(page, "startup").find("not run:"), std::string::npos);
}

TEST(Html, OneBarAndIntervalPerShapeAndBaseline) {
  const json& d = html_doc("qualify");
  const std::string page = render_html(d);
  std::size_t comparisons = 0, timed = 0;
  for (const auto& sh : d.at("timing").at("shapes")) {
    comparisons += sh.at("candidate_vs_baselines").size();
    for (const auto& s : sh.at("series")) timed += s.contains("summary_ms");
  }
  ASSERT_EQ(comparisons, 6u);  // 3 shapes x 2 baselines
  EXPECT_EQ(count(page, "<svg "), 2u);
  const std::string speed = chart(page, "speedup-chart");
  EXPECT_EQ(count(speed, "<rect class=\"bar "), comparisons);
  EXPECT_EQ(count(speed, "<line class=\"ci\""), comparisons);
  EXPECT_EQ(count(speed, "<line class=\"ref\""), 1u);
  EXPECT_EQ(count(speed, "<rect class=\"band\""), 1u);  // the ±2 % equivalence margin
  EXPECT_EQ(count(speed, "<text class=\"group\""), 3u);  // one heading per shape
  // Each baseline is named in its row; the fastest is marked.
  EXPECT_EQ(count(speed, ">eager"), 3u) << speed;
  EXPECT_NE(speed.find("(fastest)"), std::string::npos);
  // The large shape: the candidate is about 2x faster than eager, bar green.
  EXPECT_NE(speed.find("2.01x"), std::string::npos) << speed;
  EXPECT_NE(speed.find("<rect class=\"bar good\""), std::string::npos);
  const std::string roof = chart(page, "roofline-chart");
  EXPECT_EQ(count(roof, "<rect class=\"bar "), timed);  // every implementation at every shape
  EXPECT_EQ(count(roof, "<line class=\"ci\""), 0u);
  EXPECT_NE(section(page, "roofline").find("TB/s"), std::string::npos);
}

// One shape, one call: the speed-up section shows the timing phase's comparisons as data and colours
// and names only the decision's call (the speed rule, against the fastest baseline). It showed
// "inconclusive" from the timing phase's 2 % rank test beside the decision's "no_difference".
TEST(Html, TheSpeedUpSectionShowsOneRulesCallPerShape) {
  json d = html_doc("qualify");
  for (auto& sh : d["timing"]["shapes"])
    for (auto& cmp : sh["candidate_vs_baselines"]) cmp["verdict"] = "inconclusive";
  for (auto& row : d["verdict"]["speed"]["shapes"]) row["verdict"] = "no_difference";
  const std::string speed = section(render_html(d), "speedup");
  EXPECT_EQ(speed.find("inconclusive"), std::string::npos) << speed;
  EXPECT_EQ(count(speed, ">no difference<"), d["timing"]["shapes"].size()) << speed;  // one per shape, its fastest row
  EXPECT_NE(speed.find("decision's call"), std::string::npos) << speed;
}

TEST(Html, ComparePageShowsWarmStartupAndProfiles) {
  const json& d = html_doc("compare");
  ASSERT_EQ(d.at("schema"), "kqual.compare/1");
  const std::string page = render_html(d);
  for (const char* id : {"verdict", "speedup", "startup", "roofline", "correctness", "decisions", "phases", "provenance"})
    EXPECT_FALSE(section(page, id).empty()) << id;
  // Speed-up and startup, then the service view (issue 25): first-request and all-request latency
  // distributions of both sides per profile (two profiles).
  EXPECT_EQ(count(page, "<svg "), 6u);
  const std::string service = section(page, "service");
  EXPECT_EQ(count(service, "<polyline "), 8u) << service;  // OLD and NEW in each of the four charts
  EXPECT_NE(service.find("first_request (n "), std::string::npos);
  const std::string speed = chart(page, "speedup-chart");
  EXPECT_EQ(count(speed, "<rect class=\"bar "), d.at("warm").at("shapes").size());
  EXPECT_EQ(count(speed, "<line class=\"ci\""), d.at("warm").at("shapes").size());
  EXPECT_NE(speed.find("(decision shape)"), std::string::npos);
  const std::string st = chart(page, "startup-chart");
  EXPECT_EQ(count(st, "<rect class=\"bar "), 3u);  // cache off, cold, warm
  EXPECT_EQ(count(st, "<line class=\"ci\""), 3u);
  EXPECT_EQ(count(st, "<rect class=\"bar bad\""), 2u) << st;  // +80 ms JIT with the cache off or cold
  for (const char* m : {"JIT cache off, LAZY loading", "JIT cache cold, LAZY loading", "JIT cache warm, LAZY loading"}) EXPECT_NE(st.find(m), std::string::npos) << m;
  // The first profile decides; what would reverse it is its list.
  const json& first = d.at("decisions").at(0).at("decision");
  ASSERT_FALSE(first.at("would_reverse").empty());
  const std::string verdict = section(page, "verdict");
  EXPECT_NE(verdict.find("What would reverse it"), std::string::npos);
  EXPECT_EQ(count(verdict, "<li>"), d.at("verdict").at("reasons").size() + first.at("would_reverse").size()) << verdict;
  const std::string decisions = section(page, "decisions");
  EXPECT_NE(decisions.find("<td>long-lived server</td>"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("<td>cold-start-heavy service</td>"), std::string::npos);
  EXPECT_NE(section(page, "roofline").find("not run:"), std::string::npos);
  EXPECT_NE(section(page, "correctness").find("both accepted"), std::string::npos);
}

TEST(Html, RunsWithoutAGpuSayWhatWasNotRun) {
  for (const char* which : {"qualify-nogpu", "check"}) {
    const std::string page = render_html(html_doc(which));
    EXPECT_EQ(count(page, "<svg"), 0u) << which;
    for (const char* id : {"speedup", "roofline", "correctness"}) {
      const std::string s = section(page, id);
      EXPECT_NE(s.find("<p class=\"note notrun\">not run: needs a GPU"), std::string::npos) << which << " " << id << "\n" << s;
    }
    EXPECT_NE(section(page, "verdict").find("INCOMPLETE"), std::string::npos);
    EXPECT_NE(section(page, "provenance").find("none: no GPU was used by this run"), std::string::npos);
  }
  EXPECT_NE(render_html(html_doc("check")).find("<h1>kqual check:"), std::string::npos);
  const std::string page = render_html(html_doc("compare-nogpu"));
  EXPECT_EQ(count(page, "<svg"), 0u);
  for (const char* id : {"speedup", "startup", "correctness", "decisions"})
    EXPECT_NE(section(page, id).find("not run: needs a GPU"), std::string::npos) << id << "\n" << section(page, id);
}

TEST(Html, RejectedCandidateShowsFailuresByCode) {
  const std::string page = render_html(html_doc("rejected"));
  const std::string corr = section(page, "correctness");
  EXPECT_NE(corr.find("<code>wrong_value</code> × 2"), std::string::npos) << corr;
  EXPECT_NE(corr.find("<code>unwritten_output</code> × 1"), std::string::npos) << corr;
  EXPECT_NE(corr.find("First failing cases"), std::string::npos);
  EXPECT_NE(corr.find("f32/n=4099/poison/off=0"), std::string::npos);
  EXPECT_NE(section(page, "speedup").find("not run: the candidate is incorrect"), std::string::npos);
  EXPECT_NE(section(page, "verdict").find("DO NOT SHIP"), std::string::npos);
  EXPECT_NE(section(page, "verdict").find("class=\"verdict bad\""), std::string::npos);
}

TEST(Html, EveryTextFromTheDocumentIsEscaped) {
  json d = html_doc("qualify");
  d["verdict"].erase("speed");  // its table's own markup (bold rows) is not document text
  d["candidate"]["name"] = "<script>alert('x')</script>";
  d["timing"]["shapes"][0]["candidate_vs_baselines"][0]["baseline"] = "</svg><b>&";
  d["timing"]["shapes"][1]["shape"] = "n=\"><img src=x onerror=alert(1)>";
  d["verdict"]["reasons"].push_back("<iframe src=\"https://example.com\"></iframe>");
  d["phases"]["<p>"] = "<em>status</em>";
  d["provenance"]["command_line"] = "kqual qualify '<x>'";
  const std::string page = render_html(d);
  for (const char* raw : {"<script", "<img", "<iframe", "<b>", "<em>", "<x>", "</svg><b>"})
    EXPECT_EQ(page.find(raw), std::string::npos) << raw;
  EXPECT_NE(page.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("&lt;/svg&gt;&lt;b&gt;&amp;"), std::string::npos);
  EXPECT_NE(page.find("<td>&lt;p&gt;</td><td>&lt;em&gt;status&lt;/em&gt;</td>"), std::string::npos);
  EXPECT_NE(page.find("n=&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  // The charts keep their shape: escaping did not cost a bar.
  EXPECT_EQ(count(chart(page, "speedup-chart"), "<rect class=\"bar "), 6u);
}

TEST(Html, SelfContainedAndDeterministic) {
  const std::string page = render_html(html_doc("compare"));
  EXPECT_EQ(page, render_html(html_doc("compare")));
  for (const char* s : {"<script", "<link", "src=", "href=", "@import", "url("}) EXPECT_EQ(page.find(s), std::string::npos) << s;
  // The only URL is the SVG namespace name, which is never fetched.
  std::regex url("https?://[^\"' <]+");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), url); it != std::sregex_iterator(); ++it)
    EXPECT_EQ(it->str(), "http://www.w3.org/2000/svg");
  EXPECT_NE(page.find("Content-Security-Policy"), std::string::npos);
}

TEST(Html, DocumentsItCannotRenderAreInputErrorsNamingWhy) {
  EXPECT_NE(error_of(json::array()).find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of(json{{"verdict", {}}}).find("no 'schema'"), std::string::npos);
  EXPECT_NE(error_of(json{{"schema", "kqual.selftest/1"}}).find("kqual selftest results have no report page"), std::string::npos);
  EXPECT_NE(error_of(json{{"schema", "kqual.qualify/2"}}).find("newer kqual"), std::string::npos);
  EXPECT_NE(error_of(json{{"schema", "other.tool/1"}}).find("not a kqual schema name"), std::string::npos);
  EXPECT_NE(error_of(json{{"schema", 7}}).find("schema: expected a string, found number"), std::string::npos);
  EXPECT_NE(error_of(json{{"schema", "kqual.compare/1"}}).find("no 'verdict'"), std::string::npos);

  json d = html_doc("qualify");
  d["timing"]["shapes"][1]["candidate_vs_baselines"][0]["ci"] = "wide";
  EXPECT_NE(error_of(d).find("timing.shapes[1].candidate_vs_baselines[0].ci: expected an array, found string"), std::string::npos)
      << error_of(d);
  d = html_doc("qualify");
  d["timing"]["shapes"][2]["candidate_vs_baselines"][1]["ci"] = json::array({0.5});
  EXPECT_NE(error_of(d).find("timing.shapes[2].candidate_vs_baselines[1].ci: expected [lo, hi], found 1 element(s)"),
            std::string::npos);
  d = html_doc("qualify");
  d["timing"]["shapes"] = json::object();
  EXPECT_NE(error_of(d).find("timing.shapes: expected an array, found object"), std::string::npos);
  d = html_doc("compare");
  d["startup"]["modes"][0]["first_request_delta_ms"]["estimate"] = "80";
  EXPECT_NE(error_of(d).find("startup.modes[0].first_request_delta_ms.estimate: expected a number, found string"),
            std::string::npos);
  d = html_doc("compare");
  d["verdict"]["decision"] = nullptr;
  EXPECT_NE(error_of(d).find("verdict: no 'decision'"), std::string::npos);
}

TEST(Html, ResultsKindFollowsTheSchema) {
  EXPECT_EQ(results_kind(json{{"schema", "kqual.qualify/1"}}), ResultsKind::qualify);
  EXPECT_EQ(results_kind(json{{"schema", "kqual.bench/1"}}), ResultsKind::qualify);
  EXPECT_EQ(results_kind(json{{"schema", "kqual.compare/1"}}), ResultsKind::compare);
  // Written before the one naming scheme: still read.
  EXPECT_EQ(results_kind(json{{"schema", "kqual.qualify"}}), ResultsKind::qualify);
  json old = html_doc("qualify");
  old["schema"] = "kqual.qualify";
  EXPECT_EQ(count(render_html(old), "<svg "), 2u);
}

}  // namespace
}  // namespace kqual::report

namespace kqual::report {
namespace {
// The decision section (verdict.speed): one row per shape and the overall effect, when the document
// has it; a document written before the speed rule has no such section.
TEST(Html, TheDecisionSectionShowsEveryShapeAndTheOverallEffect) {
  json d = html_doc("qualify");
  d["verdict"].erase("speed");  // as written before the speed rule
  EXPECT_TRUE(section(render_html(d), "decision").empty());
  const pipeline::DecideOutcome now = pipeline::decide_results(d, {});
  d["verdict"] = now.verdict_json;
  const std::string s = section(render_html(d), "decision");
  ASSERT_FALSE(s.empty());
  EXPECT_NE(s.find("<b>overall</b>"), std::string::npos) << s;
  EXPECT_EQ(count(s, "<tr>"), 1 + d.at("timing").at("shapes").size() + 1) << s;  // header, shapes, overall
  EXPECT_NE(s.find(d.at("verdict").at("speed").at("deciding").get<std::string>().substr(0, 20)), std::string::npos) << s;
}
}  // namespace
}  // namespace kqual::report
