// The device fills a generated tensor with exactly the values the coordinator recomputes on the CPU.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kqual/contract/contract.hpp"
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
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::i32}) {
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

// residual_add_relu's f16 reference kernel (for generated, timed inputs) against the CPU reference,
// bit for bit, over every f16 bit pattern of x, each against some r: subnormals, overflow to Inf,
// Inf, NaN and both zeros included, not only the generator's modest values.
TEST(GeneratedDevice, ResidualAddReluF16ReferenceMatchesTheCpuOnEveryHalf) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  const std::int64_t n = std::int64_t(1) << 20;
  contract::CaseSpec spec;
  spec.dtype = DType::f16;
  spec.dims = {{"n", n}};
  spec.family = contract::kGeneratedFamily;
  spec.id = "f16/every-half";
  const auto g = c.device_reference(spec);
  ASSERT_TRUE(g);
  contract::CaseData data;
  data.spec = spec;
  data.dims = spec.dims;
  for (const char* name : {"x", "r"}) {
    contract::Tensor t;
    t.name = name;
    t.dtype = DType::f16;
    t.elements = n;
    t.bytes.resize(std::size_t(n) * 2);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint16_t h = name[0] == 'x' ? std::uint16_t(i) : std::uint16_t((std::uint64_t(i) * 40503u + (i >> 16) * 7919u) >> 3);
      std::memcpy(t.bytes.data() + 2 * i, &h, 2);
    }
    data.inputs.push_back(std::move(t));
  }
  const std::vector<contract::Tensor> want = c.reference(data);
  cuda::Context ctx(0);
  cuda::NvrtcRequest req;
  req.source = g->source;
  req.source_name = "residual_add_relu_reference.cu";
  req.arch = ctx.info().arch();
  const cuda::NvrtcResult built = cuda::nvrtc_compile(req);
  cuda::Module m{std::span<const std::uint8_t>(built.image)};
  cuda::Function f = m.function(g->launches.at(0).kernel);
  cuda::Stream stream;
  cuda::DeviceBuffer x(std::size_t(n) * 2), r(std::size_t(n) * 2), y(std::size_t(n) * 2);
  x.upload(data.inputs[0].bytes.data(), x.bytes());
  r.upload(data.inputs[1].bytes.data(), r.bytes());
  CUdeviceptr px = x.get(), pr = r.get(), py = y.get();
  unsigned long long count = std::uint64_t(n);
  void* args[] = {&px, &pr, &py, &count};
  cuda::launch(f, 1024, 1, 1, 256, 1, 1, 0, stream.get(), args);
  stream.synchronize();
  std::vector<std::uint16_t> got(static_cast<std::size_t>(n));
  y.download(got.data(), y.bytes());
  int nans = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint16_t w;
    std::memcpy(&w, want.at(0).bytes.data() + 2 * i, 2);
    const bool wn = (w & 0x7FFFu) > 0x7C00u, gn = (got[i] & 0x7FFFu) > 0x7C00u;
    nans += wn;
    if (wn || gn) ASSERT_EQ(wn, gn) << "element " << i;
    else ASSERT_EQ(got[i], w) << "element " << i << ": x bits " << (i & 0xFFFF);
  }
  EXPECT_GT(nans, 0) << "NaN inputs were among the patterns";
}

}  // namespace
}  // namespace kqual
