#include "kqual/cuda/cupti.hpp"

#include <cupti_activity.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace kqual::cuda {
namespace {

struct Cupti {
  decltype(&::cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&::cuptiActivityEnable) enable = nullptr;
  decltype(&::cuptiActivityDisable) disable = nullptr;
  decltype(&::cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&::cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&::cuptiActivityPushExternalCorrelationId) push = nullptr;
  decltype(&::cuptiActivityPopExternalCorrelationId) pop = nullptr;
  decltype(&::cuptiGetResultString) result_string = nullptr;
  std::string path, unavailable;
};

// Where libcupti may be: $KQUAL_CUPTI, the loader's search path, then the toolkit's folders.
const Cupti& cupti() {
  static Cupti c;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> tries;
    if (const char* e = std::getenv("KQUAL_CUPTI"); e && *e) tries.emplace_back(e);
    for (const char* p : {"libcupti.so.13", "libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                          "/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/lib/libcupti.so.13",
                          "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13"})
      tries.emplace_back(p);
    void* h = nullptr;
    std::string errors;
    for (const auto& t : tries) {
      h = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h) {
        c.path = t;
        break;
      }
      const char* e = dlerror();
      errors += fmt::format("{}{}", errors.empty() ? "" : "; ", e ? e : t);
    }
    if (!h) {
      c.unavailable = "CUPTI not found (set KQUAL_CUPTI to libcupti.so): " + errors;
      return;
    }
    auto sym = [&](const char* n) { return dlsym(h, n); };
    c.register_callbacks = reinterpret_cast<decltype(c.register_callbacks)>(sym("cuptiActivityRegisterCallbacks"));
    c.enable = reinterpret_cast<decltype(c.enable)>(sym("cuptiActivityEnable"));
    c.disable = reinterpret_cast<decltype(c.disable)>(sym("cuptiActivityDisable"));
    c.flush_all = reinterpret_cast<decltype(c.flush_all)>(sym("cuptiActivityFlushAll"));
    c.next_record = reinterpret_cast<decltype(c.next_record)>(sym("cuptiActivityGetNextRecord"));
    c.push = reinterpret_cast<decltype(c.push)>(sym("cuptiActivityPushExternalCorrelationId"));
    c.pop = reinterpret_cast<decltype(c.pop)>(sym("cuptiActivityPopExternalCorrelationId"));
    c.result_string = reinterpret_cast<decltype(c.result_string)>(sym("cuptiGetResultString"));
    if (!c.register_callbacks || !c.enable || !c.disable || !c.flush_all || !c.next_record || !c.push || !c.pop)
      c.unavailable = c.path + " lacks the activity API entry points kqual uses";
  });
  return c;
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  if (cupti().result_string && cupti().result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return fmt::format("CUPTI error {}", int(r));
}

// Completed buffers, handed over by CUPTI's callbacks (called on CUPTI's threads).
std::mutex g_mu;
std::vector<std::pair<std::uint8_t*, std::size_t>> g_done;
constexpr std::size_t kBufferBytes = 4 << 20;

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_done.emplace_back(buffer, valid);
}

}  // namespace

std::string KernelActivity::library_path() { return cupti().path; }

std::unique_ptr<KernelActivity> KernelActivity::start(std::string* why) {
  const Cupti& c = cupti();
  if (!c.unavailable.empty()) {
    if (why) *why = c.unavailable;
    return nullptr;
  }
  static CUptiResult registered = c.register_callbacks(buffer_requested, buffer_completed);
  if (registered != CUPTI_SUCCESS) {
    if (why) *why = "cuptiActivityRegisterCallbacks: " + result_text(registered);
    return nullptr;
  }
  // External correlation records accompany API records only, so the driver API's records are on
  // too (they are skipped when read).
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_DRIVER,
                               CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}) {
    if (CUptiResult r = c.enable(k); r != CUPTI_SUCCESS) {
      if (why) *why = fmt::format("cuptiActivityEnable({}): {}", int(k), result_text(r));
      c.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      c.disable(CUPTI_ACTIVITY_KIND_DRIVER);
      return nullptr;
    }
  }
  return std::unique_ptr<KernelActivity>(new KernelActivity());
}

KernelActivity::~KernelActivity() {
  const Cupti& c = cupti();
  c.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  c.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  c.disable(CUPTI_ACTIVITY_KIND_DRIVER);
  c.disable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& [b, n] : g_done) std::free(b);
  g_done.clear();
}

void KernelActivity::push(std::uint64_t id) const { cupti().push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id); }
void KernelActivity::pop() const {
  std::uint64_t last = 0;
  cupti().pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

std::map<std::uint64_t, KernelActivity::Span> KernelActivity::collect() {
  const Cupti& c = cupti();
  c.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<std::pair<std::uint8_t*, std::size_t>> bufs;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    bufs.swap(g_done);
  }
  std::map<std::uint32_t, std::uint64_t> external;  // correlation id → pushed id
  struct K {
    std::uint32_t correlation;
    std::uint64_t start, end;
  };
  std::vector<K> kernels;
  for (auto& [buf, valid] : bufs) {
    CUpti_Activity* rec = nullptr;
    while (c.next_record(buf, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
        kernels.push_back({k->correlationId, k->start, k->end});
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        auto* e = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(rec);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) external[e->correlationId] = e->externalId;
      }
    }
    std::free(buf);
  }
  std::map<std::uint64_t, Span> spans;
  for (const K& k : kernels) {
    auto it = external.find(k.correlation);
    if (it == external.end() || k.end < k.start) continue;
    Span& s = spans[it->second];
    s.start_ns = s.kernels ? std::min(s.start_ns, k.start) : k.start;
    s.end_ns = s.kernels ? std::max(s.end_ns, k.end) : k.end;
    s.busy_ns += double(k.end - k.start);
    ++s.kernels;
  }
  return spans;
}

}  // namespace kqual::cuda
