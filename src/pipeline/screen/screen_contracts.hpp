#pragma once
// Internal to src/pipeline/: kqual screen's contracts, resolved once before any candidate runs
// (screen_contracts.cpp; used by screen.cpp). Not a public header.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/pipeline/screen.hpp"

namespace kqual::pipeline {

struct ScreenContracts {
  std::map<std::string, std::filesystem::path> files;  // contract name -> its file ("" for a built-in)
  // Per candidate: refused before it runs because it names, under a contract name this screen
  // already resolved, another file than the one resolved.
  std::vector<std::optional<ScreenVerdict>> refusals;
  contract::ContractLookup lookup;  // what resolved them: the screen's --contracts and --allow-candidate-contract
  // name -> {origin, file, sha256, supplied_with_candidate}: results.json's "contracts".
  json to_json() const;
};

// Resolves `only` (screen --contract: a name) and every candidate's contract, names first (the
// user's and the project's folders), then the files candidates name by path, so that one name means
// one file for the whole screen whatever order the builders run in. A candidate whose contract
// cannot be resolved at all is left to load_manifest, which says why (manifest_invalid).
ScreenContracts resolve_screen_contracts(const std::vector<std::filesystem::path>& cands, const std::string& only,
                                         const contract::ContractLookup& lookup);

}  // namespace kqual::pipeline
