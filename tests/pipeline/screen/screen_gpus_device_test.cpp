// kqual screen --gpus all on a real device (issue 26): the same verdicts as one worker session, each
// with the GPU (PCI bus order) that judged it; a known-broken kernel that faults costs its worker,
// not its GPU; two shards screened on every GPU merge into the four candidates. Skipped without a GPU.
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

TEST(ScreenGpusDevice, EveryGpuJudgesFromOneQueueAndShardsMerge) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path out = fs::temp_directory_path() / "kqual-screen-gpus-device-test";
  fs::remove_all(out);
  const fs::path rar = test::repo_root() / "candidates/residual_add_relu";
  const std::map<std::string, std::string> expected = {
      {"good", ""}, {"missing_tail", "unwritten_output"}, {"nan_swallowed", "nan_policy"}, {"out_of_bounds", "out_of_bounds_write"}};
  const std::string screen = test::quote(test::kqual_exe()) + " screen --no-large-cases --no-sanitizer-pass --gpus all " +
                             test::quote(rar / "good") + " " + test::quote(rar / "broken/missing_tail") + " " +
                             test::quote(rar / "broken/nan_swallowed") + " " + test::quote(rar / "broken/out_of_bounds");
  auto r = test::run(screen + " --out " + test::quote(out / "all"));
  ASSERT_EQ(r.exit_code, 1) << r.output;  // some rejected
  json res = json::parse(std::ifstream(out / "all/results.json"));
  ASSERT_TRUE(res["device_present"].get<bool>()) << r.output;
  EXPECT_EQ(res["provenance"]["device_order"], "PCI_BUS_ID");
  ASSERT_GE(res["gpus"].size(), 1u);
  std::size_t judged = 0;
  for (const auto& g : res["gpus"]) {
    judged += g["judged"].get<std::size_t>();
    EXPECT_TRUE(g["retired"].is_null()) << g.dump(2);  // a faulting candidate costs its worker, not its GPU
  }
  EXPECT_EQ(judged, 4u);
  ASSERT_EQ(res["verdicts"].size(), 4u);
  for (const auto& v : res["verdicts"]) {
    const std::string want = expected.at(v["name"].get<std::string>());
    EXPECT_EQ(v["verdict"], want.empty() ? "accepted" : "rejected") << v.dump(2);
    if (!want.empty()) {
      EXPECT_TRUE(v["codes"].contains(want)) << v.dump(2);
    }
    ASSERT_TRUE(v.contains("gpu")) << v.dump(2);
    EXPECT_LT(v["gpu"].get<std::size_t>(), 64u);
  }
  for (const char* s : {"0/2", "1/2"}) {
    const std::string dir = std::string("shard") + s[0];
    auto rs = test::run(screen + " --shard " + s + " --out " + test::quote(out / dir));
    EXPECT_TRUE(rs.exit_code == 0 || rs.exit_code == 1) << rs.output;
  }
  auto m = test::run(test::quote(test::kqual_exe()) + " screen merge --out " + test::quote(out / "merged") + " " +
                     test::quote(out / "shard0") + " " + test::quote(out / "shard1"));
  ASSERT_EQ(m.exit_code, 1) << m.output;
  json merged = json::parse(std::ifstream(out / "merged/results.json"));
  EXPECT_EQ(merged["candidates"], 4);
  EXPECT_EQ(merged["merged"]["missing"], 0);
  EXPECT_EQ(merged["merged"]["duplicates"], 0);
  EXPECT_EQ(merged["counts"]["accepted"], 1);
  fs::remove_all(out);
}

TEST(ScreenGpusDevice, SeveralWorkersPerGpuGiveTheSameVerdictsAndTimeAlone) {
  // --workers-per-gpu 3: three lanes check side by side on each GPU; the timing tier still times the
  // accepted candidate (alone on its GPU) and still rejects the timed cheat.
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path out = fs::temp_directory_path() / "kqual-screen-workers-per-gpu-device-test";
  fs::remove_all(out);
  const fs::path rar = test::repo_root() / "candidates/residual_add_relu";
  const std::map<std::string, std::string> expected = {{"good", ""},
                                                       {"missing_tail", "unwritten_output"},
                                                       {"nan_swallowed", "nan_policy"},
                                                       {"out_of_bounds", "out_of_bounds_write"},
                                                       {"launch_counter", "timed_output_wrong"}};
  std::string cmd = test::quote(test::kqual_exe()) +
                    " screen --no-large-cases --no-sanitizer-pass --workers-per-gpu 3 --timing --shape 1048576 --out " +
                    test::quote(out);
  for (const auto& [name, code] : expected) cmd += " " + test::quote(rar / (code.empty() ? "good" : "broken/" + name));
  auto r = test::run(cmd);
  ASSERT_EQ(r.exit_code, 1) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  ASSERT_TRUE(res["device_present"].get<bool>()) << r.output;
  EXPECT_EQ(res["workers_per_gpu"], 3);
  EXPECT_GE(res["worker_processes_started"].get<int>(), 2) << r.output;  // more than one lane did work
  ASSERT_EQ(res["verdicts"].size(), expected.size());
  for (const auto& v : res["verdicts"]) {
    const std::string want = expected.at(v["name"].get<std::string>());
    EXPECT_EQ(v["verdict"], want.empty() ? "accepted" : "rejected") << v.dump(2);
    if (!want.empty()) {
      EXPECT_TRUE(v["codes"].contains(want)) << v.dump(2);
    } else {
      EXPECT_TRUE(v.contains("speed") && v["speed"].contains("effect")) << v.dump(2);
    }
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace kqual
