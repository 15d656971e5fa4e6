// kqual compare on a GPU, through the CLI as a user runs it:
//  (a) the same kernel as native sm_90 SASS (OLD) and PTX only (NEW): the JIT shows in the
//      cold-cache (and cache-off) first use, not with a warm cache, and warm time does not differ;
//  (b) a genuinely faster warm kernel (NEW: the bundled vectorised candidate) shipped as PTX only,
//      against a correct but slow OLD (8 blocks): "ship" for the long-lived profile, "do not ship
//      as built" for the cold-start-heavy one — the same measured pair, two verdicts.
// Skipped visibly without a GPU.
#include <gtest/gtest.h>

#include "compare_util.hpp"
#include "gpu_test.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/cuda/driver.hpp"

namespace fs = std::filesystem;
using namespace kqual;

namespace {


json run_compare(const std::string& args, const fs::path& out, int* exit_code) {
  auto r = test::run(test::quote(test::compare_kqual()) + " compare " + args + " --quiet --out " + test::quote(out));
  *exit_code = r.exit_code;
  std::cout << r.output.substr(r.output.size() > 4000 ? r.output.size() - 4000 : 0) << "\n";
  if (!fs::exists(out / "results.json")) return json();
  std::cout << read_text_file(out / "memo.md").substr(0, 6000) << "\n";
  return json::parse(read_text_file(out / "results.json"));
}

const json& mode(const json& r, const std::string& cache) {
  for (const auto& m : r.at("startup").at("modes"))
    if (m.at("cache") == cache) return m;
  throw std::runtime_error("mode not measured: " + cache);
}

}  // namespace

class CompareDevice : public test::GpuTest {};

TEST_F(CompareDevice, PtxOnlyPaysTheJitColdNotWarmAndRunsTheSame) {
  test::TempDir t;
  int code = -1;
  json r = run_compare(test::quote(test::repo_root() / "candidates/residual_add_relu/good") +
                           " --old-mode sass --new-mode ptx --shapes '65536;16777216' --processes 6 --samples 10"
                           " --startup-runs 10 --no-large-cases --profile " +
                           test::quote(test::repo_root() / "profiles/long-lived-server.toml"),
                       t.path, &code);
  ASSERT_FALSE(r.is_null()) << "no results.json (exit " << code << ")";
  EXPECT_EQ(r["sides"]["old"]["loading_path"], "native_sass");
  EXPECT_EQ(r["sides"]["new"]["loading_path"], "ptx_jit");
  EXPECT_EQ(r["correctness"]["old"]["verdict"], "accepted");
  EXPECT_EQ(r["correctness"]["new"]["verdict"], "accepted");

  for (const char* cache : {"off", "cold"}) {
    const json& m = mode(r, cache);
    const json& d = m.at("first_request_delta_ms");
    EXPECT_EQ(d.at("verdict"), "slower") << cache << ": " << d.dump();
    EXPECT_GT(d.at("ci").at(0).get<double>(), 5.0) << cache << ": JIT should cost at least 5 ms";
    EXPECT_FALSE(m.at("new").at("jit_wall_summary_ms").is_null()) << cache << ": the driver reported no JIT time";
  }
  const json& warm_cache = mode(r, "warm").at("first_request_delta_ms");
  EXPECT_TRUE(warm_cache.at("verdict") == "no difference" || warm_cache.at("ci").at(1).get<double>() < 2.0)
      << warm_cache.dump();

  // Warm time per shape: the same SASS after the JIT → no difference (or inconclusive), never a
  // confident difference beyond the margin.
  for (const auto& sh : r.at("warm").at("shapes")) {
    const json& c = sh.at("comparison");
    const std::string v = c.at("verdict");
    EXPECT_TRUE(v == "no difference" || v == "inconclusive") << sh.at("shape") << ": " << c.dump();
  }
  // The JIT must be repaid by a warm saving that does not exist: not "ship".
  EXPECT_NE(r["verdict"]["decision"], "ship");
}

TEST_F(CompareDevice, FasterButPtxOnlyTwoProfilesTwoVerdicts) {
  test::TempDir t;
  int code = -1;
  json r = run_compare(test::quote(test::repo_root() / "tests/pipeline/compare/fixtures/few_blocks") + " " +
                           test::quote(test::repo_root() / "candidates/residual_add_relu/good") +
                           " --new-mode ptx --shapes 65536 --processes 6 --samples 10 --startup-runs 10 --modes cold,warm"
                           " --no-large-cases --profile " + test::quote(test::repo_root() / "profiles/long-lived-server.toml") +
                           " --profile " + test::quote(test::repo_root() / "profiles/cold-start-heavy.toml"),
                       t.path, &code);
  ASSERT_FALSE(r.is_null()) << "no results.json (exit " << code << ")";
  EXPECT_EQ(r["sides"]["new"]["loading_path"], "ptx_jit");
  const json& sh = r.at("warm").at("shapes").at(0);
  EXPECT_EQ(sh.at("comparison").at("verdict"), "faster") << sh.dump();
  ASSERT_EQ(r.at("decisions").size(), 2u);
  const json& longlived = r.at("decisions").at(0).at("decision");
  const json& coldheavy = r.at("decisions").at(1).at("decision");
  EXPECT_EQ(longlived.at("verdict"), "ship") << longlived.dump(2);
  EXPECT_EQ(coldheavy.at("verdict"), "do_not_ship") << coldheavy.dump(2);
  EXPECT_GT(coldheavy.at("breakeven_calls").get<double>(), 50.0);
  EXPECT_EQ(code, 0);  // the first profile (long-lived) is the gate
}
