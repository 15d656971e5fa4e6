#include "kqual/harness/measure.hpp"

#include "kqual/core/error.hpp"

namespace kqual::harness {
// Filled in with the worker protocol (issue 2); until then it states plainly that it cannot run.
DeviceCeilings measure_device_ceilings(double) {
  throw_error(ErrorKind::worker, "device measurement is not wired to the worker yet");
}
}  // namespace kqual::harness
