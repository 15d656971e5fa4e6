#pragma once
// SHA-256 (FIPS 180-4), written here: artifact identity hashes every loaded image.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kqual {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  std::array<std::uint8_t, 32> finish();
  std::string finish_hex();

 private:
  void blocks(const std::uint8_t* p, std::size_t n);  // n whole 64-byte blocks (SHA-NI where the CPU has it)
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

std::string sha256_hex(const void* data, std::size_t size);
inline std::string sha256_hex(std::string_view s) { return sha256_hex(s.data(), s.size()); }
std::string sha256_file_hex(const std::string& path);

namespace detail {
bool sha256_hardware_available();    // the CPU has the SHA extensions (used unless forced off)
void sha256_force_portable(bool on);  // tests: compare both paths
}  // namespace detail

}  // namespace kqual
