// kqual screen CAND... | DIR — thin CLI over pipeline/screen.cpp.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "kqual/pipeline/screen.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run {

void add_screen_command(CLI::App& app, CliState& s, bool run_commands) {
  GlobalOptions& g = s.g;
  pipeline::ScreenOptions& o = s.screen;
  int* exit_code = &s.exit_code;
  auto* cmd = app.add_subcommand("screen", "Screen many candidates against their contract: a verdict per candidate (accepted, "
                                           "rejected, refused, incomplete), journaled as each finishes so that an interrupted "
                                           "run resumes; OUT/results.json and OUT/summary.md at the end (docs/screen.md)");
  add_quiet_flag(cmd, g);
  cmd->add_option("candidates", o.inputs, "Candidate folders (with kqual.toml), or a folder whose sub-folders are candidates")
      ->required();
  cmd->add_option("--out", o.out_dir, "Folder for journal.jsonl, results.json and summary.md")->capture_default_str();
  cmd->add_option("--contract", o.contract, "Screen against this contract: candidates of another one are refused "
                                            "(contract_mismatch) (default: each candidate's own)");
  cmd->add_option("--arch", o.arch, "Target when no GPU is present (default " KQUAL_DEFAULT_ARCH ")");
  add_negatable_flag(cmd, "gpu", o.use_gpu, "--no-gpu: static phases only (manifest, contract, compile); never start a GPU worker");
  cmd->add_option("--seed", o.seed, "Seed of the case generator")->capture_default_str();
  add_negatable_flag(cmd, "large-cases", o.large_cases, "--no-large-cases: skip the 2^27+5 and >2^31-byte correctness cases");
  cmd->add_flag("--all-cases", o.all_cases,
                "--all-cases: after the first failing case, run every remaining case too (a report listing every failing case; by default the first failure rejects and the rest are listed as not run)");
  add_negatable_flag(cmd, "sanitizer-pass", o.sanitizer_pass,
                     "--no-sanitizer-pass: skip re-running a few small passed cases under compute-sanitizer");
  cmd->add_option("--jobs", o.jobs, "NVRTC compile threads (they run ahead of the GPU checks)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--watchdog", o.watchdog_seconds, "Seconds a worker may take per request before it is killed")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_flag("--restart", o.restart, "Start a fresh journal (default: resume OUT/journal.jsonl when its options match)");
  if (!run_commands) return;
  cmd->callback([&g, &o, exit_code] {
    o.command_line = g.command_line;
    o.progress = progress_for(g, "screen").sink();
    pipeline::ScreenOutcome out = pipeline::screen(o);
    if (g.json) {
      std::cout << out.results.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    } else {
      const json& r = out.results;
      const json& c = r["counts"];
      fmt::print("kqual screen: {} candidate(s): accepted {}, rejected {}, refused {}, incomplete {}{}\n",
                 r["candidates"].get<std::size_t>(), c["accepted"].get<int>(), c["rejected"].get<int>(), c["refused"].get<int>(),
                 c["incomplete"].get<int>(), c["error"].get<int>() ? fmt::format(", kqual errors {}", c["error"].get<int>()) : "");
      fmt::print("  {} run in {:.1f} s, {} from the journal{}\n", r["run"].get<std::size_t>(), r["wall_s"].get<double>(),
                 r["resumed"].get<std::size_t>(),
                 r["candidates_per_hour"].is_null() ? std::string()
                                                    : fmt::format("; {:.0f} candidates per hour", r["candidates_per_hour"].get<double>()));
      if (!r["device_present"].get<bool>()) fmt::print("  no GPU ({}): static phases only\n", r["why_no_gpu"].get<std::string>());
      for (const auto& v : out.verdicts)
        if (v.verdict != "accepted" && v.verdict != "incomplete")
          fmt::print("  {:<10} {}: {}{}\n", v.verdict, v.name, v.reason,
                     v.detail.empty() ? "" : " — " + v.detail.substr(0, v.detail.find('\n')).substr(0, 200));
      fmt::print("wrote {}, {} and {}\n", out.results_path.string(), out.summary_path.string(), out.journal_path.string());
    }
    *exit_code = out.exit_code;
  });
}

}  // namespace kqual::run
