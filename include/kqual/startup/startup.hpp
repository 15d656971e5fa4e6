#pragma once
// Startup evidence (the second kind of evidence): what a fresh process pays before a kernel's first
// result, phase by phase, over many fresh processes and several pinned driver environments.
//
// The coordinating process never touches CUDA. Each sample is a fresh process: this binary
// re-executed with the hidden `__startup-probe` subcommand, which times its own phases with
// CLOCK_MONOTONIC and prints one JSON line. A probe that crashes or hangs (watchdog) becomes a
// recorded failure. Build-time compilation (NVRTC) is timed in its own fresh processes and is never
// part of a load time. docs/startup.md describes the phases, modes and the JSON.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/core/jit_cache.hpp"
#include "kqual/stats/summary.hpp"

namespace kqual::startup {

using kqual::CacheMode;

enum class LoadingMode { lazy, eager };  // CUDA_MODULE_LOADING
const char* to_string(LoadingMode m);    // "LAZY", "EAGER"
// to_string's words, or "lazy" / "eager"; nullopt for anything else.
std::optional<LoadingMode> loading_mode_from_string(std::string_view s);

// Phase names, in order, as they appear in JSON and text. Times are [ms].
//   process_start   exec of the probe → its main() (dynamic linking; the parent's clock at spawn)
//   driver_init     dlopen libcuda + entry-point lookup + cuInit + device count
//   context         cuDeviceGet + cuDevicePrimaryCtxRetain + cuCtxSetCurrent
//   module_load     cuModuleLoadDataEx of the in-memory image (file already read)
//   function_lookup cuModuleGetFunction (with LAZY loading, the function's code is loaded here)
//   first_launch    first cuLaunchKernel + cuCtxSynchronize
//   first_use       driver_init + context + module_load + function_lookup + first_launch
//   kernel_first_use module_load + function_lookup + first_launch (what the artifact itself costs)
//   steady_launch   median of launch + synchronize after the first
//   jit_wall        the driver's own CU_JIT_WALL_TIME for the load, where it compiled PTX
// A library probe (StartupConfig::library) has instead of module_load, function_lookup and launches:
//   library_load    dlopen of the named libcublas (and the libcublasLt beside it) + symbol lookup
//   handle          cublasCreate + its workspace, stream and math mode (kqual's LibraryCall set-up)
//   first_call      the first shape's first call + synchronize (lazy loading and heuristics land here)
//   steady_call     median of further calls + synchronize at the first shape
//   kernel_first_use library_load + handle + first_call
// Every later shape's first call is in the probe's JSON ("shapes") and ModeResult samples as
// "first_call[m,n,k]".
const std::vector<std::string>& phase_names();

// The environment variables removed from every probe process (each changes what the driver does at
// load: JIT cache, module loading, forced or disabled PTX JIT, launch blocking, injection).
const std::vector<std::string>& probe_unset_variables();

// One probe process's instructions (the child side).
struct ProbeRequest {
  std::string artifact;        // image file (cubin, fatbin, PTX) to load
  std::string kernel;          // symbol to look up; "" → function and launch phases skipped
  bool launch = false;         // launch it (only zero-parameter kernels; checked with the driver)
  unsigned grid = 1, block = 1;
  int steady_launches = 20;
  long long spawn_ns = 0;      // parent's CLOCK_MONOTONIC at spawn, 0 = unknown
  // Build-time compile instead of a load: NVRTC on this .cu for `arch`; nothing touches the driver.
  std::string compile_source;
  std::string arch = "sm_90";
  std::string simulate;        // tests only: "crash" (SIGSEGV) or "hang"
  // A library's first request instead of a module load (kqual compare OLD.so NEW.so): dlopen this
  // libcublas, create the handle, then the first call of each "m,n,k" in order, each in `library_dtype`.
  std::string library;
  std::string library_api = "cublas";  // "cublas" (cublasSgemm_v2 / cublasGemmEx) or "cublaslt" (cublasLtMatmul)
  std::string library_dtype = "f32";
  std::vector<std::string> library_shapes;
};

// Runs the probe in this process and returns its JSON (never throws: failures are in the JSON,
// {"ok": false, "error": ..., "no_gpu": true|false}).
json run_probe(const ProbeRequest& req);

struct ProbeSample {
  bool ok = false;
  std::string failure;                   // "crashed (SIGSEGV)", "hung: killed after 60 s", "error: ..."
  std::map<std::string, double> phases;  // [ms] phases that ran
  std::vector<std::string> skipped;      // "first_launch: kernel takes parameters", ...
  json raw;                              // the probe's JSON (or what is known of a failed probe)
};

struct ModeResult {
  CacheMode cache = CacheMode::cold;
  LoadingMode loading = LoadingMode::lazy;
  std::map<std::string, std::string> environment;  // pinned for every probe of this mode
  std::vector<ProbeSample> samples;                // successes and failures, in run order
  std::map<std::string, stats::Summary> phases;    // over successful samples
  std::size_t failures = 0;
  std::string gave_up;                             // non-empty when the mode stopped early
  std::vector<double> phase_samples(const std::string& phase) const;  // [ms] of the successes
};

struct CompileTiming {
  std::string source;
  std::string arch;
  std::vector<double> nvrtc_ms;       // [ms] nvrtcCompileProgram, one per fresh process
  std::vector<double> total_ms;       // [ms] program create → image in memory
  std::optional<stats::Summary> nvrtc, total;
  std::size_t failures = 0;
  std::vector<std::string> failure_messages;
  std::string nvrtc_version;
};

struct StartupConfig {
  std::string artifact;                // cubin/fatbin/PTX file, or .cu with compile = true
  bool compile = false;                // .cu: compile with NVRTC (timed apart), then load the result
  std::string arch = "sm_90";          // NVRTC target: sm_XX (SASS) or compute_XX (PTX only)
  std::string kernel;                  // name; "" → first .entry of a PTX, else phases skipped
  bool launch = false;                 // --launch-args none: launch a zero-parameter kernel
  unsigned grid = 1, block = 1;
  int runs = 20;                       // fresh processes per mode
  int compile_runs = 0;                // fresh compile processes; 0 → min(runs, 10)
  int steady_launches = 20;
  std::vector<CacheMode> cache_modes{CacheMode::off, CacheMode::cold, CacheMode::warm};
  std::vector<LoadingMode> loading_modes{LoadingMode::lazy, LoadingMode::eager};
  double watchdog_s = 60;              // per probe
  int max_consecutive_failures = 3;    // per mode, before giving up on it
  std::string probe_executable = "/proc/self/exe";  // a kqual binary (tests pass its path)
  std::string temp_root;               // where cache directories go; "" → $TMPDIR or /tmp
  std::string simulate;                // tests only, passed to every probe
  // artifact is a libcublas to call (its first request: load, handle, first call per shape) rather
  // than an image to load. The first shape is the first request's.
  bool library = false;
  std::string library_api = "cublas";       // or "cublaslt": the libcublasLt beside the named libcublas
  std::string library_dtype = "f32";
  std::vector<std::string> library_shapes;  // "m,n,k"
  std::function<void(const std::string&)> progress;  // one line per event, or empty
};

struct StartupReport {
  std::string artifact, artifact_kind, artifact_sha256;  // kind: cubin, fatbin, ptx, cu
  std::size_t artifact_bytes = 0;
  std::string loaded_image_sha256;     // what the probes loaded (the NVRTC output for a .cu)
  std::string kernel;                  // symbol the probes looked up ("" = none)
  std::string kernel_source;           // how it was chosen: "--kernel", "first .entry in the PTX", ...
  bool launch = false;
  bool gpu_ran = false;
  std::string gpu_unavailable;         // why the GPU phases could not run
  json device;                         // what a probe reported: name, arch, driver version
  std::optional<CompileTiming> compile;
  std::vector<ModeResult> modes;
  std::vector<std::string> notes;      // what was skipped and why
  std::size_t failed_probes = 0;
  const ModeResult* find(CacheMode c, LoadingMode l) const;
};

// Runs everything. Throws Error(input|unsupported) for a bad artifact or options; a missing GPU is
// not an error: gpu_ran = false with the reason (the CLI exits 3).
StartupReport measure_startup(const StartupConfig& cfg);

json to_json(const StartupReport& r);
std::string to_text(const StartupReport& r);

// Kernel entry names of a PTX text, in order (".entry NAME"); used when no --kernel is given.
std::vector<std::string> ptx_entries(std::string_view ptx);

}  // namespace kqual::startup
