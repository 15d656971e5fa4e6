// Issue 22, item 4 on the GPU: the declared forms of residual_add_relu and softmax
// (contracts/*_declared) judge every bundled candidate of those contracts as the built-in ones do —
// the same check verdict and the same failure class of the first failing case. Each candidate folder
// is copied with its manifest pointed at the declared contract file; both checks run the bundled
// kernels on this GPU. Also: the declared contracts' own candidates (rmsnorm, ...) through selftest.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "kqual/check/evaluate.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/json.hpp"
#include "kqual/worker/session.hpp"
#include "kqual/cuda/driver.hpp"
#include "selftest_util.hpp"
#include "gpu_test.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

class DeclaredDeviceTest : public test::GpuTest {};

struct Outcome {
  int exit_code = -1;
  std::string verdict, first_code, output;
};

Outcome check(const fs::path& dir, const fs::path& out) {
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " check --quiet --no-large-cases " + test::quote(dir) + " --out " + test::quote(out));
  Outcome o;
  o.exit_code = r.exit_code;
  o.output = r.output;
  std::ifstream f(out / "results.json");
  if (!f) return o;
  json res = json::parse(f);
  o.verdict = res["correctness"].value("verdict", std::string());
  if (res["correctness"].contains("failing_cases") && !res["correctness"]["failing_cases"].empty())
    o.first_code = res["correctness"]["failing_cases"][0].value("code", std::string());
  return o;
}

// The folder, copied, with its manifest naming the declared contract's file and its source by
// absolute path (known-broken variants may share a source with the good one); empty when the declared
// twin defines none of the dtypes the folder claims.
fs::path retarget(const fs::path& dir, const fs::path& contract_file, const fs::path& to) {
  fs::remove_all(to);
  fs::create_directories(to);
  fs::copy(dir, to, fs::copy_options::recursive);
  std::ifstream in(to / "kqual.toml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  t = std::regex_replace(t, std::regex("contract = \"[a-z_]+\""), "contract = \"" + contract_file.string() + "\"");
  t = std::regex_replace(t, std::regex("source = \"([^\"]+)\""), "source = \"" + (dir / "$1").string() + "\"");
  // The dtypes the folder claims, cut to the declared twin's (a baseline that also claims f16 is compared on
  // what both contracts define; the twin refuses a manifest claiming more).
  std::ifstream cf(contract_file);
  std::stringstream cs;
  cs << cf.rdbuf();
  std::smatch all, claimed;
  const std::string ctext = cs.str();
  if (std::regex_search(ctext, all, std::regex("\\[dtypes\\]\\s*all = \\[([^\\]]*)\\]")) &&
      std::regex_search(t, claimed, std::regex("dtypes = \\[([^\\]]*)\\]"))) {
    std::string kept;
    const std::string list = claimed[1].str(), defined = all[1].str();
    const std::regex quoted("\"([a-z0-9_]+)\"");
    for (auto it = std::sregex_iterator(list.begin(), list.end(), quoted); it != std::sregex_iterator(); ++it)
      if (defined.find("\"" + (*it)[1].str() + "\"") != std::string::npos) kept += (kept.empty() ? "" : ", ") + (*it)[0].str();
    if (kept.empty()) return {};  // the twin defines none of the folder's dtypes: nothing to compare
    t = claimed.prefix().str() + "dtypes = [" + kept + "]" + claimed.suffix().str();
  }
  std::ofstream(to / "kqual.toml") << t;
  return to;
}

TEST_F(DeclaredDeviceTest, DeclaredFormsJudgeEveryBundledCandidateLikeTheBuiltIns) {
  const fs::path root = test::repo_root();
  const fs::path tmp = fs::temp_directory_path() / "kqual-declared-cross";
  int compared = 0;
  std::string table;
  for (const std::string c : {"residual_add_relu", "softmax"}) {
    const fs::path file = root / "contracts" / (c + "_declared") / "contract.toml";
    ASSERT_TRUE(fs::exists(file)) << file;
    std::vector<fs::path> dirs = {root / "candidates" / c / "good"};
    for (const auto& e : fs::directory_iterator(root / "candidates" / c / "broken")) dirs.push_back(e.path());
    for (const auto& e : fs::directory_iterator(root / "baselines" / c)) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      if (!fs::exists(d / "kqual.toml")) continue;
      const std::string name = c + "/" + d.filename().string();
      const fs::path twin = retarget(d, file, tmp / "cand");
      if (twin.empty()) {
        table += name + ": not compared (the declared twin defines none of its dtypes)\n";
        continue;
      }
      Outcome a = check(d, tmp / "out-builtin");
      Outcome b = check(twin, tmp / "out-declared");
      table += name + ": built-in " + a.verdict + " " + a.first_code + " | declared " + b.verdict + " " + b.first_code + "\n";
      ASSERT_FALSE(a.verdict.empty()) << name << ": " << a.output;
      ASSERT_FALSE(b.verdict.empty()) << name << ": " << b.output;
      ++compared;
      EXPECT_EQ(a.verdict, b.verdict) << name << "\n" << b.output;
      EXPECT_EQ(a.first_code, b.first_code) << name;
    }
  }
  std::cout << table;
  EXPECT_GE(compared, 20);
  fs::remove_all(tmp);
}

TEST_F(DeclaredDeviceTest, SelftestOverTheDeclaredContracts) {
  const fs::path root = test::repo_root();
  std::string args;
  int n = 0, folders = 0;  // contracts; their candidate and baseline folders (one selftest row each)
  for (const auto& e : fs::directory_iterator(root / "contracts")) {
    const std::string name = e.path().filename().string();
    if (name.ends_with("_declared") || !fs::is_directory(root / "candidates" / name)) continue;
    args += " --contract " + name;
    ++n;
    for (const char* sub : {"candidates", "baselines"})
      if (fs::is_directory(root / sub / name))
        for (const auto& f : fs::recursive_directory_iterator(root / sub / name)) folders += f.path().filename() == "kqual.toml";
  }
  ASSERT_GE(n, 1);
  const fs::path out = fs::temp_directory_path() / "kqual-declared-selftest";
  fs::remove_all(out);
  const int rows = int(test::selftest_rows("--seeds 1" + args, out, root).size());
  EXPECT_EQ(rows, folders);      // every folder checked (rmsnorm_strided has no baselines: not n * 6)
  EXPECT_GE(rows, n * 4);        // at least a good one and three known-broken ones per operation
  fs::remove_all(out);
}

// The fp64 CUDA reference of a declared contract (contracts/rmsnorm/reference.cu, run in the
// session's reference worker) agrees with its NumPy reference, and takes the case too large for the
// CPU reference in a default check.
TEST_F(DeclaredDeviceTest, CudaReferenceAgreesWithTheNumpyReference) {
  const fs::path root = test::repo_root();
  const contract::Contract& c = contract::ContractLookup().resolve("rmsnorm", root / "candidates/rmsnorm/good");
  worker::SessionOptions so;
  so.exe = test::kqual_exe().string();
  worker::Session s(so);
  int compared = 0;
  for (DType t : {DType::f32, DType::bf16})
    for (const char* family : {"base", "specials", "tiny"}) {
      contract::CaseSpec cs;
      cs.dtype = t;
      cs.dims = c.complete_dims({{"rows", 67}, {"cols", 1031}});
      cs.family = family;
      cs.seed = 42;
      cs.id = std::string(to_string(t)) + "/" + family;
      const contract::CaseData d = c.make_case(cs);
      const auto cpu = c.reference(d);
      const auto gpu = check::gpu_reference(s, c, d);
      ASSERT_EQ(cpu.size(), gpu.size());
      for (std::size_t k = 0; k < cpu.size(); ++k) {
        ASSERT_EQ(cpu[k].ref.size(), gpu[k].ref.size());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < cpu[k].ref.size(); ++i) {
          const double a = cpu[k].ref[i], b = gpu[k].ref[i];
          if (std::isnan(a) || std::isnan(b)) {
            EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << cs.id << " element " << i << ": " << a << " vs " << b;
            continue;
          }
          EXPECT_LE(std::fabs(a - b), 1e-12 * std::fabs(a) + 1e-300) << cs.id << " element " << i;
          differ += cpu[k].bound[i] != gpu[k].bound[i] && std::fabs(cpu[k].bound[i] - gpu[k].bound[i]) > 1e-12 * cpu[k].bound[i];
        }
        EXPECT_EQ(differ, 0u) << cs.id;
        // The outputs the candidate is held to, rounded to the dtype: the same bytes.
        EXPECT_EQ(contract::compare_exact(cpu[k], gpu[k].bytes.data(), 0xA5).mismatches, 0) << cs.id;
        ++compared;
      }
    }
  EXPECT_EQ(compared, 6);

  // A default check runs the 8192 x 8192 case (2^26 elements, over the CPU cap of 2^24) on the CUDA reference.
  const fs::path out = fs::temp_directory_path() / "kqual-declared-large";
  fs::remove_all(out);
  auto r = test::run(test::quote(test::kqual_exe()) + " check --quiet " + test::quote(root / "candidates/rmsnorm/good") + " --out " +
                     test::quote(out));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  EXPECT_EQ(res["correctness"]["verdict"], "accepted");
  bool large = false;
  for (const auto& x : res["correctness"]["slowest_cases"]) large |= x.value("id", std::string()).find("rows=8192") != std::string::npos;
  EXPECT_TRUE(large) << res["correctness"]["slowest_cases"].dump();
  fs::remove_all(out);
}

}  // namespace
}  // namespace kqual
