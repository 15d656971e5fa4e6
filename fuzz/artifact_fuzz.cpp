// libFuzzer target for the artifact parsers (issue 3): any byte string must parse or raise
// kqual::Error — never crash, hang, leak or trip ASan/UBSan. Built and run for a bounded time by
// scripts/test-artifact-hardening (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <span>

#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kqual::artifact;
  const std::span<const std::uint8_t> bytes(data, size);
  try {
    const Artifact a = parse_artifact_bytes(bytes, "fuzz");
    for (const char* t : {"sm_90", "sm_80", "sm_100"}) (void)select_for_arch(a, Arch::parse(t));
    (void)to_json(a).dump();
    (void)diff_artifacts(a, a, Arch::parse("sm_90"));
  } catch (const kqual::Error&) {
  }
  // The decoders on raw input too (sizes taken from the first bytes, bounded by the decoder).
  if (size >= 4) {
    const std::uint64_t want = (std::uint64_t{data[0]} | std::uint64_t{data[1]} << 8 | std::uint64_t{data[2]} << 16) & 0x3fffff;
    try { (void)lz4_block_decompress(bytes.subspan(3), want, "fuzz-lz4"); } catch (const kqual::Error&) {}
    try { (void)zstd_decompress(bytes.subspan(3), want, "fuzz-zstd"); } catch (const kqual::Error&) {}
  }
  return 0;
}
