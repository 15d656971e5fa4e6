// kqual screen's contracts, resolved once before any candidate runs (screen_contracts.hpp). Within
// one process a contract name stands for one file (contract/declared/declared.hpp's registry): without this
// pass, whichever candidate's manifest a builder thread read first would fix that name for the rest.
#include "screen_contracts.hpp"

#include <fmt/format.h>

#include "kqual/build/manifest.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

ScreenVerdict contract_mismatch_verdict(const fs::path& cand, const std::string& value, const std::string& name, const fs::path& named,
                       const fs::path& resolved) {
  ScreenVerdict v;
  v.verdict = ScreenVerdictKind::refused;
  v.reason = "contract_mismatch";
  v.codes["contract_mismatch"] = 1;
  v.contract = name;
  v.detail = fmt::format("{}: candidate.contract \"{}\" is the file {} under the name '{}', but '{}' is {} for this screen; "
                         "one contract name judges by one file: rename the contract, or screen this candidate apart",
                         (cand / "kqual.toml").string(), value, named.string(), name, name, resolved.string());
  return v;
}

}  // namespace

json ScreenContracts::to_json() const {
  json j = json::object();
  for (const auto& [name, file] : files) {
    const contract::ContractProvenance p = lookup.provenance(contract::find_contract(name));
    json e = {{"origin", contract::to_string(p.origin)}, {"supplied_with_candidate", p.origin == contract::ContractOrigin::candidate}};
    if (!p.file.empty()) {
      e["file"] = p.file.string();
      e["sha256"] = p.sha256;
    }
    j[name] = e;
  }
  return j;
}

ScreenContracts resolve_screen_contracts(const std::vector<fs::path>& cands, const std::string& only,
                                         const contract::ContractLookup& lookup) {
  ScreenContracts out;
  out.lookup = lookup;
  out.refusals.resize(cands.size());
  auto record = [&](const contract::Contract& c) { out.files[c.name()] = contract::declared_file(c); };
  if (!only.empty()) {
    if (contract::contract_value_is_path(only))
      throw_error(ErrorKind::usage, fmt::format("--contract {}: give a contract's name (add its folder with --contracts DIR)", only));
    record(lookup.resolve(only, {}));  // an unknown name: a clear error now
  }
  std::vector<std::string> values(cands.size());
  for (std::size_t i = 0; i < cands.size(); ++i) values[i] = build::manifest_contract_value(cands[i]);
  // Names first: the user's and the project's folders decide what a name means; then files
  // candidates bring, which may not take a name already resolved to another file.
  for (const bool paths : {false, true}) {
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const std::string& v = values[i];
      if (v.empty() || contract::contract_value_is_path(v) != paths) continue;
      const fs::path file = lookup.locate(v, cands[i]);
      const std::string name = paths ? contract::declared_contract_name(file) : v;
      const fs::path held = name.empty() ? fs::path() : contract::registered_contract_file(name);
      if (!file.empty() && !held.empty() && held != file) {
        out.refusals[i] = contract_mismatch_verdict(cands[i], v, name, file, held);
        continue;
      }
      try {
        record(lookup.resolve(v, cands[i]));
      } catch (const Error&) {
        // unknown, invalid or not allowed: load_manifest refuses this candidate with the reason
      }
    }
  }
  return out;
}

}  // namespace kqual::pipeline
