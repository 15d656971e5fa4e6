#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kqual {

// A file mapped read-only (or read-write when created with a size); unmapped on destruction.
class MappedFile {
 public:
  static MappedFile open_read(const std::filesystem::path& p);
  static MappedFile create(const std::filesystem::path& p, std::size_t bytes);  // read-write, truncates
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }

 private:
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// The folders of a ':'-separated list ($PATH, $KQUAL_BASELINES, $KQUAL_CONTRACTS), in order, empty
// items dropped: "a::b:" gives a, b.
std::vector<std::string> split_path_list(std::string_view list);

// Where kqual keeps what it may reuse across runs (extension builds, baselines' verdicts):
// $KQUAL_CACHE_DIR, else $XDG_CACHE_HOME/kqual, else ~/.cache/kqual, else a folder in the temp dir.
std::filesystem::path kqual_cache_dir();

void write_file(const std::filesystem::path& p, const void* data, std::size_t bytes);
// Write to <p>.<pid>.tmp then rename, so a crash never leaves a half-written result behind and two
// processes writing one file never mix their bytes. Throws Error(io) where it cannot write.
void write_file_atomic(const std::filesystem::path& p, const std::string& text);
std::string read_text_file(const std::filesystem::path& p);

// A private directory removed (recursively) on destruction; in /dev/shm when it exists, since
// tensors are exchanged with worker processes through it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix = "kqual");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Asks the kernel for transparent huge pages over [p, p + bytes) before it is first touched (the
// 2 MiB-aligned part; no-op where unsupported): a 128 MiB buffer is 32768 page faults in 4 KiB pages,
// 0.5 s on the CPU machine. Use as v.reserve(n); advise_huge_pages(v.data(), n * sizeof(T)); v.resize(n).
void advise_huge_pages(void* p, std::size_t bytes);

// Fast non-cryptographic 64-bit hash of a byte range (inputs before/after a launch).
std::uint64_t fast_hash64(const void* data, std::size_t bytes);

}  // namespace kqual
