#pragma once
// The command line: one CLI::App with a subcommand per src/run/<name>_cmd.cpp.
//
// make_app() registers every option into a CliState, so tests can parse a command line and check
// the values the options received without running a command (run_commands = false).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kqual/core/progress.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_shard.hpp"
#include "kqual/pipeline/submission.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kqual::run {

// Options every subcommand sees.
struct GlobalOptions {
  bool json = false;          // machine-readable output on stdout
  bool quiet = false;         // no progress lines on stderr (--quiet, before or after the command)
  std::string command_line;   // recorded in provenance blocks
};

// kqual compare's options as parsed (turned into compare::CompareOptions by its callback).
struct CompareCliOptions {
  compare::CompareOptions o;
  std::string old_mode, new_mode, old_ptxas, new_ptxas, old_nvcc, new_nvcc, ptxas, nvcc;
  std::vector<std::string> modes{"off", "cold", "warm"};
  std::vector<std::string> loading{"lazy"};
  std::string margin = "2%";  // --margin REL[,ABS]
};

// Everything the parsed command line holds for the commands with typed options.
struct CliState {
  GlobalOptions g;
  int exit_code = 0;
  pipeline::QualifyOptions qualify, check, bench;
  pipeline::SelftestOptions selftest;
  std::vector<std::uint64_t> selftest_seeds;
  std::filesystem::path selftest_out;
  CompareCliOptions compare;
  pipeline::ScreenOptions screen;
  pipeline::MergeOptions screen_merge;
  pipeline::SubmissionOptions submission;  // kqual check of a PyTorch submission (src/run/submission_cmd.cpp)
};

// The whole command line over `state`. With run_commands = false no subcommand body runs: parsing
// only fills `state` (tests).
std::unique_ptr<CLI::App> make_app(CliState& state, bool run_commands = true);

int main(int argc, char** argv);

// A boolean option with both spellings: `--NAME` sets true, `--no-NAME` sets false; absent, the
// value keeps its default. `help` describes --no-NAME (the spelling users reach for); the default
// is appended. Every negatable flag goes through here so that the two names cannot be swapped.
CLI::Option* add_negatable_flag(CLI::App* cmd, const std::string& name, bool& value, const std::string& help);

// --arch: a value that names no GPU architecture is refused while the command line is parsed, with
// the forms the option takes. `compile`: a target NVRTC compiles for (sm_XX[a|f] or compute_XX, XX
// one it supports); `device`: any architecture (sm_90, compute_80, 9.0), as inspect judges images for
// it. src/run/arch_option.cpp.
enum class ArchUse { compile, device };
CLI::Option* arch_option(CLI::Option* o, ArchUse use);

// --contracts DIR (repeatable) and --allow-candidate-contract: where the contracts of a command that
// reads candidate manifests may come from (docs/declared-contracts.md); src/run/contract_sources_cmd.cpp.
void add_contract_source_options(CLI::App* cmd, contract::ContractSources& s);
// --baselines DIR (repeatable): the user's baseline folders for commands that time (qualify, bench).
void add_baseline_option(CLI::App* cmd, std::vector<std::filesystem::path>& dirs);
// kqual screen --timing and the options of that tier (screen_cmd.cpp).
void add_screen_timing_options(CLI::App* cmd, pipeline::ScreenTimingOptions& t);

// `--quiet` on a long-running command: it sets GlobalOptions::quiet, as `kqual --quiet CMD` does.
void add_quiet_flag(CLI::App* cmd, GlobalOptions& g);
// Progress lines of `command` on stderr ("kqual <command> [  1.2 s] <phase>"), silent with --quiet.
// Every long command prints its phases through this one helper; stdout keeps the results.
Progress progress_for(const GlobalOptions& g, const std::string& command);

// kqual check's options for a PyTorch submission (--problem, --class, --allow-kernel), and the path the
// check command takes when its candidate is one: true when it was (the outcome printed, the exit code
// stored), false for a kernel candidate (src/run/submission_cmd.cpp).
void add_submission_options(CLI::App* cmd, pipeline::SubmissionOptions& s);
bool check_submission_if_any(const GlobalOptions& g, const pipeline::QualifyOptions& q, pipeline::SubmissionOptions& s,
                             int* exit_code);

// Subcommand registration: each lives in its own src/run/<name>_cmd.cpp.
void add_qualify_commands(CLI::App& app, CliState& s, bool run_commands);   // qualify, check, bench, selftest
void add_compare_command(CLI::App& app, CliState& s, bool run_commands);    // compare OLD NEW
void add_screen_command(CLI::App& app, CliState& s, bool run_commands);     // screen CAND... | DIR
// The callback stores the command's exit code in *exit_code.
void add_worker_command(CLI::App& app, GlobalOptions& g, int* exit_code);     // internal: GPU worker
void add_inspect_command(CLI::App& app, GlobalOptions& g, int* exit_code);    // artifact identity
void add_import_triton_command(CLI::App& app, GlobalOptions& g, int* exit_code);  // Triton cache -> candidate folder
void add_model_commands(CLI::App& app, GlobalOptions& g, int* exit_code);     // model, explain
void add_startup_command(CLI::App& app, GlobalOptions& g, int* exit_code);    // startup (+ hidden probe)
void add_report_command(CLI::App& app, GlobalOptions& g, int* exit_code);     // report RESULTS.json (HTML, memo)
void add_decide_command(CLI::App& app, GlobalOptions& g, int* exit_code);     // decide RESULTS.json (offline)
void add_import_kernelbench_command(CLI::App& app, GlobalOptions& g, int* exit_code);  // KernelBench problem -> declared contract
void add_slurm_command(CLI::App& app, GlobalOptions& g, int* exit_code);      // slurm screen: a campaign as a job array
void add_contracts_command(CLI::App& app, GlobalOptions& g, int* exit_code);  // contracts: built-in and declared
void add_import_definition_command(CLI::App& app, GlobalOptions& g, int* exit_code);  // Definition JSON -> declared contract
void add_replay_command(CLI::App& app, GlobalOptions& g, int* exit_code);     // replay RESULTS.json: a failing case as a reproducer folder
void add_judge_command(CLI::App& app, GlobalOptions& g, int* exit_code);      // judge CONTRACT --case ID OUTPUT...: outputs computed elsewhere

}  // namespace kqual::run
