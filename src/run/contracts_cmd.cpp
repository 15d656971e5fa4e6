// `kqual contracts`: every contract a manifest can name — the built-in ones and the declared ones
// (contract.toml files in contracts/ folders, $KQUAL_CONTRACTS and --dir) — with what each covers.
// --verify also runs each declared contract's reference on its first case (the non-triviality check
// included), so a broken reference shows here rather than in a candidate's check.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/json.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {
namespace {

struct ContractsOptions {
  std::vector<std::filesystem::path> dirs;
  bool verify = false;
};

json describe(const contract::Contract& c, const std::string& kind) {
  json dtypes = json::array();
  for (DType t : c.dtypes()) dtypes.push_back(std::string(to_string(t)));
  json j{{"name", c.name()}, {"kind", kind}, {"summary", c.summary()}, {"dims", c.given_dims()}, {"dtypes", dtypes}};
  if (auto f = contract::declared_file(c); !f.empty()) j["file"] = f.string();
  return j;
}

int run_contracts(const ContractsOptions& o, const GlobalOptions& g) {
  json out = json::array();
  int bad = 0;
  for (const auto& n : contract::contract_names()) out.push_back(describe(contract::find_contract(n), "built-in"));
  for (const auto& f : contract::discover_declared_contracts(o.dirs)) {
    try {
      const contract::Contract& c = contract::load_declared_contract(f);
      json j = describe(c, "declared");
      if (o.verify) {
        contract::Supports wide;
        wide.dtypes = c.dtypes();
        wide.min_alignment_bytes = 1;
        wide.max_n = contract::kUnlimited;
        auto cases = c.correctness_cases(wide, 1, false);
        if (cases.empty()) throw_error(ErrorKind::input, fmt::format("{}: no correctness case can be generated", f.string()));
        (void)c.reference(c.make_case(cases.front()));  // the non-triviality check runs first
        j["verified"] = fmt::format("reference ran on {} ({} cases for the widest claims)", cases.front().id, cases.size());
      }
      out.push_back(j);
    } catch (const Error& e) {
      ++bad;
      out.push_back({{"file", f.string()}, {"kind", "declared"}, {"error", e.what()}});
    }
  }
  if (g.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    for (const auto& j : out) {
      if (j.contains("error")) {
        fmt::print("{:<20} {:<9} INVALID: {}\n", "?", "declared", j["error"].get<std::string>());
        continue;
      }
      fmt::print("{:<20} {:<9} {} [{}; {}]\n", j["name"].get<std::string>(), j["kind"].get<std::string>(),
                 j["summary"].get<std::string>(), fmt::join(j["dims"].get<std::vector<std::string>>(), ", "),
                 fmt::join(j["dtypes"].get<std::vector<std::string>>(), ", "));
      if (j.contains("file")) fmt::print("{:<31}{}\n", "", j["file"].get<std::string>());
      if (j.contains("verified")) fmt::print("{:<31}{}\n", "", j["verified"].get<std::string>());
    }
  }
  return bad ? kExitInputError : kExitPass;
}

}  // namespace

void add_contracts_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto opts = std::make_shared<ContractsOptions>();
  CLI::App* cmd = app.add_subcommand("contracts", "List the contracts a manifest can name: built-in and declared (contract.toml in "
                                                  "contracts/ folders, $KQUAL_CONTRACTS, --dir); exit 2 if a declared one is invalid");
  cmd->add_option("--dir", opts->dirs, "Also look in this folder for <name>/contract.toml and <name>.toml (repeatable)");
  cmd->add_flag("--verify", opts->verify, "Run each declared contract's reference on its first case (non-triviality check included)");
  cmd->callback([opts, &g, exit_code] { *exit_code = run_contracts(*opts, g); });
}

}  // namespace kqual::run
