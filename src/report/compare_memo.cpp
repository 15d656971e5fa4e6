// The compare memo, rendered from results.json only (so the memo never says more than the data).
#include <fmt/format.h>

#include <map>

#include <algorithm>
#include <cmath>

#include "kqual/decision/decision.hpp"
#include "kqual/report/memo.hpp"
#include "latency_text.hpp"

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

// The contract that judged both builds and where it came from, in the qualify memo's words.
std::string compare_contract_text(const json& c) {
  const json src = c.value("source", json::object());
  const std::string name = str(c, "name", "?");
  if (src.value("supplied_with_candidate", false))
    return fmt::format("Contract `{}`. **Contract supplied with the candidate**: `{}` SHA-256 `{}` (accepted by "
                       "--allow-candidate-contract: the candidate's own file, not one from the project's or your contract "
                       "folders, judged both builds).\n\n",
                       name, str(src, "file"), str(src, "sha256"));
  if (src.contains("file"))
    return fmt::format("Contract `{}`, file ({} folder): `{}` SHA-256 `{}`.\n\n", name, str(src, "origin"), str(src, "file"),
                       str(src, "sha256"));
  return fmt::format("Contract `{}` ({}).\n\n", name, str(src, "origin", "?"));
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

std::string lat_ci(const json& e) {
  std::string s = detail::latency_text(e.at("value_ms"));
  const json& ci = e.at("ci_ms");
  if (ci.is_array() && ci.size() == 2) s += " [" + detail::latency_text(ci.at(0)) + ", " + detail::latency_text(ci.at(1)) + "]";
  if (e.value("too_few", false)) s += fmt::format(" ⚠ {} of {}", e.at("n").get<long long>(), e.at("needed").get<long long>());
  return s;
}

// The latency distributions of both sides as text: one row per percentile, a bar per side on a log
// scale shared by the whole plot (o = OLD, n = NEW).
std::string text_plot(const json& old_pop, const json& new_pop) {
  const json& a = old_pop.at("distribution_ms");
  const json& b = new_pop.at("distribution_ms");
  double lo = 1e300, hi = 0;
  for (const json* d : {&a, &b})
    for (const auto& q : *d)
      if (!q.at(1).is_null() && q.at(1).get<double>() > 0) lo = std::min(lo, q.at(1).get<double>()), hi = std::max(hi, q.at(1).get<double>());
  if (!(hi > 0)) return "";
  if (hi <= lo) hi = lo * 1.01;
  constexpr int kWidth = 48;
  auto bar = [&](const json& v, char c) {
    if (v.is_null()) return std::string(kWidth, c) + " miss";
    const double t = (std::log(std::max(v.get<double>(), lo)) - std::log(lo)) / (std::log(hi) - std::log(lo));
    return std::string(std::size_t(1 + std::lround(t * (kWidth - 1))), c) + " " + detail::latency_text(v);
  };
  std::string s;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const std::string p = fmt::format("p{:g}", a.at(i).at(0).get<double>());
    s += fmt::format("{:>6} old |{}\n{:>6} new |{}\n", p, bar(a.at(i).at(1), 'o'), "", bar(b.at(i).at(1), 'n'));
  }
  return s + fmt::format("        (log scale, {} to {})\n", detail::latency_text(json(lo)), detail::latency_text(json(hi)));
}

std::string service_memo(const json& sv) {
  std::string s = "\n#### Service view\n\n";
  if (!sv.value("computed", false)) return s + "Not computed: " + str(sv, "reason") + "\n";
  const json& in = sv.at("inputs");
  s += fmt::format("Simulated: {:.4g} requests/s ({}), {} replica(s) ({}), {:.3g} process starts per replica per hour, {:.3g} "
                   "kernel call(s) per request plus {} of the rest of the request, JIT cache {}; {} requests, {} bootstrap "
                   "replicates over the measured startups.\n\n",
                   in.at("arrival_rate_per_s").get<double>(), str(in, "arrival_rate_from"), in.at("replicas").get<int>(),
                   str(in, "replicas_from"), in.at("restart_rate_per_replica_per_h").get<double>(),
                   in.at("kernel_calls_per_request").get<double>(), detail::latency_text(in.at("other_request_time_ms")), str(in, "jit_cache"),
                   in.at("requests").get<long long>(), in.at("bootstrap").get<int>());
  s += "| requests | percentile | OLD [95 % CI] | NEW [95 % CI] |\n|---|---|---|---|\n";
  const json& po = sv.at("old").at("populations");
  const json& pn = sv.at("new").at("populations");
  for (std::size_t i = 0; i < po.size() && i < pn.size(); ++i) {
    const json& a = po.at(i).at("percentiles");
    const json& b = pn.at(i).at("percentiles");
    for (std::size_t k = 0; k < a.size() && k < b.size(); ++k)
      s += fmt::format("| {} (n {}{}) | p{:g} | {} | {} |\n", str(po.at(i), "population"), po.at(i).at("n").get<long long>(),
                       po.at(i).value("misses", 0) + pn.at(i).value("misses", 0) > 0
                           ? fmt::format(", misses {} / {}", po.at(i).value("misses", 0), pn.at(i).value("misses", 0))
                           : std::string(),
                       a.at(k).at("percentile").get<double>(), lat_ci(a.at(k)), lat_ci(b.at(k)));
  }
  for (const auto& o : sv.at("objectives")) s += "- objective: " + str(o, "verdict") + "\n";
  for (const char* side : {"old", "new"}) {
    const json& g = sv.at(side).at("goodput");
    if (!g.value("computed", false)) continue;
    s += fmt::format("- goodput {}: {:.4g} good requests/s of {:.4g} ({:.2f} % within {}); highest rate with {:.1f} % within it: "
                     "{}\n",
                     side, g.at("good_per_s").get<double>(), g.at("rate_per_s").get<double>(), g.at("good_share").get<double>() * 100,
                     detail::latency_text(g.at("bound_ms")), g.at("share").get<double>() * 100,
                     g.at("max_rate_per_s").is_null() ? std::string("—") : fmt::format("{:.4g} requests/s", g.at("max_rate_per_s").get<double>()));
  }
  for (const auto& w : sv.at("warnings")) s += "- ⚠ " + w.get<std::string>() + "\n";
  for (const auto& n : sv.at("notes")) s += "- " + n.get<std::string>() + "\n";
  for (std::size_t i = 0; i < po.size() && i < pn.size(); ++i) {
    const std::string plot = text_plot(po.at(i), pn.at(i));
    if (!plot.empty()) s += fmt::format("\nLatency distribution, {} requests:\n\n```text\n{}```\n", str(po.at(i), "population"), plot);
  }
  return s;
}

}  // namespace

namespace {

// The artifact diff's kernels: every one for a kernel-sized diff; for a library's thousands, the
// counts per status, the per-architecture summary and loading per GPU, and the first changed ones.
std::string kernel_table(const json& dd) {
  constexpr std::size_t kListAll = 40, kListChanged = 25;
  const json& kernels = dd.at("kernels");
  std::string s;
  std::map<std::string, int> by_status;
  for (const auto& k : kernels) ++by_status[str(k, "status")];
  const bool summarise = kernels.size() > kListAll;
  if (summarise) {
    s += fmt::format("\n{} kernels:", kernels.size());
    for (const auto& [st, n] : by_status) s += fmt::format(" {} {},", n, st);
    s.back() = '.';
    s += "\n";
    if (dd.contains("per_arch") && dd.at("per_arch").is_array()) {
      s += "\n| arch | modules old → new | bytes old → new | added | removed | changed | identical |\n|---|---|---|---|---|---|---|\n";
      for (const auto& a : dd.at("per_arch"))
        s += fmt::format("| {} | {} → {} | {} → {} | {} | {} | {} | {} |\n", str(a, "arch"), a.at("entries").at("old").dump(),
                         a.at("entries").at("new").dump(), a.at("stored_bytes").at("old").dump(),
                         a.at("stored_bytes").at("new").dump(), a.value("added", 0), a.value("removed", 0),
                         a.value("changed", 0), a.value("identical", 0));
    }
    if (dd.contains("loading") && dd.at("loading").is_array()) {
      s += "\n| GPU | modules old: native / PTX JIT / none | new: native / PTX JIT / none |\n|---|---|---|\n";
      for (const auto& g : dd.at("loading")) {
        auto cell = [&](const char* side) {
          const json& c = g.at(side);
          return fmt::format("{} / {} / {}", c.value("native_sass", 0), c.value("ptx_jit", 0), c.value("incompatible", 0));
        };
        s += fmt::format("| {} | {} | {} |\n", str(g, "gpu"), cell("old"), cell("new"));
      }
    }
  }
  const std::size_t different = kernels.size() - std::size_t(by_status["identical"]);
  if (summarise && different == 0) return s + "\n(every kernel, identical, is in results.json, artifact_diff)\n";
  s += "\n| kernel | status | registers old → new | local bytes old → new |\n|---|---|---|---|\n";
  std::size_t listed = 0;
  for (const auto& k : kernels) {
    if (summarise && (str(k, "status") == "identical" || listed == kListChanged)) continue;
    auto field = [&](const char* which, const char* f) {
      return k.contains(which) && !k.at(which).is_null() ? k.at(which).at(f).dump() : std::string("—");
    };
    s += fmt::format("| `{}` | {} | {} → {} | {} → {} |\n", str(k, "name"), str(k, "status"), field("old", "registers"),
                     field("new", "registers"), field("old", "local_bytes"), field("new", "local_bytes"));
    ++listed;
  }
  if (summarise) {
    s += listed < different ? fmt::format("\n(the first {} of {} that differ; every kernel is in results.json, artifact_diff)\n",
                                          listed, different)
                            : std::string("\n(identical kernels are in results.json, artifact_diff)\n");
  }
  return s;
}

// Library sides: the first request phase by phase, per mode (medians [ms]).
std::string library_phase_table(const json& modes) {
  std::string s;
  for (const auto& m : modes) {
    if (!m.at("old").contains("library_phases_summary_ms") || !m.at("new").contains("library_phases_summary_ms")) continue;
    if (s.empty())
      s = "\nThe library's first request, phase by phase (medians [ms]; later shapes' first calls in the same process):\n\n"
          "| JIT cache | loading | phase | old | new |\n|---|---|---|---|---|\n";
    const json& o = m.at("old").at("library_phases_summary_ms");
    const json& n = m.at("new").at("library_phases_summary_ms");
    for (const char* ph : {"library_load", "handle", "first_call", "steady_call"})
      if (o.contains(ph) || n.contains(ph))
        s += fmt::format("| {} | {} | {} | {} | {} |\n", str(m, "cache"), str(m, "loading"), ph,
                         median_of(o.value(ph, json())), median_of(n.value(ph, json())));
    for (const auto& [ph, v] : o.items())
      if (ph.rfind("first_call[", 0) == 0)
        s += fmt::format("| {} | {} | {} | {} | {} |\n", str(m, "cache"), str(m, "loading"), ph, median_of(v),
                         median_of(n.value(ph, json())));
  }
  return s;
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
  if (r.contract) s += compare_contract_text(*r.contract);
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
  if (dd.contains("kernels")) s += kernel_table(dd);
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
    s += library_phase_table(st.at("modes"));
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
      if (x.contains("service") && x.at("service").is_object()) s += service_memo(x.at("service"));
    }
  }

  s += "\n## Provenance\n\n```json\n" + r.provenance.dump(2) + "\n```\n";
  return s;
}

}  // namespace kqual::report
