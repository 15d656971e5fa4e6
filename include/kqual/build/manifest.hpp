#pragma once
// Candidate manifest (kqual.toml): what to compile, how to map kernel parameters to contract
// tensors and dims, the launch plan as integer expressions, and the claimed domain.
// Format: docs/manifest.md. Every error names the file, the key and the value.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/lookup.hpp"
#include "kqual/core/expr.hpp"

namespace kqual::build {

enum class ScalarType { i32, u32, i64, u64, f32, f64 };
std::size_t scalar_size(ScalarType t);

struct LaunchArg {
  enum Kind { tensor, scratch, dim, constant } kind = tensor;
  std::string name;                   // contract tensor, scratch buffer, dim or scalar (constant)
  ScalarType type = ScalarType::i64;  // for dims and constants
  std::int64_t bits = 0;              // constant: the value's bit pattern in `type` (a contract scalar)
  std::string text;                   // as written, for messages
};

struct Launch {
  std::string kernel;             // C++ name, may contain {T}; empty for a library launch
  std::string library;            // a library routine instead of a kernel ("cublas.gemm<{T}>"); see cuda/library.hpp
  std::array<Expr, 3> grid;
  std::array<Expr, 3> block;
  Expr shared;                    // dynamic shared memory [bytes]
  std::vector<LaunchArg> args;
};

struct Scratch {
  std::string name;
  Expr bytes;
};

// Who compiles a source candidate ([candidate] compiler). Device code only either way: no candidate
// host code is ever run.
enum class Compiler { nvrtc, nvcc };
const char* to_string(Compiler c);  // "nvrtc", "nvcc"

struct Manifest {
  std::filesystem::path file;     // the kqual.toml
  std::filesystem::path dir;
  std::string name;
  std::string description;
  // The contract's name, as results, memos and baselines folders name it: the [candidate] contract
  // value when that is a name, the name the contract file declares when it is a path.
  std::string contract;
  std::filesystem::path source;   // absolute path of the .cu; empty for a prebuilt image or library calls only
  std::filesystem::path image;    // absolute path of a prebuilt cubin / fatbin / PTX / host binary (instead of source)
  Compiler compiler = Compiler::nvrtc;
  std::vector<std::string> nvrtc_options;  // compiler = "nvrtc"
  std::vector<std::string> nvcc_options;   // compiler = "nvcc": passed to nvcc as written
  contract::Supports supports;
  std::vector<Scratch> scratch;
  std::vector<Launch> launches;
  std::optional<std::string> expect_rejected_for;  // known-broken candidates: the intended reason
  std::vector<std::string> expect_also_rejected_for;  // [expect] or_rejected_for: other codes the defect may take
  bool expect_given_hash_slots = false;  // [expect] given_hash_slots: selftest hands it kqual's hash-slot address

  // Kernel names with {T} substituted for a dtype (library launches excluded).
  std::vector<std::string> kernel_names(DType t) const;
  // Library routine names with {T} substituted ("cub.exclusive_sum<float>").
  std::vector<std::string> library_names(DType t) const;
  bool has_kernels() const;

  // The contract this manifest is judged against, resolved once when the manifest was read (a name
  // or a path, docs/declared-contracts.md); every later step takes it from here, never by name.
  // Throws Error(internal) for a manifest whose contract was never set.
  const contract::Contract& resolved_contract() const;
  // Sets the contract and `contract` (its name): parse_manifest does this; a manifest made in code
  // (tests) calls it before the manifest is built, checked or timed.
  void set_contract(const contract::Contract& c);

 private:
  // Contracts stay registered for the whole process, so the manifest keeps a pointer to its own.
  const contract::Contract* resolved_contract_ = nullptr;
};

// Placeholder values: a manifest string value that starts with this is not complete yet
// (parse_manifest refuses the manifest, naming every such key). Generated manifests use it for
// what only the user knows (kqual import-triton: the contract, the argument mapping, the grid).
inline constexpr const char* kPlaceholderPrefix = "TODO:";

// What the manifest is read for. A candidate is built from its `source`; a launch plan only
// describes how to launch kernels that already exist in a prebuilt image (kqual compare --manifest
// with cubin/fatbin/PTX/host-binary sides), so `source` may be absent there.
enum class ManifestUse { candidate, launch_plan };

// Parse and validate against the contract (tensor/dim names, expressions, types). Accepts the
// manifest file or its directory. The contract value is resolved through `contracts`: the command's
// lookup, built from the user's --contracts and --allow-candidate-contract (declared/lookup.hpp).
// Throws Error(input) naming file, key and value.
Manifest load_manifest(const std::filesystem::path& file_or_dir, const contract::ContractLookup& contracts,
                       ManifestUse use = ManifestUse::candidate);
Manifest parse_manifest(const std::string& toml_text, const std::filesystem::path& file,
                        const contract::ContractLookup& contracts, ManifestUse use = ManifestUse::candidate);
// The same with the default lookup (no --contracts folders, no contract file supplied with a
// candidate): for callers with no contract options.
Manifest load_manifest(const std::filesystem::path& file_or_dir, ManifestUse use = ManifestUse::candidate);
Manifest parse_manifest(const std::string& toml_text, const std::filesystem::path& file,
                        ManifestUse use = ManifestUse::candidate);

// A manifest's [candidate] contract value as written (a name or a path, relative to the manifest's
// folder), read without validating the rest; empty when the file cannot be read or names none
// (load_manifest then says why). kqual screen resolves every contract before any candidate runs.
std::string manifest_contract_value(const std::filesystem::path& file_or_dir);

// Names an expression may use: the contract's dims plus device facts.
std::vector<std::string> expression_names(const contract::Contract& c);

}  // namespace kqual::build
