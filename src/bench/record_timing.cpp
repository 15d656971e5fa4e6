// Timed samples from a PyTorch worker's activity record (record_judge.hpp, timing_from_record): each
// sample's GPU span, and the checks that it is the call's work: the events against the span, work
// between samples, the verified calls' kernels against the timed ones, copies from the host the
// recorder did not make.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kqual/bench/record_judge.hpp"

namespace kqual::bench {

namespace {

// The events may start before the call's first kernel and end after its last; they may not report
// less than the GPU ran, beyond the two clocks' resolution.
constexpr double kEventsShortFraction = 0.8;  // events below this share of the record's span disagree
constexpr double kEventsSlackMs = 0.002;      // [ms] and by more than this
// A timed call's kernels must run at least this share of the verified calls' kernel time (those run
// warm, after no flush, so an honest timed call, cold, takes as long or longer).
constexpr double kTimedWorkFraction = 0.5;

struct Window {
  std::uint32_t begin = 0, end = 0;
  bool found = false;
};

Window window_of(const ActivityRecord& r, const std::string& open, const std::string& close) {
  Window w;
  bool b = false, e = false;
  for (const auto& m : r.marks) {
    if (m.label == open) {
      w.begin = m.last_corr;
      b = true;
    } else if (m.label == close) {
      w.end = m.last_corr;
      e = true;
    }
  }
  w.found = b && e && w.end >= w.begin;
  return w;
}

}  // namespace

RecordTiming timing_from_record(const ActivityRecord& r, const std::vector<RecordModule>& modules, const std::vector<int>& ids,
                                const std::vector<double>& event_ms, bool judge, const std::set<std::uint32_t>* own_uploads) {
  RecordTiming t;
  if (!r.broken.empty() || !r.started) {
    t.code = "harness_tampered";
    t.detail = r.broken.empty() ? "the activity record did not start" : r.broken;
    return t;
  }
  std::vector<Window> windows;
  for (int id : ids) {
    const Window w = window_of(r, fmt::format("t{}", id), fmt::format("/t{}", id));
    if (!w.found) {
      t.code = "harness_tampered";
      t.detail = fmt::format("timed sample {}: its marks are not in the record", id);
      return t;
    }
    windows.push_back(w);
  }
  const Window verified[2] = {window_of(r, "v0", "vd0"), window_of(r, "v1", "vd1")};
  long harness_tid = 0;
  for (const auto& m : r.marks)
    if (!m.label.empty() && m.label[0] == 't') {
      harness_tid = m.tid;
      break;
    }
  std::vector<std::uint64_t> first(windows.size(), ~std::uint64_t(0)), last(windows.size(), 0);
  std::vector<int> kernels(windows.size(), 0);
  std::vector<std::uint64_t> kernel_ns(windows.size(), 0);
  int verified_kernels[2] = {0, 0};
  std::uint64_t verified_ns[2] = {0, 0};
  for (const auto& a : r.activities) {
    bool inside = false;
    for (std::size_t i = 0; i < windows.size(); ++i)
      if (a.corr > windows[i].begin && a.corr <= windows[i].end) {
        first[i] = std::min(first[i], a.start);
        last[i] = std::max(last[i], a.end);
        kernels[i] += a.kind == 'K';
        if (a.kind == 'K') kernel_ns[i] += a.end - a.start;
        inside = true;
      }
    for (int d = 0; d < 2; ++d)
      if (verified[d].found && a.corr > verified[d].begin && a.corr <= verified[d].end) {
        verified_kernels[d] += a.kind == 'K';
        if (a.kind == 'K') verified_ns[d] += a.end - a.start;
        inside = true;
      }
    const auto l = r.launches.find(a.corr);
    const bool among_samples = !windows.empty() && a.corr > windows.front().begin && a.corr <= windows.back().end;
    const bool among_or_after = !windows.empty() && a.corr > windows.front().begin;
    if (judge && !inside && among_samples && t.code.empty() && a.kind == 'K' && l != r.launches.end() &&
        l->second.tid == harness_tid && classify_origin(l->second, a.name, modules) == WorkOrigin::own) {
      t.code = "timed_output_wrong";
      t.detail = fmt::format("while timed, the submission's {} ran between two timed calls, outside both: its work was moved out of the "
                             "timing window (the worker's marks were moved)",
                             what_ran(a));
    }
    if (judge && own_uploads && !inside && among_or_after && t.code.empty() && a.kind == 'M' && a.copy_kind == kMemcpyHostToDevice &&
        !own_uploads->count(a.corr) && (l == r.launches.end() || l->second.tid == harness_tid)) {
      t.code = "harness_tampered";
      t.detail = fmt::format("while timed, {} from the host ran outside every timed call, and kqual's recorder did not make it: values "
                             "were put on the GPU between the calls (the worker was changed)",
                             what_ran(a));
    }
    if (judge && !inside && t.code.empty() && l != r.launches.end() && harness_tid != 0 && l->second.tid != harness_tid) {
      t.code = "late_result";
      t.detail = fmt::format("while timed, {} was enqueued by thread {} outside every timed call (the harness's thread is {}): work "
                             "left running past the timing window",
                             what_ran(a), l->second.tid, harness_tid);
    }
  }
  for (std::size_t i = 0; i < windows.size(); ++i) {
    if (last[i] == 0) {
      t.code = "timed_output_wrong";
      t.detail = fmt::format("timed sample {} caused no GPU work at all: its result was not computed while timed", ids[i]);
      return t;
    }
    t.ms.push_back(double(last[i] - first[i]) / 1e6);
  }
  if (!judge || !t.code.empty()) return t;
  for (std::size_t i = 0; i < windows.size() && i < event_ms.size(); ++i)
    if (event_ms[i] < kEventsShortFraction * t.ms[i] - kEventsSlackMs) {
      t.code = "timer_patched";
      t.detail = fmt::format("timed sample {}: the CUDA events report {:.4f} ms, the activity record shows the call's GPU work took "
                             "{:.4f} ms (the event timer was changed, or work ran outside the events)",
                             ids[i], event_ms[i], t.ms[i]);
      return t;
    }
  // Every timed call did the GPU work the verified calls did (as many kernels); in a block without them,
  // the work most of its calls did.
  int want = verified[0].found ? verified_kernels[0] : verified[1].found ? verified_kernels[1] : -1;
  if (want < 0 && !kernels.empty()) {
    std::map<int, int> votes;
    for (int k : kernels) ++votes[k];
    want = std::max_element(votes.begin(), votes.end(), [](const auto& x, const auto& y) { return x.second < y.second; })->first;
  }
  for (std::size_t i = 0; i < windows.size() && want >= 0; ++i)
    if (kernels[i] != want) {
      t.code = "timed_output_wrong";
      t.detail = fmt::format("timed sample {} ran {} kernel(s), {} {}: the timed calls did other work than the calls whose outputs "
                             "were checked",
                             ids[i], kernels[i], verified[0].found || verified[1].found ? "the verified calls" : "most timed calls", want);
      return t;
    }
  // And as much of it: the verified calls ran on values no timed call saw, so a result memoised or
  // skipped while timed is cheaper only there.
  if (verified[0].found && verified[1].found) {
    const std::uint64_t honest = std::min(verified_ns[0], verified_ns[1]);
    for (std::size_t i = 0; i < windows.size(); ++i)
      if (double(kernel_ns[i]) < kTimedWorkFraction * double(honest)) {
        t.code = "timed_output_wrong";
        t.detail = fmt::format("timed sample {} ran {:.1f} us of kernels, the verified calls on values no timed call saw {:.1f} us: "
                               "the timed calls did less work than computing the result takes",
                               ids[i], double(kernel_ns[i]) / 1e3, double(honest) / 1e3);
        return t;
      }
  }
  return t;
}

}  // namespace kqual::bench
