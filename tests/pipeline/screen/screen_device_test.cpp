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

TEST(ScreenDevice, TheTimingTierRanksTheAcceptedAndRejectsATimedCheat) {
  // --timing: good is timed against the bundled baselines and ranked; launch_counter passes every
  // correctness case but computes only some timed launches: the tier rejects it (timed_output_wrong).
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path out = fs::temp_directory_path() / "kqual-screen-timing-device-test";
  fs::remove_all(out);
  const fs::path rar = test::repo_root() / "candidates/residual_add_relu";
  auto r = test::run(test::quote(test::kqual_exe()) + " screen --timing --no-large-cases --no-sanitizer-pass --shape 1048576 " +
                     "--shape 67108864 " + test::quote(rar / "good") + " " + test::quote(rar / "broken/launch_counter") + " --out " +
                     test::quote(out));
  ASSERT_TRUE(fs::exists(out / "results.json")) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  ASSERT_TRUE(res["device_present"].get<bool>()) << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  for (const auto& v : res["verdicts"]) {
    if (v["name"] == "good") {
      EXPECT_EQ(v["verdict"], "accepted") << v.dump(2);
      ASSERT_TRUE(v.contains("speed")) << v.dump(2);
      EXPECT_TRUE(v["speed"].contains("effect")) << v.dump(2);
      EXPECT_EQ(v["speed"]["shapes"].size(), 2u) << v.dump(2);
    } else {
      EXPECT_EQ(v["verdict"], "rejected") << v.dump(2);
      EXPECT_TRUE(v["codes"].contains("timed_output_wrong")) << v.dump(2);
    }
  }
  const json& ranked = res["ranking"]["ranked"];
  ASSERT_EQ(ranked.size(), 1u) << res["ranking"].dump(2);
  EXPECT_EQ(ranked[0]["name"], "good");
  EXPECT_GT(ranked[0].value("speedup", 0.0), 0.0);
  EXPECT_TRUE(fs::is_regular_file(out / "ranking.html"));
  fs::remove_all(out);
}


// A timed screen resumed: unchanged, the journaled verdict is reused; after a baseline's source
// changed, the candidate is checked and timed again (the baselines' content is in the key under --timing).
TEST(ScreenDevice, ATimedScreenResumedAfterItsBaselinesChangedTimesAgain) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path root = fs::temp_directory_path() / "kqual-screen-resume-device-test";
  fs::remove_all(root);
  const fs::path rar = test::repo_root() / "candidates/residual_add_relu";
  const fs::path bl = root / "baselines";
  fs::create_directories(bl / "residual_add_relu");
  fs::copy(test::repo_root() / "baselines/residual_add_relu/eager", bl / "residual_add_relu/resume_eager", fs::copy_options::recursive);
  {  // named apart from the project's own eager baseline, which is timed too
    const fs::path m = bl / "residual_add_relu/resume_eager/kqual.toml";
    std::ifstream in(m);
    std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    toml.replace(toml.find("name = \"eager\""), std::string("name = \"eager\"").size(), "name = \"resume_eager\"");
    std::ofstream(m, std::ios::trunc) << toml;
  }
  const fs::path out = root / "out";
  auto screen = [&] {
    auto r = test::run(test::quote(test::kqual_exe()) + " screen --timing --no-large-cases --no-sanitizer-pass --shape 1048576 --baselines " +
                       test::quote(bl) + " " + test::quote(rar / "good") + " --out " + test::quote(out));
    EXPECT_TRUE(fs::exists(out / "results.json")) << r.output;
    const json res = json::parse(std::ifstream(out / "results.json"));
    EXPECT_TRUE(res["device_present"].get<bool>()) << r.output;
    EXPECT_EQ(res["verdicts"].size(), 1u) << r.output;
    return res["verdicts"].at(0);
  };
  const json first = screen();
  EXPECT_EQ(first["verdict"], "accepted") << first.dump(2);
  EXPECT_FALSE(first.value("resumed", true)) << first.dump(2);
  ASSERT_TRUE(first.contains("speed")) << first.dump(2);
  const json again = screen();
  EXPECT_TRUE(again.value("resumed", false)) << "nothing changed: the journaled verdict answers\n" << again.dump(2);
  std::ofstream(bl / "residual_add_relu/resume_eager/kernel.cu", std::ios::app) << "\n// the baseline edited\n";
  const json after = screen();
  EXPECT_FALSE(after.value("resumed", true)) << "a baseline changed: timed again\n" << after.dump(2);
  EXPECT_EQ(after["verdict"], "accepted") << after.dump(2);
  EXPECT_TRUE(after.contains("speed")) << after.dump(2);
  fs::remove_all(root);
}

}  // namespace
}  // namespace kqual
