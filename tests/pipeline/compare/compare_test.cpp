// kqual compare without a GPU: the arithmetic that turns samples into a verdict (known answers),
// the interleaving order, the toolchain (--ptxas with this machine's ptxas, an "older" ptxas that
// refuses the PTX ISA version, nvcc), and the CLI's refusals — with nothing written on failure.
#include <gtest/gtest.h>

#include <fstream>

#include "compare_util.hpp"
#include "kqual/artifact/artifact.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/build/toolchain.hpp"

namespace fs = std::filesystem;
using namespace kqual;
using decision::CacheMode;

namespace {

const fs::path kRoot = test::repo_root();
const fs::path kGood = kRoot / "candidates/residual_add_relu/good";
const char* kToolkitPtxas = "/usr/local/cuda/bin/ptxas";

// center ± k·step for k = -m..m: the median is exactly `center`.
std::vector<double> around(double center, double step, int m = 5) {
  std::vector<double> v;
  for (int k = -m; k <= m; ++k) v.push_back(center + k * step);
  return v;
}

compare::StartupPair pair(CacheMode c, double old_kfu, double new_kfu) {
  compare::StartupPair p;
  p.cache = c;
  p.old_side.kernel_first_use_ms = around(old_kfu, 0.002);
  p.new_side.kernel_first_use_ms = around(new_kfu, 0.002);
  for (double v : p.old_side.kernel_first_use_ms) p.old_side.first_request_ms.push_back(130 + v);
  for (double v : p.new_side.kernel_first_use_ms) p.new_side.first_request_ms.push_back(130 + v);
  return p;
}

// Same kernel, new build PTX only: +90 ms with the cache off or cold, +0.1 ms warm (inside the
// 1 ms noise floor); warm kernel 1.0 ms → 0.8 ms per call.
std::vector<compare::StartupPair> jit_pairs() {
  return {pair(CacheMode::off, 0.3, 90.3), pair(CacheMode::cold, 0.3, 90.3), pair(CacheMode::warm, 0.3, 0.4)};
}

decision::DeploymentProfile profile(const std::string& file) { return decision::load_profile((kRoot / "profiles" / file).string()); }

test::CommandResult kq(const std::string& args) { return test::run(test::quote(test::compare_kqual()) + " " + args); }

json read_json(const fs::path& p) { return json::parse(read_text_file(p)); }

// A stand-in for an older ptxas: refuses PTX ISA 9.x exactly as ptxas 12.8 does, otherwise
// forwards to the toolkit's ptxas.
fs::path fake_old_ptxas(const fs::path& dir, bool accept_after_rewrite) {
  fs::path p = dir / "ptxas-old";
  std::ofstream f(p);
  f << "#!/bin/sh\n"
       "for a; do last=$a; done\n"
       "if [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 12.8, V12.8.93'; exit 0; fi\n"
       "if grep -q '^\\.version 9\\.' \"$last\"; then\n"
       "  echo \"ptxas $last, line 5; fatal   : Unsupported .version 9.0; current version is '8.7'\" >&2; exit 255; fi\n";
  if (accept_after_rewrite)
    f << "exec " << kToolkitPtxas << " \"$@\"\n";
  else
    f << "echo \"ptxas $last, line 40; error   : Feature 'x' requires PTX ISA .version 9.0 or later\" >&2; exit 255\n";
  f.close();
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

}  // namespace

// ---- Interleaving ----

TEST(CompareOrder, ABBAKeepsLinearDriftBalanced) {
  EXPECT_EQ(compare::interleave_order(8), (std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0}));
  // Positions of A and B sum to the same total when the count is a multiple of 4: a linear
  // drift in time adds the same amount to both sides.
  for (int count : {4, 8, 20}) {
    auto o = compare::interleave_order(count);
    long sa = 0, sb = 0;
    for (int i = 0; i < count; ++i) (o[std::size_t(i)] == 0 ? sa : sb) += i;
    EXPECT_EQ(sa, sb) << count;
    EXPECT_EQ(std::count(o.begin(), o.end(), 0), count / 2);
  }
}

// ---- Arithmetic with known answers ----

TEST(CompareDecision, BreakEvenIsExtraColdOverWarmSaving) {
  auto in = compare::decision_input(jit_pairs(), around(1.0, 0.001), around(0.8, 0.001), true, "sm_90", 1.0, {0.02, 0.0});
  ASSERT_EQ(in.cold.size(), 3u);
  const auto& cold = in.cold[1];
  EXPECT_EQ(cold.mode, CacheMode::cold);
  EXPECT_NEAR(cold.delta_s, 0.090, 1e-12);
  EXPECT_EQ(cold.verdict, stats::Verdict::slower);
  EXPECT_NEAR(cold.new_first_request_s, 0.2203, 1e-12);
  EXPECT_EQ(in.cold[2].verdict, stats::Verdict::no_difference);  // +0.1 ms warm: inside the 1 ms floor
  EXPECT_NEAR(in.warm.delta_s, -0.0002, 1e-12);
  EXPECT_EQ(in.warm.verdict, stats::Verdict::faster);

  decision::Decision d = decision::decide(in, profile("long-lived-server.toml"));
  EXPECT_NEAR(d.breakeven_calls, 450.0, 1e-6);  // 90 ms / 0.2 ms
  EXPECT_EQ(d.verdict, decision::ShipVerdict::ship);
  EXPECT_LE(d.breakeven_calls_optimistic, 450.0);
  EXPECT_GE(d.breakeven_calls_conservative, 450.0);
  EXPECT_EQ(decision::exit_code(d.verdict), 0);
}

TEST(CompareDecision, SamePairTwoProfilesTwoVerdicts) {
  auto in = compare::decision_input(jit_pairs(), around(1.0, 0.001), around(0.8, 0.001), true, "sm_90", 1.0, {0.02, 0.0});
  decision::Decision longlived = decision::decide(in, profile("long-lived-server.toml"));
  decision::Decision cold = decision::decide(in, profile("cold-start-heavy.toml"));
  EXPECT_EQ(longlived.verdict, decision::ShipVerdict::ship);
  // 50 calls × 0.2 ms = 10 ms never repays 90 ms per process.
  EXPECT_EQ(cold.verdict, decision::ShipVerdict::do_not_ship);
  EXPECT_NEAR(cold.net_cost_per_process_s, 0.090 - 50 * 0.0002, 1e-9);
  EXPECT_EQ(decision::exit_code(cold.verdict), 1);
  // Mitigation: native SASS (no JIT) turns it around.
  bool sass_ships = false;
  for (const auto& m : cold.mitigations)
    if (m.name.find("SASS") != std::string::npos) sass_ships = m.verdict_after == decision::ShipVerdict::ship;
  EXPECT_TRUE(sass_ships);
}

TEST(CompareDecision, SameKernelNoWarmDifference) {
  // Same SASS both sides warm: ±0.5 % noise inside a 2 % margin is no difference; then the only
  // effect is the JIT cost → do not ship as built, however long-lived (nothing to repay it).
  std::vector<double> a = around(1.0, 0.001), b = around(1.002, 0.001);
  auto in = compare::decision_input(jit_pairs(), a, b, true, "sm_90", 1.0, {0.02, 0.0});
  EXPECT_EQ(in.warm.verdict, stats::Verdict::no_difference);
  EXPECT_EQ(decision::decide(in, profile("long-lived-server.toml")).verdict, decision::ShipVerdict::do_not_ship);
}

TEST(CompareDecision, TheMarginsAbsolutePartIsInMillisecondsLikeTheSamples) {
  // An 18 us kernel made 4.4 us: 13.6 us per call faster. compare's default margin, 2 % and 0.5 us, is
  // {0.02, 0.0005 ms}; it was once applied to the samples in seconds (a 500 us margin), which called this
  // no difference and a faster build "never pays back" (seen on the GPU: CompareDevice, 2026-12-07).
  const auto old_ms = around(0.018, 0.00002), new_ms = around(0.0044, 0.00001);
  const auto fast = compare::decision_input(jit_pairs(), old_ms, new_ms, true, "sm_90", 1.0, {0.02, 0.0005});
  EXPECT_EQ(fast.warm.verdict, stats::Verdict::faster);
  EXPECT_NEAR(fast.warm.delta_s, -13.6e-6, 1e-7);
  // A 20 us absolute margin does hold the 13.6 us difference.
  EXPECT_EQ(compare::decision_input(jit_pairs(), old_ms, new_ms, true, "sm_90", 1.0, {0.02, 0.020}).warm.verdict,
            stats::Verdict::no_difference);
}

TEST(CompareDecision, TooFewProcessesEstimateNothingAndSaySo) {
  // 3 warm processes per side (the rule needs 5): the warm difference was never estimated. It is not a
  // measured zero: no "0 s with interval [0 s, 0 s]", and the JIT's cold cost alone does not decide.
  auto in = compare::decision_input(jit_pairs(), around(1.0, 0.001, 1), around(0.5, 0.001, 1), true, "sm_90", 1.0, {0.02, 0.0});
  EXPECT_EQ(in.warm.too_few, "3 and 3 samples; at least 5 per side needed");
  EXPECT_TRUE(in.cold[1].too_few.empty());
  const decision::Decision d = decision::decide(in, profile("long-lived-server.toml"));
  EXPECT_EQ(d.verdict, decision::ShipVerdict::inconclusive);
  EXPECT_NE(d.headline.find("too few fresh processes"), std::string::npos) << d.headline;
  EXPECT_NE(d.headline.find("warm time: 3 and 3 samples"), std::string::npos) << d.headline;
}

TEST(CompareDecision, NoiseFloorDecidesWhatCountsAsACost) {
  // A 0.4 ms cold difference: "no difference" under a 1 ms floor, "slower" under 0.1 ms.
  std::vector<compare::StartupPair> p{pair(CacheMode::cold, 0.3, 0.7)};
  EXPECT_EQ(compare::decision_input(p, around(1, 0.001), around(1, 0.001), false, "sm_90", 1.0, {0.02, 0.0}).cold[0].verdict,
            stats::Verdict::no_difference);
  EXPECT_EQ(compare::decision_input(p, around(1, 0.001), around(1, 0.001), false, "sm_90", 0.1, {0.02, 0.0}).cold[0].verdict,
            stats::Verdict::slower);
}

TEST(CompareDecision, MissingEvidenceIsAnError) {
  EXPECT_THROW(compare::decision_input({}, {1.0}, {1.0}, false, "sm_90", 1, {0.02, 0.0}), Error);
  EXPECT_THROW(compare::decision_input(jit_pairs(), {}, {1.0}, false, "sm_90", 1, {0.02, 0.0}), Error);
  EXPECT_EQ(decision::exit_code(decision::ShipVerdict::inconclusive), 1);
  EXPECT_EQ(decision::exit_code(decision::ShipVerdict::no_difference), 0);
}

// ---- Toolchain ----

TEST(CompareToolchain, PtxasMessagesAndRewrite) {
  EXPECT_EQ(build::ptxas_max_ptx_version("ptxas a.ptx, line 1; fatal   : Unsupported .version 9.0; current version is '8.7'"),
            std::optional<std::string>("8.7"));
  EXPECT_FALSE(build::ptxas_max_ptx_version("ptxas fatal : something else"));
  EXPECT_EQ(build::rewrite_ptx_version("//\n.version 9.0\n.target sm_90\n", "8.7"), "//\n.version 8.7\n.target sm_90\n");
  EXPECT_THROW(build::rewrite_ptx_version(".target sm_90\n", "8.7"), Error);
  EXPECT_EQ(build::release_line("Cuda compilation tools, release 12.8, V12.8.93\nBuild x"), "release 12.8, V12.8.93");
}

TEST(CompareToolchain, MissingPtxasIsAClearError) {
  build::Manifest m = build::load_manifest(kGood);
  test::TempDir t;
  build::BuildRecipe r;
  r.ptxas = "/nonexistent/ptxas-12.8";
  try {
    build::build_with_recipe(m, r, "sm_90", t.path, nullptr);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ptxas-12.8' does not exist"), std::string::npos) << e.what();
  }
  r.mode = build::ImageMode::ptx;
  r.ptxas = kToolkitPtxas;
  EXPECT_THROW(build::build_with_recipe(m, r, "sm_90", t.path, nullptr), Error);  // ptxas + PTX-only: impossible
}

TEST(CompareToolchain, ToolkitPtxasBuildsACubin) {
  if (!fs::exists(kToolkitPtxas)) GTEST_SKIP() << "no " << kToolkitPtxas;
  build::Manifest m = build::load_manifest(kGood);
  test::TempDir t;
  build::BuildRecipe r;
  r.ptxas = kToolkitPtxas;
  build::BuildProvenance pv;
  build::BuiltCandidate b = build::build_with_recipe(m, r, "sm_90", t.path, &pv);
  artifact::Artifact a = artifact::parse_artifact(b.image_path.string());
  EXPECT_EQ(a.container, artifact::ContainerKind::cubin);
  ASSERT_EQ(a.entries.size(), 1u);
  EXPECT_EQ(a.entries[0].arch.str(), "sm_90");
  EXPECT_EQ(a.entries[0].kernels.size(), 2u);  // f32 and bf16 instantiations
  ASSERT_TRUE(a.entries[0].compiler.has_value());
  EXPECT_EQ(a.entries[0].compiler->tool, "ptxas");
  ASSERT_EQ(pv.tools.size(), 2u);
  EXPECT_NE(pv.tools[1]["version"].get<std::string>().find("release 13."), std::string::npos);
  EXPECT_FALSE(pv.ptx_version_rewrite.has_value());
  EXPECT_EQ(artifact::select_for_arch(a, artifact::Arch::parse("sm_90")).path, artifact::LoadPath::native_sass);
}

TEST(CompareToolchain, OlderPtxasGetsTheVersionItAccepts) {
  if (!fs::exists(kToolkitPtxas)) GTEST_SKIP() << "no " << kToolkitPtxas;
  build::Manifest m = build::load_manifest(kGood);
  test::TempDir t;
  build::BuildRecipe r;
  r.ptxas = fake_old_ptxas(t.path, true).string();
  build::BuildProvenance pv;
  build::BuiltCandidate b = build::build_with_recipe(m, r, "sm_90", t.path / "out", &pv);
  ASSERT_TRUE(pv.ptx_version_rewrite.has_value());
  EXPECT_NE(pv.ptx_version_rewrite->find("-> 8.7"), std::string::npos) << *pv.ptx_version_rewrite;
  EXPECT_NE(b.compiler.find("release 12.8"), std::string::npos) << b.compiler;
  EXPECT_EQ(artifact::parse_artifact(b.image_path.string()).entries.at(0).kernels.size(), 2u);

  // When the lowered PTX uses something the old ptxas does not know, the error says so.
  build::BuildRecipe bad;
  fs::create_directories(t.path / "x");
  bad.ptxas = fake_old_ptxas(t.path / "x", false).string();
  try {
    build::build_with_recipe(m, bad, "sm_90", t.path / "out2", nullptr);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::nvrtc);
    EXPECT_NE(std::string(e.what()).find("even with .version lowered from"), std::string::npos) << e.what();
  }
}

TEST(CompareToolchain, NvccBuildsTheManifestsInstantiations) {
  if (!fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no nvcc";
  build::Manifest m = build::load_manifest(kGood);
  test::TempDir t;
  build::BuildRecipe r;
  r.nvcc = "default";
  build::BuildProvenance pv;
  build::BuiltCandidate b = build::build_with_recipe(m, r, "sm_90", t.path, &pv);
  artifact::Artifact a = artifact::parse_artifact(b.image_path.string());
  EXPECT_EQ(a.entries.at(0).kernels.size(), 2u);
  EXPECT_EQ(pv.tools.at(0)["tool"], "nvcc");
  EXPECT_EQ(b.lowered.size(), 2u);
}

TEST(CompareToolchain, TritonDiscoveryReportsWhereItLooked) {
  std::vector<std::string> tried;
  auto p = build::find_triton_ptxas(&tried);
  EXPECT_FALSE(tried.empty());
  if (!p) {
    try {
      build::resolve_tool("ptxas", "triton", nullptr);
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("looked at"), std::string::npos);
    }
  }
}

// ---- CLI: bad input → exit 2, nothing written; static phases → exit 3 ----

TEST(CompareCli, MissingInput) {
  test::TempDir t;
  auto r = kq("compare /nonexistent/old.cubin /nonexistent/new.cubin --no-gpu --out " + test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("old: /nonexistent/old.cubin: no such file or folder"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(t.path / "o"));
}

TEST(CompareCli, BothSidesTheSameBuild) {
  test::TempDir t;
  auto r = kq("compare " + test::quote(kGood) + " --no-gpu --out " + test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("same build"), std::string::npos) << r.output;
  r = kq("compare " + test::quote(kGood) + " " + test::quote(kGood) + " --no-gpu --out " + test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(t.path / "o"));
}

TEST(CompareCli, BadProfile) {
  test::TempDir t;
  write_file_atomic(t.path / "bad.toml", "calls_per_proces = 10\n");
  auto r = kq("compare " + test::quote(kGood) + " --new-mode ptx --no-gpu --profile " + test::quote(t.path / "bad.toml") +
              " --out " + test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("calls_per_proces"), std::string::npos) << r.output;
  r = kq("compare " + test::quote(kGood) + " --new-mode ptx --no-gpu --profile /nonexistent.toml --out " +
         test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(t.path / "o" / "results.json"));
}

TEST(CompareCli, BadOptions) {
  test::TempDir t;
  const std::string out = " --no-gpu --out " + test::quote(t.path / "o");
  EXPECT_EQ(kq("compare " + test::quote(kGood) + " --new-mode jit" + out).exit_code, 2);
  EXPECT_EQ(kq("compare " + test::quote(kGood) + " --new-mode ptx --modes cold,tepid" + out).exit_code, 2);
  EXPECT_EQ(kq("compare " + test::quote(kGood) + " --new-mode ptx --decision-shape 12345" + out).exit_code, 2);
  auto r = kq("compare " + test::quote(kGood) + " --new-ptxas /nonexistent/ptxas" + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/ptxas' does not exist"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(t.path / "o" / "results.json"));
}

TEST(CompareCli, FailedBuildLeavesPreviousResultsUntouched) {
  test::TempDir t;
  fs::create_directories(t.path / "o");
  write_file_atomic(t.path / "o" / "results.json", "{\"previous\": true}\n");
  fs::path failing = t.path / "ptxas-fails";
  {
    std::ofstream f(failing);
    f << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'release 0.0, V0.0.0'; exit 0; fi\necho 'ptxas: out of luck' >&2\nexit 1\n";
  }
  fs::permissions(failing, fs::perms::owner_all);
  auto r = kq("compare " + test::quote(kGood) + " --new-ptxas " + test::quote(failing) + " --no-gpu --out " +
              test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("out of luck"), std::string::npos) << r.output;
  EXPECT_EQ(read_text_file(t.path / "o" / "results.json"), "{\"previous\": true}\n");
  EXPECT_FALSE(fs::exists(t.path / "o" / "memo.md"));
  for (const auto& e : fs::directory_iterator(t.path / "o"))
    EXPECT_EQ(e.path().filename().string().find("partial"), std::string::npos) << e.path();
}

TEST(CompareCli, PtxOnlyVersusSassStaticPhases) {
  test::TempDir t;
  auto r = kq("compare " + test::quote(kGood) + " --old-mode sass --new-mode ptx --no-gpu --out " + test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  json j = read_json(t.path / "o" / "results.json");
  EXPECT_EQ(j["schema"], "kqual.compare/1");
  EXPECT_EQ(j["sides"]["old"]["loading_path"], "native_sass");
  EXPECT_EQ(j["sides"]["new"]["loading_path"], "ptx_jit");
  EXPECT_EQ(j["verdict"]["decision"], "incomplete");
  EXPECT_EQ(j["not_run"].size(), 4u);
  std::string memo = read_text_file(t.path / "o" / "memo.md");
  EXPECT_NE(memo.find("Not run"), std::string::npos);
  EXPECT_NE(memo.find("ptx_jit"), std::string::npos);
}

TEST(CompareCli, ToolkitPtxasAgainstNvrtcStaticPhases) {
  if (!fs::exists(kToolkitPtxas)) GTEST_SKIP() << "no " << kToolkitPtxas;
  test::TempDir t;
  auto r = kq("--json compare " + test::quote(kGood) + " --new-ptxas " + kToolkitPtxas + " --quiet --no-gpu --out " +
              test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  json j = read_json(t.path / "o" / "results.json");
  EXPECT_EQ(j["sides"]["new"]["loading_path"], "native_sass");
  EXPECT_EQ(j["sides"]["new"]["build"]["tools"][1]["tool"], "ptxas");
  EXPECT_EQ(j["artifact_diff"]["kernels"].size(), 2u);
}

TEST(CompareCli, ArtifactsNeedNoManifestForStaticPhases) {
  test::TempDir t;
  // Build two artifacts first (static run keeps none), then compare the files.
  build::Manifest m = build::load_manifest(kGood);
  build::BuildRecipe sass, ptx;
  ptx.mode = build::ImageMode::ptx;
  auto a = build::build_with_recipe(m, sass, "sm_90", t.path, nullptr);
  auto b = build::build_with_recipe(m, ptx, "sm_90", t.path, nullptr);
  auto r = kq("compare " + test::quote(a.image_path) + " " + test::quote(b.image_path) + " --no-gpu --out " +
              test::quote(t.path / "o"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(read_json(t.path / "o" / "results.json")["sides"]["new"]["kind"], "artifact");
  // Build options make no sense for a prebuilt artifact.
  r = kq("compare " + test::quote(a.image_path) + " " + test::quote(b.image_path) + " --new-mode ptx --no-gpu --out " +
         test::quote(t.path / "p"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // Byte-identical artifacts: nothing to compare.
  fs::copy_file(a.image_path, t.path / "copy.cubin");
  r = kq("compare " + test::quote(a.image_path) + " " + test::quote(t.path / "copy.cubin") + " --no-gpu --out " +
         test::quote(t.path / "q"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(CompareFixtures, SlowOldSideIsAValidCandidate) {
  build::Manifest m = build::load_manifest(kRoot / "tests/pipeline/compare/fixtures/few_blocks");
  EXPECT_EQ(m.contract, "residual_add_relu");
  EXPECT_TRUE(fs::exists(m.source));
}
