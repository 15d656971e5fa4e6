// `kqual import-definition DEF.json [--workloads W.jsonl] --out DIR`: a flashinfer-bench or
// SOL-ExecBench Definition as a declared contract folder (include/kqual/contract/importers/import_definition.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kqual/contract/importers/import_definition.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/json.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {

void add_import_definition_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto o = std::make_shared<contract::DefinitionImportOptions>();
  auto cap = std::make_shared<double>(0);
  CLI::App* cmd = app.add_subcommand("import-definition",
                                     "A flashinfer-bench / SOL-ExecBench Definition (JSON) as a declared contract folder: axes, "
                                     "tensors, constraints (evaluated), the PyTorch reference, the workloads as benchmark shapes "
                                     "and their tolerances; refuses by name what kqual cannot express");
  cmd->add_option("definition", o->definition, "DEF.json")->required();
  cmd->add_option("--workloads", o->workloads, "The Definition's workloads (JSONL): axis values, scalar values, tolerances");
  cmd->add_option("--out", o->out, "The contract folder to write (must not exist)")->required();
  cmd->add_option("--atol", o->atol,
                  "Absolute tolerance when neither the Definition nor its workloads give one (default: kqual's, from each output's "
                  "dtype and the reduction length)");
  cmd->add_option("--rtol", o->rtol,
                  "Relative tolerance when neither the Definition nor its workloads give one (default: kqual's, from each output's "
                  "dtype and the reduction length)");
  cmd->add_option("--cap", *cap, "Hard cap on every element's error when the workloads give required_matched_ratio without max_error_cap");
  cmd->callback([o, cap, &g, exit_code] {
    if (*cap > 0) o->cap = *cap;
    const contract::DefinitionImport r = contract::import_definition(*o);
    if (g.json) {
      json doc = schema_header("import-definition");
      doc.update(json{{"contract", r.name}, {"out", r.out.string()}, {"workloads", r.workloads}, {"bench_shapes", r.bench_shapes},
                      {"notes", r.notes}});
      fmt::print("{}\n", doc.dump(2));
    } else {
      fmt::print("imported Definition as contract {} into {} (contract.toml, reference.py){}\n", r.name, r.out.string(),
                 r.workloads ? fmt::format("; {} workload(s), {} benchmark shape(s)", r.workloads, r.bench_shapes.size()) : "");
      for (const auto& n : r.notes) fmt::print("  note: {}\n", n);
      fmt::print("a candidate names it with contract = \"{}\" (found through --contracts DIR, $KQUAL_CONTRACTS or the project's contracts/ folder)\n", r.name);
    }
    *exit_code = kExitPass;
  });
}

}  // namespace kqual::run
