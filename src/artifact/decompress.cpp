// Decoders for compressed fatbin entries. LZ4 *block* format (no frame), written from the public
// format description (https://github.com/lz4/lz4/blob/dev/doc/lz4_Block_format.md); zstd through
// the static libzstd (streaming, so output grows only as far as the data really expands).
#include <zstd.h>

#include <algorithm>
#include <memory>

#include "images.hpp"
#include "kqual/artifact/artifact.hpp"
#include "reader.hpp"

namespace kqual::artifact {

using detail::fail;

namespace detail {

void lz4_block_decompress_into(std::span<const std::uint8_t> src, std::uint64_t expected_size, const std::string& what,
                               ImageBuffer& out) {
  if (expected_size > kMaxImageBytes)
    fail(what, fmt::format("LZ4: decompressed size {} exceeds the {} byte limit", expected_size, kMaxImageBytes));
  // A sequence of >= 1 input byte produces at most ~255 output bytes per input byte; cap the
  // reservation so a lying header cannot make us allocate before any data is decoded.
  out.clear();
  out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(expected_size, src.size() * 256ull + 64)));
  std::size_t ip = 0;
  const std::size_t n = src.size();
  auto read_length = [&](std::size_t base, const char* which) -> std::uint64_t {
    std::uint64_t len = base;
    if (base != 15) return len;
    while (true) {
      if (ip >= n) fail(what, fmt::format("LZ4: input ends inside a {} length at byte {}", which, ip));
      std::uint8_t b = src[ip++];
      len += b;
      if (len > expected_size) fail(what, fmt::format("LZ4: {} length {} exceeds the decompressed size {}", which, len, expected_size));
      if (b != 255) return len;
    }
  };
  while (true) {
    if (ip >= n) fail(what, fmt::format("LZ4: input ends at byte {} before the last sequence", ip));
    const std::uint8_t token = src[ip++];
    const std::uint64_t lit = read_length(token >> 4, "literal");
    if (lit > n - ip) fail(what, fmt::format("LZ4: literal run of {} bytes at byte {} passes the input end ({})", lit, ip, n));
    if (lit > expected_size - out.size())
      fail(what, fmt::format("LZ4: output would exceed the declared size {}", expected_size));
    out.insert(out.end(), src.begin() + static_cast<std::ptrdiff_t>(ip), src.begin() + static_cast<std::ptrdiff_t>(ip + lit));
    ip += static_cast<std::size_t>(lit);
    if (ip == n) break;  // the last sequence has literals only
    if (n - ip < 2) fail(what, fmt::format("LZ4: input ends inside a match offset at byte {}", ip));
    const std::size_t offset = static_cast<std::size_t>(src[ip]) | (static_cast<std::size_t>(src[ip + 1]) << 8);
    ip += 2;
    if (offset == 0 || offset > out.size())
      fail(what, fmt::format("LZ4: match offset {} at byte {} points before the output start ({} bytes decoded)",
                             offset, ip - 2, out.size()));
    const std::uint64_t match = read_length(token & 15u, "match") + 4;
    if (match > expected_size - out.size())
      fail(what, fmt::format("LZ4: output would exceed the declared size {}", expected_size));
    std::size_t from = out.size() - offset;
    for (std::uint64_t i = 0; i < match; ++i) out.push_back(out[from + i]);  // may overlap: byte by byte
  }
  if (out.size() != expected_size)
    fail(what, fmt::format("LZ4: decoded {} bytes, the entry header declares {}", out.size(), expected_size));
}

std::size_t declared_size(std::uint64_t n) { return static_cast<std::size_t>(n); }

void zstd_decompress_into(std::span<const std::uint8_t> src, std::uint64_t expected_size, const std::string& what,
                          ImageBuffer& out) {
  if (expected_size > kMaxImageBytes)
    fail(what, fmt::format("zstd: decompressed size {} exceeds the {} byte limit", expected_size, kMaxImageBytes));
  // One decoder per thread, reset per frame: creating one per entry cost ~2 % of a library's parse
  // (thousands of entries).
  struct DStream {
    ZSTD_DStream* p = ZSTD_createDStream();
    ~DStream() { ZSTD_freeDStream(p); }
  };
  thread_local DStream ds;
  if (!ds.p) throw_error(ErrorKind::internal, "ZSTD_createDStream failed");
  ZSTD_DCtx_reset(ds.p, ZSTD_reset_session_and_parameters);
  // Cap the window so a hostile frame cannot demand a huge history buffer.
  ZSTD_DCtx_setParameter(ds.p, ZSTD_d_windowLogMax, 27);
  // A frame that declares the size the entry header declares is decoded in one call into `out`
  // sized up front: the buffer's growth writes nothing, so a header that lies costs address space,
  // not memory, and the decoder writes the output once (streaming copies it from its window).
  if (ZSTD_getFrameContentSize(src.data(), src.size()) == expected_size) {
    out.resize(declared_size(expected_size));
    const std::size_t n = ZSTD_decompressDCtx(ds.p, out.data(), out.size(), src.data(), src.size());
    if (ZSTD_isError(n)) fail(what, fmt::format("zstd: {}", ZSTD_getErrorName(n)));
    if (n != out.size()) fail(what, fmt::format("zstd: decoded {} bytes, the entry header declares {}", n, expected_size));
    return;
  }
  // Decoded straight into `out`, which grows (doubling, up to the declared size) only as the data
  // really decodes: a lying header cannot make us allocate first. A caller that reuses `out`
  // across entries pays neither the growth nor the page faults again.
  constexpr std::size_t kStep = std::size_t(1) << 16;
  const auto declared = static_cast<std::size_t>(expected_size);
  std::size_t have = 0;
  ZSTD_inBuffer in{src.data(), src.size(), 0};
  while (true) {
    // Room for kStep more bytes, or up to one past the declared size (so overflow is seen).
    if (out.size() - have < kStep && out.size() < declared + 1)
      out.resize(std::min(std::max(have * 2, have + kStep), declared + 1));
    ZSTD_outBuffer o{out.data() + have, out.size() - have, 0};
    const std::size_t last = ZSTD_decompressStream(ds.p, &o, &in);
    if (ZSTD_isError(last)) fail(what, fmt::format("zstd: {} (at input byte {})", ZSTD_getErrorName(last), in.pos));
    have += o.pos;
    if (have > declared) fail(what, fmt::format("zstd: output exceeds the declared size {}", expected_size));
    if (last == 0) break;                              // frame complete
    if (in.pos == in.size && o.pos < o.size)           // no input left and no progress pending
      fail(what, "zstd: input ends inside the frame (truncated)");
  }
  if (have != declared)
    fail(what, fmt::format("zstd: decoded {} bytes, the entry header declares {}", have, expected_size));
  out.resize(have);
}

}  // namespace detail

std::vector<std::uint8_t> lz4_block_decompress(std::span<const std::uint8_t> src, std::uint64_t expected_size,
                                               const std::string& what) {
  detail::ImageBuffer out;
  detail::lz4_block_decompress_into(src, expected_size, what, out);
  return {out.begin(), out.end()};
}

std::vector<std::uint8_t> zstd_decompress(std::span<const std::uint8_t> src, std::uint64_t expected_size,
                                          const std::string& what) {
  detail::ImageBuffer out;
  detail::zstd_decompress_into(src, expected_size, what, out);
  return {out.begin(), out.end()};
}

}  // namespace kqual::artifact
