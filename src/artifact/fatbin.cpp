// Fatbin containers: a 16-byte container header followed by entries, each with its own header
// (kind, arch, flags, sizes) and payload, optionally LZ4- or zstd-compressed. The layout is
// undocumented by NVIDIA; the facts used and where they come from are listed in docs/artifact.md.
#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "images.hpp"
#include "kqual/core/sha256.hpp"
#include "reader.hpp"
#include "reuse.hpp"

namespace kqual::artifact::detail {

namespace {
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::uint64_t kEntryHeaderMin = 64;
// Entry flags
constexpr std::uint64_t kFlagLz4 = 0x2000;
constexpr std::uint64_t kFlagZstd = 0x8000;
constexpr std::uint64_t kFlagArchSpecific = 0x100000;    // sm_90a / compute_90a
constexpr std::uint64_t kFlagFamilySpecific = 0x200000;  // sm_100f / compute_100f

bool printable(std::span<const std::uint8_t> s) {
  for (auto c : s)
    if (c != 0 && (c < 0x20 || c > 0x7e)) return false;
  return true;
}

void parse_entry(const Reader& r, std::uint64_t off, std::uint64_t ehs, std::uint64_t size, std::uint64_t file_off,
                 const std::string& ectx, bool sass_image_hash, bool code_hashes, Entry& e) {
  const std::uint16_t kind = r.u16(off + 0, "entry kind");
  const std::uint32_t csize = r.u32(off + 16, "entry compressed size");
  const std::uint32_t opt_desc = r.u32(off + 20, "entry options descriptor offset");
  const std::uint16_t minor = r.u16(off + 24, "entry minor version");
  const std::uint16_t major = r.u16(off + 26, "entry major version");
  const std::uint32_t arch = r.u32(off + 28, "entry arch");
  e.flags = r.u64(off + 40, "entry flags");
  const std::uint64_t dsize = r.u64(off + 56, "entry decompressed size");
  e.offset = file_off;
  e.kind = kind == 1 ? EntryKind::ptx : kind == 2 ? EntryKind::sass : kind == 8 ? EntryKind::nvvm_ir : EntryKind::other;
  if (arch == 0 || arch > 1000) fail(ectx, fmt::format("entry arch {} is not an SM number", arch));
  e.arch.major = static_cast<int>(arch / 10);
  e.arch.minor = static_cast<int>(arch % 10);
  e.arch.virtual_ = e.kind != EntryKind::sass;
  if ((e.flags & kFlagArchSpecific) && (e.flags & kFlagFamilySpecific))
    fail(ectx, fmt::format("entry flags {:#x} mark it both arch- and family-specific", e.flags));
  e.arch.suffix = (e.flags & kFlagArchSpecific) ? 'a' : (e.flags & kFlagFamilySpecific) ? 'f' : 0;
  if (e.kind == EntryKind::ptx) { e.ptx_isa_major = major; e.ptx_isa_minor = minor; }

  // Options descriptor (inside the header): u32 offset from the entry start, u32 size.
  if (opt_desc != 0) {
    if (opt_desc + 8ull > ehs) fail(ectx, fmt::format("options descriptor at +{} lies outside the {}-byte entry header", opt_desc, ehs));
    const std::uint32_t o = r.u32(off + opt_desc, "options offset"), n = r.u32(off + opt_desc + 4, "options size");
    if (n != 0) {
      if (std::uint64_t{o} + n > ehs) fail(ectx, fmt::format("options [{}, +{}) lie outside the {}-byte entry header", o, n, ehs));
      auto opt = r.sub(off + o, n, "entry options");
      if (e.kind == EntryKind::ptx && printable(opt)) {
        std::string s(reinterpret_cast<const char*>(opt.data()), opt.size());
        while (!s.empty() && (s.back() == 0 || s.back() == ' ')) s.pop_back();
        e.jit_options = s;
      }
    }
  }

  auto payload = r.sub(off + ehs, size, "entry payload");
  e.stored_bytes = size;
  // One buffer per thread, reused by every entry it decodes (see ImageBuffer).
  thread_local ImageBuffer owned;
  std::span<const std::uint8_t> image = payload;
  const bool lz4 = e.flags & kFlagLz4, zstd = e.flags & kFlagZstd;
  if (lz4 && zstd) fail(ectx, fmt::format("entry flags {:#x} claim both LZ4 and zstd compression", e.flags));
  if (lz4 || zstd) {
    if (csize == 0 || csize > size)
      fail(ectx, fmt::format("compressed size {} is 0 or larger than the stored payload ({} bytes)", csize, size));
    e.stored_bytes = csize;
    e.compression = lz4 ? Compression::lz4 : Compression::zstd;
    if (lz4) lz4_block_decompress_into(payload.first(csize), dsize, ectx, owned);
    else zstd_decompress_into(payload.first(csize), dsize, ectx, owned);
    image = std::span<const std::uint8_t>(owned.data(), owned.size());
  }
  if (e.kind == EntryKind::ptx)  // uncompressed PTX payloads are NUL-padded; compressed ones are not
    while (!image.empty() && image.back() == 0) image = image.first(image.size() - 1);
  e.image_bytes = image.size();
  if (e.kind == EntryKind::sass) {  // hashed there, beside the kernels' code
    parse_cubin_image(image, ectx, e, sass_image_hash && code_hashes ? &e.sha256 : nullptr, code_hashes);
  } else {
    if (code_hashes) e.sha256 = sha256_hex(image.data(), image.size());
    if (e.kind == EntryKind::ptx) parse_ptx_image(image, ectx, e);
  }
  if (owned.capacity() > (std::size_t(64) << 20)) ImageBuffer().swap(owned);  // keep no huge buffer alive
}
// Runs job(j) for every j of `order` (a permutation of 0 .. order.size() - 1, taken in that order) on up to 16
// threads, this one included, one only for fewer than 64 jobs. Each job touches only what is its own; the first
// job to throw, by j, is rethrown once all have ended.
template <class Job>
void run_jobs(const std::vector<std::size_t>& order, Job job) {
  std::vector<std::exception_ptr> errors(order.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t n; (n = next.fetch_add(1)) < order.size();) {
      try {
        job(order[n]);
      } catch (...) {
        errors[order[n]] = std::current_exception();
      }
    }
  };
  const std::size_t jobs = order.size();
  const std::size_t threads = jobs < 64 ? 1 : std::min<std::size_t>({std::max(1u, std::thread::hardware_concurrency()), 16, jobs});
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}
}  // namespace

void parse_fatbin_containers(std::span<const std::uint8_t> bytes, std::uint64_t base, const std::string& ctx,
                             std::vector<Entry>& out, std::vector<ContainerSpan>& spans, const FatbinParse& how) {
  Reader r(bytes, ctx);
  std::uint64_t off = 0;
  int containers = 0;
  // Headers are walked (and bounds-checked) first; the entries' images — decompression, hashes,
  // cubin and PTX parsing, most of the time for a large library — are then parsed in parallel.
  struct Job {
    std::size_t slot;            // index into out
    std::uint64_t e, ehs, size, end;
    std::string ectx;
  };
  std::vector<Job> jobs;
  while (off < bytes.size()) {
    // Containers inside .nv_fatbin are aligned; the gaps are zero.
    if (bytes[static_cast<std::size_t>(off)] == 0) {
      bool zeros = true;
      std::uint64_t z = off;
      // (z advances unconditionally: a short-circuited z++ looped forever on a non-zero byte;
      // found by the fuzzer, input tests/artifact/regressions/fatbin-zero-gap-loop.bin)
      for (; z < bytes.size() && z < off + 16; ++z) zeros = zeros && bytes[static_cast<std::size_t>(z)] == 0;
      if (zeros) { off = z; continue; }
    }
    const std::uint32_t magic = r.u32(off, "container magic");
    if (magic != kFatbinMagic)
      fail(ctx, fmt::format("no fatbin container magic (0xba55ed50) at offset {} (found {:#x})", base + off, magic));
    const std::uint16_t hs = r.u16(off + 6, "container header size");
    const std::uint64_t psz = r.u64(off + 8, "container payload size");
    if (hs < 16) fail(ctx, fmt::format("container at {}: header size {} < 16", base + off, hs));
    if (!in_bounds(bytes.size(), off + hs, psz))
      fail(ctx, fmt::format("container at {}: payload of {} bytes passes the end of the data ({} bytes)", base + off, psz,
                            bytes.size()));
    ++containers;
    const std::size_t container = spans.size();
    const std::uint64_t end = off + hs + psz;
    spans.push_back(ContainerSpan{container, base + off, hs + psz});
    std::uint64_t e = off + hs;
    while (e < end) {
      const std::size_t index = out.size();
      const std::string ectx = fmt::format("{}: entry {} (at offset {})", ctx, index, base + e);
      Reader er(bytes.first(static_cast<std::size_t>(end)), ectx);
      const std::uint64_t ehs = er.u32(e + 4, "entry header size");
      const std::uint64_t size = er.u64(e + 8, "entry payload size");
      if (ehs < kEntryHeaderMin) fail(ectx, fmt::format("entry header size {} < {}", ehs, kEntryHeaderMin));
      if (!in_bounds(end, e, ehs) || !in_bounds(end, e + ehs, size))
        fail(ectx, fmt::format("entry (header {} + payload {} bytes) passes the end of its container at {}", ehs, size,
                               base + end));
      Entry entry;
      entry.index = index;
      entry.container = container;
      entry.offset = base + e;
      out.push_back(std::move(entry));
      jobs.push_back(Job{out.size() - 1, e, ehs, size, end, ectx});
      e += ehs + size;
    }
    off = end;
  }
  if (containers == 0) fail(ctx, "no fatbin container found");
  if (how.headers_only) return;
  // Each job writes only its own entry; the first failing entry (in file order) is reported.
  // Largest payloads first: the threads then end together, where file order could leave one thread
  // decoding a large image alone at the end.
  std::vector<std::size_t> order(jobs.size());
  for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return jobs[a].size > jobs[b].size; });
  run_jobs(order, [&](std::size_t j) {
    const Job& job = jobs[j];
    const auto raw = bytes.subspan(static_cast<std::size_t>(job.e), static_cast<std::size_t>(job.ehs + job.size));
    if (how.reuse)  // the same header and stored bytes as an entry already parsed: the same entry, here
      if (const Entry* same = how.reuse->find(raw)) {
        Entry& e = out[job.slot];
        const std::size_t index = e.index, container = e.container;
        e = *same;
        e.index = index;
        e.container = container;
        e.offset = base + job.e;
        return;
      }
    std::uint64_t twin = 0;  // stored as in the other file of a diff: its code hashed only if needed
    if (how.twins)
      if (const Entry* t = how.twins->find(raw)) twin = t->index + 1;
    Reader er(bytes.first(static_cast<std::size_t>(job.end)), job.ectx);
    parse_entry(er, job.e, job.ehs, job.size, base + job.e, job.ectx, how.sass_image_hashes, twin == 0, out[job.slot]);
    out[job.slot].twin = twin;
  });
}

void hash_twin_entries(std::span<const std::uint8_t> file, Artifact& a, const std::vector<std::size_t>& which) {
  std::vector<std::size_t> order(which.size());
  for (std::size_t n = 0; n < order.size(); ++n) order[n] = n;
  run_jobs(order, [&](std::size_t n) {
    Entry& e = a.entries[which[n]];
    const std::string ectx = fmt::format("{}: entry {} (at offset {})", a.name, which[n], e.offset);
    Reader r(file, ectx);
    Entry again;
    parse_entry(r, e.offset, r.u32(e.offset + 4, "entry header size"), r.u64(e.offset + 8, "entry payload size"), e.offset, ectx,
                false, true, again);
    if (again.kernels.size() != e.kernels.size() || again.ptx_entries != e.ptx_entries)
      fail(ectx, "decoded differently the second time (the file changed while it was read)");
    for (std::size_t k = 0; k < e.kernels.size(); ++k) e.kernels[k].code_sha256 = std::move(again.kernels[k].code_sha256);
    if (e.kind != EntryKind::sass) e.sha256 = std::move(again.sha256);
  });
}

}  // namespace kqual::artifact::detail
