// A baseline's correctness verdict kept across qualify runs (pipeline/baseline_reuse.hpp), without a
// device: reused only under the same key, and the key moves with everything that decides the verdict.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "kqual/core/files.hpp"
#include "kqual/pipeline/baseline_reuse.hpp"
#include "fixture_util.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

class BaselineReuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = std::make_unique<ScratchDir>("kqual-baseline-reuse-test");
    baseline_ = test::copy_bundled("baselines/residual_add_relu/eager", tmp_->path() / "eager");
    root_ = tmp_->path() / "cache";
  }
  BaselineVerdicts verdicts(const std::string& driver = "580.159.04", bool large = false) const {
    return BaselineVerdicts(root_, json{{"name", "NVIDIA H100 80GB HBM3"}, {"arch", "sm_90"}, {"driver_version", driver},
                                        {"sm_clock_khz", 1980000}},
                            json{{"large_cases", large}, {"sanitizer_pass", false}, {"all_cases", false}}, contract::ContractLookup());
  }
  static json report(const std::string& verdict) {
    return json{{"candidate", "eager"}, {"verdict", verdict}, {"passed", 40}, {"cases", 40}};
  }
  std::unique_ptr<ScratchDir> tmp_;
  fs::path baseline_, root_;
};

TEST_F(BaselineReuseTest, AnAcceptedVerdictIsReusedUnderTheSameKeyAndSaysWhenItWasChecked) {
  const BaselineVerdicts v = verdicts();
  const std::string key = v.key(baseline_, "");
  ASSERT_FALSE(key.empty());
  EXPECT_EQ(v.key(baseline_, ""), key) << "the same inputs give the same key";
  EXPECT_FALSE(v.find(key)) << "nothing kept yet";
  v.keep(key, report("accepted"));
  const auto got = v.find(key);
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)["verdict"], "accepted");
  EXPECT_EQ((*got)["passed"], 40);
  ASSERT_TRUE(got->contains("reused"));
  EXPECT_EQ((*got)["reused"]["key"], key);
  EXPECT_FALSE((*got)["reused"].value("checked_at", std::string()).empty());
  // Another process (the next qualify) finds it too.
  EXPECT_TRUE(verdicts().find(key));
}

TEST_F(BaselineReuseTest, ARejectedOrIncompleteVerdictIsNeverKept) {
  const BaselineVerdicts v = verdicts();
  const std::string key = v.key(baseline_, "");
  v.keep(key, report("rejected"));
  EXPECT_FALSE(v.find(key));
  v.keep(key, report("incomplete"));
  EXPECT_FALSE(v.find(key));
  v.keep("", report("accepted"));
  EXPECT_FALSE(v.find(""));
}

TEST_F(BaselineReuseTest, TheKeyMovesWithTheBaselinesSourceTheGpuDriverAndTheOptions) {
  const std::string k0 = verdicts().key(baseline_, "");
  EXPECT_NE(verdicts("590.10").key(baseline_, ""), k0) << "another driver";
  EXPECT_NE(verdicts("580.159.04", true).key(baseline_, ""), k0) << "other check options";
  BaselineVerdicts other_gpu(root_, json{{"name", "NVIDIA H200"}, {"arch", "sm_90"}, {"driver_version", "580.159.04"}},
                             json{{"large_cases", false}, {"sanitizer_pass", false}, {"all_cases", false}}, contract::ContractLookup());
  EXPECT_NE(other_gpu.key(baseline_, ""), k0) << "another GPU";
  EXPECT_EQ(BaselineVerdicts(root_, json{{"name", "NVIDIA H100 80GB HBM3"}, {"arch", "sm_90"}, {"driver_version", "580.159.04"},
                                         {"sm_clock_khz", 1000}},
                             json{{"large_cases", false}, {"sanitizer_pass", false}, {"all_cases", false}}, contract::ContractLookup())
                .key(baseline_, ""),
            k0)
      << "the clock at the moment is not the GPU's identity";
  verdicts().keep(k0, report("accepted"));
  std::ofstream(baseline_ / "kernel.cu", std::ios::app) << "\n// edited\n";
  const std::string k1 = verdicts().key(baseline_, "");
  EXPECT_NE(k1, k0) << "the baseline's source changed";
  EXPECT_FALSE(verdicts().find(k1)) << "an edited baseline is checked again";
}

TEST_F(BaselineReuseTest, ATornOrForeignFileIsIgnoredAndAnUnwritableCacheIsNoError) {
  const BaselineVerdicts v = verdicts();
  const std::string key = v.key(baseline_, "");
  fs::create_directories(root_);
  std::ofstream(root_ / (key + ".json")) << "{\"key\": \"" << key << "\", \"report\": {\"verdict\": \"acc";
  EXPECT_FALSE(v.find(key)) << "a torn file";
  std::ofstream(root_ / (key + ".json"), std::ios::trunc) << json{{"key", "another"}, {"report", report("accepted")}}.dump();
  EXPECT_FALSE(v.find(key)) << "a file holding another key";
  v.keep(key, report("accepted"));
  EXPECT_TRUE(v.find(key)) << "replaced by the next keep";
  const fs::path file = tmp_->path() / "a-file";
  std::ofstream(file) << "x";
  const BaselineVerdicts nowhere(file / "cache", json::object(), json::object(), contract::ContractLookup());
  EXPECT_NO_THROW(nowhere.keep(nowhere.key(baseline_, ""), report("accepted")));
  EXPECT_FALSE(nowhere.find(nowhere.key(baseline_, "")));
}

}  // namespace
}  // namespace kqual::pipeline
