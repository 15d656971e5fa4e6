// kqual slurm screen CAND... --tasks N — thin CLI over pipeline/screen/screen_slurm.cpp.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "kqual/core/exit_codes.hpp"
#include "kqual/pipeline/screen_slurm.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {

void add_screen_verdict_options(CLI::App* cmd, pipeline::ScreenOptions& o);  // run/screen_cmd.cpp

namespace {

// What a dry run and a submission both report of the plan.
json plan_fields(const pipeline::SlurmPlan& plan) {
  return {{"shards", plan.shards}, {"array_tasks", plan.array_tasks}, {"out", plan.out_dir.string()}};
}

}  // namespace

void add_slurm_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto* slurm = app.add_subcommand("slurm", "Run a campaign on a Slurm cluster (docs/scale-out.md)");
  slurm->require_subcommand(1);
  auto o = std::make_shared<pipeline::SlurmScreenOptions>();
  auto dry_run = std::make_shared<bool>(false);
  o->screen.out_dir = "kqual-campaign";
  auto* cmd = slurm->add_subcommand(
      "screen", "Screen candidates as a Slurm job array: --tasks shards, each running `kqual screen --shard I/N` with its own "
                "journal under --out (a requeued task resumes from it), then a merge job after the whole array "
                "(OUT/merged/results.json); several shards per array task when MaxArraySize is smaller");
  input_path(cmd->add_option("candidates", o->screen.inputs,
                             "Candidate folders (with kqual.toml), or a folder whose sub-folders are candidates")
                 ->required(),
             PathRole::file_or_folder);
  cmd->add_option("--tasks", o->shards, "Shards of the campaign: one array task each, unless MaxArraySize forces several per task")
      ->required()->check(CLI::PositiveNumber);
  output_path(cmd->add_option("--out", o->screen.out_dir,
                              "Campaign folder, on a file system every node sees: shard-I-of-N/ (journals), merged/, slurm/ "
                              "(scripts, logs)")
                  ->capture_default_str(),
              PathRole::folder);
  cmd->add_option("--gpus-per-task", o->gpus_per_task, "GPUs each array task asks for; its screen takes them all (--gpus all)")
      ->capture_default_str();
  cmd->add_option("--gres", o->gres, "The GRES request of each task (default gpu:<gpus-per-task>; e.g. gpu:h100:2 where GPUs are typed)");
  cmd->add_option("--partition", o->partition, "Slurm partition of the array and the merge job");
  cmd->add_option("--time", o->time, "Time limit of each array task and of the merge job (Slurm's format, e.g. 2:00:00)");
  cmd->add_option("--max-array-size", o->max_array_size,
                  "Array tasks at most (default: MaxArraySize from `scontrol show config`, else Slurm's default 1001)")
      ->check(CLI::PositiveNumber);
  add_negatable_flag(cmd, "requeue", o->requeue, "--no-requeue: tasks are not requeued after preemption or a node failure");
  input_path(cmd->add_option("--kqual", o->kqual_exe, "The kqual binary the tasks run, on a path every node sees (default: this one)"),
             PathRole::file);
  cmd->add_option("--job-name", o->job_name, "Slurm job name (the merge job adds -merge)")->capture_default_str();
  add_screen_verdict_options(cmd, o->screen);
  add_contract_source_options(cmd, o->screen.sources);  // forwarded to every task (OUT/slurm/contracts.json)
  cmd->add_flag("--dry-run", *dry_run, "Print the two batch scripts and the sbatch commands; submit nothing, write nothing");
  cmd->callback([&g, o, dry_run, exit_code] {
    const pipeline::SlurmPlan plan = pipeline::plan_slurm_screen(*o);
    if (*dry_run) {
      if (g.json) {
        json j = plan_fields(plan);
        j.update({{"max_array_size", plan.max_array_size},
                  {"max_array_source", plan.max_array_source},
                  {"judge", plan.judge.to_json()},
                  {"screen_script", plan.screen_script},
                  {"merge_script", plan.merge_script}});
        std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
      } else {
        const auto dir = plan.out_dir / "slurm";
        fmt::print("# {}/contracts.json (the judge every task uses)\n{}\n", dir.string(),
                   plan.judge.to_json().dump(2, ' ', false, json::error_handler_t::replace));
        fmt::print("# {}/screen.sbatch\n{}\n# {}/merge.sbatch\n{}\n", dir.string(), plan.screen_script, dir.string(),
                   plan.merge_script);
        fmt::print("# submit (what kqual slurm screen without --dry-run does):\n#   sbatch {}/screen.sbatch\n"
                   "#   sbatch -d afterany:<the array's job id> {}/merge.sbatch\n",
                   dir.string(), dir.string());
      }
      *exit_code = kExitPass;
      return;
    }
    const pipeline::SlurmSubmission sub = pipeline::submit_slurm_screen(plan);
    if (g.json) {
      json j = plan_fields(plan);
      j.update({{"screen_job", sub.screen_job},
                {"merge_job", sub.merge_job},
                {"screen_script", sub.screen_script_path.string()},
                {"merge_script", sub.merge_script_path.string()}});
      std::cout << j.dump(2) << "\n";
    } else {
      fmt::print("{}\n", sub.screen_job);
      fmt::print(stderr, "kqual slurm screen: array job {} ({} shard(s) over {} task(s)), merge job {} after it; results in {}\n",
                 sub.screen_job, plan.shards, plan.array_tasks, sub.merge_job, (plan.out_dir / "merged").string());
    }
    *exit_code = kExitPass;
  });
}

}  // namespace kqual::run
