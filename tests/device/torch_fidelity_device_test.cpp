// The fidelity of the PyTorch timing path (bench::time_cubin_through_torch): the candidate's own
// cubin, timed through the path the torch_eager / torch_compiled baselines take (launched with
// cuLaunchKernel on torch's stream, captured in a CUDA graph, replayed between events, L2 flushed)
// and through kqual's own worker, in A B B A blocks on the same two datasets, must take the same time.
// If it does not, one of the two paths measures something the other does not, and a verdict against
// a PyTorch baseline would compare different things. Skipped visibly without a GPU or without PyTorch.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

#include "kqual/bench/torch_baseline.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/check/plan.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/process.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/worker/session.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

bool torch_on_cuda(std::string* why) {
  ProcessResult pr = run_process(contract::reference_python(), {"-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"},
                                 {}, {}, 120);
  if (pr.exited && pr.exit_code == 0) return true;
  *why = pr.exited && pr.exit_code == 3 ? "PyTorch sees no CUDA device (" + contract::reference_python() + ")"
                                        : "PyTorch not importable with " + contract::reference_python() + ": " + pr.err.substr(0, 300);
  return false;
}

TEST(TorchFidelityDevice, TheCandidatesCubinTakesTheSameTimeThroughPyTorchAndThroughKqual) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  std::string why;
  if (!torch_on_cuda(&why)) GTEST_SKIP() << why;
  worker::SessionOptions so;
  so.exe = test::kqual_exe().string();
  so.watchdog_seconds = 300;
  worker::Session s(so);
  build::BuiltCandidate cand =
      build::build_candidate(build::load_manifest(test::repo_root() / "candidates/residual_add_relu/good"), s.device().arch, s.scratch());
  ASSERT_EQ(check::load_and_describe(s, cand), "");
  bench::TimingOptions o;
  // A small size (2^16: 768 KiB moved, a few microseconds: launch and event overheads weigh most)
  // and a large one (2^26: 768 MiB, bandwidth-bound).
  o.shapes = {{{"n", std::int64_t(1) << 16}}, {{"n", std::int64_t(1) << 26}}};
  o.rounds = 4;  // two A B B A pairs
  o.samples_per_round = 30;
  o.warmup = 10;
  const bench::TorchFidelityReport rep = bench::time_cubin_through_torch(s, cand, o);
  json summary = rep.to_json();
  for (auto& sh : summary["shapes"]) {
    sh.erase("torch_path_ms");
    sh.erase("kqual_path_ms");
  }
  std::cout << summary.dump(1) << "\n";
  ASSERT_EQ(rep.shapes.size(), 2u) << rep.status;
  for (const auto& sh : rep.shapes) {
    SCOPED_TRACE(sh.shape);
    ASSERT_EQ(sh.error, "");
    EXPECT_TRUE(sh.outputs_verified);
    EXPECT_EQ(sh.window, "cuda_graph") << "the baselines' window: the cubin must be capturable like them";
    EXPECT_GE(sh.torch_path_ms.size(), 100u);
    EXPECT_GE(sh.kqual_path_ms.size(), 100u);
    // Tolerance: the 95 % CI of median(PyTorch path) / median(kqual's path) inside [0.95, 1.05].
    // Why 5 %: both windows hold the same kernel on the same data after the same L2 flush; what may
    // differ is what lies around it: a graph launch against a plain launch, and the buffers' placement
    // (torch's caching allocator against kqual's guarded allocations). Event timing itself reads about
    // 1 % above Nsight Compute's kernel time on a long kernel, and at 2^16 a kernel of a few
    // microseconds makes the ~0.1-0.2 us of event and launch jitter worth a few percent. (On H100 hosts the
    // PyTorch path read 0.3-0.4 us more at 2^16 until its worker held the stream before each flush: Python
    // enqueued the replay after the GPU had finished the flush; docs/gpu-runs.md, thirty-second session.) A systematic
    // difference beyond 5 % (a microsecond of dispatch at the small size, a missed flush at the large
    // one) is what this test exists to catch.
    EXPECT_GE(sh.torch_vs_kqual.ci.lo, 0.95) << stats::to_json(sh.torch_vs_kqual).dump();
    EXPECT_LE(sh.torch_vs_kqual.ci.hi, 1.05) << stats::to_json(sh.torch_vs_kqual).dump();
  }
}

// Every built-in contract gets both PyTorch baselines in `kqual bench`: timed as CUDA-graph replays,
// outputs right, the Python overhead and torch.compile's time reported apart (one moderate shape each).
TEST(TorchFidelityDevice, EveryBuiltinIsTimedAgainstEagerAndCompiled) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  std::string why;
  if (!torch_on_cuda(&why)) GTEST_SKIP() << why;
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"residual_add_relu", "n=16777216"}, {"softmax", "rows=4096,cols=1024"}, {"exclusive_scan", "n=1048576"},
      {"transpose", "rows=4099,cols=1031"}, {"gemm", "m=1024,n=1024,k=1024"},  {"reduce_sum", "rows=1024,cols=16384"}};
  ScratchDir dir("kqual-torch-builtins");
  for (const auto& [op, shape] : runs) {
    SCOPED_TRACE(op);
    const fs::path out = dir.path() / op;
    auto r = test::run(test::kq() + " bench " + test::quote(test::repo_root() / "candidates" / op / "good") + " --shape " + shape +
                       " --rounds 2 --samples 10 --out " + test::quote(out));
    ASSERT_TRUE(fs::exists(out / "results.json")) << r.output;
    const json res = json::parse(read_text_file(out / "results.json"));
    const json& tb = res["torch_baselines"];
    std::cout << op << ": " << tb.value("status", "") << "\n";
    ASSERT_TRUE(tb.value("ran", false)) << tb.dump(1);
    EXPECT_NE(tb.value("operation", "").find("eager: "), std::string::npos) << tb.dump(1);
    EXPECT_EQ(tb.value("compile_mode", ""), "default");
    ASSERT_EQ(tb["startup"].size(), 1u) << tb.dump(1);
    const json& st = tb["startup"][0];
    EXPECT_EQ(st["window"].value("eager", ""), "cuda_graph") << st.dump(1);
    EXPECT_EQ(st["window"].value("compiled", ""), "cuda_graph") << st.dump(1);
    EXPECT_TRUE(st.contains("torch_compile_s")) << st.dump(1);
    EXPECT_EQ(st["python_overhead"].size(), 2u) << st.dump(1);
    int torch_series = 0;
    for (const auto& se : res["timing"]["shapes"][0]["series"]) {
      const std::string label = se.value("label", "");
      if (label != "torch_eager" && label != "torch_compiled") continue;
      ++torch_series;
      EXPECT_TRUE(se.value("verified", false)) << se.dump(1);
      EXPECT_FALSE(se.contains("error")) << se.dump(1);
      EXPECT_GE(se.value("samples_ms", json::array()).size(), 20u) << label;
    }
    EXPECT_EQ(torch_series, 2);
  }
}

}  // namespace
}  // namespace kqual
