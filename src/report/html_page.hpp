#pragma once
// Internal to src/report/: the HTML page's shared pieces (html_page.cpp), its SVG bar charts
// (html_chart.cpp) and the two pages (html_qualify.cpp, html_compare.cpp) that render_html picks
// between (html.cpp). Not a public header.
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "html_node.hpp"
#include "html_text.hpp"

namespace kqual::report::detail {

// ---- Writing HTML (html_page.cpp) ----

// CSS class for a verdict word; a fixed set, so nothing from the document reaches an attribute raw.
const char* verdict_class(std::string_view v);
std::string not_run(const std::string& why);
// The reason a phase did not run, as the results' phases table states it.
std::string phase_text(const Node& r, const char* phase, const std::string& dflt);
std::string fixed(double v, int digits);
std::string ms_text(double v);
std::string verdict_word(const std::string& v);
std::string list(const std::vector<std::string>& items);
// "<table>" with one header row (`header_cells`: "<th>shape</th>...") above `rows` (whole <tr> lines).
std::string table(const std::string& header_cells, const std::string& rows);
std::vector<std::string> strings(const Node& arr);
// Verdict block: decision, summary, reasons, and what would reverse it.
std::string verdict_section(const Node& verdict, const std::string& headline, const std::vector<std::string>& reverse,
                            const std::string& reverse_missing);
std::string phases_section(const Node& r);
std::string provenance_section(const Node& r, const std::vector<std::pair<std::string, std::string>>& artifacts);
std::string page(const std::string& title, const std::string& subtitle, const std::string& body, const std::string& schema);
std::string speedup_text(double s);
// Correctness table rows of one implementation (side), under kCorrectnessHeader; its first failing cases.
std::string correctness_row(const Node& k, const std::string& name);
std::string failing_cases(const Node& k, const std::string& who);
extern const char* const kCorrectnessHeader;

// ---- SVG charts (html_chart.cpp) ----

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

std::string svg_chart(const Chart& c);
// The speed-up chart both reports draw: log scale around 1x ("no difference").
Chart speedup_chart(std::string caption);

// ---- The two pages ----

// html_qualify.cpp: kqual.qualify/1, kqual.check/1, kqual.bench/1 (`command` names which).
std::string render_qualify(const Node& r, const std::string& schema, const std::string& command);
// html_compare.cpp: kqual.compare/1.
std::string render_compare(const Node& r, const std::string& schema);

}  // namespace kqual::report::detail
