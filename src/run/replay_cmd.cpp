// `kqual replay RESULTS.json [--case ID] --out DIR`: a recorded failing case as a folder that stands
// alone — the candidate, the case's inputs and reference, and the one command that runs it again
// (docs/replay.md). No GPU.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "command_util.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/json.hpp"
#include "kqual/pipeline/replay.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {
namespace {

// The command, as `kqual --help` lists it.
constexpr CommandDoc kReplayCommand{"replay",
                             "Write a folder that reproduces one failing case of a recorded qualify, check or compare result: the candidate's "
                             "source and manifest, the case's inputs and reference output (.npy and raw bytes), the failing elements, and a README "
                             "with the one command that runs exactly that case again (kqual check --case). No GPU (docs/replay.md)"};

struct ReplayArgs {
  std::string input;
  pipeline::ReplayOptions o;
};

// The words: where the case was written and the commands that run it again.
void print_replay(const pipeline::ReplayOutcome& out) {
  fmt::print("replay: case {} ({}) written to {}\n", out.case_id, out.code, out.dir.string());
  if (out.generated_on_device) fmt::print("  inputs generated on the device: the generator's seed and streams are in case.json\n");
  else fmt::print("  {} tensor file(s){}\n", out.tensors.size(), out.inputs_verified ? ", inputs equal to the run's (SHA-256)" : "");
  fmt::print("run it again (from {}):\n", out.dir.parent_path().string());
  fmt::print("  cd {}\n", out.dir.filename().string());
  for (const auto& c : out.commands) fmt::print("  {}\n", c);
  for (const auto& n : out.notes) fmt::print("note: {}\n", n);
}

int run_replay(ReplayArgs& a, const json& doc, const GlobalOptions& g) {
  a.o.results = a.input;
  a.o.progress = progress_for(g, "replay").sink();
  const pipeline::ReplayOutcome out = naming_results_file(a.input, doc, [&] { return pipeline::replay(doc, a.o); });
  print_outcome(g, "replay", [&] { return out.to_json(); }, [&] { print_replay(out); });
  return kExitPass;
}

}  // namespace

void add_replay_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto [cmd, a] = add_results_command<ReplayArgs>(app, g, exit_code, kReplayCommand, run_replay);
  cmd->add_option("--case", a->o.case_id,
                  "The case's id as results.json names it (default: the first failing case; compare: the first where OLD and "
                  "NEW differ)");
  output_path(cmd->add_option("--out", a->o.out_dir, "The reproducer folder to write (must not exist, or be empty)")->required(),
              PathRole::folder);
  cmd->add_option("--max-bytes", a->o.max_bytes,
                  "Write inputs and reference outputs only up to this many bytes together (default 8 GiB; 0: no limit)")
      ->capture_default_str();
  add_contract_source_options(cmd, a->o.sources);
  add_quiet_flag(cmd, g);
}

}  // namespace kqual::run
