#include <gtest/gtest.h>

#include "kqual/core/error.hpp"
#include "kqual/model/waves.hpp"

namespace kqual::model {
namespace {

// The seed case of the waves walkthrough: 96 tiles on 80 slots.
TEST(Waves, SeedCase96TilesOn80SlotsIsTwoWavesAt60Percent) {
  const auto w = waves(96, 80);
  EXPECT_EQ(w.waves, 2);
  EXPECT_EQ(w.full_waves, 1);
  EXPECT_EQ(w.tail_tiles, 16);
  EXPECT_DOUBLE_EQ(w.tail_utilisation, 0.2);
  EXPECT_DOUBLE_EQ(w.efficiency, 0.6);
  EXPECT_NE(w.explanation.find("60.0 %"), std::string::npos) << w.explanation;
}

TEST(Waves, ZeroAndOneTile) {
  const auto none = waves(0, 80);
  EXPECT_EQ(none.waves, 0);
  EXPECT_EQ(none.tail_tiles, 0);
  EXPECT_EQ(none.efficiency, 0.0);
  EXPECT_NE(none.explanation.find("launch error"), std::string::npos);
  const auto one = waves(1, 80);
  EXPECT_EQ(one.waves, 1);
  EXPECT_EQ(one.tail_tiles, 1);
  EXPECT_DOUBLE_EQ(one.efficiency, 1.0 / 80.0);
  const auto one_slot = waves(1, 1);
  EXPECT_EQ(one_slot.waves, 1);
  EXPECT_DOUBLE_EQ(one_slot.efficiency, 1.0);
}

TEST(Waves, MoreSlotsThanTilesAndExactMultiples) {
  const auto few = waves(50, 80);
  EXPECT_EQ(few.waves, 1);
  EXPECT_EQ(few.full_waves, 0);
  EXPECT_DOUBLE_EQ(few.efficiency, 0.625);
  EXPECT_DOUBLE_EQ(few.tail_utilisation, 0.625);
  const auto exact = waves(160, 80);
  EXPECT_EQ(exact.waves, 2);
  EXPECT_EQ(exact.tail_tiles, 80);
  EXPECT_DOUBLE_EQ(exact.efficiency, 1.0);
  const auto one_over = waves(81, 80);  // one tile past a full wave doubles the time
  EXPECT_EQ(one_over.waves, 2);
  EXPECT_DOUBLE_EQ(one_over.efficiency, 81.0 / 160.0);
  EXPECT_THROW(waves(10, 0), Error);
  EXPECT_THROW(waves(-1, 80), Error);
}

TEST(Waves, TimelineListsEveryWaveAndBoundsLongOnes) {
  const auto t = wave_timeline(96, 80);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].first_tile, 0);
  EXPECT_EQ(t.rows[0].last_tile, 79);
  EXPECT_EQ(t.rows[0].idle_slots, 0);
  EXPECT_EQ(t.rows[1].first_tile, 80);
  EXPECT_EQ(t.rows[1].last_tile, 95);
  EXPECT_EQ(t.rows[1].busy_slots, 16);
  EXPECT_EQ(t.rows[1].idle_slots, 64);
  EXPECT_TRUE(wave_timeline(0, 80).rows.empty());
  const auto long_one = wave_timeline(1000, 1);
  ASSERT_EQ(long_one.rows.size(), 64u);
  EXPECT_EQ(long_one.rows[62].index, 62);
  EXPECT_EQ(long_one.rows.back().index, 999);
  EXPECT_EQ(long_one.rows.back().last_tile, 999);
}

TEST(Occupancy, ThreadsRegistersAndSharedMemoryLimits) {
  const auto sm90 = sm_limits("sm_90");
  // 256 threads x 32 registers: 8 blocks from threads and from registers alike.
  auto o = occupancy(sm90, {256, 32, 0});
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_EQ(o.limiter, "threads and registers");
  EXPECT_DOUBLE_EQ(o.occupancy, 1.0);
  // 128 registers: 4096 per warp, 16 warps fit, 2 blocks of 8 warps.
  o = occupancy(sm90, {256, 128, 0});
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limiter, "registers");
  EXPECT_DOUBLE_EQ(o.occupancy, 0.25);
  // 72 registers: 2304 per warp -> 28 warps (multiple of 4) -> 3 blocks of 8 warps.
  o = occupancy(sm90, {256, 72, 0});
  EXPECT_EQ(o.registers_per_warp, 2304);
  EXPECT_EQ(o.blocks_per_sm, 3);
  // 48 KiB of shared memory + 1 KiB reserve: 228 KiB / 49 KiB = 4 blocks.
  o = occupancy(sm90, {128, 32, 48 * 1024});
  EXPECT_EQ(o.shared_per_block, 50176);
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_EQ(o.limiter, "shared memory");
  // Tiny blocks hit the 32-blocks-per-SM limit; sm_89 has 1536 threads and 24 blocks.
  EXPECT_EQ(occupancy(sm90, {32, 16, 0}).limiter, "blocks per SM");
  EXPECT_EQ(occupancy(sm_limits("sm_89"), {256, 32, 0}).blocks_per_sm, 6);
}

TEST(Occupancy, BlocksThatCannotLaunchAreRefusedByName) {
  const auto sm90 = sm_limits("90");
  try {
    occupancy(sm90, {1024, 255, 0});  // 8192 registers per warp x 32 warps > 65536
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--regs 255"), std::string::npos) << e.what();
  }
  EXPECT_THROW(occupancy(sm90, {2048, 32, 0}), Error);
  EXPECT_THROW(occupancy(sm90, {256, 32, 300 * 1024}), Error);
  EXPECT_THROW(sm_limits("sm_70"), Error);
}

// Splitting K of the seed case: more, shorter tiles fill the tail.
TEST(SplitK, SeedCaseUnpriced) {
  SplitKInput in;
  in.output_tiles = 96;
  in.slots = 80;
  in.max_split = 4;
  const auto r = split_k(in);
  ASSERT_EQ(r.options.size(), 4u);
  EXPECT_FALSE(r.priced);
  EXPECT_EQ(r.options[0].waves.waves, 2);
  EXPECT_DOUBLE_EQ(r.options[0].compute_time, 2.0);
  EXPECT_EQ(r.options[1].waves.tiles, 192);
  EXPECT_EQ(r.options[1].waves.waves, 3);
  EXPECT_DOUBLE_EQ(r.options[1].waves.efficiency, 0.8);
  EXPECT_DOUBLE_EQ(r.options[1].compute_time, 1.5);
  EXPECT_DOUBLE_EQ(r.options[2].waves.efficiency, 0.9);
  EXPECT_NEAR(r.options[2].compute_time, 4.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.options[3].waves.efficiency, 0.96);
  EXPECT_DOUBLE_EQ(r.options[3].compute_time, 1.25);
  EXPECT_DOUBLE_EQ(r.options[3].speedup, 1.6);
  EXPECT_EQ(r.recommended_split, 4);
  EXPECT_NE(r.reason.find("Not included"), std::string::npos) << r.reason;
}

TEST(SplitK, SeedCasePricedAsBf16GemmOnH200Rates) {
  // 1536 x 1024 x 8192 with 128x128x64 tiles: 96 output tiles, 128 K iterations, 64 KiB fp32 partials.
  SplitKInput in;
  in.output_tiles = 96;
  in.slots = 80;
  in.max_split = 4;
  in.k_iterations = 128;
  in.partial_tile_bytes = 128.0 * 128.0 * 4.0;
  in.tile_time_s = 2.0 * 128 * 128 * 8192 / (989.5e12 / 80.0);
  in.bytes_per_s = 4.8e12;
  const auto r = split_k(in);
  EXPECT_TRUE(r.priced);
  EXPECT_DOUBLE_EQ(r.options[1].extra_bytes, 25165824.0);  // 2 x 2 x 96 x 64 KiB
  EXPECT_NEAR(r.options[1].total_time, 1.5 + 25165824.0 / 4.8e12 / in.tile_time_s, 1e-12);
  EXPECT_EQ(r.options[2].k_iterations_per_split, 43);  // ceil(128 / 3): the last split is shorter
  EXPECT_NEAR(r.options[2].compute_time, 4.0 * 43.0 / 128.0, 1e-12);
  EXPECT_EQ(r.recommended_split, 3);
  // K too short to split 4 ways: only the splits K allows are offered.
  in.k_iterations = 2;
  EXPECT_EQ(split_k(in).options.size(), 2u);
}

TEST(SplitK, FullWavesNeedNoSplit) {
  SplitKInput in;
  in.output_tiles = 160;
  in.slots = 80;
  const auto r = split_k(in);
  EXPECT_EQ(r.recommended_split, 1);
  EXPECT_NE(r.reason.find("No split"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace kqual::model
