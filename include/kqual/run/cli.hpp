#pragma once
#include <string>
#include <vector>

namespace CLI { class App; }

namespace kqual::run {

// Options every subcommand sees.
struct GlobalOptions {
  bool json = false;          // machine-readable output on stdout
  std::string command_line;   // recorded in provenance blocks
};

int main(int argc, char** argv);

// Subcommand registration: each lives in its own src/run/<name>_cmd.cpp. The callback stores the
// command's exit code in *exit_code.
void add_qualify_commands(CLI::App& app, GlobalOptions& g, int* exit_code);   // qualify, check, bench
void add_worker_command(CLI::App& app, GlobalOptions& g, int* exit_code);     // internal: GPU worker
void add_inspect_command(CLI::App& app, GlobalOptions& g, int* exit_code);    // artifact identity
void add_model_commands(CLI::App& app, GlobalOptions& g, int* exit_code);     // model, explain
void add_startup_command(CLI::App& app, GlobalOptions& g, int* exit_code);    // startup (+ hidden probe)
void add_compare_command(CLI::App& app, GlobalOptions& g, int* exit_code);    // compare OLD NEW

}  // namespace kqual::run
