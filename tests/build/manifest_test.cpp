#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/build/manifest.hpp"
#include "manifest_util.hpp"
#include "test_util.hpp"

namespace kqual::build {
namespace {
namespace fs = std::filesystem;

// A candidate manifest of source k.cu and one kernel launch of block 256; `supports` is the body of
// its [supports] table, `args` a TOML array.
std::string kernel_manifest(const std::string& contract, const std::string& supports, const std::string& kernel,
                            const std::string& grid, const std::string& args) {
  return "[candidate]\ncontract = \"" + contract + "\"\nsource = \"k.cu\"\n[supports]\n" + supports +
         "\n[[launch]]\nkernel = \"" + kernel + "\"\ngrid = \"" + grid + "\"\nblock = 256\nargs = " + args + "\n";
}

class ManifestTest : public test::ManifestFixture {
 protected:
  ManifestTest() : ManifestFixture("kqual-manifest-test") {}
  void SetUp() override { std::ofstream(dir.path() / "k.cu") << "__global__ void k(float* y) {}\n"; }
  static std::string good() {
    return kernel_manifest("residual_add_relu", "dtypes = [\"f32\"]", "k<{T}>", "cdiv(n, 256)", R"(["x", "r", "y", "n:i64"])");
  }
};

// A manifest made in code carries no contract until it is given one: asking for it then is kqual's
// own error, said as such, never a null dereference; once set, copies carry it.
TEST(ManifestContract, AHandMadeManifestNamesTheMissingContract) {
  Manifest m;
  m.name = "hand_made";
  m.contract = "softmax";  // a name alone resolves nothing
  try {
    (void)m.resolved_contract();
    FAIL() << "a manifest without a resolved contract returned one";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("hand_made"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set_contract"), std::string::npos) << e.what();
  }
  m.set_contract(contract::find_contract("residual_add_relu"));
  EXPECT_EQ(m.contract, "residual_add_relu");
  const Manifest copy = m;
  EXPECT_EQ(&copy.resolved_contract(), &contract::find_contract("residual_add_relu"));
}

// A contract named by its file is resolved when the manifest is read and carried from there: no
// later step looks it up by the name that file declares.
TEST_F(ManifestTest, CarriesAContractNamedByPath) {
  const fs::path file = test::repo_root() / "contracts/residual_add_relu_declared/contract.toml";
  Manifest m = parse(replace(good(), "contract = \"residual_add_relu\"", "contract = \"" + file.string() + "\""));
  EXPECT_EQ(m.contract, "residual_add_relu_declared");
  EXPECT_EQ(m.resolved_contract().name(), "residual_add_relu_declared");
}

TEST_F(ManifestTest, ParsesAGoodManifest) {
  Manifest m = parse(good());
  EXPECT_EQ(m.contract, "residual_add_relu");
  EXPECT_EQ(&m.resolved_contract(), &contract::find_contract("residual_add_relu"));  // resolved once, carried
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].grid[0].eval({{"n", 1000}}), 4);
  EXPECT_EQ(m.launches[0].block[0].eval({}), 256);
  EXPECT_EQ(m.launches[0].args.size(), 4u);
  EXPECT_EQ(m.launches[0].args[3].kind, LaunchArg::dim);
  EXPECT_EQ(m.launches[0].args[3].type, ScalarType::i64);
  EXPECT_EQ(m.kernel_names(DType::f32), std::vector<std::string>{"k<float>"});
  EXPECT_EQ(m.kernel_names(DType::bf16), std::vector<std::string>{"k<__nv_bfloat16>"});
  EXPECT_EQ(m.supports.min_alignment_bytes, 16);
  EXPECT_EQ(m.name, dir.path().filename().string());
}

// One edit of good() that makes it bad, and what the error must name.
struct BadEdit {
  std::string from, to;
  std::vector<std::string> named;
};

TEST_F(ManifestTest, BadManifestsNameFileKeyAndValue) {
  std::string file = manifest_path().string();
  auto e = error_of("[candidate\n");
  EXPECT_NE(e.find(file), std::string::npos) << e;
  EXPECT_NE(e.find(file + ":1:11: TOML syntax error"), std::string::npos) << "line and column: " << e;
  const BadEdit edits[] = {
      {"residual_add_relu", "residual_add_reluu", {"candidate.contract", "residual_add_reluu"}},
      {"\"k.cu\"", "\"missing.cu\"", {"candidate.source", "missing.cu"}},
      {"[\"f32\"]", "[\"f64\"]", {"supports.dtypes[0]", "'f64'"}},
      {"\"cdiv(n, 256)\"", "\"cdiv(n, \"", {"launch[0].grid"}},
      {"\"cdiv(n, 256)\"", "\"cdiv(m, 256)\"", {"unknown name 'm'"}},
      {"\"n:i64\"", "\"n\"", {"launch[0].args[3]", "give its C type"}},
      {"\"n:i64\"", "\"n:f32\"", {"unknown scalar type 'f32'"}},
      {"\"x\", ", "\"z\", ", {"'z' is neither"}},
      {"\"x\", \"r\", \"y\", ", "\"x\", \"r\", ", {"output tensor 'y' is not passed"}},
      {"block = 256", "block = 256\nthreads = 3", {"launch[0].threads", "unknown key"}},
      {"dtypes = [\"f32\"]", "dtypes = [\"f32\"]\nmin_alignment_bytes = 12", {"supports.min_alignment_bytes", "12"}},
      {"source = \"k.cu\"", "source = \"k.cu\"\nnvrtc_options = [\"-arch=sm_80\"]", {"set by kqual"}},
      {"block = 256", "block = [256, 1, 1, 1]", {"launch[0].block"}},
      {"block = 256", "block = true", {"got true"}},
  };
  for (const auto& [from, to, named] : edits) expect_error_naming(replace(good(), from, to), named);
  expect_error_naming("[supports]\ndtypes=[\"f32\"]\n", {"[candidate]"});
}

TEST_F(ManifestTest, LoadFromDirectoryAndMissingManifest) {
  std::ofstream(manifest_path()) << good();
  EXPECT_EQ(load_manifest(dir.path()).contract, "residual_add_relu");
  try {
    load_manifest(dir.path() / "nowhere");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no candidate manifest"), std::string::npos);
  }
}

// [expect] given_hash_slots: selftest hands a known-broken candidate kqual's hash-slot address.
TEST_F(ManifestTest, ExpectGivenHashSlotsIsABooleanOfAKnownBrokenCandidate) {
  EXPECT_FALSE(parse(good()).expect_given_hash_slots);
  Manifest m = parse(good() + "[expect]\nrejected_for = \"harness_memory_written\"\ngiven_hash_slots = true\n");
  EXPECT_TRUE(m.expect_given_hash_slots);
  EXPECT_EQ(m.expect_rejected_for.value_or(""), "harness_memory_written");
  expect_error_naming(good() + "[expect]\nrejected_for = \"harness_memory_written\"\ngiven_hash_slots = \"yes\"\n",
                      {"expect.given_hash_slots", "true or false"});
  // Without rejected_for the [expect] table is refused (only known-broken candidates have one).
  EXPECT_NE(error_of(good() + "[expect]\ngiven_hash_slots = true\n").find("rejected_for"), std::string::npos);
}

// [supports] deterministic: a manifest may tighten its contract's run-to-run rule, never loosen it.
TEST_F(ManifestTest, DeterministicClaimTightensButNeverLoosens) {
  // residual_add_relu requires bitwise reproducibility: false is an input error naming file, key and contract.
  const std::string dtypes = "dtypes = [\"f32\"]";
  expect_error_naming(replace(good(), dtypes, dtypes + "\ndeterministic = false"),
                      {manifest_path().string(), "supports.deterministic",
                       "contract residual_add_relu requires bitwise reproducible results for f32", "Opt-out: none"});
  // The same claim true changes nothing there (already required); absent, the contract's rule.
  Manifest same = parse(replace(good(), dtypes, dtypes + "\ndeterministic = true"));
  EXPECT_EQ(same.supports.deterministic, std::optional<bool>(true));
  EXPECT_FALSE(parse(good()).supports.deterministic.has_value());
  expect_error_naming(replace(good(), dtypes, dtypes + "\ndeterministic = \"no\""),
                      {"supports.deterministic: expected true or false"});

  // reduce_sum does not require it: false (atomics) is admitted, true tightens.
  const std::string reduce =
      kernel_manifest("reduce_sum", "dtypes = [\"f32\"]\nDETERMINISTIC", "k", "rows * 4", R"(["x", "y", "rows:i64", "cols:i64"])");
  EXPECT_EQ(parse(replace(reduce, "DETERMINISTIC", "deterministic = false")).supports.deterministic,
            std::optional<bool>(false));
  EXPECT_EQ(parse(replace(reduce, "DETERMINISTIC", "deterministic = true")).supports.deterministic,
            std::optional<bool>(true));

  // exclusive_scan requires it for i32 only: false with i32 claimed is refused, naming the dtypes
  // that a non-reproducible kernel may claim.
  const std::string scan =
      kernel_manifest("exclusive_scan", "dtypes = DTYPES\ndeterministic = false", "k", "cdiv(n, 256)", R"(["x", "y", "n:i64"])");
  expect_error_naming(replace(scan, "DTYPES", "[\"f32\", \"i32\"]"),
                      {"contract exclusive_scan requires bitwise reproducible results for i32",
                       "claim only dtypes it does not require it for (f32)"});
  EXPECT_FALSE(parse(replace(scan, "DTYPES", "[\"f32\"]")).supports.deterministic.value_or(true));
}

TEST(BundledManifests, EveryBundledManifestParses) {
  int count = 0;
  for (const char* sub : {"candidates", "baselines"})
    for (const auto& e : fs::recursive_directory_iterator(test::repo_root() / sub))
      if (e.path().filename() == "kqual.toml") {
        Manifest m = load_manifest(e.path());
        ++count;
        if (e.path().string().find("/broken/") != std::string::npos) {
          EXPECT_TRUE(m.expect_rejected_for.has_value()) << e.path();
        } else {
          EXPECT_FALSE(m.expect_rejected_for.has_value()) << e.path();
        }
      }
  EXPECT_GE(count, 8);
}

// The in-place known-broken candidates selftest judges: one per contract that admits in place and has
// bundled candidates, claiming in_place, the good candidate's source, expected aliasing_wrong.
TEST(BundledManifests, EveryContractAdmittingInPlaceHasAKnownBrokenSecondPass) {
  int contracts = 0;
  for (const auto& op : fs::directory_iterator(test::repo_root() / "candidates")) {
    const fs::path good = op.path() / "good/kqual.toml";
    if (!fs::exists(good)) continue;
    const Manifest g = load_manifest(good);
    if (!g.resolved_contract().domain().in_place) continue;
    ++contracts;
    const fs::path broken = op.path() / "broken/inplace_second_pass/kqual.toml";
    ASSERT_TRUE(fs::exists(broken)) << g.contract << " admits in place but has no " << broken;
    const Manifest b = load_manifest(broken);
    EXPECT_EQ(b.contract, g.contract);
    EXPECT_TRUE(b.supports.in_place) << broken;
    EXPECT_EQ(b.expect_rejected_for.value_or(""), "aliasing_wrong") << broken;
    EXPECT_EQ(fs::weakly_canonical(b.source), fs::weakly_canonical(g.source)) << broken;
    for (DType t : b.supports.dtypes) EXPECT_TRUE(g.supports.supports(t)) << broken << ": " << to_string(t);
  }
  // residual_add_relu, softmax, exclusive_scan; gelu, layernorm, layernorm_f16, masked_softmax,
  // rmsnorm, rotary, swiglu.
  EXPECT_GE(contracts, 10);
}

}  // namespace
}  // namespace kqual::build
