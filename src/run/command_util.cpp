#include "command_util.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "kqual/core/files.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {

void print_json(const json& doc) { fmt::print("{}\n", doc.dump(2)); }

CLI::Option* add_results_argument(CLI::App* cmd, std::string& path) {
  return input_path(cmd->add_option("results", path, "results.json written by kqual qualify, check, bench or compare")->required(),
                    PathRole::file, "a results.json written by kqual");
}

json read_results_document(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw_error(ErrorKind::input, fmt::format("{}: no such file", path));
  if (!std::filesystem::is_regular_file(path, ec)) throw_error(ErrorKind::input, fmt::format("{}: not a regular file", path));
  try {
    return json::parse(read_text_file(path));
  } catch (const json::parse_error& e) {
    throw_error(ErrorKind::input, fmt::format("{} is not JSON: {}", path, e.what()));
  }
}

void print_imported_contract_use(const std::vector<std::string>& notes, const std::string& contract_name) {
  for (const auto& n : notes) fmt::print("  note: {}\n", n);
  fmt::print("a candidate names it with contract = \"{}\" (found through --contracts DIR, $KQUAL_CONTRACTS or the project's "
             "contracts/ folder)\n",
             contract_name);
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) v.push_back(t);
  return v;
}

}  // namespace kqual::run
