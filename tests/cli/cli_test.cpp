// CLI smoke tests: the binary as a user runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/sha256.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;


TEST(Cli, HelpListsTheCommands) {
  auto r = test::run(test::kq() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* c : {"qualify", "check", "bench", "selftest"}) EXPECT_NE(r.output.find(c), std::string::npos) << c;
  EXPECT_EQ(r.output.find("worker"), std::string::npos) << "internal command shown in --help";
}

TEST(Cli, UnknownCommandIsAUsageError) {
  auto r = test::run(test::kq() + " qualifyy x");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// A word that names no command is named as such, with the commands listed (CLI11 alone said
// "A subcommand is required"); so is no command at all, and an option kqual does not have.
TEST(Cli, AWordThatNamesNoCommandIsNamedAndTheCommandsListed) {
  for (const char* args : {" frobnicate", " --json frobnicate", "", " --bogus"}) {
    auto r = test::run(test::kq() + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(test::contains(r.output, "the commands: qualify, check, bench")) << args << "\n" << r.output;
    EXPECT_FALSE(test::contains(r.output, "A subcommand is required")) << args << "\n" << r.output;
  }
  EXPECT_TRUE(test::contains(test::run(test::kq() + " frobnicate").output, "'frobnicate' is not a kqual command"));
  EXPECT_TRUE(test::contains(test::run(test::kq() + " --bogus").output, "'--bogus' is not a kqual option"));
  EXPECT_TRUE(test::contains(test::run(test::kq()).output, "no command given"));
}

// --json after the command, as --quiet: the same document as before it.
TEST(Cli, JsonAfterTheCommandAsBeforeIt) {
  const std::string before = test::run(test::kq() + " --json model amdahl --share 0.3 --kernel-speedup 2").output;
  const std::string after = test::run(test::kq() + " model amdahl --share 0.3 --kernel-speedup 2 --json").output;
  for (const std::string& out : {before, after})
    EXPECT_TRUE(test::contains(out, "\"schema\": \"kqual.model-amdahl/1\"")) << out;
  auto r = test::run(test::kq() + " contracts --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("[", 0) == 0 || r.output.rfind("{", 0) == 0, true) << r.output;
}

TEST(Cli, QualifyWithoutGpuRunsStaticPhasesAndExits3) {
  ScratchDir out("kqual-cli-test");
  auto r = test::run(test::kq() + " qualify --no-gpu " + test::quote(test::repo_root() / "candidates/residual_add_relu/good") +
                     " --out " + test::quote(out.path()));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("incomplete"), std::string::npos) << r.output;
  json res = json::parse(std::ifstream(out.path() / "results.json"));
  EXPECT_EQ(res["schema"], "kqual.qualify/1");
  EXPECT_EQ(res["verdict"]["decision"], "incomplete");
  EXPECT_EQ(res["artifact"]["image"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_NE(res["phases"]["correctness"].get<std::string>().find("not run"), std::string::npos);
  EXPECT_GE(res["contract"]["refusals_checked"].size(), 6u);
  for (const char* k : {"host", "git_revision", "command_line", "toolkit"}) EXPECT_TRUE(res["provenance"].contains(k)) << k;
  std::ifstream memo(out.path() / "memo.md");
  std::string text((std::istreambuf_iterator<char>(memo)), {});
  EXPECT_NE(text.find("INCOMPLETE"), std::string::npos);
  EXPECT_NE(text.find("## Input domain"), std::string::npos);
  EXPECT_NE(text.find("## Artifact identity"), std::string::npos);
  for (const auto& e : fs::directory_iterator(out.path()))
    EXPECT_NE(e.path().extension(), ".tmp") << "a temporary file left behind: " << e.path();
}

TEST(Cli, QualifyWithoutGpuOnAPrebuiltImageRecordsTheArtifactAndExits3) {
  ScratchDir out("kqual-cli-test");
  const fs::path cand = test::repo_root() / "candidates/residual_add_relu/prebuilt";
  auto r = test::run(test::kq() + " qualify --no-gpu --arch sm_90 " + test::quote(cand) + " --out " + test::quote(out.path()));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  json res = json::parse(std::ifstream(out.path() / "results.json"));
  EXPECT_EQ(res["verdict"]["decision"], "incomplete");
  const json& a = res["artifact"];
  EXPECT_EQ(a["compiler"], "prebuilt PTX");
  EXPECT_EQ(a["image"]["file"], (cand / "add_relu_vec.compute_80.ptx").string());
  EXPECT_EQ(a["image"]["file_sha256"], sha256_hex(read_text_file(cand / "add_relu_vec.compute_80.ptx")));
  EXPECT_EQ(a["image"]["sha256"], a["image"]["file_sha256"]);
  EXPECT_EQ(a["image"]["load_path"], "ptx_jit");
  EXPECT_EQ(a["kernels_lowered"]["add_relu_vec<float>"], "_Z12add_relu_vecIfEvPKT_S2_PS0_x");
  EXPECT_NE(res["phases"]["compile"].get<std::string>().find("nothing to compile"), std::string::npos) << res["phases"];
  EXPECT_NE(res["phases"]["correctness"].get<std::string>().find("not run"), std::string::npos);
  std::ifstream memo(out.path() / "memo.md");
  std::string text((std::istreambuf_iterator<char>(memo)), {});
  EXPECT_NE(text.find("Prebuilt image"), std::string::npos) << text;
  EXPECT_NE(text.find("kqual compiled nothing"), std::string::npos) << text;
  EXPECT_NE(text.find("JIT-compiles"), std::string::npos) << text;
}

// In `dir`, a residual_add_relu candidate: k.cu holding `source`, one launch of kernel k with `grid`
// and `args` (TOML values) in blocks of 256.
void write_candidate(const fs::path& dir, const std::string& source, const std::string& grid, const std::string& args) {
  std::ofstream(dir / "k.cu") << source;
  std::ofstream(dir / "kqual.toml") << "[candidate]\ncontract = \"residual_add_relu\"\nsource = \"k.cu\"\n"
                                       "[supports]\ndtypes = [\"f32\"]\n[[launch]]\nkernel = \"k\"\n"
                                       "grid = " + grid + "\nblock = 256\nargs = " + args + "\n";
}

// `kqual <command> --no-gpu` on the candidate in `dir`, into dir/out.
test::CommandResult run_no_gpu(const std::string& command, const fs::path& dir) {
  return test::run(test::kq() + " " + command + " --no-gpu " + test::quote(dir) + " --out " + test::quote(dir / "out"));
}

TEST(Cli, BrokenManifestIsAnInputErrorNamingFileAndKey) {
  ScratchDir dir("kqual-cli-test");
  write_candidate(dir.path(), "__global__ void k() {}\n", "\"cdiv(n,\"", "[\"x\", \"r\", \"y\"]");
  auto r = run_no_gpu("qualify", dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kqual.toml"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("launch[0].grid"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "results.json")) << "half-written results left behind";
}

TEST(Cli, CompileErrorIsAnInputError) {
  ScratchDir dir("kqual-cli-test");
  write_candidate(dir.path(), "__global__ void k(float* y) { undefined_thing(); }\n", "1", "[\"y\"]");
  auto r = run_no_gpu("check", dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("undefined_thing"), std::string::npos) << r.output;
}

TEST(Cli, SelftestWithoutGpuCompilesEverythingAndExits3) {
  auto r = test::run(test::kq() + " --json selftest --root " + test::quote(test::repo_root()));
  if (r.exit_code == 0 || r.exit_code == 1) GTEST_SKIP() << "a GPU is present (covered by the gpu suite)";
  ASSERT_EQ(r.exit_code, 3) << r.output;
  json res = json::parse(r.output.substr(r.output.find('{')));
  EXPECT_FALSE(res["device_present"].get<bool>());
  EXPECT_GE(res["candidates"].size(), 6u);
}

}  // namespace
}  // namespace kqual

namespace kqual {
namespace {

// Messages at the level the user wrote: --arch names the option and its forms (not NVRTC's
// INVALID_OPTION), and a manifest that is not TOML gives line and column under every command that
// reads it (check and screen looked for a PyTorch submission first, which said neither).
TEST(Cli, ArchAndTomlErrorsAreSaidAtTheUsersLevel) {
  const std::string cand = test::quote(test::repo_root() / "candidates/residual_add_relu/good");
  for (const std::string& cmd : {"check " + cand + " --no-gpu", "inspect " + test::quote(test::repo_root() /
                                "candidates/residual_add_relu/prebuilt/add_relu_vec.compute_80.ptx")}) {
    auto r = test::run(test::kq() + " " + cmd + " --arch banana");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(test::contains(r.output, "--arch: 'banana' is not")) << r.output;
    EXPECT_TRUE(test::contains(r.output, "sm_90")) << r.output;
    EXPECT_FALSE(test::contains(r.output, "NVRTC_ERROR")) << r.output;
  }
  ScratchDir dir("kqual-cli-toml");
  std::filesystem::create_directories(dir.path() / "c");
  std::ofstream(dir.path() / "c/kqual.toml") << "[candidate\nname = \"x\"\n";
  const std::string where = (dir.path() / "c/kqual.toml").string() + ":1:11: TOML syntax error";
  for (const std::string& cmd : {std::string("check"), std::string("qualify"), std::string("screen")}) {
    auto r = test::run(test::kq() + " " + cmd + " " + test::quote(dir.path() / "c") + " --no-gpu --out " +
                       test::quote(dir.path() / ("out-" + cmd)));
    EXPECT_TRUE(test::contains(r.output, where)) << cmd << "\n" << r.output;
    EXPECT_FALSE(test::contains(r.output, "internal error")) << cmd << "\n" << r.output;
    if (cmd != "screen") {  // screen refuses the candidate (manifest_invalid) and goes on
      EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
    }
  }
}

}  // namespace
}  // namespace kqual

namespace kqual {
namespace {

// Issue 54: `inspect libcublasLt` printed 64k lines, "incompatible" above "verdict: loads". A library is
// summarised, its verdict first; --full lists every entry.
TEST(Cli, ALibraryIsInspectedInAFewLinesVerdictFirstAndFullListsEveryEntry) {
  const std::filesystem::path lib = "/usr/local/cuda/lib64/libcublasLt.so";
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << lib << " is not here";
  const auto r = test::run(test::kq() + " inspect --quiet --arch sm_90 " + lib.string());
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  EXPECT_EQ(r.output.rfind("verdict: loads", 0), 0u) << r.output.substr(0, 2000);
  EXPECT_LT(std::count(r.output.begin(), r.output.end(), '\n'), 20) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("--full lists all"), std::string::npos) << r.output.substr(0, 2000);
  const auto full = test::run(test::kq() + " inspect --quiet --full --arch sm_90 " + lib.string());
  EXPECT_GT(std::count(full.output.begin(), full.output.end(), '\n'), 5000);
}

}  // namespace
}  // namespace kqual
