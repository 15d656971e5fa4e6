// kqual screen on a real device: the residual_add_relu good candidate is accepted and three
// known-broken ones rejected for their stated reasons, in one worker session. Skipped without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "kqual/core/json.hpp"
#include "kqual/cuda/driver.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

TEST(ScreenDevice, GoodAcceptedBrokenRejectedForTheirReasons) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path out = fs::temp_directory_path() / "kqual-screen-device-test";
  fs::remove_all(out);
  const fs::path rar = test::repo_root() / "candidates/residual_add_relu";
  const std::map<std::string, std::string> expected = {
      {"good", ""}, {"missing_tail", "unwritten_output"}, {"nan_swallowed", "nan_policy"}, {"out_of_bounds", "out_of_bounds_write"}};
  auto r = test::run(test::quote(test::kqual_exe()) + " screen --no-large-cases --no-sanitizer-pass --contract residual_add_relu " +
                     test::quote(rar / "good") + " " + test::quote(rar / "broken/missing_tail") + " " +
                     test::quote(rar / "broken/nan_swallowed") + " " + test::quote(rar / "broken/out_of_bounds") + " --out " +
                     test::quote(out));
  ASSERT_EQ(r.exit_code, 1) << r.output;  // some rejected
  json res = json::parse(std::ifstream(out / "results.json"));
  ASSERT_TRUE(res["device_present"].get<bool>()) << r.output;
  ASSERT_EQ(res["verdicts"].size(), 4u);
  for (const auto& v : res["verdicts"]) {
    const std::string name = v["name"];
    const std::string want = expected.at(name);
    if (want.empty()) {
      EXPECT_EQ(v["verdict"], "accepted") << v.dump(2);
    } else {
      EXPECT_EQ(v["verdict"], "rejected") << v.dump(2);
      EXPECT_TRUE(v["codes"].contains(want)) << name << " expected " << want << ": " << v.dump(2);
      EXPECT_FALSE(v["detail"].get<std::string>().empty()) << v.dump(2);
    }
  }
  EXPECT_EQ(res["counts"]["accepted"], 1);
  EXPECT_EQ(res["counts"]["rejected"], 3);
  EXPECT_GT(res["candidates_per_hour"].get<double>(), 0);
  // Resumed: nothing runs again, nothing is lost.
  auto again = test::run(test::quote(test::kqual_exe()) + " screen --no-large-cases --no-sanitizer-pass --contract residual_add_relu " +
                         test::quote(rar / "good") + " " + test::quote(rar / "broken/missing_tail") + " " +
                         test::quote(rar / "broken/nan_swallowed") + " " + test::quote(rar / "broken/out_of_bounds") + " --out " +
                         test::quote(out));
  ASSERT_EQ(again.exit_code, 1) << again.output;
  json res2 = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(res2["resumed"], 4);
  EXPECT_EQ(res2["run"], 0);
  fs::remove_all(out);
}

}  // namespace
}  // namespace kqual
