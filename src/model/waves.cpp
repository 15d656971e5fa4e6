#include "kqual/model/waves.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kqual/core/error.hpp"
#include "kqual/model/units.hpp"

namespace kqual::model {
namespace {

std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t unit) { return cdiv(a, unit) * unit; }

}  // namespace

SmLimits sm_limits(std::string_view arch) {
  std::string a(arch);
  if (a.rfind("sm_", 0) == 0) a = a.substr(3);
  if (!a.empty() && (a.back() == 'a' || a.back() == 'f')) a.pop_back();  // sm_90a, sm_100a: same limits
  a.erase(std::remove(a.begin(), a.end(), '.'), a.end());                // "8.9" -> "89"
  SmLimits s;
  // CUDA C++ Programming Guide, "Technical Specifications per Compute Capability".
  if (a == "80") {
    s.max_threads_per_sm = 2048; s.max_blocks_per_sm = 32;
    s.shared_per_sm = 164 * 1024; s.max_shared_per_block = 163 * 1024;
  } else if (a == "86") {
    s.max_threads_per_sm = 1536; s.max_blocks_per_sm = 16;
    s.shared_per_sm = 100 * 1024; s.max_shared_per_block = 99 * 1024;
  } else if (a == "89") {
    s.max_threads_per_sm = 1536; s.max_blocks_per_sm = 24;
    s.shared_per_sm = 100 * 1024; s.max_shared_per_block = 99 * 1024;
  } else if (a == "90" || a == "100") {
    s.max_threads_per_sm = 2048; s.max_blocks_per_sm = 32;
    s.shared_per_sm = 228 * 1024; s.max_shared_per_block = 227 * 1024;
  } else {
    throw_error(ErrorKind::usage,
                fmt::format("--arch '{}': no per-SM limits known (use sm_80, sm_86, sm_89, sm_90 or sm_100)", arch));
  }
  s.arch = "sm_" + a;
  return s;
}

Occupancy occupancy(const SmLimits& sm, const BlockResources& b) {
  if (b.threads < 1 || b.threads > sm.max_threads_per_block)
    throw_error(ErrorKind::usage, fmt::format("--threads {}: a block has 1 to {} threads on {}", b.threads,
                                              sm.max_threads_per_block, sm.arch));
  if (b.registers_per_thread < 1 || b.registers_per_thread > sm.max_registers_per_thread)
    throw_error(ErrorKind::usage, fmt::format("--regs {}: a thread uses 1 to {} registers on {}",
                                              b.registers_per_thread, sm.max_registers_per_thread, sm.arch));
  if (b.shared_bytes < 0 || b.shared_bytes > sm.max_shared_per_block)
    throw_error(ErrorKind::usage, fmt::format("--smem {}: a block may use 0 to {} bytes of shared memory on {}",
                                              b.shared_bytes, sm.max_shared_per_block, sm.arch));
  Occupancy o;
  o.warps_per_block = int(cdiv(b.threads, sm.warp_size));
  const int max_warps = sm.max_threads_per_sm / sm.warp_size;
  o.by_blocks = sm.max_blocks_per_sm;
  o.by_threads = max_warps / o.warps_per_block;
  o.steps.push_back(fmt::format("threads: {} threads = {} warps per block; {} warps per SM / {} = {} blocks",
                                b.threads, o.warps_per_block, max_warps, o.warps_per_block, o.by_threads));

  o.registers_per_warp = int(round_up(std::int64_t(b.registers_per_thread) * sm.warp_size, sm.register_alloc_unit));
  if (std::int64_t(o.registers_per_warp) * o.warps_per_block > sm.registers_per_sm)
    throw_error(ErrorKind::usage,
                fmt::format("--regs {} with --threads {}: {} registers per block exceed the {} of an SM (launch fails "
                            "with 'too many resources requested')",
                            b.registers_per_thread, b.threads, std::int64_t(o.registers_per_warp) * o.warps_per_block,
                            sm.registers_per_sm));
  const int reg_warps =
      (sm.registers_per_sm / o.registers_per_warp) / sm.warp_alloc_granularity * sm.warp_alloc_granularity;
  o.by_registers = reg_warps / o.warps_per_block;
  o.steps.push_back(fmt::format(
      "registers: {} per thread x 32 = {} per warp, rounded to {} -> {}; {} / {} = {} warps (in multiples of {}) / "
      "{} warps per block = {} blocks",
      b.registers_per_thread, b.registers_per_thread * sm.warp_size, sm.register_alloc_unit, o.registers_per_warp,
      sm.registers_per_sm, o.registers_per_warp, reg_warps, sm.warp_alloc_granularity, o.warps_per_block,
      o.by_registers));

  o.shared_per_block = round_up(b.shared_bytes + sm.reserved_shared_per_block, sm.shared_alloc_unit);
  o.by_shared = int(sm.shared_per_sm / o.shared_per_block);
  o.steps.push_back(fmt::format(
      "shared memory: {} B + {} B reserved per block, rounded to {} B -> {} B; {} B per SM / {} = {} blocks",
      b.shared_bytes, sm.reserved_shared_per_block, sm.shared_alloc_unit, o.shared_per_block, sm.shared_per_sm,
      o.shared_per_block, o.by_shared));
  o.steps.push_back(fmt::format("blocks per SM: at most {} on {}", sm.max_blocks_per_sm, sm.arch));

  o.blocks_per_sm = std::min({o.by_blocks, o.by_threads, o.by_registers, o.by_shared});
  std::vector<std::string> limiters;
  if (o.by_threads == o.blocks_per_sm) limiters.push_back("threads");
  if (o.by_registers == o.blocks_per_sm) limiters.push_back("registers");
  if (o.by_shared == o.blocks_per_sm) limiters.push_back("shared memory");
  if (o.by_blocks == o.blocks_per_sm) limiters.push_back("blocks per SM");
  for (std::size_t i = 0; i < limiters.size(); ++i) o.limiter += (i ? " and " : "") + limiters[i];
  o.occupancy = double(o.blocks_per_sm * o.warps_per_block) / double(max_warps);
  o.steps.push_back(fmt::format("resident: min({}, {}, {}, {}) = {} blocks per SM, limited by {}; occupancy {} / {} "
                                "warps = {}",
                                o.by_threads, o.by_registers, o.by_shared, o.by_blocks, o.blocks_per_sm, o.limiter,
                                o.blocks_per_sm * o.warps_per_block, max_warps, format_percent(o.occupancy)));
  return o;
}

WaveResult waves(std::int64_t tiles, std::int64_t slots) {
  if (tiles < 0) throw_error(ErrorKind::usage, fmt::format("--tiles {}: the number of tiles must be >= 0", tiles));
  if (slots <= 0)
    throw_error(ErrorKind::usage, fmt::format("--slots {}: the number of execution slots must be >= 1", slots));
  WaveResult w;
  w.tiles = tiles;
  w.slots = slots;
  if (tiles == 0) {
    w.explanation =
        "0 tiles: nothing runs, 0 waves, efficiency 0. A grid of zero blocks is a launch error in CUDA "
        "(CUDA_ERROR_INVALID_VALUE), so the caller must skip the launch for empty inputs.";
    return w;
  }
  w.waves = cdiv(tiles, slots);
  w.full_waves = tiles / slots;
  w.tail_tiles = tiles - (w.waves - 1) * slots;
  w.tail_utilisation = double(w.tail_tiles) / double(slots);
  w.efficiency = double(tiles) / (double(w.waves) * double(slots));
  if (tiles < slots) {
    w.explanation = fmt::format(
        "{} tiles on {} slots: one partial wave; {} slots ({}) idle for the whole kernel, efficiency {}. More, "
        "smaller tiles (or split-K) would use the idle slots.",
        tiles, slots, slots - tiles, format_percent(1.0 - w.tail_utilisation), format_percent(w.efficiency));
  } else if (w.tail_tiles == slots) {
    w.explanation = fmt::format("{} tiles on {} slots: exactly {} full waves, efficiency 100.0 %.", tiles, slots,
                                w.waves);
  } else {
    w.explanation = fmt::format(
        "{} tiles on {} slots take {} waves: {} full wave{} of {} and a tail of {} tiles ({} of the slots busy). "
        "Efficiency {} / ({} x {}) = {}: {} of the slot-time paid for idles in the tail.",
        tiles, slots, w.waves, w.full_waves, w.full_waves == 1 ? "" : "s", slots, w.tail_tiles,
        format_percent(w.tail_utilisation), tiles, w.waves, slots, format_percent(w.efficiency),
        format_percent(1.0 - w.efficiency));
  }
  w.explanation += " (Model: equal-cost tiles; real tails are softened by uneven tile times and overlap with the next kernel.)";
  return w;
}

WaveTimeline wave_timeline(std::int64_t tiles, std::int64_t slots) {
  WaveTimeline t;
  t.summary = waves(tiles, slots);
  // Bounded output: the first 63 waves and the last one are listed; the rest are identical full waves.
  constexpr std::int64_t kMaxRows = 64;
  for (std::int64_t i = 0; i < t.summary.waves; ++i) {
    if (i >= kMaxRows - 1 && i != t.summary.waves - 1) {
      i = t.summary.waves - 2;
      continue;
    }
    WaveRow r;
    r.index = i;
    r.first_tile = i * slots;
    r.last_tile = std::min(tiles, (i + 1) * slots) - 1;
    r.busy_slots = r.last_tile - r.first_tile + 1;
    r.idle_slots = slots - r.busy_slots;
    t.rows.push_back(r);
  }
  return t;
}

SplitKResult split_k(const SplitKInput& in) {
  if (in.output_tiles <= 0)
    throw_error(ErrorKind::usage, fmt::format("split-K needs >= 1 output tile, got {}", in.output_tiles));
  if (in.slots <= 0) throw_error(ErrorKind::usage, fmt::format("--slots {}: must be >= 1", in.slots));
  if (in.max_split < 1) throw_error(ErrorKind::usage, fmt::format("--split-k {}: must be >= 1", in.max_split));
  if (in.k_iterations < 0 || in.partial_tile_bytes < 0 || in.tile_time_s < 0 || in.bytes_per_s < 0)
    throw_error(ErrorKind::usage, "split-K inputs (K iterations, partial bytes, tile time, bandwidth) must be >= 0");
  SplitKResult r;
  r.priced = in.partial_tile_bytes > 0 && in.tile_time_s > 0 && in.bytes_per_s > 0;
  for (int s = 1; s <= in.max_split; ++s) {
    if (in.k_iterations > 0 && s > in.k_iterations) break;  // K cannot be split finer than its iterations
    SplitKOption o;
    o.split = s;
    o.waves = waves(in.output_tiles * s, in.slots);
    double share = 1.0 / s;
    if (in.k_iterations > 0) {
      o.k_iterations_per_split = cdiv(in.k_iterations, s);
      share = double(o.k_iterations_per_split) / double(in.k_iterations);
    }
    o.compute_time = double(o.waves.waves) * share;
    // Each of the s partial tiles per output tile is written once (fp32) and read once by the reduction;
    // the final output write happens with or without a split, so it is not extra.
    o.extra_bytes = s > 1 ? 2.0 * s * double(in.output_tiles) * in.partial_tile_bytes : 0.0;
    o.reduction_time = r.priced ? o.extra_bytes / in.bytes_per_s / in.tile_time_s : 0.0;
    o.total_time = o.compute_time + o.reduction_time;
    r.options.push_back(o);
  }
  for (auto& o : r.options) o.speedup = r.options.front().total_time / o.total_time;

  // The fewest splits within a tolerance of the best: every extra split costs workspace and traffic
  // (and unpriced traffic is a real cost the estimate leaves out, hence the wider margin).
  const double tolerance = r.priced ? 0.02 : 0.05;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& o : r.options) best = std::min(best, o.total_time);
  const SplitKOption* pick = &r.options.front();
  for (const auto& o : r.options)
    if (o.total_time <= best * (1.0 + tolerance)) {
      pick = &o;
      break;
    }
  r.recommended_split = pick->split;
  const auto& base = r.options.front();
  if (pick->split == 1) {
    r.reason = fmt::format(
        "No split: {} wave{} at {} efficiency{}; no split up to {} is more than {} faster{}.", base.waves.waves,
        base.waves.waves == 1 ? "" : "s", format_percent(base.waves.efficiency),
        base.waves.efficiency >= 0.999 ? " already" : "", r.options.back().split, format_percent(tolerance, 0),
        r.priced ? " once its reduction traffic is paid for" : "");
  } else {
    r.reason = fmt::format(
        "Split K {} ways: {} tiles take {} waves at {} efficiency instead of {} at {}; each tile does 1/{} of K, so "
        "the estimate is {:.3g} unsplit-tile times instead of {:.3g} ({:.2f}x).",
        pick->split, pick->waves.tiles, pick->waves.waves, format_percent(pick->waves.efficiency), base.waves.waves,
        format_percent(base.waves.efficiency), pick->split, pick->total_time, base.total_time, pick->speedup);
    if (r.priced)
      r.reason += fmt::format(" That includes {} of partial-tile traffic for the reduction ({:.3g} tile times).",
                              format_si(pick->extra_bytes, "B"), pick->reduction_time);
    else if (in.partial_tile_bytes > 0)
      r.reason += fmt::format(
          " Not included: {} of partial-tile traffic for the reduction (give a tile time and a bandwidth to price "
          "it).",
          format_si(pick->extra_bytes, "B"));
    else
      r.reason +=
          " Not included: the reduction traffic (2 x split x one fp32 partial tile per output tile); give the GEMM "
          "and tile shapes to price it.";
    if (pick->split != r.options.back().split)
      r.reason += fmt::format(" Larger splits gain less than {} more{}.", format_percent(tolerance, 0),
                              r.priced ? " or lose to their own traffic" : "");
    else
      r.reason += fmt::format(" Splits beyond {} were not evaluated (raise --split-k to see them).", pick->split);
  }
  return r;
}

KQUAL_DEFINE_TO_JSON(SmLimits, arch, max_threads_per_sm, max_blocks_per_sm, max_threads_per_block, registers_per_sm,
                     max_registers_per_thread, register_alloc_unit, shared_per_sm, max_shared_per_block, reserved_shared_per_block)

KQUAL_DEFINE_TO_JSON(Occupancy, blocks_per_sm, limiter, by_threads, by_registers, by_shared, by_blocks, warps_per_block,
                     registers_per_warp, shared_per_block, occupancy, steps)

KQUAL_DEFINE_TO_JSON(WaveResult, tiles, slots, waves, full_waves, tail_tiles, tail_utilisation, efficiency, explanation)

json to_json(const WaveTimeline& t) {
  json rows = json::array();
  for (const auto& r : t.rows)
    rows.push_back({{"wave", r.index},
                    {"first_tile", r.first_tile},
                    {"last_tile", r.last_tile},
                    {"busy_slots", r.busy_slots},
                    {"idle_slots", r.idle_slots}});
  return {{"summary", to_json(t.summary)}, {"waves", rows}};
}

json to_json(const SplitKResult& s) {
  json opts = json::array();
  for (const auto& o : s.options)
    opts.push_back({{"split", o.split},
                    {"tiles", o.waves.tiles},
                    {"waves", o.waves.waves},
                    {"efficiency", o.waves.efficiency},
                    {"k_iterations_per_split", o.k_iterations_per_split},
                    {"compute_time_tiles", o.compute_time},
                    {"extra_bytes", o.extra_bytes},
                    {"reduction_time_tiles", o.reduction_time},
                    {"total_time_tiles", o.total_time},
                    {"speedup", o.speedup}});
  return {{"options", opts},
          {"priced", s.priced},
          {"recommended_split", s.recommended_split},
          {"reason", s.reason}};
}

}  // namespace kqual::model
