// Timer "events": CUDA events around the launch plan, nothing else between them.
#include "timers.hpp"

namespace kqual::worker::detail {
namespace {

class EventsTimer final : public Timer {
 public:
  using Timer::Timer;
  double time(std::size_t k) override {
    return event_interval_ms([&] { enqueue(p_.st, p_.plans[k]); });
  }
};

}  // namespace

TimerRegistration events_timer_registration() {
  return {TimerKind::events,
          "CUDA events recorded on the worker's stream immediately before the first and after the last launch of the "
          "implementation's launch plan; nothing else is enqueued in between",
          &make_timer_of<EventsTimer>};
}

}  // namespace kqual::worker::detail
