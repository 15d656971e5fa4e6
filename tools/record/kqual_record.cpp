// kqual_record: the native recorder kqual puts in a PyTorch worker's process through CUDA's injection
// mechanism (CUDA_INJECTION64_PATH; the driver calls InitializeInjection() inside cuInit, before any
// CUDA work of the process). It records, through CUPTI's callback and activity APIs, every kernel,
// memcpy and memset the process causes (GPU start and end, stream, grid, correlation with the API call
// that caused it), which object and which Python frames made each launch, and the marks the worker
// sets around each call, and writes them to a FIFO kqual opened before the worker started, one line
// each, numbered and chained with a keyed code (record_mac.hpp) whose key only this library read.
//
// The evidence kqual judges a submission by comes from here, not from Python objects the submission
// can rebind. Its limit: the submission runs native code in this process too, so one that reads this
// library's memory could forge the record; the record's format (docs/torch-submissions.md) says what
// a forger must keep consistent, and kqual fails the submission (`harness_tampered`) when the record
// stops, breaks its chain, drops records or holds a launch without its kernel.
//
// Line format (tab-separated; the last field is the chain code in hex):
//   seq H version pid cupti_path
//   seq C context legacy_stream_id
//   seq L corr tid status api stream_handle origin_object python_frames
//   seq K corr stream start end gx gy gz bx by bz graph name
//   seq M corr copy_kind bytes stream start end graph
//   seq S corr bytes stream start end graph
//   seq O module bytes origin_object python_frames functions
//   seq X label last_corr tid stream time
//   seq R label ptr bytes code status last_corr
//   seq U label ptr bytes code status own_copy_corrs
//   seq D label value last_corr
//   seq F token dropped
//   seq E message
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cubin_symbols.hpp"
#include "kqual/bench/record_mac.hpp"
#include "recorder_state.hpp"

namespace {

constexpr int kVersion = 1;
constexpr std::size_t kActivityBufferBytes = 8u << 20;
constexpr std::size_t kWriteBufferBytes = 64u << 10;

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // the reader is gone: kqual sees the record stop
    }
    p += w;
    n -= std::size_t(w);
  }
}

}  // namespace

namespace kqual_recorder {

State& st() {
  static State* s = new State;  // never destroyed: CUPTI's threads may call in while the process exits
  return *s;
}

thread_local int g_in_runtime = 0;
thread_local std::vector<std::uint32_t>* g_own_copies = nullptr;

long tid() { return syscall(SYS_gettid); }

void clean(std::string& s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
}

void flush_locked(State& s) {
  if (!s.out.empty() && s.fd >= 0) write_all(s.fd, s.out.data(), s.out.size());
  s.out.clear();
}

// One line: its number, the fields, the chain code.
void emit(const char* fmt, ...) {
  State& s = st();
  if (s.fd < 0) return;
  char fields[8192];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(fields, sizeof fields, fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(s.mu);
  char body[8300];
  const int n = std::snprintf(body, sizeof body, "%llu\t%s", static_cast<unsigned long long>(++s.seq), fields);
  const std::size_t len = n < 0 ? 0 : std::min<std::size_t>(std::size_t(n), sizeof body - 1);
  s.prev = kqual_record::chained_mac(s.key, s.prev, body, len);
  char code[24];
  std::snprintf(code, sizeof code, "\t%016llx\n", static_cast<unsigned long long>(s.prev));
  s.out.append(body, len).append(code);
  if (s.out.size() >= kWriteBufferBytes) flush_locked(s);
}

}  // namespace kqual_recorder

namespace {

using namespace kqual_recorder;

std::string short_path(const char* p) {
  // The last three components: enough to tell torch/_inductor/... from a submission's file.
  std::string s = p ? p : "?";
  std::size_t cut = std::string::npos, at = s.size();
  for (int k = 0; k < 3; ++k) {
    at = s.rfind('/', at == 0 ? 0 : at - 1);
    if (at == std::string::npos) break;
    cut = at;
  }
  if (cut != std::string::npos && cut + 1 < s.size()) s = s.substr(cut + 1);
  return s;
}

// The innermost Python frames of this thread, where it holds the GIL: "file:line;file:line;...".
std::string python_frames() {
  State& s = st();
  if (!s.py.ok || !s.py.gil_check()) return "-";
  void* ts = s.py.thread_state();
  if (!ts) return "-";
  void* frame = s.py.get_frame(ts);
  std::string out;
  for (int depth = 0; frame && depth < 12; ++depth) {
    void* code = s.py.frame_code(frame);
    if (code) {
      void* name = s.py.get_attr(code, "co_filename");
      const char* file = name ? s.py.utf8(name) : nullptr;
      if (!out.empty()) out += ';';
      out += short_path(file) + ":" + std::to_string(s.py.frame_line(frame));
      if (name) s.py.decref(name);
      s.py.decref(code);
    }
    void* back = s.py.frame_back(frame);
    s.py.decref(frame);
    frame = back;
  }
  if (frame) s.py.decref(frame);
  s.py.err_clear();
  clean(out);
  return out.empty() ? "-" : out;
}

bool is_cuda_layer(const char* file) {
  if (!file) return true;
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  return std::strncmp(base, "libcuda.so", 10) == 0 || std::strncmp(base, "libcupti", 8) == 0 ||
         std::strncmp(base, "libcudart.so", 12) == 0 || std::strcmp(file, st().self_path.c_str()) == 0 ||
         std::strncmp(base, "libkqual_record", 15) == 0;
}

struct Unwound {
  std::string origin;
  int frames = 0;
};

_Unwind_Reason_Code unwind_step(struct _Unwind_Context* ctx, void* arg) {
  auto* u = static_cast<Unwound*>(arg);
  if (++u->frames > 64) return _URC_END_OF_STACK;
  void* pc = reinterpret_cast<void*>(_Unwind_GetIP(ctx));
  if (!pc) return _URC_END_OF_STACK;
  State& s = st();
  {
    std::lock_guard<std::mutex> lock(s.origin_mu);
    if (auto it = s.origin_of_pc.find(pc); it != s.origin_of_pc.end()) {
      if (it->second.empty()) return _URC_NO_REASON;  // a CUDA layer: keep walking
      u->origin = it->second;
      return _URC_END_OF_STACK;
    }
  }
  Dl_info info{};
  const bool found = dladdr(pc, &info) && info.dli_fname;
  std::string origin = !found ? "?" : is_cuda_layer(info.dli_fname) ? "" : info.dli_fname;
  clean(origin);
  {
    std::lock_guard<std::mutex> lock(s.origin_mu);
    s.origin_of_pc.emplace(pc, origin);
  }
  if (origin.empty()) return _URC_NO_REASON;
  u->origin = origin;
  return _URC_END_OF_STACK;
}

// The first object on this thread's stack outside the CUDA layers: the library or extension that made the call.
std::string calling_object() {
  Unwound u;
  _Unwind_Backtrace(unwind_step, &u);
  return u.origin.empty() ? "?" : u.origin;
}

bool name_has(const char* name, const char* what) { return name && std::strstr(name, what) != nullptr; }

bool is_launch(const char* fn) {
  return name_has(fn, "Launch") && !name_has(fn, "LaunchHostFunc") && !name_has(fn, "Occupancy") && !name_has(fn, "Attribute") &&
         !name_has(fn, "GetLaunch") && !name_has(fn, "LaunchConfig");
}
bool is_graph_launch(const char* fn) { return name_has(fn, "GraphLaunch"); }
bool is_transfer(const char* fn) { return name_has(fn, "Memcpy") || name_has(fn, "Memset"); }

std::uintptr_t launch_stream(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
  if (!params) return ~std::uintptr_t(0);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
      (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz))
    return reinterpret_cast<std::uintptr_t>(static_cast<const cuLaunchKernel_params*>(params)->hStream);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
      (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)) {
    const auto* p = static_cast<const cuLaunchKernelEx_params*>(params);
    return p->config ? reinterpret_cast<std::uintptr_t>(p->config->hStream) : ~std::uintptr_t(0);
  }
  return ~std::uintptr_t(0);  // the activity record's stream decides
}

// The object a launch came from: for the runtime's launches, the one holding the kernel's host stub
// (the library or extension that registered the kernel), found without walking the stack; else the
// first object on the stack outside the CUDA layers.
std::string launch_origin(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
  const void* stub = nullptr;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && params) {
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000)
      stub = static_cast<const cudaLaunchKernel_v7000_params*>(params)->func;
    else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060)
      stub = static_cast<const cudaLaunchKernelExC_v11060_params*>(params)->func;
    else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000)
      stub = static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(params)->func;
  }
  if (stub) {
    Dl_info info{};
    if (dladdr(stub, &info) && info.dli_fname) {
      std::string o = info.dli_fname;
      clean(o);
      return o;
    }
  }
  return calling_object();
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  State& s = st();
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
      const auto* r = static_cast<const CUpti_ResourceData*>(data);
      const auto* m = r ? static_cast<const CUpti_ModuleResourceData*>(r->resourceDescriptor) : nullptr;
      if (m)
        emit("O\t%u\t%zu\t%s\t%s\t%s", m->moduleId, m->cubinSize, calling_object().c_str(), python_frames().c_str(),
             kqual_record::cubin_functions(m->pCubin, m->cubinSize).c_str());
    }
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (!cb) return;
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (runtime) ++g_in_runtime;
    else if (g_in_runtime > 0) return;
    std::uint32_t seen = s.last_corr.load(std::memory_order_relaxed);
    while (cb->correlationId > seen && !s.last_corr.compare_exchange_weak(seen, cb->correlationId)) {
    }
    return;
  }
  // API exit: a launch or a transfer made by this call, with its status.
  if (runtime) --g_in_runtime;
  else if (g_in_runtime > 0) return;
  const char* fn = cb->functionName;
  const bool launch = is_launch(fn), graph = is_graph_launch(fn);
  const bool capture = name_has(fn, "BeginCapture") || name_has(fn, "EndCapture");
  if (!launch && !graph && !capture && !is_transfer(fn)) return;
  const int status = cb->functionReturnValue ? *static_cast<const int*>(cb->functionReturnValue) : -1;
  const std::uintptr_t stream = launch_stream(domain, cbid, cb->functionParams);
  const std::string origin = !launch ? std::string("-") : launch_origin(domain, cbid, cb->functionParams);
  if (g_own_copies && !launch) g_own_copies->push_back(cb->correlationId);
  emit("L\t%u\t%ld\t%d\t%s\t%llx\t%s\t%s", cb->correlationId, tid(), status, fn ? fn : "?",
       static_cast<unsigned long long>(stream), origin.c_str(), python_frames().c_str());
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kActivityBufferBytes));
  *size = *buffer ? kActivityBufferBytes : 0;
  *max_records = 0;
  if (!*buffer) emit("E\tno memory for an activity buffer");
}

void emit_kernel(const CUpti_ActivityKernel10* k) {
  std::string name = k->name ? k->name : "?";
  clean(name);
  emit("K\t%u\t%u\t%llu\t%llu\t%d\t%d\t%d\t%d\t%d\t%d\t%u\t%s", k->correlationId, k->streamId,
       static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end), k->gridX, k->gridY, k->gridZ, k->blockX,
       k->blockY, k->blockZ, k->graphId, name.c_str());
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  State& s = st();
  CUpti_Activity* rec = nullptr;
  while (s.cupti.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        emit_kernel(reinterpret_cast<const CUpti_ActivityKernel10*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        emit("M\t%u\t%u\t%llu\t%u\t%llu\t%llu\t%u", m->correlationId, unsigned(m->copyKind), static_cast<unsigned long long>(m->bytes),
             m->streamId, static_cast<unsigned long long>(m->start), static_cast<unsigned long long>(m->end), m->graphId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        emit("S\t%u\t%llu\t%u\t%llu\t%llu\t%u", m->correlationId, static_cast<unsigned long long>(m->bytes), m->streamId,
             static_cast<unsigned long long>(m->start), static_cast<unsigned long long>(m->end), m->graphId);
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

bool load_cupti(State& s) {
  void* h = nullptr;
  // One CUPTI per process: the one PyTorch already loaded if it did, else the toolkit's.
  for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) {
    if ((h = dlopen(name, RTLD_NOW | RTLD_NOLOAD))) {
      s.cupti.path = name;
      break;
    }
  }
  std::string tries;
  if (!h) {
    const char* env = std::getenv("KQUAL_CUPTI");
    for (const char* p : {env, "libcupti.so.13", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13", "/usr/local/cuda/lib64/libcupti.so.13",
                          "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13", "libcupti.so"}) {
      if (!p || !*p) continue;
      if ((h = dlopen(p, RTLD_NOW | RTLD_GLOBAL))) {
        s.cupti.path = p;
        break;
      }
      tries += std::string(tries.empty() ? "" : "; ") + p;
    }
  }
  if (!h) {
    emit("E\tCUPTI not found (tried %s)", tries.c_str());
    return false;
  }
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    return fn != nullptr;
  };
  CuptiApi& c = s.cupti;
  const bool ok = get(c.subscribe, "cuptiSubscribe") && get(c.enable_domain, "cuptiEnableDomain") &&
                  get(c.enable_callback, "cuptiEnableCallback") && get(c.activity_enable, "cuptiActivityEnable") &&
                  get(c.register_callbacks, "cuptiActivityRegisterCallbacks") && get(c.flush_all, "cuptiActivityFlushAll") &&
                  get(c.next_record, "cuptiActivityGetNextRecord") && get(c.dropped, "cuptiActivityGetNumDroppedRecords") &&
                  get(c.stream_id, "cuptiGetStreamIdEx") && get(c.timestamp, "cuptiGetTimestamp");
  if (!ok) emit("E\t%s lacks an entry point the recorder uses", s.cupti.path.c_str());
  return ok;
}

void load_python(State& s) {
  PythonApi& p = s.py;
  auto get = [](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(RTLD_DEFAULT, name));
    if (!fn) emit("E\tno Python frames: %s not found in the process", name);
    return fn != nullptr;
  };
  p.ok = get(p.gil_check, "PyGILState_Check") && get(p.thread_state, "PyThreadState_Get") && get(p.get_frame, "PyThreadState_GetFrame") &&
         get(p.frame_back, "PyFrame_GetBack") && get(p.frame_code, "PyFrame_GetCode") && get(p.frame_line, "PyFrame_GetLineNumber") &&
         get(p.get_attr, "PyObject_GetAttrString") && get(p.utf8, "PyUnicode_AsUTF8") && get(p.decref, "Py_DecRef") &&
         get(p.err_clear, "PyErr_Clear");
}

bool read_key(State& s, const char* file) {
  const int fd = file ? ::open(file, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) return false;
  unsigned char buf[16];
  const bool ok = ::read(fd, buf, sizeof buf) == ssize_t(sizeof buf);
  ::close(fd);
  ::unlink(file);  // read once, before the submission's code exists
  if (ok) {
    s.key[0] = kqual_record::load_le(buf, 8);
    s.key[1] = kqual_record::load_le(buf + 8, 8);
  }
  return ok;
}

void start(State& s) {
  const char* fifo = std::getenv("KQUAL_RECORD_FIFO");
  if (!fifo || !*fifo) return;  // not a kqual worker (a child process, say): record nothing
  const int fd = ::open(fifo, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  s.fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 700);  // out of the way of the low numbers code closes or reuses
  if (s.fd < 0) s.fd = fd;
  else ::close(fd);
  const bool keyed = read_key(s, std::getenv("KQUAL_RECORD_KEY"));
  for (const char* v : {"KQUAL_RECORD_FIFO", "KQUAL_RECORD_KEY", "CUDA_INJECTION64_PATH"}) ::unsetenv(v);
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&start), &self) && self.dli_fname) s.self_path = self.dli_fname;
  if (!keyed) {
    emit("E\tthe record's key could not be read");
    return;
  }
  if (!load_cupti(s)) return;
  load_python(s);
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda) {
    s.ctx_get_current = reinterpret_cast<decltype(s.ctx_get_current)>(dlsym(cuda, "cuCtxGetCurrent"));
    s.memcpy_dtoh = reinterpret_cast<decltype(s.memcpy_dtoh)>(dlsym(cuda, "cuMemcpyDtoH_v2"));
    s.memcpy_htod = reinterpret_cast<decltype(s.memcpy_htod)>(dlsym(cuda, "cuMemcpyHtoD_v2"));
  }
  CuptiApi& c = s.cupti;
  bool ok = c.register_callbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS;
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET})
    ok = ok && c.activity_enable(k) == CUPTI_SUCCESS;
  ok = ok && c.subscribe(&s.subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_callback), nullptr) == CUPTI_SUCCESS;
  ok = ok && c.enable_domain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS;
  ok = ok && c.enable_domain(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS;
  ok = ok && c.enable_callback(1, s.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED) == CUPTI_SUCCESS;
  if (!ok) {
    emit("E\tCUPTI refused the recorder's subscription (another CUPTI client first?)");
    return;
  }
  s.active = true;
  emit("H\t%d\t%ld\t%s\t%s", kVersion, long(getpid()), c.path.c_str(), s.py.ok ? "python" : "no-python");
  std::lock_guard<std::mutex> lock(s.mu);
  flush_locked(s);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, [] { start(st()); });
  return 1;
}
}
