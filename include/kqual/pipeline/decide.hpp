#pragma once
// `kqual decide RESULTS.json`: a recorded qualify, check, bench or compare result judged again,
// offline, from its recorded samples (docs/decision.md, "Re-judging a result"). Nothing is measured:
// the same samples under the same policy give the verdict the run gave, and another profile or
// margin answers "and under our profile?" without a GPU. Results written before the speed rule
// (kqual.qualify/1 without verdict.speed) are read the same way.
#include <string>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::pipeline {

struct DecideOptions {
  std::vector<std::string> profiles;  // profile files; empty → qualify: the default, compare: the recorded ones
  std::string margin;                 // --margin "3%,0.5us" ("" → the profile's, else the defaults)
  std::string regression_limit;       // --regression-limit "10%"
};

struct DecideOutcome {
  std::string input_schema;           // "kqual.qualify/1", ...
  std::string recorded;               // the verdict word the run recorded
  std::string verdict;                // the verdict now
  std::string summary;                // the sentence that decided it
  json verdict_json;                  // qualify family: decision::to_json(QualifyVerdict); compare: per profile
  std::string text;                   // what the command prints (Markdown)
  std::vector<std::string> notes;     // what could not be re-judged offline, and why
  int exit_code = 0;                  // of `verdict`
};

// Error(input) naming the field for a document that is not a qualify-family or compare results
// document, or that lacks what the verdict needs.
DecideOutcome decide_results(const json& doc, const DecideOptions& o);

}  // namespace kqual::pipeline
