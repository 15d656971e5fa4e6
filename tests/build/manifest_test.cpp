#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/build/manifest.hpp"
#include "test_util.hpp"

namespace kqual::build {
namespace {
namespace fs = std::filesystem;

class ManifestTest : public ::testing::Test {
 protected:
  ScratchDir dir{"kqual-manifest-test"};
  void SetUp() override { std::ofstream(dir.path() / "k.cu") << "__global__ void k(float* y) {}\n"; }
  std::string error_of(const std::string& toml) {
    try {
      parse_manifest(toml, dir.path() / "kqual.toml");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      return e.what();
    }
    return "no error";
  }
  static std::string good() {
    return R"TOML([candidate]
contract = "residual_add_relu"
source = "k.cu"
[supports]
dtypes = ["f32"]
[[launch]]
kernel = "k<{T}>"
grid = "cdiv(n, 256)"
block = 256
args = ["x", "r", "y", "n:i64"]
)TOML";
  }
  static std::string replace(std::string s, const std::string& a, const std::string& b) {
    auto p = s.find(a);
    EXPECT_NE(p, std::string::npos) << a;
    return s.replace(p, a.size(), b);
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
  Manifest m = parse_manifest(replace(good(), "contract = \"residual_add_relu\"", "contract = \"" + file.string() + "\""),
                              dir.path() / "kqual.toml");
  EXPECT_EQ(m.contract, "residual_add_relu_declared");
  EXPECT_EQ(m.resolved_contract().name(), "residual_add_relu_declared");
}

TEST_F(ManifestTest, ParsesAGoodManifest) {
  Manifest m = parse_manifest(good(), dir.path() / "kqual.toml");
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

TEST_F(ManifestTest, BadManifestsNameFileKeyAndValue) {
  std::string file = (dir.path() / "kqual.toml").string();
  auto e = error_of("[candidate\n");
  EXPECT_NE(e.find(file), std::string::npos) << e;
  EXPECT_NE(e.find(file + ":1:11: TOML syntax error"), std::string::npos) << "line and column: " << e;
  e = error_of(replace(good(), "residual_add_relu", "residual_add_reluu"));
  EXPECT_NE(e.find("candidate.contract"), std::string::npos) << e;
  EXPECT_NE(e.find("residual_add_reluu"), std::string::npos) << e;
  e = error_of(replace(good(), "\"k.cu\"", "\"missing.cu\""));
  EXPECT_NE(e.find("candidate.source"), std::string::npos) << e;
  EXPECT_NE(e.find("missing.cu"), std::string::npos) << e;
  e = error_of(replace(good(), "[\"f32\"]", "[\"f64\"]"));
  EXPECT_NE(e.find("supports.dtypes[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("'f64'"), std::string::npos) << e;
  e = error_of(replace(good(), "\"cdiv(n, 256)\"", "\"cdiv(n, \""));
  EXPECT_NE(e.find("launch[0].grid"), std::string::npos) << e;
  e = error_of(replace(good(), "\"cdiv(n, 256)\"", "\"cdiv(m, 256)\""));
  EXPECT_NE(e.find("unknown name 'm'"), std::string::npos) << e;
  e = error_of(replace(good(), "\"n:i64\"", "\"n\""));
  EXPECT_NE(e.find("launch[0].args[3]"), std::string::npos) << e;
  EXPECT_NE(e.find("give its C type"), std::string::npos) << e;
  e = error_of(replace(good(), "\"n:i64\"", "\"n:f32\""));
  EXPECT_NE(e.find("unknown scalar type 'f32'"), std::string::npos) << e;
  e = error_of(replace(good(), "\"x\", ", "\"z\", "));
  EXPECT_NE(e.find("'z' is neither"), std::string::npos) << e;
  e = error_of(replace(good(), "\"x\", \"r\", \"y\", ", "\"x\", \"r\", "));
  EXPECT_NE(e.find("output tensor 'y' is not passed"), std::string::npos) << e;
  e = error_of(replace(good(), "block = 256", "block = 256\nthreads = 3"));
  EXPECT_NE(e.find("launch[0].threads"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
  e = error_of(replace(good(), "dtypes = [\"f32\"]", "dtypes = [\"f32\"]\nmin_alignment_bytes = 12"));
  EXPECT_NE(e.find("supports.min_alignment_bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("12"), std::string::npos) << e;
  e = error_of(replace(good(), "source = \"k.cu\"", "source = \"k.cu\"\nnvrtc_options = [\"-arch=sm_80\"]"));
  EXPECT_NE(e.find("set by kqual"), std::string::npos) << e;
  e = error_of(replace(good(), "block = 256", "block = [256, 1, 1, 1]"));
  EXPECT_NE(e.find("launch[0].block"), std::string::npos) << e;
  e = error_of(replace(good(), "block = 256", "block = true"));
  EXPECT_NE(e.find("got true"), std::string::npos) << e;
  e = error_of("[supports]\ndtypes=[\"f32\"]\n");
  EXPECT_NE(e.find("[candidate]"), std::string::npos) << e;
}

TEST_F(ManifestTest, LoadFromDirectoryAndMissingManifest) {
  std::ofstream(dir.path() / "kqual.toml") << good();
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
  EXPECT_FALSE(parse_manifest(good(), dir.path() / "kqual.toml").expect_given_hash_slots);
  Manifest m = parse_manifest(good() + "[expect]\nrejected_for = \"harness_memory_written\"\ngiven_hash_slots = true\n",
                              dir.path() / "kqual.toml");
  EXPECT_TRUE(m.expect_given_hash_slots);
  EXPECT_EQ(m.expect_rejected_for.value_or(""), "harness_memory_written");
  const std::string e = error_of(good() + "[expect]\nrejected_for = \"harness_memory_written\"\ngiven_hash_slots = \"yes\"\n");
  EXPECT_NE(e.find("expect.given_hash_slots"), std::string::npos) << e;
  EXPECT_NE(e.find("true or false"), std::string::npos) << e;
  // Without rejected_for the [expect] table is refused (only known-broken candidates have one).
  EXPECT_NE(error_of(good() + "[expect]\ngiven_hash_slots = true\n").find("rejected_for"), std::string::npos);
}

// [supports] deterministic: a manifest may tighten its contract's run-to-run rule, never loosen it.
TEST_F(ManifestTest, DeterministicClaimTightensButNeverLoosens) {
  // residual_add_relu requires bitwise reproducibility: false is an input error naming file, key and contract.
  std::string e = error_of(replace(good(), "dtypes = [\"f32\"]", "dtypes = [\"f32\"]\ndeterministic = false"));
  EXPECT_NE(e.find((dir.path() / "kqual.toml").string()), std::string::npos) << e;
  EXPECT_NE(e.find("supports.deterministic"), std::string::npos) << e;
  EXPECT_NE(e.find("contract residual_add_relu requires bitwise reproducible results for f32"), std::string::npos) << e;
  EXPECT_NE(e.find("Opt-out: none"), std::string::npos) << e;
  // The same claim true changes nothing there (already required); absent, the contract's rule.
  Manifest same = parse_manifest(replace(good(), "dtypes = [\"f32\"]", "dtypes = [\"f32\"]\ndeterministic = true"),
                                 dir.path() / "kqual.toml");
  EXPECT_EQ(same.supports.deterministic, std::optional<bool>(true));
  EXPECT_FALSE(parse_manifest(good(), dir.path() / "kqual.toml").supports.deterministic.has_value());
  e = error_of(replace(good(), "dtypes = [\"f32\"]", "dtypes = [\"f32\"]\ndeterministic = \"no\""));
  EXPECT_NE(e.find("supports.deterministic: expected true or false"), std::string::npos) << e;

  // reduce_sum does not require it: false (atomics) is admitted, true tightens.
  const std::string reduce = R"TOML([candidate]
contract = "reduce_sum"
source = "k.cu"
[supports]
dtypes = ["f32"]
DETERMINISTIC
[[launch]]
kernel = "k"
grid = "rows * 4"
block = 256
args = ["x", "y", "rows:i64", "cols:i64"]
)TOML";
  EXPECT_EQ(parse_manifest(replace(reduce, "DETERMINISTIC", "deterministic = false"), dir.path() / "kqual.toml").supports.deterministic,
            std::optional<bool>(false));
  EXPECT_EQ(parse_manifest(replace(reduce, "DETERMINISTIC", "deterministic = true"), dir.path() / "kqual.toml").supports.deterministic,
            std::optional<bool>(true));

  // exclusive_scan requires it for i32 only: false with i32 claimed is refused, naming the dtypes
  // that a non-reproducible kernel may claim.
  const std::string scan = R"TOML([candidate]
contract = "exclusive_scan"
source = "k.cu"
[supports]
dtypes = DTYPES
deterministic = false
[[launch]]
kernel = "k"
grid = "cdiv(n, 256)"
block = 256
args = ["x", "y", "n:i64"]
)TOML";
  e = error_of(replace(scan, "DTYPES", "[\"f32\", \"i32\"]"));
  EXPECT_NE(e.find("contract exclusive_scan requires bitwise reproducible results for i32"), std::string::npos) << e;
  EXPECT_NE(e.find("claim only dtypes it does not require it for (f32)"), std::string::npos) << e;
  EXPECT_FALSE(parse_manifest(replace(scan, "DTYPES", "[\"f32\"]"), dir.path() / "kqual.toml").supports.deterministic.value_or(true));
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
