// The device fills a generated tensor with exactly the values the coordinator recomputes on the CPU.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kqual/contract/generated.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/cuda/objects.hpp"

namespace kqual {
namespace {

TEST(GeneratedDevice, KernelMatchesTheCpuBitForBit) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  cuda::Context ctx(0);
  cuda::NvrtcRequest req;
  req.source = contract::generated_kernel_source();
  req.source_name = "kqual_generate.cu";
  req.arch = ctx.info().arch();
  const cuda::NvrtcResult built = cuda::nvrtc_compile(req);
  cuda::Module m{std::span<const std::uint8_t>(built.image)};
  cuda::Function f = m.function("kqual_generate");
  cuda::Stream stream;
  for (DType t : {DType::f32, DType::bf16, DType::i32}) {
    const std::size_t es = dtype_size(t);
    unsigned long long n = 100003, seed = 0x1234567890ABCDEFull;
    int stream_id = 1, code = contract::generated_dtype_code(t);
    cuda::DeviceBuffer buf(n * es);
    CUdeviceptr p = buf.get();
    void* args[] = {&p, &n, &seed, &stream_id, &code};
    cuda::launch(f, 64, 1, 1, 256, 1, 1, 0, stream.get(), args);
    stream.synchronize();
    std::vector<std::uint8_t> host(n * es);
    buf.download(host.data(), host.size());
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint32_t want = contract::generated_bits(seed, stream_id, i, t), got = 0;
      std::memcpy(&got, host.data() + i * es, es);
      ASSERT_EQ(got, want) << to_string(t) << " element " << i;
    }
  }
}

}  // namespace
}  // namespace kqual
