// The bench op's timers, each registered once: a new timer is its file in this folder and one line
// in registered_timers() (and its word in include/kqual/worker/timer.hpp).
#include <fmt/format.h>

#include <array>

#include "timers.hpp"

namespace kqual::worker {
namespace detail {
namespace {

const std::array<TimerRegistration, 3>& registered_timers() {
  static const std::array<TimerRegistration, 3> timers{
      events_timer_registration(),
      cupti_timer_registration(),
      graph_timer_registration(),
  };
  return timers;
}

const TimerRegistration& timer_registration_of(TimerKind kind) {
  for (const auto& r : registered_timers())
    if (r.kind == kind) return r;
  throw_error(ErrorKind::internal, fmt::format("timer '{}' has no registration (src/worker/timers/registry.cpp)", to_string(kind)));
}

}  // namespace

std::unique_ptr<Timer> make_timer(TimerKind kind, const TimedPlans& plans) { return timer_registration_of(kind).make(plans); }

}  // namespace detail

const char* what_a_sample_is(TimerKind kind) { return detail::timer_registration_of(kind).sample; }

}  // namespace kqual::worker
