// ELF cubin (SASS) facts: arch from e_flags, per-kernel resources from the .nv.info records,
// static shared memory from .nv.shared.<kernel>, compiler identity from .note.nv.tkinfo.
// Format facts and their sources: docs/artifact.md.
#include <algorithm>
#include <map>

#include "elf.hpp"
#include "hash_lanes.hpp"
#include "images.hpp"
#include "kqual/core/sha256.hpp"

namespace kqual::artifact::detail {

namespace {

// .nv.info attribute ids (EIATTR_*) used here; the record layout is in docs/artifact.md.
constexpr std::uint8_t kEiattrMaxThreads = 0x05;
constexpr std::uint8_t kEiattrFrameSize = 0x11;
constexpr std::uint8_t kEiattrKparamInfo = 0x17;
constexpr std::uint8_t kEiattrMinStackSize = 0x12;
constexpr std::uint8_t kEiattrCbankParamSize = 0x19;
constexpr std::uint8_t kEiattrMaxStackSize = 0x23;
constexpr std::uint8_t kEiattrRegcount = 0x2f;
// .nv.info record formats
constexpr std::uint8_t kFmtNval = 1, kFmtBval = 2, kFmtHval = 3, kFmtSval = 4;

constexpr std::uint8_t kStoCudaEntry = 0x10;  // st_other bit of kernel entry symbols
constexpr int kSttFunc = 2;

struct InfoRecord {
  std::uint8_t format = 0;
  std::uint8_t attr = 0;
  std::uint16_t hval = 0;                 // NVAL/BVAL/HVAL: the value
  std::span<const std::uint8_t> data;     // SVAL: the payload
};

std::vector<InfoRecord> parse_info(std::span<const std::uint8_t> sec, const std::string& ctx) {
  std::vector<InfoRecord> recs;
  Reader r(sec, ctx);
  std::uint64_t off = 0;
  while (off < sec.size()) {
    InfoRecord rec;
    rec.format = r.u8(off, "record format");
    rec.attr = r.u8(off + 1, "record attribute");
    const std::uint16_t v = r.u16(off + 2, "record value/size");
    off += 4;
    switch (rec.format) {
      case kFmtNval: case kFmtBval: case kFmtHval: rec.hval = v; break;
      case kFmtSval: rec.data = r.sub(off, v, "record payload"); off += v; break;
      default: fail(ctx, fmt::format("unknown record format {} at offset {}", rec.format, off - 4));
    }
    recs.push_back(rec);
  }
  return recs;
}

// Collapses runs of whitespace (ptxas pads its option string).
std::string squeeze(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool sp = c == ' ' || c == '\t' || c == '\n';
    if (sp) { if (!out.empty() && out.back() != ' ') out.push_back(' '); }
    else out.push_back(c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Walks ELF notes in a SHT_NOTE section; calls f(type, owner, desc).
template <class F>
void for_each_note(std::span<const std::uint8_t> sec, const std::string& ctx, F&& f) {
  Reader r(sec, ctx);
  std::uint64_t off = 0;
  while (off + 12 <= sec.size()) {
    const std::uint64_t namesz = r.u32(off, "note namesz"), descsz = r.u32(off + 4, "note descsz");
    const std::uint32_t type = r.u32(off + 8, "note type");
    const std::uint64_t name_off = off + 12, desc_off = name_off + ((namesz + 3) & ~3ull);
    auto name = r.sub(name_off, namesz, "note name");
    auto desc = r.sub(desc_off, descsz, "note descriptor");
    std::string owner(reinterpret_cast<const char*>(name.data()), name.size());
    while (!owner.empty() && owner.back() == 0) owner.pop_back();
    f(type, owner, desc);
    off = desc_off + ((descsz + 3) & ~3ull);
  }
}

std::string cstr_at(std::span<const std::uint8_t> tab, std::uint32_t off) {
  if (off >= tab.size()) return {};
  std::size_t end = off;
  while (end < tab.size() && tab[end] != 0) ++end;
  return std::string(reinterpret_cast<const char*>(tab.data() + off), end - off);
}

// The ptxas identity (.note.nv.tkinfo) and the CUDA API version (.note.nv.cuinfo) of a cubin, when present.
void read_compiler_identity(const Elf& elf, std::span<const std::uint8_t> image, const std::string& ctx, Entry& e) {
  if (const ElfSection* tk = elf.find(".note.nv.tkinfo")) {
    const std::string nctx = ctx + ": .note.nv.tkinfo";
    for_each_note(section_bytes(image, *tk, nctx), nctx, [&](std::uint32_t type, const std::string& owner, auto desc) {
      if (owner != "NVIDIA Corp" || type != 2000 || desc.size() < 24) return;
      // desc: u32 format version, then u32 offsets (object name, tool name, tool version, tool
      // branch/build, tool options) into the string table that follows at +24.
      Reader dr(desc, nctx);
      auto tab = desc.subspan(24);
      CompilerInfo ci;
      ci.tool = printable(cstr_at(tab, dr.u32(8, "tool name offset")));
      ci.version = printable(cstr_at(tab, dr.u32(12, "tool version offset")));
      ci.build = printable(cstr_at(tab, dr.u32(16, "tool build offset")));
      ci.options = printable(squeeze(cstr_at(tab, dr.u32(20, "tool options offset"))));
      e.compiler = ci;
    });
  }
  if (const ElfSection* cu = elf.find(".note.nv.cuinfo")) {
    const std::string nctx = ctx + ": .note.nv.cuinfo";
    for_each_note(section_bytes(image, *cu, nctx), nctx, [&](std::uint32_t type, const std::string& owner, auto desc) {
      if (owner != "NVIDIA Corp" || type != 1000 || desc.size() < 8) return;
      Reader dr(desc, nctx);
      if (!e.compiler) e.compiler = CompilerInfo{};
      e.compiler->cuda_api_version = static_cast<int>(dr.u32(4, "CUDA API version"));
    });
  }
}

}  // namespace

void parse_cubin_image(std::span<const std::uint8_t> image, const std::string& ctx, Entry& e, std::string* image_sha256,
                       bool code_hashes) {
  const Elf elf = parse_elf(image, ctx);
  if (elf.machine != kEmCuda) fail(ctx, fmt::format("ELF e_machine is {}, not 190 (EM_CUDA): not a cubin", elf.machine));

  // Arch: ABI version >= 8 (CUDA 12.8+ ptxas) keeps the SM in e_flags bits 8..15; older cubins in
  // bits 0..7 with 0x800 for arch-specific ('a') code. Newer cubins mark 'a' in .nv.compat.
  Arch arch;
  int sm = 0;
  bool accel = false;
  if (elf.abi_version >= 8) {
    sm = static_cast<int>((elf.flags >> 8) & 0xff);
  } else {
    sm = static_cast<int>(elf.flags & 0xff);
    accel = (elf.flags & 0x800) != 0;
  }
  if (sm == 0) fail(ctx, fmt::format("e_flags {:#x} carry no SM architecture", elf.flags));
  if (const ElfSection* compat = elf.find(".nv.compat")) {
    auto recs = parse_info(section_bytes(image, *compat, ctx), ctx + ": .nv.compat");
    for (const auto& r : recs)
      if (r.format == kFmtBval && r.attr == 0x09 && r.hval != 0) accel = true;
  }
  arch.major = sm / 10;
  arch.minor = sm % 10;
  arch.suffix = accel ? 'a' : 0;
  // A fatbin entry header may already know better (it marks 'f' too): keep its suffix if set.
  if (e.arch.number() == 0 || e.arch.number() != arch.number()) {
    if (e.arch.number() != 0 && e.arch.number() != arch.number())
      fail(ctx, fmt::format("entry header says {}, but the cubin's e_flags say sm_{}", e.arch.str(), sm));
    e.arch = arch;
  } else if (e.arch.suffix == 0) {
    e.arch.suffix = arch.suffix;
  }
  e.arch.virtual_ = false;

  // Kernels: FUNC symbols marked as entries.
  std::map<std::uint32_t, KernelInfo*> by_symbol;  // symbol index -> kernel
  e.kernels.clear();
  for (std::size_t i = 0; i < elf.symbols.size(); ++i) {
    const auto& s = elf.symbols[i];
    if (s.type() == kSttFunc && (s.other & kStoCudaEntry) && !s.name.empty()) {
      KernelInfo k;
      k.name = s.name;  // raw for the section lookups below; made printable at the end
      e.kernels.push_back(std::move(k));
    }
  }
  for (std::size_t i = 0, j = 0; i < elf.symbols.size(); ++i) {
    const auto& s = elf.symbols[i];
    if (s.type() == kSttFunc && (s.other & kStoCudaEntry) && !s.name.empty()) by_symbol[static_cast<std::uint32_t>(i)] = &e.kernels[j++];
  }
  // The reserved shared-memory prefix ptxas lays out at the start of every kernel's shared window
  // on sm_90+ (1 KiB); the driver's CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES excludes it.
  std::uint64_t reserved_shared = 0;
  for (const auto& s : elf.symbols) {
    if (s.name == ".nv.reservedSmem.cap") reserved_shared = s.value;
    if (s.name == ".nv.reservedSmem.offset0" && reserved_shared == 0 && arch.major >= 9) reserved_shared = 1024;
  }

  // Global .nv.info: per-kernel registers and frame, keyed by symbol index.
  if (const ElfSection* info = elf.find(".nv.info")) {
    const std::string ictx = ctx + ": .nv.info";
    for (const auto& r : parse_info(section_bytes(image, *info, ictx), ictx)) {
      if (r.format != kFmtSval || r.data.size() < 8) continue;
      Reader rr(r.data, ictx);
      const std::uint32_t sym = rr.u32(0, "symbol index"), val = rr.u32(4, "value");
      auto it = by_symbol.find(sym);
      if (it == by_symbol.end()) continue;  // device functions, not kernels
      switch (r.attr) {
        case kEiattrRegcount: it->second->registers = static_cast<int>(val); break;
        case kEiattrFrameSize: it->second->local_bytes = val; break;
        case kEiattrMinStackSize:
        case kEiattrMaxStackSize: it->second->max_stack_bytes = std::max<std::uint64_t>(it->second->max_stack_bytes, val); break;
        default: break;
      }
    }
  }
  // The image and every kernel's code are hashed together at the end (two at a time: hash_lanes.cpp).
  std::vector<std::span<const std::uint8_t>> to_hash;
  std::vector<std::string*> hashes;
  if (image_sha256) {
    to_hash.push_back(image);
    hashes.push_back(image_sha256);
  }
  for (auto& k : e.kernels) {
    const std::string kctx = ctx + ": kernel " + k.name;
    if (const ElfSection* info = elf.find(".nv.info." + k.name)) {
      for (const auto& r : parse_info(section_bytes(image, *info, kctx + " .nv.info"), kctx + " .nv.info")) {
        if (r.attr == kEiattrMaxThreads && r.format == kFmtSval && r.data.size() >= 12) {
          Reader rr(r.data, kctx);
          const std::uint64_t t = std::uint64_t{rr.u32(0, "max threads x")} * rr.u32(4, "max threads y") * rr.u32(8, "max threads z");
          k.max_threads = static_cast<int>(std::min<std::uint64_t>(t, 1u << 30));
        } else if (r.attr == kEiattrCbankParamSize && r.format == kFmtHval) {
          k.param_bytes = r.hval;
        } else if (r.attr == kEiattrKparamInfo && r.format == kFmtSval && r.data.size() >= 12) {
          // {u32 index, u16 ordinal, u16 offset, u32 packed: size in bytes in bits 18..31}
          // (checked against kernels of known signatures: docs/artifact.md)
          Reader rr(r.data, kctx);
          ParamInfo p;
          p.ordinal = rr.u16(4, "parameter ordinal");
          p.offset = rr.u16(6, "parameter offset");
          p.size = rr.u32(8, "parameter size") >> 18;
          k.params.push_back(p);
        }
      }
      // Recorded last parameter first.
      std::sort(k.params.begin(), k.params.end(), [](const ParamInfo& a, const ParamInfo& b) { return a.ordinal < b.ordinal; });
    }
    if (const ElfSection* sh = elf.find(".nv.shared." + k.name)) {
      k.shared_section_bytes = sh->size;
      k.static_shared_bytes = sh->size > reserved_shared ? sh->size - reserved_shared : 0;
    }
    if (const ElfSection* text = elf.find(".text." + k.name)) {
      auto code = section_bytes(image, *text, kctx + " .text");
      k.code_bytes = code.size();
      if (code_hashes) {
        to_hash.push_back(code);
        hashes.push_back(&k.code_sha256);
      }
    }
  }
  const std::vector<std::string> digests = sha256_hex_all(to_hash);
  for (std::size_t i = 0; i < digests.size(); ++i) *hashes[i] = digests[i];

  for (auto& k : e.kernels) k.name = printable(k.name);

  read_compiler_identity(elf, image, ctx, e);
}

}  // namespace kqual::artifact::detail
