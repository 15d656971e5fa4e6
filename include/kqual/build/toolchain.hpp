#pragma once
// Building one source candidate with a chosen toolchain, so two builds of the same kernel can be
// compared (kqual compare, docs/compare.md):
//   - NVRTC to native SASS (the default; build::build_candidate),
//   - NVRTC to PTX only (the driver JIT-compiles it at load time),
//   - NVRTC to PTX, then an external ptxas (e.g. the 12.8 one inside the Triton wheel) to a cubin,
//   - nvcc -cubin / -ptx on the source (another toolkit's whole front end).
// External tools run as subprocesses; their `--version` goes into the build's provenance.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/build/manifest.hpp"

namespace kqual::build {

enum class ImageMode {
  sass,  // native cubin for the target (sm_XX)
  ptx,   // PTX only (compute_XX): JIT-compiled by the driver when loaded
};
const char* to_string(ImageMode m);  // "sass", "ptx"
std::optional<ImageMode> image_mode_from_string(const std::string& s);

struct BuildRecipe {
  ImageMode mode = ImageMode::sass;
  std::string ptxas;  // "" = not used; "default" = the toolkit's; "triton" = discovered; else a path
  std::string nvcc;   // "" = not used; "default" = the toolkit's; else a path
  std::string describe() const;  // "NVRTC → sm_90 SASS", "NVRTC → PTX → ptxas /x/ptxas", ...
  bool operator==(const BuildRecipe&) const = default;
};

// What a build did, beyond BuiltCandidate: tools, versions, command lines, PTX rewrites.
struct BuildProvenance {
  std::string recipe;                  // BuildRecipe::describe()
  std::string image_kind;              // "cubin (native SASS)" or "PTX (JIT at load)"
  std::vector<json> tools;             // {"tool","path","version","command"}
  std::optional<std::string> ptx_version_rewrite;  // "9.0 -> 8.7 (ptxas 12.8 accepts at most 8.7)"
  std::vector<std::string> notes;      // dropped options, discovery path, ...
  json to_json() const;
};

// Builds the candidate with the recipe for `arch` (sm_XX) into out_dir. Errors:
// Error(usage) for an impossible recipe (ptxas with mode ptx, ptxas and nvcc together),
// Error(input) for a tool that does not exist or does not run, Error(nvrtc) for compile errors
// (also from ptxas/nvcc: their log is in the message).
BuiltCandidate build_with_recipe(const Manifest& m, const BuildRecipe& r, const std::string& arch,
                                 const std::filesystem::path& out_dir, BuildProvenance* prov);

// A prebuilt image (cubin, fatbin or PTX file) launched through a manifest's plan. With a source
// in the manifest, the C++ kernel names are lowered with NVRTC (the Itanium C++ ABI nvcc uses too);
// without one, they are matched against the image's demangled symbols ("add_relu<float>"; a
// mangled symbol or extern "C" name matches itself). Throws Error(input) naming what is missing
// and what the image holds.
BuiltCandidate adopt_prebuilt(const Manifest& m, const std::filesystem::path& image, const std::string& arch,
                              BuildProvenance* prov);

// A host executable or shared library (or a fatbin of several modules): the module (fatbin
// container) that holds every kernel of the manifest, written to out_dir as a standalone fatbin
// the driver loads. When several do, the one with the best loading path on `arch` is taken.
// Error(input) when none holds them all.
struct ModulePick {
  std::filesystem::path module_path;  // the extracted module
  std::size_t container = 0;
  std::size_t modules = 0;            // in the binary
  std::string reason;                 // which module, where, why
};
ModulePick pick_module(const Manifest& m, const std::filesystem::path& binary, const std::string& arch,
                       const std::filesystem::path& out_dir);

// --- tools ---
// "default" → $CUDA_HOME/bin/<tool> or /usr/local/cuda/bin/<tool>; "triton" (ptxas only) →
// find_triton_ptxas(); a bare name is searched in PATH; anything else is a path. The result must
// be an executable file, else Error(input) saying what was tried.
std::filesystem::path resolve_tool(const std::string& tool, const std::string& spec, std::vector<std::string>* notes);

// The ptxas inside an installed Triton wheel (triton/backends/nvidia/bin/ptxas): $KQUAL_TRITON_PTXAS,
// then the python3 site-packages directories (sysconfig purelib/platlib, site.getsitepackages(),
// the user site), then /usr/lib, /usr/local/lib and /opt python3.*/{site,dist}-packages.
// `tried` receives every place looked at.
std::optional<std::filesystem::path> find_triton_ptxas(std::vector<std::string>* tried = nullptr);

// `tool --version`, trimmed; Error(input) when the tool cannot be run or fails.
std::string tool_version(const std::filesystem::path& tool);
// The NVRTC this process compiles with ("NVRTC 13.0"); libnvrtc is loaded dynamically, so a toolkit
// update changes it without changing kqual.
std::string nvrtc_version_text();
// "release 12.8, V12.8.93" from a --version text ("" when not found).
std::string release_line(const std::string& version_text);

// The PTX ISA version a ptxas error says it supports at most: "Unsupported .version 9.0; current
// version is '8.7'" → "8.7"; nullopt when the log says something else.
std::optional<std::string> ptxas_max_ptx_version(const std::string& log);
// Replaces the `.version X.Y` directive; Error(input) when the text has none.
std::string rewrite_ptx_version(const std::string& ptx, const std::string& version);

}  // namespace kqual::build
