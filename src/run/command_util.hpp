#pragma once
// Internal to src/run/: what the commands do alike at their edges. Registering a command whose body
// is one function, printing its JSON document, reading the results.json that an earlier command
// wrote (decide and report judge or render one offline), and the importers' closing line. Not a
// public header.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {

// A subcommand of `app` whose options fill one Args and whose body is `run(args, g)`: the exit code
// run returns is the command's. Returns the subcommand, to add the options to, and the Args they fill.
template <class Args, class Run>
std::pair<CLI::App*, std::shared_ptr<Args>> add_command(CLI::App& app, GlobalOptions& g, int* exit_code,
                                                        const std::string& name, const std::string& help, Run run) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->callback([args, &g, exit_code, run] { *exit_code = run(*args, g); });
  return {cmd, args};
}

// A command's JSON document on stdout: indented by 2, one trailing newline.
void print_json(const json& doc);

// ---- a recorded results.json (from qualify, check, bench or compare) ------------------------------
// The positional argument naming it.
CLI::Option* add_results_argument(CLI::App* cmd, std::string& path);
// The document; an input error naming the file when it is missing, not a regular file or not JSON.
json read_results_document(const std::string& path);
// fn(), whose errors name the file: an Error keeps its kind, and a document not shaped as its
// schema says (a json::exception from reading it) is bad input (exit 2), not an internal error.
template <class Fn>
auto naming_results_file(const std::string& path, const json& doc, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    throw_error(e.kind(), path + ": " + e.what());
  } catch (const json::exception& e) {
    throw_error(ErrorKind::input, path + ": not shaped as a " + doc.value("schema", std::string("?")) +
                                      " results document: " + e.what());
  }
}

// After an importer wrote a contract folder: how a candidate names it, and where kqual finds it.
void print_imported_contract_use(const std::string& contract_name);

// "a,b,,c" → {"a", "b", "c"}: a comma-separated option value, empty items dropped.
std::vector<std::string> split_commas(const std::string& s);

}  // namespace kqual::run
