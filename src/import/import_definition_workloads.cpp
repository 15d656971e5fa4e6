// A Definition's workloads (import_definition_parts.hpp): the lines read and checked, the axis values
// they give, the workloads with an empty tensor left out of the shapes, and a scalar's value.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "import_definition_parts.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::detail {
namespace fs = std::filesystem;

Workloads read_workloads(const fs::path& file, const std::string& def_name) {
  Workloads workloads;
  std::ifstream in(file);
  if (!in) throw_error(ErrorKind::input, fmt::format("{}: cannot read", file.string()));
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", file.string(), line_no);
    json w;
    try {
      w = json::parse(line);
    } catch (const json::exception& e) {
      throw_error(ErrorKind::input, fmt::format("{}: not JSON: {}", where, e.what()));
    }
    const JsonIn win(where);
    win.object(w, "");
    if (w.contains("definition") && w["definition"].is_string() && w["definition"] != def_name) continue;
    const json& b = w.contains("workload") ? win.object(w["workload"], "workload") : w;
    const std::string bk = w.contains("workload") ? "workload" : "";
    for (const char* k : {"axes", "inputs"})
      if (const json* v = win.member(b, bk, k, false)) win.object(*v, JsonIn::at(bk, k));
    for (const json* t : {win.member(w, "", "tolerance", false), win.member(b, bk, "tolerance", false)})
      if (t) win.object(*t, "tolerance");
    workloads.push_back({where, w});
  }
  return workloads;
}

const json& workload_body(const std::pair<std::string, json>& w) { return w.second.contains("workload") ? w.second["workload"] : w.second; }

std::optional<std::int64_t> workload_axis(const std::pair<std::string, json>& w, const std::string& an) {
  const json& b = workload_body(w);
  if (!b.contains("axes") || !b["axes"].contains(an)) return std::nullopt;
  const JsonIn win(w.first);
  const std::int64_t v = win.integer(win.object(b["axes"], "axes")[an], "axes." + an);
  if (v < 1 || v > 2147483647) win.fail("axes." + an, fmt::format("{} is outside [1, 2^31 - 1], the sizes an axis takes", v));
  return v;
}

Workloads sized_workloads(const Workloads& all, const json& def, std::vector<std::string>& notes) {
  Workloads kept;
  for (const auto& w : all) {
    const json& b = workload_body(w);
    std::string empty;
    if (b.contains("axes"))
      for (const auto& [an, v] : b["axes"].items())
        if (def["axes"].contains(an) && v.is_number_integer() && v.get<std::int64_t>() == 0) empty = an;
    if (empty.empty()) {
      kept.push_back(w);
      continue;
    }
    notes.push_back(fmt::format("{}: axes.{} = 0 (an empty tensor): left out of the hints, the base and the benchmark shapes — "
                                "kqual's axes are at least 1, and the declared-contract engine runs no empty tensor", w.first, empty));
  }
  return kept;
}

namespace {

// A workload's value of scalar `tn` as a number (a boolean as 0 or 1); nullopt when it sets none.
std::optional<double> workload_scalar(const std::pair<std::string, json>& w, const std::string& tn) {
  const json& b = workload_body(w);
  if (!b.contains("inputs") || !b["inputs"].contains(tn) || !b["inputs"][tn].is_object() || !b["inputs"][tn].contains("value"))
    return std::nullopt;
  const json& v = b["inputs"][tn]["value"];
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_number()) return v.get<double>();
  return std::nullopt;  // definition_scalar_toml names the type
}

std::string shown_value(double v, bool is_bool) { return is_bool ? (v != 0 ? "true" : "false") : fmt::format("{}", v); }

}  // namespace

Workloads one_value_per_scalar(const fs::path& def_file, const fs::path& workloads_file, const Workloads& all, const json& def,
                               const std::set<std::string>& bool_scalars, const std::map<std::string, std::string>& chosen,
                               std::vector<std::string>& notes) {
  const json* inputs = def.contains("inputs") && def["inputs"].is_object() ? &def["inputs"] : nullptr;
  for (const auto& [name, text] : chosen)
    if (!inputs || !inputs->contains(name) || !(*inputs)[name].is_object() || !(*inputs)[name].contains("shape") ||
        !(*inputs)[name]["shape"].is_null())
      throw_error(ErrorKind::input, fmt::format("--scalar {}={}: {} has no scalar input '{}'", name, text, def_file.string(), name));
  Workloads kept = all;
  if (!inputs) return kept;
  for (const auto& [tn, spec] : inputs->items()) {
    if (!spec.is_object() || !spec.contains("shape") || !spec["shape"].is_null()) continue;
    const bool is_bool = bool_scalars.count(tn) > 0;
    std::vector<std::pair<double, int>> seen;  // distinct values (as float32), in order, with their workloads
    for (const auto& w : kept)
      if (const auto v = workload_scalar(w, tn)) {
        auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return float(s.first) == float(*v); });
        if (it == seen.end()) seen.push_back({*v, 1});
        else ++it->second;
      }
    const auto pick = chosen.find(tn);
    if (seen.size() < 2 && pick == chosen.end()) continue;
    double target = 0;
    int most = 0;
    for (const auto& [v, n] : seen)
      if (n > most) target = v, most = n;
    std::string how = "the value most workloads give";
    if (pick != chosen.end()) {
      const std::string& text = pick->second;
      how = "chosen with --scalar";
      if (text == "true" || text == "false") {
        target = text == "true" ? 1 : 0;
      } else {
        try {
          std::size_t used = 0;
          target = std::stod(text, &used);
          if (used != text.size()) throw std::invalid_argument(text);
        } catch (const std::exception&) {
          throw_error(ErrorKind::usage, fmt::format("--scalar {}={}: not a number, true or false", tn, text));
        }
      }
      if (seen.empty() && !kept.empty()) {
        // No workload sets it: the value chosen is given to every workload, as the workloads would.
        for (auto& w : kept) {
          json& body = w.second.contains("workload") ? w.second["workload"] : w.second;
          body["inputs"][tn] = {{"type", "scalar"}, {"value", is_bool ? json(target != 0) : json(target)}};
        }
        notes.push_back(fmt::format("inputs.{}: no workload gives its value: {} = {} (chosen with --scalar)", tn, tn,
                                    shown_value(target, is_bool)));
        continue;
      }
      if (std::none_of(seen.begin(), seen.end(), [&](const auto& s) { return float(s.first) == float(target); })) {
        std::vector<std::string> given;
        for (const auto& [v, n] : seen) given.push_back(shown_value(v, is_bool));
        throw_error(ErrorKind::input, fmt::format("--scalar {}={}: no workload of {} gives it (they give: {})", tn, text,
                                                  workloads_file.string(), given.empty() ? "none" : fmt::format("{}", fmt::join(given, ", "))));
      }
    }
    Workloads agree;
    for (const auto& w : kept)
      if (const auto v = workload_scalar(w, tn); !v || float(*v) == float(target)) agree.push_back(w);
    std::vector<std::string> left;
    for (const auto& [v, n] : seen)
      if (float(v) != float(target)) left.push_back(fmt::format("{} ({} workload{})", shown_value(v, is_bool), n, n == 1 ? "" : "s"));
    if (!left.empty())
      notes.push_back(fmt::format("inputs.{}: the workloads give it {} values; kqual's scalars are fixed per contract, so this contract "
                                  "holds {} = {} ({}) and keeps the {} workload(s) that give it. Not judged here: {} = {} — import again "
                                  "with --scalar {}=VALUE for each",
                                  tn, seen.size(), tn, shown_value(target, is_bool), how, agree.size(), tn, fmt::join(left, ", "), tn));
    kept = std::move(agree);
  }
  return kept;
}

std::string definition_scalar_toml(const fs::path& def_file, const fs::path& workloads_file, const Workloads& workloads,
                                   const std::string& tn, const std::string& key, const std::string& dt, bool is_bool,
                                   std::vector<std::string>& notes) {
  std::optional<double> value;
  std::string where;  // the workload that gave `value`
  for (const auto& w : workloads) {
    const json& b = workload_body(w);
    if (!b.contains("inputs") || !b["inputs"].contains(tn) || !b["inputs"][tn].is_object() || !b["inputs"][tn].contains("value"))
      continue;
    const JsonIn win(w.first);
    const json& vj = b["inputs"][tn]["value"];
    // A boolean scalar: true or false (SOL-ExecBench's Python bool), or 0 or 1.
    const bool bit = is_bool && vj.is_number_integer() && (vj.get<std::int64_t>() == 0 || vj.get<std::int64_t>() == 1);
    const double v = !is_bool ? win.number(vj, "inputs." + tn + ".value")
                     : bit    ? double(vj.get<std::int64_t>())
                              : double(win.boolean(vj, "inputs." + tn + ".value"));
    // SOL-ExecBench writes one scalar (sm_scale) at float32 in some workloads and at float64 in others:
    // one value when both round to the same float32 (what an f32 scalar holds); an f64 scalar keeps
    // the wider spelling.
    if (value && *value != v) {
      if (is_bool)
        throw_error(ErrorKind::input, fmt::format("{}: inputs.{}.value: the boolean scalar is {} ({}) and {} ({}) in different workloads; "
                                                  "kqual's scalars are fixed per contract: import the Definition once per value (with "
                                                  "the workloads that give it)",
                                                  workloads_file.string(), tn, *value != 0, where, v != 0, w.first));
      if (float(*value) != float(v))
        throw_error(ErrorKind::input, fmt::format("{}: inputs.{}.value: the scalar takes {:.17g} ({}) and {:.17g} ({}) in different "
                                                  "workloads; kqual's scalars are fixed per contract",
                                                  workloads_file.string(), tn, *value, where, v, w.first));
      notes.push_back(fmt::format("inputs.{}: {:.17g} ({}) and {:.17g} ({}) are one float32 value written at two widths: the "
                                  "scalar is that float32", tn, *value, where, v, w.first));
      if (v != double(float(v))) value = v, where = w.first;  // the wider spelling (an f32 scalar holds float(value) either way)
      continue;
    }
    if (!value) where = w.first;
    value = v;
  }
  std::string comment;
  if (!value && (dt == "f32" || dt == "f64" || dt == "bf16" || dt == "f16")) {
    // No workload sets it: both peers' input generators then draw it, torch.randn(()).item() (N(0, 1)).
    // kqual's scalars are fixed per contract: one such draw, seeded by the file and the scalar's name,
    // away from 0 and +-1 (where a kernel that drops the scalar, or its sign, would still pass).
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a: the same draw on every machine
    for (unsigned char c : def_file.filename().string() + "/" + tn) h = (h ^ c) * 1099511628211ull;
    Rng rng(h);
    double v = 0;
    do v = std::round(rng.normal() * 1000) / 1000;
    while (std::fabs(v) < 0.1 || std::fabs(std::fabs(v) - 1) < 0.1);
    value = v;
    comment = "# no workload gives it: the peers' input generators draw such an input from N(0, 1) (torch.randn(()).item());\n"
              "# kqual holds one such draw, seeded by the Definition's file and the scalar's name, away from 0 and +-1\n";
    notes.push_back(fmt::format("{}: no workload gives its value: as flashinfer-bench's and SOL-ExecBench's input generators draw an "
                                "input no workload sets (N(0, 1)), kqual holds one draw, {:g} (give --workloads for the real value)", key, v));
  }
  if (!value && is_bool)
    throw_error(ErrorKind::input,
                fmt::format("{}: {}: a boolean scalar (null shape) needs its value: give the workloads (--workloads) that set it, or "
                            "--scalar {}=true|false with them (the peers' generators draw it true or false at random, and kqual's "
                            "scalars are fixed per contract: a kernel's two paths are checked by importing once per value)",
                            def_file.string(), key, tn));
  if (!value)
    throw_error(ErrorKind::input,
                fmt::format("{}: {}: a scalar (null shape) needs its value: give the workloads (--workloads) that set it, or --scalar "
                            "{}=VALUE with them (an integer scalar no workload sets is drawn from [-1024, 1024) by the peers' "
                            "generators: what it counts is not stated)",
                            def_file.string(), key, tn));
  // kqual's scalars are f32, f64, i32 and i64 (a u32 one is held as i64); an integer scalar's value must be one.
  const std::string held = dt == "f64" ? "f64" : dt == "i32" || dt == "i64" ? dt : dt == "u32" ? "i64" : "f32";
  const double lo = dt == "i32" ? -2147483648.0 : dt == "u32" ? 0.0 : -9007199254740992.0;
  const double hi = dt == "i32" ? 2147483647.0 : dt == "u32" ? 4294967295.0 : 9007199254740992.0;
  if (held[0] == 'i' && (*value != std::floor(*value) || *value < lo || *value > hi))
    throw_error(ErrorKind::input, fmt::format("{}: inputs.{}.value: {:.17g} is not a value an {} scalar holds ({})", workloads_file.string(), tn,
                                              *value, dt, where));
  // A drawn value is written as drawn (three decimals); a workload's exactly as it was given.
  const std::string shown = comment.empty() ? fmt::format("{:.17g}", *value) : fmt::format("{}", *value);
  return fmt::format("{}[scalars.{}]\ndtype = {}\nvalue = {}\n\n", comment, tn, toml_quoted(held), shown);
}

}  // namespace kqual::contract::detail
