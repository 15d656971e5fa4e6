// PyTorch submissions on the GPU machine (docs/torch-submissions.md): every bundled submission under
// examples/torch_submissions/<contract>/{good,broken}/ through `kqual check DIR`: the good ones
// accepted, each known-broken one rejected for the class its manifest states. Skipped without a GPU
// or PyTorch (kqual exits 3 and says what it could not run).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "kqual/bench/torch_submission.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/process.hpp"
#include "kqual/cuda/driver.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

TEST(TorchSubmissionDevice, EveryBundledSubmissionIsJudgedForItsStatedClass) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path root = test::repo_root() / "examples/torch_submissions";
  std::vector<fs::path> dirs;
  for (const auto& c : fs::directory_iterator(root))
    for (const char* kind : {"good", "broken"})
      if (fs::is_directory(c.path() / kind))
        for (const auto& d : fs::directory_iterator(c.path() / kind)) dirs.push_back(d.path());
  std::sort(dirs.begin(), dirs.end());
  ASSERT_GE(dirs.size(), 28u);  // residual_add_relu 15, softmax 6, transpose 7
  ScratchDir out("kqual-submission-device");
  std::string table;
  int judged = 0;
  for (const auto& d : dirs) {
    const bench::TorchSubmissionManifest m = bench::read_torch_submission_manifest(d);
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path o = out.path() / m.name;
    const ProcessResult pr = run_process(test::kqual_exe().string(), {"check", d.string(), "--out", o.string(), "--quiet"}, {}, {}, 600);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pr.exit_code == 3) GTEST_SKIP() << m.name << ": " << pr.out << pr.err;
    ASSERT_TRUE(fs::exists(o / "results.json")) << m.name << ": exit " << pr.exit_code << "\n" << pr.out << pr.err;
    const json r = json::parse(read_text_file(o / "results.json"));
    const json& chk = r["check"];
    const std::string verdict = chk.value("verdict", "");
    const std::string code = chk["failures"].empty() ? "" : chk["failures"][0].value("code", "");
    table += fmt::format("{:<36} {:>6.1f} s  exit {}  {} {}  ({} cases)\n", m.name, s, pr.exit_code, verdict, code, chk.value("cases", 0));
    ++judged;
    if (m.expect_rejected_for.empty()) {
      EXPECT_EQ(verdict, "accepted") << m.name << ": " << chk.dump(1);
      EXPECT_EQ(pr.exit_code, 0) << m.name;
    } else {
      std::vector<std::string> ok = m.expect_or;
      ok.push_back(m.expect_rejected_for);
      EXPECT_EQ(verdict, "rejected") << m.name << ": " << chk.dump(1);
      EXPECT_NE(std::find(ok.begin(), ok.end(), code), ok.end()) << m.name << ": rejected for " << code << ", stated "
                                                                  << m.expect_rejected_for << "\n" << chk.dump(1);
      EXPECT_EQ(pr.exit_code, 1) << m.name;
    }
  }
  std::cout << table;
  EXPECT_EQ(judged, int(dirs.size()));
}

TEST(TorchSubmissionDevice, QualifyTimesACorrectSubmissionAgainstEagerAndCompiled) {
  // The load_inline submission (a kernel of its own, graph-capturable) at two shapes: timed in A B B A
  // blocks against PyTorch eager and torch.compile under the same window, its timed outputs
  // verified, a speed-up with an interval per shape and baseline, and the qualify rule's decision.
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  ScratchDir out("kqual-submission-qualify-device");
  const fs::path d = test::repo_root() / "examples/torch_submissions/residual_add_relu/good/load_inline";
  const ProcessResult pr = run_process(test::kqual_exe().string(),
                                       {"qualify", d.string(), "--out", out.path().string(), "--quiet", "--shape", "1048576", "--shape",
                                        "67108864", "--rounds", "3"},
                                       {}, {}, 600);
  ASSERT_TRUE(fs::exists(out.path() / "results.json")) << pr.out << pr.err;
  const json r = json::parse(read_text_file(out.path() / "results.json"));
  // Skipped only where the submission could not run at all (no PyTorch or no CUDA in its worker); an
  // incomplete decision (exit 3 for another reason) is a failure below.
  if (r["check"].value("verdict", "") == "not_run") GTEST_SKIP() << r["check"].value("not_run", "");
  std::cout << read_text_file(out.path() / "summary.md");
  ASSERT_EQ(r["check"].value("verdict", ""), "accepted") << r["check"].dump(1);
  const json& t = r["timing"];
  EXPECT_NE(t.value("status", "").find("against PyTorch eager, compiled at 2 shape(s)"), std::string::npos) << t.dump(1);
  EXPECT_EQ(t.value("timed_output_failure", "x"), "") << t.dump(1);
  ASSERT_EQ(t["speedups"].size(), 2u) << t.dump(1);
  for (const auto& sh : t["speedups"]) {
    ASSERT_EQ(sh["speedups"].size(), 2u) << sh.dump(1);
    for (const auto& s : sh["speedups"]) {
      EXPECT_GT(s.value("speedup", 0.0), 0.0) << s.dump();
      EXPECT_LE(s["ci"][0].get<double>(), s.value("speedup", 0.0)) << s.dump();
      EXPECT_GE(s["ci"][1].get<double>(), s.value("speedup", 0.0)) << s.dump();
    }
  }
  for (const auto& w : t["windows"]) EXPECT_NE(w.get<std::string>().find("cuda_graph"), std::string::npos) << w;
  const std::string decision = r["decision"].value("decision", "");
  EXPECT_NE(decision, "incomplete") << r["decision"].dump(1);
  EXPECT_EQ(pr.exit_code, decision == "ship" || decision == "no_difference" ? 0 : 1) << r["decision"].dump(1);
}

}  // namespace
}  // namespace kqual
