#pragma once
// Compile a candidate and check it against its contract, in a worker process.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kqual/contract/contract.hpp"
#include "kqual/core/json.hpp"
#include "kqual/harness/manifest.hpp"
#include "kqual/harness/session.hpp"

namespace kqual::harness {

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

// Loads the image in the worker and records registers/shared/local bytes per kernel, and checks
// the manifest's argument list against the kernel's parameter sizes. Returns a refusal reason or "".
std::string load_and_describe(Session& s, BuiltCandidate& b);

// The worker's launch list for one problem, or a refusal (launch plan outside device limits,
// dim value not representable in the declared parameter type, ...).
struct ResolvedPlan {
  json launches = json::array();
  json scratch = json::array();  // {"name","bytes"}
  std::string refusal;
};
ResolvedPlan resolve_plan(const BuiltCandidate& b, DType t, const std::map<std::string, std::int64_t>& dims,
                          const DeviceFacts& dev);

struct CaseResult {
  contract::CaseSpec spec;
  std::string status;  // "pass", "fail", "refused"
  std::string code;    // failure or refusal code
  std::string detail;
  double kernel_ms = 0;
  std::string degenerate;  // why the expected output alone proves little (a constant kernel passes); "" if not
  std::string reference;   // "cpu" or "gpu-fp64"
  double wall_ms = 0;      // generation, reference, worker round trip and comparison
};

struct CorrectnessReport {
  std::string candidate;
  int cases = 0, passed = 0, failed = 0, refused = 0;
  int evidence = 0;                  // passed cases whose expected output is not degenerate
  int skipped = 0;                   // cases above CheckOptions::max_case_elements (not run)
  double wall_ms = 0;
  std::map<std::string, int> failure_codes;
  std::vector<CaseResult> results;   // every case
  // Degenerate outputs (all zero, all equal) are not accepted as evidence on their own.
  bool accepted() const { return failed == 0 && evidence > 0; }
  std::string primary_code() const;  // the most frequent failure code
  json to_json(bool all_cases) const;
};

struct CheckOptions {
  std::uint64_t seed = 20261202;
  bool include_large = true;
  bool stop_on_fault = true;  // stop a candidate's cases after a crash/hang/sticky error
  std::int64_t max_case_elements = 0;  // > 0: skip cases whose tensors hold more elements in all
};

CorrectnessReport check_correctness(Session& s, const BuiltCandidate& b, const CheckOptions& o);

// A case's inputs and expected outputs, generated once and shared by every implementation run on it
// in this process (a bounded cache; KQUAL_CASE_CACHE_MB sets its size, 0 turns it off).
struct PreparedCase {
  contract::CaseData data;
  std::vector<contract::Tensor> expected;
  std::string reference;   // "cpu" or "gpu-fp64"
  std::string degenerate;  // why the expected outputs alone prove little; "" if they do not
};
std::shared_ptr<const PreparedCase> prepare_case(Session& s, const contract::Contract& c, const contract::CaseSpec& spec);

// Runs one case; exposed for tests and for re-checking timed outputs.
CaseResult run_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec);

// Expected outputs for a case: the contract's CPU reference, or its fp64 GPU reference (run in the
// session's reference worker, never the candidates') when the contract prefers it for this size and
// a device is present. *which is set to "cpu" or "gpu-fp64".
std::vector<contract::Tensor> compute_reference(Session& s, const contract::Contract& c, const contract::CaseData& data,
                                                std::string* which = nullptr);
// Runs the contract's GPU reference unconditionally (tests cross-check it against the CPU one).
std::vector<contract::Tensor> gpu_reference(Session& s, const contract::Contract& c, const contract::CaseData& data);

// Compares a produced output file with the reference; "" when bit-exact per the contract.
std::string verify_output_file(const contract::Contract& c, const contract::Tensor& expected,
                               const std::filesystem::path& file, std::uint8_t poison, std::string* code);

}  // namespace kqual::harness
