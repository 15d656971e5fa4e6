// `kqual decide RESULTS.json [--profile P]... [--margin REL[,ABS]] [--regression-limit L]`: a recorded
// qualify, check, bench or compare result judged again offline from its samples (docs/decision.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/pipeline/decide.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {
namespace {
namespace fs = std::filesystem;

struct DecideArgs {
  std::string input;
  pipeline::DecideOptions o;
};

int run_decide(const DecideArgs& a, const GlobalOptions& g) {
  std::error_code ec;
  if (!fs::is_regular_file(a.input, ec)) throw_error(ErrorKind::input, fmt::format("{}: no such file", a.input));
  json doc;
  try {
    doc = json::parse(read_text_file(a.input));
  } catch (const json::parse_error& e) {
    throw_error(ErrorKind::input, fmt::format("{} is not JSON: {}", a.input, e.what()));
  }
  pipeline::DecideOutcome out;
  try {
    out = pipeline::decide_results(doc, a.o);
  } catch (const Error& e) {
    throw_error(e.kind(), fmt::format("{}: {}", a.input, e.what()));
  } catch (const json::exception& e) {
    throw_error(ErrorKind::input, fmt::format("{}: not shaped as a {} results document: {}", a.input,
                                              doc.value("schema", std::string("?")), e.what()));
  }
  if (g.json) {
    json j = schema_header("decide");
    j.update(json{{"input", a.input},
                  {"input_schema", out.input_schema},
                  {"recorded", out.recorded},
                  {"agrees_with_recorded", out.recorded == out.verdict},
                  {"notes", out.notes},
                  {"verdict", out.verdict_json}});
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}", out.text);
    for (const auto& n : out.notes) fmt::print("\nNote: {}\n", n);
  }
  return out.exit_code;
}

}  // namespace

void add_decide_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto a = std::make_shared<DecideArgs>();
  auto* cmd = app.add_subcommand(
      "decide",
      "Judge a recorded results.json (qualify, check, bench or compare) again, offline, from its samples: the same "
      "samples and policy give the recorded verdict; --profile / --margin / --regression-limit ask what another "
      "deployment would decide. No GPU. Exit code of the verdict now (docs/decision.md)");
  cmd->add_option("results", a->input, "results.json written by kqual qualify, check, bench or compare")->required();
  cmd->add_option("--profile", a->o.profiles,
                  "Deployment profile (TOML; its [[shape]] mix weighs the shapes, [decision] sets margins). qualify: one; "
                  "compare: repeatable, default the recorded ones");
  cmd->add_option("--margin", a->o.margin, "Practical margin REL[,ABS], e.g. 3%,0.5us (default: the profile's, else 3%,0.5us)");
  cmd->add_option("--regression-limit", a->o.regression_limit, "No shape of the mix may be slower than this, e.g. 10% (default 10%)");
  cmd->callback([a, &g, exit_code] { *exit_code = run_decide(*a, g); });
}

}  // namespace kqual::run
