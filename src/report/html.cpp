// The HTML report: results document → one self-contained page (docs/report.md); which page a
// document gets. The pages: html_qualify.cpp, html_compare.cpp; their pieces: html_page.hpp.
//
// Everything is read through Node (html_node.hpp), which knows where in the document it is, so a
// field of the wrong type is reported by its path instead of as an exception from deep inside the
// JSON library. A section that is absent is not an error: the run did not produce it, and the page
// says why.
#include "kqual/report/html.hpp"

#include <fmt/format.h>

#include "html_page.hpp"
#include "kqual/report/memo.hpp"

namespace kqual::report {

using detail::Node;

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
  if (kind == ResultsKind::compare) return detail::render_compare(r, schema);
  const auto name = parse_schema_name(schema);
  return detail::render_qualify(r, schema, name ? name->command : "qualify");
}

std::string html_escape(std::string_view s) { return detail::esc(s); }

}  // namespace kqual::report
