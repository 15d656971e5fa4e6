// A timing report as JSON (bench/timing.hpp).
#include "kqual/bench/timing.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kqual::bench {

json TimingReport::to_json() const {
  json shapes_j = json::array();
  // "Faster than the memory system allows": the contract's minimum bytes over the median time above
  // the measured device copy bandwidth (x 1.10 for noise), at shapes at least half the size of the
  // one the copy was measured at (smaller working sets may be served from L2). A candidate there
  // skips work or reads inputs it was not given; the flag says so next to the series.
  double ceiling = 0, ceiling_bytes = 0;
  for (const auto& sh : shapes)
    if (sh.copy_bytes_per_s > ceiling) ceiling = sh.copy_bytes_per_s, ceiling_bytes = sh.min_bytes;
  for (const auto& sh : shapes) {
    json ser = json::array();
    for (const auto& s : sh.series) {
      json j{{"label", s.label}, {"role", s.role}, {"verified", s.verified}};
      if (!s.error.empty()) j["error"] = s.error;
      if (!s.samples_ms.empty()) {
        j["summary_ms"] = stats::to_json(s.summary);
        j["bytes_per_s"] = s.bytes_per_s;
        j["flops_per_s"] = s.flops_per_s;
        if (ceiling > 0 && sh.min_bytes >= 0.5 * ceiling_bytes && s.bytes_per_s > 1.10 * ceiling)
          j["beyond_memory_ceiling"] = fmt::format(
              "{:.0f} GB/s of the contract's minimum bytes is {:.2f}x the measured copy bandwidth ({:.0f} GB/s): faster than the "
              "memory system allows", s.bytes_per_s / 1e9, s.bytes_per_s / ceiling, ceiling / 1e9);
        j["samples_ms"] = s.samples_ms;
        j["warmup_ms"] = s.warmup_ms;
      }
      if (!s.verify_detail.empty()) j["verify_detail"] = s.verify_detail;
      if (!s.verify_code.empty()) j["verify_code"] = s.verify_code;
      if (s.launches) {
        j["launches"] = s.launches;
        j["compared_with_reference"] = s.reference_compared;
        j["compared_with_untimed_rerun"] = s.rerun_compared;
      }
      if (!s.samples_ms.empty()) {
        j["timer"] = to_string(s.timer);
        if (!s.event_ms.empty()) {
          j["event_ms"] = s.event_ms;
          j["event_median_ms"] = stats::median(s.event_ms);
        }
        if (s.graph_launches) j["graph_launches"] = s.graph_launches;
        json clk{{"discarded_samples", s.discarded}, {"events", s.clock_events}, {"guard_exhausted", s.clock_guard_exhausted},
                 {"reference_sm_mhz", s.reference_sm_mhz}, {"max_temperature_c", s.max_temperature_c}};
        if (!s.sm_clock_mhz.empty()) {
          clk["sm_mhz"] = s.sm_clock_mhz;
          clk["mem_mhz"] = s.mem_clock_mhz;
          clk["sm_mhz_median"] = stats::median(s.sm_clock_mhz);
          clk["sm_mhz_min"] = *std::min_element(s.sm_clock_mhz.begin(), s.sm_clock_mhz.end());
        }
        if (!s.clocks_note.empty()) clk["note"] = s.clocks_note;
        j["clocks"] = clk;
      }
      ser.push_back(j);
    }
    // One comparison per baseline timed next to the candidate, in series order (as
    // time_against_baselines makes them), each named by its baseline.
    json cmp = json::array();
    std::size_t k = 0;
    for (std::size_t i = 1; i < sh.series.size() && k < sh.vs_baselines.size(); ++i) {
      if (sh.series[i].samples_ms.empty() || sh.series[0].samples_ms.empty()) continue;
      json c{{"baseline", sh.series[i].label}};
      c.update(stats::to_json(sh.vs_baselines[k++]));
      cmp.push_back(c);
    }
    json j{{"shape", sh.shape},
           {"dims", sh.dims},
           {"dtype", to_string(sh.dtype)},
           {"min_bytes", sh.min_bytes},
           {"flops", sh.flops},
           {"series", ser},
           {"fastest_baseline", sh.fastest_baseline},
           {"candidate_vs_baselines", cmp}};
    if (!sh.fastest_baseline.empty()) j["candidate_vs_fastest"] = stats::to_json(sh.vs_fastest);
    if (!sh.timed_inputs.empty()) j["timed_inputs"] = {{"kind", sh.timed_inputs}, {"detail", sh.timed_inputs_detail}};
    if (sh.copy_bytes_per_s > 0)
      j["device_copy"] = {{"bytes_per_s", sh.copy_bytes_per_s}, {"samples_ms", sh.copy_samples_ms},
                          {"note", "cuMemcpyDtoDAsync of one tensor's bytes; bandwidth counts bytes read + written"}};
    shapes_j.push_back(j);
  }
  json out{{"boundary", boundary}, {"l2_mode", l2_mode}, {"timer", to_string(timer)}, {"shapes", shapes_j}};
  if (!verification.is_null()) out["verification"] = verification;
  return out;
}

}  // namespace kqual::bench
