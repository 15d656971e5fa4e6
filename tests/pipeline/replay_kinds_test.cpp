// kqual replay beyond one built-in candidate (pipeline/replay.hpp), CPU only: a declared contract
// (contracts/rmsnorm, its known-broken missing_tail compiled from ../../good/kernel.cu) with its
// folder copied and bf16 inputs as their bits; a case generated on the device (described by the
// generator's seed and streams, no bytes); and a compare result, OLD and NEW on the case where they
// differ.
#include <gtest/gtest.h>

#include <cstring>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/pipeline/replay.hpp"
#include "contract/contract_test_util.hpp"
#include "replay_test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;
using namespace kqual::test::replay;

constexpr std::uint64_t kKindsSeed = 11;

TEST(ReplayDeclared, TheContractFolderTravelsAndBf16InputsAreTheirBits) {
  ScratchDir scratch("kqual-replay-declared");
  const fs::path cand = test::repo_root() / "candidates/rmsnorm/broken/missing_tail";
  const build::Manifest m = build::load_manifest(cand);
  const contract::Contract& c = m.resolved_contract();
  std::optional<contract::CaseSpec> spec;
  for (const auto& s : c.correctness_cases(m.supports, kKindsSeed, false))
    if (s.dtype == DType::bf16 && s.family == "base" && s.offset_elements == 0 && s.dims.at("cols") % 4 != 0 &&
        s.dims.at("rows") * s.dims.at("cols") < 100000) {
      spec = s;
      break;
    }
  ASSERT_TRUE(spec) << "rmsnorm has a small bf16 case whose cols leave a tail";
  ReplayOptions o;
  o.out_dir = scratch.path() / "repro";
  const ReplayOutcome out = replay(check_results(cand, scratch.path(), kKindsSeed, {failing(c, *spec, "unwritten_output")}), o);
  const fs::path d = o.out_dir;
  EXPECT_TRUE(out.inputs_verified);
  // The contract as the run found it, copied whole, and the one command naming the copy.
  const contract::ContractProvenance p = contract::ContractLookup().provenance(c);
  EXPECT_EQ(read_text_file(d / "contracts/rmsnorm/contract.toml"), read_text_file(p.file));
  EXPECT_TRUE(fs::is_regular_file(d / "contracts/rmsnorm/reference.py"));
  EXPECT_TRUE(fs::is_regular_file(d / "contracts/rmsnorm/reference.cu"));
  ASSERT_EQ(out.commands.size(), 1u);
  EXPECT_EQ(out.commands[0], fmt::format("kqual check candidate --case {} --seed 11 --contracts contracts --out kqual-out/candidate", spec->id));
  // ../../good/kernel.cu is copied beside the manifest, which names it there; the options stay.
  EXPECT_EQ(read_text_file(d / "candidate/kernel.cu"), read_text_file(test::repo_root() / "candidates/rmsnorm/good/kernel.cu"));
  const std::string toml = read_text_file(d / "candidate/kqual.toml");
  EXPECT_NE(toml.find("source = \"kernel.cu\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("nvrtc_options = [\"-DKQUAL_BUG_MISSING_TAIL\"]"), std::string::npos) << toml;
  EXPECT_EQ(toml.find("../../good"), std::string::npos);
  // x is bf16 (its bits, uint16), w stays f32; the bytes are the contract's.
  const contract::CaseData data = c.make_case(*spec);
  for (const auto& t : data.inputs) {
    const Npy n = read_npy(d / "inputs" / (t.name + ".npy"));
    EXPECT_EQ(n.data, t.bytes) << t.name;
    EXPECT_NE(n.header.find(t.name == "x" ? "'descr': '<u2'" : "'descr': '<f4'"), std::string::npos) << n.header;
  }
  EXPECT_NE(read_npy(d / "inputs/x.npy").header.find(fmt::format("'shape': ({}, {})", spec->dims.at("rows"), spec->dims.at("cols"))),
            std::string::npos);
  if (!contract::test_util::have_numpy()) {
    bool said = false;
    for (const auto& note : out.notes) said = said || note.find("reference not computed") != std::string::npos;
    EXPECT_TRUE(said) << "without NumPy the folder says why it holds no reference";
    GTEST_SKIP() << "no Python 3 with NumPy: the reference output was not compared";
  }
  contract::ReferenceHost host;
  const std::vector<contract::Tensor> expected = c.reference(data, host);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(read_npy(d / "reference/y.npy").data, expected[0].bytes);
  EXPECT_TRUE(fs::is_regular_file(d / "reference/y.f64.npy")) << "rmsnorm's y is compared under a bound";
  EXPECT_TRUE(fs::is_regular_file(d / "reference/y.bound.npy"));
  // rmsnorm's [reference] alternative (a +-Inf row's finite elements may be +-0): its values beside the reference's.
  ASSERT_EQ(expected[0].alt.size(), expected[0].ref.size());
  const Npy alt = read_npy(d / "reference/y.alt.f64.npy");
  ASSERT_EQ(alt.data.size(), expected[0].alt.size() * sizeof(double));
  EXPECT_EQ(std::memcmp(alt.data.data(), expected[0].alt.data(), alt.data.size()), 0);
}

TEST(ReplayGenerated, ACaseMadeOnTheDeviceIsDescribedNotWritten) {
  ScratchDir scratch("kqual-replay-generated");
  const fs::path cand = test::repo_root() / "candidates/residual_add_relu/broken/int32_index";
  const build::Manifest m = build::load_manifest(cand);
  const contract::Contract& c = m.resolved_contract();
  const std::vector<contract::CaseSpec> big = c.index_cases(m.supports, kKindsSeed);
  ASSERT_FALSE(big.empty());
  check::CaseResult f = failing(c, big.front(), "index_overflow");
  f.failing_elements = json();
  ReplayOptions o;
  o.out_dir = scratch.path() / "repro";
  const ReplayOutcome out = replay(check_results(cand, scratch.path(), kKindsSeed, {f}), o);
  EXPECT_TRUE(out.generated_on_device);
  EXPECT_TRUE(out.tensors.empty());
  EXPECT_FALSE(fs::exists(o.out_dir / "inputs"));
  const json case_doc = json::parse(read_text_file(o.out_dir / "case.json"));
  EXPECT_EQ(case_doc["generated"]["seed"], big.front().seed);
  ASSERT_EQ(case_doc["generated"]["inputs"].size(), 2u);
  EXPECT_EQ(case_doc["generated"]["inputs"][0]["name"], "x");
  EXPECT_EQ(case_doc["generated"]["inputs"][1]["stream"], 1);
  EXPECT_EQ(case_doc["generated"]["inputs"][0]["elements"], big.front().dims.at("n"));
  EXPECT_FALSE(case_doc["generated"]["windows_checked"].empty());
  const std::string readme = read_text_file(o.out_dir / "README.md");
  EXPECT_NE(readme.find("generated_bits(seed, s, i, dtype)"), std::string::npos);
  EXPECT_NE(readme.find("--case '" + big.front().id + "'"), std::string::npos) << "quoted: the id holds a '^'";
  EXPECT_NE(readme.find("no per-element record"), std::string::npos);
}

TEST(ReplayCompare, OldAndNewOnTheCaseWhereTheyDiffer) {
  ScratchDir scratch("kqual-replay-compare");
  const fs::path old_dir = test::repo_root() / "candidates/residual_add_relu/good";
  const fs::path new_dir = test::repo_root() / "candidates/residual_add_relu/broken/missing_tail";
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  const std::uint64_t seed = QualifyOptions{}.seed;  // compare's command line gives none
  const contract::CaseSpec both = case_of(new_dir, seed, "f32/n=3/normal");
  const contract::CaseSpec only_new = case_of(new_dir, seed, "f32/n=257/normal");
  // Both fail n=3 (as if OLD were broken there too); only NEW fails n=257: that is the case replayed.
  const json doc = compare_results(old_dir, new_dir, scratch.path(), correctness("good", {failing(c, both, "wrong_result")}),
                                   correctness("missing_tail", {failing(c, both, "wrong_result"), failing(c, only_new, "unwritten_output")}));
  ReplayOptions o;
  o.out_dir = scratch.path() / "repro";
  const ReplayOutcome out = replay(doc, o);
  EXPECT_EQ(out.case_id, "f32/n=257/normal");
  EXPECT_EQ(out.code, "unwritten_output");
  ASSERT_EQ(out.sides, (std::vector<std::string>{"old", "new"}));
  ASSERT_EQ(out.commands.size(), 2u);
  EXPECT_EQ(out.commands[0], "kqual check old --case f32/n=257/normal --seed 20261202 --out kqual-out/old");
  EXPECT_EQ(out.commands[1], "kqual check new --case f32/n=257/normal --seed 20261202 --out kqual-out/new");
  EXPECT_EQ(read_text_file(o.out_dir / "old/kernel.cu"), read_text_file(old_dir / "kernel.cu"));
  EXPECT_EQ(read_text_file(o.out_dir / "new/kernel.cu"), read_text_file(new_dir / "kernel.cu"));
  const json f = json::parse(read_text_file(o.out_dir / "failing.json"));
  EXPECT_EQ(f["old"]["status"], "pass");
  EXPECT_EQ(f["new"]["code"], "unwritten_output");
  EXPECT_EQ(read_npy(o.out_dir / "inputs/x.npy").data, c.make_case(only_new).inputs[0].bytes);
  // A case both sides fail may be asked for by id; one neither failed is unknown.
  ReplayOptions by_id = o;
  by_id.out_dir = scratch.path() / "both";
  by_id.case_id = "f32/n=3/normal";
  EXPECT_EQ(replay(doc, by_id).code, "wrong_result");
  by_id.out_dir = scratch.path() / "neither";
  by_id.case_id = "f32/n=1/normal";
  EXPECT_THROW((void)replay(doc, by_id), Error);
  EXPECT_FALSE(fs::exists(by_id.out_dir));
}

}  // namespace
}  // namespace kqual::pipeline
