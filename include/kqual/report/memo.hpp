#pragma once
// The decision memo, rendered from a results document (so `kqual report results.json` and
// `kqual qualify` produce the same text from the same evidence).
#include <string>

#include "kqual/core/json.hpp"
#include "kqual/report/results.hpp"

namespace kqual::report {

// The qualify family's memo (kqual.qualify, kqual.check, kqual.bench), from the typed results.
std::string render_qualify_memo(const QualifyResult& results);
// ... from a results document: qualify_result_from_json, then the above (Error(input) for a
// document of the wrong shape).
std::string render_qualify_memo(const json& results);
// kqual compare's memo (schema kqual.compare), from the results only: the memo never says more
// than the data.
std::string render_compare_memo(const CompareResult& results);
std::string render_compare_memo(const json& results);
// "Reproduce the failing case": the replay and check commands, as the memo, the console summary and
// (as HTML) the report page end with them. Markdown; empty without commands.
std::string reproduce_text(const std::optional<ReproduceCommands>& commands);
// A verdict word of results.json ("do_not_ship") as a memo prints it ("do not ship as built");
// an unknown word is printed as it is.
std::string verdict_words(const json& decision);

// kqual startup-torch's memo: the step, each loading mode's phases (medians), the service's first-request
// p99 per profile with warm and with the measured cold starts, and what ran. From its results.json
// (schema kqual.startup_torch/1; only ever JSON).
std::string render_torch_startup_memo(const json& results);

}  // namespace kqual::report
