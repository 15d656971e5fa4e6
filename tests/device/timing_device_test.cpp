// GPU tests of the bench request's timers and clock guard (issue 13): the same kernel timed with
// CUDA events, with CUPTI's kernel records and as CUDA-graph replays must agree where they should
// and differ where they should; clocks come back when NVML is present.
#include <gtest/gtest.h>

#include <algorithm>

#include "kqual/core/files.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/stats/summary.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/worker.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {

struct Fixture {
  ScratchDir dir{"kqual-timing-test"};
  worker::WorkerClient w;
  std::string module;
  explicit Fixture(const worker::WorkerOptions& wo) : w(wo) {}
};

std::unique_ptr<Fixture> open_fixture() {
  worker::WorkerOptions wo;
  wo.exe = test::kqual_exe().string();
  wo.watchdog_seconds = 120;
  auto f = std::make_unique<Fixture>(wo);
  auto hello = f->w.call(json{{"op", "hello"}});
  EXPECT_EQ(hello.status, worker::WorkerReply::Status::ok) << hello.reason;
  cuda::NvrtcRequest req;
  req.source =
      "extern \"C\" __global__ void scale(const float* x, float* y, long long n) {\n"
      "  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) y[i] = 2.0f * x[i];\n"
      "}\n";
  req.arch = hello.body["device"]["arch"];
  auto built = cuda::nvrtc_compile(req);
  f->module = (f->dir.path() / "scale.cubin").string();
  write_file(f->module, built.image.data(), built.image.size());
  return f;
}

worker::BenchRequest request(const Fixture& f, long long n, const std::string& input) {
  worker::BenchRequest r;
  r.module = f.module;
  r.buffers = {{"x", worker::BufferKind::input, std::size_t(n) * 4, 0, input},
               {"y", worker::BufferKind::output, std::size_t(n) * 4, 0, ""}};
  worker::Launch l;
  l.kernel = "scale";
  l.grid = {std::min<long long>((n + 255) / 256, 132 * 8), 1, 1};
  l.block = {256, 1, 1};
  l.args = {worker::Arg::pointer("x"), worker::Arg::pointer("y"), worker::Arg::value(n, 8)};
  r.launches = {l};
  r.warmup = 3;
  r.min_samples = r.max_samples = 20;
  return r;
}

std::string input_file(const Fixture& f, long long n) {
  std::vector<float> x(std::size_t(n), 1.5f);
  auto p = f.dir.path() / "x.in";
  write_file(p, x.data(), x.size() * 4);
  return p.string();
}

TEST(TimingDevice, CuptiKernelTimeIsInsideTheEventIntervalOfTheSameSamples) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  auto f = open_fixture();
  const long long n = 1 << 24;  // 128 MiB moved: ~50 us on an H200
  worker::BenchRequest r = request(*f, n, input_file(*f, n));
  r.timer = worker::TimerKind::cupti;
  auto a = worker::call(f->w, r);
  ASSERT_TRUE(a.ok()) << a.raw.reason;
  const worker::BenchReply& b = *a.reply;
  EXPECT_EQ(b.timer, worker::TimerKind::cupti);
  ASSERT_EQ(b.event_ms.size(), b.samples_ms.size());
  ASSERT_EQ(b.kernels_per_sample.size(), b.samples_ms.size());
  for (std::size_t i = 0; i < b.samples_ms.size(); ++i) {
    EXPECT_EQ(b.kernels_per_sample[i], 1) << "sample " << i;
    EXPECT_GT(b.samples_ms[i], 0.0);
    // The kernel runs between the two events: its own duration cannot exceed their interval (the
    // timestamps come from different clocks; allow 2 us).
    EXPECT_LE(b.samples_ms[i], b.event_ms[i] + 0.002) << "sample " << i;
  }
}

TEST(TimingDevice, GraphReplayRemovesLaunchGapsForATinyKernel) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  auto f = open_fixture();
  const long long n = 1024;  // a few microseconds: launch-bound
  worker::BenchRequest r = request(*f, n, input_file(*f, n));
  r.flush = false;
  auto ev = worker::call(f->w, r);
  ASSERT_TRUE(ev.ok()) << ev.raw.reason;
  r.timer = worker::TimerKind::graph;
  auto gr = worker::call(f->w, r);
  ASSERT_TRUE(gr.ok()) << gr.raw.reason;
  EXPECT_GT(gr.reply->graph_launches, 10);  // ~1 ms of a few-us kernel
  // Every timed launch was still checked: the graph's output equals the untimed re-run.
  ASSERT_FALSE(gr.reply->sample_hashes.at("y").empty());
  for (const auto& h : gr.reply->sample_hashes.at("y")) EXPECT_EQ(h, gr.reply->final_hashes.at("y").front());
  // Back-to-back replays cost no more per launch than one launch between two events.
  EXPECT_LT(stats::median(gr.reply->samples_ms), stats::median(ev.reply->samples_ms));
  // A graph with an L2 flush is refused by the protocol (it would time the flushes).
  r.flush = true;
  auto bad = worker::call(f->w, r);
  EXPECT_FALSE(bad.ok());
}

TEST(TimingDevice, ClocksAreReadPerSampleWhenNvmlIsPresent) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  auto f = open_fixture();
  const long long n = 1 << 20;
  worker::BenchRequest r = request(*f, n, input_file(*f, n));
  auto a = worker::call(f->w, r);
  ASSERT_TRUE(a.ok()) << a.raw.reason;
  const worker::BenchReply& b = *a.reply;
  if (b.sm_clock_mhz.empty()) GTEST_SKIP() << b.clocks_note;
  EXPECT_EQ(b.sm_clock_mhz.size(), b.samples_ms.size());
  EXPECT_GT(b.reference_sm_mhz, 0u);
  for (double c : b.sm_clock_mhz) EXPECT_GT(c, 100.0);
  // A share above 100 % of the reference clock makes every sample "slow": the guard discards up to
  // max_discards, then keeps the rest and says so.
  r.clock_share = 1.0;
  r.max_discards = 3;
  r.backoff_ms = 1;
  auto g = worker::call(f->w, r);
  ASSERT_TRUE(g.ok()) << g.raw.reason;
  // Boost clocks can sit exactly at the reference; only a clock below it counts.
  if (g.reply->discarded == 0) GTEST_SKIP() << "the SM clock never fell below the reference";
  EXPECT_LE(g.reply->discarded, 3);
  EXPECT_FALSE(g.reply->clock_events.empty());
}

}  // namespace
}  // namespace kqual

namespace kqual {
namespace {

// The invalidate flush: the same kernel and outputs as with the write flush (every launch still
// fingerprinted and equal to its untimed re-run), the discard kernel compiled and launched.
TEST(TimingDevice, InvalidateFlushRunsAndKeepsEveryLaunchChecked) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  auto f = open_fixture();
  const long long n = 1 << 22;
  worker::BenchRequest r = request(*f, n, input_file(*f, n));
  r.flush_mode = "invalidate";
  auto a = worker::call(f->w, r);
  ASSERT_TRUE(a.ok()) << a.raw.reason;
  EXPECT_EQ(a.reply->samples_ms.size(), 20u);
  EXPECT_GT(a.reply->flush_bytes, 0u);
  for (const auto& h : a.reply->sample_hashes.at("y")) EXPECT_EQ(h, a.reply->final_hashes.at("y").front());
}

}  // namespace
}  // namespace kqual
