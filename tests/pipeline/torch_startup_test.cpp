// kqual startup-torch without PyTorch or a GPU: a stand-in probe (a Python script printing the result
// line the real one prints) drives the coordinator. Every process is fresh and pinned; the summaries,
// the cold-start samples written for kqual model service, the service per profile, the failures
// recorded, and the refusals before anything runs.
#include <gtest/gtest.h>

#include "kqual/report/memo.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/torch_startup.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace kqual;

namespace {

// Prints a first request whose phases depend on CUDA_MODULE_LOADING (EAGER pays 300 ms more to import)
// and records the environment it saw; `mode` "crash-second" fails every second process of LAZY.
fs::path fake_probe(const fs::path& dir, const std::string& mode = "") {
  const fs::path p = dir / "fake_probe.py";
  std::ofstream f(p);
  f << "import json, os, sys\n"
       "eager = os.environ.get('CUDA_MODULE_LOADING') == 'EAGER'\n"
       "counter = os.path.join(os.path.dirname(__file__), 'count-' + os.environ.get('CUDA_MODULE_LOADING', '?'))\n"
       "n = int(open(counter).read()) if os.path.exists(counter) else 0\n"
       "open(counter, 'w').write(str(n + 1))\n"
       "assert 'CUDA_LAUNCH_BLOCKING' not in os.environ and os.environ['CUDA_CACHE_PATH']\n";
  if (mode == "crash-second") f << "if not eager and n % 2 == 1: sys.exit(7)\n";
  if (mode == "no-torch")
    f << "print(json.dumps({'ok': False, 'no_torch': True, 'error': 'PyTorch is not importable: fake'})); sys.exit(3)\n";
  f << "ph = {'process_start': 20.0, 'import_torch': 1500.0 + (300.0 if eager else 0.0) + n, 'context': 400.0,\n"
       "      'first_matmul': 180.0, 'first_conv': 900.0, 'steady_matmul': 1.0, 'steady_conv': 2.0}\n"
       "ph['first_request'] = ph['import_torch'] + ph['context'] + ph['first_matmul'] + ph['first_conv']\n"
       "ph['warm_step'] = ph['steady_matmul'] + ph['steady_conv']\n"
       "print('noise before the result line')\n"
       "print(json.dumps({'ok': True, 'phases': ph, 'versions': {'torch': 'fake'}, 'argv': sys.argv[1:]}))\n";
  return p;
}

struct TorchRun {
  test::TempDir t;
  pipeline::TorchStartupOptions o;
  TorchRun() {
    o.python = "python3";
    o.runs = 4;
    o.steady = 3;
    o.out_dir = t.path / "out";
    o.profiles = {(test::repo_root() / "profiles/cold-start-heavy.toml").string()};
  }
};

}  // namespace

TEST(TorchStartup, FreshProcessesPerLoadingModeFeedTheService) {
  TorchRun r;
  r.o.script = fake_probe(r.t.path).string();
  const auto out = pipeline::run_torch_startup(r.o);
  ASSERT_EQ(out.exit_code, 0) << out.results.dump(1);
  const json& j = out.results;
  EXPECT_EQ(j["schema"], "kqual.startup_torch/1");
  ASSERT_EQ(j["modes"].size(), 2u);
  const json& lazy = j["modes"][0];
  EXPECT_EQ(lazy["loading"], "LAZY");
  EXPECT_EQ(lazy["runs"], 4);
  EXPECT_EQ(lazy["phases_ms"]["first_request"]["n"], 4);
  // Cold start = process start + import + context + first calls beyond warm: 20 + 1501.5 + 400 + 179 + 898.
  EXPECT_NEAR(lazy["phases_ms"]["cold_start"]["median"].get<double>(), 20 + 1501.5 + 400 + 179 + 898, 1e-6);
  EXPECT_NEAR(j["modes"][1]["phases_ms"]["import_torch"]["median"].get<double>(), 1801.5, 1e-6);  // EAGER
  // The samples for kqual model service --startup file:, one per process.
  const std::string samples = read_text_file(r.o.out_dir / "first_request_LAZY_ms.txt");
  EXPECT_EQ(std::count(samples.begin(), samples.end(), '\n'), 4);
  EXPECT_TRUE(fs::exists(r.o.out_dir / "warm_step_EAGER_ms.txt"));
  // The service per profile and loading mode: 3 s cold starts miss cold-start-heavy's first_request p99 <= 400 ms,
  // which warm starts meet.
  ASSERT_EQ(j["service"].size(), 2u);
  const json& view = j["service"][0]["view"];
  ASSERT_TRUE(view["computed"].get<bool>()) << view.dump(1);
  bool judged = false;
  for (const auto& o : view["objectives"])
    if (o["objective"].get<std::string>().find("first_request") != std::string::npos) {
      EXPECT_EQ(o["old"]["standing"], "meets") << o.dump(1);
      EXPECT_EQ(o["new"]["standing"], "misses") << o.dump(1);
      judged = true;
    }
  EXPECT_TRUE(judged) << view["objectives"].dump(1);
  const std::string memo = read_text_file(r.o.out_dir / "memo.md");
  EXPECT_NE(memo.find("| LAZY |"), std::string::npos) << memo;
  EXPECT_NE(memo.find("cold starts misses"), std::string::npos) << memo;
  // The memo is report/'s rendering of results.json as written, nothing else.
  EXPECT_EQ(memo, report::render_torch_startup_memo(json::parse(read_text_file(r.o.out_dir / "results.json"))));
}

TEST(TorchStartup, AFailedProcessIsRecordedAndTheRunGoesOn) {
  TorchRun r;
  r.o.script = fake_probe(r.t.path, "crash-second").string();
  const auto out = pipeline::run_torch_startup(r.o);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.results["modes"][0]["failures"].size(), 2u) << out.results["modes"][0].dump(1);
  EXPECT_NE(out.results["modes"][0]["failures"][0].get<std::string>().find("exit 7"), std::string::npos);
  EXPECT_EQ(out.results["modes"][0]["phases_ms"]["first_request"]["n"], 2);
  EXPECT_EQ(out.results["modes"][1]["failures"].size(), 0u);
}

TEST(TorchStartup, NoPyTorchIsIncompleteAndSaysSo) {
  TorchRun r;
  r.o.script = fake_probe(r.t.path, "no-torch").string();
  const auto out = pipeline::run_torch_startup(r.o);
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_NE(out.results["summary"].get<std::string>().find("PyTorch is not importable"), std::string::npos);
  EXPECT_FALSE(fs::exists(r.o.out_dir / "first_request_LAZY_ms.txt"));
  // One process told: nothing else was started.
  EXPECT_EQ(read_text_file(r.t.path / "count-LAZY"), "1");
}

TEST(TorchStartup, BadOptionsAreRefusedBeforeAnyProcess) {
  TorchRun r;
  r.o.script = fake_probe(r.t.path).string();
  auto refused = [&](pipeline::TorchStartupOptions o, const std::string& says) {
    try {
      pipeline::run_torch_startup(o);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(r.t.path / "count-LAZY")) << says;
    EXPECT_FALSE(fs::exists(o.out_dir)) << says;
  };
  auto o = r.o;
  o.dtype = "i8";
  refused(o, "is not f32, bf16 or f16");
  o = r.o;
  o.runs = 1;
  refused(o, "--runs");
  o = r.o;
  o.matmul = "4096,4096";
  refused(o, "--matmul '4096,4096' is not 3 positive integers");
  o = r.o;
  o.conv = "32,64,56,56,0,3";
  refused(o, "--conv '32,64,56,56,0,3' is not 6 positive integers");
  o = r.o;
  o.profiles = {(r.t.path / "missing.toml").string()};
  refused(o, "missing.toml");
  o = r.o;
  o.python = "no-such-python-kqual";
  refused(o, "not found on PATH");
}
