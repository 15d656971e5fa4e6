// What the importers share (import_common.hpp).
#include "import_common.hpp"

#include <fmt/format.h>

#include "kqual/contract/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract::detail {
namespace fs = std::filesystem;

std::string toml_quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o + "\"";
}

void write_imported_contract(const fs::path& out, const std::map<std::string, std::string>& files) {
  std::error_code ec;
  if (fs::exists(out, ec)) throw_error(ErrorKind::input, fmt::format("{} exists: give a new folder", out.string()));
  const fs::path tmp = out.string() + ".kqual-tmp";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp);
  try {
    for (const auto& [name, text] : files) write_file_atomic(tmp / name, text);
    fs::rename(tmp, out);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  try {
    (void)load_declared_contract(out);
  } catch (const Error& e) {
    fs::remove_all(out, ec);
    throw_error(ErrorKind::internal, fmt::format("the imported contract does not load (a bug in the importer): {}", e.what()));
  }
}

std::string determinism_toml(bool any_float_output, const std::string& source) {
  if (!any_float_output)
    return "# Every output is an integer, compared exactly: any run-to-run difference is already a wrong element.\n"
           "deterministic = true\n"
           "deterministic_reason = \"every output is an integer, compared exactly\"\n";
  return fmt::format(
      "# {0} judges each run against its reference under its tolerance and never compares two runs, so\n"
      "# kernels written for it may split reductions over blocks with atomics (the order of the adds, and\n"
      "# the last bits, vary from run to run). kqual holds each run to the error model below and the\n"
      "# difference between two runs to the same bound; set true to require bitwise reproducibility.\n"
      "deterministic = false\n"
      "deterministic_reason = {1}\n",
      source,
      toml_quoted(fmt::format("imported from {}, which compares each run with the reference under a tolerance and never "
                              "two runs with each other; split reductions with atomics are normal there",
                              source)));
}

}  // namespace kqual::contract::detail
