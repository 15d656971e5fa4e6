// How failing cases are named and worded (src/check/labels.cpp): a kernel's fault is told as what
// the kernel did, never as the kqual source line that noticed it; index_overflow is said only when
// the cases below 2^31 elements, the large ones included, ran and passed and the case past it failed
// by the kernel's doing. Synthetic worker replies and reports: no GPU.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "kqual/check/labels.hpp"

namespace kqual::check {
namespace {
using worker::WorkerReply;

// The reply the worker sends for a CudaError (server.cpp): cuda::check's message, with kqual's path.
WorkerReply sticky(const std::string& name, const std::string& call, const std::string& description) {
  WorkerReply r;
  r.status = WorkerReply::Status::sticky_error;
  r.reason = "/home/build/kqual/src/cuda/objects.cpp:154: " + call + " failed: " + name + " (" + description + ")";
  r.body = json{{"ok", false}, {"kind", "cuda"}, {"cuda_error", name}, {"sticky", true}, {"error", r.reason}};
  return r;
}

TEST(FaultWording, EachDriverFaultIsToldAsWhatTheKernelDid) {
  EXPECT_EQ(launch_fault_sentence("CUDA_ERROR_LAUNCH_FAILED"),
            "the kernel trapped, hit a device-side assert or an unspecified fault during its launch (CUDA_ERROR_LAUNCH_FAILED)");
  // Each fault, and what its sentence must say.
  const std::pair<const char*, const char*> told[] = {
      {"CUDA_ERROR_ASSERT", "device-side assert"},
      {"CUDA_ERROR_ILLEGAL_ADDRESS", "outside every allocation"},
      {"CUDA_ERROR_MISALIGNED_ADDRESS", "not aligned"},
      {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "illegal instruction"},
      {"CUDA_ERROR_HARDWARE_STACK_ERROR", "call stack"},
      {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "refused the launch"},
  };
  for (const auto& [name, said] : told) EXPECT_NE(launch_fault_sentence(name).find(said), std::string::npos) << name;
  for (const char* name : {"CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ASSERT", "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_INVALID_PC",
                           "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_INVALID_ADDRESS_SPACE"})
    EXPECT_NE(launch_fault_sentence(name).find(std::string("(") + name + ")"), std::string::npos) << name;
  // A name without a sentence of its own: the name and the driver's description.
  EXPECT_EQ(launch_fault_sentence("CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"),
            "the launch failed with CUDA_ERROR_ECC_UNCORRECTABLE (uncorrectable ECC error encountered)");
}

TEST(FaultWording, ACaseDetailHasTheSentenceAndNoKqualSourcePath) {
  // The H200 report: a kernel executing `trap`, rejected with kqual's objects.cpp line as the detail.
  const WorkerReply r = sticky("CUDA_ERROR_LAUNCH_FAILED", "cuStreamSynchronize(s_)", "unspecified launch failure");
  const std::string d = fault_detail(r);
  EXPECT_EQ(d, "the kernel trapped, hit a device-side assert or an unspecified fault during its launch "
               "(CUDA_ERROR_LAUNCH_FAILED); reported by cuStreamSynchronize");
  EXPECT_EQ(d.find("src/"), std::string::npos) << d;
  EXPECT_EQ(d.find(".cpp"), std::string::npos) << d;
  // The raw message stays available for kqual's developers.
  EXPECT_NE(fault_debug(r).find("src/cuda/objects.cpp:154"), std::string::npos);
  for (const char* name : {"CUDA_ERROR_ASSERT", "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS",
                           "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_SOMETHING_NEW"}) {
    const std::string x = fault_detail(sticky(name, "cuCtxSynchronize()", "what the driver says"));
    EXPECT_EQ(x.find("src/"), std::string::npos) << x;
    EXPECT_NE(x.find(name), std::string::npos) << x;
  }
}

TEST(FaultWording, OtherReasonsLoseOnlyKqualSourceLocations) {
  WorkerReply r;
  r.status = WorkerReply::Status::error;
  r.body = json{{"ok", false}, {"kind", "input"}};
  r.reason = "src/worker/server.cpp:212: buffer 'y' is not in the request";
  EXPECT_EQ(fault_detail(r), "buffer 'y' is not in the request");
  r.status = WorkerReply::Status::crashed;
  r.reason = "worker killed by signal 11 (Segmentation fault) during op 'run'; its stderr ends: /w/kqual/src/worker/bench_op.cpp:40: x";
  EXPECT_EQ(fault_detail(r), "worker killed by signal 11 (Segmentation fault) during op 'run'; its stderr ends: x");
  // A candidate's own file and line (a compile log) is not kqual's: kept.
  EXPECT_EQ(without_source_locations("kernel.cu(12): error: x; cand/src2/k.cu:3: y"), "kernel.cu(12): error: x; cand/src2/k.cu:3: y");
  EXPECT_EQ(without_source_locations("a /opt/kq/src/check/evaluate.cpp:86: b src/cuda/driver.cpp:105:c"), "a b c");
}

CorrectnessReport clean_report(int passed) {
  CorrectnessReport rep;
  rep.cases = rep.passed = rep.evidence = passed;
  return rep;
}

CaseResult failing(const std::string& code) {
  CaseResult r;
  r.spec.id = "f32/n=2^31+5/generated";
  r.status = CaseStatus::fail;
  r.code = code;
  r.detail = "run 1: 3 wrong elements";
  return r;
}

TEST(IndexOverflowLabel, NamedWhenEverySmallerCaseRanAndPassedAndTheKernelFailed) {
  const CorrectnessReport before = clean_report(24);
  for (const char* code : {"wrong_result", "unwritten_output", "illegal_address", "launch_failure", "hang", "out_of_bounds_write"}) {
    EXPECT_TRUE(is_index_overflow(before, true, failing(code))) << code;
    CaseResult r = failing(code);
    label_index_case(before, true, "2^31", r);
    EXPECT_EQ(r.code, "index_overflow") << code;
    EXPECT_NE(r.detail.find("fails past 2^31 elements while every smaller case passed"), std::string::npos) << r.detail;
    EXPECT_NE(r.detail.find(std::string(code) + ": run 1: 3 wrong elements"), std::string::npos) << r.detail;
  }
}

TEST(IndexOverflowLabel, TheCasesOwnFaultIsReadBackFromTheDetail) {
  // kqual replay tells the reproducer's reader which code one case alone gives (`--case`).
  for (const char* code : {"illegal_address", "wrong_result", "hang"}) {
    CaseResult r = failing(code);
    label_index_case(clean_report(24), true, "2^31", r);
    ASSERT_EQ(r.code, "index_overflow");
    EXPECT_EQ(index_overflow_fault(r.detail), code) << r.detail;
  }
  EXPECT_EQ(index_overflow_fault("run 1: 3 wrong elements"), "");
  EXPECT_EQ(index_overflow_fault(""), "");
}

TEST(IndexOverflowLabel, KeepsTheOwnCodeWhenTheLargeCasesDidNotRun) {
  // `--no-large-cases`: the cases up to 2^27 never ran, so a failure at 2^31 may be any defect.
  CaseResult r = failing("wrong_result");
  label_index_case(clean_report(24), false, "2^31", r);
  EXPECT_EQ(r.code, "wrong_result");
  EXPECT_NE(r.detail.find("not called index_overflow: the large cases below 2^31 elements did not run"), std::string::npos) << r.detail;
}

TEST(IndexOverflowLabel, KeepsTheOwnCodeWhenSmallerCasesFailedOrDidNotRun) {
  CorrectnessReport failed = clean_report(20);
  failed.failed = 1;
  failed.cases = 21;
  CaseResult r = failing("wrong_result");
  label_index_case(failed, true, "2^31", r);
  EXPECT_EQ(r.code, "wrong_result");
  EXPECT_NE(r.detail.find("a smaller case failed too"), std::string::npos) << r.detail;

  CorrectnessReport skipped = clean_report(20);
  skipped.skipped = 2;  // --max-case-elements, or a device too small for them
  r = failing("illegal_address");
  label_index_case(skipped, true, "2^32", r);
  EXPECT_EQ(r.code, "illegal_address");
  EXPECT_NE(r.detail.find("2 smaller cases did not run"), std::string::npos) << r.detail;

  r = failing("wrong_result");
  label_index_case(clean_report(0), true, "2^31", r);
  EXPECT_EQ(r.code, "wrong_result");
  EXPECT_NE(r.detail.find("no smaller case passed"), std::string::npos) << r.detail;
}

TEST(IndexOverflowLabel, KeepsTheOwnCodeWhenTheCaseDidNotFailByTheKernel) {
  const CorrectnessReport before = clean_report(24);
  for (const char* code : {"harness_error", "worker_protocol", "crash", "launch_error", "device_too_small"}) {
    CaseResult r = failing(code);
    EXPECT_FALSE(is_index_overflow(before, true, r)) << code;
    label_index_case(before, true, "2^31", r);
    EXPECT_EQ(r.code, code);
    EXPECT_NE(r.detail.find("is not evidence of 32-bit index arithmetic"), std::string::npos) << r.detail;
  }
  // Passed, skipped or refused cases are left alone.
  for (const CaseStatus status : {CaseStatus::pass, CaseStatus::skipped, CaseStatus::refused}) {
    CaseResult r = failing("device_too_small");
    r.status = status;
    const std::string detail = r.detail;
    label_index_case(before, true, "2^31", r);
    EXPECT_EQ(r.code, "device_too_small");
    EXPECT_EQ(r.detail, detail);
  }
}

}  // namespace
}  // namespace kqual::check
