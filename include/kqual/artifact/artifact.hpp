#pragma once
// Artifact identity (the first kind of evidence): what is inside a cubin / fatbin / host binary / PTX
// file, and which entry the CUDA driver will load on a given GPU. CPU only: nothing here calls the
// driver, so it runs on build machines. Every input is untrusted: a truncated or corrupted file is
// an Error(ErrorKind::input) naming the file, the entry and the field — never a crash.
//
//   auto art = kqual::artifact::parse_artifact("kernels.fatbin");
//   auto sel = kqual::artifact::select_for_arch(art, kqual::artifact::Arch::parse("sm_90"));
//   if (sel.path == LoadPath::ptx_jit) ...   // first load compiles PTX in every process (cold cache)
//
// The format facts and the selection rule, with their sources: docs/artifact.md.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::artifact {

// A GPU architecture as nvcc spells it: sm_90, sm_90a, sm_100f (real) or compute_90 (virtual/PTX).
struct Arch {
  int major = 0;
  int minor = 0;
  char suffix = 0;        // 0, 'a' (arch-specific: runs only on exactly this CC) or 'f' (family)
  bool virtual_ = false;  // compute_XX (PTX) rather than sm_XX (SASS)

  int number() const { return major * 10 + minor; }
  std::string str() const;  // "sm_90a", "compute_80"
  // Accepts sm_XY[a|f], compute_XY[a|f], or a bare "90"/"9.0"; throws Error(usage) otherwise.
  static Arch parse(std::string_view text);
  bool operator==(const Arch&) const = default;
};

enum class ContainerKind { fatbin, host_binary, cubin, ptx };
enum class EntryKind { ptx, sass, nvvm_ir, other };
enum class Compression { none, lz4, zstd };
const char* to_string(ContainerKind k);
const char* to_string(EntryKind k);
const char* to_string(Compression c);

// Compiler identity from a cubin's .note.nv.tkinfo (ptxas) and .note.nv.cuinfo.
struct CompilerInfo {
  std::string tool;           // "ptxas"
  std::string version;        // "Cuda compilation tools, release 13.0, V13.0.88"
  std::string build;          // "Build cuda_13.0.r13.0/compiler.36424714_0"
  std::string options;        // "-v -arch sm_90 -m 64" (whitespace collapsed)
  int cuda_api_version = 0;   // e.g. 130 from .note.nv.cuinfo; 0 if absent
};

// One parameter of a kernel as the cubin records it (EIATTR_KPARAM_INFO in .nv.info.<kernel>):
// its place in the parameter constant bank. Types are not recorded, only sizes.
struct ParamInfo {
  int ordinal = 0;                   // 0-based position in the parameter list
  std::uint32_t offset = 0;          // [B] from the start of the parameter block
  std::uint32_t size = 0;            // [B]
};

// One kernel (entry function) of a SASS image, from the cubin's own records.
struct KernelInfo {
  std::string name;                  // mangled symbol name
  int registers = -1;                // EIATTR_REGCOUNT; -1 if the cubin has no record
  std::uint64_t static_shared_bytes = 0;   // [B] as the driver reports it (section minus reserved)
  std::uint64_t shared_section_bytes = 0;  // [B] raw size of .nv.shared.<name>
  std::uint64_t local_bytes = 0;     // [B/thread] EIATTR_FRAME_SIZE (stack frame incl. spills)
  std::uint64_t max_stack_bytes = 0; // [B/thread] EIATTR_MAX_STACK_SIZE / MIN_STACK_SIZE, if any
  int max_threads = 0;               // launch bound (EIATTR_MAX_THREADS x*y*z); 0 = none in binary
  int param_bytes = -1;              // EIATTR_CBANK_PARAM_SIZE; -1 if absent
  std::uint64_t code_bytes = 0;      // [B] size of .text.<name>
  std::string code_sha256;           // of .text.<name>: equal hash = identical machine code
  std::vector<ParamInfo> params;     // by ordinal; empty when the cubin has no records (not in inspect's output)
};

// One image inside the artifact (a standalone cubin or PTX file is one entry).
struct Entry {
  std::size_t index = 0;
  std::size_t container = 0;        // fatbin container = one driver module (host binaries: several)
  EntryKind kind = EntryKind::other;
  Arch arch;                        // SASS: sm_XY[a|f]; PTX: compute_XY[a|f]
  int ptx_isa_major = 0;            // PTX: ISA version (.version) — the driver must support it
  int ptx_isa_minor = 0;
  Compression compression = Compression::none;
  std::uint64_t offset = 0;         // [B] of the entry header in the file (0 for bare images)
  std::uint64_t stored_bytes = 0;   // [B] as stored (compressed size when compressed)
  std::uint64_t image_bytes = 0;    // [B] decompressed image (PTX: text without NUL padding)
  std::uint64_t flags = 0;          // raw fatbin entry flags (docs/artifact.md)
  std::string sha256;               // of the decompressed image
  // Non-zero only in a pair parsed without twins' code hashes (ParseOptions::twin_code_hashes): this
  // entry's header and stored bytes are also an entry of the other file, and entries of equal `twin`
  // are equal byte for byte. Its kernels' code hashes (a PTX entry: its image hash) may then be empty.
  std::uint64_t twin = 0;
  std::string jit_options;          // PTX entries: options the driver passes to its JIT, if stored
  std::vector<std::string> ptx_entries;   // PTX: .entry names
  std::vector<KernelInfo> kernels;        // SASS: per kernel
  std::optional<CompilerInfo> compiler;   // SASS: ptxas identity, when the cubin carries it
};

// Where one fatbin container (one driver module) lies in the file: header + payload.
struct ContainerSpan {
  std::size_t index = 0;
  std::uint64_t offset = 0;         // [B] of the container header in the file
  std::uint64_t bytes = 0;          // [B] header + payload
};

struct Artifact {
  std::string name;                 // path or caller-given name; used in every error message
  ContainerKind container = ContainerKind::fatbin;
  std::uint64_t file_bytes = 0;
  std::string sha256;               // of the whole file
  std::vector<Entry> entries;
  std::vector<ContainerSpan> containers;  // fatbin and host binaries (empty for a bare cubin / PTX)
};

// Limits that keep hostile input from exhausting memory.
inline constexpr std::uint64_t kMaxImageBytes = 1ull << 30;  // [B] one decompressed image

// Detects the format from the bytes (fatbin magic, ELF cubin e_machine 190, host ELF with
// .nv_fatbin, PTX text). Throws Error(input) for anything malformed, Error(io) if unreadable.
Artifact parse_artifact(const std::string& path);
Artifact parse_artifact_bytes(std::span<const std::uint8_t> bytes, const std::string& name);
// OLD and NEW for a diff, equal to parse_artifact of each: NEW is parsed after OLD, and a NEW entry whose
// header and stored bytes equal one of OLD's (compared byte for byte) is taken from OLD's parse rather than
// decoded and hashed again (most entries of a library upgrade; every entry of two copies of one build).
// What a parse may leave out when its caller does not show it (`inspect --diff` in words compares kernels by
// their code's hash and PTX images by theirs, and prints neither file's nor a SASS image's hash).
struct ParseOptions {
  bool file_hash = true;         // Artifact::sha256 ("" when off)
  bool sass_image_hashes = true; // Entry::sha256 of SASS entries ("" when off)
  // Off: an entry stored byte for byte in both files (Entry::twin) is parsed without its kernels' code hashes
  // (a PTX entry: without its image's). For a diff, diff_artifact_files hashes after all the twins it needs.
  bool twin_code_hashes = true;
};
std::pair<Artifact, Artifact> parse_artifact_pair(const std::string& old_path, const std::string& new_path,
                                                  const ParseOptions& options = {});

// The kernel symbols (SASS kernels and PTX .entry names) of one container / module, or of every
// entry when `container` is empty; sorted, without duplicates.
std::vector<std::string> kernel_symbols(const Artifact& a, std::optional<std::size_t> container = std::nullopt);

// The bytes of one fatbin container of a fatbin or host binary file (a standalone fatbin the driver
// loads as one module). Throws Error(input) when the container does not exist or the file changed.
std::vector<std::uint8_t> extract_container(const Artifact& a, const std::string& path, std::size_t container);

// Decoders, exposed for tests and the fuzzer. Both throw Error(input) mentioning `what`.
std::vector<std::uint8_t> lz4_block_decompress(std::span<const std::uint8_t> src, std::uint64_t expected_size,
                                               const std::string& what);
std::vector<std::uint8_t> zstd_decompress(std::span<const std::uint8_t> src, std::uint64_t expected_size,
                                          const std::string& what);

// ---- Kernel symbols and the C++ names manifests use ----
// Itanium C++ ABI demangling (nvcc and NVRTC mangle kernels as host C++ does); the symbol itself
// when it is not a mangled name.
std::string demangle(const std::string& symbol);
// What a manifest would write for the kernel: demangled, without return type and parameter list,
// spaces removed ("_Z8add_reluIfEvPKT_S2_PS0_l" → "add_relu<float>").
std::string kernel_display_name(const std::string& symbol);
struct KernelMatch {
  std::optional<std::string> symbol;      // set when exactly one symbol matches
  std::vector<std::string> candidates;    // every match (several: overloads; give the mangled name)
};
// The symbol for a C++ kernel name as a manifest writes it ("add_relu<float>", "ns::k"; spaces are
// ignored), or for the mangled symbol / extern "C" name itself.
KernelMatch find_kernel_symbol(const std::vector<std::string>& symbols, const std::string& cxx_name);

// ---- Driver selection rule (docs/artifact.md "Which entry the driver loads") ----
enum class LoadPath { native_sass = 0, ptx_jit = 1, incompatible = 2 };  // ordered: larger is worse
const char* to_string(LoadPath p);

// Each fatbin container is registered as its own module (a host binary may hold several, e.g. one
// from the static CUDA runtime), so the choice is made per container; the artifact's path is the
// worst of its modules'.
struct ModuleSelection {
  std::size_t container = 0;
  LoadPath path = LoadPath::incompatible;
  std::optional<std::size_t> entry; // index into Artifact::entries
  std::string reason;               // one sentence, with the consequence for first load
};
struct Selection {
  Arch target;                      // the device, e.g. sm_90 (a/f suffix dropped: devices have a CC)
  LoadPath path = LoadPath::incompatible;  // worst over modules
  std::optional<std::size_t> entry; // the entry chosen in the worst module (the only one, usually)
  std::string reason;
  std::vector<ModuleSelection> modules;
};

Selection select_for_arch(const Artifact& artifact, const Arch& target);

// ---- Diff of two artifacts for one target (kqual inspect --diff) ----
struct KernelChange {
  std::string name;
  std::string status;               // "identical", "changed", "added", "removed"
  std::optional<KernelInfo> old_kernel, new_kernel;
};
// One architecture of a library diff: its SASS kernels (by name, machine code compared) or its PTX entries,
// added, removed, changed and identical, and the bytes its images take on each side.
struct ArchDiff {
  std::string arch;                  // "sm_90", "compute_90"
  std::size_t added = 0, removed = 0, changed = 0, identical = 0;
  std::uint64_t old_bytes = 0, new_bytes = 0;  // [B] stored (as in the file) over the arch's entries
  std::size_t old_entries = 0, new_entries = 0;
};
// For one GPU: how many modules each side loads as native SASS, through the PTX JIT, or not at all.
struct GpuLoading {
  std::string gpu;                   // "sm_90"
  std::size_t old_sass = 0, old_jit = 0, old_none = 0, new_sass = 0, new_jit = 0, new_none = 0;
};
struct ArtifactDiff {
  Selection old_selection, new_selection;
  bool loading_path_worse = false;  // new path is worse than old on the target -> CI failure
  std::vector<std::string> entries_added, entries_removed;  // "sass sm_90", "ptx compute_80"
  std::vector<KernelChange> kernels;  // kernels of the selected SASS entries (or of all SASS)
  std::vector<ArchDiff> per_arch;     // every architecture either side carries, SASS first
  std::vector<GpuLoading> loading;    // the GPUs of common architectures (sm_70 .. sm_120) and the target
};
ArtifactDiff diff_artifacts(const Artifact& old_art, const Artifact& new_art, const Arch& target);
// OLD and NEW parsed as parse_artifact_pair parses them and diffed on `target`: the diff diff_artifacts gives
// with every hash. With twin_code_hashes off, two kernels (PTX: images) in twin entries of equal bytes are the
// same code; where a twin meets an entry of other bytes, the twin is decoded again and hashed, and the diff made
// again by the hashes. (The artifacts returned keep what was not needed unhashed.)
struct ArtifactPairDiff {
  Artifact old_art, new_art;
  ArtifactDiff diff;
};
ArtifactPairDiff diff_artifact_files(const std::string& old_path, const std::string& new_path, const Arch& target,
                                     const ParseOptions& options = {});

// ---- JSON (schema: docs/artifact.md; the documents are "kqual.inspect/1" and "kqual.inspect-diff/1") ----
json to_json(const Artifact& a);
json to_json(const Selection& s, const Artifact& a);
json to_json(const ArtifactDiff& d);

}  // namespace kqual::artifact
