// kqual slurm screen: the batch scripts of a sharded screening campaign, and their submission through
// sbatch. Slurm does the scheduling; kqual writes what each array task runs. docs/scale-out.md.
#include "kqual/pipeline/screen_slurm.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/self.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/process.hpp"
#include "kqual/pipeline/screen_journal.hpp"
#include "kqual/pipeline/screen_shard.hpp"
#include "screen_contracts.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

constexpr int kSlurmDefaultMaxArraySize = 1001;  // slurm.conf(5): MaxArraySize's default

// One word for bash: single-quoted, with ' written as '\''.
std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool has_space(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

// A value that goes into a #SBATCH line (which sbatch splits at white space).
void directive_value(const std::string& option, const std::string& v) {
  if (has_space(v))
    throw_error(ErrorKind::usage, fmt::format("{} '{}': contains white space, which a #SBATCH line cannot hold", option, v));
}

// The bash test, once $rc holds a kqual command's exit code, for a command that did not finish:
// codes up to kExitIncomplete are verdicts (rejected, refused, incomplete), above it kqual's own
// failure, and no results.json in `out` means it stopped before its end.
std::string did_not_finish(const std::string& out) {
  return fmt::format("[ \"$rc\" -gt {} ] || [ ! -f \"{}/results.json\" ]", kExitIncomplete, out);
}

std::string self_exe() { return self_executable_or_throw("give --kqual").string(); }

// The kqual screen options each shard runs with: the ones that decide verdicts (the judge's folders
// among them: `judge`), and the GPU choice.
std::string screen_arguments(const ScreenOptions& s, const SlurmJudge& judge) {
  std::vector<std::string> a;
  for (const auto& d : judge.contract_dirs) a.push_back("--contracts " + sh_quote(d.string()));
  if (judge.allow_candidate_contract) a.push_back("--allow-candidate-contract");
  if (!s.contract.empty()) a.push_back("--contract " + sh_quote(s.contract));
  if (!s.arch.empty()) a.push_back("--arch " + sh_quote(s.arch));
  a.push_back(fmt::format("--seed {}", s.seed));
  if (!s.large_cases) a.push_back("--no-large-cases");
  if (s.all_cases) a.push_back("--all-cases");
  if (!s.sanitizer_pass) a.push_back("--no-sanitizer-pass");
  a.push_back(fmt::format("--jobs {}", s.jobs));
  a.push_back(fmt::format("--watchdog {}", s.watchdog_seconds));
  // Every GPU of the task's allocation: Slurm sets CUDA_VISIBLE_DEVICES to them.
  a.push_back(s.use_gpu ? "--gpus all" : "--no-gpu");
  return fmt::format("{}", fmt::join(a, " "));
}

// The lines of the array script that give each task the submitter's contract folders: the user's
// are on the command line (screen_arguments); the environment must not add others nor move the
// project's contracts/.
std::string judge_environment(const SlurmJudge& j) {
  std::string e = "# The judge as `kqual slurm screen` resolved it (OUT/slurm/contracts.json): its --contracts folders and\n";
  e += "# $KQUAL_CONTRACTS, in that order, as --contracts below; the project's contracts/ through KQUAL_HOME. A node's\n";
  e += "# own values would change what a contract name means.\n";
  e += "unset KQUAL_CONTRACTS\n";
  e += j.kqual_home.empty() ? std::string("unset KQUAL_HOME\n") : "export KQUAL_HOME=" + sh_quote(j.kqual_home.string()) + "\n";
  return e;
}

// "Submitted batch job 123" (or "... 123 on cluster c") -> "123".
std::string submitted_job_id(const std::string& out) {
  std::smatch m;
  static const std::regex re("Submitted batch job ([0-9]+)");
  return std::regex_search(out, m, re) ? m[1].str() : std::string();
}

}  // namespace

json SlurmJudge::to_json() const {
  json dirs = json::array();
  for (const auto& d : contract_dirs) dirs.push_back(d.string());
  return json{{"contracts_folders", dirs},
              {"kqual_home", kqual_home.empty() ? json() : json(kqual_home.string())},
              {"project_contracts", project_contracts.empty() ? json() : json(project_contracts.string())},
              {"allow_candidate_contract", allow_candidate_contract},
              {"contracts", contracts}};
}

SlurmJudge slurm_task_judge(const ScreenOptions& o, const std::vector<fs::path>& candidates) {
  const contract::ContractLookup lookup(o.sources);  // the submitter's, as its own screen would judge
  SlurmJudge j;
  j.allow_candidate_contract = o.sources.allow_candidate_contract;
  for (const auto& r : lookup.roots()) {
    const fs::path dir = fs::absolute(r.dir).lexically_normal();
    if (r.origin == contract::ContractOrigin::user)
      j.contract_dirs.push_back(dir);
    else if (r.origin == contract::ContractOrigin::project)
      j.project_contracts = dir;
  }
  if (const char* home = std::getenv("KQUAL_HOME"); home && *home)
    j.kqual_home = fs::absolute(home).lexically_normal();
  else if (!j.project_contracts.empty())
    j.kqual_home = j.project_contracts.parent_path();  // the folder above the executable that holds contracts/
  j.contracts = resolve_screen_contracts(candidates, o.contract, lookup).to_json();
  return j;
}

std::string find_on_path(const std::string& name, const char* path_env) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  std::stringstream ss(path_env ? path_env : "");
  for (std::string dir; std::getline(ss, dir, ':');) {
    const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

int read_max_array_size(std::string* why) {
  const std::string scontrol = find_on_path("scontrol", std::getenv("PATH"));
  if (scontrol.empty()) {
    if (why) *why = "scontrol is not on PATH";
    return 0;
  }
  ProcessResult r;
  try {
    r = run_process(scontrol, {"show", "config"}, {}, {}, 30);
  } catch (const Error& e) {
    if (why) *why = e.what();
    return 0;
  }
  std::smatch m;
  static const std::regex re("MaxArraySize\\s*=\\s*([0-9]+)");
  if (!r.exited || r.exit_code != 0 || !std::regex_search(r.out, m, re)) {
    if (why) *why = fmt::format("`scontrol show config` did not say ({})", first_line(r.err.empty() ? r.out : r.err));
    return 0;
  }
  return std::stoi(m[1].str());
}

SlurmPlan plan_slurm_screen(const SlurmScreenOptions& o) {
  if (o.shards < 1) throw_error(ErrorKind::usage, fmt::format("--tasks {}: must be at least 1", o.shards));
  if (o.screen.use_gpu && o.gpus_per_task < 1)
    throw_error(ErrorKind::usage, fmt::format("--gpus-per-task {}: must be at least 1 (--no-gpu for a campaign of static "
                                              "phases only)",
                                              o.gpus_per_task));
  if (!o.screen.gpus.empty() || !o.screen.shard.empty())
    throw_error(ErrorKind::usage, "kqual slurm screen chooses each task's shard and GPUs itself: give --tasks and --gpus-per-task");
  if (o.screen.jobs < 1) throw_error(ErrorKind::usage, fmt::format("--jobs {}: must be at least 1", o.screen.jobs));
  directive_value("--partition", o.partition);
  directive_value("--time", o.time);
  directive_value("--gres", o.gres);
  directive_value("--job-name", o.job_name);
  SlurmPlan p;
  p.shards = o.shards;
  if (o.max_array_size > 0) {
    p.max_array_size = o.max_array_size;
    p.max_array_source = "--max-array-size";
  } else {
    std::string why;
    const int m = read_max_array_size(&why);
    p.max_array_size = m > 0 ? m : kSlurmDefaultMaxArraySize;
    p.max_array_source = m > 0 ? "scontrol show config" : fmt::format("Slurm's default ({})", why);
  }
  p.array_tasks = std::min(p.shards, p.max_array_size);
  p.out_dir = fs::absolute(o.screen.out_dir).lexically_normal();
  if (has_space(p.out_dir.string()))
    throw_error(ErrorKind::usage, fmt::format("--out {}: the campaign folder's path contains white space, which a #SBATCH line "
                                              "cannot hold",
                                              p.out_dir.string()));
  // The inputs as given, made absolute (tasks start in other folders, on other hosts): each task
  // lists the candidates itself, as every shard must, and the script stays small for large campaigns.
  p.candidate_dirs = screen_candidates(o.screen.inputs);  // an input that names none: an error now
  p.candidates = p.candidate_dirs.size();
  p.shard_list = default_shard_list(p.out_dir / "shard-0-of-N", p.shards);
  std::vector<std::string> cands;
  for (const auto& c : o.screen.inputs) cands.push_back(sh_quote(fs::absolute(c).lexically_normal().string()));
  p.judge = slurm_task_judge(o.screen, p.candidate_dirs);
  const std::string kqual = o.kqual_exe.empty() ? self_exe() : fs::absolute(o.kqual_exe).string();
  const std::string slurm_dir = (p.out_dir / "slurm").string();

  std::string h;  // the directives both scripts share
  if (!o.partition.empty()) h += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.time.empty()) h += "#SBATCH --time=" + o.time + "\n";

  std::string s = "#!/bin/bash\n";
  s += fmt::format("# kqual slurm screen: {} candidate(s) in {} shard(s) over {} array task(s){} (docs/scale-out.md).\n",
                   p.candidates, p.shards, p.array_tasks,
                   p.array_tasks < p.shards ? fmt::format(", several shards per task (MaxArraySize {}, from {})",
                                                          p.max_array_size, p.max_array_source)
                                            : std::string());
  s += "# Each shard has its own journal under its folder; a requeued or preempted task resumes from it.\n";
  s += fmt::format("# Which candidates each shard screens: the list written at submission, {}.\n", p.shard_list.string());
  s += fmt::format("#SBATCH -J {}\n#SBATCH -a 0-{}\n#SBATCH -n 1\n#SBATCH -c {}\n", o.job_name, p.array_tasks - 1, o.screen.jobs);
  s += fmt::format("#SBATCH -o {}/screen-%A_%a.out\n", slurm_dir);
  if (o.requeue) s += "#SBATCH --requeue\n";
  if (o.screen.use_gpu) s += fmt::format("#SBATCH --gres={}\n", o.gres.empty() ? fmt::format("gpu:{}", o.gpus_per_task) : o.gres);
  s += h;
  s += "set -u\n";
  s += "# Number GPUs as Slurm and nvidia-smi do (PCI bus order), not fastest first.\n";
  s += "export CUDA_DEVICE_ORDER=PCI_BUS_ID\n";
  s += judge_environment(p.judge);
  s += fmt::format("KQUAL={}\nOUT={}\nSHARDS={}\nTASKS={}\n", sh_quote(kqual), sh_quote(p.out_dir.string()), p.shards,
                   p.array_tasks);
  s += "task=${SLURM_ARRAY_TASK_ID:?not run as a Slurm array task}\n";
  s += "status=0\n";
  s += "for ((shard = task; shard < SHARDS; shard += TASKS)); do\n";
  s += "  dir=\"$OUT/shard-$shard-of-$SHARDS\"\n";
  s += "  rc=0\n";
  s += fmt::format("  \"$KQUAL\" --quiet screen --shard \"$shard/$SHARDS\" --out \"$dir\" {} \\\n    -- {} || rc=$?\n",
                   screen_arguments(o.screen, p.judge), fmt::join(cands, " "));
  s += "  # Exit codes 0-3 are verdicts (rejected, refused, incomplete); 4 is kqual's own failure, and no\n";
  s += "  # results.json means the shard stopped before its end (a bad option, a journal of other options).\n";
  s += fmt::format("  if {}; then\n", did_not_finish("$dir"));
  s += "    echo \"kqual slurm: shard $shard/$SHARDS did not finish (exit $rc)\" >&2\n";
  s += "    status=1\n  fi\ndone\nexit $status\n";
  p.screen_script = s;

  std::string m = "#!/bin/bash\n";
  m += "# kqual slurm screen: the merge step, after every array task has ended (docs/scale-out.md).\n";
  m += fmt::format("#SBATCH -J {}-merge\n#SBATCH -n 1\n#SBATCH -c 1\n#SBATCH -o {}/merge-%j.out\n", o.job_name, slurm_dir);
  m += h;
  m += "set -u\n";
  m += fmt::format("KQUAL={}\nOUT={}\nSHARDS={}\n", sh_quote(kqual), sh_quote(p.out_dir.string()), p.shards);
  m += "shopt -s nullglob\n";
  m += "dirs=(\"$OUT\"/shard-*-of-\"$SHARDS\")\n";
  m += "if [ ${#dirs[@]} -eq 0 ]; then echo \"kqual slurm: no shard folder under $OUT\" >&2; exit 1; fi\n";
  m += "rc=0\n\"$KQUAL\" screen merge --out \"$OUT/merged\" \"${dirs[@]}\" || rc=$?\n";
  m += "# 0-3: the campaign's verdicts (see merged/summary.md); 4 or no results: the merge failed.\n";
  m += fmt::format("if {}; then exit 1; fi\nexit 0\n", did_not_finish("$OUT/merged"));
  p.merge_script = m;
  return p;
}

SlurmSubmission submit_slurm_screen(const SlurmPlan& plan) {
  const std::string sbatch = find_on_path("sbatch", std::getenv("PATH"));
  if (sbatch.empty())
    throw_error(ErrorKind::usage, "sbatch is not on PATH: kqual slurm screen submits through Slurm's sbatch (run it where "
                                  "Slurm's commands are installed, or give --dry-run to print the scripts without submitting)");
  SlurmSubmission sub;
  const fs::path dir = plan.out_dir / "slurm";
  fs::create_directories(dir);
  // The campaign's candidate list, fixed now: every task reads it (a resubmission keeps the first).
  (void)open_shard_list(plan.shard_list, plan.shards, plan.candidate_dirs);
  write_file_atomic(dir / "contracts.json", plan.judge.to_json().dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  sub.screen_script_path = dir / "screen.sbatch";
  sub.merge_script_path = dir / "merge.sbatch";
  write_file_atomic(sub.screen_script_path, plan.screen_script);
  write_file_atomic(sub.merge_script_path, plan.merge_script);
  auto submit = [&](const std::vector<std::string>& args, const std::string& what) {
    const ProcessResult r = run_process(sbatch, args, {}, {}, 120);
    const std::string id = submitted_job_id(r.out);
    if (!r.exited || r.exit_code != 0 || id.empty())
      throw_error(ErrorKind::io, fmt::format("sbatch refused the {} ({}): {}", what,
                                             r.timed_out ? "no answer within 120 s" : fmt::format("exit {}", r.exit_code),
                                             first_line(r.err.empty() ? r.out : r.err)));
    return id;
  };
  sub.screen_job = submit({sub.screen_script_path.string()}, "screen array " + sub.screen_script_path.string());
  try {
    // afterany: the merge runs once every task has ended, however it ended, and counts what is missing.
    sub.merge_job = submit({"-d", "afterany:" + sub.screen_job, sub.merge_script_path.string()},
                           "merge job " + sub.merge_script_path.string());
  } catch (const Error& e) {
    throw_error(ErrorKind::io, fmt::format("{}; the screen array is submitted as job {}: submit the merge after it with "
                                           "sbatch -d afterany:{} {}",
                                           e.what(), sub.screen_job, sub.screen_job, sub.merge_script_path.string()));
  }
  return sub;
}

}  // namespace kqual::pipeline
