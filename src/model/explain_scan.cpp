// `kqual explain scan`: exclusive scan over blocks, the pattern behind stream compaction and
// per-element output allocation. Element e writes counts[e] outputs starting at offsets[e].
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "kqual/core/error.hpp"
#include "kqual/model/explain.hpp"

namespace kqual::model {
namespace {
constexpr std::size_t kMaxScanElements = 100000;  // the overlap listing is quadratic in the worst case
constexpr std::size_t kMaxOverlapsListed = 1000;

std::string join(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace

ScanWalkthrough explain_scan(const std::vector<std::int64_t>& counts, std::int64_t block_size, bool missing_carry) {
  if (counts.empty()) throw_error(ErrorKind::usage, "--counts: at least one count is needed");
  if (counts.size() > kMaxScanElements)
    throw_error(ErrorKind::usage, fmt::format("--counts: {} elements; the walkthrough takes at most {}", counts.size(),
                                              kMaxScanElements));
  for (auto c : counts)
    if (c < 0) throw_error(ErrorKind::usage, fmt::format("--counts: count {} is negative", c));
  if (block_size < 1) throw_error(ErrorKind::usage, fmt::format("--block-size {}: must be >= 1", block_size));

  ScanWalkthrough w;
  w.missing_carry = missing_carry;
  w.counts = counts;
  w.block_size = block_size;
  const auto n = std::int64_t(counts.size());
  const std::int64_t blocks = (n + block_size - 1) / block_size;

  // Phase 1 (one block each): local exclusive scan and the block's total.
  w.block_totals.assign(std::size_t(blocks), 0);
  for (std::int64_t e = 0; e < n; ++e) {
    const std::int64_t b = e / block_size;
    w.block_of.push_back(b);
    w.local_offsets.push_back(w.block_totals[std::size_t(b)]);
    w.block_totals[std::size_t(b)] += counts[std::size_t(e)];
  }
  // Phase 2: exclusive scan of the block totals = each block's carry-in. The broken version skips it.
  w.carries.assign(std::size_t(blocks), 0);
  if (!missing_carry)
    for (std::int64_t b = 1; b < blocks; ++b)
      w.carries[std::size_t(b)] = w.carries[std::size_t(b - 1)] + w.block_totals[std::size_t(b - 1)];
  // Phase 3: add the carry of the element's block.
  for (std::int64_t e = 0; e < n; ++e)
    w.offsets.push_back(w.local_offsets[std::size_t(e)] + w.carries[std::size_t(w.block_of[std::size_t(e)])]);
  w.total = std::accumulate(counts.begin(), counts.end(), std::int64_t(0));

  // The truth, to say whether these inputs expose the bug at all.
  std::int64_t running = 0;
  for (std::int64_t e = 0; e < n; ++e) {
    if (w.offsets[std::size_t(e)] != running) w.correct = false;
    running += counts[std::size_t(e)];
  }

  for (std::int64_t e = 0; e < n; ++e)
    if (counts[std::size_t(e)] > 0)
      w.ranges.push_back({e, w.offsets[std::size_t(e)], w.offsets[std::size_t(e)] + counts[std::size_t(e)]});
  // Overlaps: sweep the ranges in order of their start.
  std::vector<ScanRange> sorted = w.ranges;
  std::stable_sort(sorted.begin(), sorted.end(), [](const ScanRange& a, const ScanRange& b) { return a.begin < b.begin; });
  for (std::size_t a = 0; a < sorted.size() && w.overlaps.size() < kMaxOverlapsListed; ++a)
    for (std::size_t b = a + 1; b < sorted.size() && sorted[b].begin < sorted[a].end; ++b) {
      const auto lo = std::max(sorted[a].begin, sorted[b].begin), hi = std::min(sorted[a].end, sorted[b].end);
      const auto first = std::min(sorted[a].element, sorted[b].element);
      const auto second = std::max(sorted[a].element, sorted[b].element);
      w.overlaps.push_back({first, second, lo, hi});
    }
  std::sort(w.overlaps.begin(), w.overlaps.end(), [](const ScanOverlap& x, const ScanOverlap& y) {
    return std::tie(x.first, x.second) < std::tie(y.first, y.second);
  });
  // Output positions in [0, total) that no element writes.
  std::int64_t covered = 0;
  for (const auto& r : sorted) {
    if (r.begin > covered && covered < w.total) w.unwritten.push_back({covered, std::min(r.begin, w.total)});
    covered = std::max(covered, r.end);
  }
  if (covered < w.total) w.unwritten.push_back({covered, w.total});

  if (w.total == 0) {
    w.explanation = "Every count is 0: nothing is written, every offset is 0";
    w.explanation += missing_carry
                         ? " — so the missing carry is invisible here; a test needs non-zero counts in a block after "
                           "the first to expose it."
                         : ".";
  } else if (!missing_carry) {
    w.explanation = fmt::format(
        "Each block scans its own counts (local offsets {}), the block totals {} are scanned into carries {}, and "
        "each element adds its block's carry: offsets {}. The ranges tile [0, {}) without gaps or overlaps.",
        join(w.local_offsets), join(w.block_totals), join(w.carries), join(w.offsets), w.total);
  } else if (w.correct) {
    w.explanation = fmt::format(
        "Missing carry, but these counts hide it (every block after the first follows blocks whose totals are 0): "
        "offsets {} happen to be right. A test needs non-zero counts before a later block.",
        join(w.offsets));
  } else {
    w.explanation = fmt::format(
        "Missing carry: every block starts at 0 instead of the sum of the blocks before it (carries should be the "
        "exclusive scan of {}), so offsets are {}.",
        join(w.block_totals), join(w.offsets));
    for (const auto& o : w.overlaps)
      w.explanation += fmt::format(" Elements {} and {} both write [{}, {}).", o.first, o.second, o.begin, o.end);
    for (const auto& u : w.unwritten)
      w.explanation += fmt::format(" Output [{}, {}) is never written (a poisoned output keeps its sentinel there).",
                                   u.first, u.second);
  }
  return w;
}

json to_json(const ScanWalkthrough& w) {
  json ranges = json::array(), overlaps = json::array(), unwritten = json::array();
  for (const auto& r : w.ranges) ranges.push_back({{"element", r.element}, {"begin", r.begin}, {"end", r.end}});
  for (const auto& o : w.overlaps)
    overlaps.push_back({{"elements", {o.first, o.second}}, {"begin", o.begin}, {"end", o.end}});
  for (const auto& u : w.unwritten) unwritten.push_back({{"begin", u.first}, {"end", u.second}});
  return {{"variant", w.missing_carry ? "missing_carry" : "correct"},
          {"counts", w.counts},
          {"block_size", w.block_size},
          {"block_of", w.block_of},
          {"local_offsets", w.local_offsets},
          {"block_totals", w.block_totals},
          {"carries", w.carries},
          {"offsets", w.offsets},
          {"total", w.total},
          {"ranges", ranges},
          {"overlaps", overlaps},
          {"unwritten", unwritten},
          {"correct", w.correct},
          {"explanation", w.explanation}};
}

}  // namespace kqual::model
