#include "kqual/bench/ceilings.hpp"

#include <fmt/format.h>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/session.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::bench {
using worker::DeviceFacts;
using worker::Session;
using worker::SessionOptions;
using worker::WorkerReply;
namespace {

// FMA-bound kernel: 8 independent dependency chains per thread so the FMA pipes, not latency,
// bound the rate; the result is stored so the compiler cannot drop the work.
constexpr const char* kFmaSource = R"CUDA(
extern "C" __global__ void fma_peak(float* out, int iters) {
  float a0 = threadIdx.x * 1e-7f, a1 = a0 + 1e-7f, a2 = a0 + 2e-7f, a3 = a0 + 3e-7f;
  float a4 = a0 + 4e-7f, a5 = a0 + 5e-7f, a6 = a0 + 6e-7f, a7 = a0 + 7e-7f;
  const float b = 0.999999f, c = 1e-7f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
      a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
)CUDA";

}  // namespace

DeviceCeilings measure_device_ceilings(double watchdog_seconds) {
  SessionOptions so;
  so.watchdog_seconds = watchdog_seconds;
  Session s(so);
  const DeviceFacts& dev = s.device();
  if (!dev.present) throw_error(ErrorKind::cuda, "no GPU to measure: " + dev.why_absent);
  DeviceCeilings c;
  c.device = dev.device.value("name", "?");
  c.arch = dev.arch;
  c.sms = dev.sms;

  // Copy: 1 GiB device-to-device, L2 flushed before each sample; bytes read + written.
  const std::size_t copy_bytes = std::size_t(1) << 30;
  auto copy = worker::call(s.worker(), worker::CopyBenchRequest{copy_bytes, 30});
  if (!copy.ok()) throw_error(ErrorKind::worker, "copy measurement failed: " + copy.raw.reason);
  std::vector<double> copy_ms = copy.reply->samples_ms;
  stats::Summary cs = stats::summarize(copy_ms);
  c.copy_bytes_per_s = 2.0 * double(copy_bytes) / (cs.median * 1e-3);

  // FMA: 16 blocks of 256 threads per SM, each thread 8 chains x 16 FMAs x iters.
  cuda::NvrtcRequest req;
  req.source = kFmaSource;
  req.source_name = "fma_peak.cu";
  req.arch = dev.arch;
  req.options = {"--fmad=true"};
  cuda::NvrtcResult built = cuda::nvrtc_compile(req);
  auto path = s.scratch() / "fma_peak.cubin";
  write_file(path, built.image.data(), built.image.size());
  const std::int64_t blocks = std::int64_t(dev.sms) * 16, threads = 256, iters = 4096;
  worker::BenchRequest bench;
  bench.module = path.string();
  bench.buffers = {{"out", worker::BufferKind::output, std::size_t(blocks * threads * 4), 0, ""}};
  worker::Launch fma;
  fma.kernel = "fma_peak";
  fma.grid = {blocks, 1, 1};
  fma.block = {threads, 1, 1};
  fma.args = {worker::Arg::pointer("out"), worker::Arg::value(iters, 4)};
  bench.launches = {fma};
  bench.flush = false;
  bench.warmup = 3;
  bench.min_samples = bench.max_samples = 20;
  auto fr = worker::call(s.worker(), bench);
  if (!fr.ok()) throw_error(ErrorKind::worker, "FMA measurement failed: " + fr.raw.reason);
  std::vector<double> fma_ms = fr.reply->samples_ms;
  stats::Summary fs = stats::summarize(fma_ms);
  double flops = 2.0 * 8 * 16 * double(iters) * double(blocks * threads);
  c.fp32_fma_flops_per_s = flops / (fs.median * 1e-3);
  c.raw = json{{"copy", {{"bytes", copy_bytes}, {"counted_bytes", 2 * copy_bytes}, {"samples_ms", copy_ms},
                         {"summary_ms", stats::to_json(cs)}, {"method", "cuMemcpyDtoDAsync, L2 flushed before each sample"}}},
               {"fma", {{"flops_per_launch", flops}, {"grid", blocks}, {"block", threads}, {"samples_ms", fma_ms},
                        {"summary_ms", stats::to_json(fs)},
                        {"method", "8 independent fp32 FMA chains per thread, 2 FLOP per FMA"}}},
               {"device", dev.device}};
  return c;
}

}  // namespace kqual::bench
