#include "kqual/cuda/objects.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "kqual/core/error.hpp"

namespace kqual::cuda {
namespace {
// For destructors: report, never throw.
void check_noexcept(CUresult r, const char* what) noexcept {
  if (r != CUDA_SUCCESS) std::fprintf(stderr, "kqual: warning: %s failed: %s\n", what, error_name(r).c_str());
}
int attr(CUdevice d, CUdevice_attribute a) {
  int v = 0;
  KQUAL_CU(cuDeviceGetAttribute, &v, a, d);
  return v;
}
}  // namespace

Context::Context(int ordinal) {
  int count = 0;
  KQUAL_CU(cuDeviceGetCount, &count);
  if (ordinal < 0 || ordinal >= count)
    throw_error(ErrorKind::usage, fmt::format("device {} requested but {} device(s) present", ordinal, count));
  KQUAL_CU(cuDeviceGet, &dev_, ordinal);
  KQUAL_CU(cuDevicePrimaryCtxRetain, &ctx_, dev_);
  KQUAL_CU(cuCtxSetCurrent, ctx_);
  char name[256] = {};
  KQUAL_CU(cuDeviceGetName, name, int(sizeof name), dev_);
  info_.ordinal = ordinal;
  char bus[64] = {};
  if (driver().cuDeviceGetPCIBusId(bus, int(sizeof bus), dev_) == CUDA_SUCCESS) info_.pci_bus_id = bus;
  info_.name = name;
  info_.cc_major = attr(dev_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info_.cc_minor = attr(dev_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info_.sms = attr(dev_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info_.l2_bytes = attr(dev_, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info_.max_persisting_l2_bytes = attr(dev_, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE);
  info_.max_threads_per_block = attr(dev_, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info_.max_shared_per_block_optin = attr(dev_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info_.clock_khz = attr(dev_, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  info_.memory_clock_khz = attr(dev_, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info_.memory_bus_bits = attr(dev_, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  KQUAL_CU(cuDeviceTotalMem, &info_.total_memory, dev_);
  KQUAL_CU(cuDriverGetVersion, &info_.driver_version);
}

Context::~Context() {
  if (ctx_) check_noexcept(driver().cuDevicePrimaryCtxRelease(dev_), "cuDevicePrimaryCtxRelease");
}

void Context::synchronize() const { KQUAL_CU(cuCtxSynchronize); }

FunctionAttributes Function::attributes() const {
  FunctionAttributes a;
  auto get = [&](CUfunction_attribute which) {
    int v = 0;
    KQUAL_CU(cuFuncGetAttribute, &v, which, f_);
    return v;
  };
  a.registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
  a.static_shared_bytes = get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  a.local_bytes = get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  a.const_bytes = get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  a.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  a.binary_version = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  a.ptx_version = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  return a;
}

std::vector<ParamInfo> Function::params() const {
  std::vector<ParamInfo> out;
  auto fn = driver().cuFuncGetParamInfo;
  if (!fn) return out;
  for (std::size_t i = 0;; ++i) {
    ParamInfo p;
    CUresult r = fn(f_, i, &p.offset, &p.size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    check(r, "cuFuncGetParamInfo", __FILE__, __LINE__);
    out.push_back(p);
    if (i > 4096) break;
  }
  return out;
}

void Function::set_max_dynamic_shared(int bytes) const {
  KQUAL_CU(cuFuncSetAttribute, f_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

Module::Module(std::span<const std::uint8_t> image) {
  if (image.empty()) throw_error(ErrorKind::input, "cannot load an empty module image");
  // The driver's own log explains JIT failures (e.g. PTX for a newer ISA than the driver knows).
  char error_log[8192] = {};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {error_log, reinterpret_cast<void*>(std::uintptr_t(sizeof error_log))};
  CUresult r = driver().cuModuleLoadDataEx(&m_, image.data(), 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    std::string log = error_log;
    try {
      check(r, "cuModuleLoadDataEx", __FILE__, __LINE__);
    } catch (const Error& e) {
      throw Error(ErrorKind::cuda, log.empty() ? e.what() : std::string(e.what()) + "; driver log: " + log);
    }
  }
}

Module Module::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorKind::io, "cannot open module file '" + path + "'");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.push_back(0);  // PTX text must be NUL-terminated; harmless for binary images
  return Module(bytes);
}

Module::~Module() {
  if (m_) check_noexcept(driver().cuModuleUnload(m_), "cuModuleUnload");
}

Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (m_) check_noexcept(driver().cuModuleUnload(m_), "cuModuleUnload");
    m_ = std::exchange(o.m_, nullptr);
  }
  return *this;
}

Function Module::function(const std::string& name) const {
  CUfunction f{};
  CUresult r = driver().cuModuleGetFunction(&f, m_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    throw_error(ErrorKind::input, "kernel '" + name + "' is not in the loaded module");
  check(r, ("cuModuleGetFunction(" + name + ")").c_str(), __FILE__, __LINE__);
  return Function(f, name);
}

std::optional<Module::Global> Module::global(const std::string& name) const {
  Global g;
  CUresult r = driver().cuModuleGetGlobal(&g.address, &g.bytes, m_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return std::nullopt;
  check(r, ("cuModuleGetGlobal(" + name + ")").c_str(), __FILE__, __LINE__);
  return g;
}

Stream::Stream() { KQUAL_CU(cuStreamCreate, &s_, CU_STREAM_NON_BLOCKING); }
Stream::~Stream() {
  if (s_) check_noexcept(driver().cuStreamDestroy(s_), "cuStreamDestroy");
}
void Stream::synchronize() const { KQUAL_CU(cuStreamSynchronize, s_); }

Event::Event() { KQUAL_CU(cuEventCreate, &e_, CU_EVENT_DEFAULT); }
Event::~Event() {
  if (e_) check_noexcept(driver().cuEventDestroy(e_), "cuEventDestroy");
}
void Event::record(CUstream s) const { KQUAL_CU(cuEventRecord, e_, s); }
void Event::synchronize() const { KQUAL_CU(cuEventSynchronize, e_); }
float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  KQUAL_CU(cuEventElapsedTime, &ms, start.e_, stop.e_);
  return ms;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  CUresult r = driver().cuMemAlloc(&p_, bytes);
  if (r != CUDA_SUCCESS) {
    std::size_t free_b = 0, total_b = 0;
    driver().cuMemGetInfo(&free_b, &total_b);
    throw_error(ErrorKind::cuda, fmt::format("cuMemAlloc({} bytes) failed: {} ({} bytes free of {})", bytes,
                                             error_name(r), free_b, total_b));
  }
}
DeviceBuffer::~DeviceBuffer() {
  if (p_) check_noexcept(driver().cuMemFree(p_), "cuMemFree");
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) check_noexcept(driver().cuMemFree(p_), "cuMemFree");
    p_ = std::exchange(o.p_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}
void DeviceBuffer::upload(const void* src, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > bytes_) throw_error(ErrorKind::internal, "upload past the end of a device buffer");
  if (bytes) {
    KQUAL_CU(cuMemcpyHtoD, p_ + offset, src, bytes);
    // From pageable memory the call returns once the bytes are staged, not landed, and on the
    // legacy stream, which non-blocking streams do not wait for: wait here, so the next launch on
    // any stream reads the uploaded bytes.
    KQUAL_CU(cuCtxSynchronize);
  }
}
void DeviceBuffer::download(void* dst, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > bytes_) throw_error(ErrorKind::internal, "download past the end of a device buffer");
  if (bytes) KQUAL_CU(cuMemcpyDtoH, dst, p_ + offset, bytes);
}

TrappedAllocation::TrappedAllocation(std::size_t bytes, Side side, int ordinal) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  std::size_t gran = 0;
  KQUAL_CU(cuMemGetAllocationGranularity, &gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (gran == 0) throw_error(ErrorKind::cuda, "cuMemGetAllocationGranularity returned 0");
  mapped_bytes_ = std::max<std::size_t>(gran, (bytes + gran - 1) / gran * gran);
  reserved_bytes_ = mapped_bytes_ + gran;
  try {
    KQUAL_CU(cuMemAddressReserve, &reserved_, reserved_bytes_, 0, 0, 0);
    CUresult r = driver().cuMemCreate(&handle_, mapped_bytes_, &prop, 0);
    if (r != CUDA_SUCCESS) {
      std::size_t free_b = 0, total_b = 0;
      driver().cuMemGetInfo(&free_b, &total_b);
      throw_error(ErrorKind::cuda, fmt::format("cuMemCreate({} bytes) failed: {} ({} bytes free of {})", mapped_bytes_,
                                               error_name(r), free_b, total_b));
    }
    has_handle_ = true;
    mapped_ = side == Side::after ? reserved_ : reserved_ + gran;
    KQUAL_CU(cuMemMap, mapped_, mapped_bytes_, 0, handle_, 0);
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    KQUAL_CU(cuMemSetAccess, mapped_, mapped_bytes_, &access, 1);
  } catch (...) {
    release();
    throw;
  }
}
void TrappedAllocation::release() noexcept {
  if (mapped_) check_noexcept(driver().cuMemUnmap(mapped_, mapped_bytes_), "cuMemUnmap");
  if (has_handle_) check_noexcept(driver().cuMemRelease(handle_), "cuMemRelease");
  if (reserved_) check_noexcept(driver().cuMemAddressFree(reserved_, reserved_bytes_), "cuMemAddressFree");
  mapped_ = reserved_ = 0;
  has_handle_ = false;
}
TrappedAllocation::~TrappedAllocation() { release(); }
TrappedAllocation::TrappedAllocation(TrappedAllocation&& o) noexcept
    : reserved_(std::exchange(o.reserved_, 0)), mapped_(std::exchange(o.mapped_, 0)),
      reserved_bytes_(std::exchange(o.reserved_bytes_, 0)), mapped_bytes_(std::exchange(o.mapped_bytes_, 0)),
      handle_(o.handle_), has_handle_(std::exchange(o.has_handle_, false)) {}
TrappedAllocation& TrappedAllocation::operator=(TrappedAllocation&& o) noexcept {
  if (this != &o) {
    release();
    reserved_ = std::exchange(o.reserved_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    reserved_bytes_ = std::exchange(o.reserved_bytes_, 0);
    mapped_bytes_ = std::exchange(o.mapped_bytes_, 0);
    handle_ = o.handle_;
    has_handle_ = std::exchange(o.has_handle_, false);
  }
  return *this;
}

GraphExec GraphExec::capture(CUstream stream, const std::function<void()>& enqueue) {
  GraphExec x;
  KQUAL_CU(cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  try {
    enqueue();
  } catch (...) {
    CUgraph broken{};
    driver().cuStreamEndCapture(stream, &broken);
    if (broken) driver().cuGraphDestroy(broken);
    throw;
  }
  KQUAL_CU(cuStreamEndCapture, stream, &x.g_);
  KQUAL_CU(cuGraphInstantiateWithFlags, &x.e_, x.g_, 0);
  return x;
}

GraphExec::~GraphExec() {
  if (e_) check_noexcept(driver().cuGraphExecDestroy(e_), "cuGraphExecDestroy");
  if (g_) check_noexcept(driver().cuGraphDestroy(g_), "cuGraphDestroy");
}

GraphExec& GraphExec::operator=(GraphExec&& o) noexcept {
  if (this != &o) {
    this->~GraphExec();
    g_ = std::exchange(o.g_, nullptr);
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}

void GraphExec::launch(CUstream stream) const { KQUAL_CU(cuGraphLaunch, e_, stream); }

void launch(const Function& f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
            unsigned shared_bytes, CUstream stream, void** args) {
  CUresult r = driver().cuLaunchKernel(f.get(), gx, gy, gz, bx, by, bz, shared_bytes, stream, args, nullptr);
  if (r != CUDA_SUCCESS) {
    check(r,
          fmt::format("cuLaunchKernel({}, grid=({},{},{}), block=({},{},{}), shared={})", f.name(), gx, gy, gz, bx,
                      by, bz, shared_bytes)
              .c_str(),
          __FILE__, __LINE__);
  }
}

}  // namespace kqual::cuda
