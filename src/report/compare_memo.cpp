// The compare memo, rendered from results.json only (so the memo never says more than the data).
#include <fmt/format.h>

#include <cmath>

#include "kqual/decision/decision.hpp"
#include "kqual/report/memo.hpp"

namespace kqual::report {
namespace {

std::string str(const json& j, const char* key, const std::string& dflt = "") {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return dflt;
  const json& v = j.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string num(const json& v, const char* fmt_spec = "{:.3f}") {
  if (v.is_null() || !v.is_number()) return "—";
  return fmt::format(fmt::runtime(fmt_spec), v.get<double>());
}

std::string median_of(const json& summary, const char* fmt_spec = "{:.3f}") {
  if (summary.is_null()) return "—";
  return num(summary.at("median"), fmt_spec);
}

// A comparison's interval: stats writes it as [lo, hi].
double ci_end(const json& c, std::size_t i) {
  const json& ci = c.at("ci");
  return ci.is_array() && ci.size() == 2 && ci.at(i).is_number() ? ci.at(i).get<double>() : std::nan("");
}

// "+93.2 [88.1, 97.0] → slower" from a difference comparison in ms.
std::string delta_ms(const json& c) {
  if (c.is_null()) return "—";
  return fmt::format("{:+.2f} [{:+.2f}, {:+.2f}] → {}", c.at("estimate").get<double>(), ci_end(c, 0), ci_end(c, 1),
                     c.at("verdict").get<std::string>());
}

std::string ratio_text(const json& c) {
  if (c.is_null()) return "—";
  return fmt::format("{:.3f} [{:.3f}, {:.3f}] → {}", c.at("estimate").get<double>(), ci_end(c, 0), ci_end(c, 1),
                     c.at("verdict").get<std::string>());
}

}  // namespace

std::string render_compare_memo(const json& results) { return render_compare_memo(compare_result_from_json(results)); }

// The sides, artifact diff, startup, warm and decisions blocks are JSON in CompareResult (see
// results.hpp); they are read here by key, the rest from the typed result.
std::string render_compare_memo(const CompareResult& r) {
  std::string s;
  const CompareVerdict& v = r.verdict;
  s += "# kqual compare: should NEW replace OLD?\n\n";
  s += fmt::format("**Verdict: {}** (exit {}) — {}\n\n", decision::describe(v.decision), v.exit_code, v.summary);
  for (const auto& x : v.reasons) s += "- " + x + "\n";
  s += "\n## Phases\n\n";
  for (const auto& [k, x] : r.phases.entries()) s += fmt::format("- **{}**: {}\n", k, x);
  if (!r.not_run.empty()) {
    s += "\n**Not run** (this memo makes no claim about them):\n";
    for (const auto& x : r.not_run) s += "- " + x + "\n";
  }

  s += "\n## 1. Artifact identity\n\n";
  s += fmt::format("Target: {} ({}).\n\n", r.target.arch, r.target.source);
  s += "| side | input | build | image | loads by | sha256 |\n|---|---|---|---|---|---|\n";
  for (const char* side : {"old", "new"}) {
    const json& x = r.sides.at(side);
    s += fmt::format("| {} | `{}` | {} | {} | {} | `{}` |\n", side, str(x, "input"), str(x.at("build"), "recipe"),
                     str(x.at("image"), "kind"), str(x, "loading_path"), str(x.at("image"), "sha256").substr(0, 16));
  }
  for (const char* side : {"old", "new"}) {
    const json& b = r.sides.at(side).at("build");
    for (const auto& t : b.at("tools"))
      if (t.contains("path")) s += fmt::format("- {} {}: `{}` — {}\n", side, str(t, "tool"), str(t, "path"), str(t, "release", str(t, "version")));
    if (!b.at("ptx_version_rewrite").is_null())
      s += fmt::format("- {}: PTX `.version` rewritten {} (docs/compare.md)\n", side, b.at("ptx_version_rewrite").get<std::string>());
    for (const auto& n : b.at("notes")) s += fmt::format("- {}: {}\n", side, n.get<std::string>());
    const json& x = r.sides.at(side);
    if (x.contains("manifest_from") && !str(x, "manifest_from").empty())
      s += fmt::format("- {}: launch plan from {}\n", side, str(x, "manifest_from"));
  }
  const json& d = r.artifact_diff;
  const json& dd = d.contains("diff") ? d.at("diff") : d;
  if (dd.contains("kernels")) {
    s += "\n| kernel | status | registers old → new | local bytes old → new |\n|---|---|---|---|\n";
    for (const auto& k : dd.at("kernels")) {
      auto field = [&](const char* which, const char* f) {
        return k.contains(which) && !k.at(which).is_null() ? k.at(which).at(f).dump() : std::string("—");
      };
      s += fmt::format("| `{}` | {} | {} → {} | {} → {} |\n", str(k, "name"), str(k, "status"), field("old", "registers"),
                       field("new", "registers"), field("old", "local_bytes"), field("new", "local_bytes"));
    }
  }
  for (const auto& n : r.notes) s += "\n- " + n + "\n";

  if (!r.correctness.empty()) {
    s += "\n## 2. Correctness (contract cases, both builds)\n\n";
    for (const char* side : {"old", "new"}) {
      if (!r.correctness.contains(side)) continue;
      const json& c = r.correctness.at(side);
      s += fmt::format("- {}: {} passed, {} failed, {} refused of {} cases\n", side, c.value("passed", 0), c.value("failed", 0),
                       c.value("refused", 0), c.value("cases", 0));
    }
    if (r.correctness_relation)
      s += fmt::format("\n**{}** — {}\n", r.correctness_relation->relation, r.correctness_relation->explanation);
  }

  if (r.startup) {
    const json& st = *r.startup;
    s += "\n## 3. Startup (fresh processes; medians [ms]; delta = new − old with 95 % CI)\n\n";
    s += fmt::format("{} processes per side per mode ({} requested, at most {}), {}. First request = {}. Delta = {}. "
                     "Differences within ±{} ms are no difference.\n\n",
                     st.at("runs_per_side_per_mode").get<int>(), st.value("runs_requested", 0), st.value("max_runs", 0),
                     str(st, "order"), str(st, "first_request_definition"), str(st, "delta_definition"),
                     st.at("noise_floor_ms").get<double>());
    s += "| JIT cache | loading | module load old / new | JIT wall new | first request old / new | first-request delta | "
         "detectable (95 %) | runs for ±" + str(st, "resolve_ms") + " ms |\n|---|---|---|---|---|---|---|---|\n";
    for (const auto& m : st.at("modes")) {
      const json res = m.value("resolution", json());
      s += fmt::format("| {} | {} | {} / {} | {} | {} / {} | {} | {} | {} |\n", str(m, "cache"), str(m, "loading"),
                       median_of(m.at("old").at("module_load_summary_ms")), median_of(m.at("new").at("module_load_summary_ms")),
                       median_of(m.at("new").at("jit_wall_summary_ms"), "{:.1f}"),
                       median_of(m.at("old").at("first_request_summary_ms"), "{:.1f}"),
                       median_of(m.at("new").at("first_request_summary_ms"), "{:.1f}"),
                       delta_ms(m.value("first_request_delta_ms", json())),
                       res.is_null() ? "—" : "±" + num(res.at("detectable_difference_ms"), "{:.2f}") + " ms",
                       res.is_null() ? "—"
                                     : fmt::format("{} per side{}", res.at("runs_per_side_needed_for_target").get<int>(),
                                                   res.at("resolved").get<bool>() ? "" : " (not reached)"));
    }
    s += "\nThe detectable difference is the 95 % interval's half-width: a true first-request difference smaller than this "
         "could not be told from none by this run. Runs needed scale it by (half-width / target)².\n";
    for (const auto& e : st.value("extensions", json::array())) s += "- extended: " + e.get<std::string>() + "\n";
    for (const auto& n : st.at("notes")) s += "- " + n.get<std::string>() + "\n";
  }

  if (r.warm) {
    const json& w = *r.warm;
    s += "\n## 4. Warm time per shape (device-timed; one sample = one fresh process's median)\n\n";
    s += fmt::format("{} processes per side, {} samples each, order {}. Ratio = new / old with 95 % CI; within ±{:.0f} % is no "
                     "difference.\n\nTimed region: {}\n\n",
                     w.at("processes_per_side").get<int>(), w.at("samples_per_process").get<int>(),
                     w.at("order").size() > 8 ? "A B B A A B B A …" : w.at("order").dump(), w.at("margin_relative").get<double>() * 100,
                     str(w, "boundary"));
    s += "| shape | old [ms] | new [ms] | new / old | |\n|---|---|---|---|---|\n";
    for (const auto& sh : w.at("shapes")) {
      std::string err;
      for (const char* side : {"old", "new"})
        for (const auto& e : sh.at(side).at("errors")) err += fmt::format("{}: {}; ", side, e.get<std::string>());
      s += fmt::format("| {} | {} | {} | {} | {}{} |\n", str(sh, "shape"), median_of(sh.at("old").at("summary_of_process_medians_ms"), "{:.4f}"),
                       median_of(sh.at("new").at("summary_of_process_medians_ms"), "{:.4f}"), ratio_text(sh.value("comparison", json())),
                       sh.value("decision_shape", false) ? "**decision shape** " : "", err);
    }
  }

  if (r.decisions) {
    s += "\n## 5. Decision per deployment profile\n\n";
    for (const auto& x : *r.decisions) {
      const json& p = x.at("profile");
      s += fmt::format("### Profile: {}\n\n{}\n\n", str(p, "name"), str(p, "description"));
      s += fmt::format("process starts/day {}, calls/process {}, first-request budget {} ms, kernel share {}, JIT cache {}\n\n",
                       p.at("process_starts_per_day").dump(), p.at("calls_per_process").dump(),
                       p.value("first_request_budget_ms", json()).dump(), p.at("kernel_share").dump(), str(p, "jit_cache"));
      s += x.at("markdown").get<std::string>() + "\n";
    }
  }

  s += "\n## Provenance\n\n```json\n" + r.provenance.dump(2) + "\n```\n";
  return s;
}

}  // namespace kqual::report
