// `kqual import-kernelbench PROBLEM.py --out DIR`: a KernelBench problem module as a declared contract
// folder whose reference is its Model.forward (include/kqual/import/import_kernelbench.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "command_util.hpp"
#include "kqual/import/import_kernelbench.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/json.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {
namespace {

// The command, as `kqual --help` lists it.
constexpr CommandDoc kImportKernelbenchCommand{"import-kernelbench",
                             "A KernelBench problem (class Model, get_inputs, get_init_inputs) as a declared contract folder: its forward as the "
                             "PyTorch reference, shapes and dtypes captured with PyTorch, module-level size constants as axes, the fixed shape as "
                             "the benchmark shape; refuses by name what kqual cannot express (a random forward, unsupported dtypes)"};

int run_import_kernelbench(const contract::KernelBenchImportOptions& o, const GlobalOptions& g) {
  const contract::KernelBenchImport r = contract::import_kernelbench(o);
  print_outcome(g, "import-kernelbench",
                json{{"contract", r.name}, {"out", r.out.string()}, {"bench_shape", r.bench_shape}, {"notes", r.notes}}, [&] {
                  fmt::print("imported KernelBench problem as contract {} into {} (contract.toml, reference.py, problem.py, "
                             "capture.json)\n",
                             r.name, r.out.string());
                  fmt::print("  benchmark shape: {}\n", r.bench_shape);
                  print_imported_contract_use(r.notes, r.name);
                });
  return kExitPass;
}

}  // namespace

void add_import_kernelbench_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto [cmd, o] = add_command<contract::KernelBenchImportOptions>(app, g, exit_code, kImportKernelbenchCommand, run_import_kernelbench);
  input_path(cmd->add_option("problem", o->problem, "PROBLEM.py")->required(), PathRole::file, "a KernelBench problem, .py");
  output_path(cmd->add_option("--out", o->out, "The contract folder to write (must not exist)")->required(), PathRole::folder);
  cmd->add_option("--name", o->name, "The contract's name (default kb_<file stem>)");
  auto* capture = cmd->add_option("--capture", o->capture,
                  "A capture JSON written by tools/torch/kernelbench_capture.py on a machine with PyTorch (default: run it here)");
  input_path(capture, PathRole::file);
  cmd->add_option("--max-elements", o->max_elements,
                  "Largest tensor of the benchmark shape; KernelBench's fixed shape is scaled down along its size constants to fit")
      ->capture_default_str();
  cmd->add_option("--atol", o->atol, "Absolute tolerance of float outputs (default KernelBench's: 1e-4, 1e-2 for bf16)");
  cmd->add_option("--rtol", o->rtol, "Relative tolerance of float outputs (default KernelBench's: 1e-4, 1e-2 for bf16)");
  cmd->add_option("--torch-seed", o->seed, "torch.manual_seed before Model(*get_init_inputs()) in the reference")->capture_default_str();
}

}  // namespace kqual::run
