#pragma once
// Minimal ELF64 little-endian reader over untrusted bytes: section headers, names, symbols.
// Used for cubins (e_machine 190, EM_CUDA) and for host executables / shared libraries that
// carry an embedded fatbin (.nv_fatbin). Every offset is checked against the buffer.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "reader.hpp"

namespace kqual::artifact::detail {

inline constexpr std::uint16_t kEmCuda = 190;

struct ElfSection {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t flags = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint32_t info = 0;
};

struct ElfSymbol {
  std::string name;
  std::uint8_t info = 0;   // bind << 4 | type
  std::uint8_t other = 0;  // CUDA: 0x10 marks a kernel entry (STO_CUDA_ENTRY)
  std::uint16_t shndx = 0;
  std::uint64_t value = 0;
  std::uint64_t size = 0;
  int type() const { return info & 0xf; }
};

struct Elf {
  std::uint16_t machine = 0;
  std::uint32_t flags = 0;      // e_flags
  std::uint8_t abi_version = 0; // e_ident[EI_ABIVERSION]
  std::vector<ElfSection> sections;
  std::vector<ElfSymbol> symbols;  // from the first SHT_SYMTAB, if any

  const ElfSection* find(std::string_view name) const {
    for (const auto& s : sections)
      if (s.name == name) return &s;
    return nullptr;
  }
};

bool looks_like_elf(std::span<const std::uint8_t> b);
// Throws Error(input) with `context` for anything outside the buffer or inconsistent.
// with_symbols = false skips .symtab (host binaries: not needed, possibly huge).
Elf parse_elf(std::span<const std::uint8_t> bytes, const std::string& context, bool with_symbols = true);
// Contents of a section with file data (not SHT_NOBITS), bounds-checked.
std::span<const std::uint8_t> section_bytes(std::span<const std::uint8_t> bytes, const ElfSection& s,
                                            const std::string& context);

}  // namespace kqual::artifact::detail
