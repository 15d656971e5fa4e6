// GPU tests for the residual_add_relu vertical slice: the good candidate qualifies, every bundled
// known-broken candidate is rejected for the reason its manifest states. Skipped without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kqual/core/json.hpp"
#include "kqual/cuda/driver.hpp"
#include "selftest_util.hpp"
#include "gpu_test.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

class DeviceTest : public test::GpuTest {};

TEST_F(DeviceTest, GoodCandidateQualifies) {
  fs::path out = fs::temp_directory_path() / "kqual-device-test-good";
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " qualify --no-large-cases " +
                     test::quote(test::repo_root() / "candidates/residual_add_relu/good") + " --out " + test::quote(out));
  // The bundled example must ship (or show no difference): with the practical margin (3 %, 0.5 us) a
  // launch-bound shape's 0.1 us no longer decides alone (docs/decision.md). Never a rejection.
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  const std::string decision = res["verdict"]["decision"];
  EXPECT_TRUE(decision == "ship" || decision == "no_difference") << res["verdict"].dump(2);
  ASSERT_TRUE(res["verdict"].contains("speed")) << res["verdict"].dump(2);
  EXPECT_TRUE(res["verdict"]["speed"]["overall"]["computed"].get<bool>());
  test::expect_decide_agrees(out / "results.json");
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
  EXPECT_NE(text.find("Verdict: "), std::string::npos);
  EXPECT_NE(text.find("Result by shape"), std::string::npos);
  EXPECT_NE(text.find("| **overall** |"), std::string::npos) << text;
  fs::remove_all(out);
}

// Issue 52: an f16-only candidate is timed at f16 on inputs generated on the device (code 3), its timed
// launches verified, and never told it failed while timed. On an H100 the worker first refused the f16
// generator code ("bad generate stream/dtype") and the verdict charged that to the candidate.
TEST_F(DeviceTest, AnF16OnlyCandidateIsTimedAtF16OnGeneratedInputs) {
  fs::path out = fs::temp_directory_path() / "kqual-device-test-f16";
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " qualify --no-large-cases --no-sanitizer-pass --torch-baselines none " +
                     test::quote(test::repo_root() / "candidates/residual_add_relu/good/f16") + " --out " + test::quote(out));
  json res = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(res["correctness"]["verdict"], "accepted") << r.output;
  const std::string decision = res["verdict"]["decision"];
  EXPECT_NE(decision, "incomplete") << res["verdict"].dump(2);
  EXPECT_EQ(res["verdict"]["speed"].dump().find("failed while timed"), std::string::npos) << res["verdict"].dump(2);
  ASSERT_FALSE(res["timing"]["shapes"].empty()) << res["timing"].dump(2);
  for (const auto& sh : res["timing"]["shapes"]) {
    EXPECT_EQ(sh.value("dtype", ""), "f16") << sh.dump();
    EXPECT_EQ(sh["timed_inputs"].value("kind", ""), "fresh") << sh.dump();
    for (const auto& s : sh["series"]) EXPECT_TRUE(s["verified"].get<bool>()) << s.dump();
  }
  test::expect_decide_agrees(out / "results.json");
  EXPECT_EQ(r.exit_code, decision == "do_not_ship" ? 1 : 0) << r.output;
  fs::remove_all(out);
}

// A correct kernel launched twice per call (examples/slowed): accepted by the contract, then do not
// ship on speed, and kqual decide agrees from the recorded samples.
TEST_F(DeviceTest, ASlowedCorrectKernelIsDoNotShip) {
  fs::path out = fs::temp_directory_path() / "kqual-device-test-slowed";
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " qualify --no-large-cases --no-sanitizer-pass --torch-baselines none " +
                     test::quote(test::repo_root() / "examples/slowed") + " --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(res["correctness"]["verdict"], "accepted");
  EXPECT_EQ(res["verdict"]["decision"], "do_not_ship") << res["verdict"].dump(2);
  EXPECT_NE(res["verdict"]["speed"]["deciding"].get<std::string>().find("slower"), std::string::npos) << res["verdict"].dump(2);
  test::expect_decide_agrees(out / "results.json");
  fs::remove_all(out);
}

// Issue 21: the first failing case settles the verdict; the cases after it are listed as not run
// (in results.json and the memo), and --all-cases runs them all for a report of every failure.
TEST_F(DeviceTest, FirstFailingCaseSettlesTheVerdictAndAllCasesRunsTheRest) {
  const fs::path cand = test::repo_root() / "candidates/residual_add_relu/broken/missing_tail";
  fs::path out = fs::temp_directory_path() / "kqual-device-test-settled";
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " check --no-large-cases --no-sanitizer-pass " + test::quote(cand) +
                     " --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(res["correctness"]["failed"].get<int>(), 1) << res["correctness"].dump(2);
  EXPECT_TRUE(res["correctness"]["failure_codes"].contains("unwritten_output"));
  const auto settled = res["correctness"]["settled_not_run"].size();
  EXPECT_GT(settled, 10u);
  std::ifstream memo(out / "memo.md");
  std::string text((std::istreambuf_iterator<char>(memo)), {});
  EXPECT_NE(text.find("Not run because the verdict was already settled"), std::string::npos) << text;

  fs::remove_all(out);
  auto all = test::run(test::quote(test::kqual_exe()) + " check --no-large-cases --no-sanitizer-pass --all-cases " +
                       test::quote(cand) + " --out " + test::quote(out));
  ASSERT_EQ(all.exit_code, 1) << all.output;
  json every = json::parse(std::ifstream(out / "results.json"));
  EXPECT_GT(every["correctness"]["failed"].get<int>(), 1);
  EXPECT_TRUE(every["correctness"]["settled_not_run"].empty());
  EXPECT_EQ(every["correctness"]["cases"].get<int>(), res["correctness"]["cases"].get<int>() + int(settled));
  fs::remove_all(out);
}

// Issue 21, item 3: the large cases are generated on the device and verified there against a
// trusted reference kernel in another process (chunk hashes). One element wrong far past every small
// case (at 2^28 + 12345) is found and named; the same kernel without that defect passes.
TEST_F(DeviceTest, LargeCasesAreVerifiedOnTheDeviceAndNameAWrongElement) {
  const fs::path root = fs::temp_directory_path() / "kqual-device-large";
  fs::remove_all(root);
  auto write = [&](const std::string& name, bool defect) {
    fs::create_directories(root / name);
    std::ofstream(root / name / "kernel.cu")
        << "__global__ void add_relu_far(const float* x, const float* r, float* y, long long n) {\n"
           "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
           "    float s = __fadd_rn(x[i], r[i]);\n"
           "    s = s > 0.0f ? s : (s != s ? s : 0.0f);\n"
        << (defect ? "    if (i == (1LL << 28) + 12345) s += 1.0f;\n" : "")
        << "    y[i] = s;\n  }\n}\n";
    std::ofstream(root / name / "kqual.toml")
        << "[candidate]\nname = \"" << name << "\"\ncontract = \"residual_add_relu\"\nsource = \"kernel.cu\"\n"
        << "[supports]\ndtypes = [\"f32\"]\nmin_alignment_bytes = 4\nmax_n = 1073741824\n"
        << "[[launch]]\nkernel = \"add_relu_far\"\ngrid = \"max(1, min(cdiv(n, 256), sms * 32))\"\nblock = 256\n"
        << "args = [\"x\", \"r\", \"y\", \"n:i64\"]\n";
  };
  write("far_ok", false);
  write("far_wrong", true);
  // The two large f32 cases (2^27+5, 2^29+7) run, on the device, and pass: a default check runs two
  // cases more than one with --no-large-cases. (They do not show among the slowest cases: on the H200
  // each took less than the CPU-generated 2^24+1 cases, 1.3 s.)
  auto ok = test::run(test::quote(test::kqual_exe()) + " check --no-sanitizer-pass " + test::quote(root / "far_ok") + " --out " +
                      test::quote(root / "out-ok"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  json good = json::parse(std::ifstream(root / "out-ok/results.json"));
  auto small = test::run(test::quote(test::kqual_exe()) + " check --no-sanitizer-pass --no-large-cases " + test::quote(root / "far_ok") +
                         " --out " + test::quote(root / "out-small"));
  ASSERT_EQ(small.exit_code, 0) << small.output;
  json fewer = json::parse(std::ifstream(root / "out-small/results.json"));
  EXPECT_EQ(good["correctness"]["passed"].get<int>(), fewer["correctness"]["passed"].get<int>() + 2) << good["correctness"].dump(2);
  auto bad = test::run(test::quote(test::kqual_exe()) + " check --no-sanitizer-pass " + test::quote(root / "far_wrong") + " --out " +
                       test::quote(root / "out-bad"));
  ASSERT_EQ(bad.exit_code, 1) << bad.output;
  json res = json::parse(std::ifstream(root / "out-bad/results.json"));
  ASSERT_TRUE(res["correctness"]["failure_codes"].contains("wrong_result")) << res["correctness"].dump(2);
  const std::string detail = res["correctness"]["failing_cases"][0]["detail"];
  EXPECT_NE(detail.find("chunk"), std::string::npos) << detail;
  EXPECT_NE(detail.find("y[12345]"), std::string::npos) << detail;  // relative to the chunk at 2^28
  fs::remove_all(root);
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

// The evaluator's bug classes (issue: 32-bit indices, reads out of bounds, races, shared memory
// read before it is written): a default `kqual check` rejects each bundled example for its class.
struct ClassCase {
  const char* dir;     // under candidates/
  const char* reason;  // the failure code the check must report
};

class ClassRejected : public DeviceTest, public ::testing::WithParamInterface<ClassCase> {};

TEST_P(ClassRejected, ByADefaultCheck) {
  std::string name = GetParam().dir;
  for (auto& ch : name) if (ch == '/') ch = '-';
  fs::path out = fs::temp_directory_path() / ("kqual-device-class-" + name);
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " check --no-large-cases " +
                     test::quote(test::repo_root() / "candidates" / GetParam().dir) + " --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(res["correctness"]["verdict"], "rejected");
  EXPECT_TRUE(res["correctness"]["failure_codes"].contains(GetParam().reason)) << res["correctness"].dump(2);
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Classes, ClassRejected,
                         ::testing::Values(ClassCase{"residual_add_relu/broken/int32_index", "index_overflow"},
                                           ClassCase{"residual_add_relu/broken/lookahead_over_read", "out_of_bounds_read"},
                                           ClassCase{"residual_add_relu/broken/head_over_read", "out_of_bounds_read"},
                                           ClassCase{"residual_add_relu/broken/vector_tail_over_read", "out_of_bounds_read"},
                                           ClassCase{"exclusive_scan/broken/missing_barrier", "race"},
                                           ClassCase{"reduce_sum/broken/uninit_shared", "uninitialized_shared"}),
                         [](const auto& param_info) {
                           std::string n = param_info.param.dir;
                           n = n.substr(n.rfind('/') + 1);
                           return n;
                         });

// Defects that show only when timed: qualify accepts the correctness phase, then the timing phase
// finds a timed launch whose output differs from the reference of its own (fresh) inputs.
class TimedRejected : public DeviceTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(TimedRejected, ByQualifysTiming) {
  fs::path out = fs::temp_directory_path() / (std::string("kqual-device-timed-") + GetParam());
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " qualify --no-large-cases --no-sanitizer-pass --torch-baselines none --sizes 4096,1048576 --rounds 3 " +
                     test::quote(test::repo_root() / "candidates/residual_add_relu/broken" / GetParam()) + " --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  if (res["correctness"]["verdict"] == "rejected") {  // a replay cache may already be caught by correctness
    EXPECT_STREQ(GetParam(), "pointer_cache") << res["correctness"].dump(2);
    return;
  }
  // The launch counter fires after 200 launches (the check makes 168): in one of the shapes.
  bool caught = false;
  for (const auto& sh : res["timing"]["shapes"]) {
    const json& s = sh["series"][0];
    if (!s["verified"].get<bool>()) {
      caught = true;
      EXPECT_EQ(s["verify_code"], "timed_output_wrong") << s.dump(2);
    }
  }
  EXPECT_TRUE(caught) << res["timing"].dump(2);
  test::expect_decide_agrees(out / "results.json");
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Cheats, TimedRejected,
                         ::testing::Values("launch_counter", "pointer_cache", "bench_shape_shortcut", "hash_slot_rewrite"));

// Issue 23: a kernel that rewrites kqual's output hash slots. selftest hands broken/hash_slot_rewrite
// the slots' address; every hash was read back before the kernel ran again, and the rewritten slot is
// named (harness_memory_written), not just the skipped launches.
TEST_F(DeviceTest, AKernelThatRewritesKqualsHashSlotsIsRejectedForIt) {
  const fs::path root = fs::temp_directory_path() / "kqual-device-hash-slots";
  fs::remove_all(root);
  const fs::path broken = root / "candidates/residual_add_relu/broken";
  fs::create_directories(broken);
  for (const char* d : {"hash_slot_rewrite", "launch_counter"})
    fs::copy(test::repo_root() / "candidates/residual_add_relu/broken" / d, broken / d, fs::copy_options::recursive);
  fs::remove_all(broken / "launch_counter/kqual.toml");  // the kernel source only
  const fs::path out = root / "out";
  const json rows = test::selftest_rows("--seeds 1 --no-baselines --no-sanitizer-pass --contract residual_add_relu --root " + test::quote(root), out);
  for (const auto& row : rows) {
    const std::string got = row.dump();
    EXPECT_NE(got.find("harness_memory_written"), std::string::npos) << row.dump(2);
    EXPECT_NE(got.find("hash slot"), std::string::npos) << row.dump(2);
  }
  EXPECT_EQ(rows.size(), 1u);
  fs::remove_all(root);
}

// Issue 23, timing integrity. The first timing shape's series of the candidate, from a qualify run.
json candidate_series(const fs::path& out, const std::string& shape) {
  json res = json::parse(std::ifstream(out / "results.json"));
  for (const auto& sh : res["timing"]["shapes"])
    if (sh["shape"] == shape) {
      json s = sh["series"][0];
      s["timed_inputs"] = sh.value("timed_inputs", json::object());
      return s;
    }
  ADD_FAILURE() << "no timing shape " << shape << " in " << res["timing"].dump(2);
  return json::object();
}

// A kernel that keeps the answers of two datasets and replays them: every timed output right when
// the timed inputs are two fixed datasets, wrong on the third launch when every launch gets fresh
// inputs generated on the device.
TEST_F(DeviceTest, DatasetMemoIsCaughtByFreshInputsNotByTwoDatasets) {
  const fs::path cand = test::repo_root() / "candidates/residual_add_relu/broken/dataset_memo";
  const std::string common = " qualify --no-large-cases --no-sanitizer-pass --torch-baselines none --sizes 268435456 --rounds 2 --samples 5 ";
  fs::path out = fs::temp_directory_path() / "kqual-device-dataset-memo";
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + common + test::quote(cand) + " --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  json s = candidate_series(out, "n=268435456");
  EXPECT_EQ(s["timed_inputs"].value("kind", ""), "fresh") << s.dump(2);
  EXPECT_FALSE(s.value("verified", true)) << s.dump(2);
  EXPECT_EQ(s.value("verify_code", ""), "timed_output_wrong") << s.dump(2);
  EXPECT_NE(s.value("verify_detail", "").find("fresh inputs"), std::string::npos) << s.dump(2);
  test::expect_decide_agrees(out / "results.json");
  // The same kernel against the two-dataset scheme: every timed output verified (the cheat works).
  fs::remove_all(out);
  r = test::run(test::quote(test::kqual_exe()) + common + "--timed-inputs datasets " + test::quote(cand) + " --out " + test::quote(out));
  s = candidate_series(out, "n=268435456");
  EXPECT_EQ(s["timed_inputs"].value("kind", ""), "datasets") << s.dump(2);
  EXPECT_TRUE(s.value("verified", false)) << s.dump(2) << r.output;
  test::expect_decide_agrees(out / "results.json");
  fs::remove_all(out);
}

// Under the graph timer every launch of a replay writes its own poisoned output copy and every copy
// is hashed: a kernel whose launches mostly do nothing once warm is caught there too.
TEST_F(DeviceTest, GraphLaunchStrideIsCaughtUnderTheGraphTimer) {
  fs::path out = fs::temp_directory_path() / "kqual-device-graph-stride";
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) +
                     " qualify --no-large-cases --no-sanitizer-pass --torch-baselines none --sizes 4096 --rounds 2 --timer graph --l2-flush none " +
                     test::quote(test::repo_root() / "candidates/residual_add_relu/broken/graph_launch_stride") + " --out " +
                     test::quote(out));
  ASSERT_EQ(r.exit_code, 1) << r.output;
  json s = candidate_series(out, "n=4096");
  EXPECT_EQ(s.value("timer", ""), "graph") << s.dump(2);
  EXPECT_GT(s.value("graph_launches", 0), 8) << s.dump(2);
  EXPECT_FALSE(s.value("verified", true)) << s.dump(2);
  EXPECT_EQ(s.value("verify_code", ""), "timed_output_wrong") << s.dump(2);
  test::expect_decide_agrees(out / "results.json");
  fs::remove_all(out);
}

}  // namespace
}  // namespace kqual

namespace kqual {
namespace {

// Timed outputs under a tolerance contract: softmax has no bit-exact device reference, so sampled
// timed launches are compared with the reference (the stated detection power) and, as the contract
// requires reproducible results, every launch with the kernel's own untimed re-run. A softmax that
// skips every third launch of one benchmark shape is caught there; the good one is not.
TEST(TimedVerifyDevice, ASoftmaxSkippingEveryThirdLaunchIsCaughtAndTheGoodOneIsNot) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const std::string common = " qualify --no-large-cases --no-sanitizer-pass --torch-baselines none ";
  for (const char* which : {"broken/skip_every_third", "good"}) {
    const bool broken = std::string(which) != "good";
    fs::path out = fs::temp_directory_path() / (std::string("kqual-device-softmax-") + (broken ? "skip" : "good"));
    fs::remove_all(out);
    auto r = test::run(test::quote(test::kqual_exe()) + common + test::quote(test::repo_root() / "candidates/softmax" / which) +
                       " --out " + test::quote(out));
    ASSERT_TRUE(fs::exists(out / "results.json")) << r.output;
    json res = json::parse(std::ifstream(out / "results.json"));
    EXPECT_EQ(res["correctness"]["verdict"], "accepted") << which << ": " << res["correctness"].dump(2);
    const json& v = res["timing"]["verification"];
    EXPECT_GE(v.value("target_compared_with_reference", 0), 44) << v.dump(2);
    EXPECT_GT(v.value("compared_with_untimed_rerun", 0), 0) << v.dump(2);
    if (!broken) {
      EXPECT_GE(v.value("detection_one_in_ten", 0.0), 0.99) << v.dump(2);
      for (const auto& sh : res["timing"]["shapes"]) EXPECT_TRUE(sh["series"][0].value("verified", false)) << sh.dump(2);
      std::ifstream memo(out / "memo.md");
      const std::string text((std::istreambuf_iterator<char>(memo)), {});
      EXPECT_NE(text.find("Timed outputs verified: "), std::string::npos) << text;
      continue;
    }
    EXPECT_EQ(r.exit_code, 1) << r.output;
    bool caught = false;
    for (const auto& sh : res["timing"]["shapes"]) {
      const json& s = sh["series"][0];
      if (s.value("verified", true)) continue;
      caught = true;
      // By value: results.json keeps the contract's axis order, not the order written here.
      EXPECT_EQ(sh["dims"].value("rows", 0), 4096) << sh.dump(2);
      EXPECT_EQ(sh["dims"].value("cols", 0), 1024) << sh.dump(2);
      EXPECT_EQ(s.value("verify_code", ""), "timed_output_wrong") << s.dump(2);
    }
    EXPECT_TRUE(caught) << res["timing"].dump(2);
    test::expect_decide_agrees(out / "results.json");
    fs::remove_all(out);
  }
}

}  // namespace
}  // namespace kqual
