#include "kqual/core/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "kqual/core/error.hpp"

namespace kqual {
namespace fs = std::filesystem;

namespace {

// Maps `bytes` of the open file `fd` (nothing for an empty file) and closes fd either way: the
// mapping outlives the descriptor.
std::uint8_t* map_and_close(int fd, std::size_t bytes, int prot, int flags, const fs::path& p) {
  void* a = bytes ? mmap(nullptr, bytes, prot, flags, fd, 0) : nullptr;
  const int map_errno = errno;  // before close() may change it
  ::close(fd);
  if (a == MAP_FAILED) throw_error(ErrorKind::io, fmt::format("cannot map '{}': {}", p.string(), std::strerror(map_errno)));
  return static_cast<std::uint8_t*>(a);
}

}  // namespace

MappedFile MappedFile::open_read(const fs::path& p) {
  MappedFile m;
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_error(ErrorKind::io, fmt::format("cannot open '{}': {}", p.string(), std::strerror(errno)));
  struct stat st{};
  fstat(fd, &st);
  m.size_ = std::size_t(st.st_size);
  m.data_ = map_and_close(fd, m.size_, PROT_READ, MAP_PRIVATE, p);
  return m;
}

MappedFile MappedFile::create(const fs::path& p, std::size_t bytes) {
  MappedFile m;
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw_error(ErrorKind::io, fmt::format("cannot create '{}': {}", p.string(), std::strerror(errno)));
  if (ftruncate(fd, off_t(bytes)) != 0) {
    ::close(fd);
    throw_error(ErrorKind::io, fmt::format("cannot size '{}' to {} bytes: {}", p.string(), bytes, std::strerror(errno)));
  }
  m.size_ = bytes;
  m.data_ = map_and_close(fd, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p);
  return m;
}

MappedFile::~MappedFile() {
  if (data_) munmap(data_, size_);
}
MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}
MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, size_);
    data_ = o.data_; size_ = o.size_;
    o.data_ = nullptr; o.size_ = 0;
  }
  return *this;
}

void write_file(const fs::path& p, const void* data, std::size_t bytes) {
  MappedFile m = MappedFile::create(p, bytes);
  if (bytes) std::memcpy(m.data(), data, bytes);
}

void write_file_atomic(const fs::path& p, const std::string& text) {
  // A temporary name of this process's: two processes writing one file (qualify runs side by side
  // keeping one cache entry) never interleave their bytes; the last rename wins whole.
  fs::path tmp = p;
  tmp += fmt::format(".{}.tmp", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_error(ErrorKind::io, fmt::format("cannot write '{}'", tmp.string()));
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw_error(ErrorKind::io, fmt::format("short write to '{}'", tmp.string()));
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw_error(ErrorKind::io, fmt::format("cannot rename into '{}'", p.string()));
  }
}

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> items;
  for (std::size_t b = 0; b <= list.size();) {
    std::size_t e = list.find(':', b);
    if (e == std::string_view::npos) e = list.size();
    if (e > b) items.emplace_back(list.substr(b, e - b));
    b = e + 1;
  }
  return items;
}

std::string read_text_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw_error(ErrorKind::io, fmt::format("cannot read '{}'", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ScratchDir::ScratchDir(const std::string& prefix) {
  fs::path base = fs::exists("/dev/shm") && access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::random_device rd;
  for (int i = 0; i < 100; ++i) {
    fs::path p = base / fmt::format("{}-{}-{:08x}", prefix, getpid(), rd());
    std::error_code ec;
    if (fs::create_directory(p, ec)) {
      fs::permissions(p, fs::perms::owner_all, ec);
      path_ = p;
      return;
    }
  }
  throw_error(ErrorKind::io, fmt::format("cannot create a scratch directory under '{}'", base.string()));
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

std::uint64_t fast_hash64(const void* data, std::size_t bytes) {
  // Word-at-a-time multiply/xorshift mixing; not cryptographic, only a mutation detector.
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ bytes;
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h ^= w * 0xBF58476D1CE4E5B9ull;
    h = (h << 27 | h >> 37) * 0x94D049BB133111EBull;
  }
  for (; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001B3ull;
  }
  h ^= h >> 31;
  return h;
}

}  // namespace kqual

namespace kqual {
void advise_huge_pages(void* p, std::size_t bytes) {
  const std::uintptr_t b = (reinterpret_cast<std::uintptr_t>(p) + 0x1FFFFF) & ~std::uintptr_t(0x1FFFFF);
  const std::uintptr_t e = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~std::uintptr_t(0x1FFFFF);
  if (e > b) (void)madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
}
std::filesystem::path kqual_cache_dir() {
  if (const char* c = std::getenv("KQUAL_CACHE_DIR"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "kqual";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "kqual";
  return std::filesystem::temp_directory_path() / "kqual-cache";
}

}  // namespace kqual
