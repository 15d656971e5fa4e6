#pragma once
// Internal to src/worker/: the timers of the bench op (BenchRequest::timer), one file each behind
// one interface, listed once in registry.cpp. bench_op.cpp owns everything around a timed launch
// (inputs, poison, the L2 flush, the hashes, the clock guard, the stopping rule); a timer owns the
// timed window itself and what it adds to the reply. Not a public header.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "../server_internal.hpp"
#include "kqual/worker/timer.hpp"

namespace kqual::worker::detail {

// What a timer times: the call's state and request, its buffer sets and their launch plans (set k:
// sets[k] and plans[k]), whether every launch's outputs are poisoned before it and hashed after it,
// and the bytes of one set's outputs.
struct TimedPlans {
  State& st;
  const BenchRequest& req;
  std::vector<std::vector<Guarded>>& sets;
  std::vector<Plan>& plans;
  bool checked = false;
  std::size_t output_bytes = 0;
};

class Timer {
 public:
  explicit Timer(const TimedPlans& plans) : p_(plans) {}
  virtual ~Timer() = default;
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Before the warm-up: what the timer needs running (kqual's own work; it names its phase, so a
  // failure here is kqual's, never the candidate's).
  virtual void set_up() {}
  // After the warm-up, given its launch times [ms] and a way to make one more checked launch
  // (named by its argument) when there were none: what a timed launch is from here on, recorded
  // into the reply.
  virtual void after_warmup(const std::vector<double>& /*warmup_ms*/,
                            const std::function<double(const std::string&)>& /*one_more_launch*/, BenchReply& /*reply*/) {}
  // The timed window of one launch of set k, and nothing else in it (inputs, poison, the flush and
  // the hashes are the caller's, outside it): [ms] per launch of the plan.
  virtual double time(std::size_t k) = 0;
  // The output copies written by launches 2..N of one timed window of set k (launch 1 writes the
  // set's own outputs): poisoned before the window and hashed after it like the set's own.
  virtual std::span<const std::vector<Guarded>> output_copies(std::size_t /*k*/) const { return {}; }
  // The clock guard kept the last timed sample.
  virtual void sample_kept() {}
  // After the sample loop, with the kept samples [ms]: what they become and what the timer adds to
  // the reply. Launches after this (the untimed re-runs) still go through time().
  virtual void finish(std::vector<double>& /*samples*/, BenchReply& /*reply*/) {}

 protected:
  // CUDA events on the worker's stream immediately before and after what `enqueue_window` enqueues:
  // [ms] between them, once the stop event has completed.
  template <class Enqueue>
  double event_interval_ms(Enqueue&& enqueue_window) {
    const CUstream s = p_.st.stream->get();
    start_.record(s);
    enqueue_window();
    stop_.record(s);
    stop_.synchronize();
    return double(cuda::Event::elapsed_ms(start_, stop_));
  }

  TimedPlans p_;
  cuda::Event start_, stop_;
};

// One timer's registration: its kind, what one sample is (the sentence the timing report states;
// worker::what_a_sample_is) and how to make one for a bench call.
struct TimerRegistration {
  TimerKind kind;
  const char* sample;
  std::unique_ptr<Timer> (*make)(const TimedPlans&);
};

// A registration's make for a timer class constructed from the timed plans.
template <class T>
std::unique_ptr<Timer> make_timer_of(const TimedPlans& plans) {
  return std::make_unique<T>(plans);
}

// One per timer file (events.cpp, cupti.cpp, graph.cpp), listed in registry.cpp.
TimerRegistration events_timer_registration();
TimerRegistration cupti_timer_registration();
TimerRegistration graph_timer_registration();

// The timer of `kind` for one bench call (registry.cpp); Error(internal) for a kind not registered.
std::unique_ptr<Timer> make_timer(TimerKind kind, const TimedPlans& plans);

}  // namespace kqual::worker::detail
