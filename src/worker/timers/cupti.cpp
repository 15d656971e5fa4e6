// Timer "cupti": the GPU's own start of the plan's first kernel to the end of its last, from CUPTI
// activity records. Every launch is tagged with an id (CUPTI's external correlation), so the kernels
// of one sample are found among all of them whatever stream or library launched them; the CUDA-event
// interval of the same samples is kept beside (event_ms), and the noise target is judged on it.
#include <fmt/format.h>

#include "kqual/cuda/cupti.hpp"
#include "timers.hpp"

namespace kqual::worker::detail {
namespace {

class CuptiTimer final : public Timer {
 public:
  using Timer::Timer;

  void set_up() override {
    std::string why;
    harness_phase(p_.st, "starting CUPTI for the timer 'cupti'");
    activity_ = cuda::KernelActivity::start(&why);
    if (!activity_) throw_error(ErrorKind::cuda, "timer 'cupti' is not available: " + why);
  }

  double time(std::size_t k) override {
    return event_interval_ms([&] {
      last_id_ = ++next_id_;
      if (activity_) activity_->push(last_id_);
      enqueue(p_.st, p_.plans[k]);
      if (activity_) activity_->pop();
    });
  }

  void sample_kept() override { kept_ids_.push_back(last_id_); }

  // The kernels' own start and end (CUPTI) replace the event intervals; those are kept beside. The
  // records stop here: the untimed re-runs that follow are not tagged.
  void finish(std::vector<double>& samples, BenchReply& reply) override {
    if (!activity_) return;
    const auto spans = activity_->collect();
    reply.event_ms = samples;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      auto it = spans.find(kept_ids_[i]);
      if (it == spans.end())
        throw_error(ErrorKind::cuda, fmt::format("timer 'cupti': no kernel record for sample {} (a plan without kernels, or "
                                                 "CUPTI lost records)", i + 1));
      samples[i] = it->second.ms();
      reply.kernels_per_sample.push_back(it->second.kernels);
    }
    activity_.reset();
  }

 private:
  std::unique_ptr<cuda::KernelActivity> activity_;
  std::uint64_t next_id_ = 0, last_id_ = 0;
  std::vector<std::uint64_t> kept_ids_;  // the id of each kept sample's launch, in sample order
};

}  // namespace

TimerRegistration cupti_timer_registration() {
  return {TimerKind::cupti,
          "the GPU's own start of the plan's first kernel to the end of its last, from CUPTI activity records (any "
          "stream; the CUDA-event interval of the same samples is kept beside as event_ms)",
          &make_timer_of<CuptiTimer>};
}

}  // namespace kqual::worker::detail
