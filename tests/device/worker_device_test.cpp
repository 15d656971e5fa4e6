// GPU tests of the worker protocol: device facts, a sticky device fault (illegal address) becomes
// a recorded outcome and the next request runs on a fresh worker.
#include <gtest/gtest.h>

#include "kqual/cuda/driver.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/core/files.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/worker.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {

TEST(WorkerDevice, IllegalAddressIsRecordedAndWorkerReplaced) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  worker::WorkerOptions wo;
  wo.exe = test::kqual_exe().string();
  wo.watchdog_seconds = 60;
  worker::WorkerClient w(wo);
  auto hello = w.call(json{{"op", "hello"}});
  ASSERT_EQ(hello.status, worker::WorkerReply::Status::ok) << hello.reason;
  std::string arch = hello.body["device"]["arch"];
  cuda::NvrtcRequest req;
  req.source = "extern \"C\" __global__ void wild(float* p) { *(float*)(0x10ull) = 1.0f; p[0] = 2.0f; }";
  req.arch = arch;
  auto built = cuda::nvrtc_compile(req);
  ScratchDir dir("kqual-test");
  auto path = dir.path() / "wild.cubin";
  write_file(path, built.image.data(), built.image.size());
  worker::RunRequest run;
  run.module = path.string();
  run.buffers = {{"y", worker::BufferKind::output, 4, 0, ""}};
  worker::Launch wild;
  wild.kernel = "wild";
  wild.args = {worker::Arg::pointer("y")};
  run.launches = {wild};
  run.poison = {255};
  run.out_files = {{"y", {(dir.path() / "y.out").string()}}};
  auto r = worker::call(w, run).raw;
  EXPECT_EQ(r.status, worker::WorkerReply::Status::sticky_error) << r.reason;
  EXPECT_NE(r.reason.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << r.reason;
  auto again = w.call(json{{"op", "hello"}});
  EXPECT_EQ(again.status, worker::WorkerReply::Status::ok) << again.reason;
  EXPECT_EQ(w.processes_started(), 2);
}

}  // namespace
}  // namespace kqual
