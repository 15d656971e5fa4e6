// The key of a journaled screen verdict (screen_key.hpp), without a device: every file that decides a
// verdict is in it, so an edit makes the candidate run again instead of reusing the old verdict; and
// kqual's own failures are never kept.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "kqual/core/files.hpp"
#include "kqual/core/version.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/pipeline/screen_key.hpp"
#include "screen_fixture.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

void key_append(const fs::path& f, const std::string& text) { std::ofstream(f, std::ios::app) << text; }

std::string key_read(const fs::path& f) {
  std::ifstream in(f);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

using test::verdict_of;
using test::write_text;

class ScreenKeyTest : public test::ScreenFixture {
 protected:
  ScreenKeyTest() : ScreenFixture("kqual-screen-key-test") {}
  void SetUp() override {
    for (const char* name : {"alpha", "beta"}) copy_good(name);
  }
  static std::string key_of(const fs::path& dir, const std::string& contract = "") {
    VerdictKeys k(json{{"seed", 1}}, contract, contract::ContractLookup());
    return k.key(dir);
  }
};


// The review's case: a screened candidate's kernel.cu replaced, screened again into the same --out,
// was "0 run, 1 from the journal". Now the edited candidate runs again; the other is resumed.
TEST_F(ScreenKeyTest, AnEditedKernelRunsAgainInsteadOfReusingTheJournal) {
  const ScreenOutcome first = screen(opts());
  ASSERT_EQ(first.results["run"], 2);
  EXPECT_FALSE(verdict_of(first, "beta").key.empty());
  key_append(cands_ / "beta/kernel.cu", "\n// replaced by another kernel\n");
  const ScreenOutcome again = screen(opts());
  EXPECT_EQ(again.results["run"], 1);
  EXPECT_EQ(again.results["resumed"], 1);
  EXPECT_FALSE(verdict_of(again, "beta").resumed);
  EXPECT_TRUE(verdict_of(again, "alpha").resumed);
  EXPECT_NE(verdict_of(again, "beta").key, verdict_of(first, "beta").key);
  // And a third run with nothing edited reuses both.
  const ScreenOutcome third = screen(opts());
  EXPECT_EQ(third.results["run"], 0);
}

TEST_F(ScreenKeyTest, EveryFileOfTheFolderAndOptionsAndVersionAreInTheKey) {
  const fs::path a = cands_ / "alpha";
  const std::string k0 = key_of(a);
  ASSERT_FALSE(k0.empty());
  EXPECT_EQ(key_of(a), k0);  // deterministic
  write_text(a / "helper.cuh", "#define TILE 4\n");  // a header the kernel may include
  const std::string k1 = key_of(a);
  EXPECT_NE(k1, k0);
  key_append(a / "kernel.cu", " ");
  EXPECT_NE(key_of(a), k1);
  VerdictKeys other_seed(json{{"seed", 2}}, "", contract::ContractLookup());
  EXPECT_NE(other_seed.key(a), key_of(a));
  const json parts = VerdictKeys(json::object(), "", contract::ContractLookup()).parts(a);
  EXPECT_NE(parts.at("kqual").get<std::string>().find(kVersion), std::string::npos) << parts.dump();
  EXPECT_EQ(parts.at("contract").at("built_in"), "residual_add_relu") << parts.dump();
}

// --timing: the verdict reads the contract's baselines and the profile, so their contents are in the
// key (a resumed timed screen reused speed records measured against other baselines and another
// mix); and the NVRTC that builds every candidate is keyed without --timing too.
TEST_F(ScreenKeyTest, UnderTimingTheBaselinesAndTheProfilesContentAreInTheKey) {
  const fs::path a = cands_ / "alpha";
  const fs::path bl = tmp_->path() / "bl";
  fs::create_directories(bl / "residual_add_relu");
  fs::copy(test::repo_root() / "candidates/residual_add_relu/good", bl / "residual_add_relu/mine", fs::copy_options::recursive);
  const fs::path profile = tmp_->path() / "p.toml";
  write_text(profile, "name = \"p\"\n[[shape]]\nshape = \"n=4096\"\ncalls = 1\n");
  auto timed_key = [&] {
    VerdictKeys k(json{{"seed", 1}}, "", contract::ContractLookup());
    k.time_against({bl}, profile);
    return k.key(a);
  };
  const std::string k0 = timed_key();
  ASSERT_FALSE(k0.empty());
  EXPECT_EQ(timed_key(), k0);
  EXPECT_NE(k0, key_of(a)) << "the timing inputs are in the key only under --timing";
  key_append(bl / "residual_add_relu/mine/kernel.cu", "\n// another baseline\n");
  const std::string k1 = timed_key();
  EXPECT_NE(k1, k0) << "a baseline's content changed";
  write_text(profile, "name = \"p\"\n[[shape]]\nshape = \"n=4096\"\ncalls = 2\n");
  EXPECT_NE(timed_key(), k1) << "the profile's content changed, not its path";
  EXPECT_FALSE(VerdictKeys(json::object(), "", contract::ContractLookup()).parts(a).at("nvrtc").get<std::string>().empty());
}

// A source the manifest names outside its folder (a kernel shared by several candidates) is keyed too.
TEST_F(ScreenKeyTest, ASourceOutsideTheFolderIsInTheKey) {
  const fs::path a = cands_ / "alpha";
  fs::rename(a / "kernel.cu", cands_ / "shared.cu");
  std::string toml = key_read(a / "kqual.toml");
  toml.replace(toml.find("source = \"kernel.cu\""), std::string("source = \"kernel.cu\"").size(), "source = \"../shared.cu\"");
  write_text(a / "kqual.toml", toml);
  const std::string k0 = key_of(a);
  key_append(cands_ / "shared.cu", "\n// edited\n");
  EXPECT_NE(key_of(a), k0);
}

// A declared contract: its contract.toml and its reference.py decide the verdict.
TEST_F(ScreenKeyTest, TheDeclaredContractAndItsReferenceAreInTheKey) {
  const fs::path roots = tmp_->path() / "contracts";
  fs::create_directories(roots);
  fs::copy(test::repo_root() / "contracts/rmsnorm", roots / "keytest_rmsnorm", fs::copy_options::recursive);
  const fs::path ct = roots / "keytest_rmsnorm/contract.toml";
  std::string text = key_read(ct);
  text.replace(text.find("name = \"rmsnorm\""), std::string("name = \"rmsnorm\"").size(), "name = \"keytest_rmsnorm\"");
  write_text(ct, text);
  ASSERT_EQ(::setenv("KQUAL_CONTRACTS", roots.c_str(), 1), 0);
  const fs::path a = cands_ / "alpha";
  const std::string k0 = key_of(a, "keytest_rmsnorm");
  const json parts = VerdictKeys(json::object(), "keytest_rmsnorm", contract::ContractLookup()).parts(a);
  ::unsetenv("KQUAL_CONTRACTS");
  ASSERT_TRUE(parts.at("contract").contains("declared")) << parts.dump();
  ASSERT_EQ(::setenv("KQUAL_CONTRACTS", roots.c_str(), 1), 0);
  key_append(roots / "keytest_rmsnorm/reference.py", "\n# edited reference\n");
  const std::string k1 = key_of(a, "keytest_rmsnorm");
  EXPECT_NE(k1, k0);
  key_append(ct, "\n# edited contract\n");
  EXPECT_NE(key_of(a, "keytest_rmsnorm"), k1);
  ::unsetenv("KQUAL_CONTRACTS");
}

// kqual's own failures (harness_error) and errors are never reused; incomplete only without a GPU.
TEST(ScreenJournalReuse, KqualsOwnFailuresAreRetriedOnResume) {
  ScreenVerdict v;
  v.key = "k";
  v.verdict = ScreenVerdictKind::accepted;
  EXPECT_TRUE(reusable(v, "k", true));
  EXPECT_FALSE(reusable(v, "other", true));
  EXPECT_FALSE(reusable(v, "", true));
  v.verdict = ScreenVerdictKind::incomplete;
  v.reason = "harness_error";
  v.codes["harness_error"] = 1;
  EXPECT_FALSE(reusable(v, "k", true));
  EXPECT_FALSE(reusable(v, "k", false));
  v.codes.clear();
  v.reason = "compiled; no GPU";
  EXPECT_TRUE(reusable(v, "k", false));
  EXPECT_FALSE(reusable(v, "k", true));
  v.verdict = ScreenVerdictKind::error;
  EXPECT_FALSE(reusable(v, "k", false));
  ScreenVerdict old;  // a line from before the key: never reused
  old.verdict = ScreenVerdictKind::accepted;
  EXPECT_FALSE(reusable(old, "k", true));
}

}  // namespace
}  // namespace kqual::pipeline
