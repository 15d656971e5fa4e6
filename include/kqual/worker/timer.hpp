#pragma once
// What one timed sample of the worker's bench op is (BenchRequest::timer; docs/statistics.md, "What a
// timed sample is"). Each timer is one file in src/worker/timers/ behind one interface and one line
// of that folder's registry.cpp; this header is what the coordinator sees of them: the kind, its
// word (the same on the wire, on the command line and in results.json) and what a sample is.
#include <optional>
#include <string_view>

#include "kqual/core/enum_names.hpp"

namespace kqual::worker {

//   events: CUDA events around the launch plan (the default);
//   cupti:  the GPU's own start of the plan's first kernel to the end of its last (CUPTI activity
//           records); the event interval of the same samples is kept beside;
//   graph:  the plan captured N times into one CUDA graph, replayed between events, time / N
//           (tiny kernels: no launch gaps; warm L2 only).
enum class TimerKind { events, cupti, graph };

inline constexpr EnumNames<TimerKind, 3> kTimerKindNames{{{
    {TimerKind::events, "events"}, {TimerKind::cupti, "cupti"}, {TimerKind::graph, "graph"}}}};

inline const char* to_string(TimerKind k) { return kTimerKindNames.name(k); }
inline std::optional<TimerKind> parse_timer_kind(std::string_view word) { return kTimerKindNames.parse(word); }

// What one sample is under the timer: the sentence the timing report's boundary states (from the
// timer's registration, so the statement and the measurement are written side by side).
const char* what_a_sample_is(TimerKind k);

}  // namespace kqual::worker
