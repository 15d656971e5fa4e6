// kqual's own failures are not the candidate's, without a GPU: a worker that fails or is lost while
// it does kqual's own work (allocating buffers, uploading inputs, starting CUPTI) says so, and the
// coordinator names it harness_error; the candidate's failures keep their codes.
#include <gtest/gtest.h>

#include <string>

#include "kqual/check/evaluate.hpp"
#include "kqual/worker/worker.hpp"
#include "test_util.hpp"

namespace kqual::worker {
namespace {

WorkerOptions hook_opts() {
  WorkerOptions o;
  o.exe = test::kqual_exe().string();
  o.watchdog_seconds = 30;
  o.env.push_back({"KQUAL_WORKER_TEST_HOOKS", "1"});  // crash_in_harness, fail_in_harness
  return o;
}

// `r` is kqual's own failure while `phase`: named harness_error, its reason marked as kqual's.
void expect_harness_error(const WorkerReply& r, const std::string& phase) {
  EXPECT_EQ(r.harness, phase);
  EXPECT_EQ(check::fault_code(r), "harness_error");
  EXPECT_TRUE(is_harness_failure(r.reason)) << r.reason;
}

// An out-of-memory in kqual's own allocation (before the candidate's launch) was launch_error.
TEST(HarnessFailure, AnAllocationFailureOfKqualsBuffersIsHarnessError) {
  WorkerClient w(hook_opts());
  const WorkerReply r = w.call(json{{"op", "fail_in_harness"}});
  ASSERT_EQ(r.status, WorkerReply::Status::error) << r.reason;
  expect_harness_error(r, "allocating the case's buffers");
  EXPECT_EQ(r.reason.rfind(kHarnessFailure, 0), 0u) << r.reason;
  EXPECT_NE(r.reason.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("not the candidate's"), std::string::npos) << r.reason;
  // The worker stays usable (a recoverable error), and the next call starts unmarked.
  const WorkerReply p = w.call(json{{"op", "ping"}});
  EXPECT_EQ(p.status, WorkerReply::Status::ok);
  EXPECT_TRUE(p.harness.empty());
  EXPECT_EQ(w.processes_started(), 1);
}

// A request the worker cannot take (kqual wrote it; the candidate has not run): harness_error. Seen on an
// H100 as "worker protocol: 'bench' buffer 'x': bad generate stream/dtype", charged to the candidate.
TEST(HarnessFailure, ARequestTheWorkerRefusesIsKqualsOwnFailure) {
  WorkerClient w(hook_opts());
  const WorkerReply r = w.call(json{{"op", "run"}});
  ASSERT_EQ(r.status, WorkerReply::Status::error) << r.reason;
  expect_harness_error(r, "reading kqual's request");
  EXPECT_NE(r.reason.find("worker protocol"), std::string::npos) << r.reason;
}

// The worker lost during the upload (no reply ever comes): the phase line sent before tells.
TEST(HarnessFailure, AWorkerLostOutsideTheCandidatesLaunchIsHarnessError) {
  WorkerClient w(hook_opts());
  const WorkerReply r = w.call(json{{"op", "crash_in_harness"}});
  ASSERT_EQ(r.status, WorkerReply::Status::crashed) << r.reason;
  expect_harness_error(r, "uploading inputs and poisoning outputs");
  // A crash with no phase marked (the candidate's launch) stays the candidate's.
  const WorkerReply c = w.call(json{{"op", "crash"}});
  ASSERT_EQ(c.status, WorkerReply::Status::crashed);
  EXPECT_TRUE(c.harness.empty());
  EXPECT_EQ(check::fault_code(c), "crash");
  EXPECT_FALSE(is_harness_failure(c.reason)) << c.reason;
}

// --timer cupti where CUPTI cannot load: the worker throws Error(cuda) with no driver error name,
// which read as the candidate's launch_error; marked as kqual's own work it is harness_error.
TEST(HarnessFailure, AMissingCuptiForTheTimerIsHarnessErrorNotALaunchError) {
  WorkerReply r;
  r.status = WorkerReply::Status::error;
  r.body = json{{"ok", false}, {"kind", "cuda"}, {"error", "timer 'cupti' is not available: libcupti.so: cannot open"}};
  EXPECT_EQ(check::fault_code(r), "launch_error");  // unmarked: as before, the candidate's
  r.harness = "starting CUPTI for the timer 'cupti'";
  EXPECT_EQ(check::fault_code(r), "harness_error");
  // A sticky error is never marked (the device's state after the candidate ran): still its fault.
  WorkerReply s;
  s.status = WorkerReply::Status::sticky_error;
  s.body = json{{"ok", false}, {"kind", "cuda"}, {"cuda_error", "CUDA_ERROR_ILLEGAL_ADDRESS"}, {"sticky", true}};
  EXPECT_EQ(check::fault_code(s), "illegal_address");
}

// Only the start of a failure text marks it as kqual's: a candidate printing the words to its stderr
// before crashing cannot make its crash kqual's.
TEST(HarnessFailure, OnlyTheStartOfAReasonMarksKqualsOwnFailure) {
  EXPECT_TRUE(is_harness_failure("kqual's own failure (while allocating the case's buffers): x — not the candidate's"));
  EXPECT_TRUE(is_harness_failure("error: kqual's own failure (while starting CUPTI for the timer 'cupti'): y"));
  EXPECT_TRUE(is_harness_failure("crashed: kqual's own failure (while uploading inputs and poisoning outputs): z"));
  EXPECT_FALSE(is_harness_failure("crashed: worker killed by signal 11; its stderr ends: kqual's own failure"));
  EXPECT_FALSE(is_harness_failure("sticky_error: kqual's own failure"));
  EXPECT_FALSE(is_harness_failure(""));
}

}  // namespace
}  // namespace kqual::worker
