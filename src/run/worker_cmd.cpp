#include <CLI/CLI.hpp>
#include <unistd.h>

#include "kqual/worker/worker.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {

void add_worker_command(CLI::App& app, GlobalOptions&, int* exit_code) {
  auto* cmd = app.add_subcommand("worker", "Internal: the GPU worker process (JSON lines on stdin/stdout)");
  cmd->group("");  // hidden from --help
  cmd->callback([exit_code] {
    // Replies go to a private copy of stdout; fd 1 then points at stderr, so printf from a
    // candidate's kernel cannot corrupt the protocol.
    int proto = dup(1);
    dup2(2, 1);
    *exit_code = worker::run_worker(0, proto);
  });
}

}  // namespace kqual::run
