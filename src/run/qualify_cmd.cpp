// kqual qualify | check | bench | selftest — thin CLI over run/qualify.cpp.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/report/selftest_text.hpp"
#include "kqual/worker/timer.hpp"

namespace kqual::run {
using pipeline::QualifyOptions;
using pipeline::QualifyOutcome;
using pipeline::SelftestOptions;
namespace {

// --timer: its words are the timer's one table (kqual/worker/timer.hpp); another word is a usage
// error (exit 2) that lists them.
void add_timer_option(CLI::App* cmd, QualifyOptions& o) {
  std::string words;  // "{events,cupti,graph}", as the help shows the other options' choices
  for (const auto& entry : worker::kTimerKindNames.entries) words += (words.empty() ? "" : ",") + std::string(entry.second);
  const CLI::Validator is_timer(
      [](std::string& word) {
        return worker::parse_timer_kind(word) ? std::string()
                                              : fmt::format("'{}' is not a timer; choose {}", word, worker::kTimerKindNames.choices());
      },
      "{" + words + "}");
  cmd->add_option_function<std::string>(
         "--timer", [&o](const std::string& word) { o.timer = *worker::parse_timer_kind(word); },
         "What a sample is: events (CUDA events around the launch plan), cupti (the kernels' own GPU start and end from "
         "CUPTI activity records; events kept beside) or graph (the plan replayed N times in one CUDA graph, time / N; "
         "tiny kernels; needs --l2-flush none)")
      ->default_str(to_string(o.timer))
      ->check(is_timer);
}

void add_common(CLI::App* cmd, QualifyOptions& o, GlobalOptions& g) {
  add_quiet_flag(cmd, g);
  input_path(cmd->add_option("candidate", o.candidate, "Candidate folder (with kqual.toml) or the manifest itself")->required(),
             PathRole::file_or_folder);
  output_path(cmd->add_option("--out", o.out_dir, "Folder for results.json and memo.md")->capture_default_str(), PathRole::folder);
  arch_option(cmd->add_option("--arch", o.arch, "Target when no GPU is present (default " KQUAL_DEFAULT_ARCH ")"),
              ArchUse::compile);
  add_negatable_flag(cmd, "gpu", o.use_gpu, "--no-gpu: run only the static phases (never start a GPU worker)");
  cmd->add_option("--watchdog", o.watchdog_seconds, "Seconds a worker may take per request before it is killed")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o.seed, "Seed of the case generator")->capture_default_str();
  add_negatable_flag(cmd, "large-cases", o.large_cases, "--no-large-cases: skip the 2^27+5 and >2^31-byte correctness cases");
  cmd->add_flag("--all-cases", o.all_cases,
                "--all-cases: after the first failing case, run every remaining case too (a report listing every failing case; by default the first failure rejects and the rest are listed as not run)");
  add_negatable_flag(cmd, "sanitizer-pass", o.sanitizer_pass,
                     "--no-sanitizer-pass: skip re-running a few small passed cases under compute-sanitizer memcheck and "
                     "racecheck (reads past a tensor inside its last aligned vector, shared-memory races)");
}

// What qualify and bench time and how they decide; check (correctness only) takes none of them.
void add_timing_options(CLI::App* cmd, QualifyOptions& o) {
  cmd->add_option("--sizes", o.shapes, "Benchmark sizes in elements, comma separated, for one-dim contracts "
                                       "(default: the contract's)")->delimiter(',');
  cmd->add_option("--shape", o.shapes, "A benchmark shape, e.g. rows=4096,cols=4096 (repeatable; default: the contract's)");
  cmd->add_option("--dtype", o.dtype, "Benchmark dtype, one the candidate claims (default: the first dtype in its [supports] dtypes)");
  cmd->add_option("--rounds", o.rounds, "Interleaved timing rounds")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--samples", o.samples_per_round, "Samples per implementation per round")->capture_default_str()
      ->check(CLI::Range(2, 100000));
  cmd->add_option("--verify-launches", o.verify_launches,
                  "Timed launches of the candidate (timed calls of a PyTorch submission) compared with the contract's "
                  "reference over the run, where no device reference hashes every launch (default 44, 1 - 0.9^44 = 99 %: one wrong launch in ten caught, "
                  "fewer when that would read past 2^30 output elements on the host; given, no such limit)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--l2-flush", o.flush_mode,
                  "L2 flush before each timed sample: write (a memset of 2x the L2), clean (the memset, then a "
                  "read pass, so its dirty lines are written back before the timed window), invalidate (the memset, "
                  "then its L2 lines discarded: an empty L2, as after ncu --cache-control all; sm_80+) or none (warm L2)")
      ->capture_default_str()->check(CLI::IsMember({"write", "clean", "invalidate", "none"}));
  add_timer_option(cmd, o);
  cmd->add_option("--graph-launches", o.graph_launches, "--timer graph: launches per replay (default: enough for ~1 ms)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--timed-inputs", o.timed_inputs,
                  "fresh: every timed launch gets inputs generated on the device from its own seed, verified against "
                  "the reference of that seed (contracts whose inputs need structure fall back to datasets); datasets: "
                  "two datasets made on the CPU, alternating (a kernel can keep both answers)")
      ->capture_default_str()->check(CLI::IsMember({"fresh", "datasets"}));
  cmd->add_option("--torch-baselines", o.torch_baselines,
                  "PyTorch baselines (the built-ins' one-line PyTorch forms, or a declared contract's PyTorch reference): eager, "
                  "compiled, eager,compiled or none (default: both where PyTorch runs the contract and torch is importable; "
                  "the phase says why not otherwise)");
  auto* profile = cmd->add_option("--profile", o.profile,
                  "Deployment profile (TOML, profiles/): its [[shape]] mix weighs the shapes in the decision (and names the "
                  "shapes timed when no --shape is given), its [decision] table sets margins (default: every shape called "
                  "equally often; docs/decision.md)");
  input_path(profile, PathRole::file, "a deployment profile TOML, e.g. profiles/default.toml");
  cmd->add_option("--margin", o.margin,
                  "Practical margin REL[,ABS]: a difference counts only beyond max(REL, ABS / baseline time), e.g. 3%,0.5us "
                  "(default: the profile's, else 3%,0.5us)");
  cmd->add_option("--regression-limit", o.regression_limit,
                  "No shape of the mix may be slower than this (or ABS), whatever the average says, e.g. 10% (default 10%)");
  add_negatable_flag(cmd, "clock-guard", o.clock_guard,
                     "--no-clock-guard: do not read the SM clock (NVML) after each sample nor discard samples run "
                     "below 90 % of the default clock or under a power/thermal slowdown");
}

void print_outcome(const GlobalOptions& g, const QualifyOutcome& out) {
  if (g.json) {
    std::cout << out.results.dump(2) << "\n";
    return;
  }
  const report::QualifyResult& r = out.result;
  fmt::print("kqual: {} ({})\n", r.candidate.name, r.candidate.contract);
  for (const auto& [k, v] : r.phases.entries()) fmt::print("  {:<18} {}\n", k, v);
  fmt::print("verdict: {} — {}\n", decision::to_string(r.verdict.verdict), r.verdict.summary);
  for (const auto& x : r.verdict.reasons) fmt::print("  - {}\n", x);
  fmt::print("wrote {} and {}\n", out.results_path.string(), out.memo_path.string());
  if (r.reproduce) fmt::print("\n{}", report::reproduce_text(r.reproduce));
}

}  // namespace

void add_qualify_commands(CLI::App& app, CliState& s, bool run_commands) {
  // qualify, check and bench are one pipeline with phases switched off.
  GlobalOptions& g = s.g;
  int* exit_code = &s.exit_code;
  auto add = [&](const char* name, const char* help, QualifyOptions& o, bool correctness, bool timing) {
    auto* cmd = app.add_subcommand(name, help);
    add_common(cmd, o, g);
    if (timing) add_timing_options(cmd, o);
    add_contract_source_options(cmd, o.sources);
    if (timing) add_baseline_option(cmd, o.baseline_dirs);
    if (correctness && timing)
      cmd->add_flag("--recheck-baselines", o.recheck_baselines,
                    "--recheck-baselines: check every baseline's correctness again, even where an accepted verdict is kept "
                    "for the same baseline, contract, kqual, NVRTC, GPU and options, and time PyTorch eager and torch.compile "
                    "at every shape again instead of reusing their kept series (kept in $KQUAL_CACHE_DIR, else "
                    "~/.cache/kqual; docs/qualify.md)");
    if (!timing)
      cmd->add_option("--case", o.only_case,
                      "Run only the case with this id (as results.json names it, e.g. f32/n=1025/normal), generated under "
                      "--seed exactly as in the run that recorded it: the command a `kqual replay` folder gives");
    if (correctness) add_submission_options(cmd, s.submission);
    if (!run_commands) return;
    cmd->callback([&g, &o, &s, exit_code, correctness, timing, name] {
      o.correctness = correctness;
      o.timing = timing;
      if (correctness && check_submission_if_any(g, o, s.submission, exit_code)) return;
      if (pipeline::is_torch_submission(o.candidate))
        throw_error(ErrorKind::usage, fmt::format("kqual {} of a PyTorch submission: a submission is timed only after its "
                                                  "correctness is checked: use kqual qualify {}",
                                                  name, o.candidate.string()));
      o.command_line = g.command_line;
      o.command = name;
      if (o.timer == worker::TimerKind::graph && o.flush_mode != "none")
        throw_error(ErrorKind::usage, "--timer graph replays launches back to back with a warm L2: add --l2-flush none");
      o.progress = progress_for(g, name).sink();
      o.correctness = correctness;
      o.timing = timing;
      QualifyOutcome out = pipeline::qualify(o);
      print_outcome(g, out);
      *exit_code = out.exit_code;
    });
  };
  add("qualify", "Compile, load, check against the contract, time against baselines, write results.json + memo.md",
      s.qualify, true, true);
  add("check", "Correctness only: compile, load, run the contract's cases", s.check, true, false);
  add("bench", "Timing only (no correctness phase) against the bundled baselines: a speed verdict, never ship (correctness "
               "is not checked)", s.bench, false, true);

  SelftestOptions& st = s.selftest;
  std::vector<std::uint64_t>& seeds = s.selftest_seeds;
  auto* self = app.add_subcommand("selftest", "Run every bundled good and known-broken candidate: broken ones must be "
                                              "rejected for their stated reason, good ones accepted");
  self->add_option("--seeds", seeds, "Case-generator seeds (comma separated)")->delimiter(',');
  self->add_option("--watchdog", st.watchdog_seconds, "Worker watchdog [s]")->capture_default_str();
  add_negatable_flag(self, "large-cases", st.large_cases, "--large-cases: include the largest correctness cases");
  input_path(self->add_option("--root", st.root, "Folder that holds candidates/ and baselines/ (default: found from the working directory)"),
             PathRole::folder, "the kqual checkout, which holds candidates/ and baselines/");
  std::filesystem::path& self_out = s.selftest_out;
  output_path(self->add_option("--out", self_out, "Also write the results as DIR/results.json"), PathRole::folder);
  self->add_option("--contract", st.contracts, "Only this contract (repeatable)");
  self->add_option("--lanes", st.lanes, "Worker sessions checking candidates at once on the GPU (default 0: one per four "
                                        "host threads, at most 4)");
  self->add_option("--jobs", st.jobs, "NVRTC compile threads, ahead of the GPU checks (default 0: one per host thread)");
  add_quiet_flag(self, g);
  add_contract_source_options(self, st.sources);
  add_negatable_flag(self, "baselines", st.include_baselines, "--no-baselines: leave out the bundled baselines (known-good too)");
  add_negatable_flag(self, "sanitizer-pass", st.sanitizer_pass,
                     "--no-sanitizer-pass: skip check's compute-sanitizer pass (memcheck + racecheck on a few small cases)");
  self->add_option("--sanitize", st.sanitize, "Run the correctness phase under compute-sanitizer: memcheck, racecheck, "
                                              "initcheck or synccheck (cases up to 2^22 elements)");
  if (!run_commands) return;
  self->callback([&g, &st, &seeds, &self_out, exit_code] {
    st.command_line = g.command_line;
    st.progress = progress_for(g, "selftest").sink();
    if (!seeds.empty()) st.seeds = seeds;
    pipeline::SelftestOutcome out = pipeline::selftest(st);
    if (!self_out.empty()) pipeline::write_results(self_out, out.results, {});
    if (g.json)
      std::cout << out.results.dump(2) << "\n";
    else
      std::cout << report::render_selftest_text(out.result, out.results.value("lanes", 1));
    *exit_code = out.exit_code;
  });
}

}  // namespace kqual::run
