#pragma once
// Step-by-step walkthroughs of work mappings (docs/models.md, "Walkthroughs"): every intermediate
// array is returned, so `kqual explain` prints them and tests assert them. The broken variants
// exist to show the failure a known-broken candidate has (missing carry, forgotten rescale).
#include <cstdint>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/model/waves.hpp"

namespace kqual::model {

// ---- exclusive scan over blocks: counts -> output offsets (stream compaction / allocation) -------
struct ScanRange {
  std::int64_t element = 0;
  std::int64_t begin = 0;  // [begin, end) of the output this element writes
  std::int64_t end = 0;
};
struct ScanOverlap {
  std::int64_t first = 0, second = 0;  // element indices, first < second
  std::int64_t begin = 0, end = 0;     // the shared output range [begin, end)
};
struct ScanWalkthrough {
  bool missing_carry = false;
  std::vector<std::int64_t> counts;
  std::int64_t block_size = 0;
  std::vector<std::int64_t> block_of;        // block index of each element
  std::vector<std::int64_t> local_offsets;   // exclusive scan inside each block
  std::vector<std::int64_t> block_totals;    // sum of each block's counts
  std::vector<std::int64_t> carries;         // exclusive scan of the totals (all 0 when missing_carry)
  std::vector<std::int64_t> offsets;         // local offset + carry of the element's block
  std::int64_t total = 0;                    // output length the caller allocates
  std::vector<ScanRange> ranges;             // non-empty ranges only
  std::vector<ScanOverlap> overlaps;         // pairs of elements writing the same output
  std::vector<std::pair<std::int64_t, std::int64_t>> unwritten;  // [begin, end) of output nobody writes
  bool correct = true;                       // offsets equal the true exclusive scan
  std::string explanation;
};
// Throws Error(usage) for empty counts, negative counts or block_size < 1.
ScanWalkthrough explain_scan(const std::vector<std::int64_t>& counts, std::int64_t block_size, bool missing_carry);

// ---- transpose as a logical view over the same storage --------------------------------------------
struct TransposeCoord {
  std::int64_t i = 0, j = 0;  // view coordinate (view row, view column)
  std::int64_t offset = 0;    // element offset in storage
};
struct TransposeLane {
  int lane = 0;
  std::int64_t i = 0, j = 0;        // view coordinate this lane handles
  std::int64_t read_offset = 0;     // storage element it reads
  std::int64_t write_offset = 0;    // element it writes in a contiguous copy of the view
  std::int64_t read_sector = 0;     // 32-byte sector of the read
  std::int64_t write_sector = 0;
};
struct TransposeWalkthrough {
  std::int64_t rows = 0, cols = 0;       // storage: rows x cols, row-major (strides {cols, 1})
  std::int64_t view_rows = 0, view_cols = 0;  // the view: cols x rows
  std::int64_t view_stride_row = 0, view_stride_col = 0;  // {1, cols}
  int elem_bytes = 4;
  std::vector<TransposeCoord> coords;    // the first `show` view coordinates, in view row-major order
  bool bijective = false;                // every storage element is reached exactly once
  std::vector<TransposeLane> lanes;      // warp 0 of a naive kernel over the view
  std::int64_t read_sectors = 0;         // distinct 32-byte sectors warp 0 reads
  std::int64_t write_sectors = 0;        // ... and writes
  std::int64_t ideal_sectors = 0;        // lanes * elem_bytes / 32, rounded up
  int tile = 32;                          // shared-memory tile edge for the staged version
  int bank_conflict_unpadded = 0;        // lanes hitting the worst bank reading a tile column, tile[32][32]
  int bank_conflict_padded = 0;          // same with tile[32][33]
  std::string explanation;
};
// Throws Error(usage) for rows/cols < 1, elem_bytes not in {1,2,4,8}, lanes not in 1..32.
TransposeWalkthrough explain_transpose(std::int64_t rows, std::int64_t cols, int elem_bytes = 4, int lanes = 32,
                                       std::int64_t show = 32);

// ---- online softmax: merging (max, sum) states of chunks ------------------------------------------
struct SoftmaxState {
  double max = 0;  // running maximum m
  double sum = 0;  // sum of exp(x - m)
};
struct SoftmaxMergeStep {
  SoftmaxState left, right, merged;
  double left_scale = 1, right_scale = 1;  // exp(m_left - m), exp(m_right - m); both 1 in the broken merge
};
struct SoftmaxWalkthrough {
  bool forget_rescale = false;
  std::vector<double> values;
  std::int64_t chunk_size = 0;
  std::vector<SoftmaxState> chunk_states;     // per chunk, each against its own max
  std::vector<SoftmaxMergeStep> merges;       // left fold over the chunks
  SoftmaxState final_state;
  std::vector<double> probabilities;          // exp(x - m) / sum with the final state
  double probability_sum = 0;
  SoftmaxState reference;                     // two-pass, long double
  std::vector<double> reference_probabilities;
  double max_abs_error = 0;                   // against the reference probabilities
  bool correct = true;                        // max_abs_error <= 1e-12 and sum within 1e-12 of 1
  std::string explanation;
};
// Throws Error(usage) for no values, NaN values, or chunk_size < 1.
SoftmaxWalkthrough explain_softmax(const std::vector<double>& values, std::int64_t chunk_size, bool forget_rescale);
// The correct merge: m = max(a.m, b.m), sum = a.sum*exp(a.m-m) + b.sum*exp(b.m-m); a side with
// m = -inf (no finite value seen yet) contributes nothing (exp(-inf - -inf) would be NaN).
SoftmaxState merge_softmax(const SoftmaxState& a, const SoftmaxState& b);

json to_json(const ScanWalkthrough& w);
json to_json(const TransposeWalkthrough& w);
json to_json(const SoftmaxWalkthrough& w);

}  // namespace kqual::model
