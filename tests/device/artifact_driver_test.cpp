// GPU check of the artifact layer: for every kernel of the fixtures, the registers,
// static shared memory, local bytes, launch bound and parameter size parsed from the file equal
// what the driver reports (cuFuncGetAttribute / cuFuncGetParamInfo) after loading the same file;
// and the predicted loading path (native / JIT / nothing) matches what the driver does.
// Skipped visibly without a driver.
#include <gtest/gtest.h>

#include "artifact/fixture_util.hpp"
#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/cuda/objects.hpp"

namespace kqual::artifact {
namespace {

using test::fixture;

class ArtifactDriver : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!cuda::driver_available()) GTEST_SKIP() << "no CUDA driver: " << cuda::driver_unavailable_reason();
  }
};

TEST_P(ArtifactDriver, ParsedResourcesEqualDriverAttributes) {
  cuda::Context ctx(0);
  const std::string path = fixture(GetParam());
  const Artifact a = parse_artifact(path);
  const Arch dev = Arch::parse(ctx.info().arch());
  const Selection s = select_for_arch(a, dev);
  RecordProperty("selection", std::string(to_string(s.path)) + ": " + s.reason);

  if (s.path == LoadPath::incompatible) {
    try {
      cuda::Module::from_file(path);
      ADD_FAILURE() << "predicted incompatible, but the driver loaded " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::cuda);
      EXPECT_NE(std::string(e.what()).find("NO_BINARY_FOR_GPU"), std::string::npos) << e.what();
    }
    return;
  }
  const cuda::Module m = cuda::Module::from_file(path);
  const Entry& e = a.entries.at(*s.entry);
  if (s.path == LoadPath::ptx_jit) {
    // The JIT picks its own registers; what we can check is that every PTX entry is there.
    ASSERT_FALSE(e.ptx_entries.empty());
    for (const auto& name : e.ptx_entries) {
      const auto attr = m.function(name).attributes();
      EXPECT_EQ(attr.ptx_version, e.arch.number()) << name << ": JIT from a different PTX than predicted";
      EXPECT_EQ(attr.binary_version, dev.number()) << name;
    }
    return;
  }
  ASSERT_FALSE(e.kernels.empty());
  for (const auto& k : e.kernels) {
    SCOPED_TRACE(std::string(GetParam()) + " " + e.arch.str() + " " + k.name);
    const cuda::Function f = m.function(k.name);
    const auto attr = f.attributes();
    EXPECT_EQ(attr.registers, k.registers);
    EXPECT_EQ(static_cast<std::uint64_t>(attr.static_shared_bytes), k.static_shared_bytes);
    EXPECT_EQ(static_cast<std::uint64_t>(attr.local_bytes), k.local_bytes);
    // The driver's limit is the launch bound if the binary has one, else the device limit
    // (these fixtures use few enough registers that the register file does not lower it).
    EXPECT_EQ(attr.max_threads_per_block, k.max_threads ? k.max_threads : ctx.info().max_threads_per_block);
    EXPECT_EQ(attr.binary_version, e.arch.number());
    const auto params = f.params();
    if (!params.empty() && k.param_bytes >= 0) {
      EXPECT_EQ(static_cast<int>(params.back().offset + params.back().size), k.param_bytes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ArtifactDriver,
                         ::testing::Values("k_sm90.cubin", "k_sm90_r24.cubin", "k_sm90a.cubin", "sass_sm90.fatbin",
                                           "multi.fatbin", "lz4.fatbin", "zstd.fatbin", "sm80_ptx80.fatbin",
                                           "ptx_compute90.fatbin", "k_compute90.ptx", "sm80_only.fatbin",
                                           "family.fatbin"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (auto& c : s) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace kqual::artifact
