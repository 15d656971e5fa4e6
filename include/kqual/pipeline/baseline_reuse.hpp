#pragma once
// A baseline's correctness verdict kept across qualify runs (README, "Baselines"). The bundled
// baselines are kqual's own trusted kernels, yet every qualify checked them again (a third of its
// time on an H100). A verdict is reused only while everything that decides it
// is the same: the baseline's folder and any file its manifest names outside it, the resolved
// contract (a declared one's files), kqual's version and revision, the NVRTC that compiles it, the
// GPU (name, architecture, driver) and the check's options — the screen journal's key
// (screen_key.hpp) over those. Only accepted verdicts are kept: a baseline that failed is checked
// again every time. `kqual qualify --recheck-baselines` ignores what was kept.
#include <filesystem>
#include <optional>
#include <string>

#include "kqual/contract/declared/lookup.hpp"
#include "kqual/core/json.hpp"

namespace kqual::pipeline {

class BaselineVerdicts {
 public:
  // `root`: the folder the verdicts are kept in (kqual_cache_dir() / "baseline-correctness");
  // `device`: the worker's device JSON; `options`: what the check ran with; `contracts`: the command's
  // lookup (the contract a baseline's manifest names is part of the key).
  BaselineVerdicts(std::filesystem::path root, const json& device, json options, contract::ContractLookup contracts);
  // The key of a baseline's folder under its contract ("" when it cannot be read: never reused).
  std::string key(const std::filesystem::path& baseline_dir, const std::string& contract) const;
  // The correctness report kept under `key`, when an accepted one is; nullopt otherwise (a file
  // that does not parse or holds another key is ignored, and replaced by the next keep()).
  std::optional<json> find(const std::string& key) const;
  // Keeps an accepted report (CorrectnessReport::to_json) under `key`, written whole or not at all;
  // a rejected one, or a key of "", is not kept. A cache that cannot be written is no error.
  void keep(const std::string& key, const json& report) const;
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
  json options_;
  contract::ContractLookup contracts_;
};

// Whether a correctness report (CorrectnessReport::to_json) accepted the candidate.
bool report_accepted(const json& report);

}  // namespace kqual::pipeline
