// check_one on a real device (kqual/pipeline/phases.hpp): a good candidate loaded, accepted and
// timed alone; a known-broken one rejected for its stated reason and not timed; a load on its own.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <filesystem>

#include "kqual/contract/contract.hpp"
#include "kqual/core/files.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/pipeline/phases.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

TEST(PhasesDevice, CheckOneAcceptsAndTimesTheGoodRejectsTheBrokenForItsReason) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  worker::SessionOptions so;
  so.exe = test::kqual_exe().string();
  worker::Session s(so);
  ASSERT_TRUE(s.device().present) << s.device().why_absent;
  ScratchDir tmp("kqual-phases-device-test");
  const fs::path rar = test::repo_root() / "candidates/residual_add_relu";
  BuildOneOptions bo;
  bo.arch = s.device().arch;

  bo.dir = tmp.path() / "good";
  BuiltOne good = build_one(rar / "good", bo);
  ASSERT_TRUE(good.built) << good.manifest_error << good.build_error;
  CheckOneOptions co;
  co.check.include_large = false;
  co.check.sanitizer_pass = false;
  bench::TimingOptions to;
  to.shapes = {contract::parse_shape(contract::find_contract("residual_add_relu"), "65536")};
  to.rounds = 1;
  to.samples_per_round = 3;
  to.measure_copy = false;
  co.timing = to;
  const CheckedOne ok = check_one(s, *good.built, co);
  ASSERT_TRUE(ok.loaded()) << ok.load_error;
  ASSERT_TRUE(ok.report && ok.correctness);
  EXPECT_TRUE(ok.correctness->accepted) << ok.report->to_json(false).dump(1);
  EXPECT_EQ(ok.correctness->cases, ok.report->cases);
  ASSERT_TRUE(ok.timing);
  ASSERT_EQ(ok.timing->shapes.size(), 1u);
  EXPECT_FALSE(ok.timing->shapes[0].series.at(0).samples_ms.empty());
  EXPECT_GT(ok.wall_ms, 0);

  bo.dir = tmp.path() / "missing_tail";
  BuiltOne broken = build_one(rar / "broken/missing_tail", bo);
  ASSERT_TRUE(broken.built) << broken.build_error;
  const CheckedOne bad = check_one(s, *broken.built, co);
  ASSERT_TRUE(bad.correctness);
  EXPECT_FALSE(bad.correctness->accepted);
  EXPECT_TRUE(bad.correctness->failure_codes.count("unwritten_output")) << bad.report->to_json(false).dump(1);
  EXPECT_FALSE(bad.correctness->first_failure().empty());
  EXPECT_FALSE(bad.timing);  // a rejected candidate is not timed

  CheckOneOptions load_only;
  load_only.correctness = false;
  const CheckedOne loaded = check_one(s, *good.built, load_only);
  EXPECT_TRUE(loaded.loaded()) << loaded.load_error;
  EXPECT_FALSE(loaded.report);
  EXPECT_FALSE(loaded.timing);
}

}  // namespace
}  // namespace kqual::pipeline
