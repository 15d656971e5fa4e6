// PyTorch submissions on the GPU machine (docs/torch-submissions.md): every bundled submission under
// examples/torch_submissions/<contract>/{good,broken}/ through `kqual check DIR`: the good ones
// accepted, each known-broken one rejected for the class its manifest states. Skipped without a GPU
// or PyTorch (kqual exits 3 and says what it could not run).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

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

// One `kqual check` per bundled submission, KQUAL_TEST_LANES of them at once (default 8: one GPU holds
// them, and the first of each extension waits for its build).
struct Judgement {
  fs::path dir;
  bench::TorchSubmissionManifest manifest;
  ProcessResult pr;
  double seconds = 0;
};

std::vector<Judgement> check_all(const std::vector<fs::path>& dirs, const fs::path& out) {
  std::vector<Judgement> js(dirs.size());
  std::atomic<std::size_t> next{0};
  const char* lanes_env = std::getenv("KQUAL_TEST_LANES");
  const int lanes = std::max(1, lanes_env ? std::atoi(lanes_env) : 8);
  std::vector<std::thread> pool;
  for (int l = 0; l < lanes; ++l)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < dirs.size();) {
        Judgement& j = js[i];
        j.dir = dirs[i];
        j.manifest = bench::read_torch_submission_manifest(j.dir);
        const auto t0 = std::chrono::steady_clock::now();
        j.pr = run_process(test::kqual_exe().string(), {"check", j.dir.string(), "--out", (out / j.manifest.name).string(), "--quiet"},
                           {}, {}, 600);
        j.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        {  // a line as each ends, so a suite stopped at its limit still shows what was judged
          static std::mutex m;
          std::lock_guard<std::mutex> lock(m);
          std::cerr << fmt::format("[{:3}/{}] {} exit {} in {:.1f} s\n", i + 1, dirs.size(), j.manifest.name, j.pr.exit_code, j.seconds);
        }
      }
    });
  for (auto& t : pool) t.join();
  return js;
}

TEST(TorchSubmissionDevice, EveryBundledSubmissionIsJudgedForItsStatedClass) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path root = test::repo_root() / "examples/torch_submissions";
  std::vector<fs::path> dirs;
  for (const auto& c : fs::directory_iterator(root))
    for (const char* kind : {"good", "broken"})
      if (fs::is_directory(c.path() / kind))
        for (const auto& d : fs::directory_iterator(c.path() / kind)) dirs.push_back(d.path());
  std::sort(dirs.begin(), dirs.end());
  ASSERT_GE(dirs.size(), 38u);  // residual_add_relu 24, softmax 7, transpose 7 (and more as they come)
  ScratchDir out("kqual-submission-device");
  std::string table;
  int judged = 0;
  for (const Judgement& j : check_all(dirs, out.path())) {
    const bench::TorchSubmissionManifest& m = j.manifest;
    const ProcessResult& pr = j.pr;
    if (pr.exit_code == 3) GTEST_SKIP() << m.name << ": " << pr.out << pr.err;
    const fs::path o = out.path() / m.name;
    if (!fs::exists(o / "results.json")) {
      ADD_FAILURE() << m.name << ": no results.json, exit " << pr.exit_code << "\n" << pr.out << pr.err;
      continue;
    }
    const json r = json::parse(read_text_file(o / "results.json"));
    const json& chk = r["check"];
    const std::string verdict = chk.value("verdict", "");
    const std::string code = chk["failures"].empty() ? "" : chk["failures"][0].value("code", "");
    table += fmt::format("{:<40} {:>6.1f} s  exit {}  {} {}  ({} cases)\n", m.name, j.seconds, pr.exit_code, verdict, code,
                         chk.value("cases", 0));
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

TEST(TorchSubmissionDevice, TimingCheatsAreToldDoNotShipForTheirClass) {
  // examples/torch_submissions/*/timing_cheats/: correct values where check looks, a timer that lies
  // (Event.elapsed_time's code rewritten; the side-stream join deferred past the end event under graph
  // capture), or wrong on one timed call in ten. The activity record times them and every timed call is
  // read back here (--verify-launches past the calls made): do_not_ship, the manifest's class named.
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path root = test::repo_root() / "examples/torch_submissions";
  std::vector<fs::path> dirs;
  for (const auto& c : fs::directory_iterator(root))
    if (fs::is_directory(c.path() / "timing_cheats"))
      for (const auto& d : fs::directory_iterator(c.path() / "timing_cheats")) dirs.push_back(d.path());
  std::sort(dirs.begin(), dirs.end());
  ASSERT_GE(dirs.size(), 3u);
  ScratchDir out("kqual-submission-cheats-device");
  for (const auto& d : dirs) {
    const bench::TorchSubmissionManifest m = bench::read_torch_submission_manifest(d);
    const fs::path o = out.path() / m.name;
    const ProcessResult pr = run_process(test::kqual_exe().string(),
                                         {"qualify", d.string(), "--out", o.string(), "--quiet", "--shape", "16777216", "--shape", "1048576",
                                          "--rounds", "2", "--samples", "10", "--torch-baselines", "eager", "--verify-launches", "1000"},
                                         {}, {}, 600);
    ASSERT_TRUE(fs::exists(o / "results.json")) << m.name << ": exit " << pr.exit_code << "\n" << pr.out << pr.err;
    const json r = json::parse(read_text_file(o / "results.json"));
    if (r["check"].value("verdict", "") == "not_run") GTEST_SKIP() << r["check"].value("not_run", "");
    const std::string summary = read_text_file(o / "summary.md");
    std::cout << m.name << ":\n" << summary << "\n";
    EXPECT_EQ(r["decision"].value("decision", ""), "do_not_ship") << m.name << "\n" << r["decision"].dump(1);
    EXPECT_EQ(pr.exit_code, 1) << m.name;
    ASSERT_FALSE(m.expect_timed_failure.empty()) << m.file;
    EXPECT_NE(r["timing"].dump().find(m.expect_timed_failure), std::string::npos)
        << m.name << ": " << m.expect_timed_failure << " is not named\n" << r["timing"].dump(1);
  }
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
