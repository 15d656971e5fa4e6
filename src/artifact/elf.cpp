#include "elf.hpp"

namespace kqual::artifact::detail {

namespace {
constexpr std::uint32_t kShtSymtab = 2;
constexpr std::uint32_t kShtNobits = 8;
constexpr std::size_t kMaxSections = 1 << 20;   // far above real cubins; stops absurd counts early

std::string str_at(std::span<const std::uint8_t> strtab, std::uint64_t off, const std::string& ctx,
                   const char* what) {
  if (off >= strtab.size()) fail(ctx, fmt::format("{} name offset {} outside the string table ({} bytes)", what, off, strtab.size()));
  std::size_t end = static_cast<std::size_t>(off);
  while (end < strtab.size() && strtab[end] != 0) ++end;
  if (end == strtab.size()) fail(ctx, fmt::format("{} name at offset {} is not NUL-terminated", what, off));
  return std::string(reinterpret_cast<const char*>(strtab.data() + off), end - static_cast<std::size_t>(off));
}
}  // namespace

bool looks_like_elf(std::span<const std::uint8_t> b) {
  return b.size() >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

std::span<const std::uint8_t> section_bytes(std::span<const std::uint8_t> bytes, const ElfSection& s,
                                            const std::string& context) {
  if (s.type == kShtNobits) return {};
  Reader r(bytes, context);
  return r.sub(s.offset, s.size, ("section " + s.name).c_str());
}

Elf parse_elf(std::span<const std::uint8_t> bytes, const std::string& context, bool with_symbols) {
  Reader r(bytes, context);
  if (!looks_like_elf(bytes)) fail(context, "not an ELF file (bad magic)");
  if (r.u8(4, "ELF class") != 2) fail(context, "unsupported ELF class (only 64-bit ELF is supported)");
  if (r.u8(5, "ELF data encoding") != 1) fail(context, "unsupported ELF byte order (only little-endian)");
  Elf e;
  e.abi_version = r.u8(8, "e_ident[EI_ABIVERSION]");
  e.machine = r.u16(18, "e_machine");
  e.flags = r.u32(48, "e_flags");
  const std::uint64_t shoff = r.u64(40, "e_shoff");
  const std::uint16_t shentsize = r.u16(58, "e_shentsize");
  std::uint64_t shnum = r.u16(60, "e_shnum");
  std::uint32_t shstrndx = r.u16(62, "e_shstrndx");
  if (shoff == 0) fail(context, "ELF has no section header table (e_shoff = 0)");
  // Program headers (cubins have them; the driver loads their segments): table and every
  // segment's file range must lie inside the file.
  const std::uint64_t phoff = r.u64(32, "e_phoff");
  const std::uint16_t phentsize = r.u16(54, "e_phentsize");
  const std::uint16_t phnum = r.u16(56, "e_phnum");
  if (phnum != 0 && phnum != 0xffff) {
    if (phentsize < 56) fail(context, fmt::format("e_phentsize {} is smaller than an ELF64 program header (56)", phentsize));
    if (!in_bounds(bytes.size(), phoff, std::uint64_t{phnum} * phentsize))
      fail(context, fmt::format("program header table ({} x {} bytes at offset {}) lies outside the file ({} bytes)", phnum,
                                phentsize, phoff, bytes.size()));
    for (std::uint64_t i = 0; i < phnum; ++i) {
      const std::uint64_t h = phoff + i * phentsize;
      const std::uint64_t off = r.u64(h + 8, "p_offset"), filesz = r.u64(h + 32, "p_filesz");
      if (!in_bounds(bytes.size(), off, filesz))
        fail(context, fmt::format("segment {} [{}, +{}) lies outside the file ({} bytes)", i, off, filesz, bytes.size()));
    }
  }
  if (shentsize < 64) fail(context, fmt::format("e_shentsize {} is smaller than an ELF64 section header (64)", shentsize));
  // Extended numbering (ELF spec): counts that do not fit live in section 0.
  if (shnum == 0) shnum = r.u64(shoff + 32, "section 0 sh_size (extended e_shnum)");
  if (shstrndx == 0xffff) shstrndx = r.u32(shoff + 40, "section 0 sh_link (extended e_shstrndx)");
  if (shnum > kMaxSections || !in_bounds(bytes.size(), shoff, shnum * shentsize))
    fail(context, fmt::format("section header table ({} x {} bytes at offset {}) lies outside the file ({} bytes)",
                              shnum, shentsize, shoff, bytes.size()));
  struct Raw { std::uint32_t name; ElfSection s; };
  std::vector<Raw> raw(static_cast<std::size_t>(shnum));
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const std::uint64_t h = shoff + i * shentsize;
    auto& s = raw[static_cast<std::size_t>(i)];
    s.name = r.u32(h + 0, "sh_name");
    s.s.type = r.u32(h + 4, "sh_type");
    s.s.flags = r.u64(h + 8, "sh_flags");
    s.s.offset = r.u64(h + 24, "sh_offset");
    s.s.size = r.u64(h + 32, "sh_size");
    s.s.link = r.u32(h + 40, "sh_link");
    s.s.info = r.u32(h + 44, "sh_info");
    if (s.s.type != kShtNobits && i != 0 && !in_bounds(bytes.size(), s.s.offset, s.s.size))
      fail(context, fmt::format("section {} data [{}, +{}) lies outside the file ({} bytes)", i, s.s.offset, s.s.size,
                                bytes.size()));
  }
  std::span<const std::uint8_t> shstr;
  if (shstrndx != 0) {
    if (shstrndx >= shnum) fail(context, fmt::format("e_shstrndx {} is not a section (there are {})", shstrndx, shnum));
    shstr = section_bytes(bytes, raw[shstrndx].s, context);
  }
  e.sections.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    ElfSection s = raw[i].s;
    if (!shstr.empty() && i != 0) s.name = str_at(shstr, raw[i].name, context, fmt::format("section {}", i).c_str());
    e.sections.push_back(std::move(s));
  }
  // Symbols: the first SHT_SYMTAB, names from its sh_link string table.
  for (const auto& s : e.sections) {
    if (!with_symbols || s.type != kShtSymtab) continue;
    if (s.link >= e.sections.size()) fail(context, fmt::format("symbol table {} links to missing string table {}", s.name, s.link));
    auto sym = section_bytes(bytes, s, context);
    auto strtab = section_bytes(bytes, e.sections[s.link], context);
    Reader sr(sym, context + ": " + s.name);
    const std::size_t count = sym.size() / 24;
    e.symbols.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t o = i * 24ull;
      ElfSymbol y;
      const std::uint32_t nm = sr.u32(o, "st_name");
      y.info = sr.u8(o + 4, "st_info");
      y.other = sr.u8(o + 5, "st_other");
      y.shndx = sr.u16(o + 6, "st_shndx");
      y.value = sr.u64(o + 8, "st_value");
      y.size = sr.u64(o + 16, "st_size");
      if (nm != 0) y.name = str_at(strtab, nm, context, fmt::format("symbol {}", i).c_str());
      e.symbols.push_back(std::move(y));
    }
    break;
  }
  return e;
}

}  // namespace kqual::artifact::detail
