// kqual screen's contracts, resolved once before any candidate runs: one contract name judges by one
// file for the whole screen; a candidate that brings another file under a name already resolved is
// refused (contract_mismatch, with both paths), never judged by either silently. Without a device.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/screen.hpp"
#include "fixture_util.hpp"
#include "test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;

const ScreenVerdict& verdict_of(const ScreenOutcome& out, const std::string& name) {
  for (const auto& v : out.verdicts)
    if (v.name == name) return v;
  throw std::runtime_error("no verdict for " + name);
}

class ScreenContractsTest : public ::testing::Test {
 protected:
  void SetUp() override { tmp_ = std::make_unique<ScratchDir>("kqual-screen-contracts"); }
  ScreenOptions options(const std::string& out) const {
    ScreenOptions o;
    o.inputs = {tmp_->path() / "cands"};
    o.out_dir = tmp_->path() / out;
    o.use_gpu = false;
    o.sanitizer_pass = false;
    return o;
  }
  std::unique_ptr<ScratchDir> tmp_;
};

TEST_F(ScreenContractsTest, ASecondFileUnderAResolvedNameIsRefused) {
  const fs::path user = test::renamed_declared_contract(tmp_->path() / "mine/scr_same_relu", "scr_same_relu");
  // "a_brings_own" comes first in candidate order: the name still means the user's file.
  const fs::path own = test::renamed_declared_contract(tmp_->path() / "cands/a_brings_own/own", "scr_same_relu");
  test::good_candidate_naming(tmp_->path() / "cands/a_brings_own", "own/contract.toml");
  test::good_candidate_naming(tmp_->path() / "cands/b_by_name", "scr_same_relu");
  ScreenOptions o = options("out");
  o.sources = {{tmp_->path() / "mine"}, true};
  const ScreenOutcome out = screen(o);
  const ScreenVerdict& a = verdict_of(out, "a_brings_own");
  EXPECT_EQ(a.verdict, ScreenVerdictKind::refused);
  EXPECT_EQ(a.reason, "contract_mismatch");
  EXPECT_NE(a.detail.find(own.string()), std::string::npos) << a.detail;
  EXPECT_NE(a.detail.find(user.string()), std::string::npos) << a.detail;
  const ScreenVerdict& b = verdict_of(out, "b_by_name");
  EXPECT_EQ(b.verdict, ScreenVerdictKind::incomplete) << b.detail;  // compiled; no GPU
  EXPECT_EQ(b.contract, "scr_same_relu");
  const json& c = out.results["contracts"]["scr_same_relu"];
  EXPECT_EQ(c.value("file", ""), user.string()) << out.results["contracts"].dump(1);
  EXPECT_EQ(c.value("origin", ""), "user");
  EXPECT_EQ(c.value("sha256", "").size(), 64u);
}

TEST_F(ScreenContractsTest, AContractFileWithACandidateNeedsTheOption) {
  test::renamed_declared_contract(tmp_->path() / "cands/brings/own", "scr_own_relu");
  test::good_candidate_naming(tmp_->path() / "cands/brings", "own/contract.toml");
  ScreenOutcome out = screen(options("out"));
  const ScreenVerdict& v = verdict_of(out, "brings");
  EXPECT_EQ(v.verdict, ScreenVerdictKind::refused);
  EXPECT_EQ(v.reason, "manifest_invalid");
  EXPECT_NE(v.detail.find("--allow-candidate-contract"), std::string::npos) << v.detail;

  ScreenOptions o = options("out2");
  o.sources.allow_candidate_contract = true;
  out = screen(o);
  EXPECT_EQ(verdict_of(out, "brings").verdict, ScreenVerdictKind::incomplete) << verdict_of(out, "brings").detail;
  const json& c = out.results["contracts"]["scr_own_relu"];
  EXPECT_EQ(c.value("origin", ""), "candidate");
  EXPECT_TRUE(c.value("supplied_with_candidate", false));
}

}  // namespace
}  // namespace kqual::pipeline
