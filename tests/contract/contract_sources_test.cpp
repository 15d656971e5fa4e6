// Where contracts come from (contract/declared/lookup.hpp, docs/declared-contracts.md): the user picks the
// judge, through the command's ContractLookup (no process-wide setting). A contract named by name resolves from --contracts folders, $KQUAL_CONTRACTS and the
// project's contracts/ only, never from beside the manifest; a contract file a manifest names by path
// outside those folders judges the candidate only with --allow-candidate-contract.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>

#include "kqual/build/manifest.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kSourcesRepo = test::repo_root();

class ContractSourcesTest : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("KQUAL_CONTRACTS"); }
};

// A declared contract `name` in `dir`: the bundled residual_add_relu_declared renamed (its reference beside it).
fs::path write_relu_contract(const fs::path& dir, const std::string& name) {
  fs::create_directories(dir);
  const fs::path from = kSourcesRepo / "contracts/residual_add_relu_declared";
  std::string text = read_text_file(from / "contract.toml");
  text = std::regex_replace(text, std::regex("name = \"residual_add_relu_declared\""), "name = \"" + name + "\"");
  write_file_atomic(dir / "contract.toml", text);
  fs::copy_file(from / "reference.py", dir / "reference.py", fs::copy_options::overwrite_existing);
  return dir / "contract.toml";
}

// A copy of the bundled residual_add_relu good candidate whose manifest names `contract_value`.
fs::path write_relu_candidate(const fs::path& dir, const std::string& contract_value) {
  fs::create_directories(dir);
  const fs::path from = kSourcesRepo / "candidates/residual_add_relu/good";
  fs::copy(from, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::string text = read_text_file(from / "kqual.toml");
  text = std::regex_replace(text, std::regex("contract = \"residual_add_relu\""), "contract = \"" + contract_value + "\"");
  write_file_atomic(dir / "kqual.toml", text);
  return dir;
}

TEST_F(ContractSourcesTest, ANameNeverResolvesBesideTheManifest) {
  // The reproduced attack: the rmsnorm good candidate copied with a contract.toml (and rmsnorm.toml)
  // beside it declaring rmsnorm with tolerances 1000 times looser.
  ScratchDir tmp("kqual-sources");
  const fs::path cand = tmp.path() / "good";
  fs::copy(kSourcesRepo / "candidates/rmsnorm/good", cand, fs::copy_options::recursive);
  std::string loose = read_text_file(kSourcesRepo / "contracts/rmsnorm/contract.toml");
  loose = std::regex_replace(loose, std::regex("c = 8,"), "c = 8000,");
  ASSERT_NE(loose.find("c = 8000,"), std::string::npos);
  write_file_atomic(cand / "contract.toml", loose);
  write_file_atomic(cand / "rmsnorm.toml", loose);
  for (const char* f : {"reference.py", "reference.cu"}) fs::copy_file(kSourcesRepo / "contracts/rmsnorm" / f, cand / f);
  fs::create_directories(cand / "contracts/rmsnorm");
  write_file_atomic(cand / "contracts/rmsnorm/contract.toml", loose);

  const build::Manifest m = build::load_manifest(cand);
  EXPECT_EQ(m.contract, "rmsnorm");
  const ContractLookup lookup;
  const Contract& c = lookup.resolve("rmsnorm", cand);
  EXPECT_EQ(declared_file(c), fs::weakly_canonical(kSourcesRepo / "contracts/rmsnorm/contract.toml"));
  const ContractProvenance p = lookup.provenance(c);
  EXPECT_EQ(p.origin, ContractOrigin::project);
  EXPECT_EQ(p.sha256, sha256_file_hex((kSourcesRepo / "contracts/rmsnorm/contract.toml").string()));
}

TEST_F(ContractSourcesTest, AContractFileWithTheCandidateIsRefusedWithoutTheOption) {
  ScratchDir tmp("kqual-sources");
  const fs::path file = write_relu_contract(tmp.path() / "cand/mine", "srcs_supplied_relu");
  const fs::path cand = write_relu_candidate(tmp.path() / "cand", "mine/contract.toml");
  try {
    (void)build::load_manifest(cand);
    FAIL() << "a contract supplied with the candidate was accepted without --allow-candidate-contract";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(what.find((cand / "kqual.toml").string()), std::string::npos) << what;  // the manifest
    EXPECT_NE(what.find("candidate.contract"), std::string::npos) << what;              // the key
    EXPECT_NE(what.find(fs::weakly_canonical(file).string()), std::string::npos) << what;  // the path
    EXPECT_NE(what.find("--allow-candidate-contract"), std::string::npos) << what;      // what allows it
  }
  EXPECT_TRUE(registered_contract_file("srcs_supplied_relu").empty()) << "refused, yet registered";

  const ContractLookup allowed(ContractSources{{}, true});
  const build::Manifest m = build::load_manifest(cand, allowed);
  EXPECT_EQ(m.contract, "srcs_supplied_relu");
  const ContractProvenance p = allowed.provenance(find_contract(m.contract));
  EXPECT_EQ(p.origin, ContractOrigin::candidate);
  EXPECT_EQ(p.file, fs::weakly_canonical(file));
  EXPECT_EQ(p.sha256, sha256_file_hex(file.string()));

  // Accepted for that manifest, the file still does not answer to its name for another one, even
  // through the lookup that allowed it.
  const fs::path other = write_relu_candidate(tmp.path() / "other", "srcs_supplied_relu");
  EXPECT_THROW((void)build::load_manifest(other), Error);
  EXPECT_THROW((void)build::load_manifest(other, allowed), Error);
}

TEST_F(ContractSourcesTest, UserFoldersFromTheOptionAndTheEnvironment) {
  ScratchDir tmp("kqual-sources");
  write_relu_contract(tmp.path() / "opt/srcs_opt_relu", "srcs_opt_relu");
  write_relu_contract(tmp.path() / "env/srcs_env_relu", "srcs_env_relu");
  const fs::path a = write_relu_candidate(tmp.path() / "a", "srcs_opt_relu");
  const fs::path b = write_relu_candidate(tmp.path() / "b", "srcs_env_relu");
  EXPECT_THROW((void)build::load_manifest(a), Error);  // not in any folder the user named

  const ContractLookup opt(ContractSources{{tmp.path() / "opt"}, false});
  EXPECT_EQ(build::load_manifest(a, opt).contract, "srcs_opt_relu");
  EXPECT_EQ(opt.provenance(find_contract("srcs_opt_relu")).origin, ContractOrigin::user);
  EXPECT_THROW((void)build::load_manifest(b, opt), Error);

  ::setenv("KQUAL_CONTRACTS", ("/nonexistent:" + (tmp.path() / "env").string()).c_str(), 1);
  EXPECT_EQ(build::load_manifest(b, opt).contract, "srcs_env_relu");
  EXPECT_EQ(opt.provenance(find_contract("srcs_env_relu")).origin, ContractOrigin::user);
  const std::vector<ContractRoot> roots = opt.roots();
  ASSERT_GE(roots.size(), 3u);
  EXPECT_EQ(roots[0].dir, fs::weakly_canonical(tmp.path() / "opt"));  // --contracts first
  EXPECT_EQ(roots.back().origin, ContractOrigin::project);            // the project's last
}

TEST_F(ContractSourcesTest, APathIntoAUserOrProjectFolderIsNotSuppliedWithTheCandidate) {
  ScratchDir tmp("kqual-sources");
  const fs::path file = write_relu_contract(tmp.path() / "mine/srcs_path_relu", "srcs_path_relu");
  const fs::path cand = write_relu_candidate(tmp.path() / "cand", file.string());
  EXPECT_THROW((void)build::load_manifest(cand), Error);
  const ContractLookup mine(ContractSources{{tmp.path() / "mine"}, false});
  EXPECT_EQ(build::load_manifest(cand, mine).contract, "srcs_path_relu");
  EXPECT_EQ(mine.origin_of(file), ContractOrigin::user);

  // The project's own contracts by path (as the declared cross-check does) are the project's.
  const ContractLookup plain;
  EXPECT_EQ(plain.origin_of(kSourcesRepo / "contracts/softmax_declared/contract.toml"), ContractOrigin::project);
  EXPECT_EQ(plain.origin_of(cand / "kqual.toml"), ContractOrigin::candidate);
  EXPECT_EQ(plain.origin_of(file), ContractOrigin::candidate);  // another lookup's folder is not this one's
}

TEST_F(ContractSourcesTest, TheContractValueIsReadWithoutLoading) {
  ScratchDir tmp("kqual-sources");
  const fs::path cand = write_relu_candidate(tmp.path() / "cand", "mine/contract.toml");
  EXPECT_EQ(build::manifest_contract_value(cand), "mine/contract.toml");
  EXPECT_TRUE(contract_value_is_path("mine/contract.toml"));
  EXPECT_TRUE(contract_value_is_path("x.toml"));
  EXPECT_FALSE(contract_value_is_path("rmsnorm"));
  const ContractLookup lookup;
  EXPECT_EQ(lookup.locate("mine/contract.toml", cand), fs::weakly_canonical(cand / "mine/contract.toml"));
  EXPECT_TRUE(lookup.locate("residual_add_relu", cand).empty());  // built in
  EXPECT_EQ(lookup.locate("rmsnorm", cand), fs::weakly_canonical(kSourcesRepo / "contracts/rmsnorm/contract.toml"));
  EXPECT_EQ(declared_contract_name(kSourcesRepo / "contracts/rmsnorm/contract.toml"), "rmsnorm");
}

// Two commands' choices in one process (a library user judging with two sets of folders, or threads
// of one program): each lookup answers by its own, and neither changes what the other finds.
TEST_F(ContractSourcesTest, TwoLookupsInOneProcessAnswerEachByItsOwnChoices) {
  ScratchDir tmp("kqual-sources");
  write_relu_contract(tmp.path() / "first/srcs_two_relu", "srcs_two_relu");
  const fs::path cand = write_relu_candidate(tmp.path() / "cand", "srcs_two_relu");
  const ContractLookup with(ContractSources{{tmp.path() / "first"}, false});
  const ContractLookup without;
  EXPECT_EQ(build::load_manifest(cand, with).contract, "srcs_two_relu");
  // Loaded through `with`, the contract is still not found by name through `without`.
  EXPECT_TRUE(without.locate("srcs_two_relu", cand).empty());
  EXPECT_THROW((void)without.resolve("srcs_two_relu", cand), Error);
  EXPECT_THROW((void)build::load_manifest(cand, without), Error);
  EXPECT_EQ(build::load_manifest(cand, with).contract, "srcs_two_relu");  // and `with` still finds it
  EXPECT_FALSE(without.sources().allow_candidate_contract);
  ASSERT_EQ(with.sources().user_dirs.size(), 1u);
}

}  // namespace
}  // namespace kqual::contract
