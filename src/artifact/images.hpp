#pragma once
// Parsers of single images (internal): a cubin (SASS) and PTX text. The fatbin and host-binary
// parsers call them for each decompressed entry.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kqual/artifact/artifact.hpp"

namespace kqual::artifact::detail {

// A byte buffer whose growth does not zero the new bytes (a decoder writes them next): images are
// decoded into one such buffer per thread, reused across entries, so a library's thousands of
// entries neither fault in fresh pages nor clear them (1.4 GB decoded for libcublasLt).
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind { using other = NoInitAllocator<U>; };
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }  // default-init: no zeroing
  template <class U, class... A>
  void construct(U* p, A&&... a) { ::new (static_cast<void*>(p)) U(std::forward<A>(a)...); }
};
using ImageBuffer = std::vector<std::uint8_t, NoInitAllocator<std::uint8_t>>;

// Decoders into a caller-owned buffer (resized to the decoded size); the public
// lz4_block_decompress / zstd_decompress wrap them. Same checks and messages.
void lz4_block_decompress_into(std::span<const std::uint8_t> src, std::uint64_t expected_size, const std::string& what,
                               ImageBuffer& out);
void zstd_decompress_into(std::span<const std::uint8_t> src, std::uint64_t expected_size, const std::string& what,
                          ImageBuffer& out);

// Fills arch, kernels and compiler of `e` from an ELF cubin. `context` prefixes every error. With
// `image_sha256`, the image's own hash is computed there too, beside the kernels' code hashes.
// Without `code_hashes`, the kernels' code is not hashed (their code_sha256 stays empty).
void parse_cubin_image(std::span<const std::uint8_t> image, const std::string& context, Entry& e,
                       std::string* image_sha256 = nullptr, bool code_hashes = true);
// Fills arch (virtual), PTX ISA version and entry names from PTX text (may end in NUL padding).
void parse_ptx_image(std::span<const std::uint8_t> image, const std::string& context, Entry& e);
// Appends the entries of the fatbin container(s) in `bytes` (which may be followed by more
// containers and zero padding). `base` is the offset of `bytes` within the file, for messages.
// Each container's place in the file is appended to `spans`.
// With `reuse`, an entry equal byte for byte to one it indexes is copied from there (its place in this file kept);
// without `sass_image_hashes`, SASS entries' own hash is left empty (their kernels' code is hashed still).
// With `twins` (an index of the other file's entries), an entry equal byte for byte to one it indexes is
// parsed without its code hashes and its `twin` set to 1 + that entry's index. `headers_only` walks the
// containers and entry headers (bounds checked) and stops: entries with index, container and offset only.
class EntryReuse;
struct FatbinParse {
  const EntryReuse* reuse = nullptr;
  bool sass_image_hashes = true;
  const EntryReuse* twins = nullptr;
  bool headers_only = false;
};
void parse_fatbin_containers(std::span<const std::uint8_t> bytes, std::uint64_t base, const std::string& context,
                             std::vector<Entry>& out, std::vector<ContainerSpan>& spans, const FatbinParse& how = {});
// Hashes, after all, the kernels' code (a PTX entry: its image) of the entries of `a` listed in `which`, parsed
// without them as twins; `file` holds the bytes `a` was parsed from. Entries are decoded again, side by side.
void hash_twin_entries(std::span<const std::uint8_t> file, Artifact& a, const std::vector<std::size_t>& which);

}  // namespace kqual::artifact::detail
