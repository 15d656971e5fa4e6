#include "kqual/run/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <regex>

#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/version.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {

CLI::Option* add_negatable_flag(CLI::App* cmd, const std::string& name, bool& value, const std::string& help) {
  // CLI11: a name prefixed with '!' stores false when given. The '!' belongs on --no-NAME.
  return cmd->add_flag(fmt::format("--{},!--no-{}", name, name), value,
                       fmt::format("{} (--{} / --no-{}; default: --{})", help, name, name, value ? name : "no-" + name));
}

void add_quiet_flag(CLI::App* cmd, GlobalOptions& g) {
  cmd->add_flag("--quiet", g.quiet, "No progress lines on stderr (stdout is unchanged)");
}

Progress progress_for(const GlobalOptions& g, const std::string& command) { return Progress(command, !g.quiet); }

namespace {

// A repeatable option takes one value each time it is given (`--shape A --shape B`, or `--shape A,B`
// where it splits at commas), never the words after it: CLI11 lets a list option go on eating
// arguments, so `--shape 1048576 good broken` took both candidates as shapes.
void one_value_per_occurrence(CLI::App& app) {
  for (CLI::Option* o : app.get_options())
    if (o->nonpositional() && o->get_items_expected_max() > 1) o->allow_extra_args(false);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) one_value_per_occurrence(*sub);
}

// --json after the command as before it (`kqual qualify --json CAND`), as --quiet is: every command
// and sub-command that has no --json of its own gets one setting the same GlobalOptions::json.
void json_flag_everywhere(CLI::App& app, GlobalOptions& g) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (!sub->get_option_no_throw("--json")) sub->add_flag("--json", g.json, "Write machine-readable JSON to stdout");
    json_flag_everywhere(*sub, g);
  }
}

// The commands `kqual --help` lists (the internal ones have no group), comma separated.
std::string command_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// A command line CLI11 refused, as every other usage error reads: "kqual: error (usage): ...", then
// where the options are listed. A word that names no command (or no command at all) lists the commands:
// CLI11 alone would say "A subcommand is required" for `kqual frobnicate`.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  std::vector<const CLI::App*> path;  // the commands parsed, outermost first
  for (const CLI::App* a = &app;;) {
    std::vector<const CLI::App*> parsed;
    for (const CLI::App* sub : a->get_subcommands([](const CLI::App* s) { return s->parsed(); })) parsed.push_back(sub);
    if (parsed.empty()) break;
    path.push_back(a = parsed.front());
  }
  std::fflush(stdout);
  if (path.empty() && (dynamic_cast<const CLI::RequiredError*>(&e) || dynamic_cast<const CLI::ExtrasError*>(&e))) {
    const std::vector<std::string> left = app.remaining();
    if (left.empty())
      fmt::print(stderr, "kqual: error (usage): no command given; the commands: {} (kqual --help describes each)\n",
                 command_names(app));
    else
      fmt::print(stderr, "kqual: error (usage): '{}' is not a kqual {}; the commands: {} (kqual --help describes each)\n",
                 left.front(), left.front().starts_with("-") ? "option" : "command", command_names(app));
    return kExitInputError;
  }
  std::string command = "kqual";
  for (const CLI::App* a : path) command += " " + a->get_name();
  fmt::print(stderr, "kqual: error (usage): {}\n{} --help lists the options\n", e.what(), command);
  return kExitInputError;
}

}  // namespace

namespace {

// Help as a careful CLI gives it: CLI11 prints a negatable flag's stored value beside its name
// ("--gpu,--no-gpu{false}"; the option's own text already says what each spelling does) and a
// positional's count as "(1x)".
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (std::size_t open = name.find('{'); open != std::string::npos; open = name.find('{', open)) {
      const std::size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
  // An option's value as a reader wants it: "INT in [2, 100000], default 10" for CLI11's
  // "INT:INT in [2 - 100000]=10", "{write,clean,none}, default write" for "TEXT:{write,clean,none}=write",
  // "FLOAT > 0" for "FLOAT:POSITIVE".
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string o = CLI::Formatter::make_option_opts(opt);
    static const std::regex range(R"((\w+):\w+ in \[([^\]]*?) - ([^\]]*?)\])"), choices(R"(\w+:(\{[^}]*\}))"),
        positive(R"((\w+):POSITIVE)"), nonneg(R"((\w+):NONNEGATIVE)"), dflt(R"(=(\S+))");
    o = std::regex_replace(o, range, "$1 in [$2, $3]");
    o = std::regex_replace(o, choices, "$1");
    o = std::regex_replace(o, positive, "$1 > 0");
    o = std::regex_replace(o, nonneg, "$1 >= 0");
    o = std::regex_replace(o, dflt, ", default $1");
    return o;
  }
  // A positional taking one or two values reads "artifact [artifact]", not CLI11's "artifact(1x)".
  std::string make_option_usage(const CLI::Option* opt) const override {
    const std::string name = make_option_name(opt, true);
    std::string out = name;
    const int lo = opt->get_expected_min(), hi = opt->get_expected_max();
    if (hi >= CLI::detail::expected_max_vector_size) out += "...";
    else
      for (int i = 1; i < hi; ++i) out += i < lo ? " " + name : " [" + name + "]";
    return opt->get_required() ? out : "[" + out + "]";
  }
};

}  // namespace

std::unique_ptr<CLI::App> make_app(CliState& s, bool run_commands) {
  auto app = std::make_unique<CLI::App>(
      "kqual — decide, with evidence, whether a GPU kernel change or a CUDA toolkit upgrade should ship.\n"
      "Exit codes: 0 pass, 1 fail (evidence says no), 2 bad input, 3 incomplete (no GPU: static phases only),"
      " 4 internal error.");
  app->formatter(std::make_shared<HelpFormatter>());  // before the commands: each takes its parent's
  app->set_version_flag("--version", std::string("kqual ") + kVersion);
  app->require_subcommand(1);
  app->add_flag("--json", s.g.json, "Write machine-readable JSON to stdout (before or after the command)");
  app->add_flag("--quiet", s.g.quiet, "No progress lines on stderr from long commands (stdout is unchanged)");

  add_qualify_commands(*app, s, run_commands);
  add_compare_command(*app, s, run_commands);
  add_screen_command(*app, s, run_commands);
  if (run_commands) {
    // The commands over GlobalOptions and the exit code, in the order --help lists them.
    using AddCommand = void (*)(CLI::App&, GlobalOptions&, int*);
    for (AddCommand add : {add_worker_command, add_inspect_command, add_import_triton_command, add_model_commands,
                           add_startup_command, add_report_command, add_decide_command, add_contracts_command,
                           add_import_definition_command, add_slurm_command, add_import_kernelbench_command,
                           add_replay_command, add_judge_command})
      add(*app, s.g, &s.exit_code);
  }
  json_flag_everywhere(*app, s.g);
  check_output_defaults(*app);
  one_value_per_occurrence(*app);
  return app;
}

int main(int argc, char** argv) {
  CliState s;
  for (int i = 0; i < argc; ++i) s.g.command_line += (i ? " " : "") + std::string(argv[i]);
  s.exit_code = kExitPass;
  std::unique_ptr<CLI::App> app = make_app(s);

  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app->exit(e);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(*app, e);
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
  return s.exit_code;
}

}  // namespace kqual::run
