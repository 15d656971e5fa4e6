#pragma once
// Kernel timestamps from CUPTI activity records (libcupti loaded at run time, like the driver): the
// GPU's own start and end of every kernel, whatever stream or library launched it. Launches made
// while an id is pushed (push/pop around a launch plan) are grouped under that id.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace kqual::cuda {

class KernelActivity {
 public:
  struct Span {
    std::uint64_t start_ns = 0, end_ns = 0;  // first kernel's start, last kernel's end
    int kernels = 0;
    double busy_ns = 0;                      // sum of the kernels' own durations
    double ms() const { return double(end_ns - start_ns) * 1e-6; }
  };
  // Enables kernel and external-correlation activity records. nullptr, with *why set, when CUPTI
  // cannot be loaded or enabled (no libcupti, another profiler holds it, ...).
  static std::unique_ptr<KernelActivity> start(std::string* why);
  ~KernelActivity();  // disables the records
  KernelActivity(const KernelActivity&) = delete;
  KernelActivity& operator=(const KernelActivity&) = delete;
  void push(std::uint64_t id) const;  // launches from here on belong to id ...
  void pop() const;                   // ... until here
  // Flushes CUPTI's buffers (call after the work has completed) and returns the spans by id.
  std::map<std::uint64_t, Span> collect();
  static std::string library_path();  // the libcupti that was loaded ("" before)

 private:
  KernelActivity() = default;
};

}  // namespace kqual::cuda
