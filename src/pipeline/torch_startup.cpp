// kqual startup-torch (torch_startup.hpp): fresh Python processes, each one PyTorch first request;
// summaries per loading mode; per profile, the service those starts feed; results written at the end.
#include "kqual/pipeline/torch_startup.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/process.hpp"
#include "kqual/core/self.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/pipeline/screen_slurm.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kPhases = {"process_start", "import_torch",  "context",       "first_matmul",  "first_conv",
                                          "steady_matmul", "steady_conv",   "first_request", "warm_step"};

// What a service's new process pays before its first step is served warm: the interpreter's start,
// import, context, and what the first matmul and conv cost beyond a warm one.
double cold_start_ms(const std::map<std::string, double>& ph) {
  auto at = [&](const char* k) { auto it = ph.find(k); return it == ph.end() ? 0.0 : it->second; };
  return at("process_start") + at("import_torch") + at("context") + std::max(0.0, at("first_matmul") - at("steady_matmul")) +
         std::max(0.0, at("first_conv") - at("steady_conv"));
}

struct Sample {
  bool ok = false;
  std::string failure;
  std::map<std::string, double> phases;
  json raw;
};

Sample to_sample(const ProcessResult& p, double watchdog_s) {
  Sample s;
  if (p.timed_out) {
    s.failure = fmt::format("hung: no result within the {:g} s watchdog, process group killed", watchdog_s);
    return s;
  }
  if (p.signal) {
    s.failure = fmt::format("crashed ({})", signal_name(p.signal));
    return s;
  }
  const std::size_t at = p.out.rfind("\n{");
  const std::string line = p.out.substr(at == std::string::npos ? 0 : at + 1);
  try {
    s.raw = json::parse(line);
  } catch (const std::exception&) {
    const std::string err = p.err.size() > 600 ? p.err.substr(p.err.size() - 600) : p.err;
    s.failure = fmt::format("exit {} without a result line; stderr: {}", p.exit_code, err);
    return s;
  }
  if (!s.raw.value("ok", false)) {
    s.failure = s.raw.value("error", std::string("failed without a message"));
    return s;
  }
  for (const auto& [k, v] : s.raw.at("phases").items()) s.phases[k] = v.get<double>();
  s.ok = true;
  return s;
}

struct Mode {
  startup::LoadingMode loading;
  std::vector<Sample> samples;
  std::vector<double> first_request_ms, warm_step_ms, cold_start_ms;
};

fs::path probe_script(const TorchStartupOptions& o) {
  if (!o.script.empty()) return o.script;
  const auto tools = find_project_folder("tools/torch");
  if (!tools || !fs::exists(*tools / "startup_probe.py"))
    throw_error(ErrorKind::input, "tools/torch/startup_probe.py not found ($KQUAL_HOME/tools/torch, or a folder above the kqual "
                                  "executable)");
  return *tools / "startup_probe.py";
}

// The fresh processes: run i of every loading mode before run i + 1 of any. Returns the reason when
// the first process says there is no GPU or no PyTorch (nothing else runs then).
std::string run_processes(const TorchStartupOptions& o, const fs::path& script, const fs::path& tmp, std::vector<Mode>& modes) {
  const std::vector<std::string> args = {script.string(), "--matmul", o.matmul, "--conv", o.conv, "--dtype", o.dtype,
                                         "--steady", std::to_string(o.steady)};
  for (int run = 0; run < o.runs; ++run)
    for (Mode& m : modes) {
      const fs::path cache = tmp / fmt::format("cache-{}-{}", startup::to_string(m.loading), run);
      const std::map<std::string, std::string> env = {{"CUDA_MODULE_LOADING", startup::to_string(m.loading)},
                                                      {"CUDA_CACHE_PATH", cache.string()},
                                                      {"CUDA_CACHE_DISABLE", "0"}};
      if (o.progress) o.progress(fmt::format("run {}/{}: {} loading", run + 1, o.runs, startup::to_string(m.loading)));
      Sample s = to_sample(run_process(o.python, args, env, startup::probe_unset_variables(), o.watchdog_s, "--spawn-ns"),
                           o.watchdog_s);
      std::error_code ec;
      fs::remove_all(cache, ec);
      if (!s.ok && s.raw.is_object() && (s.raw.value("no_gpu", false) || s.raw.value("no_torch", false))) return s.failure;
      if (s.ok) {
        m.first_request_ms.push_back(s.phases.at("first_request"));
        m.warm_step_ms.push_back(s.phases.at("warm_step"));
        m.cold_start_ms.push_back(cold_start_ms(s.phases));
      }
      m.samples.push_back(std::move(s));
    }
  return "";
}

json summary_or_null(const std::vector<double>& v) { return v.empty() ? json() : stats::to_json(stats::summarize(v)); }

json mode_json(const Mode& m) {
  json phases = json::object();
  for (const auto& ph : kPhases) {
    std::vector<double> v;
    for (const auto& s : m.samples)
      if (s.ok && s.phases.count(ph)) v.push_back(s.phases.at(ph));
    phases[ph] = summary_or_null(v);
  }
  phases["cold_start"] = summary_or_null(m.cold_start_ms);
  json failures = json::array(), samples = json::array();
  for (const auto& s : m.samples) {
    if (!s.ok) failures.push_back(s.failure);
    samples.push_back(s.ok ? json{{"ok", true}, {"phases", s.raw.at("phases")}} : json{{"ok", false}, {"failure", s.failure}});
  }
  return json{{"loading", startup::to_string(m.loading)},
              {"runs", m.samples.size()},
              {"failures", failures},
              {"phases_ms", phases},
              {"samples", samples}};
}

// Per profile: the service compare's service view simulates, with OLD = the same processes starting
// warm (no cold start: the step served at once) and NEW = the measured cold starts. Its objectives
// then say what the framework's first request costs the service.
json service_for(const Mode& m, const decision::DeploymentProfile& p) {
  if (m.cold_start_ms.empty()) return json{{"computed", false}, {"reason", "no successful process in this loading mode"}};
  compare::StartupMode sm;
  sm.cache = p.jit_cache;
  sm.loading = m.loading;
  sm.side[0].base_ms.assign(m.cold_start_ms.size(), 0.0);
  sm.side[1].base_ms = m.cold_start_ms;
  compare::WarmShape warm;
  warm.shape = "one step (matmul + conv)";
  warm.side[0].pooled = m.warm_step_ms;
  warm.side[1].pooled = m.warm_step_ms;
  decision::Decision unused;
  compare::ServiceViewOptions so;
  so.requests = 50000;
  so.bootstrap = 200;
  json v = compare::service_view({sm}, warm, p, unused, so);
  v["sides"] = {{"old", "the same service with processes that start warm (no cold start)"},
                {"new", "the measured PyTorch cold starts (process start, import, context, first matmul and conv beyond warm)"}};
  return v;
}

void write_samples(const fs::path& dir, const std::string& name, const std::vector<double>& v) {
  std::string text;
  for (double x : v) text += fmt::format("{:.4f}\n", x);
  write_file_atomic(dir / name, text);
}

}  // namespace

TorchStartupOutcome run_torch_startup(const TorchStartupOptions& o) {
  if (o.runs < 2) throw_error(ErrorKind::usage, "--runs must be at least 2");
  if (o.steady < 1) throw_error(ErrorKind::usage, "--steady must be at least 1");
  if (o.loading_modes.empty()) throw_error(ErrorKind::usage, "no loading mode selected");
  // The step's sizes, refused here rather than in every process.
  const auto check_sizes = [](const char* opt, const std::string& v, std::size_t count) {
    std::vector<std::string> parts(1);
    for (char c : v) {
      if (c == ',') parts.emplace_back();
      else parts.back().push_back(c);
    }
    bool ok = parts.size() == count;
    for (const auto& p : parts)
      ok = ok && !p.empty() && p.size() <= 9 && p.find_first_not_of("0123456789") == std::string::npos && std::stol(p) > 0;
    if (!ok) throw_error(ErrorKind::usage, fmt::format("--{} '{}' is not {} positive integers separated by commas", opt, v, count));
  };
  check_sizes("matmul", o.matmul, 3);
  check_sizes("conv", o.conv, 6);
  if (o.dtype != "f32" && o.dtype != "bf16" && o.dtype != "f16")
    throw_error(ErrorKind::usage, fmt::format("--dtype '{}' is not f32, bf16 or f16", o.dtype));
  const std::vector<decision::DeploymentProfile> profiles = decision::load_profiles_or_default(o.profiles);
  const fs::path script = probe_script(o);
  TorchStartupOptions resolved = o;
  if (o.python.find('/') == std::string::npos) {
    resolved.python = find_on_path(o.python, std::getenv("PATH"));
    if (resolved.python.empty())
      throw_error(ErrorKind::input, fmt::format("--python {}: not found on PATH (name the interpreter with PyTorch)", o.python));
  }

  std::string tmpl = (fs::temp_directory_path() / "kqual-startup-torch-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw_error(ErrorKind::io, "cannot create a temporary folder for the JIT caches");
  const fs::path tmp = tmpl;
  std::vector<Mode> modes;
  for (auto l : o.loading_modes) modes.push_back(Mode{l, {}, {}, {}, {}});
  std::string unavailable;
  try {
    unavailable = run_processes(resolved, script, tmp, modes);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);

  json r = schema_header("startup_torch");
  r["provenance"] = report::provenance(o.command_line, json());
  r["step"] = {{"matmul", o.matmul}, {"conv", o.conv}, {"dtype", o.dtype}, {"steady_calls", o.steady}};
  r["probe"] = {{"python", resolved.python}, {"script", script.string()}};
  r["runs_per_mode"] = o.runs;
  r["modes"] = json::array();
  r["service"] = json::array();
  r["notes"] = json::array();
  r["what_ran"] = json::object();
  TorchStartupOutcome out;
  if (!unavailable.empty()) {
    r["summary"] = "Not measured: " + unavailable;
    r["not_run"] = json::array({"every phase: " + unavailable});
    out.exit_code = kExitIncomplete;
  } else {
    std::size_t failed = 0;
    for (const Mode& m : modes) {
      r["modes"].push_back(mode_json(m));
      for (const auto& s : m.samples) {
        if (!s.ok) ++failed;
        if (s.ok && r["what_ran"].empty())
          r["what_ran"] = {{"device", s.raw.value("device", json())}, {"versions", s.raw.value("versions", json())},
                           {"mapped", s.raw.value("mapped", json())}};
      }
      for (const auto& p : profiles)
        r["service"].push_back({{"profile", p.name}, {"loading", startup::to_string(m.loading)}, {"view", service_for(m, p)}});
    }
    const Mode& first = modes.front();
    r["summary"] = first.first_request_ms.empty()
                       ? std::string("every process failed: see the failures")
                       : fmt::format("first request {:.0f} ms against a warm step of {:.2f} ms ({} loading, medians): a new "
                                     "process pays {:.0f} ms before it serves",
                                     stats::median(first.first_request_ms), stats::median(first.warm_step_ms),
                                     startup::to_string(first.loading), stats::median(first.cold_start_ms));
    if (failed) r["notes"].push_back(fmt::format("{} process(es) failed (listed per mode)", failed));
    out.exit_code = failed ? kExitFail : kExitPass;
  }
  out.results = r;
  out.memo = report::render_torch_startup_memo(r);
  const Written w = write_results(o.out_dir, out.results, {{"memo.md", out.memo}});
  for (const Mode& m : modes) {
    const std::string tag = startup::to_string(m.loading);
    if (m.cold_start_ms.empty()) continue;
    write_samples(o.out_dir, fmt::format("first_request_{}_ms.txt", tag), m.cold_start_ms);
    write_samples(o.out_dir, fmt::format("warm_step_{}_ms.txt", tag), m.warm_step_ms);
  }
  out.results_path = w.results;
  out.memo_path = w.files.at(0);
  return out;
}

}  // namespace kqual::pipeline
