// run_lanes (src/pipeline/lanes.cpp): the one implementation of lanes that selftest and screen share.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "kqual/pipeline/lanes.hpp"

namespace kqual::pipeline {
namespace {

TEST(Lanes, EveryItemIsHandedOutOnceInOrderOverTheLanes) {
  std::mutex mu;
  std::vector<int> seen(100, 0);
  std::vector<std::size_t> order;
  std::vector<int> per_lane(4, 0);
  const std::size_t handed = run_lanes(4, 100, [&](std::size_t lane, std::size_t item) {
    std::lock_guard<std::mutex> lk(mu);
    ++seen[item];
    ++per_lane[lane];
    order.push_back(item);
    return true;
  });
  EXPECT_EQ(handed, 100u);
  for (int n : seen) EXPECT_EQ(n, 1);
  int total = 0;
  for (int n : per_lane) total += n;
  EXPECT_EQ(total, 100);
}

TEST(Lanes, ALaneThatRetiresTakesNoMoreAndWhenAllRetireTheRestIsLeft) {
  std::atomic<int> calls{0};
  // Every lane retires after its first item: two lanes hand out two items, the rest is the caller's.
  const std::size_t handed = run_lanes(2, 10, [&](std::size_t, std::size_t) {
    ++calls;
    return false;
  });
  EXPECT_EQ(handed, 2u);
  EXPECT_EQ(calls.load(), 2);
}

TEST(Lanes, TheFirstExceptionStopsEveryLaneCallsOnStopOnceAndIsThrownAgain) {
  std::atomic<int> stops{0}, after{0};
  EXPECT_THROW(run_lanes(
                   3, 1000,
                   [&](std::size_t, std::size_t item) {
                     if (item == 5) throw std::runtime_error("lane failed");
                     if (stops > 0) ++after;  // an item under way when the lanes were stopped: one per other lane at most
                     return true;
                   },
                   [&] { ++stops; }),
               std::runtime_error);
  EXPECT_EQ(stops.load(), 1);
  EXPECT_LE(after.load(), 2) << "the other lanes end after their current item";
  EXPECT_EQ(run_lanes(0, 5, [](std::size_t, std::size_t) { return true; }), 0u) << "no lane: nothing handed out";
}

}  // namespace
}  // namespace kqual::pipeline
