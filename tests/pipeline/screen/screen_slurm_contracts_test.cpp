// kqual slurm screen judges as the submitting command does: its --contracts folders and
// $KQUAL_CONTRACTS (absolute, in lookup order), its project contracts/ and --allow-candidate-contract
// reach every array task's command line and environment, are recorded in the campaign folder, and a
// task started elsewhere (another folder, a node whose $KQUAL_CONTRACTS names other files) resolves
// the same contract files. Without a device: the array script is run by bash, as Slurm would.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/pipeline/screen_slurm.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

// The bundled residual_add_relu_declared contract renamed `name`, in `dir` (its reference beside it).
// `tag` changes the file's bytes (a decoy of the same name is another file).
fs::path slurm_contract_at(const fs::path& dir, const std::string& name, const std::string& tag = "") {
  const fs::path from = test::repo_root() / "contracts/residual_add_relu_declared";
  fs::create_directories(dir);
  write_file_atomic(dir / "contract.toml", std::regex_replace(read_text_file(from / "contract.toml"),
                                                              std::regex("name = \"residual_add_relu_declared\""),
                                                              "name = \"" + name + "\"") +
                                               (tag.empty() ? "" : "# " + tag + "\n"));
  fs::copy_file(from / "reference.py", dir / "reference.py", fs::copy_options::overwrite_existing);
  return fs::weakly_canonical(dir / "contract.toml");
}

// The bundled residual_add_relu good candidate in `dir`, its manifest naming `value`.
void slurm_candidate_at(const fs::path& dir, const std::string& value) {
  const fs::path from = test::repo_root() / "candidates/residual_add_relu/good";
  fs::create_directories(dir);
  fs::copy(from, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  write_file_atomic(dir / "kqual.toml", std::regex_replace(read_text_file(from / "kqual.toml"), std::regex("contract = \"residual_add_relu\""),
                                                           "contract = \"" + value + "\""));
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// One environment variable set for a test's duration, restored after.
class EnvVar {
 public:
  EnvVar(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvVar() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class SlurmContractsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = std::make_unique<ScratchDir>("kqual-slurm-contracts");
    root_ = fs::weakly_canonical(tmp_->path());
    // Names of this test only: this process keeps every contract it loaded, one file per name.
    static int tests = 0;
    const std::string n = "slj" + std::to_string(tests++);
    user_ = n + "_user_relu", env_ = n + "_env_relu", own_ = n + "_own_relu";
    user_file_ = slurm_contract_at(root_ / "mine" / user_, user_);
    env_file_ = slurm_contract_at(root_ / "envdir" / env_, env_);
    own_file_ = slurm_contract_at(root_ / "cands/brings/own", own_);
    slurm_candidate_at(root_ / "cands/brings", "own/contract.toml");
    slurm_candidate_at(root_ / "cands/by_user", user_);
    slurm_candidate_at(root_ / "cands/by_env", env_);
  }

  // The campaign as `kqual slurm screen --no-gpu --tasks 2 --contracts mine [--allow-candidate-contract]`
  // would plan it, its folders given relative to the working directory.
  SlurmScreenOptions options(bool allow) const {
    SlurmScreenOptions so;
    so.screen.inputs = {fs::relative(root_ / "cands")};
    so.screen.out_dir = root_ / "campaign";
    so.screen.use_gpu = false;
    so.screen.sanitizer_pass = false;
    so.screen.jobs = 1;
    so.screen.sources = {{fs::relative(root_ / "mine")}, allow};
    so.shards = 2;
    so.max_array_size = 10;
    so.kqual_exe = test::kqual_exe().string();
    return so;
  }

  std::unique_ptr<ScratchDir> tmp_;
  std::string user_, env_, own_;
  fs::path root_, user_file_, env_file_, own_file_;
};

TEST_F(SlurmContractsTest, EveryTaskGetsTheSubmittersContractFoldersAndOption) {
  std::optional<SlurmPlan> p;
  {
    const EnvVar env("KQUAL_CONTRACTS", fs::relative(root_ / "envdir").string());
    p = plan_slurm_screen(options(true));
  }
  const std::string& s = p->screen_script;
  // Absolute, the user's folder before $KQUAL_CONTRACTS's (the order the submitter looked them up in).
  const std::string user_arg = "--contracts '" + (root_ / "mine").string() + "'";
  const std::string env_arg = "--contracts '" + (root_ / "envdir").string() + "'";
  ASSERT_TRUE(has(s, user_arg)) << s;
  ASSERT_TRUE(has(s, env_arg)) << s;
  EXPECT_LT(s.find(user_arg), s.find(env_arg));
  EXPECT_TRUE(has(s, " --allow-candidate-contract ")) << s;
  EXPECT_TRUE(has(s, "\nunset KQUAL_CONTRACTS\n")) << s;
  EXPECT_TRUE(has(s, "\nexport KQUAL_HOME='" + p->judge.kqual_home.string() + "'\n")) << s;
  EXPECT_FALSE(p->judge.kqual_home.empty());
  EXPECT_EQ(p->judge.project_contracts, p->judge.kqual_home / "contracts");

  // The record: what each name resolved to when the campaign was planned.
  const json& c = p->judge.contracts;
  EXPECT_EQ(c.at(user_).value("file", ""), user_file_.string()) << c.dump(1);
  EXPECT_EQ(c.at(user_).value("origin", ""), "user");
  EXPECT_EQ(c.at(env_).value("file", ""), env_file_.string()) << c.dump(1);
  EXPECT_EQ(c.at(own_).value("origin", ""), "candidate");
  EXPECT_TRUE(c.at(own_).value("supplied_with_candidate", false));
  EXPECT_EQ(c.at(own_).value("sha256", ""), sha256_file_hex(own_file_.string()));

  // Submission writes it into the campaign folder (a stand-in sbatch accepts both scripts).
  const fs::path bin = root_ / "bin";
  fs::create_directories(bin);
  write_file_atomic(bin / "sbatch", "#!/bin/sh\necho Submitted batch job 42\n");
  fs::permissions(bin / "sbatch", fs::perms::owner_all);
  {
    const EnvVar path("PATH", bin.string() + ":" + (std::getenv("PATH") ? std::getenv("PATH") : ""));
    const SlurmSubmission sub = submit_slurm_screen(*p);
    EXPECT_EQ(sub.screen_job, "42");
  }
  const json recorded = json::parse(read_text_file(p->out_dir / "slurm/contracts.json"));
  EXPECT_EQ(recorded, p->judge.to_json());
  EXPECT_EQ(recorded.at("contracts_folders"), json::array({(root_ / "mine").string(), (root_ / "envdir").string()}));
  EXPECT_TRUE(recorded.at("allow_candidate_contract").get<bool>());

  // The tasks, started in another folder on a "node" whose $KQUAL_CONTRACTS holds another file under
  // one of the names, resolve every contract to the file the submitter resolved.
  const fs::path decoy = slurm_contract_at(root_ / "decoy" / env_, env_, "decoy");
  fs::create_directories(root_ / "elsewhere");
  for (int t = 0; t < 2; ++t) {
    const auto r = test::run("cd " + test::quote(root_ / "elsewhere") + " && SLURM_ARRAY_TASK_ID=" + std::to_string(t) +
                             " KQUAL_CONTRACTS=" + test::quote(root_ / "decoy") + " bash " +
                             test::quote(p->out_dir / "slurm/screen.sbatch"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  std::set<std::string> names;
  for (int shard = 0; shard < 2; ++shard) {
    const fs::path results = p->out_dir / ("shard-" + std::to_string(shard) + "-of-2/results.json");
    ASSERT_TRUE(fs::exists(results)) << results;
    const json r = json::parse(read_text_file(results));
    for (const auto& [name, source] : r.at("contracts").items()) {
      EXPECT_EQ(source, c.at(name)) << "shard " << shard << ", " << name << ": the task resolved another contract";
      EXPECT_NE(source.value("file", ""), decoy.string());
      names.insert(name);
    }
    for (const auto& v : r.at("verdicts"))  // compiled, judged by the submitter's contract; no GPU
      EXPECT_EQ(v.value("verdict", ""), "incomplete") << v.dump(1);
  }
  EXPECT_EQ(names, (std::set<std::string>{user_, env_, own_}));
}

TEST_F(SlurmContractsTest, WithoutTheOptionACandidatesContractIsRefusedInTheTaskToo) {
  const SlurmPlan p = plan_slurm_screen(options(false));
  EXPECT_FALSE(has(p.screen_script, "--allow-candidate-contract")) << p.screen_script;
  EXPECT_FALSE(p.judge.contracts.contains(own_)) << p.judge.contracts.dump(1);
  EXPECT_TRUE(p.judge.contracts.contains(user_)) << p.judge.contracts.dump(1);
  EXPECT_FALSE(p.judge.to_json().at("allow_candidate_contract").get<bool>());
  // One shard: the task refuses the candidate that brings its contract, as the submitter would have.
  SlurmScreenOptions so = options(false);
  so.shards = 1;
  const SlurmPlan one = plan_slurm_screen(so);
  const fs::path script = root_ / "one.sbatch";
  write_file_atomic(script, one.screen_script);
  const auto r = test::run("cd / && SLURM_ARRAY_TASK_ID=0 bash " + test::quote(script));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const json res = json::parse(read_text_file(one.out_dir / "shard-0-of-1/results.json"));
  for (const auto& v : res.at("verdicts")) {
    if (v.value("name", "") == "brings") {
      EXPECT_EQ(v.value("verdict", ""), "refused") << v.dump(1);
      EXPECT_TRUE(has(v.value("detail", ""), "--allow-candidate-contract")) << v.dump(1);
    } else if (v.value("name", "") == "by_user") {
      EXPECT_EQ(v.value("verdict", ""), "incomplete") << v.dump(1);
    }
  }
}

TEST(SlurmContractsCli, DryRunShowsTheJudgeAndTheForwardedOptions) {
  const fs::path good = test::repo_root() / "candidates/residual_add_relu/good";
  const fs::path dir = test::repo_root() / "contracts";
  const auto r = test::run(test::kq() + " --json slurm screen --dry-run --no-gpu --tasks 2 --max-array-size 5 --contracts " +
                           test::quote(dir) + " --allow-candidate-contract " + test::quote(good));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_TRUE(has(j.at("screen_script").get<std::string>(), "--contracts '" + fs::weakly_canonical(dir).string() + "'"))
      << j.at("screen_script");
  EXPECT_TRUE(has(j.at("screen_script").get<std::string>(), "--allow-candidate-contract"));
  EXPECT_TRUE(j.at("judge").at("allow_candidate_contract").get<bool>());
  EXPECT_EQ(j.at("judge").at("contracts").at("residual_add_relu").value("origin", ""), "built-in");
}

}  // namespace
}  // namespace kqual::pipeline
