// The options that say where the judge comes from (docs/declared-contracts.md, "Where contracts
// come from"): one definition for every command that reads candidate manifests, so that their names
// and help cannot drift apart.
#include <CLI/CLI.hpp>

#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {

void add_contract_source_options(CLI::App* cmd, contract::ContractSources& s) {
  auto* contracts = cmd->add_option("--contracts", s.user_dirs,
                  "A folder of declared contracts (<name>/contract.toml or <name>.toml) that manifests may name "
                  "(repeatable; looked up before $KQUAL_CONTRACTS and the project's contracts/; never the candidate's "
                  "folder)")
      ->allow_extra_args(false);  // one folder per --contracts: the candidate that follows is not a folder of contracts
  input_path(contracts, PathRole::folder, "a folder of declared contracts");
  cmd->add_flag("--allow-candidate-contract", s.allow_candidate_contract,
                "Accept a contract file a manifest names by path outside the project's and your contract folders (a "
                "contract supplied with the candidate); results.json and the memo name it with its SHA-256. Without "
                "this flag such a manifest is an input error (exit 2)");
}

void add_baseline_option(CLI::App* cmd, std::vector<std::filesystem::path>& dirs) {
  auto* baselines = cmd->add_option("--baselines", dirs,
                  "A folder of baselines (<contract>/<name>/kqual.toml) to time against (repeatable; with "
                  "$KQUAL_BASELINES and the project's baselines/; never found from the candidate's folder)")
      ->allow_extra_args(false);
  input_path(baselines, PathRole::folder, "a folder of baselines, <contract>/<name>/kqual.toml");
}

}  // namespace kqual::run
