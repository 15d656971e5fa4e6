// GPU tests for the residual_add_relu vertical slice: the good candidate qualifies, every bundled
// known-broken candidate is rejected for the reason its manifest states. Skipped without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kqual/core/json.hpp"
#include "kqual/cuda/driver.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  }
};

TEST_F(DeviceTest, GoodCandidateQualifies) {
  fs::path out = fs::temp_directory_path() / "kqual-device-test-good";
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " qualify --no-large-cases " +
                     test::quote(test::repo_root() / "candidates/residual_add_relu/good") + " --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(res["verdict"]["decision"], "ship");
  EXPECT_EQ(res["correctness"]["verdict"], "accepted");
  EXPECT_GT(res["correctness"]["passed"].get<int>(), 100);
  EXPECT_EQ(res["correctness"]["failed"].get<int>(), 0);
  ASSERT_EQ(res["timing"]["shapes"].size(), 3u);
  for (const auto& sh : res["timing"]["shapes"]) {
    for (const auto& s : sh["series"]) {
      EXPECT_TRUE(s["verified"].get<bool>()) << s.dump();
      EXPECT_GE(s["samples_ms"].size(), 20u);
    }
  }
  // The loaded image is identified by hash and the driver's resource counts are recorded.
  EXPECT_EQ(res["artifact"]["image"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(res["artifact"]["kernels"]["add_relu_vec<float>"]["registers"].get<int>(), 0);
  std::ifstream memo(out / "memo.md");
  std::string text((std::istreambuf_iterator<char>(memo)), {});
  EXPECT_NE(text.find("Verdict: SHIP"), std::string::npos);
  EXPECT_NE(text.find("Result by shape"), std::string::npos);
  fs::remove_all(out);
}

struct BrokenCase {
  const char* dir;
  const char* reason;
};

class BrokenRejected : public DeviceTest, public ::testing::WithParamInterface<BrokenCase> {};

TEST_P(BrokenRejected, ForItsStatedReason) {
  fs::path out = fs::temp_directory_path() / (std::string("kqual-device-test-") + GetParam().dir);
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " check --no-large-cases " +
                     test::quote(test::repo_root() / "candidates/residual_add_relu/broken" / GetParam().dir) + " --out " +
                     test::quote(out));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(res["correctness"]["verdict"], "rejected");
  EXPECT_TRUE(res["correctness"]["failure_codes"].contains(GetParam().reason)) << res["correctness"].dump(2);
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(ResidualAddRelu, BrokenRejected,
                         ::testing::Values(BrokenCase{"missing_tail", "unwritten_output"},
                                           BrokenCase{"nan_swallowed", "nan_policy"},
                                           BrokenCase{"input_mutated", "input_mutated"},
                                           BrokenCase{"out_of_bounds", "out_of_bounds_write"},
                                           BrokenCase{"denormals_flushed", "wrong_result"}),
                         [](const auto& test_info) { return std::string(test_info.param.dir); });

}  // namespace
}  // namespace kqual
