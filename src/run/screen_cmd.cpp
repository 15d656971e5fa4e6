// kqual screen CAND... | DIR, and kqual screen merge DIR... — thin CLI over pipeline/screen/.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_shard.hpp"
#include "kqual/pipeline/screen_timing.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {

void add_screen_verdict_options(CLI::App* cmd, pipeline::ScreenOptions& o) {
  cmd->add_option("--contract", o.contract, "Screen against this contract: candidates of another one are refused "
                                            "(contract_mismatch) (default: each candidate's own)");
  arch_option(cmd->add_option("--arch", o.arch, "Target when no GPU is present (default " KQUAL_DEFAULT_ARCH ")"),
              ArchUse::compile);
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
}

void add_screen_timing_options(CLI::App* cmd, pipeline::ScreenTimingOptions& t) {
  cmd->add_flag("--timing", t.on,
                "The timing tier: each accepted candidate is then timed against its contract's baselines under qualify's "
                "rules and decided by qualify's speed rule; the campaign is ranked by overall effect (results.json "
                "\"ranking\", summary.md, ranking.html; docs/screen.md)");
  cmd->add_option("--shape", t.shapes, "--timing: a benchmark shape (repeatable; default: the profile's, else the contract's)");
  cmd->add_option("--dtype", t.dtype, "--timing: benchmark dtype (default: each candidate at the first dtype it claims; a candidate not claiming --dtype is not timed)");
  cmd->add_option("--rounds", t.rounds, "--timing: interleaved timing rounds")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--samples", t.samples_per_round, "--timing: samples per implementation per round")
      ->capture_default_str()->check(CLI::Range(2, 100000));
  cmd->add_option("--l2-flush", t.flush_mode, "--timing: L2 flush before each sample (write, clean, invalidate, none)")
      ->capture_default_str()->check(CLI::IsMember({"write", "clean", "invalidate", "none"}));
  add_negatable_flag(cmd, "clock-guard", t.clock_guard, "--no-clock-guard (--timing): keep samples taken below the base clock");
  input_path(cmd->add_option("--profile", t.profile, "--timing: deployment profile (TOML: the shape mix, [decision] margins)"),
             PathRole::file);
  cmd->add_option("--margin", t.margin, "--timing: practical margin REL[,ABS], e.g. 3%,0.5us");
  cmd->add_option("--regression-limit", t.regression_limit, "--timing: no shape of the mix may be slower than this, e.g. 10%");
  add_baseline_option(cmd, t.baseline_dirs);
}

namespace {

void print_screen(const pipeline::ScreenOutcome& out) {
  using K = pipeline::ScreenVerdictKind;
  const json& r = out.results;
  const pipeline::ScreenCounts c = pipeline::verdict_counts(out.verdicts);  // results.json's "counts"
  fmt::print("kqual screen: {} candidate(s){}: accepted {}, rejected {}, refused {}, incomplete {}{}\n",
             r["candidates"].get<std::size_t>(),
             r.contains("shard") ? fmt::format(" (shard {})", r["shard"]["spec"].get<std::string>()) : std::string(),
             c[K::accepted], c[K::rejected], c[K::refused], c[K::incomplete],
             c[K::error] ? fmt::format(", kqual errors {}", c[K::error]) : "");
  fmt::print("  {} run in {:.1f} s, {} from the journal{}\n", r["run"].get<std::size_t>(), r["wall_s"].get<double>(),
             r["resumed"].get<std::size_t>(),
             r["candidates_per_hour"].is_null() ? std::string()
                                                : fmt::format("; {:.0f} candidates per hour", r["candidates_per_hour"].get<double>()));
  if (!r["device_present"].get<bool>()) fmt::print("  no GPU ({}): static phases only\n", r["why_no_gpu"].get<std::string>());
  if (r.contains("gpus"))
    for (const auto& g : r["gpus"])
      fmt::print("  GPU {} (PCI bus order): {} judged, {} worker fault(s){}\n", g["ordinal"].get<int>(), g["judged"].get<std::size_t>(),
                 g["worker_faults"].get<int>(), g["retired"].is_null() ? "" : ", retired: " + g["retired"].get<std::string>());
  for (const auto& v : out.verdicts)
    if (v.verdict != K::accepted && v.verdict != K::incomplete)
      fmt::print("  {:<10} {}: {}{}\n", to_string(v.verdict), v.name, v.reason,
                 v.detail.empty() ? "" : " — " + v.detail.substr(0, v.detail.find('\n')).substr(0, 200));
  if (r.contains("ranking")) {
    const json& p = r["ranking"]["population"];
    fmt::print("  timing tier: {} timed with an effect; faster than the fastest baseline by >1.0x: {}, by >1.5x: {} (whole 95 % "
               "interval); ranking in {}\n",
               p["timed_with_effect"].get<int>(), p["faster_1_0x"].get<int>(), p["faster_1_5x"].get<int>(),
               (out.results_path.parent_path() / "ranking.html").string());
  }
  fmt::print("wrote {}, {} and {}\n", out.results_path.string(), out.summary_path.string(), out.journal_path.string());
}

void print_merge(const pipeline::MergeOutcome& out) {
  using K = pipeline::ScreenVerdictKind;
  const json& r = out.results;
  const pipeline::ScreenCounts c = pipeline::verdict_counts(out.verdicts);  // results.json's "counts"
  const json& m = r["merged"];
  fmt::print("kqual screen merge: {} candidate(s) of {} expected, from {} shard folder(s): accepted {}, rejected {}, refused {}, "
             "incomplete {}{}\n",
             r["candidates"].get<std::size_t>(), m["expected_candidates"].get<std::size_t>(), m["shards"].size(),
             c[K::accepted], c[K::rejected], c[K::refused], c[K::incomplete],
             c[K::error] ? fmt::format(", kqual errors {}", c[K::error]) : "");
  fmt::print("  duplicates dropped {}, missing {}\n", out.duplicates, out.missing);
  for (const auto& s : m["missing_shards"])
    fmt::print("  shard {} has no results: {} candidate(s) missing\n", s["shard"].get<std::string>(), s["candidates"].get<std::size_t>());
  for (const auto& name : out.missing_candidates) fmt::print("  missing: {}\n", name);
  fmt::print("wrote {} and {}\n", out.results_path.string(), out.summary_path.string());
}

}  // namespace

void add_screen_command(CLI::App& app, CliState& s, bool run_commands) {
  GlobalOptions& g = s.g;
  pipeline::ScreenOptions& o = s.screen;
  int* exit_code = &s.exit_code;
  auto* cmd = app.add_subcommand("screen", "Screen many candidates against their contract: a verdict per candidate (accepted, "
                                           "rejected, refused, incomplete), journaled as each finishes so that an interrupted "
                                           "run resumes; OUT/results.json and OUT/summary.md at the end (docs/screen.md). "
                                           "`screen merge` combines the folders of sharded screens (docs/scale-out.md)");
  add_quiet_flag(cmd, g);
  add_contract_source_options(cmd, o.sources);
  // Not ->required(): `kqual screen merge DIR...` has none; the callback says when they are missing.
  input_path(cmd->add_option("candidates", o.inputs, "Candidate folders (with kqual.toml), or a folder whose sub-folders are candidates"),
             PathRole::file_or_folder);
  output_path(cmd->add_option("--out", o.out_dir, "Folder for journal.jsonl, results.json and summary.md")->capture_default_str(),
              PathRole::folder);
  add_screen_verdict_options(cmd, o);
  cmd->add_option("--gpus", o.gpus,
                  "One worker per GPU, each pinned to its device and fed from one queue: all, a count N (the first N), or "
                  "a list of ordinals (0,2); ordinals in PCI bus order (default: one worker on the default device)");
  cmd->add_option("--workers-per-gpu", o.workers_per_gpu,
                  "Worker sessions per GPU, checking candidates side by side (PyTorch submissions spend most of their "
                  "check in Python and compiling); every timing (--timing) waits for its GPU and holds it alone")
      ->capture_default_str();
  cmd->add_option("--shard", o.shard,
                  "Screen only shard I of N (I/N, from 0): the candidates the campaign's list gives it, by name (the list "
                  "is written when the first shard starts and read by the others); give each shard its own --out, then "
                  "`screen merge` (docs/scale-out.md)");
  cmd->add_option("--shard-list", o.shard_list,
                  "The campaign's candidate list for --shard (default: shard-list-<N>.json in the folder above --out; "
                  "written when absent)");
  cmd->add_flag("--restart", o.restart, "Start a fresh journal (default: resume OUT/journal.jsonl when its options match)");
  add_screen_timing_options(cmd, o.timing);

  pipeline::MergeOptions* merge_opts = &s.screen_merge;
  auto* merge = cmd->add_subcommand("merge", "Combine the --out folders of sharded screens (--shard I/N) into one results.json "
                                             "and summary.md; refuses shards screened with other options, counts duplicate "
                                             "and missing candidates (docs/scale-out.md)");
  add_quiet_flag(merge, g);
  input_path(merge->add_option("dirs", merge_opts->dirs, "The shards' --out folders")->required(), PathRole::folder,
             "a shard's --out folder");
  output_path(merge->add_option("--out", merge_opts->out_dir, "Folder for the merged results.json and summary.md")
                  ->capture_default_str(),
              PathRole::folder);
  if (!run_commands) return;
  merge->callback([&g, merge_opts, exit_code] {
    merge_opts->command_line = g.command_line;
    merge_opts->progress = progress_for(g, "screen merge").sink();
    const pipeline::MergeOutcome out = pipeline::merge_screen(*merge_opts);
    if (g.json)
      std::cout << out.results.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    else
      print_merge(out);
    *exit_code = out.exit_code;
  });
  cmd->callback([&g, &o, merge, exit_code] {
    if (merge->parsed()) return;  // `screen merge` ran
    if (o.inputs.empty()) throw CLI::RequiredError("candidates");
    o.command_line = g.command_line;
    o.progress = progress_for(g, "screen").sink();
    pipeline::ScreenOutcome out = pipeline::screen(o);
    if (g.json)
      std::cout << out.results.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    else
      print_screen(out);
    *exit_code = out.exit_code;
  });
}

}  // namespace kqual::run
