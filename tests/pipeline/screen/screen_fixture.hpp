#pragma once
// The fixture the CPU suites of kqual screen share (screen_test, screen_key_test, screen_shard_test): a
// scratch folder whose cands/ holds copies of the bundled good residual_add_relu candidate, screened
// without a device; a verdict found by candidate name; a file written whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "kqual/core/files.hpp"
#include "kqual/pipeline/screen.hpp"
#include "kqual/report/screen_result.hpp"
#include "fixture_util.hpp"
#include "test_util.hpp"

namespace kqual::test {

// `f` (and the folders above it) holding exactly `text`.
inline void write_text(const std::filesystem::path& f, const std::string& text) {
  std::filesystem::create_directories(f.parent_path());
  std::ofstream(f, std::ios::binary) << text;
}

// The verdict of candidate `name` in `out`; throws where there is none.
inline const pipeline::ScreenVerdict& verdict_of(const pipeline::ScreenOutcome& out, const std::string& name) {
  for (const auto& v : out.verdicts)
    if (v.name == name) return v;
  throw std::runtime_error("no verdict for " + name);
}

// What screen (or its merge) wrote into `dir` is one result: results.json reads back into the type and
// writes out unchanged, and summary.md (and ranking.html where written) is what report/ renders from it.
inline void expect_written_from_one_result(const std::filesystem::path& dir) {
  const json doc = json::parse(read_text_file(dir / "results.json"));
  const report::ScreenResult r = report::screen_result_from_json(doc);
  EXPECT_EQ(doc.dump(2), report::to_json(r).dump(2)) << dir;
  EXPECT_EQ(read_text_file(dir / "summary.md"), report::render_screen_summary_md(r)) << dir;
  EXPECT_EQ(std::filesystem::exists(dir / "ranking.html"), r.ranking.has_value()) << dir;
  if (r.ranking) {
    EXPECT_EQ(read_text_file(dir / "ranking.html"), report::render_screen_ranking_html(*r.ranking, r.verdicts)) << dir;
  }
}

class ScreenFixture : public ::testing::Test {
 protected:
  explicit ScreenFixture(const std::string& scratch_prefix)
      : tmp_(std::make_unique<ScratchDir>(scratch_prefix)), cands_(tmp_->path() / "cands") {
    std::filesystem::create_directories(cands_);
  }

  // A copy of the bundled good residual_add_relu candidate as cands/<name>.
  void copy_good(const std::string& name) const {
    copy_bundled("candidates/residual_add_relu/good", cands_ / name);
  }

  // Screening cands/ into `out` (by default out/) without a device or the sanitizer pass.
  pipeline::ScreenOptions opts() const { return cpu_options(out_); }
  pipeline::ScreenOptions cpu_options(const std::filesystem::path& out) const {
    pipeline::ScreenOptions o;
    o.inputs = {cands_};
    o.out_dir = out;
    o.use_gpu = false;
    o.sanitizer_pass = false;
    return o;
  }

  std::unique_ptr<ScratchDir> tmp_;
  std::filesystem::path cands_;
  std::filesystem::path out_ = tmp_->path() / "out";
};

}  // namespace kqual::test
