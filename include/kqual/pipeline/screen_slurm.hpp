#pragma once
// kqual slurm screen: a screening campaign as a Slurm job array (docs/scale-out.md). Slurm schedules;
// kqual only writes two batch scripts and submits them with sbatch: an array whose tasks run
// `kqual screen --shard I/N` (each shard with its own journal under OUT, so a requeued or preempted
// task resumes where its journal ends) and a merge job that depends on the whole array and runs
// `kqual screen merge`. When there are more shards than the cluster's MaxArraySize allows array
// tasks, each task runs several shards (task t: shards t, t + A, t + 2A, ...).
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "kqual/pipeline/screen.hpp"

namespace kqual::pipeline {

struct SlurmScreenOptions {
  ScreenOptions screen;          // candidates, --out (the campaign folder) and the verdict options
  int shards = 1;                // --tasks: the campaign's shards
  int gpus_per_task = 1;         // GPUs each array task asks for (its screen runs --gpus all)
  std::string gres;              // GRES request; "" = gpu:<gpus_per_task>
  std::string partition, time;   // sbatch's, when given
  int max_array_size = 0;        // 0: read from `scontrol show config`, else Slurm's default 1001
  bool requeue = true;           // tasks may be requeued (preemption, node failure)
  std::string kqual_exe;         // the kqual that tasks run; "" = this binary
  std::string job_name = "kqual-screen";
};

// The judge as the submitting command resolves it, fixed for every array task (which starts later,
// on another node, in another environment and folder): the same contract folders in the same order,
// the same project contracts/, the same --allow-candidate-contract. Recorded in the campaign folder
// (OUT/slurm/contracts.json) and written into each task's command line and environment.
struct SlurmJudge {
  // --contracts for every task, absolute, in lookup order: the submitter's --contracts folders, then
  // those of its $KQUAL_CONTRACTS (which the tasks do not read: a node's own value would add others).
  std::vector<std::filesystem::path> contract_dirs;
  // KQUAL_HOME for every task: the submitter's (absolute), else the folder above the project contracts/
  // it found above its executable; "" when it found none (the tasks then run without KQUAL_HOME).
  std::filesystem::path kqual_home;
  std::filesystem::path project_contracts;  // the submitter's project contracts/ ("" = none)
  bool allow_candidate_contract = false;
  // What the candidates' contracts resolve to now: name -> {origin, supplied_with_candidate, file,
  // sha256}, as each shard's results.json "contracts".
  json contracts = json::object();
  json to_json() const;
};

// Sets the process's contract sources to o.sources (as screen does) and resolves every candidate's
// contract: Error(usage|input) for a bad --contract, as screen would give it.
SlurmJudge slurm_task_judge(const ScreenOptions& o, const std::vector<std::filesystem::path>& candidates);

struct SlurmPlan {
  std::size_t candidates = 0;    // found at planning time
  std::vector<std::filesystem::path> candidate_dirs;  // written into shard_list at submission
  std::filesystem::path shard_list;  // OUT/shard-list-<N>.json: which shard screens which candidate
  int shards = 1;
  int array_tasks = 1;           // min(shards, max_array_size)
  int max_array_size = 1001;
  std::string max_array_source;  // "scontrol show config", "--max-array-size", "Slurm's default"
  std::filesystem::path out_dir;       // absolute campaign folder: shard-I-of-N/, merged/, slurm/
  SlurmJudge judge;                    // the contracts every task judges by
  std::string screen_script, merge_script;
};

// MaxArraySize from `scontrol show config`; 0 (with *why) when scontrol is absent or says nothing.
int read_max_array_size(std::string* why);

// The two scripts. Error(usage) for a bad --tasks, --gpus-per-task or --max-array-size, and for
// --gpus (the tasks take every GPU of their allocation).
SlurmPlan plan_slurm_screen(const SlurmScreenOptions& o);

struct SlurmSubmission {
  std::string screen_job, merge_job;                         // job ids sbatch gave
  std::filesystem::path screen_script_path, merge_script_path;
};

// Writes the campaign's candidate list (kept when it exists), OUT/slurm/contracts.json (the judge),
// OUT/slurm/screen.sbatch and merge.sbatch (each atomically) and submits both, the merge
// depending on every array task (afterany: it runs, and counts what is missing, even when a task
// failed). Error(usage) naming sbatch when it is not on PATH; Error(io) with sbatch's message when
// it refuses a script.
SlurmSubmission submit_slurm_screen(const SlurmPlan& plan);

// The file `name` on PATH ("" when absent); `path_env` is PATH's value.
std::string find_on_path(const std::string& name, const char* path_env);

}  // namespace kqual::pipeline
