// PyTorch baselines (issue 24, item 3) on the CPU: the option, which contracts have a PyTorch
// reference, the modes PyTorch cannot time, how a PyTorch series joins a shape (compared with the
// candidate, the fastest baseline only when its outputs were right), the sentence that can say
// "torch.compile wins at the largest shape", and the worker's own answer without PyTorch. The timing
// itself is a GPU test (tests/device/torch_baseline_device_test.cpp).
#include <gtest/gtest.h>

#include "kqual/bench/torch_baseline.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/import/import_kernelbench.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/process.hpp"

namespace kqual::bench {
namespace {
namespace fs = std::filesystem;

TEST(TorchBaselines, OptionParsing) {
  EXPECT_FALSE(parse_torch_baselines("").has_value());
  EXPECT_FALSE(parse_torch_baselines("auto").has_value());
  EXPECT_TRUE(parse_torch_baselines("none")->empty());
  EXPECT_EQ(*parse_torch_baselines("compiled,eager"), (std::vector<std::string>{"compiled", "eager"}));
  try {
    (void)parse_torch_baselines("eager,inductor");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'inductor' is not eager or compiled"), std::string::npos) << e.what();
  }
}

TEST(TorchBaselines, OnlyPyTorchReferencesAndTimeableModes) {
  const auto& torch_c = contract::load_declared_contract(fs::path(KQUAL_SOURCE_DIR) / "tests/contract/fixtures/declared/gelu_torch");
  auto ref = torch_reference_of(torch_c);
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->function, "gelu");
  EXPECT_EQ(ref->file.filename(), "reference.py");
  EXPECT_EQ(ref->shapes.at("x"), (std::vector<std::string>{"n"}));
  EXPECT_FALSE(torch_reference_of(contract::load_declared_contract(fs::path(KQUAL_SOURCE_DIR) / "contracts/rmsnorm")));  // NumPy
  EXPECT_FALSE(torch_reference_of(contract::find_contract("residual_add_relu")));                                       // built-in
  TimingOptions o;
  EXPECT_EQ(torch_timing_blocker(o), "");
  o.flush_mode = "invalidate";
  EXPECT_NE(torch_timing_blocker(o).find("invalidate (PTX discard.global.L2) has no PyTorch equivalent"), std::string::npos);
  o.flush_mode = "clean";
  o.timer = worker::TimerKind::cupti;
  EXPECT_NE(torch_timing_blocker(o).find("CUDA events only"), std::string::npos);
}

std::vector<double> around(double ms, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(ms * (1 + 0.002 * ((i * 7) % 5 - 2)));
  return v;
}

Series make(const std::string& label, const std::string& role, std::vector<double> samples) {
  Series s;
  s.label = label;
  s.role = role;
  s.samples_ms = std::move(samples);
  return s;
}

ShapeResult shape_with_native_baseline(double candidate_ms, double native_ms) {
  ShapeResult sh;
  sh.shape = "n=268435456";
  sh.min_bytes = 3.0 * 268435456 * 4;
  Series cand = make("good", "candidate", around(candidate_ms, 30));
  cand.summary = stats::summarize(cand.samples_ms);
  Series native = make("fused", "baseline", around(native_ms, 30));
  native.summary = stats::summarize(native.samples_ms);
  sh.vs_baselines.push_back(stats::compare(native.samples_ms, cand.samples_ms));
  sh.fastest_baseline = "fused";
  sh.vs_fastest = sh.vs_baselines.back();
  sh.series = {cand, native};
  return sh;
}

TEST(TorchBaselines, CompiledCanWinAtTheLargestShape) {
  TimingReport tr;
  tr.shapes.push_back(shape_with_native_baseline(1.00, 1.20));
  Series eager = make(kTorchEager, "baseline", around(1.30, 40));
  Series compiled = make(kTorchCompiled, "baseline", around(0.85, 40));
  add_torch_series(tr.shapes[0], eager, around(1.0, 40), 0.02);
  add_torch_series(tr.shapes[0], compiled, around(1.0, 40), 0.02);
  const ShapeResult& sh = tr.shapes[0];
  ASSERT_EQ(sh.series.size(), 4u);
  EXPECT_EQ(sh.vs_baselines.size(), 3u);
  EXPECT_EQ(sh.fastest_baseline, kTorchCompiled);
  EXPECT_EQ(sh.vs_fastest.verdict, stats::Verdict::slower);
  const std::string line = torch_largest_shape_verdict(tr);
  EXPECT_NE(line.find("torch.compile wins at the largest shape"), std::string::npos) << line;
  EXPECT_NE(line.find("eager 1.3 ms"), std::string::npos) << line;
  ASSERT_EQ(torch_shape_lines(tr).size(), 1u);
  EXPECT_NE(torch_shape_lines(tr)[0].find("(fastest baseline: torch_compiled)"), std::string::npos) << torch_shape_lines(tr)[0];
  // The JSON pairs each comparison with its series.
  const json j = tr.to_json();
  EXPECT_EQ(j["shapes"][0]["candidate_vs_baselines"][2]["baseline"], kTorchCompiled);
  EXPECT_EQ(j["shapes"][0]["fastest_baseline"], kTorchCompiled);
}

TEST(TorchBaselines, AWrongPyTorchBaselineIsNeverTheFastest) {
  TimingReport tr;
  tr.shapes.push_back(shape_with_native_baseline(1.00, 1.20));
  Series compiled = make(kTorchCompiled, "baseline", around(0.5, 40));
  compiled.verified = false;
  compiled.verify_code = "timed_output_wrong";
  add_torch_series(tr.shapes[0], compiled, around(1.0, 40), 0.02);
  EXPECT_EQ(tr.shapes[0].fastest_baseline, "fused");
  EXPECT_EQ(tr.shapes[0].vs_baselines.size(), 2u) << "compared and reported all the same";
  EXPECT_NE(torch_largest_shape_verdict(tr).find("WRONG output"), std::string::npos);
  // Equal times: no difference, not a win.
  TimingReport eq;
  eq.shapes.push_back(shape_with_native_baseline(1.00, 1.20));
  add_torch_series(eq.shapes[0], make(kTorchEager, "baseline", around(1.0, 40)), around(1.0, 40), 0.02);
  EXPECT_EQ(eq.shapes[0].fastest_baseline, kTorchEager);
  EXPECT_EQ(eq.shapes[0].vs_fastest.verdict, stats::Verdict::no_difference);
}

TEST(TorchBaselines, TheWorkerSaysWhenTorchIsMissing) {
  const std::string py = contract::reference_python();
  ProcessResult probe = run_process(py, {"-c", "import torch"}, {}, {}, 60);
  if (probe.exited && probe.exit_code == 0) GTEST_SKIP() << "PyTorch is importable here";
  ProcessResult pr = run_process(py, {contract::torch_tool("timing_worker.py").string(), R"({"file": "x.py", "function": "f"})"}, {}, {}, 60);
  const json hello = json::parse(pr.out.substr(0, pr.out.find('\n')));
  EXPECT_FALSE(hello.value("ok", true));
  EXPECT_EQ(hello.value("code", ""), "no_torch");
  EXPECT_NE(hello.value("error", "").find("torch not importable"), std::string::npos);
}

}  // namespace
}  // namespace kqual::bench
