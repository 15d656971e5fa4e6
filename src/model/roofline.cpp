#include "kqual/model/roofline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"
#include "kqual/model/units.hpp"

namespace kqual::model {

namespace {
constexpr EnumNames<Precision, 3> kPrecisionNames{
    {{{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}, {Precision::fp64, "fp64"}}}};
}  // namespace

std::string_view to_string(Precision p) { return kPrecisionNames.name(p, "fp32"); }

Precision parse_precision(std::string_view flag, std::string_view text) {
  if (const auto p = kPrecisionNames.parse(text)) return *p;
  // The dtype spellings name the same ceilings.
  if (text == "f32") return Precision::fp32;
  if (text == "f64") return Precision::fp64;
  throw_error(ErrorKind::usage,
              fmt::format("{} '{}': unknown precision (use {})", flag, text, kPrecisionNames.choices()));
}

Ceilings ceilings_for(const DeviceSpec& d, Precision p) {
  Ceilings c;
  c.device = d.name + " (datasheet)";
  c.precision = std::string(to_string(p));
  c.bytes_per_s = d.mem_bytes_per_s;
  c.flops_per_s = p == Precision::fp32 ? d.fp32_flops_per_s
                  : p == Precision::bf16 ? d.bf16_flops_per_s
                                         : d.fp64_flops_per_s;
  c.source = d.source;
  return c;
}

RooflineResult roofline(const RooflineInput& in) {
  auto check = [](double v, const char* what) {
    if (!std::isfinite(v) || v < 0)
      throw_error(ErrorKind::usage, fmt::format("{} = {} must be a finite number >= 0", what, v));
  };
  check(in.flops, "flops");
  check(in.bytes, "bytes");
  if (in.flops == 0 && in.bytes == 0)
    throw_error(ErrorKind::usage, "flops and bytes are both 0: there is nothing to place on a roofline");
  if (!(in.ceilings.bytes_per_s > 0) || !(in.ceilings.flops_per_s > 0) || !std::isfinite(in.ceilings.bytes_per_s) ||
      !std::isfinite(in.ceilings.flops_per_s))
    throw_error(ErrorKind::usage, fmt::format("device ceilings must be > 0 (bandwidth {} B/s, rate {} FLOP/s)",
                                              in.ceilings.bytes_per_s, in.ceilings.flops_per_s));
  RooflineResult r;
  r.arithmetic_intensity = in.bytes > 0 ? in.flops / in.bytes : std::numeric_limits<double>::infinity();
  r.ridge_point = in.ceilings.flops_per_s / in.ceilings.bytes_per_s;
  r.memory_time_s = in.bytes / in.ceilings.bytes_per_s;
  r.compute_time_s = in.flops / in.ceilings.flops_per_s;
  // At the ridge both roofs give the same time; call it compute-bound only past the ridge.
  r.bound = r.arithmetic_intensity > r.ridge_point ? "compute" : "memory";
  r.floor_s = std::max(r.memory_time_s, r.compute_time_s);
  r.attainable_flops_per_s = std::isfinite(r.arithmetic_intensity)
                                 ? std::min(in.ceilings.flops_per_s, r.arithmetic_intensity * in.ceilings.bytes_per_s)
                                 : in.ceilings.flops_per_s;
  r.explanation = fmt::format(
      "Arithmetic intensity {:.4g} FLOP/B is {} the ridge point {:.4g} FLOP/B of {} ({}): the operation is {}-bound. "
      "No implementation can finish in less than {} ({} to move {} at {}; {} for {} at {}).",
      r.arithmetic_intensity, r.arithmetic_intensity > r.ridge_point ? "above" : "at or below", r.ridge_point,
      in.ceilings.device, in.ceilings.precision, r.bound, format_seconds(r.floor_s), format_seconds(r.memory_time_s),
      format_si(in.bytes, "B"), format_si(in.ceilings.bytes_per_s, "B/s"), format_seconds(r.compute_time_s),
      format_si(in.flops, "FLOP"), format_si(in.ceilings.flops_per_s, "FLOP/s"));
  if (in.measured_s) {
    const double t = *in.measured_s;
    if (!(t > 0) || !std::isfinite(t))
      throw_error(ErrorKind::usage, fmt::format("measured time {} s must be > 0", t));
    r.measured_s = t;
    r.fraction_of_floor = r.floor_s / t;
    r.achieved_bytes_per_s = in.bytes / t;
    r.achieved_flops_per_s = in.flops / t;
    r.explanation += fmt::format(
        " The measured {} reaches {} of that floor ({} achieved, {}).", format_seconds(t),
        format_percent(*r.fraction_of_floor), format_si(*r.achieved_bytes_per_s, "B/s"),
        format_si(*r.achieved_flops_per_s, "FLOP/s"));
    if (*r.fraction_of_floor > 1.0)
      r.explanation +=
          " That is faster than the floor: the byte count is too high (data reused from L2, inputs smaller than "
          "stated) or the time does not cover all the work; check both before trusting it.";
  } else {
    r.explanation += " Give a measured time to see how close a kernel comes.";
  }
  r.explanation +=
      " Datasheet ceilings are peaks; a plain device-to-device copy reaches about 88 % of the H200's datasheet "
      "bandwidth (docs/gpu-runs.md), so measured ceilings (--measure) are the fairer floor.";
  return r;
}

KQUAL_DEFINE_TO_JSON(DeviceSpec, key, name, arch, sms, mem_bytes_per_s, fp32_flops_per_s, bf16_flops_per_s, fp64_flops_per_s,
                     source, note)

KQUAL_DEFINE_TO_JSON(Ceilings, device, precision, bytes_per_s, flops_per_s, source)

json to_json(const RooflineResult& r) {
  json j;
  j["arithmetic_intensity"] = std::isfinite(r.arithmetic_intensity) ? json(r.arithmetic_intensity) : json(nullptr);
  j["ridge_point"] = r.ridge_point;
  j["bound"] = r.bound;
  j["memory_time_s"] = r.memory_time_s;
  j["compute_time_s"] = r.compute_time_s;
  j["floor_s"] = r.floor_s;
  j["attainable_flops_per_s"] = r.attainable_flops_per_s;
  if (r.measured_s) {
    j["measured_s"] = *r.measured_s;
    j["fraction_of_floor"] = *r.fraction_of_floor;
    j["achieved_bytes_per_s"] = *r.achieved_bytes_per_s;
    j["achieved_flops_per_s"] = *r.achieved_flops_per_s;
  }
  j["explanation"] = r.explanation;
  return j;
}

}  // namespace kqual::model
