#pragma once
// RAII owners of driver objects. Destructors never throw (errors there are logged to stderr).
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kqual/cuda/driver.hpp"

namespace kqual::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  int l2_bytes = 0;
  int max_persisting_l2_bytes = 0;
  int max_threads_per_block = 0;
  int max_shared_per_block_optin = 0;
  int clock_khz = 0;           // [kHz] nominal SM clock
  int memory_clock_khz = 0;    // [kHz]
  int memory_bus_bits = 0;
  std::size_t total_memory = 0;
  int driver_version = 0;      // e.g. 13000
  std::string pci_bus_id;      // "0000:19:00.0" (NVML finds the same device by it)
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

// Retains the device's primary context and makes it current on this thread.
class Context {
 public:
  explicit Context(int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  const DeviceInfo& info() const { return info_; }
  CUcontext get() const { return ctx_; }
  void synchronize() const;

 private:
  CUdevice dev_{};
  CUcontext ctx_{};
  DeviceInfo info_;
};

struct FunctionAttributes {
  int registers = 0;
  int static_shared_bytes = 0;
  int local_bytes = 0;         // per thread (stack frame + spills)
  int const_bytes = 0;
  int max_threads_per_block = 0;
  int binary_version = 0;      // 90 both for native SASS and JIT-compiled PTX (docs/artifact.md)
  int ptx_version = 0;
};

struct ParamInfo {
  std::size_t offset = 0;
  std::size_t size = 0;
};

class Function {
 public:
  Function() = default;
  Function(CUfunction f, std::string name) : f_(f), name_(std::move(name)) {}
  CUfunction get() const { return f_; }
  const std::string& name() const { return name_; }
  FunctionAttributes attributes() const;
  // Parameter layout from the driver (cuFuncGetParamInfo); empty if the driver lacks it.
  std::vector<ParamInfo> params() const;
  void set_max_dynamic_shared(int bytes) const;

 private:
  CUfunction f_{};
  std::string name_;
};

// A module loaded from an in-memory image (cubin, fatbin or NUL-terminated PTX).
class Module {
 public:
  Module() = default;
  explicit Module(std::span<const std::uint8_t> image);
  static Module from_file(const std::string& path);
  ~Module();
  Module(Module&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  Module& operator=(Module&& o) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Function function(const std::string& name) const;
  // A __device__ variable of the module by its (unmangled, extern "C") name; nullopt when absent.
  struct Global {
    CUdeviceptr address = 0;
    std::size_t bytes = 0;
  };
  std::optional<Global> global(const std::string& name) const;
  CUmodule get() const { return m_; }

 private:
  CUmodule m_{};
};

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return s_; }
  void synchronize() const;

 private:
  CUstream s_{};
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  CUevent get() const { return e_; }
  void record(CUstream s) const;
  void synchronize() const;
  // [ms] between two recorded events
  static float elapsed_ms(const Event& start, const Event& stop);

 private:
  CUevent e_{};
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr get() const { return p_; }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* src, std::size_t bytes, std::size_t offset = 0) const;
  void download(void* dst, std::size_t bytes, std::size_t offset = 0) const;

 private:
  CUdeviceptr p_ = 0;
  std::size_t bytes_ = 0;
};

// Device memory whose mapped range is bordered by an unmapped page on one side (virtual memory
// management: a reservation one granule larger than the mapping). A kernel that reads past the
// mapped range faults (CUDA_ERROR_ILLEGAL_ADDRESS) instead of reading a neighbour's bytes.
class TrappedAllocation {
 public:
  enum class Side { after, before };  // where the unmapped page lies
  TrappedAllocation() = default;
  TrappedAllocation(std::size_t bytes, Side side, int ordinal = 0);
  ~TrappedAllocation();
  TrappedAllocation(TrappedAllocation&& o) noexcept;
  TrappedAllocation& operator=(TrappedAllocation&& o) noexcept;
  TrappedAllocation(const TrappedAllocation&) = delete;
  TrappedAllocation& operator=(const TrappedAllocation&) = delete;
  CUdeviceptr mapped() const { return mapped_; }        // first mapped byte
  std::size_t mapped_bytes() const { return mapped_bytes_; }
  CUdeviceptr mapped_end() const { return mapped_ + mapped_bytes_; }

 private:
  void release() noexcept;
  CUdeviceptr reserved_ = 0, mapped_ = 0;
  std::size_t reserved_bytes_ = 0, mapped_bytes_ = 0;
  CUmemGenericAllocationHandle handle_{};
  bool has_handle_ = false;
};

// A CUDA graph captured from work enqueued on a stream, instantiated, ready to replay.
class GraphExec {
 public:
  GraphExec() = default;
  // Captures what `enqueue` puts on `stream` (thread-local capture mode) and instantiates it.
  static GraphExec capture(CUstream stream, const std::function<void()>& enqueue);
  ~GraphExec();
  GraphExec(GraphExec&& o) noexcept : g_(std::exchange(o.g_, nullptr)), e_(std::exchange(o.e_, nullptr)) {}
  GraphExec& operator=(GraphExec&& o) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  void launch(CUstream stream) const;

 private:
  CUgraph g_{};
  CUgraphExec e_{};
};

// Launch with the driver's checks; errors name the kernel.
void launch(const Function& f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
            unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream, void** args);

}  // namespace kqual::cuda
