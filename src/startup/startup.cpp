// Coordinator side of `kqual startup`: never touches CUDA. It prepares pinned environments and
// cache directories, runs probe processes interleaved across modes, and summarises.
#include "kqual/startup/startup.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/core/process.hpp"

namespace kqual::startup {
namespace fs = std::filesystem;
namespace {

// CUDA_MODULE_LOADING's values.
constexpr EnumNames<LoadingMode, 2> kLoadingModeNames{{{{LoadingMode::lazy, "LAZY"}, {LoadingMode::eager, "EAGER"}}}};

std::vector<std::uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorKind::input, fmt::format("kqual startup: cannot read artifact {}", path));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// By content, not by name: ELF → cubin, fatbin container magic → fatbin, PTX directives → ptx.
std::string artifact_kind(const std::string& path, const std::vector<std::uint8_t>& b) {
  if (fs::path(path).extension() == ".cu") return "cu";
  if (b.size() >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') return "cubin";
  if (b.size() >= 4 && b[0] == 0x50 && b[1] == 0xED && b[2] == 0x55 && b[3] == 0xBA) return "fatbin";
  const std::string_view text(reinterpret_cast<const char*>(b.data()), b.size());
  if (text.find(".version") != std::string_view::npos && text.find(".target") != std::string_view::npos) return "ptx";
  return "";
}

// Scoped temporary directory holding every cache directory of a run; removed on every exit path.
class TempRoot {
 public:
  explicit TempRoot(const std::string& base) {
    std::string b = base;
    if (b.empty()) b = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    std::string templ = (fs::path(b) / "kqual-startup-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw_error(ErrorKind::io, fmt::format("cannot create a temporary directory under {}", b));
    path_ = templ;
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempRoot(const TempRoot&) = delete;
  TempRoot& operator=(const TempRoot&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Names removed from every probe's environment: each would change what the driver does at load.
const std::vector<std::string> kUnset = {"CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE",
                                         "CUDA_MODULE_LOADING", "CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT",
                                         "CUDA_LAUNCH_BLOCKING", "CUDA_INJECTION64_PATH"};

struct Slot {
  ModeResult result;
  fs::path warm_dir;
  int consecutive_failures = 0;
};

std::map<std::string, std::string> environment_for(const Slot& s, const fs::path& root, int run) {
  std::map<std::string, std::string> env{{"CUDA_MODULE_LOADING", to_string(s.result.loading)}};
  const std::string tag = fmt::format("{}-{}", to_string(s.result.cache), to_string(s.result.loading));
  switch (s.result.cache) {
    case CacheMode::off:
      env["CUDA_CACHE_DISABLE"] = "1";
      env["CUDA_CACHE_PATH"] = (root / (tag + "-unused")).string();  // never the user's cache
      break;
    case CacheMode::cold: env["CUDA_CACHE_PATH"] = (root / fmt::format("{}-{}", tag, run)).string(); break;
    case CacheMode::warm: env["CUDA_CACHE_PATH"] = s.warm_dir.string(); break;
  }
  env["CUDA_CACHE_DISABLE"] = s.result.cache == CacheMode::off ? "1" : "0";
  return env;
}

std::vector<std::string> probe_args(const StartupConfig& cfg, const std::string& image, const std::string& kernel) {
  std::vector<std::string> a{"__startup-probe", "--artifact", image};
  if (!kernel.empty()) a.insert(a.end(), {"--kernel", kernel});
  if (cfg.launch) a.push_back("--launch");
  a.insert(a.end(), {"--grid", std::to_string(cfg.grid), "--block", std::to_string(cfg.block), "--steady",
                     std::to_string(cfg.steady_launches)});
  if (!cfg.simulate.empty()) a.insert(a.end(), {"--simulate", cfg.simulate});
  if (cfg.library) {
    a.insert(a.end(), {"--library", image, "--library-api", cfg.library_api, "--library-dtype", cfg.library_dtype});
    for (const auto& sh : cfg.library_shapes) a.insert(a.end(), {"--library-shape", sh});
  }
  return a;
}

// Turns a finished process into a sample: a crash, a hang, a bad exit or unparsable output is a
// recorded failure with its reason.
ProbeSample to_sample(const ProcessResult& p, double watchdog_s) {
  ProbeSample s;
  auto tail = [&] {
    std::string e = p.err.size() > 600 ? p.err.substr(p.err.size() - 600) : p.err;
    while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
    return e.empty() ? std::string() : " — stderr: " + e;
  };
  s.raw = json{{"wall_s", p.wall_s}};
  if (p.timed_out) {
    s.failure = fmt::format("hung: no result within the {:g} s watchdog, process group killed", watchdog_s);
  } else if (p.signal) {
    s.failure = fmt::format("crashed ({}){}", signal_name(p.signal), tail());
  } else {
    json j;
    // The result is the last line that starts with '{' (anything else on stdout is ignored).
    std::string line;
    for (std::size_t end = p.out.size(); end > 0;) {
      const std::size_t start = p.out.rfind('\n', end - 1);
      const std::size_t b = start == std::string::npos ? 0 : start + 1;
      if (b < end && p.out[b] == '{') {
        line = p.out.substr(b, end - b);
        break;
      }
      if (start == std::string::npos) break;
      end = start;
    }
    try {
      j = json::parse(line);
    } catch (const std::exception&) {
      s.failure = fmt::format("exit {} without a result line{}", p.exit_code, tail());
      return s;
    }
    s.raw = j;
    s.raw["wall_s"] = p.wall_s;
    if (!j.value("ok", false)) {
      s.failure = "error: " + j.value("error", std::string("(no message)"));
      return s;
    }
    s.ok = true;
    if (j.contains("phases"))
      for (const auto& [k, v] : j["phases"].items()) s.phases[k] = v.get<double>();
    if (j.contains("skipped"))
      for (const auto& v : j["skipped"]) s.skipped.push_back(v.get<std::string>());
  }
  return s;
}

void summarise(ModeResult& m) {
  for (const auto& name : phase_names()) {
    auto v = m.phase_samples(name);
    if (!v.empty()) m.phases[name] = stats::summarize(v);
  }
}

}  // namespace

const char* to_string(LoadingMode m) { return kLoadingModeNames.name(m); }

const std::vector<std::string>& probe_unset_variables() { return kUnset; }

std::optional<LoadingMode> loading_mode_from_string(std::string_view s) {
  if (const auto m = kLoadingModeNames.parse(s)) return m;
  if (s == "lazy") return LoadingMode::lazy;  // the command line's spelling
  if (s == "eager") return LoadingMode::eager;
  return std::nullopt;
}

const std::vector<std::string>& phase_names() {
  static const std::vector<std::string> names{"process_start",   "driver_init",  "context",          "module_load",
                                              "jit_wall",        "function_lookup", "first_launch", "kernel_first_use",
                                              "first_use",       "steady_launch", "library_load", "handle",
                                              "first_call",      "steady_call"};
  return names;
}

std::vector<double> ModeResult::phase_samples(const std::string& phase) const {
  std::vector<double> v;
  for (const auto& s : samples)
    if (s.ok)
      if (auto it = s.phases.find(phase); it != s.phases.end()) v.push_back(it->second);
  return v;
}

const ModeResult* StartupReport::find(CacheMode c, LoadingMode l) const {
  for (const auto& m : modes)
    if (m.cache == c && m.loading == l) return &m;
  return nullptr;
}

std::vector<std::string> ptx_entries(std::string_view ptx) {
  std::vector<std::string> names;
  std::size_t pos = 0;
  while ((pos = ptx.find(".entry", pos)) != std::string_view::npos) {
    pos += 6;
    if (pos >= ptx.size() || !(ptx[pos] == ' ' || ptx[pos] == '\t')) continue;
    while (pos < ptx.size() && (ptx[pos] == ' ' || ptx[pos] == '\t')) ++pos;
    std::size_t end = pos;
    while (end < ptx.size() && (std::isalnum(static_cast<unsigned char>(ptx[end])) || ptx[end] == '_' || ptx[end] == '$'))
      ++end;
    if (end > pos) names.emplace_back(ptx.substr(pos, end - pos));
    pos = end;
  }
  return names;
}

namespace {

using Say = std::function<void(const std::string&)>;

void check_startup_config(const StartupConfig& cfg) {
  if (cfg.runs < 1) throw_error(ErrorKind::usage, fmt::format("kqual startup: --runs must be >= 1, got {}", cfg.runs));
  if (cfg.cache_modes.empty() || cfg.loading_modes.empty()) throw_error(ErrorKind::usage, "kqual startup: no mode selected");
  if (fs::is_directory(cfg.artifact))
    throw_error(ErrorKind::unsupported,
                fmt::format("kqual startup: {} is a directory; candidate directories (manifest + source) are not supported "
                            "by this version yet — pass a cubin, fatbin or PTX file, or a .cu source with --compile",
                            cfg.artifact));
}

// The artifact's bytes, with its identity (size, SHA-256, kind) recorded in `rep`.
std::vector<std::uint8_t> identify_artifact(const StartupConfig& cfg, StartupReport& rep) {
  std::vector<std::uint8_t> bytes = read_all(cfg.artifact);
  rep.artifact_bytes = bytes.size();
  rep.artifact_sha256 = sha256_hex(bytes.data(), bytes.size());
  if (cfg.library) {
    if (cfg.library_shapes.empty())
      throw_error(ErrorKind::usage, fmt::format("kqual startup: library {} needs at least one shape to call", cfg.artifact));
    rep.artifact_kind = "library";
    return {};  // the probe dlopens the file itself
  }
  rep.artifact_kind = artifact_kind(cfg.artifact, bytes);
  if (rep.artifact_kind.empty())
    throw_error(ErrorKind::input, fmt::format("kqual startup: {} is neither a cubin (ELF), a fatbin (magic 0xBA55ED50) "
                                              "nor PTX text (.version/.target)", cfg.artifact));
  if (rep.artifact_kind == "cu" && !cfg.compile)
    throw_error(ErrorKind::usage, fmt::format("kqual startup: {} is CUDA source; pass --compile (NVRTC, timed apart from loading)", cfg.artifact));
  return bytes;
}

// Build-time compilation, in its own fresh processes: never part of a load time.
CompileTiming time_compilation(const StartupConfig& cfg, const Say& say) {
  CompileTiming ct;
  ct.source = cfg.artifact;
  ct.arch = cfg.arch;
  const int n = cfg.compile_runs > 0 ? cfg.compile_runs : std::min(cfg.runs, 10);
  for (int i = 0; i < n; ++i) {
    say(fmt::format("compile {}/{} (NVRTC, {})", i + 1, n, cfg.arch));
    std::vector<std::string> args{"__startup-probe", "--compile", cfg.artifact, "--arch", cfg.arch};
    if (!cfg.simulate.empty()) args.insert(args.end(), {"--simulate", cfg.simulate});
    const ProbeSample s = to_sample(run_process(cfg.probe_executable, args, {}, {}, cfg.watchdog_s), cfg.watchdog_s);
    if (!s.ok) {
      ++ct.failures;
      ct.failure_messages.push_back(s.failure);
      if (ct.failures >= std::size_t(cfg.max_consecutive_failures) && ct.nvrtc_ms.empty()) break;
      continue;
    }
    ct.nvrtc_ms.push_back(s.raw.value("nvrtc_ms", 0.0));
    ct.total_ms.push_back(s.raw.value("total_ms", 0.0));
    ct.nvrtc_version = s.raw.value("nvrtc_version", std::string());
  }
  if (!ct.nvrtc_ms.empty()) {
    ct.nvrtc = stats::summarize(ct.nvrtc_ms);
    ct.total = stats::summarize(ct.total_ms);
  }
  return ct;
}

// What the probes load and look up.
struct LoadTarget {
  std::string image_path;
  std::string kernel;  // "" → function lookup and launches are not measured
};

// A .cu compiled once more here (NVRTC needs no driver) into `root`; the kernel named by its
// lowered name, else the first .entry of the PTX it became.
LoadTarget compile_load_image(const StartupConfig& cfg, const std::vector<std::uint8_t>& source, const fs::path& root,
                              StartupReport& rep) {
  LoadTarget t{"", cfg.kernel};
  cuda::NvrtcRequest req;
  req.source.assign(source.begin(), source.end());
  req.source_name = cfg.artifact;
  req.arch = cfg.arch;
  if (!t.kernel.empty()) req.name_expressions.push_back(t.kernel);
  const cuda::NvrtcResult res = cuda::nvrtc_compile(req);
  if (!t.kernel.empty()) {
    t.kernel = res.lowered_name(cfg.kernel);
    rep.kernel_source = fmt::format("--kernel {} (lowered by NVRTC)", cfg.kernel);
  } else if (!res.is_cubin) {
    const auto e = ptx_entries(res.ptx);
    if (!e.empty()) {
      t.kernel = e.front();
      rep.kernel_source = "first .entry in the compiled PTX";
    }
  }
  t.image_path = (root / (res.is_cubin ? "image.cubin" : "image.ptx")).string();
  std::ofstream(t.image_path, std::ios::binary).write(reinterpret_cast<const char*>(res.image.data()), std::streamsize(res.image.size()));
  rep.loaded_image_sha256 = sha256_hex(res.image.data(), res.image.size());
  return t;
}

// The artifact file itself; without --kernel, a PTX's first .entry.
LoadTarget artifact_load_image(const StartupConfig& cfg, const std::vector<std::uint8_t>& bytes, StartupReport& rep) {
  LoadTarget t{cfg.artifact, cfg.kernel};
  rep.loaded_image_sha256 = rep.artifact_sha256;
  if (t.kernel.empty() && rep.artifact_kind == "ptx") {
    const auto e = ptx_entries(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (!e.empty()) {
      t.kernel = e.front();
      rep.kernel_source = "first .entry in the PTX";
    }
  }
  return t;
}

void note_unmeasured_phases(const StartupConfig& cfg, StartupReport& rep) {
  if (cfg.library) return;  // a library probe calls the library: there is no kernel to name
  if (rep.kernel.empty())
    rep.notes.push_back("no kernel named: function lookup and launches were not measured (name one with --kernel; "
                        "reading kernel names out of cubins and fatbins belongs to the artifact parser and is not wired in yet)");
  else if (!cfg.launch)
    rep.notes.push_back("first launch and steady launches not measured: kqual launches only kernels you declare "
                        "parameter-free with --launch-args none (it cannot know what an unknown kernel's pointers need)");
}

// One slot per (loading mode, cache mode); a warm slot has its own cache directory.
std::vector<Slot> make_slots(const StartupConfig& cfg, const fs::path& root) {
  std::vector<Slot> slots;
  for (auto l : cfg.loading_modes)
    for (auto c : cfg.cache_modes) {
      Slot s;
      s.result.cache = c;
      s.result.loading = l;
      if (c == CacheMode::warm) s.warm_dir = root / fmt::format("warm-{}", to_string(l));
      slots.push_back(std::move(s));
    }
  return slots;
}

// Runs one probe process of a slot in its pinned environment; a cold run's cache is removed after
// it (run < 0: a discarded preflight run, whose cache stays).
class ProbeRunner {
 public:
  ProbeRunner(const StartupConfig& cfg, const fs::path& root, const LoadTarget& target)
      : cfg_(cfg), root_(root), args_(probe_args(cfg, target.image_path, target.kernel)) {}

  ProbeSample run(const Slot& s, int run) const {
    const auto env = environment_for(s, root_, run);
    ProbeSample sample =
        to_sample(run_process(cfg_.probe_executable, args_, env, kUnset, cfg_.watchdog_s, "--spawn-ns"), cfg_.watchdog_s);
    if (run >= 0 && s.result.cache == CacheMode::cold) fs::remove_all(env.at("CUDA_CACHE_PATH"));
    return sample;
  }
  const fs::path& root() const { return root_; }

 private:
  const StartupConfig& cfg_;
  fs::path root_;
  std::vector<std::string> args_;
};

// True, with the reason kept in `rep`, when the probe found no GPU.
bool found_no_gpu(const ProbeSample& p, StartupReport& rep) {
  if (p.ok || !p.raw.value("no_gpu", false)) return false;
  rep.gpu_unavailable = p.raw.value("error", std::string("no GPU"));
  return true;
}

// Preflight: the first warm pre-population doubles as the GPU check (or one discarded cold run).
// Returns whether a GPU answered.
bool preflight(std::vector<Slot>& slots, const ProbeRunner& runner, StartupReport& rep, const Say& say) {
  bool any_warm = false;
  for (auto& s : slots) {
    if (s.result.cache != CacheMode::warm) continue;
    any_warm = true;
    fs::create_directories(s.warm_dir);
    say(fmt::format("populate the warm JIT cache ({} loading), discarded", to_string(s.result.loading)));
    const ProbeSample p = runner.run(s, -1);
    if (found_no_gpu(p, rep)) return false;
    if (!p.ok) rep.notes.push_back(fmt::format("warm-cache population ({}) failed: {}", to_string(s.result.loading), p.failure));
  }
  if (any_warm) return true;
  return !found_no_gpu(runner.run(slots.front(), -1), rep);
}

// The environment a slot's probes ran in, as the report shows it: per-run folders described, and
// every removed variable listed as unset.
std::map<std::string, std::string> reported_environment(const Slot& s, const fs::path& root, int run) {
  std::map<std::string, std::string> env = environment_for(s, root, run);
  if (s.result.cache == CacheMode::cold) env["CUDA_CACHE_PATH"] = "<a fresh empty directory per process>";
  if (s.result.cache == CacheMode::warm) env["CUDA_CACHE_PATH"] = "<one directory, populated by a discarded run first>";
  for (const auto& u : kUnset)
    if (!env.count(u)) env[u] = "<unset>";
  return env;
}

// Interleaved: run i of every mode before run i + 1 of any, so drift spreads over all modes. A mode
// gives up after max_consecutive_failures with no success. Returns false when the GPU went away.
bool run_interleaved(const StartupConfig& cfg, std::vector<Slot>& slots, const ProbeRunner& runner, StartupReport& rep,
                     const Say& say) {
  for (int run = 0; run < cfg.runs; ++run) {
    bool gpu = true;
    for (auto& s : slots) {
      if (!s.result.gave_up.empty()) continue;
      say(fmt::format("run {}/{}: cache {}, {} loading", run + 1, cfg.runs, to_string(s.result.cache), to_string(s.result.loading)));
      ProbeSample p = runner.run(s, run);
      if (found_no_gpu(p, rep)) gpu = false;
      s.consecutive_failures = p.ok ? 0 : s.consecutive_failures + 1;
      if (!p.ok) ++s.result.failures;
      if (s.result.environment.empty()) s.result.environment = reported_environment(s, runner.root(), run);
      if (p.ok && rep.device.is_null() && p.raw.contains("device")) rep.device = p.raw["device"];
      s.result.samples.push_back(std::move(p));
      if (s.consecutive_failures >= cfg.max_consecutive_failures && s.result.samples.size() == s.result.failures)
        s.result.gave_up = fmt::format("gave up after {} consecutive failures with no success", s.consecutive_failures);
    }
    if (!gpu) return false;
  }
  return true;
}

}  // namespace

StartupReport measure_startup(const StartupConfig& cfg) {
  const Say say = [&](const std::string& s) {
    if (cfg.progress) cfg.progress(s);
  };
  check_startup_config(cfg);
  StartupReport rep;
  rep.artifact = cfg.artifact;
  rep.launch = cfg.launch;
  const std::vector<std::uint8_t> bytes = identify_artifact(cfg, rep);

  TempRoot root(cfg.temp_root);
  rep.kernel_source = cfg.kernel.empty() ? "" : "--kernel";
  LoadTarget target;
  if (rep.artifact_kind == "cu") {
    rep.compile = time_compilation(cfg, say);
    target = compile_load_image(cfg, bytes, root.path(), rep);
  } else {
    target = artifact_load_image(cfg, bytes, rep);
  }
  rep.kernel = target.kernel;
  note_unmeasured_phases(cfg, rep);

  std::vector<Slot> slots = make_slots(cfg, root.path());
  const ProbeRunner runner(cfg, root.path(), target);
  rep.gpu_ran = preflight(slots, runner, rep, say) && run_interleaved(cfg, slots, runner, rep, say);
  if (!rep.gpu_ran) {
    rep.notes.push_back("no GPU phase ran: " + rep.gpu_unavailable +
                        " — driver init, context, module load, function lookup and launches need a GPU");
    slots.clear();
  }
  for (auto& s : slots) {
    summarise(s.result);
    rep.failed_probes += s.result.failures;
    rep.modes.push_back(std::move(s.result));
  }
  if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES")) rep.notes.push_back(fmt::format("CUDA_VISIBLE_DEVICES={} (passed through)", vis));
  return rep;
}

json to_json(const StartupReport& r) {
  json j = schema_header("startup");
  j["artifact"] = {{"path", r.artifact}, {"kind", r.artifact_kind}, {"bytes", r.artifact_bytes},
                   {"sha256", r.artifact_sha256}, {"loaded_image_sha256", r.loaded_image_sha256}};
  j["kernel"] = {{"name", r.kernel}, {"chosen_by", r.kernel_source}, {"launch", r.launch}};
  j["gpu"] = {{"ran", r.gpu_ran}, {"unavailable_reason", r.gpu_unavailable}, {"device", r.device}};
  if (r.compile) {
    const auto& c = *r.compile;
    j["compile"] = {{"source", c.source},     {"arch", c.arch},         {"nvrtc_version", c.nvrtc_version},
                    {"nvrtc_ms", c.nvrtc_ms}, {"total_ms", c.total_ms}, {"failures", c.failures},
                    {"failure_messages", c.failure_messages}};
    if (c.nvrtc) j["compile"]["nvrtc_summary_ms"] = stats::to_json(*c.nvrtc);
    if (c.total) j["compile"]["total_summary_ms"] = stats::to_json(*c.total);
  } else {
    j["compile"] = nullptr;
  }
  json modes = json::array();
  for (const auto& m : r.modes) {
    json mj{{"cache", to_string(m.cache)}, {"loading", to_string(m.loading)}, {"environment", m.environment},
            {"runs", m.samples.size()},    {"failures", m.failures},         {"gave_up", m.gave_up}};
    json ph = json::object();
    for (const auto& [k, s] : m.phases) ph[k] = stats::to_json(s);
    mj["phases_ms"] = ph;
    json samples = json::array();
    for (const auto& s : m.samples) {
      json sj{{"ok", s.ok}, {"phases_ms", s.phases}, {"skipped", s.skipped}};
      if (!s.ok) sj["failure"] = s.failure;
      if (s.raw.contains("jit_wall_reported")) sj["jit_wall_reported"] = s.raw["jit_wall_reported"];
      if (s.raw.contains("loading_mode_applied")) sj["loading_mode_applied"] = s.raw["loading_mode_applied"];
      samples.push_back(sj);
    }
    mj["samples"] = samples;
    modes.push_back(mj);
  }
  j["modes"] = modes;
  j["failed_probes"] = r.failed_probes;
  j["notes"] = r.notes;
  return j;
}

namespace {

// One line of a summary in the text report: "median    1.234  p90    2.345  min ... ms".
std::string summary_ms(const stats::Summary& p) {
  return fmt::format("median {:9.3f}  p90 {:9.3f}  min {:9.3f}  max {:9.3f} ms", p.median, p.p90, p.min, p.max);
}

}  // namespace

std::string to_text(const StartupReport& r) {
  std::string s = fmt::format("artifact  {} ({}, {} bytes, sha256 {})\n", r.artifact, r.artifact_kind, r.artifact_bytes,
                              r.artifact_sha256.substr(0, 16));
  s += fmt::format("kernel    {}\n", r.kernel.empty() ? "(none)" : r.kernel + "  [" + r.kernel_source + "]");
  if (!r.device.is_null())
    s += fmt::format("device    {} ({}), driver {}\n", r.device.value("name", "?"), r.device.value("arch", "?"),
                     r.device.value("driver_version", 0));
  if (r.compile) {
    const auto& c = *r.compile;
    s += fmt::format("\nbuild-time compile (NVRTC {}, {}; fresh processes, not part of any load time)\n", c.nvrtc_version, c.arch);
    if (c.nvrtc) s += fmt::format("  nvrtcCompileProgram  {}  (n={})\n", summary_ms(*c.nvrtc), c.nvrtc->n);
    if (c.total) s += fmt::format("  create→image         {}\n", summary_ms(*c.total));
    for (const auto& f : c.failure_messages) s += "  failed: " + f + "\n";
  }
  if (!r.gpu_ran) s += fmt::format("\nGPU phases NOT run: {}\n", r.gpu_unavailable);
  for (const auto& m : r.modes) {
    s += fmt::format("\nJIT cache {:<4}  loading {:<5}  ({} runs, {} failed{})\n", to_string(m.cache), to_string(m.loading), m.samples.size(),
                     m.failures, m.gave_up.empty() ? "" : "; " + m.gave_up);
    for (const auto& name : phase_names()) {
      auto it = m.phases.find(name);
      if (it == m.phases.end()) continue;
      s += fmt::format("  {:<17} {}\n", name, summary_ms(it->second));
    }
    std::size_t shown = 0;
    for (const auto& smp : m.samples)
      if (!smp.ok && shown++ < 3) s += "  failure: " + smp.failure + "\n";
  }
  if (!r.notes.empty()) {
    s += "\nnotes:\n";
    for (const auto& n : r.notes) s += "  - " + n + "\n";
  }
  return s;
}

}  // namespace kqual::startup
