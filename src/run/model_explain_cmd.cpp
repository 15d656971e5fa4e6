// `kqual explain scan|transpose|softmax|waves`: step-by-step walkthroughs of work mappings over
// kqual::model (CPU only); registered by model_cmd.cpp. Text by default, one JSON document with --json.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/model/explain.hpp"
#include "kqual/model/units.hpp"
#include "kqual/model/waves.hpp"
#include "kqual/run/cli.hpp"
#include "command_util.hpp"
#include "model_cmd_internal.hpp"

namespace kqual::run {
namespace {

using namespace kqual::model;
using namespace kqual::run::model_cli;

std::string join_ints(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{:>3}", i ? " " : "", v[i]);
  return "[" + s + "]";
}

// --variant of a walkthrough that shows a mapping correct and broken: correct, the broken one's
// name, or both (the default).
struct VariantOption {
  explicit VariantOption(const char* broken) : broken_name(broken) {}
  const char* broken_name;
  std::string value = "both";

  void add(CLI::App* s) {
    s->add_option("--variant", value, fmt::format("correct, {} or both (default)", broken_name));
  }
  std::vector<bool> broken_flags() const {
    if (value == "both") return {false, true};
    if (value == "correct") return {false};
    if (value == broken_name) return {true};
    throw_error(ErrorKind::usage, fmt::format("--variant '{}': use correct, {} or both", value, broken_name));
  }
  // The walkthroughs asked for, the correct one first: make(broken) builds one.
  template <class Make>
  auto walkthroughs(Make make) const {
    std::vector<decltype(make(false))> ws;
    for (bool broken : broken_flags()) ws.push_back(make(broken));
    return ws;
  }
};

// --json: {"walkthroughs": [...]} in the command's envelope.
template <class W>
void print_walkthroughs(const GlobalOptions& g, const std::string& command, const std::vector<W>& ws) {
  json j = envelope(g, command);
  j["walkthroughs"] = json::array();
  for (const auto& w : ws) j["walkthroughs"].push_back(to_json(w));
  print_json(j);
}

void add_explain_scan(CLI::App* explain, GlobalOptions& g, int*) {
  struct Opts {
    std::string counts = "3,0,2,1,0,4";
    std::int64_t block = 3;
    VariantOption variant{"missing-carry"};
  };
  auto o = std::make_shared<Opts>();
  auto* s = subcommand(explain, "scan", "Exclusive scan over blocks: local offsets, block totals, carries, output ranges");
  s->add_option("--counts", o->counts, "Per-element output counts (default 3,0,2,1,0,4)");
  s->add_option("--block-size", o->block, "Elements per block (default 3: two blocks for the default counts)");
  o->variant.add(s);
  s->callback([o, &g] {
    const auto counts = parse_count_list("--counts", o->counts);
    const auto ws = o->variant.walkthroughs([&](bool broken) { return explain_scan(counts, o->block, broken); });
    if (g.json) return print_walkthroughs(g, "explain scan", ws);
    for (const auto& w : ws) {
      fmt::print("== exclusive scan, {} ==\n", w.missing_carry ? "BROKEN: missing carry" : "correct");
      fmt::print("counts         {}\n", join_ints(w.counts));
      fmt::print("block          {}\n", join_ints(w.block_of));
      fmt::print("local offsets  {}   (exclusive scan inside each block)\n", join_ints(w.local_offsets));
      fmt::print("block totals   {}\n", join_ints(w.block_totals));
      fmt::print("carries        {}   ({})\n", join_ints(w.carries),
                 w.missing_carry ? "never computed: every block starts at 0" : "exclusive scan of the block totals");
      fmt::print("offsets        {}   (local offset + carry)\n", join_ints(w.offsets));
      fmt::print("output length  {}\n", w.total);
      for (const auto& r : w.ranges) fmt::print("  element {} writes [{}, {})\n", r.element, r.begin, r.end);
      for (const auto& ov : w.overlaps)
        fmt::print("  OVERLAP: elements {} and {} both write [{}, {})\n", ov.first, ov.second, ov.begin, ov.end);
      for (const auto& u : w.unwritten) fmt::print("  UNWRITTEN: [{}, {})\n", u.first, u.second);
      fmt::print("{}\n\n", w.explanation);
    }
  });
}

void add_explain_transpose(CLI::App* explain, GlobalOptions& g, int*) {
  struct Opts {
    std::int64_t rows = 32, cols = 64, show = 32;
    int elem_bytes = 4, lanes = 32;
  };
  auto o = std::make_shared<Opts>();
  auto* s = subcommand(explain, "transpose", "Transposed view over row-major storage: offsets and lane mapping");
  s->add_option("--rows", o->rows, "Storage rows (default 32)");
  s->add_option("--cols", o->cols, "Storage columns (default 64)");
  s->add_option("--elem-bytes", o->elem_bytes, "Element size in bytes: 1, 2, 4 (default) or 8");
  s->add_option("--lanes", o->lanes, "Lanes of the warp to map (1-32, default 32)");
  s->add_option("--show", o->show, "View coordinates to list (default 32)");
  s->callback([o, &g] {
    const auto w = explain_transpose(o->rows, o->cols, o->elem_bytes, o->lanes, o->show);
    if (g.json) return print_result(g, "explain transpose", to_json(w));
    fmt::print("storage {} x {} row-major, strides {{{}, 1}}; view {} x {}, strides {{{}, {}}}\n", w.rows, w.cols,
               w.cols, w.view_rows, w.view_cols, w.view_stride_row, w.view_stride_col);
    fmt::print("offset(i, j) = i*{} + j*{}\n\nview coordinate -> storage element offset:\n", w.view_stride_row,
               w.view_stride_col);
    for (const auto& c : w.coords) fmt::print("  ({}, {}) -> {}\n", c.i, c.j, c.offset);
    fmt::print("bijective (every element exactly once): {}\n\n", w.bijective ? "yes" : "NO");
    fmt::print("warp 0, lane l handles view element l:\n  {:>4} {:>9} {:>8} {:>8} {:>11} {:>12}\n", "lane", "view",
               "reads", "writes", "read sect.", "write sect.");
    for (const auto& l : w.lanes)
      fmt::print("  {:>4} {:>9} {:>8} {:>8} {:>11} {:>12}\n", l.lane, fmt::format("({},{})", l.i, l.j), l.read_offset,
                 l.write_offset, l.read_sector, l.write_sector);
    fmt::print("sectors per warp: read {}, write {}, ideal {}\n", w.read_sectors, w.write_sectors, w.ideal_sectors);
    fmt::print("shared tile column read: {}-way bank conflict unpadded, {}-way padded\n\n{}\n",
               w.bank_conflict_unpadded, w.bank_conflict_padded, w.explanation);
  });
}

void add_explain_softmax(CLI::App* explain, GlobalOptions& g, int*) {
  struct Opts {
    std::string values = "1,2,3,4,5,6,7,8";
    std::int64_t chunk = 4;
    VariantOption variant{"forget-rescale"};
  };
  auto o = std::make_shared<Opts>();
  auto* s = subcommand(explain, "softmax", "Online softmax: (max, sum) states per chunk and how they merge");
  s->add_option("--values", o->values, "Input row (default 1,2,3,4,5,6,7,8)");
  s->add_option("--chunk", o->chunk, "Values per chunk (default 4)");
  o->variant.add(s);
  s->callback([o, &g] {
    const auto values = parse_real_list("--values", o->values);
    const auto ws = o->variant.walkthroughs([&](bool broken) { return explain_softmax(values, o->chunk, broken); });
    if (g.json) return print_walkthroughs(g, "explain softmax", ws);
    for (const auto& w : ws) {
      fmt::print("== online softmax, {} ==\n", w.forget_rescale ? "BROKEN: merge forgets to rescale" : "correct merge");
      for (std::size_t c = 0; c < w.chunk_states.size(); ++c)
        fmt::print("chunk {}: m = {:.6g}, s = {:.9g}\n", c, w.chunk_states[c].max, w.chunk_states[c].sum);
      for (const auto& m : w.merges)
        fmt::print("merge (m {:.6g}, s {:.9g}) + (m {:.6g}, s {:.9g}): scales {:.6g}, {:.6g} -> (m {:.6g}, s {:.9g})\n",
                   m.left.max, m.left.sum, m.right.max, m.right.sum, m.left_scale, m.right_scale, m.merged.max,
                   m.merged.sum);
      fmt::print("final (m {:.6g}, s {:.9g}); reference (m {:.6g}, s {:.9g})\n", w.final_state.max, w.final_state.sum,
                 w.reference.max, w.reference.sum);
      fmt::print("probabilities:");
      for (double p : w.probabilities) fmt::print(" {:.5f}", p);
      fmt::print("\nreference:    ");
      for (double p : w.reference_probabilities) fmt::print(" {:.5f}", p);
      fmt::print("\nsum {:.9g}, max |error| {:.3g}: {}\n{}\n\n", w.probability_sum, w.max_abs_error,
                 w.correct ? "correct" : "WRONG", w.explanation);
    }
  });
}

void add_explain_waves(CLI::App* explain, GlobalOptions& g, int*) {
  struct Opts {
    std::int64_t tiles = 96;
    SlotOptions slots;
  };
  auto o = std::make_shared<Opts>();
  auto* s = subcommand(explain, "waves", "Wave scheduling: which tiles run in which wave, and the idle tail");
  s->add_option("--tiles", o->tiles, "Tiles (blocks) in the grid (default 96)");
  o->slots.add(s);
  s->callback([o, &g] {
    if (!o->slots.slots_given()) o->slots.slots = 80;  // the seed case: 96 tiles on 80 slots
    const auto sl = o->slots.resolve(nullptr);
    const auto t = wave_timeline(o->tiles, sl.slots);
    if (g.json) {
      json j = envelope(g, "explain waves");
      sl.add_to(j, o->tiles);
      j["result"] = to_json(t);
      return print_json(j);
    }
    if (sl.occupancy) print_occupancy(*sl.occupancy);
    fmt::print("{} tiles on {} slots ({}): waves = ceil({} / {}) = {}\n", o->tiles, sl.slots, sl.how, o->tiles, sl.slots,
               t.summary.waves);
    constexpr int kBar = 40;
    std::int64_t previous = -1;
    for (const auto& r : t.rows) {
      if (previous >= 0 && r.index != previous + 1)
        fmt::print("  ... {} more full waves ...\n", r.index - previous - 1);
      previous = r.index;
      const int busy = int(std::lround(double(kBar) * double(r.busy_slots) / double(sl.slots)));
      fmt::print("  wave {:>3}: tiles {:>6}-{:<6} |{}{}| {} busy, {} idle\n", r.index, r.first_tile, r.last_tile,
                 std::string(std::size_t(busy), '#'), std::string(std::size_t(kBar - busy), '.'), r.busy_slots,
                 r.idle_slots);
    }
    fmt::print("efficiency = tiles / (waves x slots) = {} / ({} x {}) = {}\n\n{}\n", t.summary.tiles, t.summary.waves,
               t.summary.slots, format_percent(t.summary.efficiency), t.summary.explanation);
  });
}

}  // namespace

void model_cli::add_explain_commands(CLI::App& app, GlobalOptions& g, int* exit_code) {
  CLI::App* explain =
      subcommand(&app, "explain", "Step-by-step walkthroughs of work mappings: scan, transpose, softmax, waves");
  explain->require_subcommand(1);
  add_explain_scan(explain, g, exit_code);
  add_explain_transpose(explain, g, exit_code);
  add_explain_softmax(explain, g, exit_code);
  add_explain_waves(explain, g, exit_code);
}

}  // namespace kqual::run
