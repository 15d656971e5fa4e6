// `kqual explain transpose`: a transposed view over row-major storage (no data moved), the element
// offset of every view coordinate, and what a warp's lanes touch when a kernel walks that view.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "kqual/core/error.hpp"
#include "kqual/model/explain.hpp"

namespace kqual::model {
namespace {

constexpr std::int64_t kSectorBytes = 32;  // DRAM/L2 access granularity
constexpr int kBanks = 32;                 // shared memory: 32 banks of 4-byte words
constexpr std::int64_t kMaxBijectionCheck = std::int64_t(1) << 24;

// Largest number of distinct 4-byte words any one bank must serve when `lanes` lanes read column
// `c` of a shared tile [tile][tile + pad] of elem_bytes elements: the replay count of the access.
int bank_conflict_degree(int lanes, int tile, int pad, int elem_bytes, int c) {
  std::map<int, std::set<std::int64_t>> words_per_bank;
  for (int l = 0; l < lanes; ++l) {
    const std::int64_t byte = (std::int64_t(l % tile) * (tile + pad) + c) * elem_bytes;
    for (std::int64_t b = byte; b < byte + elem_bytes; b += 4) words_per_bank[int((b / 4) % kBanks)].insert(b / 4);
  }
  std::size_t worst = 0;
  for (const auto& [bank, words] : words_per_bank) worst = std::max(worst, words.size());
  return int(worst);
}

}  // namespace

TransposeWalkthrough explain_transpose(std::int64_t rows, std::int64_t cols, int elem_bytes, int lanes,
                                       std::int64_t show) {
  if (rows < 1) throw_error(ErrorKind::usage, fmt::format("--rows {}: must be >= 1", rows));
  if (cols < 1) throw_error(ErrorKind::usage, fmt::format("--cols {}: must be >= 1", cols));
  if (!(elem_bytes == 1 || elem_bytes == 2 || elem_bytes == 4 || elem_bytes == 8))
    throw_error(ErrorKind::usage, fmt::format("--elem-bytes {}: must be 1, 2, 4 or 8", elem_bytes));
  if (lanes < 1 || lanes > 32) throw_error(ErrorKind::usage, fmt::format("--lanes {}: must be 1 to 32", lanes));
  if (show < 0) throw_error(ErrorKind::usage, fmt::format("--show {}: must be >= 0", show));

  TransposeWalkthrough w;
  w.rows = rows;
  w.cols = cols;
  w.elem_bytes = elem_bytes;
  // Storage is rows x cols row-major: element (r, c) at r*cols + c. The view swaps the axes without
  // moving data: view (i, j) = storage (j, i), so its strides are {1, cols}.
  w.view_rows = cols;
  w.view_cols = rows;
  w.view_stride_row = 1;
  w.view_stride_col = cols;
  const std::int64_t n = rows * cols;
  auto offset_of = [&](std::int64_t i, std::int64_t j) { return i * w.view_stride_row + j * w.view_stride_col; };

  for (std::int64_t k = 0; k < std::min(show, n); ++k) {
    const std::int64_t i = k / w.view_cols, j = k % w.view_cols;
    w.coords.push_back({i, j, offset_of(i, j)});
  }
  if (n <= kMaxBijectionCheck) {
    std::vector<char> hit(std::size_t(n), 0);
    w.bijective = true;
    for (std::int64_t i = 0; i < w.view_rows && w.bijective; ++i)
      for (std::int64_t j = 0; j < w.view_cols; ++j) {
        const std::int64_t off = offset_of(i, j);
        if (off < 0 || off >= n || hit[std::size_t(off)]++) {
          w.bijective = false;
          break;
        }
      }
  } else {
    w.bijective = true;  // strides {1, cols} over a cols x rows view: a permutation by construction
  }

  // Warp 0 of a naive kernel: lane l handles view element l (view row-major), reads it from storage
  // and writes it to a contiguous copy of the view.
  const int used_lanes = int(std::min<std::int64_t>(lanes, n));
  std::set<std::int64_t> read_sectors, write_sectors;
  for (int l = 0; l < used_lanes; ++l) {
    TransposeLane t;
    t.lane = l;
    t.i = l / w.view_cols;
    t.j = l % w.view_cols;
    t.read_offset = offset_of(t.i, t.j);
    t.write_offset = l;
    t.read_sector = t.read_offset * elem_bytes / kSectorBytes;
    t.write_sector = t.write_offset * elem_bytes / kSectorBytes;
    read_sectors.insert(t.read_sector);
    write_sectors.insert(t.write_sector);
    w.lanes.push_back(t);
  }
  w.read_sectors = std::int64_t(read_sectors.size());
  w.write_sectors = std::int64_t(write_sectors.size());
  w.ideal_sectors = (std::int64_t(used_lanes) * elem_bytes + kSectorBytes - 1) / kSectorBytes;

  // Staged version: a tile x tile block is read coalesced along storage rows into shared memory, and
  // written coalesced along view rows, so each lane then reads a tile *column*.
  w.tile = 32;
  w.bank_conflict_unpadded = bank_conflict_degree(lanes, w.tile, 0, elem_bytes, 0);
  w.bank_conflict_padded = bank_conflict_degree(lanes, w.tile, 1, elem_bytes, 0);

  w.explanation = fmt::format(
      "Storage is {} x {} row-major (strides {{{}, 1}}). The transposed view is {} x {} over the same bytes with "
      "strides {{1, {}}}: view (i, j) is element i + j*{}. Every storage element is reached {}. ",
      rows, cols, cols, w.view_rows, w.view_cols, cols, cols, w.bijective ? "exactly once" : "NOT exactly once");
  w.explanation += fmt::format(
      "A naive kernel whose lane l handles view element l reads {} distinct 32-byte sectors per warp and writes {} "
      "(ideal {}). ",
      w.read_sectors, w.write_sectors, w.ideal_sectors);
  if (w.read_sectors > w.ideal_sectors)
    w.explanation += fmt::format(
        "The reads stride by {} bytes, so each fetched sector delivers {:.3g} useful bytes of 32 on average: read "
        "traffic is {:.3g}x the data. ",
        cols * elem_bytes, double(used_lanes) * elem_bytes / double(w.read_sectors),
        double(w.read_sectors) / double(w.ideal_sectors));
  w.explanation += fmt::format(
      "Staging through a {0}x{0} shared tile makes both global sides coalesced; reading a tile column then takes "
      "{1} bank access(es) in turn with tile[{0}][{0}] and {2} with tile[{0}][{3}] (one padding element per row).",
      w.tile, w.bank_conflict_unpadded, w.bank_conflict_padded, w.tile + 1);
  return w;
}

json to_json(const TransposeWalkthrough& w) {
  json coords = json::array(), lanes = json::array();
  for (const auto& c : w.coords) coords.push_back({{"view", {c.i, c.j}}, {"offset", c.offset}});
  for (const auto& l : w.lanes)
    lanes.push_back({{"lane", l.lane},
                     {"view", {l.i, l.j}},
                     {"read_offset", l.read_offset},
                     {"write_offset", l.write_offset},
                     {"read_sector", l.read_sector},
                     {"write_sector", l.write_sector}});
  return {{"storage", {{"shape", {w.rows, w.cols}}, {"strides", {w.cols, 1}}}},
          {"view", {{"shape", {w.view_rows, w.view_cols}}, {"strides", {w.view_stride_row, w.view_stride_col}}}},
          {"elem_bytes", w.elem_bytes},
          {"coords", coords},
          {"bijective", w.bijective},
          {"lanes", lanes},
          {"read_sectors", w.read_sectors},
          {"write_sectors", w.write_sectors},
          {"ideal_sectors", w.ideal_sectors},
          {"tile", w.tile},
          {"bank_conflict_unpadded", w.bank_conflict_unpadded},
          {"bank_conflict_padded", w.bank_conflict_padded},
          {"explanation", w.explanation}};
}

}  // namespace kqual::model
