#pragma once
// Internal to src/run/: what the commands do alike at their edges. Registering a command whose body
// is one function, printing its outcome (the JSON document or the words), reading the results.json
// that an earlier command wrote (decide, report and replay judge, render or reproduce one offline), and the importers'
// closing lines. Not a public header.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {

// A command's name and the one paragraph `kqual --help` and `kqual NAME --help` show for it; each
// command file opens with its own.
struct CommandDoc {
  const char* name;
  const char* help;
};

// A subcommand of `app` whose options fill one Args and whose body is `run(args, g)`: the exit code
// run returns is the command's. Returns the subcommand, to add the options to, and the Args they fill.
template <class Args, class Run>
std::pair<CLI::App*, std::shared_ptr<Args>> add_command(CLI::App& app, GlobalOptions& g, int* exit_code, const CommandDoc& doc,
                                                        Run run) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(doc.name, doc.help);
  cmd->callback([args, &g, exit_code, run] { *exit_code = run(*args, g); });
  return {cmd, args};
}

// A command's JSON document on stdout: indented by 2, one trailing newline.
void print_json(const json& doc);

// A command's outcome on stdout: with --json its document (the schema header naming `command`, then
// `fields`: a json object, or a function making one where that costs time), otherwise the words
// text() prints.
template <class Fields, class Text>
void print_outcome(const GlobalOptions& g, std::string_view command, Fields&& fields, Text&& text) {
  if (!g.json) return text();
  json doc = schema_header(command);
  if constexpr (std::is_invocable_v<Fields>) doc.update(fields());
  else doc.update(fields);
  print_json(doc);
}

// ---- a recorded results.json (from qualify, check, bench or compare) ------------------------------
// The positional argument naming it.
CLI::Option* add_results_argument(CLI::App* cmd, std::string& path);
// The document; an input error naming the file when it is missing, not a regular file or not JSON.
json read_results_document(const std::string& path);
// A command over a recorded results.json (decide, report, replay): add_command with the positional argument
// filling Args::input, and a body run(args, document, g) that gets the document read.
template <class Args, class Run>
std::pair<CLI::App*, std::shared_ptr<Args>> add_results_command(CLI::App& app, GlobalOptions& g, int* exit_code,
                                                                const CommandDoc& doc, Run run) {
  auto added = add_command<Args>(app, g, exit_code, doc,
                                 [run](Args& a, GlobalOptions& opts) { return run(a, read_results_document(a.input), opts); });
  add_results_argument(added.first, added.second->input);
  return added;
}
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

// After an importer wrote a contract folder: its notes, how a candidate names it, and where kqual
// finds it.
void print_imported_contract_use(const std::vector<std::string>& notes, const std::string& contract_name);

// "a,b,,c" → {"a", "b", "c"}: a comma-separated option value, empty items dropped.
std::vector<std::string> split_commas(const std::string& s);

}  // namespace kqual::run
