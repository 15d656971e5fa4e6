// `kqual report` as a user runs it: the page and the memo from a results file, and input errors
// (exit 2) that leave no output file behind.
#include <gtest/gtest.h>

#include <fstream>

#include "fixtures.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;


bool leftovers(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tmp") return true;
  return false;
}

TEST(ReportCmd, WritesThePageAndTheMemo) {
  test::TempDir d;
  write_file_atomic(d.path / "results.json", test::fixtures::qualify_gpu(d.path / "run").dump(2));
  auto r = test::run(test::kq() + " report " + test::quote(d.path / "results.json") + " --html " + test::quote(d.path / "out/page.html") +
                     " --md " + test::quote(d.path / "out/memo.md"));
  ASSERT_EQ(r.exit_code, kExitPass) << r.output;
  EXPECT_NE(r.output.find("kqual.qualify/1"), std::string::npos) << r.output;
  const std::string page = read_text_file(d.path / "out/page.html");
  EXPECT_NE(page.find("<svg id=\"speedup-chart\""), std::string::npos);
  EXPECT_NE(read_text_file(d.path / "out/memo.md").find("**Verdict: SHIP**"), std::string::npos);
  EXPECT_FALSE(leftovers(d.path / "out"));
  // Without an output, the memo goes to stdout.
  r = test::run(test::kq() + " report " + test::quote(d.path / "results.json"));
  EXPECT_EQ(r.exit_code, kExitPass);
  EXPECT_NE(r.output.find("# kqual qualification memo"), std::string::npos) << r.output;
}

TEST(ReportCmd, RendersACompareResultsFile) {
  test::TempDir d;
  write_file_atomic(d.path / "results.json", test::fixtures::compare_gpu(d.path / "run").dump(2));
  auto r = test::run(test::kq() + " --json report " + test::quote(d.path / "results.json") + " --html " + test::quote(d.path / "c.html"));
  ASSERT_EQ(r.exit_code, kExitPass) << r.output;
  const json j = json::parse(r.output);
  EXPECT_EQ(j.at("schema"), "kqual.report/1");
  EXPECT_EQ(j.at("input_schema"), "kqual.compare/1");
  EXPECT_NE(read_text_file(d.path / "c.html").find("<svg id=\"startup-chart\""), std::string::npos);
}

TEST(ReportCmd, BadInputIsExit2AndWritesNothing) {
  test::TempDir d;
  std::ofstream(d.path / "truncated.json") << "{\"schema\": \"kqual.qualify/1\", \"verdict\": {";
  std::ofstream(d.path / "selftest.json") << "{\"schema\": \"kqual.selftest/1\"}";
  json broken = test::fixtures::qualify_gpu(d.path / "run");
  broken["timing"]["shapes"][0]["series"] = "none";
  write_file_atomic(d.path / "broken.json", broken.dump());
  const std::vector<std::pair<std::string, std::string>> cases{
      {"truncated.json", "is not JSON"},
      {"selftest.json", "kqual selftest results have no report page"},
      {"broken.json", "timing.shapes[0].series: expected an array, found string"},
      {"missing.json", "no such file"}};
  for (const auto& [file, message] : cases) {
    const fs::path out = d.path / (file + ".html");
    auto r = test::run(test::kq() + " report " + test::quote(d.path / file) + " --html " + test::quote(out));
    EXPECT_EQ(r.exit_code, kExitInputError) << file << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << file << ": " << r.output;
    EXPECT_NE(r.output.find(file), std::string::npos) << "the message names the file: " << r.output;
    EXPECT_FALSE(fs::exists(out)) << file;
  }
  EXPECT_FALSE(leftovers(d.path));
}

}  // namespace
}  // namespace kqual
