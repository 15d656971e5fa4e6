#pragma once
// Parsers of single images (internal): a cubin (SASS) and PTX text. The fatbin and host-binary
// parsers call them for each decompressed entry.
#include <span>
#include <string>

#include "kqual/artifact/artifact.hpp"

namespace kqual::artifact::detail {

// Fills arch, kernels and compiler of `e` from an ELF cubin. `context` prefixes every error.
void parse_cubin_image(std::span<const std::uint8_t> image, const std::string& context, Entry& e);
// Fills arch (virtual), PTX ISA version and entry names from PTX text (may end in NUL padding).
void parse_ptx_image(std::span<const std::uint8_t> image, const std::string& context, Entry& e);
// Appends the entries of the fatbin container(s) in `bytes` (which may be followed by more
// containers and zero padding). `base` is the offset of `bytes` within the file, for messages.
// Each container's place in the file is appended to `spans`.
void parse_fatbin_containers(std::span<const std::uint8_t> bytes, std::uint64_t base, const std::string& context,
                             std::vector<Entry>& out, std::vector<ContainerSpan>& spans);

}  // namespace kqual::artifact::detail
