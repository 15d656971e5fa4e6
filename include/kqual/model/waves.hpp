#pragma once
// Occupancy and wave arithmetic (docs/models.md, "Occupancy", "Waves", "Split-K"): how many blocks
// fit on an SM, how many waves a grid needs, how much of the machine idles in the last wave, and
// what splitting K does for GEMM-like work.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::model {

// Per-SM limits of one compute capability (CUDA C++ Programming Guide, "Features and Technical
// Specifications" table; allocation granularities from the CUDA Occupancy Calculator).
struct SmLimits {
  std::string arch;                      // "sm_90"
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int max_threads_per_block = 1024;
  int registers_per_sm = 65536;          // 32-bit registers
  int max_registers_per_thread = 255;
  int register_alloc_unit = 256;         // [registers per warp] allocation granularity
  int warp_alloc_granularity = 4;        // register file in 4 sub-partitions: warps allocated per quarter
  std::int64_t shared_per_sm = 233472;   // [B] 228 KiB on sm_90
  std::int64_t max_shared_per_block = 232448;  // [B] 227 KiB opt-in maximum on sm_90
  std::int64_t shared_alloc_unit = 128;  // [B]
  std::int64_t reserved_shared_per_block = 1024;  // [B] the runtime reserves 1 KiB per block (sm_80+)
  int warp_size = 32;
};
// sm_80, sm_86, sm_89, sm_90, sm_100 (also "90", "8.9", "sm_90a"); throws Error(usage) otherwise.
SmLimits sm_limits(std::string_view arch);

struct BlockResources {
  int threads = 256;                  // threads per block
  int registers_per_thread = 32;
  std::int64_t shared_bytes = 0;      // [B] static + dynamic shared memory per block
};

struct Occupancy {
  int blocks_per_sm = 0;
  int by_threads = 0;        // the limit each resource alone would impose
  int by_registers = 0;
  int by_shared = 0;
  int by_blocks = 0;
  std::string limiter;       // "threads", "registers", "shared memory", "blocks per SM"
  int warps_per_block = 0;
  int registers_per_warp = 0;          // after rounding to the allocation unit
  std::int64_t shared_per_block = 0;   // [B] after the reserve and rounding
  double occupancy = 0;                // resident warps / max warps per SM
  std::vector<std::string> steps;      // the arithmetic, one line per step
};
// Throws Error(usage) naming the parameter when a block cannot launch at all (threads > limit,
// registers > 255, shared memory over the per-block maximum).
Occupancy occupancy(const SmLimits& sm, const BlockResources& block);

struct WaveResult {
  std::int64_t tiles = 0;
  std::int64_t slots = 0;          // SMs x resident blocks per SM
  std::int64_t waves = 0;          // ceil(tiles / slots)
  std::int64_t full_waves = 0;     // tiles / slots
  std::int64_t tail_tiles = 0;     // tiles in the last wave (= slots when it is full, 0 when no tiles)
  double tail_utilisation = 0;     // tail_tiles / slots
  double efficiency = 0;           // tiles / (waves * slots): busy slot-time over paid slot-time
  std::string explanation;
};
// Equal-cost tiles, all slots freed together. tiles == 0 gives 0 waves and efficiency 0 (a grid of
// zero blocks is a launch error in CUDA); throws Error(usage) for tiles < 0 or slots <= 0.
WaveResult waves(std::int64_t tiles, std::int64_t slots);

// One wave of the schedule, for `kqual explain waves`.
struct WaveRow {
  std::int64_t index = 0;
  std::int64_t first_tile = 0;  // inclusive
  std::int64_t last_tile = 0;   // inclusive
  std::int64_t busy_slots = 0;
  std::int64_t idle_slots = 0;
};
struct WaveTimeline {
  WaveResult summary;
  std::vector<WaveRow> rows;
};
WaveTimeline wave_timeline(std::int64_t tiles, std::int64_t slots);

// Split-K for GEMM-like work: output tiles x split become the tiles, each doing 1/split of K.
struct SplitKInput {
  std::int64_t output_tiles = 0;
  std::int64_t slots = 0;
  int max_split = 4;                  // alternatives 1..max_split
  std::int64_t k_iterations = 0;      // K / tile_k main-loop iterations per tile; 0 = unknown (K divides evenly)
  double partial_tile_bytes = 0;      // [B] one fp32 partial tile (tile_m * tile_n * 4); 0 = unknown
  double tile_time_s = 0;             // [s] time of one unsplit tile on one slot; 0 = unknown
  double bytes_per_s = 0;             // [B/s] bandwidth that prices the reduction; 0 = unknown
};
struct SplitKOption {
  int split = 1;
  WaveResult waves;
  std::int64_t k_iterations_per_split = 0;  // 0 when k_iterations is unknown
  double compute_time = 0;    // [unsplit tile times] waves x (share of K per split)
  double extra_bytes = 0;     // [B] partials written and read back by the reduction (0 for split 1)
  double reduction_time = 0;  // [unsplit tile times] extra_bytes / bandwidth; 0 when not priced
  double total_time = 0;      // [unsplit tile times] compute + reduction
  double speedup = 1;         // split-1 total / this total
};
struct SplitKResult {
  std::vector<SplitKOption> options;  // split 1 (no split) first
  bool priced = false;                // reduction traffic converted into time
  int recommended_split = 1;
  std::string reason;
};
// Throws Error(usage) for output_tiles <= 0, slots <= 0, max_split < 1.
SplitKResult split_k(const SplitKInput& in);

json to_json(const SmLimits& s);
json to_json(const Occupancy& o);
json to_json(const WaveResult& w);
json to_json(const WaveTimeline& t);
json to_json(const SplitKResult& s);

}  // namespace kqual::model
