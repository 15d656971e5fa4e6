// `kqual check` of a PyTorch submission through the kqual binary, without a GPU: the bundled
// submissions' manifests read, a check that cannot run here says so (exit 3, results.json written),
// and the usage errors name what is wrong. The judging itself: tests/bench/torch_submission_test.cpp;
// on the GPU: tests/device/torch_submission_device_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "kqual/bench/torch_submission.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/process.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

const fs::path kExamples = test::repo_root() / "examples/torch_submissions/residual_add_relu";

ProcessResult kqual(const std::vector<std::string>& args) { return run_process(test::kqual_exe().string(), args, {}, {}, 120); }

TEST(SubmissionCli, EveryBundledSubmissionManifestReadsWithAKnownClass) {
  int good = 0, broken = 0;
  std::set<std::string> classes;
  for (const char* kind : {"good", "broken"})
    for (const auto& d : fs::directory_iterator(kExamples / kind)) {
      const bench::TorchSubmissionManifest m = bench::read_torch_submission_manifest(d.path());
      EXPECT_TRUE(fs::is_regular_file(m.submission.file)) << m.file;
      EXPECT_EQ(m.contract, "residual_add_relu");
      if (std::string(kind) == "good") {
        EXPECT_TRUE(m.expect_rejected_for.empty()) << m.file;
        ++good;
      } else {
        EXPECT_FALSE(m.expect_rejected_for.empty()) << m.file;
        classes.insert(m.expect_rejected_for);
        ++broken;
      }
    }
  EXPECT_EQ(good, 4);  // load_inline, Triton, torch.library, an idle side stream
  EXPECT_GE(broken, 10);
  EXPECT_GE(classes.size(), 9u) << "one known-broken submission per class";
}

// Every timing cheat states the class qualify must name while timing it (and none that check rejects).
TEST(SubmissionCli, EveryBundledTimingCheatStatesItsTimedClass) {
  std::set<std::string> classes;
  for (const auto& d : fs::directory_iterator(kExamples / "timing_cheats")) {
    const bench::TorchSubmissionManifest m = bench::read_torch_submission_manifest(d.path());
    EXPECT_TRUE(m.expect_rejected_for.empty()) << m.file << ": check accepts a timing cheat";
    EXPECT_FALSE(m.expect_timed_failure.empty()) << m.file;
    classes.insert(m.expect_timed_failure);
  }
  EXPECT_EQ(classes, (std::set<std::string>{"timer_patched", "timed_output_wrong"}));
}

// The allow list is the judge's: a submission's manifest that sets one is refused, naming the key.
TEST(SubmissionCli, ASubmissionCannotAllowLibraryKernelsForItself) {
  ScratchDir dir("kqual-submission-allow");
  std::ofstream(dir.path() / "kqual.toml") << "[candidate]\nname = \"s\"\nkind = \"torch_module\"\nmodule = \""
                                            << (kExamples / "good_triton.py").string()
                                            << "\"\ncontract = \"residual_add_relu\"\nallow_kernels = [\".*\"]\n";
  try {
    (void)bench::read_torch_submission_manifest(dir.path());
    FAIL() << "allow_kernels in a submission's manifest was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("allow_kernels"), std::string::npos) << e.what();
  }
}

TEST(SubmissionCli, AManifestMayClaimDtypes) {
  ScratchDir dir("kqual-submission-dtypes");
  auto manifest = [&](const std::string& dtypes) {
    std::ofstream(dir.path() / "kqual.toml") << "[candidate]\nname = \"s\"\nkind = \"torch_module\"\nmodule = \""
                                              << (kExamples / "good_triton.py").string()
                                              << "\"\ncontract = \"residual_add_relu\"\ndtypes = " << dtypes << "\n";
  };
  manifest(R"(["f32", "bf16"])");
  EXPECT_EQ(bench::read_torch_submission_manifest(dir.path()).submission.dtypes, (std::vector<DType>{DType::f32, DType::bf16}));
  manifest(R"(["float33"])");
  try {
    (void)bench::read_torch_submission_manifest(dir.path());
    ADD_FAILURE() << "an unknown dtype was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("candidate.dtypes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float33"), std::string::npos) << e.what();
  }
}

// `kqual <command>` on the Triton example without a GPU, into `out`: incomplete (exit 3), its output
// saying `said`; returns the results.json it wrote.
json no_gpu_results(const std::string& command, const fs::path& out, const std::string& said) {
  const ProcessResult p = kqual({command, (kExamples / "good/triton").string(), "--no-gpu", "--out", out.string()});
  EXPECT_EQ(p.exit_code, 3) << p.out << p.err;
  EXPECT_NE(p.out.find(said), std::string::npos) << p.out;
  return json::parse(read_text_file(out / "results.json"));
}

TEST(SubmissionCli, ACheckThatCannotRunHereSaysSoAndWritesItsResults) {
  ScratchDir out("kqual-submission-cli");
  const json r = no_gpu_results("check", out.path(), "not run: --no-gpu");
  EXPECT_EQ(r.value("kind", ""), "torch_submission");
  EXPECT_EQ(r.value("schema", ""), "kqual.submission/1");
  EXPECT_EQ(r["check"].value("verdict", ""), "not_run");
  EXPECT_EQ(r.value("contract", ""), "residual_add_relu");
  const std::string md = read_text_file(out.path() / "summary.md");
  EXPECT_NE(md.find("poisoned outputs and guard bytes"), std::string::npos) << md;
}

TEST(SubmissionCli, UsageErrorsNameWhatIsMissing) {
  const ProcessResult no_problem = kqual({"check", (kExamples / "good_triton.py").string(), "--no-gpu"});
  EXPECT_EQ(no_problem.exit_code, 2);
  EXPECT_NE(no_problem.err.find("--problem"), std::string::npos) << no_problem.err;
  const ProcessResult kernel = kqual({"check", (test::repo_root() / "candidates/residual_add_relu/good").string(), "--problem",
                                      "residual_add_relu", "--no-gpu"});
  EXPECT_EQ(kernel.exit_code, 2);
  EXPECT_NE(kernel.err.find("kernel candidate"), std::string::npos) << kernel.err;
  // bench times without checking: a submission is timed only once its correctness is (qualify).
  const ProcessResult b = kqual({"bench", (kExamples / "good/triton").string(), "--no-gpu"});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("use kqual qualify"), std::string::npos) << b.err;
  const ProcessResult shape = kqual({"qualify", (kExamples / "good/triton").string(), "--no-gpu", "--shape", "m=3"});
  EXPECT_EQ(shape.exit_code, 2) << shape.out << shape.err;  // residual_add_relu has no axis m: named before any work
  const ProcessResult unknown = kqual({"check", (kExamples / "good_triton.py").string(), "--problem", "no_such_problem", "--no-gpu"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
}

TEST(SubmissionCli, QualifyWithoutAGpuIsIncompleteAndSaysWhatDidNotRun) {
  ScratchDir tmp("kqual-submission-qualify");
  const json r = no_gpu_results("qualify", tmp.path(), "decision: incomplete");
  EXPECT_EQ(r.value("kind", ""), "torch_submission_qualify");
  EXPECT_EQ(r.value("schema", ""), "kqual.submission-qualify/1");
  EXPECT_EQ(r["decision"].value("decision", ""), "incomplete") << r.dump(2);
  EXPECT_EQ(r["check"].value("verdict", ""), "not_run");
  EXPECT_FALSE(r.contains("timing")) << "nothing is timed before the submission is accepted";
  EXPECT_NE(read_text_file(tmp.path() / "summary.md").find("## Decision: incomplete"), std::string::npos);
}

TEST(SubmissionCli, AProblemInAPeersFormatIsImportedIntoTheOutputFolder) {
  // --problem DEF.json: the Definition imported into OUT/problem, the contract that judges the
  // submission kept with its results; a problem that cannot be imported is an input error.
  ScratchDir tmp("kqual-submission-problem");
  const fs::path def = test::repo_root() / "tests/import/fixtures/definitions/gelu_tanh_h1024.json";
  const ProcessResult pr = kqual({"check", (kExamples / "good_triton.py").string(), "--problem", def.string(), "--no-gpu", "--out",
                                  tmp.path().string()});
  EXPECT_EQ(pr.exit_code, 3) << pr.out << pr.err;
  EXPECT_TRUE(fs::is_regular_file(tmp.path() / "problem/contract.toml")) << pr.out << pr.err;
  const json r = json::parse(read_text_file(tmp.path() / "results.json"));
  EXPECT_EQ(r.value("contract", ""), json::parse(read_text_file(def)).value("name", "?")) << r.dump(1);
  // Run again into the same folder: the import is replaced, not refused as an existing folder.
  EXPECT_EQ(kqual({"check", (kExamples / "good_triton.py").string(), "--problem", def.string(), "--no-gpu", "--out",
                   tmp.path().string()}).exit_code, 3);
  const fs::path bad = tmp.path() / "bad.json";
  write_file_atomic(bad, "{\"name\": \"x\"");
  const ProcessResult b = kqual({"check", (kExamples / "good_triton.py").string(), "--problem", bad.string(), "--no-gpu", "--out",
                                 (tmp.path() / "o2").string()});
  EXPECT_EQ(b.exit_code, 2) << b.out << b.err;
  EXPECT_NE(b.err.find("bad.json"), std::string::npos) << b.err;
}

TEST(SubmissionCli, ABrokenManifestIsAnInputErrorNamingTheKey) {
  ScratchDir tmp("kqual-submission-manifest");
  fs::copy_file(kExamples / "good_triton.py", tmp.path() / "s.py");
  write_file_atomic(tmp.path() / "kqual.toml", "[candidate]\nname = \"x\"\nkind = \"torch_module\"\nmodule = \"s.py\"\n"
                                               "contract = \"residual_add_relu\"\nwarmup = 3\n");
  const ProcessResult pr = kqual({"check", tmp.path().string(), "--no-gpu"});
  EXPECT_EQ(pr.exit_code, 2);
  EXPECT_NE(pr.err.find("candidate.warmup"), std::string::npos) << pr.err;
  write_file_atomic(tmp.path() / "kqual.toml", "[candidate]\nname = \"x\"\nkind = \"torch_module\"\nmodule = \"missing.py\"\n"
                                               "contract = \"residual_add_relu\"\n");
  const ProcessResult missing = kqual({"check", tmp.path().string(), "--no-gpu"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("missing.py"), std::string::npos) << missing.err;
}

TEST(SubmissionCli, AContractBesideTheSubmissionDoesNotJudgeIt) {
  // The trust boundary of kernel candidates holds for submissions: a contract file shipped with the
  // submission is refused unless the user allows it.
  ScratchDir tmp("kqual-submission-judge");
  fs::copy_file(kExamples / "good_triton.py", tmp.path() / "s.py");
  fs::copy_file(test::repo_root() / "contracts/rmsnorm/contract.toml", tmp.path() / "contract.toml");
  fs::copy_file(test::repo_root() / "contracts/rmsnorm/reference.py", tmp.path() / "reference.py");
  write_file_atomic(tmp.path() / "kqual.toml", "[candidate]\nname = \"x\"\nkind = \"torch_module\"\nmodule = \"s.py\"\n"
                                               "contract = \"contract.toml\"\n");
  const ProcessResult pr = kqual({"check", tmp.path().string(), "--no-gpu"});
  EXPECT_EQ(pr.exit_code, 2) << pr.out << pr.err;
  EXPECT_NE(pr.err.find("--allow-candidate-contract"), std::string::npos) << pr.err;
}

}  // namespace
}  // namespace kqual
