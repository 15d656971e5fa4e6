// Format detection and the entry points of the artifact layer.
#include "kqual/artifact/artifact.hpp"

#include <cctype>
#include <algorithm>
#include <filesystem>
#include <future>
#include <fstream>
#include <iterator>

#include "elf.hpp"
#include "images.hpp"
#include "kqual/core/enum_names.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "reader.hpp"
#include "reuse.hpp"

namespace kqual::artifact {

using detail::fail;

std::string Arch::str() const {
  return fmt::format("{}_{}{}", virtual_ ? "compute" : "sm", number(), suffix ? std::string(1, suffix) : "");
}

Arch Arch::parse(std::string_view text) {
  Arch a;
  std::string_view s = text;
  if (s.starts_with("sm_")) {
    s.remove_prefix(3);
  } else if (s.starts_with("compute_")) {
    s.remove_prefix(8);
    a.virtual_ = true;
  }
  std::string digits;
  std::size_t i = 0;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] == '.' && text == s)); ++i)
    if (s[i] != '.') digits.push_back(s[i]);
  if (i < s.size() && (s[i] == 'a' || s[i] == 'f') && i + 1 == s.size()) a.suffix = s[i++];
  if (digits.size() < 2 || digits.size() > 3 || i != s.size())
    throw_error(ErrorKind::usage, fmt::format("'{}' is not a GPU architecture (expected e.g. sm_90, sm_90a, compute_80, 9.0)", text));
  const int n = std::stoi(digits);
  a.major = n / 10;
  a.minor = n % 10;
  return a;
}

namespace {
constexpr EnumNames<ContainerKind, 4> kContainerKindNames{{{{ContainerKind::fatbin, "fatbin"},
                                                            {ContainerKind::host_binary, "host_binary"},
                                                            {ContainerKind::cubin, "cubin"},
                                                            {ContainerKind::ptx, "ptx"}}}};
constexpr EnumNames<EntryKind, 4> kEntryKindNames{
    {{{EntryKind::ptx, "ptx"}, {EntryKind::sass, "sass"}, {EntryKind::nvvm_ir, "nvvm_ir"}, {EntryKind::other, "other"}}}};
constexpr EnumNames<Compression, 3> kCompressionNames{
    {{{Compression::none, "none"}, {Compression::lz4, "lz4"}, {Compression::zstd, "zstd"}}}};
}  // namespace

const char* to_string(ContainerKind k) { return kContainerKindNames.name(k); }
const char* to_string(EntryKind k) { return kEntryKindNames.name(k); }
const char* to_string(Compression c) { return kCompressionNames.name(c); }

namespace {
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::uint32_t kWrapperMagic = 0x466243B1;  // __fatBinC_Wrapper_t in .nvFatBinSegment

bool looks_like_ptx(std::span<const std::uint8_t> b) {
  const std::size_t n = std::min<std::size_t>(b.size(), 1 << 16);
  const std::string_view head(reinterpret_cast<const char*>(b.data()), n);
  return head.find(".version") != std::string_view::npos || head.find(".target") != std::string_view::npos;
}

void parse_host_binary(std::span<const std::uint8_t> bytes, const std::string& name, Artifact& a, const detail::FatbinParse& how) {
  const detail::Elf elf = detail::parse_elf(bytes, name, /*with_symbols=*/false);
  bool found = false;
  for (const auto& s : elf.sections) {
    if (s.name != ".nv_fatbin" && s.name != "__nv_relfatbin") continue;
    found = true;
    auto data = detail::section_bytes(bytes, s, name);
    detail::parse_fatbin_containers(data, s.offset, name + ": section " + s.name, a.entries, a.containers, how);
  }
  if (const auto* seg = elf.find(".nvFatBinSegment")) {
    // Each wrapper is {u32 magic, u32 version, u64 fatbin address, u64 filename}; the address
    // needs relocation in shared libraries, so the data is read from .nv_fatbin instead.
    auto w = detail::section_bytes(bytes, *seg, name);
    detail::Reader r(w, name + ": section .nvFatBinSegment");
    for (std::uint64_t o = 0; o + 24 <= w.size(); o += 24)
      if (r.u32(o, "wrapper magic") != kWrapperMagic)
        fail(r.context(), fmt::format("wrapper at +{} has magic {:#x}, not 0x466243b1", o, r.u32(o, "wrapper magic")));
    if (!found) fail(name, "has .nvFatBinSegment wrappers but no .nv_fatbin section with the device code");
  }
  if (!found)
    fail(name, "ELF file (not a cubin: e_machine " + std::to_string(elf.machine) +
                   ") without an embedded fatbin (no .nv_fatbin section): no device code");
}
Artifact parse_bytes(std::span<const std::uint8_t> bytes, const std::string& name, const detail::FatbinParse& how,
                     bool file_hash = true) {
  Artifact a;
  a.name = name;
  a.file_bytes = bytes.size();
  if (bytes.empty()) fail(name, "empty file");
  // The whole file's hash runs beside the parse (a library is hundreds of MB).
  std::future<std::string> file_sha = std::async(bytes.size() > (std::size_t(64) << 20) ? std::launch::async
                                                                                         : std::launch::deferred,
                                                 [bytes, file_hash] { return file_hash ? sha256_hex(bytes.data(), bytes.size()) : std::string(); });
  if (bytes.size() >= 4 && detail::Reader(bytes, name).u32(0, "magic") == kFatbinMagic) {
    a.container = ContainerKind::fatbin;
    detail::parse_fatbin_containers(bytes, 0, name, a.entries, a.containers, how);
  } else if (detail::looks_like_elf(bytes)) {
    if (bytes.size() >= 20 && detail::Reader(bytes, name).u16(18, "e_machine") == detail::kEmCuda) {
      a.container = ContainerKind::cubin;
      Entry e;
      e.kind = EntryKind::sass;
      e.stored_bytes = e.image_bytes = bytes.size();
      detail::parse_cubin_image(bytes, name, e);
      a.entries.push_back(std::move(e));
    } else {
      a.container = ContainerKind::host_binary;
      parse_host_binary(bytes, name, a, how);
    }
  } else if (looks_like_ptx(bytes)) {
    a.container = ContainerKind::ptx;
    Entry e;
    e.kind = EntryKind::ptx;
    e.stored_bytes = bytes.size();
    std::span<const std::uint8_t> text = bytes;
    while (!text.empty() && text.back() == 0) text = text.first(text.size() - 1);
    e.image_bytes = text.size();
    e.sha256 = sha256_hex(text.data(), text.size());
    detail::parse_ptx_image(bytes, name, e);
    a.entries.push_back(std::move(e));
  } else {
    fail(name, "unrecognised format: not a fatbin (magic 0xba55ed50), ELF cubin, host ELF with .nv_fatbin, or PTX text");
  }
  a.sha256 = file_sha.get();
  for (auto& e : a.entries)
    if (a.container == ContainerKind::cubin && e.sha256.empty()) e.sha256 = a.sha256;
  return a;
}

// Mapped, not read: a toolkit library is hundreds of MB, and only the device-code sections and the
// entries' images are touched (pages of host code are never faulted in).
MappedFile map_artifact(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw_error(ErrorKind::io, fmt::format("{}: cannot open", path));
  if (!std::filesystem::is_regular_file(path, ec))
    throw_error(ErrorKind::input, fmt::format("{}: not a regular file (a cubin, fatbin, PTX or host binary is)", path));
  return MappedFile::open_read(path);
}
}  // namespace

Artifact parse_artifact_bytes(std::span<const std::uint8_t> bytes, const std::string& name) {
  return parse_bytes(bytes, name, {});
}

std::vector<std::string> kernel_symbols(const Artifact& a, std::optional<std::size_t> container) {
  std::vector<std::string> out;
  for (const auto& e : a.entries) {
    if (container && e.container != *container) continue;
    for (const auto& k : e.kernels) out.push_back(k.name);
    for (const auto& k : e.ptx_entries) out.push_back(k);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::uint8_t> extract_container(const Artifact& a, const std::string& path, std::size_t container) {
  if (container >= a.containers.size())
    fail(a.name, fmt::format("has no fatbin container {} ({} in the file)", container, a.containers.size()));
  const ContainerSpan& c = a.containers[container];
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_error(ErrorKind::io, fmt::format("{}: cannot open", path));
  f.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(f.tellg());
  if (size != a.file_bytes || c.offset + c.bytes > size)
    fail(path, fmt::format("changed since it was parsed ({} bytes, parsed {}): container {} at {} (+{} bytes) no longer fits",
                           size, a.file_bytes, container, c.offset, c.bytes));
  std::vector<std::uint8_t> out(static_cast<std::size_t>(c.bytes));
  f.seekg(static_cast<std::streamoff>(c.offset));
  f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  if (!f) throw_error(ErrorKind::io, fmt::format("{}: read error in container {}", path, container));
  if (out.size() < 4 || detail::Reader(out, path).u32(0, "container magic") != kFatbinMagic)
    fail(path, fmt::format("container {} at offset {} does not start with the fatbin magic", container, c.offset));
  return out;
}

Artifact parse_artifact(const std::string& path) {
  const MappedFile m = map_artifact(path);
  return parse_bytes(m.bytes(), path, {});
}

namespace {
std::pair<Artifact, Artifact> parse_pair(const MappedFile& mo, const std::string& old_path, const MappedFile& mn,
                                         const std::string& new_path, const ParseOptions& options) {
  // Without twins' code hashes: NEW's entry headers walked first, so that OLD's parse knows which of its
  // entries NEW stores byte for byte (most of a library upgrade; all of two copies of one build).
  std::optional<Artifact> new_heads;
  std::optional<detail::EntryReuse> twins;
  if (!options.twin_code_hashes) {
    try {
      new_heads = parse_bytes(mn.bytes(), new_path, {.headers_only = true}, false);
      twins.emplace(*new_heads, mn.bytes());
    } catch (const Error&) {  // NEW's own parse below says what is wrong with it, after OLD's
    }
  }
  Artifact o = parse_bytes(mo.bytes(), old_path, {nullptr, options.sass_image_hashes, twins ? &*twins : nullptr}, options.file_hash);
  const detail::EntryReuse same(o, mo.bytes());
  Artifact n = parse_bytes(mn.bytes(), new_path, {&same, options.sass_image_hashes}, options.file_hash);
  return {std::move(o), std::move(n)};
}
}  // namespace

std::pair<Artifact, Artifact> parse_artifact_pair(const std::string& old_path, const std::string& new_path,
                                                  const ParseOptions& options) {
  const MappedFile mo = map_artifact(old_path), mn = map_artifact(new_path);
  return parse_pair(mo, old_path, mn, new_path, options);
}

ArtifactPairDiff diff_artifact_files(const std::string& old_path, const std::string& new_path, const Arch& target,
                                     const ParseOptions& options) {
  const MappedFile mo = map_artifact(old_path), mn = map_artifact(new_path);
  auto [o, n] = parse_pair(mo, old_path, mn, new_path, options);
  std::vector<const Entry*> undecided;  // twins unhashed where a comparison met an entry of other bytes
  ArtifactDiff d = detail::diff_artifacts(o, n, target, &undecided);
  if (!undecided.empty()) {
    std::vector<std::size_t> which[2];
    for (const Entry* e : undecided) {
      const bool old_side = e >= o.entries.data() && e < o.entries.data() + o.entries.size();
      which[old_side ? 0 : 1].push_back(static_cast<std::size_t>(e - (old_side ? o.entries.data() : n.entries.data())));
    }
    for (auto& w : which) {
      std::sort(w.begin(), w.end());
      w.erase(std::unique(w.begin(), w.end()), w.end());
    }
    detail::hash_twin_entries(mo.bytes(), o, which[0]);
    detail::hash_twin_entries(mn.bytes(), n, which[1]);
    d = detail::diff_artifacts(o, n, target, nullptr);  // now by the hashes (a kernel without code stays unequal)
  }
  return {std::move(o), std::move(n), std::move(d)};
}

}  // namespace kqual::artifact
