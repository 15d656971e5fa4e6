// A failing check ends with the commands that reproduce its first failing case, the same two in
// results.json, the memo, the report page and the console summary (report::reproduce_text): a
// `kqual replay` folder and the one case rerun by `kqual check --case ID --seed S`, with paths and
// the kqual binary written out, so that they run as printed.
#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/self.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/report/html.hpp"
#include "kqual/report/memo.hpp"

namespace kqual::report {
namespace {
namespace fs = std::filesystem;
namespace fx = test::fixtures;

TEST(Reproduce, AFailingCheckEndsWithTheReplayAndCheckCommands) {
  ScratchDir dir("kqual-reproduce-test");
  const json doc = fx::qualify_rejected(dir.path() / "static");
  pipeline::QualifyOptions o;
  o.candidate = test::repo_root() / "candidates/residual_add_relu/broken/missing_tail";
  o.out_dir = dir.path() / "out";
  o.seed = 42;
  o.sources.user_dirs = {dir.path() / "my contracts"};
  const std::optional<ReproduceCommands> c = pipeline::reproduce_commands(o, doc.at("correctness"));
  ASSERT_TRUE(c);
  const std::string first = doc["correctness"]["failing_cases"][0]["id"].get<std::string>();
  EXPECT_EQ(c->case_id, first);
  const std::string kq = shell_word(self_command());
  const std::string contracts = " --contracts '" + (dir.path() / "my contracts").string() + "'";
  EXPECT_EQ(c->replay, fmt::format("{} replay {}/out/results.json --case {} --out {}/out/replay{}", kq, dir.path().string(), first,
                                   dir.path().string(), contracts));
  EXPECT_EQ(c->check, fmt::format("{} check {} --case {} --seed 42{} --out {}/out/rerun", kq, o.candidate.string(), first,
                                  contracts, dir.path().string()));

  QualifyResult r = qualify_result_from_json(doc);
  r.reproduce = c;
  const json written = to_json(r);
  EXPECT_EQ(written["reproduce"]["check"], c->check);
  const QualifyResult again = qualify_result_from_json(written);
  ASSERT_TRUE(again.reproduce);
  EXPECT_EQ(again.reproduce->replay, c->replay);

  // The memo ends with them, after the provenance.
  const std::string memo = render_qualify_memo(r);
  const std::size_t at = memo.find("## Reproduce the failing case");
  ASSERT_NE(at, std::string::npos) << memo;
  EXPECT_GT(at, memo.find("## Provenance"));
  EXPECT_NE(memo.find("```sh\n" + c->replay + "\n```", at), std::string::npos) << memo;
  const std::string tail = "```sh\n" + c->check + "\n```\n";
  EXPECT_EQ(memo.substr(memo.size() - tail.size()), tail) << memo;
  EXPECT_EQ(memo, render_qualify_memo(written)) << "kqual report --md gives the same memo";

  // The page too, escaped, after the provenance.
  const std::string page = render_html(written);
  const std::size_t sec = page.find("<section id=\"reproduce\">");
  ASSERT_NE(sec, std::string::npos);
  EXPECT_GT(sec, page.find("<section id=\"provenance\">"));
  EXPECT_NE(page.find("<code>" + html_escape(c->replay) + "</code>", sec), std::string::npos);
  EXPECT_NE(page.find("<code>" + html_escape(c->check) + "</code>", sec), std::string::npos);
}

TEST(Reproduce, NothingWhenNoCaseFailed) {
  ScratchDir dir("kqual-reproduce-test");
  const json doc = fx::qualify_gpu(dir.path() / "static");
  pipeline::QualifyOptions o;
  o.candidate = "c";
  EXPECT_FALSE(pipeline::reproduce_commands(o, doc.at("correctness")));
  EXPECT_FALSE(pipeline::reproduce_commands(o, json::object()));
  const std::string memo = render_qualify_memo(doc);
  EXPECT_EQ(memo.find("Reproduce"), std::string::npos);
  EXPECT_EQ(reproduce_text(std::nullopt), "");
  EXPECT_EQ(render_html(doc).find("id=\"reproduce\""), std::string::npos);
}

}  // namespace
}  // namespace kqual::report
