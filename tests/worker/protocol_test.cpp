// The typed worker protocol: every request and reply survives the wire unchanged, and a malformed
// message is refused naming the op and the field.
#include <gtest/gtest.h>

#include <set>

#include "kqual/contract/generated.hpp"
#include "kqual/core/error.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::worker {
namespace {

RunRequest sample_run() {
  RunRequest r;
  r.module = "/tmp/k.cubin";
  r.buffers = {{"x", BufferKind::input, 1024, 16, "/tmp/x.in"}, {"y", BufferKind::output, 1024, 16, ""},
               {"tmp", BufferKind::scratch, 64, 0, ""}};
  Launch l;
  l.kernel = "_Z8add_reluPKfS0_Pfl";
  l.grid = {132, 2, 1};
  l.block = {256, 1, 1};
  l.shared = 4096;
  l.args = {Arg::pointer("x"), Arg::pointer("y"), Arg::value(1 << 20, 8), Arg::value(-3, 4)};
  Launch lib;
  lib.library = "cub.exclusive_sum<float>";
  lib.args = {Arg::pointer("x"), Arg::pointer("y"), Arg::value(256, 8)};
  r.launches = {l, lib};
  r.poison = {0xFF, 0x7F};
  r.out_files = {{"y", {"/tmp/y0", "/tmp/y1"}}};
  r.guard_bytes = 8192;
  return r;
}

TEST(Protocol, RunRequestRoundTrips) {
  const RunRequest a = sample_run();
  const json wire = json::parse(to_json(a).dump());
  EXPECT_EQ(wire.at("op"), "run");
  const RunRequest b = run_request_from_json(wire);
  EXPECT_EQ(b.module, a.module);
  ASSERT_EQ(b.buffers.size(), 3u);
  EXPECT_EQ(b.buffers[0].offset, 16u);
  EXPECT_EQ(b.buffers[0].file, "/tmp/x.in");
  EXPECT_EQ(b.buffers[2].kind, BufferKind::scratch);
  EXPECT_EQ(b.launches, a.launches);
  EXPECT_EQ(b.poison, a.poison);
  EXPECT_EQ(b.out_files, a.out_files);
  EXPECT_EQ(b.guard_bytes, 8192u);
}

TEST(Protocol, EvaluatorFieldsRoundTrip) {
  RunRequest a = sample_run();
  a.placements = {"trap_after", "trap_before"};
  a.trap_only = {"x"};
  a.scribble = {0xA5, -1};
  a.buffers[0].align = 16;
  Buffer g("r", BufferKind::input, 4096);
  g.gen_stream = 1;
  g.gen_seed = 0xFEDCBA9876543210ull;  // past 2^63: survives as an unsigned 64-bit number
  g.gen_dtype = 1;
  a.buffers.push_back(g);
  a.generator_module = "/tmp/gen.cubin";
  a.buffers[1].elem_bytes = 4;
  a.buffers[1].windows = {{0, 16}, {200, 56}};
  const RunRequest b = run_request_from_json(json::parse(to_json(a).dump()));
  EXPECT_EQ(b.placements, a.placements);
  EXPECT_EQ(b.trap_only, a.trap_only);
  EXPECT_EQ(b.scribble, a.scribble);
  EXPECT_EQ(b.buffers[0].align, 16u);
  ASSERT_EQ(b.buffers.size(), 4u);
  EXPECT_TRUE(b.buffers[3].generated());
  EXPECT_EQ(b.buffers[3].gen_seed, 0xFEDCBA9876543210ull);
  EXPECT_EQ(b.buffers[3].gen_dtype, 1);
  EXPECT_EQ(b.buffers[1].windows, a.buffers[1].windows);
  EXPECT_EQ(b.generator_module, "/tmp/gen.cubin");
}

TEST(Protocol, EveryGeneratedDtypeCodeIsAcceptedWithItsElementSizeAndNoOther) {
  // The codes contract::generated_dtype_code gives (f32, bf16, i32, f16): each crosses the protocol and
  // fills elements of its own size; another is refused on arrival.
  const std::pair<DType, std::size_t> sizes[] = {{DType::f32, 4}, {DType::bf16, 2}, {DType::i32, 4}, {DType::f16, 2}};
  for (const auto& [dt, bytes] : sizes) {
    RunRequest a = sample_run();
    Buffer g("r", BufferKind::input, 4096);
    g.gen_stream = 0;
    g.gen_dtype = contract::generated_dtype_code(dt);
    a.buffers.push_back(g);
    a.generator_module = "/tmp/gen.cubin";
    const RunRequest b = run_request_from_json(json::parse(to_json(a).dump()));
    EXPECT_EQ(b.buffers.back().gen_dtype, g.gen_dtype) << to_string(dt);
    EXPECT_EQ(generated_element_bytes(b.buffers.back().gen_dtype), bytes) << to_string(dt);
  }
  RunRequest a = sample_run();
  Buffer g("r", BufferKind::input, 4096);
  g.gen_stream = 0;
  g.gen_dtype = 4;
  a.buffers.push_back(g);
  a.generator_module = "/tmp/gen.cubin";
  EXPECT_THROW((void)run_request_from_json(json::parse(to_json(a).dump())), Error);
}

TEST(Protocol, EvaluatorFieldsAreCheckedOnArrival) {
  RunRequest a = sample_run();
  json j = to_json(a);
  j["placements"] = {"trap_after", "sideways"};
  EXPECT_THROW(run_request_from_json(j), Error);  // unknown placement
  j["placements"] = {"trap_after"};
  EXPECT_THROW(run_request_from_json(j), Error);  // one per run
  j = to_json(a);
  j["buffers"][1]["windows"] = json::array({json::array({250, 10})});
  j["buffers"][1]["elem_bytes"] = 4;
  EXPECT_THROW(run_request_from_json(j), Error);  // past the 1024-byte output
  j = to_json(a);
  j["buffers"][0].erase("file");
  j["buffers"][0]["generate"] = {{"stream", 0}, {"seed", 1}, {"dtype", 0}};
  EXPECT_THROW(run_request_from_json(j), Error);  // generated without a generator module
  j["generator_module"] = "/tmp/gen.cubin";
  EXPECT_NO_THROW(run_request_from_json(j));
}

// An output run in place names the input it is a view of; the worker refuses an alias it could not
// honour (not an input, another size or offset, read back in windows).
TEST(Protocol, AnOutputInPlaceNamesItsInputAndIsCheckedOnArrival) {
  RunRequest a = sample_run();
  a.buffers[1].aliases = "x";
  const RunRequest b = run_request_from_json(json::parse(to_json(a).dump()));
  EXPECT_EQ(b.buffers[1].aliases, "x");
  EXPECT_EQ(b.buffers[0].aliases, "");
  json j = to_json(a);
  j["buffers"][1]["aliases"] = "tmp";
  EXPECT_THROW(run_request_from_json(j), Error);  // scratch, not an input
  j["buffers"][1]["aliases"] = "nothing";
  EXPECT_THROW(run_request_from_json(j), Error);
  j = to_json(a);
  j["buffers"][1]["bytes"] = 512;
  j["out_files"]["y"] = {"/tmp/y0", "/tmp/y1"};
  EXPECT_THROW(run_request_from_json(j), Error);  // another size than x
  j = to_json(a);
  j["buffers"][1]["offset"] = 0;
  EXPECT_THROW(run_request_from_json(j), Error);  // another offset than x
  j = to_json(a);
  j["buffers"][0]["aliases"] = "y";
  EXPECT_THROW(run_request_from_json(j), Error);  // an input aliases nothing
  j = to_json(a);
  j["buffers"][1]["elem_bytes"] = 4;
  j["buffers"][1]["windows"] = json::array({json::array({0, 16})});
  EXPECT_THROW(run_request_from_json(j), Error);  // read back whole
}

TEST(Protocol, BenchReplyCarriesEveryLaunchsFingerprint) {
  BenchReply r;
  r.samples_ms = {1.0, 1.1};
  r.sample_hashes = {{"y", {"aa", "bb", "aa"}}};
  r.sample_datasets = {0, 0, 1};
  r.final_hashes = {{"y", {"aa", "cc"}}};
  r.alt_out_hashes = {{"y", "dd"}};
  const json wire = json::parse(to_json(r).dump());
  const BenchReply b = bench_reply_from_json(wire);
  EXPECT_EQ(b.sample_hashes, r.sample_hashes);
  EXPECT_EQ(b.sample_datasets, r.sample_datasets);
  EXPECT_EQ(b.final_hashes, r.final_hashes);
  EXPECT_EQ(b.alt_out_hashes, r.alt_out_hashes);
}

TEST(Protocol, BenchRequestRoundTripsWithAndWithoutOutputFiles) {
  BenchRequest a;
  a.module = "/tmp/k.cubin";
  a.buffers = sample_run().buffers;
  a.launches = sample_run().launches;
  a.out_hashes = true;
  a.flush = false;
  a.warmup = 1;
  a.min_samples = a.max_samples = 10;
  BenchRequest b = bench_request_from_json(json::parse(to_json(a).dump()));
  EXPECT_TRUE(b.out_files.empty());
  EXPECT_TRUE(b.out_hashes);
  EXPECT_FALSE(b.flush);
  EXPECT_EQ(b.warmup, 1);
  EXPECT_EQ(b.max_samples, 10);
  EXPECT_EQ(b.launches, a.launches);
  a.out_files = {{"y", "/tmp/y.out"}};
  b = bench_request_from_json(json::parse(to_json(a).dump()));
  EXPECT_EQ(b.out_files, a.out_files);
}

// Issue 23: fresh inputs per launch, a share of launches saved, every launch's seed in the reply.
TEST(Protocol, FreshInputsAndSavedLaunchesRoundTripAndAreChecked) {
  BenchRequest a;
  a.module = "/tmp/k.cubin";
  Buffer x("x", BufferKind::input, 4096);
  x.gen_stream = 0;
  x.gen_seed = 9;
  Buffer y("y", BufferKind::output, 4096);
  y.elem_bytes = 4;
  y.chunk_elements = 1 << 20;
  a.buffers = {x, y};
  a.fresh_inputs = true;
  a.fresh_base = 0x0123456789ABCDEFull;
  a.generator_module = "/tmp/gen.cubin";
  a.save_launches = {7};
  a.save_files = {{"y", {"/tmp/y.saved"}}};
  BenchRequest b = bench_request_from_json(json::parse(to_json(a).dump()));
  EXPECT_TRUE(b.fresh_inputs);
  EXPECT_EQ(b.fresh_base, a.fresh_base);
  EXPECT_EQ(b.generator_module, a.generator_module);
  EXPECT_EQ(b.save_launches, a.save_launches);
  EXPECT_EQ(b.save_files, a.save_files);
  // A saved launch without a path for every output, fresh inputs without a generated input, and a
  // generated input without a generator are refused by name.
  json j = to_json(a);
  j["save_files"] = json::object();
  EXPECT_THROW((void)bench_request_from_json(j), Error);
  j = to_json(a);
  j["generator_module"] = "";
  EXPECT_THROW((void)bench_request_from_json(j), Error);
  BenchRequest plain = a;
  plain.buffers[0].gen_stream = -1;
  plain.buffers[0].file = "/tmp/x.in";
  plain.generator_module.clear();
  EXPECT_THROW((void)bench_request_from_json(to_json(plain)), Error);

  BenchReply r;
  r.samples_ms = {1.0};
  r.sample_hashes = {{"y", {"aa", "bb"}}};
  r.launch_seeds = {fresh_seed(5, 0), fresh_seed(5, 1)};
  r.hash_what = {"warm-up launch 1", "sample attempt 1"};
  r.graph_note = "note";
  r.harness_memory_written = "kqual's output hash slot 0 ... was rewritten";
  const BenchReply back = bench_reply_from_json(json::parse(to_json(r).dump()));
  EXPECT_EQ(back.launch_seeds, r.launch_seeds);
  EXPECT_EQ(back.hash_what, r.hash_what);
  EXPECT_EQ(back.graph_note, r.graph_note);
  EXPECT_EQ(back.harness_memory_written, r.harness_memory_written);
  EXPECT_TRUE(bench_reply_from_json(json::parse(to_json(BenchReply{}).dump())).harness_memory_written.empty());
}

// selftest's stand-in for a kernel that found kqual's hash slots: off unless asked for.
TEST(Protocol, GiveHashSlotsRoundTripsAndIsOffByDefault) {
  BenchRequest a;
  a.module = "/tmp/k.cubin";
  a.buffers = {Buffer("y", BufferKind::output, 64)};
  EXPECT_FALSE(bench_request_from_json(json::parse(to_json(a).dump())).give_hash_slots);
  a.give_hash_slots = true;
  EXPECT_TRUE(bench_request_from_json(json::parse(to_json(a).dump())).give_hash_slots);
}

TEST(Protocol, FreshSeedsDifferPerLaunchAndBaseAndChunkHashesCombineByValue) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t base : {0ull, 1ull, 0xFFFFFFFFFFFFFFFFull})
    for (std::uint64_t i = 0; i < 1000; ++i) seen.insert(fresh_seed(base, i));
  EXPECT_EQ(seen.size(), 3000u);
  EXPECT_EQ(fresh_seed(42, 3), fresh_seed(42, 3));
  EXPECT_EQ(combine_chunk_hashes({1, 2, 3}), combine_chunk_hashes({1, 2, 3}));
  EXPECT_NE(combine_chunk_hashes({1, 2, 3}), combine_chunk_hashes({1, 3, 2}));
  EXPECT_NE(combine_chunk_hashes({1, 2}), combine_chunk_hashes({1, 2, 0}));
}

TEST(Protocol, RunRequestGenSeedsNeedOnePerRun) {
  RunRequest r;
  Buffer x("x", BufferKind::input, 64);
  x.gen_stream = 0;
  Buffer y("y", BufferKind::output, 64);
  y.elem_bytes = 4;
  y.chunk_elements = 1 << 20;
  r.buffers = {x, y};
  r.generator_module = "/tmp/gen.cubin";
  r.poison = {0xFF, 0xFF};
  r.gen_seeds = {1, 2};
  EXPECT_EQ(run_request_from_json(json::parse(to_json(r).dump())).gen_seeds, r.gen_seeds);
  r.gen_seeds = {1};
  EXPECT_THROW((void)run_request_from_json(to_json(r)), Error);
}

TEST(Protocol, FlushModeRoundTripsAndAnUnknownOneIsRefused) {
  BenchRequest a;
  a.buffers = sample_run().buffers;
  a.launches = sample_run().launches;
  EXPECT_EQ(bench_request_from_json(to_json(a)).flush_mode, "write");  // the default
  a.flush_mode = "clean";
  EXPECT_EQ(bench_request_from_json(json::parse(to_json(a).dump())).flush_mode, "clean");
  a.flush_mode = "invalidate";
  EXPECT_EQ(bench_request_from_json(json::parse(to_json(a).dump())).flush_mode, "invalidate");
  json j = to_json(a);
  j["flush_mode"] = "evict";
  EXPECT_THROW(bench_request_from_json(j), Error);
}

TEST(Protocol, TimerAndClockGuardRoundTripAndBadValuesAreRefused) {
  BenchRequest a;
  a.buffers = sample_run().buffers;
  a.launches = sample_run().launches;
  EXPECT_EQ(bench_request_from_json(to_json(a)).timer, TimerKind::events);  // the default
  EXPECT_EQ(to_json(a).at("timer"), "events");                              // the word on the wire
  EXPECT_TRUE(bench_request_from_json(to_json(a)).clock_guard);
  a.timer = TimerKind::cupti;
  a.clock_guard = false;
  a.clock_share = 0.8;
  a.max_discards = 7;
  BenchRequest b = bench_request_from_json(json::parse(to_json(a).dump()));
  EXPECT_EQ(b.timer, TimerKind::cupti);
  EXPECT_FALSE(b.clock_guard);
  EXPECT_DOUBLE_EQ(b.clock_share, 0.8);
  EXPECT_EQ(b.max_discards, 7);
  json j = to_json(a);
  j["timer"] = "wallclock";
  try {
    (void)bench_request_from_json(j);
    ADD_FAILURE() << "an unknown timer was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "worker protocol: 'bench' timer 'wallclock' (events, cupti or graph)");
  }
  j = to_json(a);
  j["clock_share"] = 1.5;
  EXPECT_THROW(bench_request_from_json(j), Error);
  // A graph replays launches back to back: with an L2 flush it would time the flushes.
  a.timer = TimerKind::graph;
  a.flush = true;
  EXPECT_THROW(bench_request_from_json(to_json(a)), Error);
  a.flush = false;
  a.graph_launches = 50;
  EXPECT_EQ(bench_request_from_json(to_json(a)).graph_launches, 50);
  j = to_json(a);
  j["graph_launches"] = -1;
  EXPECT_THROW(bench_request_from_json(j), Error);
}

TEST(Protocol, BenchReplyCarriesTimerAndClocks) {
  BenchReply r;
  r.samples_ms = {0.80, 0.81};
  r.timer = TimerKind::cupti;
  r.event_ms = {0.83, 0.84};
  r.kernels_per_sample = {1, 1};
  r.sm_clock_mhz = {1980, 1965};
  r.mem_clock_mhz = {3201, 3201};
  r.reference_sm_mhz = 1980;
  r.discarded = 2;
  r.clock_events = {"sample attempt 4: SM 1410 MHz (71 % of 1980), sw_power_cap; discarded"};
  r.clocks_note = "";
  const BenchReply b = bench_reply_from_json(json::parse(to_json(r).dump()));
  EXPECT_EQ(b.timer, TimerKind::cupti);
  EXPECT_EQ(to_json(r).at("timer"), "cupti");
  EXPECT_EQ(b.event_ms, r.event_ms);
  EXPECT_EQ(b.kernels_per_sample, r.kernels_per_sample);
  EXPECT_EQ(b.sm_clock_mhz, r.sm_clock_mhz);
  EXPECT_EQ(b.mem_clock_mhz, r.mem_clock_mhz);
  EXPECT_EQ(b.reference_sm_mhz, 1980u);
  EXPECT_EQ(b.discarded, 2);
  EXPECT_EQ(b.clock_events, r.clock_events);
}

TEST(Protocol, RepliesRoundTrip) {
  RunReply run;
  RunResult rr;
  rr.poison = 0x7F;
  rr.kernel_ms = 0.25;
  rr.guard_violations = {{"y", "after", 4, 1024}};
  rr.inputs = {{"x", "aa", "bb", 12}};
  run.runs = {rr};
  const RunReply back = run_reply_from_json(json::parse(to_json(run).dump()));
  ASSERT_EQ(back.runs.size(), 1u);
  EXPECT_EQ(back.runs[0].poison, 0x7F);
  EXPECT_EQ(back.runs[0].guard_violations.at(0).first_byte_offset, 1024);
  EXPECT_EQ(back.runs[0].inputs.at(0).first_changed_byte, 12);
  EXPECT_NE(describe(back.runs[0].guard_violations.at(0)).find("buffer 'y' was written after its bounds"), std::string::npos);

  BenchReply bench;
  bench.samples_ms = {1, 2, 3};
  bench.warmup_ms = {4};
  bench.flush_bytes = 120 << 20;
  bench.stop_reason = "noise_target";
  bench.out_hashes = {{"y", "0123456789abcdef"}};
  const BenchReply bb = bench_reply_from_json(json::parse(to_json(bench).dump()));
  EXPECT_EQ(bb.samples_ms, bench.samples_ms);
  EXPECT_EQ(bb.out_hashes, bench.out_hashes);
  EXPECT_EQ(bb.stop_reason, "noise_target");
  EXPECT_TRUE(bb.guard_violations.empty());
}

TEST(Protocol, MalformedMessagesNameTheOpAndTheField) {
  json j = to_json(sample_run());
  j.at("buffers").at(0).erase("file");
  try {
    run_request_from_json(j);
    FAIL() << "an input without its file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input buffer 'x' without 'file'"), std::string::npos) << e.what();
  }
  j = to_json(sample_run());
  j.at("launches").at(0).at("grid") = "wide";
  try {
    run_request_from_json(j);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'run' field 'grid'"), std::string::npos) << e.what();
  }
  j = to_json(sample_run());
  j.at("out_files").at("y") = json::array({"/tmp/only-one"});
  EXPECT_THROW(run_request_from_json(j), Error);  // one path per poison pattern
  EXPECT_THROW(bench_reply_from_json(json{{"ok", true}}), Error);
}

}  // namespace
}  // namespace kqual::worker
