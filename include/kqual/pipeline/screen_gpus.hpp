#pragma once
// kqual screen --gpus: one worker session per GPU of the host, each pinned to its device, fed from
// one queue by the one coordinator (docs/scale-out.md). The coordinator never touches CUDA: it finds
// the GPUs in /proc (or in CUDA_VISIBLE_DEVICES, inside a Slurm allocation) and pins each worker with
// CUDA_VISIBLE_DEVICES=<entry> and CUDA_DEVICE_ORDER=PCI_BUS_ID, so ordinals are PCI bus order, the
// order nvidia-smi and Slurm use (CUDA's own default puts the fastest device first).
//
// The dispatcher (dispatch_lanes) is apart from the sessions so that tests can drive it with fake
// lanes: a lane whose worker faults costs the candidate it was judging; the lane is probed and goes
// on with a fresh worker, or is retired when its GPU no longer answers; when every lane is retired
// the remaining candidates are recorded as incomplete, never lost.
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kqual/pipeline/screen.hpp"

namespace kqual::pipeline {

struct HostGpu {
  int ordinal = 0;          // position in PCI bus order among the host's (or the allocation's) GPUs
  std::string visible;      // the CUDA_VISIBLE_DEVICES value that pins a worker to it
  std::string pci_bus_id;   // "0000:19:00.0" where known ("" inside an allocation)
};

struct HostGpus {
  std::vector<HostGpu> gpus;
  std::string source;       // where the list came from (provenance)
  std::string why_none;     // when gpus is empty
};

// The GPUs this process may use, without CUDA. With `cuda_visible_devices` set (not null; a Slurm
// allocation sets it), its entries in their order; "" or "-1" means none. Otherwise the entries of
// `proc_dir` (the NVIDIA driver's /proc/driver/nvidia/gpus: one folder per GPU, named by PCI bus
// id), sorted: PCI bus order.
HostGpus host_gpus(const std::filesystem::path& proc_dir, const char* cuda_visible_devices);

// --gpus all | N (the first N) | LIST (comma-separated ordinals, e.g. "0,2"). Error(usage) naming
// the spec when it is malformed, asks for more GPUs than there are, repeats one, or the host has none.
std::vector<HostGpu> select_gpus(const std::string& spec, const HostGpus& host);

// The environment that pins a worker (and its reference worker) to `g`.
std::vector<std::pair<std::string, std::string>> pin_environment(const HostGpu& g);

// Who may use one GPU at a time when several lanes share it (--workers-per-gpu): any number of
// correctness checks together (shared), or one timing alone (exclusive), so that no timed launch
// shares its GPU with another lane's work. A waiting exclusive holder stops new shared ones from
// entering, so a steady stream of checks never starves the timing tier.
class GpuGate {
 public:
  class Hold {
   public:
    Hold(GpuGate* g, bool exclusive) : g_(g), exclusive_(exclusive) {}
    Hold(Hold&& o) noexcept : g_(o.g_), exclusive_(o.exclusive_) { o.g_ = nullptr; }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Hold& operator=(Hold&&) = delete;
    ~Hold() {
      if (g_) g_->release(exclusive_);
    }

   private:
    GpuGate* g_;
    bool exclusive_;
  };
  Hold shared();
  Hold exclusive();
  // Holders now: {shared, exclusive} (for tests and progress lines).
  std::pair<int, int> holders();
  int exclusive_waiting();  // timings waiting for the GPU (for tests)

 private:
  void release(bool exclusive);
  std::mutex mu_;
  std::condition_variable cv_;
  int shared_ = 0;
  bool exclusive_ = false;
  int exclusive_waiting_ = 0;
};

// What a lane does, supplied by the caller. Each lane runs on its own thread.
struct LaneHooks {
  // Judges `item` on `lane`; sets *fault when the lane's worker broke down on it (crash, hang,
  // sticky error): the verdict stands, and the lane is probed before it takes another item.
  std::function<ScreenVerdict(std::size_t lane, std::size_t item, bool* fault)> check;
  // After a fault: "" when the lane's device answers a fresh worker; otherwise why not (the lane retires).
  std::function<std::string(std::size_t lane)> probe;
  // Records a verdict (journal, progress). Calls are serialized; lane is npos for items that no lane
  // judged (every lane retired first).
  std::function<void(std::size_t lane, std::size_t item, ScreenVerdict v)> record;
};

struct DispatchReport {
  std::vector<std::size_t> judged;      // per lane: items it judged
  std::vector<int> faults;              // per lane: worker faults
  std::vector<std::string> retired;     // per lane: "" or why it was retired
  std::size_t unjudged = 0;             // items recorded as incomplete because no lane was left
};

// Hands items 0..items-1, in order, to `lanes` threads; every item is recorded exactly once. An
// exception thrown by a hook stops every lane and is rethrown here.
DispatchReport dispatch_lanes(std::size_t lanes, std::size_t items, const LaneHooks& hooks);

}  // namespace kqual::pipeline
