// Judging an output costs time bounded by its size, not by how many of its elements are wrong
// (issue 21). Before the fix, every wrong element was formatted into a string: an output wrong at
// all of 2^29+7 elements kept the coordinator busy for minutes, and this suite ran past its CTest
// TIMEOUT. Each test also checks what the report keeps: the count of every mismatch, the first few
// indices, one formatted example.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"

namespace kqual::contract {
namespace {

constexpr std::size_t kHuge = (std::size_t(1) << 29) + 7;  // over 2^31 bytes of f32

Tensor filled_f32(const std::string& name, std::size_t n, float v) {
  Tensor t;
  t.name = name;
  t.dtype = DType::f32;
  t.elements = std::int64_t(n);
  t.bytes.resize(n * 4);
  float* p = reinterpret_cast<float*>(t.bytes.data());
  std::fill(p, p + n, v);
  return t;
}

std::vector<std::uint8_t> filled_bytes(std::size_t n, float v) {
  std::vector<std::uint8_t> out(n * 4);
  float* p = reinterpret_cast<float*>(out.data());
  std::fill(p, p + n, v);
  return out;
}

// One expected tensor and one output buffer of 2^29+7 elements for the three ways an output can be
// wrong everywhere: one test (CTest runs each test in its own process; 4 GiB allocated once keeps
// the time in the comparisons, not in page faults).
TEST(CompareScale, WrongEverywhereAtTwoToTheTwentyNineIsJudgedBySize) {
  Tensor want = filled_f32("y", kHuge, 1.0f);
  std::vector<std::uint8_t> got = filled_bytes(kHuge, 1.0078125f);  // one bf16 ulp off: wrong everywhere
  const Contract& c = find_contract("residual_add_relu");
  Comparison r = c.compare(want, got.data(), 0xFF);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.code, "wrong_result");
  EXPECT_EQ(r.mismatches, std::int64_t(kHuge));
  ASSERT_EQ(r.examples.size(), ElementScan::kKeepExamples);
  EXPECT_EQ(r.examples[0], 0);
  EXPECT_EQ(r.examples[2], 2);
  EXPECT_NE(r.detail.find(std::to_string(kHuge) + " of " + std::to_string(kHuge) + " elements of 'y' are wrong"), std::string::npos)
      << r.detail;
  EXPECT_LT(r.detail.size(), 600u) << "the report keeps a few examples, not every wrong element";

  // The poison survived at every element.
  std::memset(got.data(), 0x7F, got.size());
  Comparison u = compare_exact(want, got.data(), 0x7F);
  EXPECT_EQ(u.code, "unwritten_output");
  EXPECT_EQ(u.mismatches, std::int64_t(kHuge));
  EXPECT_NE(u.detail.find("poison pattern 0x7f"), std::string::npos) << u.detail;
  EXPECT_NE(u.detail.find("next at [1], [2]"), std::string::npos) << u.detail;

  // NaN bits everywhere a number is expected (this run's poison is 0x7F).
  std::memset(got.data(), 0xFF, got.size());
  Comparison q = compare_exact(want, got.data(), 0x7F);
  EXPECT_EQ(q.code, "nan_policy");
  EXPECT_EQ(q.mismatches, std::int64_t(kHuge));
}

TEST(CompareScale, BoundedWrongEverywhereKeepsTheWorstAndTheFirst) {
  const std::size_t n = (std::size_t(1) << 26) + 3;
  Tensor want = filled_f32("y", n, 1.0f);
  want.ref.assign(n, 1.0);
  want.bound.assign(n, 1e-6);
  std::vector<std::uint8_t> got = filled_bytes(n, 1.5f);
  float worst = 9.0f;
  std::memcpy(got.data() + 4 * (n - 2), &worst, 4);  // the worst element lies in the last chunk
  Comparison r = compare_bounded(want, got.data(), 0xFF);
  EXPECT_EQ(r.code, "wrong_result");
  EXPECT_EQ(r.mismatches, std::int64_t(n));
  EXPECT_NE(r.detail.find("first: y[0]"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("worst: y[" + std::to_string(n - 2) + "] error 8"), std::string::npos) << r.detail;
}

TEST(CompareScale, MixedClassesReportTheFirstOfTheClassOfHighestPrecedence) {
  // Chunks scanned in parallel are merged in index order: "first" is the lowest index whatever
  // thread saw it. A poison element late in the output outranks earlier wrong values.
  const std::size_t n = (std::size_t(1) << 22) + 5;
  Tensor want = filled_f32("y", n, 1.0f);
  std::vector<std::uint8_t> got = filled_bytes(n, 1.0f);
  float bad = 3.0f;
  for (std::size_t i : {std::size_t(5), std::size_t(1) << 21, n - 1}) std::memcpy(got.data() + 4 * i, &bad, 4);
  const std::size_t late = (std::size_t(1) << 22) + 1;
  std::memset(got.data() + 4 * late, 0xFF, 4);
  Comparison r = compare_exact(want, got.data(), 0xFF);
  EXPECT_EQ(r.code, "unwritten_output");  // 0xFF.. is the poison of this run: never written
  EXPECT_EQ(r.examples, (std::vector<std::int64_t>{std::int64_t(late)}));
  // Under the other poison the same bits are a NaN where a number is expected.
  Comparison w = compare_exact(want, got.data(), 0x7F);
  ASSERT_EQ(w.code, "nan_policy");
  EXPECT_EQ(w.mismatches, 1);
  // With the NaN element repaired, the wrong values come first by index across chunks.
  std::memcpy(got.data() + 4 * late, &bad, 4);
  Comparison v = compare_exact(want, got.data(), 0x7F);
  ASSERT_EQ(v.code, "wrong_result");
  EXPECT_EQ(v.mismatches, 4);
  EXPECT_EQ(v.examples, (std::vector<std::int64_t>{5, std::int64_t(1) << 21, std::int64_t(late)}));
}

}  // namespace
}  // namespace kqual::contract
