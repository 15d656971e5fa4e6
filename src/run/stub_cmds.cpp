// Temporary registration of commands still being written (removed as each lands).
#include <CLI/CLI.hpp>
#include "kqual/run/cli.hpp"
namespace kqual::run {
}
