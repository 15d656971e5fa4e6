// kqual compare says which contract judged both builds and where it came from, as qualify does:
// results.json contract.source {origin, supplied_with_candidate, file, sha256}, the memo's "Contract
// supplied with the candidate" with path and SHA-256, and a candidate's own contract file refused
// (exit 2, nothing written) without --allow-candidate-contract, with qualify's message. Without a
// GPU: the static phases are enough.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "compare_util.hpp"
#include "fixture_util.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/sha256.hpp"

namespace fs = std::filesystem;
using namespace kqual;

namespace {

const fs::path kGoodCandidate = test::repo_root() / "candidates/residual_add_relu/good";

test::CommandResult kqual_run(const std::string& args) { return test::run(test::quote(test::compare_kqual()) + " " + args); }

// The line of `output` that names the refused contract file (the error, without the command's prefix).
std::string refusal_line(const std::string& output) {
  const auto at = output.find("\"own/contract.toml\" names the contract file");
  if (at == std::string::npos) return "";
  return output.substr(at, output.find('\n', at) - at);
}

// kqual compare of the candidate folder `cand` against itself built as PTX, static phases only (no
// GPU), into `out`; `options` go before --out.
test::CommandResult compare_ptx(const fs::path& cand, const fs::path& out, const std::string& options = "") {
  const std::string extra = options.empty() ? "" : options + " ";
  return kqual_run("compare " + test::quote(cand) + " --new-mode ptx --no-gpu " + extra + "--out " + test::quote(out));
}

// The results' contract source: where it came from, whether the candidate supplied it, its file and
// that file's SHA-256.
void expect_contract_source(const json& results, const char* origin, bool supplied, const fs::path& file) {
  const json& src = results.at("contract").at("source");
  EXPECT_EQ(src.at("origin"), origin) << src.dump(1);
  EXPECT_EQ(src.at("supplied_with_candidate"), supplied);
  EXPECT_EQ(src.at("file"), file.string());
  EXPECT_EQ(src.at("sha256"), sha256_file_hex(file.string()));
}

TEST(CompareContractSource, ACandidatesOwnContractNeedsTheOptionAsInQualify) {
  test::TempDir t;
  const fs::path own = test::renamed_declared_contract(t.path / "cand/own", "cmp_own_relu");
  test::good_candidate_naming(t.path / "cand", "own/contract.toml");
  const std::string cand = test::quote(t.path / "cand");

  auto r = compare_ptx(t.path / "cand", t.path / "o");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(own.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--allow-candidate-contract"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(t.path / "o"));
  // The refusal qualify gives the same manifest, word for word.
  const auto q = kqual_run("qualify " + cand + " --no-gpu --out " + test::quote(t.path / "q"));
  EXPECT_EQ(q.exit_code, 2) << q.output;
  EXPECT_FALSE(refusal_line(r.output).empty()) << r.output;
  EXPECT_EQ(refusal_line(r.output), refusal_line(q.output));

  r = compare_ptx(t.path / "cand", t.path / "o", "--allow-candidate-contract");
  EXPECT_EQ(r.exit_code, 3) << r.output;  // incomplete: no GPU, static phases done
  const json j = json::parse(read_text_file(t.path / "o/results.json"));
  const std::string sha = sha256_file_hex(own.string());
  EXPECT_EQ(j.at("contract").at("name"), "cmp_own_relu") << j.at("contract").dump(1);
  expect_contract_source(j, "candidate", true, own);
  const std::string memo = read_text_file(t.path / "o/memo.md");
  EXPECT_NE(memo.find("**Contract supplied with the candidate**: `" + own.string() + "` SHA-256 `" + sha + "`"), std::string::npos)
      << memo;
  // The page rendered from results.json names it too.
  r = kqual_run("report " + test::quote(t.path / "o/results.json") + " --html " + test::quote(t.path / "page.html"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string page = read_text_file(t.path / "page.html");
  EXPECT_NE(page.find("contract supplied with the candidate"), std::string::npos);
  EXPECT_NE(page.find(sha), std::string::npos);
}

TEST(CompareContractSource, AContractFromTheUsersFolderIsNamedWithItsFile) {
  test::TempDir t;
  const fs::path mine = test::renamed_declared_contract(t.path / "mine/cmp_user_relu", "cmp_user_relu");
  test::good_candidate_naming(t.path / "cand", "cmp_user_relu");
  // Not found by name without the folder: the candidate cannot pick it.
  auto r = compare_ptx(t.path / "cand", t.path / "o");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown contract 'cmp_user_relu'"), std::string::npos) << r.output;

  r = compare_ptx(t.path / "cand", t.path / "o", "--contracts " + test::quote(t.path / "mine"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const json j = json::parse(read_text_file(t.path / "o/results.json"));
  expect_contract_source(j, "user", false, mine);
  const std::string memo = read_text_file(t.path / "o/memo.md");
  EXPECT_EQ(memo.find("supplied with the candidate"), std::string::npos) << memo;
  EXPECT_NE(memo.find("Contract `cmp_user_relu`, file (user folder): `" + mine.string() + "`"), std::string::npos) << memo;
}

TEST(CompareContractSource, ABuiltInContractHasNoFile) {
  test::TempDir t;
  auto r = compare_ptx(kGoodCandidate, t.path / "o");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const json j = json::parse(read_text_file(t.path / "o/results.json"));
  EXPECT_EQ(j.at("contract"), (json{{"name", "residual_add_relu"},
                                    {"source", {{"origin", "built-in"}, {"supplied_with_candidate", false}}}}));
  EXPECT_NE(read_text_file(t.path / "o/memo.md").find("Contract `residual_add_relu` (built-in)."), std::string::npos);
}

}  // namespace
