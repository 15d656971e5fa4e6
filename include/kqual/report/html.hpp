#pragma once
// One self-contained HTML page from a results document (`kqual report RESULTS.json --html OUT.html`):
// inline CSS and SVG charts, no script, nothing fetched. It reads the qualify family
// (kqual.qualify/1, kqual.check/1, kqual.bench/1) and kqual.compare/1, and shows the verdict with its
// reasons and what would reverse it, speed-up per shape with 95 % intervals, startup per JIT cache
// mode, roofline placement, correctness, phases and provenance. A section the run did not produce is
// a "not run: <why>" note. docs/report.md.
#include <string>
#include <string_view>

#include "kqual/core/json.hpp"

namespace kqual::report {

// Which page a results document gets, from its "schema"; Error(input) naming what is wrong for a
// document that is not one kqual report can render (not an object, no schema, another command, a
// newer version).
enum class ResultsKind { qualify, compare };
ResultsKind results_kind(const json& results);

// The page. Pure: the same document gives the same bytes. Every text taken from the document is
// HTML-escaped. Error(input) names the field (e.g. `timing.shapes[1].series[0].summary_ms.median:
// expected a number, found string`) when a section that is present has the wrong shape.
std::string render_html(const json& results);

// Text escaped for an HTML page (& < > " '): the one escape every page kqual writes uses.
std::string html_escape(std::string_view s);

}  // namespace kqual::report
