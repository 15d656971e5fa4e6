// Timer "graph": the launch plan captured N times into one CUDA graph per buffer set, replayed
// between CUDA events; a sample is the interval / N (tiny kernels: no host launch gaps; warm L2
// only, BenchRequest::flush is false). N comes from the warm-up (about 1 ms per replay) or from
// BenchRequest::graph_launches. Checked: launch 1 of a replay writes the set's own outputs and
// launches 2..N each write their own poisoned output copy, every copy hashed after the replay, so a
// kernel that does its work only while its output holds the poison does it in every launch or is
// caught. Until the graphs exist (the warm-up), a launch is the plan as the events timer times it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kqual/stats/summary.hpp"
#include "timers.hpp"

namespace kqual::worker::detail {
namespace {

// The most bytes of output copies a replay may hold (one copy per launch).
constexpr std::size_t kGraphReplayCopyBytes = std::size_t(2) << 30;

class GraphTimer final : public Timer {
 public:
  using Timer::Timer;

  void after_warmup(const std::vector<double>& warmup_ms, const std::function<double(const std::string&)>& one_more_launch,
                    BenchReply& reply) override {
    per_replay_ = launches_per_replay(warmup_ms, one_more_launch, reply);
    std::vector<Buffer> out_buffers;
    for (const auto& b : p_.req.buffers)
      if (b.kind == BufferKind::output) out_buffers.push_back(b);
    for (std::size_t k = 0; k < p_.plans.size(); ++k) capture_set(k, out_buffers);
    reply.graph_launches = per_replay_;
  }

  double time(std::size_t k) override {
    if (graphs_.empty()) return event_interval_ms([&] { enqueue(p_.st, p_.plans[k]); });
    const CUstream s = p_.st.stream->get();
    return event_interval_ms([&] { graphs_[k].launch(s); }) / per_replay_;
  }

  std::span<const std::vector<Guarded>> output_copies(std::size_t k) const override {
    if (k >= copies_.size()) return {};
    return copies_[k];
  }

 private:
  // Enough launches per replay for about 1 ms (a launch's time from the warm-up, or one more run),
  // as many as the output copies allow.
  int launches_per_replay(const std::vector<double>& warmup_ms, const std::function<double(const std::string&)>& one_more_launch,
                          BenchReply& reply) const {
    const double t = warmup_ms.empty() ? one_more_launch("graph sizing launch") : stats::median(warmup_ms);
    int n = p_.req.graph_launches > 0 ? p_.req.graph_launches : int(std::clamp(std::ceil(1.0 / std::max(t, 1e-4)), 1.0, 10000.0));
    if (p_.checked && p_.output_bytes) {
      const std::size_t fit = std::max<std::size_t>(1, kGraphReplayCopyBytes / p_.output_bytes);
      if (std::size_t(n) > fit) {
        reply.graph_note = fmt::format("{} launches per replay asked; {} fit in {} GiB of output copies (one per launch)", n, fit,
                                       kGraphReplayCopyBytes >> 30);
        n = int(fit);
      }
    }
    return n;
  }

  // Set k's replay: its output copies (checked), the plans bound to them, and the graph.
  void capture_set(std::size_t k, const std::vector<Buffer>& out_buffers) {
    copies_.emplace_back();
    bound_.emplace_back();
    std::vector<Plan>& bound = bound_.back();  // launch l of a replay bound to output copy l
    for (int l = 1; l < per_replay_ && p_.checked; ++l) {
      copies_[k].push_back(allocate(out_buffers, p_.req.guard_bytes));
      prepare(p_.st, copies_[k].back(), 0xFF);
      std::map<std::string, CUdeviceptr> views;
      for (const auto& g : copies_[k].back()) views[g.name] = g.view();
      bound.push_back(make_plan(p_.st, p_.req.module, p_.req.launches, p_.sets[k], &views));
    }
    graphs_.push_back(cuda::GraphExec::capture(p_.st.stream->get(), [&] {
      enqueue(p_.st, p_.plans[k]);
      for (int l = 1; l < per_replay_; ++l) enqueue(p_.st, p_.checked ? bound[std::size_t(l - 1)] : p_.plans[k]);
    }));
  }

  int per_replay_ = 1;
  std::vector<cuda::GraphExec> graphs_;                // per set
  // Per set: the plans bound to the output copies, kept for as long as the graph that holds their
  // launches (a library launch's workspace belongs to its plan), and the copies themselves.
  std::vector<std::vector<Plan>> bound_;
  std::vector<std::vector<std::vector<Guarded>>> copies_;  // [set][launch - 1]
};

}  // namespace

TimerRegistration graph_timer_registration() {
  return {TimerKind::graph,
          "CUDA events around one replay of a CUDA graph holding the launch plan N times (N in graph_launches), divided "
          "by N: no host launch gaps, warm L2",
          &make_timer_of<GraphTimer>};
}

}  // namespace kqual::worker::detail
