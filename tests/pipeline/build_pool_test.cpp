// The build pool screen and selftest compile ahead of their GPU lanes with (src/pipeline/build_pool.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "../../src/pipeline/build_pool.hpp"

namespace kqual::pipeline {
namespace {

TEST(BuildPool, EveryItemIsBuiltOnceAndTakenByIndexInAnyOrder) {
  std::atomic<int> calls{0};
  std::mutex mu;
  std::set<std::thread::id> builders;
  BuildPool<std::string> pool(40, 3, [&](std::size_t k) {
    ++calls;
    {
      std::lock_guard<std::mutex> lk(mu);
      builders.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return "item " + std::to_string(k);
  });
  for (std::size_t k = 40; k-- > 0;) {  // last first: take waits for it
    auto v = pool.take(k);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(*v, "item " + std::to_string(k));
  }
  EXPECT_EQ(calls.load(), 40);
  EXPECT_LE(builders.size(), 3u);
  EXPECT_FALSE(builders.count(std::this_thread::get_id()));  // never on the taker's thread
}

TEST(BuildPool, AStoppedPoolHandsOverWhatWasBuiltAndNothingElse) {
  std::atomic<bool> release{false};
  BuildPool<int> pool(10, 1, [&](std::size_t k) {
    while (k == 1 && !release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return int(k) * 10;
  });
  auto first = pool.take(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, 0);
  pool.stop();
  release.store(true);
  // Item 1 was under way when the pool stopped: it finishes; items after it are never built.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(pool.take(9).has_value());
}

TEST(BuildPool, NoItemsAndMoreThreadsThanItemsAreFine) {
  { BuildPool<int> empty(0, 4, [](std::size_t) { return 1; }); }
  BuildPool<int> few(2, 16, [](std::size_t k) { return int(k) + 1; });
  EXPECT_EQ(*few.take(1), 2);
  EXPECT_EQ(*few.take(0), 1);
}

}  // namespace
}  // namespace kqual::pipeline
