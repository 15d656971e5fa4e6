// The checks of a PyTorch submission's timed calls on fresh values (bench/timed_samples.hpp) on records
// written by hand: the draws' places and values, the read-backs the draws pick and only those.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kqual/bench/timed_samples.hpp"

namespace kqual::bench {
namespace {

const std::uint64_t kKey[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};

void mark(ActivityRecord& r, const std::string& label) { r.marks.push_back({label, 0, 1, 13, 0}); }
void draw(ActivityRecord& r, const std::string& label, std::uint64_t value) { r.draws.push_back({label, value, 0, r.marks.size()}); }
void draw(ActivityRecord& r, const std::string& label) { draw(r, label, draw_value(kKey, label)); }
void read(ActivityRecord& r, const std::string& label) { r.reads.push_back({label, 0, 4, 0, 0, 0}); }

FreshBlockRules rules(int samples, int verify) {
  FreshBlockRules o;
  o.samples = samples;
  o.verify = verify;
  o.rolled = {{"x", 1000}};
  o.inputs = {"x", "r"};
  o.outputs = {"y"};
  return o;
}

// A block as kqual's worker makes it: each call's shift drawn before it, the read-back draw after it,
// the calls the selection rule picks read back. Returns the ids it picked.
std::vector<int> honest_block(ActivityRecord& r, const FreshBlockRules& o) {
  std::vector<int> picked;
  int chosen = 0;
  for (int id = 1; id <= o.samples; ++id) {
    draw(r, fmt::format("p{}:x", id));
    mark(r, fmt::format("t{}", id));
    mark(r, fmt::format("/t{}", id));
    const std::string s = fmt::format("s{}", id);
    draw(r, s);
    const std::uint64_t left = std::uint64_t(o.samples - (id - 1));
    if (o.verify - chosen > 0 && draw_value(kKey, s) % left < std::uint64_t(o.verify - chosen)) {
      ++chosen;
      picked.push_back(id);
      for (const char* n : {"x", "r"}) read(r, fmt::format("s{}:in:{}", id, n));
      read(r, fmt::format("s{}:out:y", id));
    }
  }
  return picked;
}

std::vector<int> all_kept(int samples) {
  std::vector<int> v;
  for (int i = 1; i <= samples; ++i) v.push_back(i);
  return v;
}

TEST(TimedSamples, TheCallsTheDrawsPickAreReadBackExactlyAsManyAsAsked) {
  for (int verify : {1, 3, 10}) {
    ActivityRecord r;
    const FreshBlockRules o = rules(10, verify);
    const std::vector<int> picked = honest_block(r, o);
    const FreshBlock b = fresh_block(r, kKey, all_kept(10), o);
    ASSERT_TRUE(b.tampered.empty()) << b.tampered;
    EXPECT_EQ(b.calls, 10);
    ASSERT_EQ(b.verified.size(), std::size_t(verify)) << "selection sampling picks exactly as many as asked";
    for (std::size_t i = 0; i < picked.size(); ++i) {
      EXPECT_EQ(b.verified[i].id, picked[i]);
      EXPECT_EQ(b.verified[i].dataset, (picked[i] - 1) % 2);
      EXPECT_EQ(b.verified[i].shift.at("x"), std::int64_t(draw_value(kKey, fmt::format("p{}:x", picked[i])) % 1000));
    }
  }
}

TEST(TimedSamples, ADrawNotTheRecordersOrAskedTwiceIsTampering) {
  ActivityRecord r;
  const FreshBlockRules o = rules(4, 1);
  honest_block(r, o);
  ActivityRecord forged = r;
  forged.draws[1].value ^= 1;
  EXPECT_NE(fresh_block(forged, kKey, all_kept(4), o).tampered.find("not the recorder's value"), std::string::npos);
  ActivityRecord twice = r;
  twice.draws.push_back(twice.draws[1]);
  EXPECT_NE(fresh_block(twice, kKey, all_kept(4), o).tampered.find("twice"), std::string::npos);
}

TEST(TimedSamples, AReadBackOfACallTheDrawDidNotPickOrAMissingShiftIsTampering) {
  ActivityRecord r;
  const FreshBlockRules o = rules(6, 1);
  const std::vector<int> picked = honest_block(r, o);
  ASSERT_EQ(picked.size(), 1u);
  const int other = picked[0] == 1 ? 2 : 1;
  ActivityRecord extra = r;
  read(extra, fmt::format("s{}:out:y", other));
  EXPECT_NE(fresh_block(extra, kKey, all_kept(6), o).tampered.find("the draw did not pick it"), std::string::npos);
  ActivityRecord missing = r;
  missing.reads.pop_back();
  EXPECT_NE(fresh_block(missing, kKey, all_kept(6), o).tampered.find("drawn to be read back"), std::string::npos);
  ActivityRecord stale = r;
  stale.draws.erase(stale.draws.begin());  // call 1's input shift never drawn: it ran on the dataset as it was
  EXPECT_NE(fresh_block(stale, kKey, all_kept(6), o).tampered.find("was not given fresh values"), std::string::npos);
}

TEST(TimedSamples, RolledBytesTakeElementIPlusShift) {
  const std::vector<std::uint8_t> b = {0, 1, 2, 3, 4, 5, 6, 7};  // four 2-byte elements
  EXPECT_EQ(rolled_bytes(b, 2, 1), (std::vector<std::uint8_t>{2, 3, 4, 5, 6, 7, 0, 1}));
  EXPECT_EQ(rolled_bytes(b, 2, 0), b);
  EXPECT_EQ(rolled_bytes(b, 2, 4), b);
  EXPECT_EQ(rolled_bytes(b, 2, -1), (std::vector<std::uint8_t>{6, 7, 0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace kqual::bench
