// `kqual decide RESULTS.json [--profile P]... [--margin REL[,ABS]] [--regression-limit L]`: a recorded
// qualify, check, bench or compare result judged again offline from its samples (docs/decision.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "command_util.hpp"
#include "kqual/core/json.hpp"
#include "kqual/pipeline/decide.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {
namespace {

// The command, as `kqual --help` lists it.
constexpr CommandDoc kDecideCommand{"decide",
                             "Judge a recorded results.json (qualify, check, bench or compare) again, offline, from its samples: the same "
                             "samples and policy give the recorded verdict; --profile / --margin / --regression-limit ask what another "
                             "deployment would decide. No GPU. Exit code of the verdict now (docs/decision.md)"};

struct DecideArgs {
  std::string input;
  pipeline::DecideOptions o;
};

int run_decide(const DecideArgs& a, const json& doc, const GlobalOptions& g) {
  const pipeline::DecideOutcome out = naming_results_file(a.input, doc, [&] { return pipeline::decide_results(doc, a.o); });
  print_outcome(g, "decide",
                json{{"input", a.input},
                     {"input_schema", out.input_schema},
                     {"recorded", out.recorded},
                     {"agrees_with_recorded", out.recorded == out.verdict},
                     {"notes", out.notes},
                     {"verdict", out.verdict_json}},
                [&] {
                  fmt::print("{}", out.text);
                  for (const auto& n : out.notes) fmt::print("\nNote: {}\n", n);
                });
  return out.exit_code;
}

}  // namespace

void add_decide_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto [cmd, a] = add_results_command<DecideArgs>(app, g, exit_code, kDecideCommand, run_decide);
  auto* profile = cmd->add_option("--profile", a->o.profiles,
                  "Deployment profile (TOML; its [[shape]] mix weighs the shapes, [decision] sets margins). qualify: one; "
                  "compare: repeatable, default the recorded ones");
  input_path(profile, PathRole::file, "a deployment profile TOML");
  cmd->add_option("--margin", a->o.margin, "Practical margin REL[,ABS], e.g. 3%,0.5us (default: the profile's, else 3%,0.5us)");
  cmd->add_option("--regression-limit", a->o.regression_limit, "No shape of the mix may be slower than this, e.g. 10% (default 10%)");
}

}  // namespace kqual::run
