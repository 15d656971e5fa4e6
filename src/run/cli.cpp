#include "kqual/run/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "kqual/core/error.hpp"
#include "kqual/run/exit_codes.hpp"

namespace kqual::run {

int main(int argc, char** argv) {
  GlobalOptions g;
  for (int i = 0; i < argc; ++i) g.command_line += (i ? " " : "") + std::string(argv[i]);
  int exit_code = kExitPass;

  CLI::App app{
      "kqual — decide, with evidence, whether a GPU kernel change or a CUDA toolkit upgrade should ship.\n"
      "Exit codes: 0 pass, 1 fail (evidence says no), 2 bad input, 3 incomplete (no GPU: static phases only),"
      " 4 internal error."};
  app.set_version_flag("--version", "kqual 0.1.0");
  app.require_subcommand(1);
  app.add_flag("--json", g.json, "Write machine-readable JSON to stdout");

  add_qualify_commands(app, g, &exit_code);
  add_worker_command(app, g, &exit_code);
  add_inspect_command(app, g, &exit_code);
  add_model_commands(app, g, &exit_code);
  add_startup_command(app, g, &exit_code);
  add_compare_command(app, g, &exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitInputError;
  } catch (const Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "kqual: error ({}): {}\n", to_string(e.kind()), e.what());
    switch (e.kind()) {
      case ErrorKind::usage:
      case ErrorKind::input:
      case ErrorKind::unsupported:
      case ErrorKind::nvrtc: return kExitInputError;
      default: return kExitInternal;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "kqual: internal error: {}\n", e.what());
    return kExitInternal;
  }
  return exit_code;
}

}  // namespace kqual::run
