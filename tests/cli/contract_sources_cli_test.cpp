// The user picks the judge, end to end through the kqual binary without a GPU (`check`/`bench
// --no-gpu` still write results.json with the static phases): a contract beside the candidate is
// never found by name, a contract file supplied with the candidate needs --allow-candidate-contract
// and is then named with its SHA-256, --contracts and $KQUAL_CONTRACTS add the user's folders, and
// baselines never come from beside the candidate.
#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>
#include <regex>
#include <string>

#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/sha256.hpp"
#include "fixture_util.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

// A copy of a bundled candidate whose manifest names `value` instead of `contract`.
fs::path copy_candidate(const std::string& bundled, const std::string& contract, const fs::path& to, const std::string& value) {
  const fs::path from = test::repo_root() / "candidates" / bundled;
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  write_file_atomic(to / "kqual.toml", std::regex_replace(read_text_file(from / "kqual.toml"),
                                                          std::regex("contract = \"" + contract + "\""), "contract = \"" + value + "\""));
  return to;
}

json results_in(const fs::path& out) { return json::parse(read_text_file(out / "results.json")); }

TEST(ContractSourcesCli, AContractBesideTheCandidateDoesNotJudgeIt) {
  ScratchDir tmp("kqual-sources-cli");
  const fs::path cand = tmp.path() / "good";
  fs::copy(test::repo_root() / "candidates/rmsnorm/good", cand, fs::copy_options::recursive);
  const std::string loose =
      std::regex_replace(read_text_file(test::repo_root() / "contracts/rmsnorm/contract.toml"), std::regex("c = 8,"), "c = 8000,");
  write_file_atomic(cand / "contract.toml", loose);
  write_file_atomic(cand / "rmsnorm.toml", loose);
  for (const char* f : {"reference.py", "reference.cu"}) fs::copy_file(test::repo_root() / "contracts/rmsnorm" / f, cand / f);
  auto r = test::run(test::kq() + " check --no-gpu " + test::quote(cand) + " --out " + test::quote(tmp.path() / "out"));
  ASSERT_EQ(r.exit_code, 3) << r.output;
  const json src = results_in(tmp.path() / "out")["contract"]["source"];
  const fs::path project = test::repo_root() / "contracts/rmsnorm/contract.toml";
  EXPECT_EQ(src.value("file", ""), fs::weakly_canonical(project).string()) << src.dump(1);
  EXPECT_EQ(src.value("origin", ""), "project");
  EXPECT_EQ(src.value("sha256", ""), sha256_file_hex(project.string()));
  EXPECT_FALSE(src.value("supplied_with_candidate", true));
}

TEST(ContractSourcesCli, AContractFileWithTheCandidateNeedsTheOptionAndIsNamed) {
  ScratchDir tmp("kqual-sources-cli");
  const fs::path cand = copy_candidate("residual_add_relu/good", "residual_add_relu", tmp.path() / "cand", "own/contract.toml");
  const fs::path file = test::renamed_declared_contract(cand / "own", "cli_own_relu");
  const std::string cmd = test::kq() + " check --no-gpu " + test::quote(cand) + " --out " + test::quote(tmp.path() / "out");
  auto refused = test::run(cmd);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_TRUE(test::contains(refused.output, (cand / "kqual.toml").string())) << refused.output;
  EXPECT_TRUE(test::contains(refused.output, "candidate.contract")) << refused.output;
  EXPECT_TRUE(test::contains(refused.output, file.string())) << refused.output;
  EXPECT_TRUE(test::contains(refused.output, "--allow-candidate-contract")) << refused.output;
  EXPECT_FALSE(fs::exists(tmp.path() / "out/results.json"));

  auto allowed = test::run(cmd + " --allow-candidate-contract");
  ASSERT_EQ(allowed.exit_code, 3) << allowed.output;
  const json src = results_in(tmp.path() / "out")["contract"]["source"];
  EXPECT_EQ(src.value("origin", ""), "candidate");
  EXPECT_TRUE(src.value("supplied_with_candidate", false));
  EXPECT_EQ(src.value("file", ""), file.string());
  EXPECT_EQ(src.value("sha256", ""), sha256_file_hex(file.string()));
  const std::string memo = read_text_file(tmp.path() / "out/memo.md");
  EXPECT_TRUE(test::contains(memo, "Contract supplied with the candidate")) << memo;
  EXPECT_TRUE(test::contains(memo, file.string())) << memo;
  EXPECT_TRUE(test::contains(memo, sha256_file_hex(file.string()))) << memo;
}

TEST(ContractSourcesCli, TheUsersFoldersFromTheOptionAndTheEnvironment) {
  ScratchDir tmp("kqual-sources-cli");
  const fs::path file = test::renamed_declared_contract(tmp.path() / "mine/cli_user_relu", "cli_user_relu");
  const fs::path cand = copy_candidate("residual_add_relu/good", "residual_add_relu", tmp.path() / "cand", "cli_user_relu");
  const std::string check = " check --no-gpu " + test::quote(cand) + " --out " + test::quote(tmp.path() / "out");
  auto unknown = test::run(test::kq() + check);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_TRUE(test::contains(unknown.output, "unknown contract 'cli_user_relu'")) << unknown.output;

  auto opt = test::run(test::kq() + check + " --contracts " + test::quote(tmp.path() / "mine"));
  ASSERT_EQ(opt.exit_code, 3) << opt.output;
  EXPECT_EQ(results_in(tmp.path() / "out")["contract"]["source"].value("origin", ""), "user");
  EXPECT_EQ(results_in(tmp.path() / "out")["contract"]["source"].value("file", ""), file.string());

  fs::remove_all(tmp.path() / "out");
  auto env = test::run("KQUAL_CONTRACTS=" + test::quote(tmp.path() / "mine") + " " + test::kq() + check);
  ASSERT_EQ(env.exit_code, 3) << env.output;
  EXPECT_EQ(results_in(tmp.path() / "out")["contract"]["source"].value("file", ""), file.string());
}

TEST(ContractSourcesCli, BaselinesNeverComeFromBesideTheCandidate) {
  ScratchDir tmp("kqual-sources-cli");
  const fs::path cand = copy_candidate("residual_add_relu/good", "residual_add_relu", tmp.path() / "cand", "residual_add_relu");
  // A baselines/ folder above the candidate, as a candidate's tree could bring one.
  const fs::path planted = tmp.path() / "baselines/residual_add_relu/planted";
  fs::create_directories(planted.parent_path());
  fs::copy(test::repo_root() / "baselines/residual_add_relu/eager", planted, fs::copy_options::recursive);
  auto planted_in = [&](const json& res) {
    for (const auto& b : res["baselines"])
      if (test::contains(b.value("manifest", ""), planted.string())) return true;
    return false;
  };
  const std::string bench = test::kq() + " bench --no-gpu " + test::quote(cand) + " --out " + test::quote(tmp.path() / "out");
  auto r = test::run(bench);
  ASSERT_EQ(r.exit_code, 3) << r.output;
  const json res = results_in(tmp.path() / "out");
  EXPECT_FALSE(planted_in(res)) << res["baselines"].dump(1);
  EXPECT_FALSE(res["baselines"].empty()) << "the project's baselines were not found";

  auto chosen = test::run(bench + " --baselines " + test::quote(tmp.path() / "baselines"));
  ASSERT_EQ(chosen.exit_code, 3) << chosen.output;
  EXPECT_TRUE(planted_in(results_in(tmp.path() / "out"))) << "--baselines DIR was not used";
}

// `contracts --verify` says each declared contract's outcome on stderr as it ends (bench/verify-imports
// keeps those of a run it had to stop), and the reason of a failure on the same line.
TEST(ContractSourcesCli, VerifySaysEachContractAsItEnds) {
  ScratchDir tmp("kqual-verify-progress");
  const fs::path mine = tmp.path() / "mine";
  for (const char* name : {"ok", "broken"}) {
    fs::create_directories(mine / name);
    fs::copy(test::repo_root() / "contracts/gelu", mine / name, fs::copy_options::recursive);
    write_file_atomic(mine / name / "contract.toml", std::regex_replace(read_text_file(mine / name / "contract.toml"),
                                                                         std::regex("name = \"gelu\""), std::string("name = \"gelu_") + name + "\""));
  }
  write_file_atomic(mine / "broken/reference.py", "def gelu(x):\n    raise ValueError('kqual-test: no reference here')\n");
  const auto r = test::run(test::kq() + " contracts --verify --dir " + test::quote(mine));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  if (r.output.find("NumPy") != std::string::npos && r.output.find("verified") == std::string::npos)
    GTEST_SKIP() << "no Python 3 with NumPy here: " << r.output;
  EXPECT_NE(r.output.find("kqual contracts: verified " + (mine / "ok/contract.toml").string() + " in "), std::string::npos) << r.output;
  const std::size_t failed = r.output.find("kqual contracts: failed " + (mine / "broken/contract.toml").string() + " in ");
  ASSERT_NE(failed, std::string::npos) << r.output;
  const std::string line = r.output.substr(failed, r.output.find('\n', failed) - failed);
  EXPECT_NE(line.find("kqual-test: no reference here"), std::string::npos) << line;
  // --quiet: no progress lines.
  const auto q = test::run(test::kq() + " contracts --quiet --verify --dir " + test::quote(mine));
  EXPECT_EQ(q.output.find("kqual contracts: verified"), std::string::npos) << q.output;
}

// A contract whose reference is PyTorch's, verified where PyTorch is not installed: not run here (exit 3,
// "NOT VERIFIED HERE"), never INVALID (issue 54); a contract that is wrong beside it still makes it exit 2.
TEST(ContractSourcesCli, AContractNeedingPyTorchIsNotVerifiedHereNotInvalid) {
  ScratchDir tmp("kqual-verify-torch");
  const fs::path mine = tmp.path() / "mine";
  fs::create_directories(mine / "gelu_torch");
  fs::copy(test::repo_root() / "tests/contract/fixtures/declared/gelu_torch", mine / "gelu_torch", fs::copy_options::recursive);
  const auto r = test::run(test::kq() + " contracts --verify --dir " + test::quote(mine));
  if (r.output.find("needs PyTorch") == std::string::npos) GTEST_SKIP() << "PyTorch (or no Python) here: " << r.output;
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("NOT VERIFIED HERE"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("INVALID"), std::string::npos) << r.output;
  fs::create_directories(mine / "broken");
  std::ofstream(mine / "broken/contract.toml") << "name = \"broken\"\n[tensors\n";
  const auto b = test::run(test::kq() + " contracts --verify --dir " + test::quote(mine));
  EXPECT_EQ(b.exit_code, 2) << b.output;
}

TEST(ContractSourcesCli, AListedContractSaysTheWordAManifestNamesItBy) {
  // A folder silu/ whose contract calls itself swish: found by its folder, and the listing says so.
  ScratchDir tmp("kqual-named-as");
  const fs::path mine = tmp.path() / "mine";
  fs::create_directories(mine / "silu");
  fs::copy(test::repo_root() / "contracts/gelu", mine / "silu", fs::copy_options::recursive);
  write_file_atomic(mine / "silu/contract.toml", std::regex_replace(read_text_file(mine / "silu/contract.toml"),
                                                                    std::regex("name = \"gelu\""), std::string("name = \"swish\"")));
  const auto r = test::run(test::kq() + " contracts --dir " + test::quote(mine));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a manifest names it contract = \"silu\" (its folder; the name it gives itself, swish, finds nothing)"),
            std::string::npos)
      << r.output;
  const auto j = test::run(test::kq() + " contracts --json --dir " + test::quote(mine));
  EXPECT_NE(j.output.find("\"named_as\": \"silu\""), std::string::npos) << j.output;
}


TEST(ContractSourcesCli, ContractsListsTheCasesAContractGenerates) {
  const auto all = test::run(test::kq() + " contracts --cases residual_add_relu 2>/dev/null");
  const auto f32 = test::run(test::kq() + " contracts --cases residual_add_relu --dtype f32 --family normal 2>/dev/null");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_EQ(f32.exit_code, 0) << f32.output;
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = f32.output.find('\n', at)) != std::string::npos; ++at) ++lines;
  EXPECT_GE(lines, 3u) << f32.output;
  EXPECT_EQ(f32.output.find("bf16"), std::string::npos) << f32.output;
  EXPECT_NE(all.output.find("bf16"), std::string::npos) << all.output;
  EXPECT_LT(f32.output.size(), all.output.size());
  const auto j = test::run(test::kq() + " contracts --json --cases residual_add_relu --dtype f32");
  EXPECT_NE(j.output.find("\"family\": \"normal\""), std::string::npos) << j.output;
  const auto fam = test::run(test::kq() + " contracts --cases residual_add_relu --family nope");
  EXPECT_EQ(fam.exit_code, 2) << fam.output;
  EXPECT_NE(fam.output.find("--family nope: contract residual_add_relu has families"), std::string::npos) << fam.output;
  EXPECT_EQ(test::run(test::kq() + " contracts --dtype f32").exit_code, 2);
  EXPECT_EQ(test::run(test::kq() + " contracts --cases no_such_contract").exit_code, 2);
}


TEST(ContractSourcesCli, JudgeJudgesOutputsComputedElsewhereOnTheCpu) {
  ScratchDir tmp("kqual-judge");
  const std::string id = "f32/n=3/normal";  // kqual contracts --cases residual_add_relu --dtype f32 lists it
  const auto in = test::run(test::kq() + " judge residual_add_relu --case " + id + " --write-inputs " + test::quote(tmp.path() / "in"));
  ASSERT_EQ(in.exit_code, 0) << in.output;
  for (const char* f : {"x.npy", "x.bin", "r.npy", "r.bin", "reference_y.npy", "reference_y.bin"}) EXPECT_TRUE(fs::exists(tmp.path() / "in" / f)) << f;
  // The reference's own bytes are right; one element changed is wrong (exit 1, the element named).
  std::string y = read_text_file(tmp.path() / "in/reference_y.bin");
  ASSERT_EQ(y.size(), 12u);
  write_file_atomic(tmp.path() / "y.bin", y);
  const auto right = test::run(test::kq() + " judge residual_add_relu --case " + id + " " + test::quote(tmp.path() / "y.bin"));
  EXPECT_EQ(right.exit_code, 0) << right.output;
  EXPECT_NE(right.output.find("y: right"), std::string::npos) << right.output;
  const float one = 7.5f;
  y.replace(4, 4, reinterpret_cast<const char*>(&one), 4);
  write_file_atomic(tmp.path() / "bad.bin", y);
  const auto wrong = test::run(test::kq() + " judge residual_add_relu --case " + id + " " + test::quote(tmp.path() / "bad.bin"));
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_NE(wrong.output.find("y[1]"), std::string::npos) << wrong.output;
  // The .npy the command wrote is read as the case's output too; a file of another size, or an unknown case, is exit 2.
  EXPECT_EQ(test::run(test::kq() + " judge residual_add_relu --case " + id + " " + test::quote(tmp.path() / "in/reference_y.npy")).exit_code, 0);
  write_file_atomic(tmp.path() / "short.bin", y.substr(0, 8));
  const auto sized = test::run(test::kq() + " judge residual_add_relu --case " + id + " " + test::quote(tmp.path() / "short.bin"));
  EXPECT_EQ(sized.exit_code, 2) << sized.output;
  EXPECT_NE(sized.output.find("8 bytes of data, output 'y' of this case has 12"), std::string::npos) << sized.output;
  EXPECT_EQ(test::run(test::kq() + " judge residual_add_relu --case no/such/case " + test::quote(tmp.path() / "y.bin")).exit_code, 2);
}


TEST(ContractSourcesCli, ALaunchWhoseArgumentsDisagreeWithTheCompiledKernelIsRefused) {
  // The kernel takes long long n; the manifest passes n:i32: the static phase names both lists (exit 2).
  ScratchDir tmp("kqual-launch-params");
  const fs::path c = tmp.path() / "cand";
  fs::copy(test::repo_root() / "candidates/residual_add_relu/good", c, fs::copy_options::recursive);
  write_file_atomic(c / "kqual.toml", std::regex_replace(read_text_file(c / "kqual.toml"), std::regex("\"n:i64\""), "\"n:i32\""));
  const auto r = test::run(test::kq() + " check " + test::quote(c) + " --no-gpu --out " + test::quote(tmp.path() / "out"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the manifest passes 4 argument(s) [x (8 B), r (8 B), y (8 B), n:i32 (4 B)], the compiled kernel takes 4 "
                          "parameter(s) of [8 B, 8 B, 8 B, 8 B] bytes"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace kqual
