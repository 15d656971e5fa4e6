#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/model/explain.hpp"

namespace kqual::model {
namespace {

using V = std::vector<std::int64_t>;
const V kSeedCounts = {3, 0, 2, 1, 0, 4};  // the walkthrough's seed: two blocks of three

// An overlap as (first, second, begin, end), to compare whole.
using Span = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
Span span_of(const ScanOverlap& o) { return {o.first, o.second, o.begin, o.end}; }

TEST(ExplainScan, SeedCountsInTwoBlocks) {
  const auto w = explain_scan(kSeedCounts, 3, false);
  EXPECT_EQ(w.block_of, (V{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(w.local_offsets, (V{0, 3, 3, 0, 1, 1}));
  EXPECT_EQ(w.block_totals, (V{5, 5}));
  EXPECT_EQ(w.carries, (V{0, 5}));
  EXPECT_EQ(w.offsets, (V{0, 3, 3, 5, 6, 6}));
  EXPECT_EQ(w.total, 10);
  ASSERT_EQ(w.ranges.size(), 4u);  // elements with count 0 write nothing
  EXPECT_EQ(w.ranges[3].element, 5);
  EXPECT_EQ(w.ranges[3].begin, 6);
  EXPECT_EQ(w.ranges[3].end, 10);
  EXPECT_TRUE(w.overlaps.empty());
  EXPECT_TRUE(w.unwritten.empty());
  EXPECT_TRUE(w.correct);
}

TEST(ExplainScan, MissingCarryOverlapsAndLeavesATailUnwritten) {
  const auto w = explain_scan(kSeedCounts, 3, true);
  EXPECT_EQ(w.carries, (V{0, 0}));
  EXPECT_EQ(w.offsets, (V{0, 3, 3, 0, 1, 1}));
  EXPECT_FALSE(w.correct);
  // Element 3 writes [0,1) and element 5 writes [1,5): both land on block 0's output.
  ASSERT_EQ(w.overlaps.size(), 3u);
  EXPECT_EQ(span_of(w.overlaps[0]), (Span{0, 3, 0, 1}));
  EXPECT_EQ(span_of(w.overlaps[1]), (Span{0, 5, 1, 3}));
  EXPECT_EQ(span_of(w.overlaps[2]), (Span{2, 5, 3, 5}));
  ASSERT_EQ(w.unwritten.size(), 1u);
  EXPECT_EQ(w.unwritten[0], (std::pair<std::int64_t, std::int64_t>{5, 10}));
  EXPECT_NE(w.explanation.find("Elements 0 and 3 both write [0, 1)"), std::string::npos) << w.explanation;
}

TEST(ExplainScan, AllZeroCountsHideTheMissingCarry) {
  const V zeros(6, 0);
  const auto good = explain_scan(zeros, 3, false), bad = explain_scan(zeros, 3, true);
  EXPECT_EQ(good.total, 0);
  EXPECT_EQ(bad.offsets, (V{0, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(bad.ranges.empty());
  EXPECT_TRUE(bad.overlaps.empty());
  EXPECT_TRUE(bad.unwritten.empty());
  EXPECT_TRUE(bad.correct);  // the bug is invisible: a test generator must not rely on such inputs
  EXPECT_NE(bad.explanation.find("invisible"), std::string::npos) << bad.explanation;
  // Single block: no carry exists to be missed.
  EXPECT_TRUE(explain_scan(kSeedCounts, 6, true).correct);
  EXPECT_THROW(explain_scan({}, 3, false), Error);
  EXPECT_THROW(explain_scan(kSeedCounts, 0, false), Error);
}

TEST(ExplainSoftmax, ChunkedMergeMatchesTwoPassReference) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};
  const auto w = explain_softmax(x, 4, false);
  const double chunk_sum = std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0) + 1.0;  // 1.553001...
  ASSERT_EQ(w.chunk_states.size(), 2u);
  EXPECT_DOUBLE_EQ(w.chunk_states[0].max, 4.0);
  EXPECT_NEAR(w.chunk_states[0].sum, chunk_sum, 1e-15);
  EXPECT_DOUBLE_EQ(w.chunk_states[1].max, 8.0);
  ASSERT_EQ(w.merges.size(), 1u);
  EXPECT_NEAR(w.merges[0].left_scale, std::exp(-4.0), 1e-15);
  EXPECT_DOUBLE_EQ(w.merges[0].right_scale, 1.0);
  EXPECT_DOUBLE_EQ(w.final_state.max, 8.0);
  EXPECT_NEAR(w.final_state.sum, chunk_sum * (1.0 + std::exp(-4.0)), 1e-14);  // 1.581446...
  EXPECT_NEAR(w.probability_sum, 1.0, 1e-14);
  EXPECT_TRUE(w.correct);
}

TEST(ExplainSoftmax, MergeThatForgetsToRescaleIsWrong) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};
  const auto w = explain_softmax(x, 4, true);
  const double chunk_sum = std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0) + 1.0;
  EXPECT_NEAR(w.final_state.sum, 2.0 * chunk_sum, 1e-14);  // 3.106 instead of 1.581
  EXPECT_NEAR(w.probability_sum, (1.0 + std::exp(-4.0)) / 2.0, 1e-12);  // 0.509: half the mass is gone
  EXPECT_GT(w.max_abs_error, 0.1);
  EXPECT_FALSE(w.correct);
}

TEST(ExplainSoftmax, EqualChunkMaximaHideTheMissingRescale) {
  const auto w = explain_softmax({1, 2, 3, 4, 4, 3, 2, 1}, 4, true);
  EXPECT_TRUE(w.correct);
  EXPECT_NE(w.explanation.find("same max"), std::string::npos) << w.explanation;
  // -inf values contribute nothing and a whole -inf chunk does not poison the merge with NaN.
  const double ninf = -std::numeric_limits<double>::infinity();
  const auto v = explain_softmax({ninf, ninf, 0.0, 0.0}, 2, false);
  EXPECT_TRUE(v.correct);
  EXPECT_DOUBLE_EQ(v.probabilities[2], 0.5);
  EXPECT_DOUBLE_EQ(v.probabilities[0], 0.0);
  EXPECT_THROW(explain_softmax({}, 4, false), Error);
  EXPECT_THROW(explain_softmax({1.0}, 0, false), Error);
}

TEST(ExplainTranspose, ViewOffsetsOverSameStorage) {
  const auto w = explain_transpose(3, 4, 4, 32, 12);
  EXPECT_EQ(w.view_rows, 4);
  EXPECT_EQ(w.view_cols, 3);
  EXPECT_EQ(w.view_stride_row, 1);
  EXPECT_EQ(w.view_stride_col, 4);
  ASSERT_EQ(w.coords.size(), 12u);
  std::vector<std::int64_t> offsets;
  for (const auto& c : w.coords) offsets.push_back(c.offset);
  EXPECT_EQ(offsets, (V{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(w.coords[7].i, 2);
  EXPECT_EQ(w.coords[7].j, 1);
  EXPECT_EQ(w.coords[7].offset, 6);  // view (2,1) = storage (1,2) = 1*4 + 2
  EXPECT_TRUE(w.bijective);
  EXPECT_EQ(w.lanes.size(), 12u);  // only 12 elements: 12 lanes have work
}

TEST(ExplainTranspose, NaiveLaneMappingStridesReadsAndPaddingRemovesBankConflicts) {
  const auto w = explain_transpose(32, 64, 4, 32, 32);
  ASSERT_EQ(w.lanes.size(), 32u);
  EXPECT_EQ(w.lanes[1].read_offset, 64);
  EXPECT_EQ(w.lanes[31].read_offset, 31 * 64);
  EXPECT_EQ(w.lanes[31].write_offset, 31);
  EXPECT_EQ(w.read_sectors, 32);  // one 32-byte sector per lane: 8x the traffic
  EXPECT_EQ(w.write_sectors, 4);
  EXPECT_EQ(w.ideal_sectors, 4);
  EXPECT_EQ(w.bank_conflict_unpadded, 32);
  EXPECT_EQ(w.bank_conflict_padded, 1);
  EXPECT_THROW(explain_transpose(0, 4), Error);
  EXPECT_THROW(explain_transpose(4, 4, 3), Error);
}

}  // namespace
}  // namespace kqual::model
