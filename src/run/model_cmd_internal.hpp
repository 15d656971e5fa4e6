#pragma once
// Internal to src/run/: what model_cmd.cpp (`kqual model`) and model_explain_cmd.cpp (`kqual
// explain`) share: the JSON envelope, fall-through subcommands and the --slots / occupancy options.
// Not a public header.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>

#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/model/roofline.hpp"
#include "kqual/model/units.hpp"
#include "kqual/model/waves.hpp"
#include "kqual/run/cli.hpp"

namespace kqual::run::model_cli {

// "model roofline --list-devices" → schema "kqual.model-roofline-list-devices/1".
json envelope(const GlobalOptions& g, const std::string& command);

// The envelope with one "result" (--json of a command that computes one thing).
void print_result(const GlobalOptions& g, const std::string& command, json result);

// `kqual model waves --json` works as well as `kqual --json model waves`: unknown options fall
// through to the parent, where --json lives.
CLI::App* subcommand(CLI::App* parent, const std::string& name, const std::string& help);

// The occupancy arithmetic, one step a line.
void print_occupancy(const model::Occupancy& o);

// ---- slots: --slots directly, or SMs x blocks per SM from the occupancy arithmetic --------------
struct SlotOptions {
  std::int64_t slots = 0;
  std::string device;
  int sms = 0;
  std::string arch;
  int threads = 0, regs = 0;
  std::string smem;
  int blocks_per_sm = 0;

  // Which flags were given (a given 0 is an error to report, not a default).
  CLI::Option *o_slots = nullptr, *o_sms = nullptr, *o_threads = nullptr, *o_regs = nullptr, *o_bps = nullptr;

  void add(CLI::App* s) {
    o_slots = s->add_option("--slots", slots, "Execution slots (SMs x resident blocks per SM); overrides the occupancy model");
    s->add_option("--device", device, "Known GPU for SM count and arch (h100, h200, a100, l40s, b200)");
    o_sms = s->add_option("--sms", sms, "Number of SMs (overrides --device)");
    s->add_option("--arch", arch, "Per-SM limits: sm_80, sm_86, sm_89, sm_90, sm_100 (default: the device's, else sm_90)");
    o_threads = s->add_option("--threads", threads, "Threads per block (occupancy model; default 256)");
    o_regs = s->add_option("--regs", regs, "Registers per thread (occupancy model; default 32)");
    s->add_option("--smem", smem, "Shared memory per block in bytes, e.g. 49152 or 48Ki (occupancy model)");
    o_bps = s->add_option("--blocks-per-sm", blocks_per_sm, "Resident blocks per SM, when known (skips the occupancy model)");
  }
  bool given(const CLI::Option* o) const { return o && o->count() > 0; }
  bool occupancy_requested() const { return given(o_threads) || given(o_regs) || !smem.empty(); }
  bool slots_given() const { return given(o_slots) || given(o_sms) || !device.empty(); }

  struct Resolved {
    std::int64_t slots = 0;
    std::optional<model::Occupancy> occupancy;
    std::optional<model::SmLimits> limits;
    std::string how;
    const model::DeviceSpec* device = nullptr;

    // "input" (tiles, slots and how they were found) and, when the occupancy model ran, "occupancy".
    void add_to(json& j, std::int64_t tiles) const {
      j["input"] = {{"tiles", tiles}, {"slots", slots}, {"slots_from", how}};
      if (occupancy) j["occupancy"] = to_json(*occupancy);
    }
  };
  Resolved resolve(const char* default_device) const {
    Resolved r;
    if (!device.empty()) r.device = &model::find_device(device);
    if (given(o_slots) || slots != 0) {
      if (slots < 1) throw_error(ErrorKind::usage, fmt::format("--slots {}: must be >= 1", slots));
      r.slots = slots;
      r.how = "given with --slots";
      if (!r.device && default_device) r.device = &model::find_device(default_device);
      return r;
    }
    if (!r.device && default_device) r.device = &model::find_device(default_device);
    if (given(o_sms) && sms < 1) throw_error(ErrorKind::usage, fmt::format("--sms {}: must be >= 1", sms));
    const int n_sms = given(o_sms) ? sms : r.device ? r.device->sms : 0;
    if (n_sms <= 0)
      throw_error(ErrorKind::usage,
                  "give --slots, or --device/--sms (with --threads/--regs/--smem or --blocks-per-sm)");
    int bps = 1;
    if (given(o_bps)) {
      if (blocks_per_sm < 1) throw_error(ErrorKind::usage, fmt::format("--blocks-per-sm {}: must be >= 1", blocks_per_sm));
      bps = blocks_per_sm;
      r.how = fmt::format("{} SMs x {} blocks per SM (--blocks-per-sm)", n_sms, bps);
    } else if (occupancy_requested()) {
      r.limits = model::sm_limits(!arch.empty() ? arch : r.device ? r.device->arch : std::string("sm_90"));
      model::BlockResources b;
      b.threads = given(o_threads) ? threads : 256;
      b.registers_per_thread = given(o_regs) ? regs : 32;
      b.shared_bytes = smem.empty() ? 0 : std::int64_t(model::parse_quantity("--smem", smem));
      r.occupancy = model::occupancy(*r.limits, b);
      bps = r.occupancy->blocks_per_sm;
      r.how = fmt::format("{} SMs x {} blocks per SM (occupancy on {}, limited by {})", n_sms, bps, r.limits->arch,
                          r.occupancy->limiter);
    } else {
      r.how = fmt::format("{} SMs x 1 block per SM (give --threads/--regs/--smem for the occupancy model)", n_sms);
    }
    r.slots = std::int64_t(n_sms) * bps;
    return r;
  }
};

void add_explain_commands(CLI::App& app, GlobalOptions& g, int* exit_code);  // model_explain_cmd.cpp

}  // namespace kqual::run::model_cli
