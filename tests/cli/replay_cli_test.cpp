// kqual replay end to end (src/run/replay_cmd.cpp), and the command its README gives: `kqual check
// --case ID --seed S` run from the reproducer folder reads the copied manifest (and the copied
// declared contract), finds the case, and without a GPU stops as incomplete (exit 3); an unknown id
// is exit 2 before anything runs.
#include <gtest/gtest.h>

#include "kqual/core/exit_codes.hpp"
#include "../pipeline/replay_test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;
using namespace kqual::test::replay;
using test::contains;
using test::kq;
using test::quote;
using test::run;

struct ReplayCli : ::testing::Test {
  ScratchDir scratch{"kqual-replay-cli"};
  fs::path results = scratch.path() / "results.json";
  std::string case_id;

  void record(const fs::path& candidate, std::uint64_t seed, const std::function<bool(const contract::CaseSpec&)>& pick,
              const std::string& code) {
    const build::Manifest m = build::load_manifest(candidate);
    for (const auto& s : m.resolved_contract().correctness_cases(m.supports, seed, false))
      if (pick(s)) {
        write_json(results, check_results(candidate, scratch.path(), seed, {failing(m.resolved_contract(), s, code)}));
        case_id = s.id;
        return;
      }
    FAIL() << "no case picked";
  }
  // The README's command, from inside the folder, without a GPU.
  test::CommandResult readme_command(const fs::path& dir, const std::string& id, const std::string& extra = "") {
    return run("cd " + quote(dir) + " && " + kq() + " check candidate --case '" + id + "' --seed 7 --no-gpu --out kqual-out/candidate" + extra);
  }
};

TEST_F(ReplayCli, WritesTheFolderAndPrintsTheCommand) {
  record(test::repo_root() / "candidates/residual_add_relu/broken/missing_tail", 7,
         [](const contract::CaseSpec& s) { return s.id == "f32/n=1025/normal"; }, "unwritten_output");
  const fs::path dir = scratch.path() / "repro";
  const auto r = run(kq() + " replay " + quote(results) + " --out " + quote(dir) + " --quiet");
  ASSERT_EQ(r.exit_code, kExitPass) << r.output;
  EXPECT_TRUE(contains(r.output, "kqual check candidate --case f32/n=1025/normal --seed 7 --out kqual-out/candidate")) << r.output;
  EXPECT_TRUE(fs::is_regular_file(dir / "README.md"));
  // The README's command reads the copy and finds the case: no GPU here, so incomplete (3), not bad input (2).
  const auto again = readme_command(dir, case_id);
  EXPECT_EQ(again.exit_code, kExitIncomplete) << again.output;
  EXPECT_TRUE(contains(read_text_file(dir / "kqual-out/candidate/results.json"), "\"kqual.check/1\""));
  const auto unknown = readme_command(dir, "f32/n=1026/normal");
  EXPECT_EQ(unknown.exit_code, kExitInputError) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "--case 'f32/n=1026/normal'")) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "residual_add_relu has no case with this id")) << unknown.output;
}

TEST_F(ReplayCli, JsonNamesItsSchemaAndInputErrorsAreExitTwo) {
  record(test::repo_root() / "candidates/residual_add_relu/broken/missing_tail", 7,
         [](const contract::CaseSpec& s) { return s.id == "f32/n=257/normal"; }, "unwritten_output");
  const auto j = run(kq() + " --json replay " + quote(results) + " --out " + quote(scratch.path() / "j") + " --quiet");
  ASSERT_EQ(j.exit_code, kExitPass) << j.output;
  const json doc = json::parse(j.output);
  EXPECT_EQ(doc["schema"], "kqual.replay/1");
  EXPECT_EQ(doc["case_id"], "f32/n=257/normal");
  EXPECT_EQ(doc["tensors"].size(), 3u);
  const auto unknown = run(kq() + " replay " + quote(results) + " --case nope --out " + quote(scratch.path() / "u"));
  EXPECT_EQ(unknown.exit_code, kExitInputError) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, results.string() + ": --case 'nope'")) << unknown.output;
  EXPECT_FALSE(fs::exists(scratch.path() / "u"));
  const auto missing = run(kq() + " replay " + quote(scratch.path() / "none.json") + " --out " + quote(scratch.path() / "m"));
  EXPECT_EQ(missing.exit_code, kExitInputError) << missing.output;
  const auto no_out = run(kq() + " replay " + quote(results));
  EXPECT_EQ(no_out.exit_code, kExitInputError) << no_out.output;
  EXPECT_TRUE(contains(no_out.output, "--out")) << no_out.output;
}

TEST_F(ReplayCli, ADeclaredContractIsFoundInTheFoldersCopy) {
  record(test::repo_root() / "candidates/rmsnorm/broken/missing_tail", 7,
         [](const contract::CaseSpec& s) {
           return s.dtype == DType::f32 && s.family == "base" && s.offset_elements == 0 && s.dims.at("cols") % 4 != 0 &&
                  s.dims.at("rows") * s.dims.at("cols") < 100000;
         },
         "unwritten_output");
  const fs::path dir = scratch.path() / "repro";
  const auto r = run(kq() + " replay " + quote(results) + " --out " + quote(dir) + " --quiet");
  ASSERT_EQ(r.exit_code, kExitPass) << r.output;
  EXPECT_TRUE(contains(r.output, "--contracts contracts")) << r.output;
  const auto again = readme_command(dir, case_id, " --contracts contracts");
  EXPECT_EQ(again.exit_code, kExitIncomplete) << again.output;
  const json checked = json::parse(read_text_file(dir / "kqual-out/candidate/results.json"));
  EXPECT_EQ(checked["contract"]["source"]["origin"], "user") << "judged by the folder's copy";
  EXPECT_TRUE(contains(checked["contract"]["source"]["file"].get<std::string>(), (dir / "contracts/rmsnorm").string()));
}

}  // namespace
}  // namespace kqual
