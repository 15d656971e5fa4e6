// The functions kqual's worker calls in the recorder (tools/torch/kqual_torch_timing.py, class Recorder):
// marks around each call, the recorder's own reads of device memory, its own uploads of kqual's datasets,
// draws, and flushes. Each writes one line of the record (format: kqual_record.cpp).
#include <cuda.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kqual/bench/record_mac.hpp"
#include "recorder_state.hpp"

using namespace kqual_recorder;

extern "C" {

// 1 while recording.
__attribute__((visibility("default"))) int kqual_record_active(void) { return st().active ? 1 : 0; }

// A mark in the record: every API call after it, up to the next mark, is between the two. stream: the
// CUDA stream handle the worker calls on (its CUPTI id is written).
__attribute__((visibility("default"))) int kqual_record_mark(const char* label, unsigned long long stream) {
  State& s = st();
  if (!s.active) return 0;
  CUcontext ctx = nullptr;
  if (s.ctx_get_current) s.ctx_get_current(&ctx);
  if (ctx) {
    bool fresh = false;
    {
      std::lock_guard<std::mutex> lock(s.contexts_mu);
      fresh = s.contexts.insert(ctx).second;
    }
    std::uint32_t legacy = 0;
    if (fresh && s.cupti.stream_id(ctx, nullptr, 0, &legacy) == CUPTI_SUCCESS)
      emit("C\t%llx\t%u", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(ctx)), legacy);
  }
  std::uint32_t sid = 0;
  if (!ctx || s.cupti.stream_id(ctx, reinterpret_cast<CUstream>(stream), 0, &sid) != CUPTI_SUCCESS) sid = 0xffffffffu;
  std::uint64_t now = 0;
  s.cupti.timestamp(&now);
  std::string l = label ? label : "?";
  clean(l);
  emit("X\t%s\t%u\t%ld\t%u\t%llu", l.c_str(), s.last_corr.load(), tid(), sid, static_cast<unsigned long long>(now));
  return 1;
}

// The recorder reads `bytes` of device memory at `ptr` itself (the worker has synchronised the device
// first) and writes "R label ptr bytes code status last_corr": the content's keyed code (kqual_record::ContentMac).
// kqual compares it with the code of the bytes the worker wrote to its file for the same label, so the
// values kqual judges are the values that were in the GPU's memory, whatever the worker's Python did.
__attribute__((visibility("default"))) int kqual_record_read(const char* label, unsigned long long ptr, unsigned long long bytes) {
  State& s = st();
  if (!s.active) return 0;
  std::string l = label ? label : "?";
  clean(l);
  const std::uint32_t before = s.last_corr.load();  // every API call up to here came before the read
  kqual_record::ContentMac mac(s.key);
  int status = s.memcpy_dtoh ? 0 : -1;
  constexpr std::size_t kChunk = std::size_t(32) << 20;
  std::vector<unsigned char> buf(std::min<std::size_t>(kChunk, std::max<unsigned long long>(bytes, 1)));
  for (unsigned long long at = 0; at < bytes && status == 0; at += kChunk) {
    const std::size_t n = std::size_t(std::min<unsigned long long>(kChunk, bytes - at));
    status = int(s.memcpy_dtoh(buf.data(), CUdeviceptr(ptr + at), n));
    if (status == 0) mac.update(buf.data(), n);
  }
  emit("R\t%s\t%llx\t%llu\t%016llx\t%d\t%u", l.c_str(), ptr, bytes, static_cast<unsigned long long>(status == 0 ? mac.final() : 0), status,
       before);
  return status == 0 ? 1 : 0;
}

// The recorder uploads kqual's dataset file `path` (`bytes` bytes) to device memory at `ptr` itself and writes
// "U label ptr bytes code status corrs": the keyed code of the bytes it copied (kqual_record::ContentMac) and
// the correlation ids of its own copies (comma-separated, "-" for none). kqual checks each code against its
// own dataset for the label, and every copy from the host outside the calls must be one of these: values
// computed on the host cannot be put on the GPU between the calls (docs/torch-submissions.md, "What the reads
// establish"). status: 0, -1 without the driver's copy, -2 a file not of `bytes` bytes, -3 unreadable, else
// the driver's error.
__attribute__((visibility("default"))) int kqual_record_upload(const char* label, unsigned long long ptr, const char* path,
                                                               unsigned long long bytes) {
  State& s = st();
  if (!s.active) return 0;
  std::string l = label ? label : "?";
  clean(l);
  kqual_record::ContentMac mac(s.key);
  std::vector<std::uint32_t> own;
  int status = s.memcpy_htod ? 0 : -1;
  const int fd = status == 0 && path ? ::open(path, O_RDONLY | O_CLOEXEC) : -1;
  struct stat info {};
  if (status == 0 && (fd < 0 || ::fstat(fd, &info) != 0)) status = -3;
  if (status == 0 && static_cast<unsigned long long>(info.st_size) != bytes) status = -2;
  constexpr std::size_t kChunk = std::size_t(32) << 20;
  std::vector<unsigned char> buf(status == 0 ? std::min<std::size_t>(kChunk, std::max<unsigned long long>(bytes, 1)) : 0);
  for (unsigned long long at = 0; at < bytes && status == 0; at += kChunk) {
    const std::size_t n = std::size_t(std::min<unsigned long long>(kChunk, bytes - at));
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(fd, buf.data() + got, n - got);
      if (r <= 0) break;
      got += std::size_t(r);
    }
    if (got != n) {
      status = -3;
      break;
    }
    mac.update(buf.data(), n);
    g_own_copies = &own;
    status = int(s.memcpy_htod(CUdeviceptr(ptr + at), buf.data(), n));
    g_own_copies = nullptr;
  }
  if (fd >= 0) ::close(fd);
  std::string corrs;
  for (std::uint32_t c : own) corrs += (corrs.empty() ? "" : ",") + std::to_string(c);
  emit("U\t%s\t%llx\t%llu\t%016llx\t%d\t%s", l.c_str(), ptr, bytes, static_cast<unsigned long long>(status == 0 ? mac.final() : 0), status,
       corrs.empty() ? "-" : corrs.c_str());
  return status == 0 ? 1 : 0;
}

// A number the worker cannot know before it asks: the keyed code of "draw\t" + label (kqual_record::ContentMac
// under the record's key, which the submission never sees), written as "D label value last_corr". kqual knows
// the key, so it recomputes every value, and the line's place among the marks says when it was asked: the
// worker draws a timed call's input shifts before the call and whether its output is verified after it
// (docs/torch-submissions.md, "Timed calls on fresh values").
__attribute__((visibility("default"))) unsigned long long kqual_record_draw(const char* label) {
  State& s = st();
  if (!s.active) return 0;
  std::string l = label ? label : "?";
  clean(l);
  const std::string what = "draw\t" + l;
  kqual_record::ContentMac mac(s.key);
  mac.update(what.data(), what.size());
  const unsigned long long v = mac.final();
  emit("D\t%s\t%016llx\t%u", l.c_str(), v, s.last_corr.load());
  return v;
}

// Every completed activity record written, then "F token dropped": the reader reads up to here.
__attribute__((visibility("default"))) int kqual_record_flush(const char* token) {
  State& s = st();
  if (!s.active) return 0;
  s.cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::size_t dropped = 0;
  s.cupti.dropped(nullptr, 0, &dropped);
  std::string t = token ? token : "?";
  clean(t);
  emit("F\t%s\t%zu", t.c_str(), dropped);
  std::lock_guard<std::mutex> lock(s.mu);
  flush_locked(s);
  return 1;
}
}
