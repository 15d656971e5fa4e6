#pragma once
// Lanes: several threads working through one list, each taking the next item in order. One
// implementation for the commands that check many candidates side by side: selftest (a worker
// session per lane on the one GPU) and screen (dispatch_lanes, screen_gpus.hpp: lanes over GPUs,
// retired when their GPU stops answering). The work of a lane is the caller's.
#include <cstddef>
#include <functional>

namespace kqual::pipeline {

// `lanes` threads, each taking the next of items 0..items-1 in order and running work(lane, item); work
// returns false to retire its lane (it takes no more). The first exception thrown stops every lane after its
// current item (on_stop, when given, is called once then: a builder waiting to hand a lane its next item is
// told to stop) and is thrown again here once every lane has ended. Returns how many items were handed out
// (the rest are left to the caller: every lane retired first).
std::size_t run_lanes(std::size_t lanes, std::size_t items, const std::function<bool(std::size_t lane, std::size_t item)>& work,
                      const std::function<void()>& on_stop = {});

}  // namespace kqual::pipeline
