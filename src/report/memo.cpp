#include "kqual/report/memo.hpp"

#include <fmt/format.h>

#include <cctype>
#include <sstream>

#include "kqual/decision/decision.hpp"

namespace kqual::report {
namespace {

std::string ms(double v) { return v < 0.1 ? fmt::format("{:.2f} us", v * 1000) : fmt::format("{:.4f} ms", v); }
std::string tbps(double bps) { return fmt::format("{:.2f} TB/s", bps / 1e12); }

std::string str(const json& j, const char* key, const std::string& def = "") {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : def;
}

}  // namespace

std::string verdict_words(const json& decision) {
  if (!decision.is_string()) return "no verdict";
  const std::string word = decision.get<std::string>();
  const auto v = decision::ship_verdict_from_string(word);
  return v ? decision::describe(*v) : word;
}

std::string render_qualify_memo(const json& r) {
  std::ostringstream m;
  const json& cand = r.at("candidate");
  const json& verdict = r.at("verdict");
  const json& prov = r.at("provenance");
  m << fmt::format("# kqual qualification memo: {} ({})\n\n", str(cand, "name"), str(cand, "contract"));
  std::string headline = verdict_words(verdict.value("decision", json()));
  for (auto& ch : headline) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  m << fmt::format("**Verdict: {}** (exit code {}). {}\n\n", headline, verdict.value("exit_code", -1), str(verdict, "summary"));
  for (const auto& reason : verdict.at("reasons")) m << "- " << reason.get<std::string>() << "\n";
  m << "\n";

  const json& c = r.at("contract");
  m << "## Input domain\n\n";
  m << fmt::format("Operation: {}. Contract `{}`.\n\n", str(c, "summary"), str(c, "name"));
  m << fmt::format("Candidate claims: dtypes {}, pointer alignment {} bytes, n up to {}{}.\n\n",
                   cand.at("claims").at("dtypes").dump(), cand.at("claims").at("min_alignment_bytes").get<std::int64_t>(),
                   cand.at("claims").at("max_n").get<std::int64_t>(),
                   cand.at("claims").at("in_place").get<bool>() ? ", in place allowed" : "");
  m << "Numerical policy: " << str(c, "numerical_policy") << "\n\n";
  m << "Requests refused before launch (each checked in this run):\n\n| request | refusal | reason |\n|---|---|---|\n";
  for (const auto& x : c.at("refusals_checked"))
    m << fmt::format("| {} | `{}` | {} |\n", str(x, "request"), str(x, "code"), str(x, "reason"));
  m << "\n";

  m << "## Artifact identity\n\n";
  const json& a = r.at("artifact");
  if (a.at("image").contains("file"))
    m << fmt::format("Adopted as built ({}): kqual compiled nothing; the target is `{}`.\n\n", str(a, "compiler"),
                     str(a, "arch"));
  else
    m << fmt::format("Compiled by {} for `{}` in {:.1f} ms (build time, not part of any load or run time). "
                     "Options: `{}`.\n\n",
                     str(a, "compiler"), str(a, "arch"), a.value("compile_ms", 0.0),
                     [&] { std::string s; for (const auto& o : a.at("options")) s += (s.empty() ? "" : " ") + o.get<std::string>(); return s; }());
  const json& img = a.at("image");
  if (img.contains("file"))
    m << fmt::format("- Prebuilt image `{}` SHA-256 `{}` (no source: kqual compiled nothing)\n", str(img, "file"),
                     str(img, "file_sha256"));
  else
    m << fmt::format("- Source `{}` SHA-256 `{}`\n", str(a, "source"), str(a, "source_sha256"));
  const std::string load = img.value("load_path", std::string("native_sass"));
  m << fmt::format("- Loaded image: {} of {} bytes, SHA-256 `{}` — {}.\n", str(img, "kind"), img.value("bytes", 0),
                   str(img, "sha256"),
                   load == "ptx_jit" ? fmt::format("PTX the driver JIT-compiles for `{}` when the module loads (a cost of every "
                                                   "cold first load)",
                                                   str(a, "arch"))
                                     : fmt::format("native SASS for `{}`, so the driver performs no JIT", str(a, "arch")));
  if (a.contains("notes"))
    for (const auto& n : a.at("notes")) m << "- " << n.get<std::string>() << "\n";
  if (a.contains("kernels") && a.at("kernels").is_object() && !a.at("kernels").empty()) {
    m << "\n| kernel | symbol | registers | static shared [B] | local [B/thread] | max threads/block | binary version |\n"
         "|---|---|---|---|---|---|---|\n";
    for (const auto& [name, k] : a.at("kernels").items())
      m << fmt::format("| `{}` | `{}` | {} | {} | {} | {} | {} |\n", name, str(k, "symbol"), k.value("registers", 0),
                       k.value("static_shared_bytes", 0), k.value("local_bytes", 0), k.value("max_threads_per_block", 0),
                       k.value("binary_version", 0));
    m << "\n(Registers, shared and local bytes as reported by the driver, cuFuncGetAttribute, after loading this image.)\n\n";
  } else {
    m << "\nPer-kernel resources from the driver: not available (the image was not loaded: no GPU).\n\n";
  }

  m << "## Correctness evidence\n\n";
  if (r.contains("correctness") && !r.at("correctness").is_null()) {
    const json& k = r.at("correctness");
    m << fmt::format("{}: **{}** — {} cases, {} passed, {} failed, {} refused (outside the claimed domain).\n\n",
                     str(k, "candidate"), str(k, "verdict"), k.value("cases", 0), k.value("passed", 0), k.value("failed", 0),
                     k.value("refused", 0));
    m << "Harness: every output poisoned before each run (0xFF, then 0x7F bytes — two runs per case), 4 KiB guard "
         "regions around every output checked after the launch; each input placed against an unmapped page (its last "
         "byte ending the mapping in run 1, its first byte starting it in run 2), so a read past it faults; every SM's "
         "shared memory filled with a pattern before each run; inputs hashed before and after, fresh inputs for every "
         "case, the two runs compared bitwise, the reference computed outside the candidate's process — never in its "
         "address space.\n\n";
    if (k.contains("sanitizer") && k.at("sanitizer").is_object()) {
      const json& sp = k.at("sanitizer");
      const std::string st = str(sp, "status");
      if (st == "not_run")
        m << "Sanitizer pass (memcheck, racecheck on small cases): **not run** — " << str(sp, "why") << "\n\n";
      else {
        m << fmt::format("Sanitizer pass: **{}** — compute-sanitizer memcheck (exact-size allocations) and racecheck on {} "
                         "small case(s)",
                         st, sp.contains("cases") ? sp.at("cases").size() : 0);
        if (sp.contains("tools"))
          for (const auto& t : sp.at("tools"))
            m << fmt::format("; {}: {}", str(t, "tool"), str(t, "status"));
        m << ".\n\n";
      }
    }
    if (!k.at("failure_codes").empty()) {
      m << "Failures by reason: ";
      for (const auto& [code, n] : k.at("failure_codes").items()) m << fmt::format("`{}` x{}  ", code, n.get<int>());
      m << "\n\nFirst failing cases:\n\n";
      int shown = 0;
      for (const auto& cs : k.at("failing_cases")) {
        if (cs.at("status") != "fail" || ++shown > 5) continue;
        m << fmt::format("- `{}`: `{}` — {}\n", str(cs, "id"), str(cs, "code"), str(cs, "detail"));
      }
      m << "\n";
    }
    if (k.value("skipped", 0) > 0 && k.contains("failing_cases")) {
      m << fmt::format("Not run: {} case(s) —", k.value("skipped", 0));
      for (const auto& cs : k.at("failing_cases"))
        if (cs.value("status", std::string()) == "skipped") m << fmt::format(" `{}`: {};", str(cs, "id"), str(cs, "detail"));
      m << "\n\n";
    }
    if (r.contains("case_matrix")) m << str(r, "case_matrix") << "\n";
    if (r.contains("baselines_correctness"))
      for (const auto& b : r.at("baselines_correctness"))
        m << fmt::format("Baseline `{}`: {} ({} of {} cases passed).\n", str(b, "candidate"), str(b, "verdict"),
                         b.value("passed", 0), b.value("cases", 0));
    m << "\n";
  } else {
    m << str(r.at("phases"), "correctness") << "\n\n";
  }

  m << "## Timing\n\n";
  if (r.contains("timing") && !r.at("timing").is_null()) {
    const json& t = r.at("timing");
    m << "Boundary: " << str(t, "boundary") << "\n\n";
    m << "| shape | dtype | implementation | median | min | max | p10–p90 | samples | achieved | vs candidate | timed output |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& sh : t.at("shapes")) {
      double cand_med = 0;
      for (const auto& s : sh.at("series"))
        if (s.at("role") == "candidate" && s.contains("summary_ms")) cand_med = s.at("summary_ms").at("median");
      for (const auto& s : sh.at("series")) {
        if (!s.contains("summary_ms")) {
          m << fmt::format("| {} | {} | {} | — | | | | | | | {} |\n", str(sh, "shape"), str(sh, "dtype"),
                           str(s, "label"), str(s, "error"));
          continue;
        }
        const json& su = s.at("summary_ms");
        double med = su.at("median");
        m << fmt::format("| {} | {} | {}{} | {} | {} | {} | {}–{} | {} | {} | {} | {} |\n", str(sh, "shape"),
                         str(sh, "dtype"), str(s, "label"), s.at("role") == "candidate" ? " (candidate)" : "", ms(med),
                         ms(su.at("min")), ms(su.at("max")), ms(su.at("p10")), ms(su.at("p90")), su.at("n").get<int>(),
                         tbps(s.value("bytes_per_s", 0.0)),
                         s.at("role") == "candidate" ? "—" : fmt::format("{:.2f}x", med / cand_med),
                         s.at("verified").get<bool>() ? "re-checked" : "WRONG: " + str(s, "verify_detail"));
      }
    }
    m << "\nAchieved bandwidth = the contract's minimum bytes (every input read once, every output written once) / "
         "median time.\n\n";
    m << "### Result by shape (candidate against the fastest baseline)\n\n";
    for (const auto& sh : t.at("shapes")) {
      if (!sh.contains("candidate_vs_fastest")) continue;
      const json& v = sh.at("candidate_vs_fastest");
      double ratio = v.at("estimate");
      m << fmt::format("- {}: fastest baseline `{}`; candidate time ratio {:.3f} (95 % CI {:.3f}–{:.3f}), i.e. {:.2f}x "
                       "speed-up → **{}**. {}\n",
                       str(sh, "shape"), str(sh, "fastest_baseline"), ratio, v.at("ci").at(0).get<double>(),
                       v.at("ci").at(1).get<double>(), 1.0 / ratio, str(v, "verdict"), str(v, "reason"));
      if (sh.contains("device_copy")) {
        double copy = sh.at("device_copy").at("bytes_per_s");
        double cand_bw = 0;
        for (const auto& s : sh.at("series"))
          if (s.at("role") == "candidate") cand_bw = s.value("bytes_per_s", 0.0);
        m << fmt::format("  Device-to-device copy measured in the same run: {} (bytes read + written); the candidate "
                         "moves {} = {:.1f} % of it.\n",
                         tbps(copy), tbps(cand_bw), 100.0 * cand_bw / copy);
      }
    }
    m << "\n";
  } else {
    m << str(r.at("phases"), "timing") << "\n\n";
  }

  m << "## Verdict, and what would reverse it\n\n";
  m << fmt::format("Decision: **{}**.\n\n", headline);
  for (const auto& w : verdict.at("would_reverse")) m << "- Would reverse: " << w.get<std::string>() << "\n";
  m << "\n## Phases\n\n| phase | status |\n|---|---|\n";
  for (const auto& [k, v] : r.at("phases").items()) m << fmt::format("| {} | {} |\n", k, v.get<std::string>());
  m << "\n## Provenance\n\n";
  m << fmt::format("- kqual {} (git {}), command: `{}`\n", str(prov, "kqual_version"), str(prov, "git_revision"),
                   str(prov, "command_line"));
  m << fmt::format("- host {} ({}), {}\n", str(prov, "host"), str(prov, "os"), str(prov, "timestamp_utc"));
  m << fmt::format("- toolkit: CUDA headers {}, NVRTC {}\n", str(prov.at("toolkit"), "cuda_headers"), str(prov.at("toolkit"), "nvrtc"));
  if (!prov.at("gpu").is_null())
    m << fmt::format("- GPU: {} ({}, {} SMs, L2 {} MiB), driver API {}{}\n", str(prov.at("gpu"), "name"), str(prov.at("gpu"), "arch"),
                     prov.at("gpu").value("sms", 0), prov.at("gpu").value("l2_bytes", 0) >> 20,
                     str(prov.at("driver"), "cuda_driver_api_version"),
                     prov.at("driver").contains("nvidia_driver") ? ", NVIDIA driver " + str(prov.at("driver"), "nvidia_driver") : "");
  else
    m << "- GPU: none available to this run\n";
  return m.str();
}

}  // namespace kqual::report
