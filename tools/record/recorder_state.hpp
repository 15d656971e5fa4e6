#pragma once
// The recorder's state, shared by its two halves: kqual_record.cpp (CUPTI's callbacks and activity
// buffers, started by the driver through InitializeInjection) and worker_calls.cpp (the functions kqual's
// worker calls: marks, reads, uploads, draws, flushes). Internal to libkqual_record.so (hidden visibility).
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kqual_recorder {

struct CuptiApi {
  decltype(&::cuptiSubscribe) subscribe = nullptr;
  decltype(&::cuptiEnableDomain) enable_domain = nullptr;
  decltype(&::cuptiEnableCallback) enable_callback = nullptr;
  decltype(&::cuptiActivityEnable) activity_enable = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&::cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&::cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&::cuptiGetStreamIdEx) stream_id = nullptr;
  decltype(&::cuptiGetTimestamp) timestamp = nullptr;
  std::string path;
};

// The CPython functions the Python frames are read with (resolved in the process, absent outside Python).
struct PythonApi {
  int (*gil_check)() = nullptr;
  void* (*thread_state)() = nullptr;
  void* (*get_frame)(void*) = nullptr;
  void* (*frame_back)(void*) = nullptr;
  void* (*frame_code)(void*) = nullptr;
  int (*frame_line)(void*) = nullptr;
  void* (*get_attr)(void*, const char*) = nullptr;
  const char* (*utf8)(void*) = nullptr;
  void (*decref)(void*) = nullptr;
  void (*err_clear)() = nullptr;
  bool ok = false;
};

struct State {
  int fd = -1;
  std::uint64_t key[2] = {0, 0};
  std::uint64_t prev = 0;
  std::uint64_t seq = 0;
  std::string out;
  std::mutex mu;  // seq, prev, out
  CuptiApi cupti;
  PythonApi py;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<std::uint32_t> last_corr{0};
  std::mutex contexts_mu;
  std::unordered_set<CUcontext> contexts;
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, std::size_t) = nullptr;  // cuMemcpyDtoH_v2: the recorder's own reads
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, std::size_t) = nullptr;  // cuMemcpyHtoD_v2: its own uploads
  std::mutex origin_mu;
  std::unordered_map<void*, std::string> origin_of_pc;
  std::string self_path;
  bool active = false;
};

State& st();

// A driver call made inside a runtime call is that call's, not another launch.
extern thread_local int g_in_runtime;
// While the recorder uploads a dataset on this thread (kqual_record_upload): the correlation ids of its own copies.
extern thread_local std::vector<std::uint32_t>* g_own_copies;

long tid();
// Tabs and line ends in a field become spaces.
void clean(std::string& s);
// The lines buffered so far, written to kqual's FIFO (s.mu held).
void flush_locked(State& s);
// One line: its number, the fields (printf format), the chain code.
void emit(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kqual_recorder
