// Faults named by their cause (issue 23): the worker sends the driver's error name; the coordinator
// turns it into a failure code. A misaligned access is not an out-of-bounds read, kqual's own error
// is not the candidate's, and an unknown sticky error stays a device fault.
#include <gtest/gtest.h>

#include "kqual/check/evaluate.hpp"

namespace kqual::check {
namespace {
using worker::WorkerReply;

WorkerReply cuda_reply(WorkerReply::Status st, const char* name) {
  WorkerReply r;
  r.status = st;
  r.body = json{{"ok", false}, {"kind", "cuda"}, {"cuda_error", name}, {"sticky", st == WorkerReply::Status::sticky_error}};
  return r;
}

TEST(FaultCode, DriverErrorsBecomeTheirOwnCodes) {
  const auto sticky = WorkerReply::Status::sticky_error;
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_ILLEGAL_ADDRESS")), "illegal_address");
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_MISALIGNED_ADDRESS")), "misaligned_address");
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_ILLEGAL_INSTRUCTION")), "illegal_instruction");
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_INVALID_PC")), "illegal_instruction");
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_HARDWARE_STACK_ERROR")), "stack_overflow");
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_LAUNCH_FAILED")), "launch_failure");
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_LAUNCH_TIMEOUT")), "hang");
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_ASSERT")), "device_assert");
  EXPECT_EQ(fault_code(cuda_reply(sticky, "CUDA_ERROR_ECC_UNCORRECTABLE")), "device_fault");
  // A launch the driver refused (too many resources, bad configuration) is not sticky.
  EXPECT_EQ(fault_code(cuda_reply(WorkerReply::Status::error, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")), "launch_error");
}

TEST(FaultCode, WatchdogPipeAndHarnessAreNamedAsSuch) {
  WorkerReply r;
  r.status = WorkerReply::Status::hung;
  EXPECT_EQ(fault_code(r), "hang");
  r.status = WorkerReply::Status::crashed;
  EXPECT_EQ(fault_code(r), "crash");
  r.status = WorkerReply::Status::protocol_error;
  EXPECT_EQ(fault_code(r), "worker_protocol");
  r.status = WorkerReply::Status::error;
  r.body = json{{"ok", false}, {"kind", "internal"}, {"error", "input file for 'x' has 3 bytes, expected 4"}};
  EXPECT_EQ(fault_code(r), "harness_error");
  r.status = WorkerReply::Status::ok;
  EXPECT_EQ(fault_code(r), "");
}

}  // namespace
}  // namespace kqual::check
