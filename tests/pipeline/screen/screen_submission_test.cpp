// PyTorch submissions in kqual screen without a device: a torch_module folder is not built; without a
// GPU it is incomplete and says why; its correctness tier (check_screen_submission) judged against
// the NumPy stand-in for the submission worker: accepted, rejected for its class, and a manifest
// that cannot be read refused by name.
#include <gtest/gtest.h>

#include <fstream>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_gpus.hpp"
#include "kqual/pipeline/screen_submission.hpp"
#include "bench/submission_test_util.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

using test::submission::kNumpyAddRelu;

fs::path submission_folder(const fs::path& root, const std::string& name, const std::string& body) {
  const fs::path d = root / name;
  fs::create_directories(d);
  std::ofstream(d / "s.py") << body;
  std::ofstream(d / "kqual.toml") << "[candidate]\nname = \"" << name << "\"\nkind = \"torch_module\"\nmodule = \"s.py\"\n"
                                  << "contract = \"residual_add_relu\"\n";
  return d;
}

TEST(ScreenSubmission, WithoutAGpuASubmissionIsIncompleteNotRefused) {
  ScratchDir tmp("kqual-screen-sub");
  submission_folder(tmp.path() / "c", "sub", kNumpyAddRelu);
  fs::create_directories(tmp.path() / "c/bad");
  std::ofstream(tmp.path() / "c/bad/kqual.toml") << "[candidate]\nname = \"bad\"\nkind = \"torch_module\"\nmodule = \"gone.py\"\n"
                                                  << "contract = \"residual_add_relu\"\n";
  ScreenOptions o;
  o.inputs = {tmp.path() / "c"};
  o.out_dir = tmp.path() / "out";
  o.use_gpu = false;
  const ScreenOutcome out = screen(o);
  ASSERT_EQ(out.verdicts.size(), 2u);
  for (const auto& v : out.verdicts) {
    if (v.name == "sub") {
      EXPECT_EQ(v.verdict, ScreenVerdictKind::incomplete);
      EXPECT_NE(v.detail.find("runs only in its worker on a GPU"), std::string::npos) << v.detail;
    } else {
      EXPECT_EQ(v.verdict, ScreenVerdictKind::refused);
      EXPECT_EQ(v.reason, "manifest_invalid");
      EXPECT_NE(v.detail.find("gone.py"), std::string::npos) << v.detail;
    }
  }
}

class ScreenSubmissionCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    KQUAL_NEED_NUMPY();
    o_.submission_worker = KQUAL_FAKE_SUBMISSION_WORKER;
  }
  ScreenVerdict judge(const std::string& body) {
    const auto m = screen_submission_of(submission_folder(tmp_.path(), "s", body));
    EXPECT_TRUE(m.has_value());
    return check_screen_submission(o_, *m, "", gate_);
  }
  ScratchDir tmp_{"kqual-screen-sub-check"};
  ScreenOptions o_;
  GpuGate gate_;
};

TEST_F(ScreenSubmissionCheck, ACorrectOneIsAcceptedAndACachingOneRejectedForItsClass) {
  const ScreenVerdict good = judge(kNumpyAddRelu);
  EXPECT_EQ(good.verdict, ScreenVerdictKind::accepted) << good.detail;
  const ScreenVerdict cached = judge(std::string(kNumpyAddRelu) + R"PY(
_cache = {}
_real = forward
def forward(x, r):
    key = (id(x), id(r))
    if key not in _cache:
        _cache[key] = _real(x, r)
    return _cache[key]
)PY");
  EXPECT_EQ(cached.verdict, ScreenVerdictKind::rejected);
  EXPECT_EQ(cached.reason, "cached_output") << cached.detail;
  EXPECT_EQ(cached.codes.count("cached_output"), 1u);
}

TEST_F(ScreenSubmissionCheck, KqualsOwnFailureIsIncompleteAndNeverReused) {
  const ScreenVerdict v = judge("import sys\ndef forward(x, r):\n    sys.stdout.write('not json\\n'); sys.stdout.flush()\n    return []\n");
  EXPECT_EQ(v.verdict, ScreenVerdictKind::incomplete);
  EXPECT_EQ(v.codes.count("harness_error"), 1u);
  EXPECT_FALSE(reusable(v, "k", true));
}

}  // namespace
}  // namespace kqual::pipeline
