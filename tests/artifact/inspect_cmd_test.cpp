// `kqual inspect` end to end through the CLI entry point: exit codes and the JSON schema.
#include <gtest/gtest.h>

#include "fixture_util.hpp"
#include "kqual/core/json.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/core/exit_codes.hpp"

namespace kqual::run {
namespace {

struct Result {
  int code;
  std::string out;
};

Result run(std::vector<std::string> args) {
  args.insert(args.begin(), "kqual");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = kqual::run::main(static_cast<int>(argv.size()), argv.data());
  Result r{code, ::testing::internal::GetCapturedStdout()};
  (void)::testing::internal::GetCapturedStderr();
  return r;
}

using artifact::test::fixture;

TEST(InspectCmd, JsonSchema) {
  const Result r = run({"--json", "inspect", fixture("multi.fatbin"), "--arch", "sm_90"});
  ASSERT_EQ(r.code, kExitPass) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "kqual.inspect/1");
  EXPECT_EQ(j["schema_version"], kJsonSchemaVersion);
  EXPECT_EQ(j["artifact"]["container"], "fatbin");
  EXPECT_EQ(j["artifact"]["entries"].size(), 5u);
  EXPECT_EQ(j["selection"]["target"], "sm_90");
  EXPECT_EQ(j["selection"]["path"], "native_sass");
  EXPECT_EQ(j["selection"]["entry_arch"], "sm_90a");
  EXPECT_EQ(j["selection"]["target_source"], "--arch");
  const json& e = j["artifact"]["entries"][static_cast<std::size_t>(j["selection"]["entry"].get<int>())];
  EXPECT_EQ(e["kind"], "sass");
  EXPECT_TRUE(e["kernels"].is_array());
  EXPECT_EQ(e["kernels"][0]["code_sha256"].get<std::string>().size(), 64u);
}

TEST(InspectCmd, IncompatibleExitsFail) {
  EXPECT_EQ(run({"inspect", fixture("sm80_only.fatbin"), "--arch", "sm_90"}).code, kExitFail);
  EXPECT_EQ(run({"inspect", fixture("sm80_only.fatbin"), "--arch", "sm_86"}).code, kExitPass);
  const Result r = run({"inspect", fixture("sm80_ptx80.fatbin"), "--arch", "sm_90"});
  EXPECT_EQ(r.code, kExitPass);
  EXPECT_NE(r.out.find("ptx_jit"), std::string::npos) << r.out;
}

TEST(InspectCmd, DiffExitCodeFollowsLoadingPath) {
  const Result worse = run({"inspect", "--diff", fixture("zstd.fatbin"), fixture("ptx_compute90.fatbin"), "--arch", "sm_90"});
  EXPECT_EQ(worse.code, kExitFail) << worse.out;
  EXPECT_NE(worse.out.find("REGRESSION"), std::string::npos) << worse.out;
  EXPECT_EQ(run({"inspect", "--diff", fixture("ptx_compute90.fatbin"), fixture("zstd.fatbin"), "--arch", "sm_90"}).code,
            kExitPass);
  const Result same = run({"--json", "inspect", "--diff", fixture("lz4.fatbin"), fixture("zstd.fatbin"), "--arch", "sm_90"});
  ASSERT_EQ(same.code, kExitPass);
  const json j = json::parse(same.out);
  EXPECT_EQ(j["schema"], "kqual.inspect-diff/1");
  EXPECT_EQ(j["diff"]["loading_path_worse"], false);
  for (const auto& k : j["diff"]["kernels"]) EXPECT_EQ(k["status"], "identical") << k.dump();
}

TEST(InspectCmd, BadInputsExitInputError) {
  EXPECT_EQ(run({"inspect", "/bin/ls", "--arch", "sm_90"}).code, kExitInputError);
  EXPECT_EQ(run({"inspect", fixture("multi.fatbin"), "--arch", "sm_9x"}).code, kExitInputError);
  EXPECT_EQ(run({"inspect", "--diff", fixture("multi.fatbin"), "--arch", "sm_90"}).code, kExitInputError);
}

}  // namespace
}  // namespace kqual::run
