// `kqual model roofline|waves|amdahl|breakeven` (`explain` in model_explain_cmd.cpp, `service` in
// model_service_cmd.cpp): thin commands over kqual::model (CPU only; `roofline --measure` asks a GPU
// worker through kqual::harness). Text by default, one JSON document with --json.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kqual/report/provenance.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/lookup.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/bench/ceilings.hpp"
#include "kqual/model/amdahl.hpp"
#include "kqual/model/roofline.hpp"
#include "kqual/model/units.hpp"
#include "kqual/model/waves.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/version.hpp"
#include "command_util.hpp"
#include "model_cmd_internal.hpp"

namespace kqual::run {

namespace model_cli {

json envelope(const GlobalOptions& g, const std::string& command) {
  std::string name;
  for (char c : command)
    if (c != '-' || (!name.empty() && name.back() != '-')) name += c == ' ' ? '-' : c;
  json j = schema_header(name);
  j["command"] = command;
  j["provenance"] = report::provenance(g.command_line, json());
  return j;
}

void print_result(const GlobalOptions& g, const std::string& command, json result) {
  json j = envelope(g, command);
  j["result"] = std::move(result);
  print_json(j);
}

// `kqual model waves --json` works as well as `kqual --json model waves`: unknown options fall
// through to the parent, where --json lives.
CLI::App* subcommand(CLI::App* parent, const std::string& name, const std::string& help) {
  CLI::App* s = parent->add_subcommand(name, help);
  s->fallthrough();
  return s;
}

void print_occupancy(const model::Occupancy& o) {
  fmt::print("Occupancy arithmetic:\n");
  for (const auto& s : o.steps) fmt::print("  {}\n", s);
}

}  // namespace model_cli

namespace {

using namespace kqual::model;
using namespace kqual::run::model_cli;

// ---- model roofline ----------------------------------------------------------------------------
void add_roofline(CLI::App* model, GlobalOptions& g, int* exit_code) {
  struct Opts {
    std::string flops, bytes, contract, dtype = "f32", device, precision, bandwidth, peak, measured;
    std::vector<std::string> dims;
    bool measure = false, list = false;
  };
  auto o = std::make_shared<Opts>();
  auto* s = subcommand(model, "roofline",
                       "Arithmetic intensity, ridge point, bound and time floor of an operation on a device");
  s->add_option("--flops", o->flops, "Total FLOPs, e.g. 5.4e8 or 537M");
  s->add_option("--bytes", o->bytes, "Minimum DRAM bytes moved, e.g. 3.2e9 or 3.2GB");
  s->add_option("--contract", o->contract, "Take FLOPs and bytes from a built-in contract (with --dim)");
  s->add_option("--dim", o->dims, "Contract dimension NAME=VALUE, e.g. n=268435456 (repeatable)");
  s->add_option("--dtype", o->dtype, "Contract dtype (default f32)");
  s->add_option("--device", o->device, "Datasheet ceilings: h100, h200 (default), a100, l40s, b200");
  s->add_option("--precision", o->precision, "Arithmetic ceiling: fp32 (default), bf16 (tensor core), fp64");
  s->add_option("--bandwidth", o->bandwidth, "Override the bandwidth ceiling, e.g. 4.2TB/s");
  s->add_option("--peak-flops", o->peak, "Override the arithmetic ceiling, e.g. 60TFLOP/s");
  s->add_option("--measured", o->measured, "A measured kernel time to place against the floor, e.g. 0.832ms");
  s->add_flag("--measure", o->measure, "Measure copy bandwidth and FMA rate on the live GPU (through a worker)");
  s->add_flag("--list-devices", o->list, "Print the datasheet table with sources and exit");
  s->callback([o, &g, exit_code] {
    if (o->list) {
      json j = envelope(g, "model roofline --list-devices");
      j["devices"] = json::array();
      for (const auto& d : known_devices()) j["devices"].push_back(to_json(d));
      if (g.json) return print_json(j);
      fmt::print("{:<6} {:<28} {:<7} {:>4} {:>10} {:>10} {:>11} {:>10}\n", "key", "name", "arch", "SMs", "DRAM TB/s",
                 "FP32 TF/s", "BF16 TF/s*", "FP64 TF/s");
      for (const auto& d : known_devices())
        fmt::print("{:<6} {:<28} {:<7} {:>4} {:>10.3g} {:>10.3g} {:>11.4g} {:>10.3g}\n", d.key, d.name, d.arch, d.sms,
                   d.mem_bytes_per_s / 1e12, d.fp32_flops_per_s / 1e12, d.bf16_flops_per_s / 1e12,
                   d.fp64_flops_per_s / 1e12);
      fmt::print("* dense tensor core (datasheet sparse figure / 2).\nSources:\n");
      for (const auto& d : known_devices()) fmt::print("  {}: {}. {}\n", d.key, d.source, d.note);
      return;
    }
    // The work: explicit counts or a contract's own counts.
    RooflineInput in;
    json input;
    if (!o->contract.empty()) {
      if (!o->flops.empty() || !o->bytes.empty())
        throw_error(ErrorKind::usage, "--contract takes its FLOPs and bytes from the contract: drop --flops/--bytes");
      const auto& c = contract::ContractLookup().resolve(o->contract, std::filesystem::current_path());
      const auto dt = parse_dtype(o->dtype);
      if (!dt) throw_error(ErrorKind::usage, fmt::format("--dtype '{}': unknown dtype", o->dtype));
      std::map<std::string, std::int64_t> dims;
      for (const auto& d : o->dims) {
        const auto eq = d.find('=');
        if (eq == std::string::npos || eq == 0)
          throw_error(ErrorKind::usage, fmt::format("--dim '{}': expected NAME=VALUE, e.g. n=1048576", d));
        dims[d.substr(0, eq)] = std::int64_t(parse_quantity("--dim", d.substr(eq + 1)));
      }
      for (const auto& name : c.dims())
        if (!dims.count(name))
          throw_error(ErrorKind::usage, fmt::format("--contract {} needs --dim {}=VALUE", o->contract, name));
      in.flops = c.flops(dims, *dt);
      in.bytes = c.min_bytes(dims, *dt);
      input = {{"contract", o->contract}, {"dtype", o->dtype}, {"dims", dims}};
      if (o->precision.empty()) o->precision = *dt == DType::f64 ? "fp64" : "fp32";
    } else {
      if (o->flops.empty() || o->bytes.empty())
        throw_error(ErrorKind::usage, "give --flops and --bytes, or --contract NAME --dim n=VALUE");
      in.flops = parse_quantity("--flops", o->flops);
      in.bytes = parse_quantity("--bytes", o->bytes);
    }
    input["flops"] = in.flops;
    input["bytes"] = in.bytes;
    const Precision prec = parse_precision("--precision", o->precision.empty() ? "fp32" : o->precision);
    if (!o->measured.empty()) in.measured_s = parse_duration("--measured", o->measured);

    json j = envelope(g, "model roofline");
    std::optional<std::string> incomplete;
    if (o->measure) {
      try {
        const auto m = bench::measure_device_ceilings(60.0);
        in.ceilings = {m.device + " (measured)", "fp32", m.copy_bytes_per_s, m.fp32_fma_flops_per_s,
                       "measured on " + m.device + " (" + m.arch + "): device-to-device copy and an FMA-bound kernel"};
        if (prec != Precision::fp32) in.ceilings.precision = "fp32 (measured; --precision ignored)";
        j["measurement"] = {{"device", m.device}, {"arch", m.arch}, {"sms", m.sms},
                            {"copy_bytes_per_s", m.copy_bytes_per_s}, {"fp32_fma_flops_per_s", m.fp32_fma_flops_per_s},
                            {"raw", m.raw}};
      } catch (const Error& e) {
        incomplete = fmt::format("--measure could not measure the device ({}): {}", to_string(e.kind()), e.what());
      }
    }
    if (!o->measure || (incomplete && !o->device.empty()))
      in.ceilings = ceilings_for(find_device(o->device.empty() ? "h200" : o->device), prec);
    if (!o->bandwidth.empty()) in.ceilings.bytes_per_s = parse_quantity("--bandwidth", o->bandwidth);
    if (!o->peak.empty()) in.ceilings.flops_per_s = parse_quantity("--peak-flops", o->peak);
    if (!o->bandwidth.empty() || !o->peak.empty()) in.ceilings.source += " (overridden on the command line)";

    if (incomplete && (o->device.empty() && (o->bandwidth.empty() || o->peak.empty()))) {
      // Nothing to compute with: say why and stop (kExitIncomplete, like every GPU phase without a GPU).
      j["status"] = "incomplete";
      j["reason"] = *incomplete;
      j["input"] = input;
      if (g.json) print_json(j);
      std::fflush(stdout);
      fmt::print(stderr, "kqual model roofline: {}\n  (add --device KEY to use datasheet ceilings instead)\n", *incomplete);
      *exit_code = kExitIncomplete;
      return;
    }
    const RooflineResult r = roofline(in);
    j["status"] = incomplete ? "incomplete" : "ok";
    if (incomplete) j["reason"] = *incomplete;
    j["input"] = input;
    j["ceilings"] = to_json(in.ceilings);
    j["result"] = to_json(r);
    if (g.json) {
      print_json(j);
    } else {
      fmt::print("Ceilings: {} [{}]: {}, {}\n  source: {}\n", in.ceilings.device, in.ceilings.precision,
                 format_si(in.ceilings.bytes_per_s, "B/s"), format_si(in.ceilings.flops_per_s, "FLOP/s"),
                 in.ceilings.source);
      fmt::print("Work: {}, {}\n", format_si(in.flops, "FLOP"), format_si(in.bytes, "B"));
      fmt::print("Arithmetic intensity: {:.4g} FLOP/B   ridge point: {:.4g} FLOP/B   bound: {}\n",
                 r.arithmetic_intensity, r.ridge_point, r.bound);
      fmt::print("Time floor: {} (memory {}, compute {})\n", format_seconds(r.floor_s),
                 format_seconds(r.memory_time_s), format_seconds(r.compute_time_s));
      if (r.measured_s)
        fmt::print("Measured: {} = {} of the floor ({}, {})\n", format_seconds(*r.measured_s),
                   format_percent(*r.fraction_of_floor), format_si(*r.achieved_bytes_per_s, "B/s"),
                   format_si(*r.achieved_flops_per_s, "FLOP/s"));
      fmt::print("\n{}\n", r.explanation);
    }
    if (incomplete) {
      std::fflush(stdout);
      fmt::print(stderr, "kqual model roofline: {}; the result above uses datasheet ceilings\n", *incomplete);
      *exit_code = kExitIncomplete;
    }
  });
}

// ---- model waves ---------------------------------------------------------------------------------
void add_waves(CLI::App* model, GlobalOptions& g, int*) {
  struct Opts {
    std::int64_t tiles = -1;
    int split = 0;
    std::string gemm, tile = "128x128x64", precision = "bf16", tile_time, bandwidth;
    SlotOptions slots;
  };
  auto o = std::make_shared<Opts>();
  auto* s = subcommand(model, "waves", "Waves, tail utilisation and efficiency of a grid; split-K alternatives");
  CLI::Option* tiles_opt = s->add_option("--tiles", o->tiles, "Tiles (blocks) in the grid");
  o->slots.add(s);
  s->add_option("--gemm", o->gemm, "GEMM M x N x K, e.g. 1536x1024x8192 (tiles, K iterations and reduction traffic)");
  s->add_option("--tile", o->tile, "Output tile M x N x K-step for --gemm (default 128x128x64)");
  s->add_option("--split-k", o->split, "Show split-K alternatives 1..N (default 4 with --gemm, off otherwise)");
  s->add_option("--precision", o->precision, "Rate that prices a GEMM tile with --gemm: bf16 (default), fp32, fp64");
  s->add_option("--tile-time", o->tile_time, "Time of one unsplit tile on one slot, e.g. 20us (prices the reduction)");
  s->add_option("--bandwidth", o->bandwidth, "Bandwidth for the reduction traffic, e.g. 4.8TB/s (default: device)");
  s->callback([o, &g, tiles_opt] {
    const bool tiles_given = tiles_opt->count() > 0;
    std::int64_t k_iters = 0;
    double partial_bytes = 0;
    std::int64_t gm = 0, gn = 0, gk = 0, tm = 0, tn = 0, tk = 0;
    const bool gemm = !o->gemm.empty();
    if (gemm) {
      const auto d = parse_dims("--gemm", o->gemm, 3);
      const auto t = parse_dims("--tile", o->tile, 3);
      gm = d[0], gn = d[1], gk = d[2], tm = t[0], tn = t[1], tk = t[2];
      const std::int64_t tiles = ((gm + tm - 1) / tm) * ((gn + tn - 1) / tn);
      if (tiles_given && o->tiles != tiles)
        throw_error(ErrorKind::usage, fmt::format("--tiles {} contradicts --gemm {} with --tile {} ({} tiles)", o->tiles,
                                                  o->gemm, o->tile, tiles));
      o->tiles = tiles;
      k_iters = (gk + tk - 1) / tk;
      partial_bytes = double(tm) * double(tn) * 4.0;  // fp32 partial accumulators
      if (o->split == 0) o->split = 4;
    }
    if (!tiles_given && !gemm) throw_error(ErrorKind::usage, "give --tiles N (or --gemm MxNxK)");
    if (o->split < 0) throw_error(ErrorKind::usage, fmt::format("--split-k {}: must be >= 1", o->split));
    const auto sl = o->slots.resolve(gemm ? "h200" : nullptr);
    const WaveResult w = waves(o->tiles, sl.slots);

    std::optional<SplitKResult> sk;
    if (o->split > 0 && o->tiles > 0) {
      SplitKInput in;
      in.output_tiles = o->tiles;
      in.slots = sl.slots;
      in.max_split = o->split;
      in.k_iterations = k_iters;
      in.partial_tile_bytes = partial_bytes;
      if (!o->tile_time.empty()) in.tile_time_s = parse_duration("--tile-time", o->tile_time);
      if (!o->bandwidth.empty()) in.bytes_per_s = parse_quantity("--bandwidth", o->bandwidth);
      if (gemm && sl.device) {
        // A slot's share of the device's peak rate prices one tile (2*tm*tn*K FLOP); the device's
        // bandwidth prices the reduction. Both optimistic, which is fine for a ranking.
        const Ceilings c = ceilings_for(*sl.device, parse_precision("--precision", o->precision));
        if (in.tile_time_s == 0) in.tile_time_s = 2.0 * double(tm) * double(tn) * double(gk) / (c.flops_per_s / double(sl.slots));
        if (in.bytes_per_s == 0) in.bytes_per_s = c.bytes_per_s;
      }
      sk = split_k(in);
    }

    if (g.json) {
      json j = envelope(g, "model waves");
      sl.add_to(j, o->tiles);
      if (gemm) j["input"]["gemm"] = {{"m", gm}, {"n", gn}, {"k", gk}, {"tile", {tm, tn, tk}}, {"k_iterations", k_iters}};
      j["result"] = to_json(w);
      if (sk) j["split_k"] = to_json(*sk);
      return print_json(j);
    }
    if (sl.occupancy) print_occupancy(*sl.occupancy);
    fmt::print("Slots: {} ({})\n", sl.slots, sl.how);
    if (gemm) fmt::print("GEMM {}x{}x{} with {}x{}x{} tiles: {} output tiles, {} K iterations each\n", gm, gn, gk, tm, tn,
                         tk, o->tiles, k_iters);
    fmt::print("Tiles {}  slots {}  waves {}  tail {} tiles ({})  efficiency {}\n\n{}\n", w.tiles, w.slots, w.waves,
               w.tail_tiles, format_percent(w.tail_utilisation), format_percent(w.efficiency), w.explanation);
    if (sk) {
      fmt::print("\nSplit-K alternatives (times in unsplit-tile times{}):\n", sk->priced ? ", reduction priced" : "");
      fmt::print("  {:>5} {:>7} {:>6} {:>10} {:>9} {:>12} {:>9} {:>8} {:>8}\n", "split", "tiles", "waves", "efficiency",
                 "compute", "extra bytes", "reduce", "total", "speedup");
      for (const auto& opt : sk->options)
        fmt::print("  {:>5} {:>7} {:>6} {:>10} {:>9.3f} {:>12} {:>9.3f} {:>8.3f} {:>7.2f}x{}\n", opt.split,
                   opt.waves.tiles, opt.waves.waves, format_percent(opt.waves.efficiency), opt.compute_time,
                   opt.extra_bytes > 0 ? format_si(opt.extra_bytes, "B") : std::string(partial_bytes > 0 || opt.split == 1 ? "0" : "?"),
                   opt.reduction_time, opt.total_time, opt.speedup, opt.split == sk->recommended_split ? "  <-" : "");
      fmt::print("Recommendation: split {}. {}\n", sk->recommended_split, sk->reason);
    }
  });
}

// ---- model amdahl / breakeven --------------------------------------------------------------------
void add_amdahl(CLI::App* model, GlobalOptions& g, int*) {
  struct Opts {
    std::string share, speedups;
  };
  auto o = std::make_shared<Opts>();
  auto* s = subcommand(model, "amdahl", "End-to-end ceiling 1/(1-share) and the speedup at given kernel speedups");
  s->add_option("--share", o->share, "The kernel's share of end-to-end time: 0.3 or 30%")->required();
  s->add_option("--kernel-speedup", o->speedups, "Kernel speedup(s), e.g. 2 or 1.1,1.5,2,4");
  s->callback([o, &g] {
    const double share = parse_fraction("--share", o->share);
    if (!(share >= 0 && share <= 1))
      throw_error(ErrorKind::usage, fmt::format("--share '{}': must be between 0 and 1 (0 % to 100 %)", o->share));
    std::vector<double> k;
    if (!o->speedups.empty()) k = parse_real_list("--kernel-speedup", o->speedups);
    for (double x : k)
      if (!(x > 0) || !std::isfinite(x))
        throw_error(ErrorKind::usage, fmt::format("--kernel-speedup '{}': every speedup must be > 0", o->speedups));
    const AmdahlReport r = amdahl_report(share, k);
    if (g.json) return print_result(g, "model amdahl", to_json(r));
    fmt::print("Share {}  ceiling {}\n", format_percent(share),
               std::isfinite(r.ceiling) ? fmt::format("{:.4g}x", r.ceiling) : std::string("unbounded"));
    for (const auto& p : r.points)
      fmt::print("  kernel {:.3g}x -> end to end {:.4g}x ({} of time saved)\n", p.kernel_speedup,
                 p.end_to_end_speedup, format_percent(p.time_saved_fraction));
    fmt::print("\n{}\n", r.explanation);
  });
}

void add_breakeven(CLI::App* model, GlobalOptions& g, int*) {
  struct Opts {
    std::string cold, warm, calls;
  };
  auto o = std::make_shared<Opts>();
  auto* s = subcommand(model, "breakeven", "Calls per process after which a warm gain repays an extra cold-start cost");
  s->add_option("--extra-cold", o->cold, "Extra cold-start cost per process, e.g. 70ms")->required();
  s->add_option("--warm-saving", o->warm, "Warm time saved per call, e.g. 12us (negative: the change is slower)")
      ->required();
  s->add_option("--calls-per-process", o->calls, "Calls a process serves (e.g. 1e6), for the net effect over its lifetime");
  s->callback([o, &g] {
    const double cold = parse_duration("--extra-cold", o->cold), warm = parse_duration("--warm-saving", o->warm);
    double calls = -1;  // not given
    if (!o->calls.empty()) {
      calls = parse_quantity("--calls-per-process", o->calls);
      if (calls < 0)
        throw_error(ErrorKind::usage, fmt::format("--calls-per-process '{}': must be >= 0", o->calls));
    }
    const BreakevenReport r = breakeven_report(cold, warm, calls);
    if (g.json) return print_result(g, "model breakeven", to_json(r));
    fmt::print("Extra cold cost {}  warm saving {} per call  break-even {}\n", format_seconds(cold),
               format_seconds(warm), r.breakeven.never ? std::string("never") : format_count(r.breakeven.calls) + " calls");
    if (r.has_calls_per_process)
      fmt::print("At {} calls per process: net {} per process: {}\n", format_count(r.calls_per_process),
                 format_seconds(r.net_saving_per_process_s), r.verdict);
    fmt::print("\n{}\n", r.breakeven.explanation);
  });
}

}  // namespace

// `kqual model service` lives in model_service_cmd.cpp.
void add_model_service_command(CLI::App* model, GlobalOptions& g, int* exit_code);

void add_model_commands(CLI::App& app, GlobalOptions& g, int* exit_code) {
  CLI::App* model = subcommand(&app, "model", "Performance models: roofline, waves, amdahl, breakeven, service (CPU only)");
  model->require_subcommand(1);
  add_roofline(model, g, exit_code);
  add_waves(model, g, exit_code);
  add_amdahl(model, g, exit_code);
  add_breakeven(model, g, exit_code);
  add_model_service_command(model, g, exit_code);

  model_cli::add_explain_commands(app, g, exit_code);
}

}  // namespace kqual::run
