#pragma once
// A candidate built for one arch: the image that will run, and everything that identifies it.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kqual/build/manifest.hpp"
#include "kqual/core/json.hpp"

namespace kqual::build {

struct BuiltCandidate {
  Manifest manifest;
  std::string arch;                              // compiled for
  std::filesystem::path image_path;              // cubin (native SASS) in the session's scratch dir
  std::string image_sha256;
  std::size_t image_bytes = 0;
  std::map<std::string, std::string> lowered;    // C++ kernel name → mangled symbol
  std::string source_sha256;
  std::string compiler;                          // "NVRTC 13.0"
  std::vector<std::string> options;
  std::string log;
  double compile_ms = 0;
  json kernels;                                  // driver-reported attributes (after load)
  std::vector<std::string> libraries;            // library routines called ("cublas.gemm<float>"), if any
  json library_versions = json::object();        // "CUB" / "cuBLAS" → version text (cuBLAS's after load)
  json to_json() const;
};

// NVRTC, device code only (no candidate host code ever runs). Throws Error(nvrtc) with the log.
BuiltCandidate build_candidate(const Manifest& m, const std::string& arch, const std::filesystem::path& out_dir);

}  // namespace kqual::build
