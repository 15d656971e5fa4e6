#include "kqual/pipeline/lanes.hpp"

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kqual::pipeline {

std::size_t run_lanes(std::size_t lanes, std::size_t items, const std::function<bool(std::size_t lane, std::size_t item)>& work,
                      const std::function<void()>& on_stop) {
  std::mutex mu;          // next, stop, failure
  std::size_t next = 0;   // the next item to hand out
  bool stop = false;      // work threw: every lane ends after its current item
  std::exception_ptr failure;
  auto lane_loop = [&](std::size_t lane) {
    try {
      for (;;) {
        std::size_t item;
        {
          std::lock_guard<std::mutex> lk(mu);
          if (stop || next >= items) return;
          item = next++;
        }
        if (!work(lane, item)) return;
      }
    } catch (...) {
      bool first = false;
      {
        std::lock_guard<std::mutex> lk(mu);
        first = !failure;
        if (first) failure = std::current_exception();
        stop = true;
      }
      if (first && on_stop) on_stop();
    }
  };
  {
    std::vector<std::jthread> threads;
    for (std::size_t l = 0; l < lanes; ++l) threads.emplace_back(lane_loop, l);
  }  // joined
  if (failure) std::rethrow_exception(failure);
  return next;
}

}  // namespace kqual::pipeline
