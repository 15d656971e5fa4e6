// The in-place check without a GPU: which output goes on which input (the contract's declaration
// and the manifest's claim decide), the in-place request made from a case's separate-buffer one, and
// its outputs judged, a wrong element named as aliasing_wrong.
#include "kqual/check/in_place.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "kqual/check/run_to_run.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/files.hpp"
#include "kqual/worker/protocol.hpp"
#include "test_util.hpp"

namespace kqual::check {
namespace {
namespace fs = std::filesystem;

contract::Supports supports_of(bool in_place) {
  contract::Supports s;
  s.dtypes = {DType::f32};
  s.in_place = in_place;
  return s;
}

TEST(InPlacePlan, TheContractsDeclarationPairsTheOutputWithItsInput) {
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  const InPlacePlan p = plan_in_place(c, supports_of(true));
  ASSERT_EQ(p.pairs.size(), 1u);
  EXPECT_EQ(p.pairs[0], (AliasPair{"y", "x"}));  // never y on r: the domain says x
  EXPECT_EQ(p.not_exercised, "");
  for (const char* name : {"softmax", "exclusive_scan"}) {
    const InPlacePlan q = plan_in_place(contract::find_contract(name), supports_of(true));
    ASSERT_EQ(q.pairs.size(), 1u) << name;
    EXPECT_EQ(q.pairs[0], (AliasPair{"y", "x"})) << name;
  }
}

TEST(InPlacePlan, ADeclaredContractsAliasesKeyDecides) {
  // swiglu declares y.aliases = "a": y goes on a, not on b.
  const contract::Contract& c = contract::load_declared_contract(test::repo_root() / "contracts/swiglu/contract.toml");
  const InPlacePlan p = plan_in_place(c, supports_of(true));
  ASSERT_EQ(p.pairs.size(), 1u);
  EXPECT_EQ(p.pairs[0], (AliasPair{"y", "a"}));
}

TEST(InPlacePlan, NoClaimOrNoInPlaceFormRunsNothingAndSaysWhy) {
  const InPlacePlan unclaimed = plan_in_place(contract::find_contract("residual_add_relu"), supports_of(false));
  EXPECT_TRUE(unclaimed.pairs.empty());
  EXPECT_NE(unclaimed.not_exercised.find("not claimed"), std::string::npos) << unclaimed.not_exercised;
  EXPECT_NE(unclaimed.not_exercised.find("aliasing_not_claimed"), std::string::npos) << unclaimed.not_exercised;
  for (const char* name : {"gemm", "transpose", "reduce_sum"}) {
    const InPlacePlan none = plan_in_place(contract::find_contract(name), supports_of(true));
    EXPECT_TRUE(none.pairs.empty()) << name;
    EXPECT_NE(none.not_exercised.find("no in-place form"), std::string::npos) << none.not_exercised;
  }
}

contract::Tensor tensor(const std::string& name, const std::vector<float>& v) {
  contract::Tensor t;
  t.name = name;
  t.dtype = DType::f32;
  t.elements = std::int64_t(v.size());
  t.bytes.resize(v.size() * 4);
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

TEST(InPlacePlan, ACaseRunsOnlyThePairsWhoseTensorsHoldTheSameBytes) {
  const InPlacePlan p = plan_in_place(contract::find_contract("residual_add_relu"), supports_of(true));
  const std::vector<contract::Tensor> in = {tensor("x", {1, 2, 3}), tensor("r", {1, 1, 1})};
  EXPECT_EQ(case_pairs(p, in, {tensor("y", {2, 3, 4})}).size(), 1u);
  EXPECT_TRUE(case_pairs(p, in, {tensor("y", {2, 3})}).empty());  // another size: no alias for this case
  EXPECT_EQ(describe_pairs(p.pairs), "y on x");
}

worker::RunRequest separate_request(const fs::path& dir) {
  worker::RunRequest r;
  r.module = "/tmp/k.cubin";
  r.buffers = {{"x", worker::BufferKind::input, 16, 4, (dir / "x.in").string()},
               {"r", worker::BufferKind::input, 16, 4, (dir / "r.in").string()},
               {"y", worker::BufferKind::output, 16, 4, ""},
               {"tmp", worker::BufferKind::scratch, 64, 0, ""}};
  worker::Launch l;
  l.kernel = "k";
  l.args = {worker::Arg::pointer("x"), worker::Arg::pointer("r"), worker::Arg::pointer("y")};
  r.launches = {l};
  r.poison = {0xFF, 0x7F};
  r.placements = {"trap_after", "trap_before"};
  r.trap_only = {"x"};
  r.scribble = {0xA5, 0x5A};
  r.out_files["y"] = {(dir / "y.out0").string(), (dir / "y.out1").string()};
  return r;
}

TEST(InPlaceRequest, TheOutputBecomesAViewOfItsInputUploadedFromTheHostCopy) {
  const fs::path dir = "/tmp/case";
  const worker::RunRequest sep = separate_request(dir);
  const worker::RunRequest in = in_place_request(sep, {{"y", "x"}}, dir);
  ASSERT_EQ(in.buffers.size(), 4u);
  EXPECT_EQ(in.buffers[2].aliases, "x");        // y's pointer is x's
  EXPECT_EQ(in.buffers[0].aliases, "");
  EXPECT_EQ(in.buffers[0].file, sep.buffers[0].file);  // x uploaded before each run from the copy the reference read
  EXPECT_EQ(in.buffers[1].file, sep.buffers[1].file);
  EXPECT_EQ(in.buffers[3].kind, worker::BufferKind::scratch);  // scratch poisoned as usual
  EXPECT_EQ(in.launches, sep.launches);         // the launch names y; the worker binds it to x's view
  EXPECT_EQ(in.poison, sep.poison);
  EXPECT_EQ(in.scribble, sep.scribble);
  EXPECT_EQ(in.placements, (std::vector<std::string>{"guarded", "guarded"}));  // y inside x's guard regions
  EXPECT_TRUE(in.trap_only.empty());
  EXPECT_EQ(in.out_files.at("y"), (std::vector<std::string>{"/tmp/case/y.inplace0", "/tmp/case/y.inplace1"}));
  EXPECT_EQ(sep.out_files.at("y")[0], "/tmp/case/y.out0");  // the separate run's files are kept for the comparison
  // What the worker is sent survives the wire, the alias included.
  const worker::RunRequest wire = worker::run_request_from_json(json::parse(worker::to_json(in).dump()));
  EXPECT_EQ(wire.buffers[2].aliases, "x");
}

void write_floats(const std::string& file, const std::vector<float>& v) {
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
}

worker::Answer<worker::RunReply> ok_reply() {
  worker::Answer<worker::RunReply> a;
  a.raw.status = worker::WorkerReply::Status::ok;
  a.reply = worker::RunReply{};
  a.reply->runs.resize(2);
  return a;
}

struct Judged {
  bool ok = false;
  CaseResult res;
};

// The separate run wrote `want` twice; the in-place run wrote `run1`, `run2`.
Judged judge(const std::vector<float>& want, const std::vector<float>& run1, const std::vector<float>& run2,
             worker::Answer<worker::RunReply> reply = ok_reply()) {
  ScratchDir dir("kqual-in-place");
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  const worker::RunRequest sep = separate_request(dir.path());
  const worker::RunRequest in = in_place_request(sep, {{"y", "x"}}, dir.path());
  for (const auto& f : sep.out_files.at("y")) write_floats(f, want);
  write_floats(in.out_files.at("y")[0], run1);
  write_floats(in.out_files.at("y")[1], run2);
  Judged j;
  const RunToRunPolicy policy = run_to_run_policy(c, supports_of(true), DType::f32);
  j.ok = judge_in_place(c, policy, reply, in, sep, {{"y", "x"}}, {tensor("y", want)}, j.res);
  return j;
}

TEST(InPlaceJudge, OutputsMatchingTheReferencePass) {
  const std::vector<float> y = {0.5f, 0.f, 3.f, 1.25f};
  EXPECT_TRUE(judge(y, y, y).ok);
}

TEST(InPlaceJudge, AWrongElementIsAliasingWrongNamingIndexGotAndExpected) {
  const std::vector<float> y = {0.5f, 0.f, 3.f, 1.25f};
  const Judged j = judge(y, y, {0.5f, 0.f, 3.f, 2.5f});  // run 2, element 3: re-read after it was overwritten
  EXPECT_FALSE(j.ok);
  EXPECT_EQ(j.res.code, "aliasing_wrong");
  EXPECT_NE(j.res.detail.find("y in place (y on x), run 2: element 3 is 2.5"), std::string::npos) << j.res.detail;
  EXPECT_NE(j.res.detail.find("the reference gives 1.25"), std::string::npos) << j.res.detail;
  EXPECT_NE(j.res.detail.find("with separate buffers it was 1.25"), std::string::npos) << j.res.detail;
  ASSERT_TRUE(j.res.failing_elements.is_array());
  ASSERT_FALSE(j.res.failing_elements.empty());
  const json& e = j.res.failing_elements[0];
  EXPECT_EQ(e.at("index"), 3);
  EXPECT_EQ(e.at("run"), 2);
  EXPECT_EQ(e.at("in_place"), "y on x");
  EXPECT_EQ(e.at("expected_from"), "reference");
}

TEST(InPlaceJudge, AnElementLeftHoldingItsInputIsJudgedByValueNotAsPoison) {
  // 0xFF.. (run 1's poison) left in y on x is the input's bytes, not an unwritten element: aliasing_wrong.
  const std::vector<float> y = {0.5f, 0.f};
  float nan_ff;
  const std::uint32_t ff = 0xFFFFFFFFu;
  std::memcpy(&nan_ff, &ff, 4);
  const Judged j = judge(y, {nan_ff, 0.f}, y);
  EXPECT_FALSE(j.ok);
  EXPECT_EQ(j.res.code, "aliasing_wrong") << j.res.detail;
  EXPECT_NE(j.res.detail.find("element 0"), std::string::npos) << j.res.detail;
}

TEST(InPlaceJudge, AFaultOrAWritePastTheInputKeepsItsCodeAndSaysItWasTheInPlaceRun) {
  const std::vector<float> y = {1.f};
  worker::Answer<worker::RunReply> crashed;
  crashed.raw.status = worker::WorkerReply::Status::crashed;
  crashed.raw.reason = "worker died";
  Judged j = judge(y, y, y, crashed);
  EXPECT_FALSE(j.ok);
  EXPECT_EQ(j.res.code, "crash");
  EXPECT_NE(j.res.detail.find("in the in-place run (y on x)"), std::string::npos) << j.res.detail;
  worker::Answer<worker::RunReply> past = ok_reply();
  past.reply->runs[0].guard_violations.push_back({"x", "after", 4, 16});
  j = judge(y, y, y, past);
  EXPECT_EQ(j.res.code, "out_of_bounds_write");
  EXPECT_NE(j.res.detail.find("in the in-place run"), std::string::npos) << j.res.detail;
  worker::Answer<worker::RunReply> mutated = ok_reply();
  mutated.reply->runs[1].inputs.push_back({"r", "00", "11", 8});  // r is not y's input: it must not change
  j = judge(y, y, y, mutated);
  EXPECT_EQ(j.res.code, "input_mutated");
}

}  // namespace
}  // namespace kqual::check
