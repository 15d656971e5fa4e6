// Worker-process failure handling, without a GPU: a worker that crashes or hangs on purpose
// becomes a recorded outcome, and the next request runs on a fresh worker.
#include <gtest/gtest.h>

#include <chrono>

#include "kqual/worker/worker.hpp"
#include "test_util.hpp"

namespace kqual::worker {
namespace {

WorkerOptions opts(double watchdog) {
  WorkerOptions o;
  o.exe = test::kqual_exe().string();
  o.watchdog_seconds = watchdog;
  o.env.push_back({"KQUAL_WORKER_TEST_HOOKS", "1"});  // the crash and hang ops below
  return o;
}

TEST(Worker, TestHooksAreOffUnlessTheEnvironmentAsksForThem) {
  WorkerOptions o;
  o.exe = test::kqual_exe().string();
  o.watchdog_seconds = 30;
  WorkerClient w(o);
  auto r = w.call(json{{"op", "crash"}});
  EXPECT_EQ(r.status, WorkerReply::Status::error) << "a shipped worker must not crash on request: " << r.reason;
  EXPECT_NE(r.reason.find("unknown worker op"), std::string::npos) << r.reason;
  EXPECT_EQ(w.processes_started(), 1);
}

TEST(Worker, PingIsAnsweredAndTheWorkerIsReused) {
  WorkerClient w(opts(30));
  auto a = w.call(json{{"op", "ping"}});
  ASSERT_EQ(a.status, WorkerReply::Status::ok) << a.reason;
  auto b = w.call(json{{"op", "ping"}});
  ASSERT_EQ(b.status, WorkerReply::Status::ok);
  EXPECT_EQ(a.body["pid"], b.body["pid"]);
  EXPECT_EQ(w.processes_started(), 1);
}

TEST(Worker, CrashBecomesAVerdictAndTheNextCallGetsAFreshWorker) {
  WorkerClient w(opts(30));
  auto first = w.call(json{{"op", "ping"}});
  ASSERT_EQ(first.status, WorkerReply::Status::ok);
  auto r = w.call(json{{"op", "crash"}});
  EXPECT_EQ(r.status, WorkerReply::Status::crashed);
  EXPECT_TRUE(r.fault());
  EXPECT_NE(r.reason.find("signal 11"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("'crash'"), std::string::npos) << r.reason;
  auto again = w.call(json{{"op", "ping"}});
  ASSERT_EQ(again.status, WorkerReply::Status::ok) << again.reason;
  EXPECT_NE(again.body["pid"], first.body["pid"]);
  EXPECT_EQ(w.processes_started(), 2);
}

TEST(Worker, HangIsKilledByTheWatchdog) {
  WorkerClient w(opts(30));
  auto t0 = std::chrono::steady_clock::now();
  auto r = w.call(json{{"op", "hang"}}, 1.0);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, WorkerReply::Status::hung);
  EXPECT_NE(r.reason.find("watchdog"), std::string::npos) << r.reason;
  EXPECT_LT(took, 20.0);  // generous: the point is that it returns at all
  auto again = w.call(json{{"op", "ping"}});
  EXPECT_EQ(again.status, WorkerReply::Status::ok) << again.reason;
  EXPECT_EQ(w.processes_started(), 2);
}

TEST(Worker, ErrorsAreRepliesNotFaults) {
  WorkerClient w(opts(30));
  auto r = w.call(json{{"op", "no_such_op"}});
  EXPECT_EQ(r.status, WorkerReply::Status::error);
  EXPECT_FALSE(r.fault());
  EXPECT_NE(r.reason.find("no_such_op"), std::string::npos);
  auto again = w.call(json{{"op", "ping"}});
  EXPECT_EQ(again.status, WorkerReply::Status::ok);
  EXPECT_EQ(w.processes_started(), 1);
}

TEST(Worker, NoDeviceIsReportedByHello) {
  WorkerClient w(opts(60));
  auto r = w.call(json{{"op", "hello"}});
  if (r.status == WorkerReply::Status::ok) GTEST_SKIP() << "a GPU is present; this test covers machines without one";
  EXPECT_EQ(r.status, WorkerReply::Status::error);
  EXPECT_TRUE(r.body.value("no_device", false));
  EXPECT_FALSE(r.reason.empty());
}

}  // namespace
}  // namespace kqual::worker
