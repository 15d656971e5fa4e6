#pragma once
// A candidate built for one arch: the image that will run, and everything that identifies it.
#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "kqual/build/manifest.hpp"
#include "kqual/core/json.hpp"
#include "kqual/cuda/nvrtc.hpp"

namespace kqual::build {

struct BuiltCandidate {
  Manifest manifest;
  std::string arch;                              // compiled for
  std::filesystem::path image_path;              // what the worker loads, in the session's scratch dir
  std::string image_sha256;
  std::size_t image_bytes = 0;
  std::string image_kind = "cubin (native SASS)";  // "PTX (JIT at load)", "prebuilt fatbin", ...
  // Prebuilt images (manifest `image`): the file the manifest names (for a host binary, the
  // executable or library the module was extracted from) and its SHA-256; empty when kqual compiled.
  std::filesystem::path image_file;
  std::string image_file_sha256;
  std::string load_path;                         // artifact::LoadPath on `arch`: native_sass, ptx_jit ("" = not analysed)
  std::string load_entry;                        // which entry the driver loads, and why (artifact::select_for_arch)
  std::vector<std::string> notes;                // build notes: module picked, JIT at load, ptxas identity, ...
  std::map<std::string, std::string> lowered;    // C++ kernel name → mangled symbol
  std::string source_sha256;
  std::string compiler;                          // "NVRTC 13.0", "nvcc release 13.0, V13.0.88", "prebuilt cubin"
  std::vector<std::string> options;
  std::string log;
  double compile_ms = 0;
  json kernels;                                  // driver-reported attributes (after load)
  std::vector<std::string> libraries;            // library routines called ("cublas.gemm<float>"), if any
  json library_versions = json::object();        // "CUB" / "cuBLAS" → version text (cuBLAS's after load)
  json to_json() const;
  json image_json() const;  // kind, sha256, bytes; file and load path when known
};

// The manifest's build, device code only (no candidate host code ever runs): NVRTC (the default) or
// nvcc -cubin for `source`; for `image`, the prebuilt cubin / fatbin / PTX / host binary's module
// adopted as is (kernels matched by demangled name, the entry the driver loads on `arch` recorded;
// Error(input) when nothing in it loads there). Library-only manifests compile nothing.
// Compile errors are Error(nvrtc) with the log; a bad image is Error(input).
BuiltCandidate build_candidate(const Manifest& m, const std::string& arch, const std::filesystem::path& out_dir);

// The manifest's source through NVRTC for `arch` (sm_XX: cubin; compute_XX: PTX), with its options,
// include folder and every claimed dtype's kernel name expressions. Error(nvrtc) naming the manifest,
// the source and the arch, with the compiler's log.
cuda::NvrtcResult compile_with_nvrtc(const Manifest& m, const std::string& arch);
// What an NVRTC compile says about the candidate: lowered kernel names, source hash, compiler,
// options, log and compile time (the image fields are the caller's).
void record_nvrtc(BuiltCandidate& b, const Manifest& m, const cuda::NvrtcResult& r);

// The manifest's launch arguments against the compiled kernels' parameter sizes in `cubin` (lowered:
// C++ name to symbol): "" when every launch of every claimed dtype passes as many arguments as its
// kernel takes, each of the parameter's size (or the cubin records none); else what differs
// (src/build/launch_params.cpp). build_candidate refuses such a candidate (Error input).
std::string launch_argument_problem(const Manifest& m, const std::map<std::string, std::string>& lowered,
                                    std::span<const std::uint8_t> cubin);

}  // namespace kqual::build
