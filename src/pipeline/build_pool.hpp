// Builds items ahead of their consumers on a pool of threads: NVRTC compiles ahead of the GPU lanes
// (screen, selftest). build(k) runs for k = 0..count-1, in that order, on up to `threads` threads;
// take(k) waits for item k and hands its result over once. Destroying the pool (an exception in a
// lane unwinding past it included) stops the builders and joins them.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace kqual::pipeline {

template <class Slot>
class BuildPool {
 public:
  BuildPool(std::size_t count, int threads, std::function<Slot(std::size_t)> build)
      : slots_(count), done_(count, false), build_(std::move(build)) {
    const std::size_t n = std::min<std::size_t>(std::size_t(std::max(threads, 1)), std::max<std::size_t>(count, 1));
    for (std::size_t t = 0; t < n; ++t) threads_.emplace_back([this] { run(); });
  }
  BuildPool(const BuildPool&) = delete;
  BuildPool& operator=(const BuildPool&) = delete;
  ~BuildPool() {
    stop();
    threads_.clear();  // joins
  }

  // Item k's result, waiting until it is built; nothing when the pool stopped before building it.
  std::optional<Slot> take(std::size_t k) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return bool(done_[k]) || stopped_.load(); });
    if (!done_[k]) return std::nullopt;
    return std::move(slots_[k]);
  }

  // No builder starts another item (those under way finish).
  void stop() {
    stopped_.store(true);
    cv_.notify_all();
  }

 private:
  void run() {
    for (;;) {
      const std::size_t k = next_.fetch_add(1);
      if (k >= slots_.size() || stopped_.load()) return;
      Slot s = build_(k);
      {
        std::lock_guard<std::mutex> lk(mu_);
        slots_[k] = std::move(s);
        done_[k] = true;
      }
      cv_.notify_all();
    }
  }

  std::vector<Slot> slots_;
  std::vector<char> done_;
  std::function<Slot(std::size_t)> build_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> stopped_{false};
  std::vector<std::jthread> threads_;  // last: joined before the state above goes
};

}  // namespace kqual::pipeline
