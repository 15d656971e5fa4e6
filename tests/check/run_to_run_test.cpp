// Two runs on the same inputs, measured: ulp and absolute distances on synthetic buffers (f32, bf16,
// f64, i32, a strided output's rows), the rule a candidate is held to (its contract's, tightened by
// its manifest), and the verdict judge_runs gives on runs written to files as the worker writes them:
// within the bound and not required → accepted with a note; beyond it → nondeterministic with the
// figures; required → nondeterministic with the figures, the reason and the opt-out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "kqual/check/evaluate.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/core/files.hpp"
#include "../../src/check/internal.hpp"
#include "judge_runs_util.hpp"

namespace kqual::check::r2r_test {
namespace fs = std::filesystem;

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<std::uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<std::uint8_t> raw_bytes(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// An expected f32 output under a bound (the reduction contracts' form): ref = the values, bound per element.
contract::Tensor bounded_f32(const std::vector<float>& ref, double bound) {
  contract::Tensor t;
  t.name = "y";
  t.dtype = DType::f32;
  t.elements = std::int64_t(ref.size());
  t.bytes = f32_bytes(ref);
  for (float v : ref) {
    t.ref.push_back(v);
    t.bound.push_back(bound);
  }
  return t;
}

// v moved k ulps up (k < 0: down).
float ulps_up(float v, int k) {
  for (int i = 0; i < std::abs(k); ++i) v = std::nextafter(v, k > 0 ? INFINITY : -INFINITY);
  return v;
}

TEST(RunToRun, UlpDistanceInEveryDtype) {
  const auto f = f32_bytes({1.0f, -0.0f, 1.0f, NAN, 3.4028235e38f, 2.0f});
  const auto g = f32_bytes({ulps_up(1.0f, 3), 0.0f, -1.0f, NAN, INFINITY, NAN});
  EXPECT_EQ(ulp_distance(DType::f32, f.data(), g.data(), 0), 3.0);
  EXPECT_EQ(ulp_distance(DType::f32, f.data(), g.data(), 1), 0.0);           // -0 and +0 meet
  EXPECT_EQ(ulp_distance(DType::f32, f.data(), g.data(), 2), 2.0 * 0x3F800000);  // across zero: both distances
  EXPECT_EQ(ulp_distance(DType::f32, f.data(), g.data(), 3), 0.0);           // two NaN
  EXPECT_EQ(ulp_distance(DType::f32, f.data(), g.data(), 4), 1.0);           // the largest finite and infinity
  EXPECT_TRUE(std::isinf(ulp_distance(DType::f32, f.data(), g.data(), 5)));  // a number and a NaN
  const auto bf = raw_bytes<std::uint16_t>({0x3F80, 0xBF80}), bg = raw_bytes<std::uint16_t>({0x3F82, 0xBF81});
  EXPECT_EQ(ulp_distance(DType::bf16, bf.data(), bg.data(), 0), 2.0);
  EXPECT_EQ(ulp_distance(DType::bf16, bf.data(), bg.data(), 1), 1.0);  // -1 and the next one away from zero
  const auto df = raw_bytes<double>({1.0}), dg = raw_bytes<double>({std::nextafter(std::nextafter(1.0, 2.0), 2.0)});
  EXPECT_EQ(ulp_distance(DType::f64, df.data(), dg.data(), 0), 2.0);
  const auto i = raw_bytes<std::int32_t>({5, -7}), j = raw_bytes<std::int32_t>({8, 7});
  EXPECT_EQ(ulp_distance(DType::i32, i.data(), j.data(), 0), 3.0);
  EXPECT_EQ(ulp_distance(DType::i32, i.data(), j.data(), 1), 14.0);
}

TEST(RunToRun, MeasuresF32AgainstTheBound) {
  const contract::Tensor y = bounded_f32({1.0f, 2.0f, 3.0f, 4.0f}, 1e-5);
  const auto a = f32_bytes({1.0f, 2.0f, 3.0f, 4.0f});
  const auto b = f32_bytes({1.0f, ulps_up(2.0f, 1), 3.0f, ulps_up(4.0f, 2)});
  EXPECT_FALSE(same_bytes(y, a.data(), b.data()));
  EXPECT_TRUE(same_bytes(y, a.data(), a.data()));
  const OutputDifference d = measure_difference(y, a.data(), b.data());
  EXPECT_EQ(d.elements, 4);
  EXPECT_EQ(d.differing, 2);
  EXPECT_EQ(d.beyond_bound, 0);
  EXPECT_EQ(d.max_ulps, 2.0);
  EXPECT_DOUBLE_EQ(d.max_abs, 2 * std::ldexp(1.0, -21));  // 2 ulps at 4 = 2 x 2^-21
  EXPECT_DOUBLE_EQ(d.bound, 1e-5);
  EXPECT_EQ(d.worst_index, 3);
  EXPECT_TRUE(d.within_bound());
  // The same buffers under a bound tighter than the difference at element 3.
  const OutputDifference tight = measure_difference(bounded_f32({1.0f, 2.0f, 3.0f, 4.0f}, 5e-7), a.data(), b.data());
  EXPECT_EQ(tight.beyond_bound, 1);
  EXPECT_EQ(tight.worst_index, 3);
  EXPECT_GT(tight.ratio, 1.0);
  // Two NaN with different payloads: bits differ, values do not (0 ulps, within any bound).
  const auto n1 = raw_bytes<std::uint32_t>({0x7FC00000u}), n2 = raw_bytes<std::uint32_t>({0x7FC00001u});
  const OutputDifference nan = measure_difference(bounded_f32({NAN}, 0), n1.data(), n2.data());
  EXPECT_EQ(nan.differing, 1);
  EXPECT_EQ(nan.max_ulps, 0.0);
  EXPECT_TRUE(nan.within_bound());
}

TEST(RunToRun, MeasuresBf16F64AndIntegers) {
  contract::Tensor bf;
  bf.name = "y";
  bf.dtype = DType::bf16;
  bf.elements = 2;
  bf.bytes = raw_bytes<std::uint16_t>({0x3F80, 0x4000});
  bf.ref = {1.0, 2.0};
  bf.bound = {0.02, 0.02};
  const auto a = raw_bytes<std::uint16_t>({0x3F80, 0x4000}), b = raw_bytes<std::uint16_t>({0x3F80, 0x4001});
  OutputDifference d = measure_difference(bf, a.data(), b.data());
  EXPECT_EQ(d.max_ulps, 1.0);
  EXPECT_DOUBLE_EQ(d.max_abs, std::ldexp(1.0, -6));  // one bf16 ulp at 2: 2^-6
  EXPECT_TRUE(d.within_bound());

  contract::Tensor f64;
  f64.name = "c";
  f64.dtype = DType::f64;
  f64.elements = 1;
  f64.bytes = raw_bytes<double>({1.0});
  f64.ref = {1.0};
  f64.bound = {1e-15};
  const auto x = raw_bytes<double>({1.0}), z = raw_bytes<double>({std::nextafter(1.0, 2.0)});
  d = measure_difference(f64, x.data(), z.data());
  EXPECT_EQ(d.max_ulps, 1.0);
  EXPECT_DOUBLE_EQ(d.max_abs, std::ldexp(1.0, -52));
  EXPECT_TRUE(d.within_bound());

  // An exact (integer) output: no bound, so any difference is beyond it.
  contract::Tensor i32;
  i32.name = "y";
  i32.dtype = DType::i32;
  i32.elements = 3;
  i32.bytes = raw_bytes<std::int32_t>({1, 2, 3});
  const auto p = raw_bytes<std::int32_t>({1, 2, 3}), q = raw_bytes<std::int32_t>({1, 5, 3});
  d = measure_difference(i32, p.data(), q.data());
  EXPECT_EQ(d.max_abs, 3.0);
  EXPECT_EQ(d.bound, 0.0);
  EXPECT_TRUE(std::isinf(d.ratio));
  EXPECT_FALSE(d.within_bound());
  RunToRun r;
  r.policy.required = true;
  r.outputs = {d};
  EXPECT_TRUE(r.rejects());
  r.policy.required = false;  // each run was judged against the reference on its own: reported, not failed
  EXPECT_FALSE(r.rejects());
  EXPECT_NE(r.figures().find("max 3 apart"), std::string::npos) << r.figures();
  EXPECT_NE(r.figures().find("bound 0 (exact output)"), std::string::npos) << r.figures();
  EXPECT_TRUE(r.to_json().at("ratio").is_null());  // infinite: JSON has no infinity
}

TEST(RunToRun, StridedOutputsCompareRowsOnly) {
  contract::Tensor y = bounded_f32({1, 2, 0, 3, 4, 0}, 1e-3);  // 2 rows of 2, stride 3
  y.row_length = 2;
  y.row_stride = 3;
  const auto a = f32_bytes({1, 2, -1, 3, 4, -1}), b = f32_bytes({1, 2, 7, 3, 4, 7});  // padding: each run's poison
  EXPECT_TRUE(same_bytes(y, a.data(), b.data()));
  const OutputDifference d = measure_difference(y, a.data(), b.data());
  EXPECT_EQ(d.elements, 4);
  EXPECT_EQ(d.differing, 0);
}

TEST(RunToRun, PolicyIsTheContractsTightenedByTheManifest) {
  const contract::Contract& reduce = contract::find_contract("reduce_sum");
  contract::Supports s;
  s.dtypes = {DType::f32};
  RunToRunPolicy p = run_to_run_policy(reduce, s, DType::f32);
  EXPECT_FALSE(p.required);
  EXPECT_EQ(p.rule_from, "contract");
  s.deterministic = false;  // says so: the same rule
  EXPECT_FALSE(run_to_run_policy(reduce, s, DType::f32).required);
  s.deterministic = true;  // tightens
  p = run_to_run_policy(reduce, s, DType::f32);
  EXPECT_TRUE(p.required);
  EXPECT_EQ(p.rule_from, "manifest");
  EXPECT_NE(p.reason.find("[supports] deterministic = true"), std::string::npos) << p.reason;
  EXPECT_NE(p.opt_out.find("remove"), std::string::npos) << p.opt_out;
  const contract::Contract& scan = contract::find_contract("exclusive_scan");
  contract::Supports none;
  EXPECT_TRUE(run_to_run_policy(scan, none, DType::i32).required);
  EXPECT_FALSE(run_to_run_policy(scan, none, DType::f32).required);
  EXPECT_TRUE(run_to_run_policy(contract::find_contract("residual_add_relu"), none, DType::f32).required);
}

// Two runs of one output, written to files as the worker writes them, judged by judge_runs.
struct TwoRuns {
  test_util::WrittenRuns w;
  TwoRuns(const std::vector<float>& run1, const std::vector<float>& run2)
      : w{f32_bytes(run1), f32_bytes(run2), {0xFF, 0x7F}, {"trap_after", "trap_before"}} {}
  CaseResult judge(const RunToRunPolicy& policy, double bound) const {
    CaseResult res;
    res.spec.id = "f32/rows=4,cols=4097/normal";
    res.status = test_util::judge_written(contract::find_contract("reduce_sum"), policy, w,
                                          {bounded_f32({10.0f, 20.0f, 30.0f, 40.0f}, bound)}, res)
                     ? CaseStatus::pass
                     : CaseStatus::fail;
    return res;
  }
};

RunToRunPolicy policy_of(bool required) {
  return {.required = required, .reason = "test reason", .opt_out = "test opt-out", .rule_from = "contract"};
}

TEST(RunToRun, WithinTheBoundAndNotRequiredIsAcceptedWithANote) {
  const TwoRuns t({10, 20, 30, 40}, {10, ulps_up(20, 3), 30, 40});
  const CaseResult r = t.judge(policy_of(false), 1e-4);
  EXPECT_EQ(r.status, CaseStatus::pass) << r.detail;
  EXPECT_NE(r.note.find("max 3 ulps"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("bound 0.0001"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("test reason"), std::string::npos) << r.note;
  ASSERT_TRUE(r.run_to_run.is_object());
  EXPECT_EQ(r.run_to_run.at("max_ulps").get<double>(), 3.0);
  EXPECT_FALSE(r.run_to_run.at("required").get<bool>());
  EXPECT_TRUE(r.run_to_run.at("within_bound").get<bool>());
  EXPECT_EQ(r.run_to_run.at("outputs").at(0).at("name"), "y");
  // The same bytes twice: no note, nothing measured.
  const TwoRuns same({10, 20, 30, 40}, {10, 20, 30, 40});
  const CaseResult s = same.judge(policy_of(true), 1e-4);
  EXPECT_EQ(s.status, CaseStatus::pass);
  EXPECT_TRUE(s.note.empty());
  EXPECT_TRUE(s.run_to_run.is_null());
}

// The split-row atomicAdd reduce_sum seen on the GPU: two runs each within the bound of the reference
// differed by 1.08x the bound. Where reproducibility is not required that is no failure: each run is
// judged against the reference, and the run-to-run difference is reported with its ratio to the bound.
TEST(RunToRun, BeyondOneBoundWhileEachRunIsRightIsAcceptedAndReported) {
  // Each run within 1e-5 of the reference (40 -+ 2 ulps = 7.6e-6), the two 4 ulps (1.5e-5) apart.
  const TwoRuns t({10, 20, 30, ulps_up(40, -2)}, {10, 20, 30, ulps_up(40, 2)});
  const CaseResult r = t.judge(policy_of(false), 1e-5);
  EXPECT_EQ(r.status, CaseStatus::pass) << r.detail;
  EXPECT_TRUE(r.code.empty()) << r.code;
  EXPECT_NE(r.note.find("max 4 ulps"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("1.53x"), std::string::npos) << r.note;  // 4 ulps of 40 over 1e-5
  EXPECT_NE(r.note.find("judged against the reference"), std::string::npos) << r.note;
  EXPECT_FALSE(r.run_to_run.at("within_bound").get<bool>());
  CorrectnessReport rep;
  rep.results.push_back(r);
  rep.cases = rep.passed = rep.evidence = 1;
  const json j = rep.to_json(false);
  EXPECT_EQ(j.at("verdict"), "accepted");
  ASSERT_EQ(j.at("notes").size(), 1u);
  EXPECT_NE(j.at("notes").at(0).get<std::string>().find("1.53x the error bound"), std::string::npos) << j.at("notes");
  // Where reproducibility is required the same two runs are rejected.
  EXPECT_EQ(t.judge(policy_of(true), 1e-5).code, "nondeterministic");
  // A run wrong against the reference is that, whatever the rule.
  const TwoRuns wrong({10, 20, 30, 40.001f}, {10, 20, 30, 40});
  EXPECT_EQ(wrong.judge(policy_of(false), 1e-5).code, "wrong_result");
}

TEST(RunToRun, RequiredIsRejectedWithTheFiguresTheReasonAndTheOptOut) {
  const TwoRuns t({10, 20, 30, 40}, {10, ulps_up(20, 3), 30, 40});
  const CaseResult r = t.judge(policy_of(true), 1e-4);
  EXPECT_EQ(r.code, "nondeterministic");
  for (const char* want : {"max 3 ulps / 5.72e-06 abs", "bound 0.0001", "bitwise reproducible results are required: test reason",
                           "Opt-out: test opt-out", "element 1"})
    EXPECT_NE(r.detail.find(want), std::string::npos) << want << " in " << r.detail;
  EXPECT_TRUE(r.run_to_run.at("required").get<bool>());
  // A run wrong against the reference is that, before any comparison of the runs.
  const TwoRuns wrong({10, 20, 30, 41}, {10, 20, 30, 40});
  EXPECT_EQ(wrong.judge(policy_of(true), 1e-4).code, "wrong_result");
}

TEST(RunToRun, CorrectnessJsonCarriesTheFiguresAndANote) {
  const TwoRuns t({10, 20, 30, 40}, {10, ulps_up(20, 3), 30, 40});
  CorrectnessReport rep;
  rep.results.push_back(t.judge(policy_of(false), 1e-4));
  rep.cases = rep.passed = rep.evidence = 1;
  rep.run_to_run_rule = json::array({json{{"dtype", "f32"}, {"required", false}}});
  const json j = rep.to_json(false);
  const json& r2r = j.at("run_to_run");
  EXPECT_EQ(r2r.at("cases_compared"), 1);
  EXPECT_EQ(r2r.at("cases_differing"), 1);
  EXPECT_EQ(r2r.at("max_ulps").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(r2r.at("bound").get<double>(), 1e-4);
  EXPECT_FALSE(r2r.at("required").get<bool>());
  EXPECT_TRUE(r2r.at("within_bound").get<bool>());
  EXPECT_EQ(r2r.at("worst_case").at("id"), "f32/rows=4,cols=4097/normal");
  EXPECT_EQ(r2r.at("rule").at(0).at("dtype"), "f32");
  ASSERT_EQ(j.at("notes").size(), 1u);
  EXPECT_NE(j.at("notes").at(0).get<std::string>().find("1 of 1 case(s)"), std::string::npos) << j.at("notes");
  EXPECT_EQ(j.at("verdict"), "accepted");
  // A rejected case carries its figures among the failing cases.
  CorrectnessReport bad;
  const TwoRuns u({10, 20, 30, 40}, {10, ulps_up(20, 3), 30, 40});
  bad.results.push_back(u.judge(policy_of(true), 1e-4));
  bad.cases = bad.failed = 1;
  const json k = bad.to_json(false);
  EXPECT_EQ(k.at("failing_cases").at(0).at("run_to_run").at("max_ulps").get<double>(), 3.0);
  EXPECT_TRUE(k.at("notes").empty());
}

}  // namespace kqual::check::r2r_test
