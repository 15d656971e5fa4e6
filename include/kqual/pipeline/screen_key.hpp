#pragma once
// What decides a screen verdict, hashed into the journal's `key` (docs/screen.md, "The journal and
// resuming"): a journaled verdict is reused only when every part is the same — the candidate folder's
// files, a source or image its manifest names outside the folder, the resolved contract (its files,
// reference included, or a built-in's name), kqual's version and git revision, and the options that
// decide a verdict. Editing any of them makes the candidate run again.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kqual/contract/declared/lookup.hpp"
#include "kqual/core/json.hpp"

namespace kqual::pipeline {

class VerdictKeys {
 public:
  // `options`: screen_verdict_options(); `contract`: --contract ("" = each manifest's own); `contracts`:
  // the command's lookup, which decides the file a contract value means.
  VerdictKeys(json options, std::string contract, contract::ContractLookup contracts);
  // The parts, as JSON (kqual, options, candidate, outside, contract); exposed for tests and for
  // naming what changed.
  json parts(const std::filesystem::path& candidate_dir);
  // SHA-256 of parts(); "" when the folder cannot be read (the candidate then always runs).
  std::string key(const std::filesystem::path& candidate_dir);
  // --timing: the verdict also reads the contract's resolved baselines (their folders' contents) and
  // the profile's content (not its path): both enter the key.
  void time_against(std::vector<std::filesystem::path> baseline_dirs, std::filesystem::path profile);

 private:
  json contract_part(const std::string& value, const std::filesystem::path& near);
  json options_;
  std::string contract_;
  contract::ContractLookup lookup_;
  std::map<std::string, json> contracts_;  // by value (and folder, for a path): resolved once per screen
  bool timed_ = false;
  std::vector<std::filesystem::path> baseline_dirs_;
  std::filesystem::path profile_;
  std::map<std::string, json> baselines_;  // by contract name: resolved once per screen
};

}  // namespace kqual::pipeline
