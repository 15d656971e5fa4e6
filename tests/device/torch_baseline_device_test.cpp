// PyTorch paths (capture, imported references, eager and compiled baselines) on the GPU machine; skipped visibly without PyTorch or a GPU.
//   - the real capture of the fixture problems agrees with the hand-written captures the CPU tests
//     translate (tests/import/fixtures/kernelbench), on what the translation depends on;
//   - an imported problem's reference (problem.py through reference.py) runs in kqual's reference
//     process: `kqual contracts --verify` on it, and so do imported Definitions whose run() gets 0-d
//     tensors and bools through the importer's kqual_run;
//   - qualify times PyTorch eager and compiled next to the native baselines, on the declared torch
//     fixture gelu_torch with the bundled GELU kernel: both series present, their outputs re-checked.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/import/import_kernelbench.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/process.hpp"
#include "kqual/cuda/driver.hpp"
#include "selftest_util.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/kernelbench";

bool torch_importable(std::string* why) {
  ProcessResult pr = run_process(contract::reference_python(), {"-c", "import torch"}, {}, {}, 120);
  if (pr.exited && pr.exit_code == 0) return true;
  *why = "PyTorch not importable with " + contract::reference_python() + ": " + pr.err.substr(0, 300);
  return false;
}

TEST(TorchDevice, CaptureAgreesWithTheHandWrittenFixtures) {
  std::string why;
  if (!torch_importable(&why)) GTEST_SKIP() << why;
  for (const char* name : {"leaky_relu_rows", "linear_gelu", "batch_norm_1d", "gather_rows", "argmax_dim", "scale_by_scalar",
                           "dropout_random", "half_input", "mse_loss", "scale_shift_0d", "conv_wide_kernel", "conv_square_kernel"}) {
    SCOPED_TRACE(name);
    const json got = contract::capture_kernelbench(kFixtures / (std::string(name) + ".py"));
    const json want = json::parse(read_text_file(kFixtures / (std::string(name) + ".capture.json")));
    std::vector<std::string> got_axes, want_axes;
    for (const auto& [k, v] : got["axis_constants"].items()) got_axes.push_back(k);
    for (const auto& [k, v] : want["axis_constants"].items()) want_axes.push_back(k);
    EXPECT_EQ(got_axes, want_axes);
    EXPECT_EQ(got.value("random_forward", false), want.value("random_forward", false));
    ASSERT_EQ(got["tensors"].size(), want["tensors"].size()) << got.dump(1);
    for (std::size_t i = 0; i < got["tensors"].size(); ++i) {
      const json &g = got["tensors"][i], &w = want["tensors"][i];
      EXPECT_EQ(g["group"], w["group"]);
      EXPECT_EQ(g["dtype"], w["dtype"]);
      EXPECT_EQ(g["shape"], w["shape"]);
      for (std::size_t d = 0; d < g["dims"].size(); ++d) EXPECT_EQ(g["dims"][d].value("const", ""), w["dims"][d].value("const", "")) << i << "/" << d;
    }
  }
}

TEST(TorchDevice, ImportedProblemVerifiesInTheReferenceProcess) {
  std::string why;
  if (!torch_importable(&why)) GTEST_SKIP() << why;
  ScratchDir dir("kqual-kb-dev");
  for (const char* name : {"leaky_relu_rows", "linear_gelu", "batch_norm_1d", "gather_rows", "argmax_dim", "scale_by_scalar",
                           "scale_shift_0d", "conv_wide_kernel", "conv_square_kernel"}) {
    const auto r = test::run(test::quote(test::kqual_exe()) + " import-kernelbench " +
                             test::quote(kFixtures / (std::string(name) + ".py")) + " --out " + test::quote(dir.path() / name));
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.output;
  }
  // Every imported contract verified once (its reference run in kqual's reference process); the
  // output names each contract, so a failure says whose.
  auto r = test::run(test::quote(test::kqual_exe()) + " contracts --dir " + test::quote(dir.path()) + " --verify");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // A random forward is refused by name, both ways: a literal dropout p by the static read of the source
  // (before PyTorch runs), a p from get_init_inputs() by the real capture's two seeded runs.
  r = test::run(test::quote(test::kqual_exe()) + " import-kernelbench " + test::quote(kFixtures / "dropout_random.py") + " --out " +
                test::quote(dir.path() / "d"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("forward: statistical operation: the reference samples (nn.Dropout(0.5) in training mode at line 10)"),
            std::string::npos)
      << r.output;
  r = test::run(test::quote(test::kqual_exe()) + " import-kernelbench " + test::quote(kFixtures / "dropout_variable_p.py") + " --out " +
                test::quote(dir.path() / "dv"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("dropout_variable_p.py: forward: is random"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "d"));
  EXPECT_FALSE(fs::exists(dir.path() / "dv"));
}

// Definitions whose import rewrites what run() receives (tests/import/fixtures/definitions: a 0-d
// tensor in and out and a bool scalar through kqual_run; an equality constraint as a derived axis): the
// PyTorch reference runs in kqual's reference process, non-triviality check included.
TEST(TorchDevice, ImportedDefinitionsWithRewritesVerify) {
  std::string why;
  if (!torch_importable(&why)) GTEST_SKIP() << why;
  ScratchDir dir("kqual-def-dev");
  const fs::path defs = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/definitions";
  for (const char* name : {"sol_decode_literal_d128", "segment_scale_i8"}) {
    auto r = test::run(test::quote(test::kqual_exe()) + " import-definition " + test::quote(defs / (std::string(name) + ".json")) +
                       " --workloads " + test::quote(defs / (std::string(name) + ".jsonl")) + " --out " + test::quote(dir.path() / name));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto r = test::run(test::quote(test::kqual_exe()) + " contracts --dir " + test::quote(dir.path()) + " --verify");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A torch reference that mixes a float32 tensor of its own with kqual's float64 inputs is run with
// its float inputs at float32 (the numerical policy says so) instead of failing every case.
TEST(TorchDevice, AReferenceMixingItsOwnFloat32RunsAtFloat32) {
  std::string why;
  if (!torch_importable(&why)) GTEST_SKIP() << why;
  ScratchDir dir("kqual-mixed-f32");
  fs::copy(fs::path(KQUAL_SOURCE_DIR) / "tests/contract/fixtures/declared/mixed_float32_torch", dir.path() / "mixed");
  const auto r = test::run(test::quote(test::kqual_exe()) + " contracts --dir " + test::quote(dir.path()) + " --verify");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto& c = contract::load_declared_contract(dir.path() / "mixed");
  contract::Supports sup;
  sup.dtypes = {DType::f32};
  const auto cases = c.correctness_cases(sup, 1, false);
  ASSERT_FALSE(cases.empty());
  contract::ReferenceHost host;
  const contract::CaseData data = c.make_case_in(cases.front(), host);
  (void)c.reference(data, host);
  EXPECT_NE(c.numerical_policy().find("float inputs at float32"), std::string::npos) << c.numerical_policy();
}

TEST(TorchDevice, QualifyTimesEagerAndCompiled) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  std::string why;
  if (!torch_importable(&why)) GTEST_SKIP() << why;
  ScratchDir dir("kqual-torch-q");
  const fs::path root = test::repo_root();
  std::ofstream(dir.path() / "kqual.toml") << "[candidate]\nname = \"gelu_for_torch\"\ncontract = \""
                                           << (root / "tests/contract/fixtures/declared/gelu_torch/contract.toml").string()
                                           << "\"\nsource = \"" << (root / "candidates/gelu/good/kernel.cu").string()
                                           << "\"\n[supports]\ndtypes = [\"f32\"]\nmin_alignment_bytes = 4\n[[launch]]\nkernel = \"gelu<{T}>\"\n"
                                              "grid = \"min(cdiv(n, 1024), sms * 8)\"\nblock = 256\nargs = [\"x\", \"y\", \"n:i64\"]\n";
  auto r = test::run(test::quote(test::kqual_exe()) + " qualify " + test::quote(dir.path()) + " --no-large-cases --no-sanitizer-pass --allow-candidate-contract " +
                     "--shape n=16777216 --rounds 2 --samples 10 --out " + test::quote(dir.path() / "out"));
  ASSERT_TRUE(fs::exists(dir.path() / "out/results.json")) << r.output;
  const json res = json::parse(read_text_file(dir.path() / "out/results.json"));
  ASSERT_TRUE(res.contains("torch_baselines")) << r.output;
  EXPECT_TRUE(res["torch_baselines"].value("ran", false)) << res["torch_baselines"].dump(1);
  std::set<std::string> labels;
  for (const auto& s : res["timing"]["shapes"][0]["series"]) {
    labels.insert(s.value("label", ""));
    if (s.value("label", "").rfind("torch_", 0) == 0) {
      EXPECT_TRUE(s.value("verified", false)) << s.dump(1);
    }
  }
  EXPECT_TRUE(labels.count("torch_eager"));
  EXPECT_TRUE(labels.count("torch_compiled"));
  EXPECT_NE(read_text_file(dir.path() / "out/memo.md").find("### PyTorch baselines (eager, compiled, custom)"), std::string::npos);
  test::expect_decide_agrees(dir.path() / "out/results.json");
  // invalidate is refused by name, visibly, and the native timing still runs.
  r = test::run(test::quote(test::kqual_exe()) + " bench " + test::quote(dir.path()) + " --allow-candidate-contract --shape n=1048576 --rounds 1 --l2-flush invalidate --out " +
                test::quote(dir.path() / "out2"));
  ASSERT_TRUE(fs::exists(dir.path() / "out2/results.json")) << r.output;
  const json res2 = json::parse(read_text_file(dir.path() / "out2/results.json"));
  EXPECT_NE(res2["torch_baselines"].value("status", "").find("no PyTorch equivalent"), std::string::npos) << res2["torch_baselines"].dump();
}

}  // namespace
}  // namespace kqual
