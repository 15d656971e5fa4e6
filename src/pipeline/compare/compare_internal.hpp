#pragma once
// Internal to src/pipeline/compare/: what compare.cpp (options, the sides, writing), compare_measure.cpp (the
// GPU phases) and compare_judge.cpp (the verdict) share. Not a public header.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kqual/artifact/artifact.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/dtype.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::compare {

// One side as run_compare resolves, builds (or adopts) and loads it.
struct Side {
  std::string label;  // "old" / "new"
  SideSpec spec;
  bool is_candidate = false;
  std::filesystem::path input;  // absolute
  std::optional<build::Manifest> manifest;
  std::string manifest_from;
  std::optional<build::BuiltCandidate> built;
  build::BuildProvenance prov;
  std::filesystem::path image;
  std::string image_sha256;
  artifact::Artifact art;
  artifact::Selection sel;
  std::string startup_kernel;
  std::string startup_kernel_from;
  std::string module_pick;  // host binaries: which module was taken
  // A library side (a libcublas.so): kqual's own gemm call is made through it, in workers and probes
  // that load this file (KQUAL_CUBLAS_LIBRARY). docs/upgrade.md.
  bool is_library = false;
  std::string library_api = "cublas";       // "cublas" or "cublaslt"
  std::vector<std::string> library_shapes;  // "m,n,k" for the startup probes, the decision shape first
  json library_identity;                    // what the probes and the worker report they loaded
};

// True when `p` names a cuBLAS build (libcublas.so*). A libcublasLt.so is refused: it is loaded with
// the libcublas beside it.
bool is_cublas_library(const std::filesystem::path& p);

inline void say(const CompareOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

// NEW is blamed for correctness only for what it changes: it is rejected and OLD is not, or it fails
// a case OLD passed or failed with another code (compare_judge.cpp).
bool new_is_blamed(const CorrectnessSide& old_side, const CorrectnessSide& new_side);

// Phase 4 of run_compare (compare_measure.cpp), on a machine with a GPU: loads both built sides
// (load_and_describe records what the device says of them in sides[k].built), checks both for
// correctness, times them warm in interleaved fresh worker processes and runs the startup probes,
// extending the modes that cannot resolve o.resolve_ms. Wall time per phase in Evidence::wall_s.
Evidence measure(const CompareOptions& o, Side (&sides)[2], worker::Session& session, const contract::Contract* contract,
                 const std::vector<contract::Dims>& shapes, DType dtype);

}  // namespace kqual::compare
