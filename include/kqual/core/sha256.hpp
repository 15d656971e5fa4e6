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
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

std::string sha256_hex(const void* data, std::size_t size);
inline std::string sha256_hex(std::string_view s) { return sha256_hex(s.data(), s.size()); }
std::string sha256_file_hex(const std::string& path);

}  // namespace kqual
