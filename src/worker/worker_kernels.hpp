#pragma once
// The worker's own CUDA kernels (L2 flush passes, shared-memory scribble, poison count, hashes), as
// source for NVRTC; compiled by the worker on first use. Internal to src/worker/.

namespace kqual::worker {

extern const char* const kWorkerKernelsSource;

}  // namespace kqual::worker
