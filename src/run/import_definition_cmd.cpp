// `kqual import-definition DEF.json [--workloads W.jsonl] --out DIR`: a flashinfer-bench or
// SOL-ExecBench Definition as a declared contract folder (include/kqual/import/import_definition.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "command_util.hpp"
#include "kqual/import/import_definition.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/json.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {
namespace {

// The command, as `kqual --help` lists it.
constexpr CommandDoc kImportDefinitionCommand{"import-definition",
                             "A flashinfer-bench / SOL-ExecBench Definition (JSON) as a declared contract folder: axes, "
                             "tensors, constraints (evaluated), the PyTorch reference, the workloads as benchmark shapes "
                             "and their tolerances; refuses by name what kqual cannot express"};

struct ImportDefinitionArgs {
  contract::DefinitionImportOptions o;
  double cap = 0;  // 0: not given
  std::vector<std::string> scalars;  // NAME=VALUE
};

int run_import_definition(ImportDefinitionArgs& a, const GlobalOptions& g) {
  if (a.cap > 0) a.o.cap = a.cap;
  for (const auto& nv : a.scalars) {
    const auto eq = nv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == nv.size())
      throw_error(ErrorKind::usage, fmt::format("--scalar {}: expected NAME=VALUE", nv));
    a.o.scalars[nv.substr(0, eq)] = nv.substr(eq + 1);
  }
  const contract::DefinitionImport r = contract::import_definition(a.o);
  print_outcome(g, "import-definition",
                json{{"contract", r.name}, {"out", r.out.string()}, {"workloads", r.workloads}, {"bench_shapes", r.bench_shapes},
                     {"notes", r.notes}},
                [&] {
                  fmt::print("imported Definition as contract {} into {} (contract.toml, reference.py){}\n", r.name, r.out.string(),
                             r.workloads ? fmt::format("; {} workload(s), {} benchmark shape(s)", r.workloads, r.bench_shapes.size())
                                         : "");
                  print_imported_contract_use(r.notes, r.name);
                });
  return kExitPass;
}

}  // namespace

void add_import_definition_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto [cmd, a] = add_command<ImportDefinitionArgs>(app, g, exit_code, kImportDefinitionCommand, run_import_definition);
  input_path(cmd->add_option("definition", a->o.definition, "DEF.json")->required(), PathRole::file,
             "a Definition JSON file");
  input_path(cmd->add_option("--workloads", a->o.workloads, "The Definition's workloads (JSONL): axis values, scalar values, tolerances"),
             PathRole::file, "the Definition's workloads, JSONL");
  output_path(cmd->add_option("--out", a->o.out, "The contract folder to write (must not exist)")->required(), PathRole::folder);
  cmd->add_option("--scalar", a->scalars,
                  "NAME=VALUE (repeatable): the value a scalar input holds where the workloads give it several (default: the value "
                  "most workloads give); the workloads giving another value are left out, named");
  cmd->add_option("--atol", a->o.atol,
                  "Absolute tolerance when neither the Definition nor its workloads give one (default: kqual's, from each output's "
                  "dtype and the reduction length)");
  cmd->add_option("--rtol", a->o.rtol,
                  "Relative tolerance when neither the Definition nor its workloads give one (default: kqual's, from each output's "
                  "dtype and the reduction length)");
  cmd->add_option("--cap", a->cap, "Hard cap on every element's error when the workloads give required_matched_ratio without max_error_cap");
}

}  // namespace kqual::run
