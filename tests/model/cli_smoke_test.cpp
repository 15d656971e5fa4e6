// Runs the built kqual binary: <build>/tests/model/<this exe> -> <build>/tools/kqual/kqual.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kqual/core/json.hpp"

namespace kqual {
namespace {

namespace fs = std::filesystem;

fs::path kqual_binary() {
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  return exe.parent_path().parent_path().parent_path() / "tools" / "kqual" / "kqual";
}

struct CliRun {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

CliRun run_kqual(const std::string& args) {
  const fs::path dir = fs::temp_directory_path() / ("kqual_model_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cmd = "'" + kqual_binary().string() + "' " + args + " >'" + (dir / "out").string() + "' 2>'" +
                          (dir / "err").string() + "'";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

class ModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kqual_binary())) FAIL() << "kqual binary not found at " << kqual_binary();
  }
};

TEST_F(ModelCli, WavesSeedCaseAsJson) {
  for (const std::string args : {"--json model waves --tiles 96 --slots 80 --split-k 4",
                                 "model waves --tiles 96 --slots 80 --split-k 4 --json"}) {
    const CliRun r = run_kqual(args);
    ASSERT_EQ(r.code, 0) << args << "\n" << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["schema"], "kqual.model-waves/1");
    EXPECT_EQ(j["schema_version"].get<int>(), kJsonSchemaVersion);
    EXPECT_EQ(j["command"], "model waves");
    EXPECT_EQ(j["result"]["waves"].get<int>(), 2);
    EXPECT_DOUBLE_EQ(j["result"]["efficiency"].get<double>(), 0.6);
    EXPECT_EQ(j["split_k"]["options"].size(), 4u);
    EXPECT_EQ(j["split_k"]["options"][1]["waves"].get<int>(), 3);
    EXPECT_FALSE(j["provenance"]["git_revision"].get<std::string>().empty());
  }
}

TEST_F(ModelCli, ExplainScanMissingCarryAsJson) {
  const CliRun r = run_kqual("--json explain scan --counts 3,0,2,1,0,4 --block-size 3 --variant missing-carry");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& w = j["walkthroughs"][0];
  EXPECT_EQ(w["offsets"], json({0, 3, 3, 0, 1, 1}));
  EXPECT_EQ(w["overlaps"].size(), 3u);
  EXPECT_EQ(w["unwritten"][0]["begin"].get<int>(), 5);
  EXPECT_FALSE(w["correct"].get<bool>());
}

TEST_F(ModelCli, BadFlagsNameTheFlagAndValue) {
  CliRun r = run_kqual("model waves --tiles 96 --slots 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--slots 0"), std::string::npos) << r.err;
  r = run_kqual("model breakeven --extra-cold 70 --warm-saving 12us");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--extra-cold '70'"), std::string::npos) << r.err;
  r = run_kqual("explain scan --counts 3,x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--counts '3,x'"), std::string::npos) << r.err;
  r = run_kqual("model roofline --flops 1e9 --bytes 1e9 --device v100");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--device 'v100'"), std::string::npos) << r.err;
}

// Issue 25: the textbook case from the command line alone. M/M/1 at rho 0.5: sojourn mean 20 ms,
// p99 92.1 ms; the simulation within 3 % / 5 % (200,000 requests, seed 1), and the closed form beside it.
TEST_F(ModelCli, ServiceTextbookMM1AsJson) {
  const CliRun r =
      run_kqual("--json model service --arrivals poisson:50 --service exp:10ms --replicas 1 --requests 200000 --seed 1");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "kqual.model-service/1");
  const json& soj = j["result"]["sojourn_ms"];
  EXPECT_NEAR(soj["mean"].get<double>(), 20.0, 0.6);
  EXPECT_NEAR(soj["p99"].get<double>(), 92.103, 4.6);
  EXPECT_NEAR(j["result"]["closed_form"]["sojourn_ms"]["p99"].get<double>(), 92.103, 0.01);
  // Deterministic per seed: the same command prints the same numbers.
  const CliRun again =
      run_kqual("--json model service --arrivals poisson:50 --service exp:10ms --replicas 1 --requests 200000 --seed 1");
  EXPECT_EQ(json::parse(again.out)["result"]["sojourn_ms"], soj);
  // M/D/1: Pollaczek-Khinchine mean wait 5 ms, sojourn 15 ms.
  const CliRun md1 = run_kqual("--json model service --arrivals poisson:50 --service const:10ms --requests 100000");
  ASSERT_EQ(md1.code, 0) << md1.err;
  const json m = json::parse(md1.out)["result"];
  EXPECT_NEAR(m["closed_form"]["sojourn_ms"]["mean"].get<double>(), 15.0, 1e-9);
  EXPECT_NEAR(m["sojourn_ms"]["mean"].get<double>(), 15.0, 0.45);
  const CliRun bad = run_kqual("model service --arrivals poisson --service exp:10ms");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--arrivals 'poisson'"), std::string::npos) << bad.err;
}

// Without a usable GPU (or before the worker measures), --measure says why and exits 3; with one it
// reports measured ceilings. Either way the outcome is explicit.
TEST_F(ModelCli, MeasureReportsReasonOrMeasurement) {
  const CliRun r = run_kqual("--json model roofline --flops 1e9 --bytes 1e9 --measure");
  if (r.code == 3) {
    EXPECT_NE(r.err.find("--measure could not measure the device"), std::string::npos) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["status"], "incomplete");
    EXPECT_FALSE(j["reason"].get<std::string>().empty());
  } else {
    ASSERT_EQ(r.code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_GT(j["measurement"]["copy_bytes_per_s"].get<double>(), 0);
  }
}

}  // namespace
}  // namespace kqual
