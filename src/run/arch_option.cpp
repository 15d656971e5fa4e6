// --arch, checked while the command line is parsed: a word that names no GPU architecture is a usage
// error naming the option and the forms it takes, not NVRTC_ERROR_INVALID_OPTION from a compile.
#include <CLI/CLI.hpp>

#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {

CLI::Option* arch_option(CLI::Option* o, ArchUse use) {
  return o->check(CLI::Validator(
      [use](std::string& value) -> std::string {
        if (use == ArchUse::compile) return cuda::nvrtc_target_problem(value);
        try {
          artifact::Arch::parse(value);
          return {};
        } catch (const Error& e) {
          return e.what();
        }
      },
      ""));
}

}  // namespace kqual::run
