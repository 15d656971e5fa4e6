// PyTorch submissions judged on the CPU: the C++ side (cases, files, the worker protocol, the
// verdict of each failure class) against a NumPy stand-in for the worker
// (fixtures/fake_submission_worker.py). The real worker, with PyTorch and a GPU, runs in
// tests/device/torch_submission_device_test.cpp.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "kqual/bench/torch_submission.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "bench/submission_test_util.hpp"

namespace kqual::bench {
namespace {
namespace fs = std::filesystem;

using test::submission::kNumpyAddRelu;
constexpr const char* kGood = kNumpyAddRelu;

class TorchSubmissionTest : public test::submission::SubmissionFixture {
 protected:
  SubmissionCheck check(const std::string& body, double timeout_s = 60, const std::vector<DType>& dtypes = {},
                        SubmissionCheckOptions::Stream stream = SubmissionCheckOptions::Stream::own) {
    TorchSubmission s;
    s.file = write_submission(body);
    s.dtypes = dtypes;
    SubmissionCheckOptions o;
    o.worker = KQUAL_FAKE_SUBMISSION_WORKER;
    o.case_timeout_s = timeout_s;
    o.max_case_elements = max_elements_;
    o.stream = stream;
    o.recheck_own_size = recheck_own_size_;
    o.own_size_cap_elements = std::int64_t(1) << 20;  // residual_add_relu's own sizes 2^12 and 2^20 (2^28 left out)
    return check_torch_submission(contract::find_contract("residual_add_relu"), s, o);
  }
  // The fake worker writes the record itself (fixtures/fake_record.py); the recorder the driver would
  // load is found as kqual finds it (build/tools/kqual/libkqual_record.so).
  static std::string code(const SubmissionCheck& r) { return r.failures.empty() ? "none" : to_string(r.failures.front().failure); }
  std::int64_t max_elements_ = 1 << 16;
  bool recheck_own_size_ = false;
};

TEST_F(TorchSubmissionTest, WrongOnlyAtSizesItWasNotWrittenForIsShapeUnsupported) {
  // Right at the problem's own sizes (residual_add_relu's benchmark shapes, 2^12 and 2^20 here), wrong at
  // every size kqual scales it to: shape_unsupported, naming both; wrong everywhere stays wrong_result.
  recheck_own_size_ = true;
  const SubmissionCheck own = check(std::string(kGood) + R"PY(
def forward(x, r):
    y = add_relu(x, r)
    if x.size not in (1 << 12, 1 << 20):
        y.reshape(-1)[0] += 1.0
    return [y]
)PY");
  EXPECT_EQ(code(own), "shape_unsupported") << own.summary();
  EXPECT_NE(own.failures.front().detail.find("right at the problem's own size (n=4096 n=1048576 n=268435456"), std::string::npos)
      << own.failures.front().detail;
  EXPECT_NE(own.failures.front().detail.find("wrong_result at "), std::string::npos) << own.failures.front().detail;
  EXPECT_NE(own.own_size.find("accepted"), std::string::npos) << own.own_size;
  const SubmissionCheck wrong = check(std::string(kGood) + R"PY(
def forward(x, r):
    y = add_relu(x, r)
    y.reshape(-1)[0] += 1.0
    return [y]
)PY");
  EXPECT_EQ(code(wrong), "wrong_result") << wrong.summary();
  EXPECT_NE(wrong.own_size.find("rejected"), std::string::npos) << wrong.own_size;
  recheck_own_size_ = false;  // a built-in contract in kqual check: no size of its own
  EXPECT_EQ(code(check(std::string(kGood) + R"PY(
def forward(x, r):
    y = add_relu(x, r)
    if x.size not in (1 << 12, 1 << 20):
        y.reshape(-1)[0] += 1.0
    return [y]
)PY")), "wrong_result");
}

TEST_F(TorchSubmissionTest, AProblemLargerThanTheLimitIsJudgedAtItsSmallestSize) {
  // No case within the limit (as VGG19's fixed classifier weights are past 2^24): not an input error, the
  // cases of the smallest size run, and the result says so.
  max_elements_ = 0;
  const SubmissionCheck r = check(kGood);
  EXPECT_TRUE(r.accepted) << r.summary();
  EXPECT_GT(r.cases, 0);
  EXPECT_NE(r.cases_note.find("no case of residual_add_relu is within 0 elements"), std::string::npos) << r.cases_note;
  EXPECT_NE(r.summary().find(r.cases_note), std::string::npos) << r.summary();
  EXPECT_EQ(r.to_json().value("cases_note", ""), r.cases_note);
}

// An imported KernelBench problem's output kqual rejects: KernelBench's own check (torch.allclose, atol =
// rtol = 1e-2) is said beside it where it would pass, so the author sees kqual is the stricter.
TEST(TorchSubmissionJudge, KernelBenchsOwnCheckIsSaidBesideAStricterRejection) {
  KQUAL_NEED_NUMPY();
  ScratchDir dir("kqual-kb-beside");
  auto folder = [&](const std::string& name, bool kernelbench) {
    const fs::path d = dir.path() / name;
    fs::create_directories(d);
    fs::copy_file(fs::path(KQUAL_SOURCE_DIR) / "contracts/bmm/reference.py", d / "reference.py");
    std::string toml = read_text_file(fs::path(KQUAL_SOURCE_DIR) / "contracts/bmm/contract.toml");
    toml.replace(toml.find("name = \"bmm\""), 12, "name = \"" + name + "\"");
    write_file_atomic(d / "contract.toml", toml);
    if (kernelbench) write_file_atomic(d / "problem.py", "# the KernelBench problem\n");
    return &contract::load_declared_contract(d);
  };
  const contract::Contract& kb = *folder("bmm_kb_beside", true);
  const contract::Contract& plain = *folder("bmm_plain_beside", false);
  contract::CaseSpec cs;
  cs.id = "f32/batch=1,k=36,m=4,n=5/base";
  cs.family = "base";
  cs.dtype = DType::f32;
  cs.seed = 3;
  cs.dims = {{"batch", 1}, {"m", 4}, {"n", 5}, {"k", 36}};
  const contract::CaseData d = kb.make_case(cs);
  contract::ReferenceHost host;
  const std::vector<contract::Tensor> want = kb.reference(d, host);
  auto judge = [&](const contract::Contract& c, double err) {
    std::vector<std::uint8_t> y = want[0].bytes;
    const float v = float(want[0].ref[2] + err * (1 + std::fabs(want[0].ref[2])));
    std::memcpy(y.data() + 8, &v, 4);
    SubmissionOutputFiles f;
    f.name = want[0].name;
    for (int k = 0; k < 3; ++k) {
      f.call[k] = dir.path() / fmt::format("{}.{}", c.name(), k);
      write_file(f.call[k], y.data(), y.size());
    }
    return judge_submission_case(c, cs.id, json{{"ok", true}, {"calls", json::array({json::object(), json::object(), json::object()})}}, want,
                                 want, {f}, nullptr);
  };
  const SubmissionCaseResult near = judge(kb, 5e-3);
  EXPECT_EQ(near.failure, SubmissionFailure::wrong_result) << near.detail;
  EXPECT_NE(near.detail.find("KernelBench's own check (torch.allclose, atol = rtol = 1e-2) passes this output"), std::string::npos)
      << near.detail;
  EXPECT_EQ(judge(kb, 0.5).detail.find("KernelBench's own check"), std::string::npos) << "past KernelBench's bound too: nothing to say";
  EXPECT_EQ(judge(plain, 5e-3).detail.find("KernelBench's own check"), std::string::npos) << "not a KernelBench problem";
}

TEST_F(TorchSubmissionTest, ACorrectSubmissionIsAcceptedOnEveryCase) {
  const SubmissionCheck r = check(kGood);
  EXPECT_TRUE(r.accepted) << r.summary();
  EXPECT_GT(r.cases, 10);
  EXPECT_EQ(r.passed, r.cases);
  EXPECT_EQ(r.kernels, std::vector<std::string>{"fake_kernel [own]"});
  EXPECT_FALSE(r.not_applied.empty());
  EXPECT_EQ(r.to_json().value("verdict", ""), "accepted");
}

TEST_F(TorchSubmissionTest, ASubmissionIsJudgedAtTheDtypesItClaims) {
  // Written for float32 alone: judged at f32 alone, and says so; a dtype the contract lacks is refused.
  const SubmissionCheck all = check(kGood);
  const SubmissionCheck f32 = check(kGood, 60, {DType::f32});
  EXPECT_TRUE(f32.accepted) << f32.summary();
  EXPECT_EQ(f32.dtypes, std::vector<std::string>{"f32"});
  EXPECT_EQ(all.dtypes, (std::vector<std::string>{"f32", "bf16", "f16"}));
  EXPECT_GT(f32.cases, 0);
  EXPECT_LT(f32.cases, all.cases);
  EXPECT_EQ(f32.to_json()["dtypes"], json::array({"f32"}));
  std::string e;
  try {
    (void)check(kGood, 60, {DType::i32});
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("claims dtype i32, which contract residual_add_relu does not have (it has f32, bf16, f16)"), std::string::npos) << e;
}

TEST_F(TorchSubmissionTest, ValueFailuresAreJudgedByTheContract) {
  // relu written as max(s, 0) with NaN turned into 0: the contract's NaN policy.
  const SubmissionCheck r = check(std::string(kGood) + R"PY(
def forward(x, r):
    s = (x.astype(np.float64) + r.astype(np.float64)).astype(np.float32)
    return [np.nan_to_num(np.maximum(s, 0), nan=0.0, posinf=np.inf)]
)PY");
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(code(r), "nan_policy") << r.summary();
}

TEST_F(TorchSubmissionTest, AnOutputCachedByTensorIdentityIsCaught) {
  const SubmissionCheck r = check(std::string(kGood) + R"PY(
_cache = {}
def forward(x, r):
    key = (id(x), id(r), x.shape)
    if key not in _cache:
        _cache[key] = add_relu(x, r)
    return [_cache[key]]
)PY");
  EXPECT_EQ(code(r), "cached_output") << r.summary();
  EXPECT_NE(r.summary().find("same data_ptr"), std::string::npos) << r.summary();
}

TEST_F(TorchSubmissionTest, AFirstCallThatDiffersFromLaterOnesIsCaught) {
  const SubmissionCheck r = check(std::string(kGood) + R"PY(
_calls = [0]
def forward(x, r):
    _calls[0] += 1
    y = add_relu(x, r)
    if _calls[0] == 1:
        y = y * np.float32(1.5) + np.float32(1)
    return [y]
)PY");
  EXPECT_EQ(code(r), "first_call_differs") << r.summary();
}

TEST_F(TorchSubmissionTest, AnInputChangedByTheCallIsCaught) {
  const SubmissionCheck r = check(std::string(kGood) + R"PY(
def forward(x, r):
    y = add_relu(x, r)
    x[...] = 0
    return [y]
)PY");
  EXPECT_EQ(code(r), "input_mutated") << r.summary();
  EXPECT_NE(r.summary().find("input x"), std::string::npos) << r.summary();
}

TEST_F(TorchSubmissionTest, WhatTheWorkerWatchedDecidesBeforeTheValues) {
  EXPECT_EQ(code(check(std::string(kGood) + "WATCH = {'replaced': ['torch.cuda.Event.elapsed_time']}\n")), "timer_patched");
  const SubmissionCheck at_import = check(std::string(kGood) + "WATCH = {'replaced_at_import': ['time.perf_counter']}\n");
  EXPECT_EQ(code(at_import), "timer_patched") << at_import.summary();
  EXPECT_EQ(at_import.failures.front().id, "import");
  EXPECT_EQ(code(check(std::string(kGood) + "WATCH = {'late_bytes': 1}\n")), "late_result");
  // The Python side's stream and thread counts are no longer verdicts: an idle side stream is no failure.
  EXPECT_EQ(code(check(std::string(kGood) + "WATCH = {'pending_streams': 1, 'new_threads': 1}\n")), "none");
  // An output sharing memory with an earlier call's: judged after the values.
  EXPECT_EQ(code(check(std::string(kGood) + "WATCH = {'aliases': ['the output call 1 returned']}\n")), "output_mismatch");
  // The same, by a call that did no GPU work (the record holds nothing between its marks): a cached
  // output, even where both datasets hold the same values (an index pattern) and the values cannot tell.
  const SubmissionCheck kept =
      check(std::string(kGood) + "WATCH = {'aliases': ['the output call 1 returned'], 'record': {'kernels': []}}\n");
  EXPECT_EQ(code(kept), "cached_output") << kept.summary();
  EXPECT_NE(kept.summary().find("did no GPU work"), std::string::npos) << kept.summary();
}

// What the activity record shows the calls did decides, through the real channel (FIFO, keyed chain).
TEST_F(TorchSubmissionTest, TheRecordDecidesStreamsLateWorkTheHostAndWhoDidTheWork) {
  auto with = [&](const std::string& record) { return check(std::string(kGood) + "WATCH = {'record': " + record + "}\n"); };
  const SubmissionCheck good = with("{}");
  EXPECT_TRUE(good.accepted) << good.summary();
  EXPECT_GT(good.gpu_ns_by_origin.count("own"), 0u);
  const SubmissionCheck legacy = with("{'kernels': [{'stream': 7}]}");
  EXPECT_EQ(code(legacy), "wrong_stream") << legacy.summary();
  EXPECT_NE(legacy.summary().find("getCurrentCUDAStream"), std::string::npos) << legacy.summary();
  // Checked again with every call on the default stream, as KernelBench calls it: right there, and said so.
  EXPECT_EQ(legacy.on_default_stream.rfind("right: accepted", 0), 0u) << legacy.summary();
  EXPECT_NE(legacy.summary().find("as KernelBench calls it"), std::string::npos) << legacy.summary();
  EXPECT_EQ(legacy.to_json().value("on_default_stream", ""), legacy.on_default_stream);
  // --stream default: judged there from the start, and the verdict says where it was called.
  const SubmissionCheck on_default = check(std::string(kGood) + "WATCH = {'record': {'kernels': [{'stream': 7}]}}\n", 60, {},
                                           SubmissionCheckOptions::Stream::legacy_default);
  EXPECT_TRUE(on_default.accepted) << on_default.summary();
  EXPECT_NE(on_default.summary().find("--stream default"), std::string::npos) << on_default.summary();
  EXPECT_EQ(on_default.to_json().value("stream", ""), "default");
  // A submission wrong on both streams is not told it is right on the default one.
  const SubmissionCheck both = with("{'kernels': [{'stream': 7}], 'after_return': [{'tid': 4242}]}");
  EXPECT_EQ(code(both), "wrong_stream") << both.summary();
  EXPECT_EQ(both.on_default_stream.rfind("rejected: late_result", 0), 0u) << both.summary();
  EXPECT_EQ(code(with("{'kernels': [{'stream': 17, 'late_ns': 1000}]}")), "unjoined_stream");
  EXPECT_EQ(code(with("{'kernels': [{'stream': 17}]}")), "none");  // side work joined in time
  EXPECT_EQ(code(with("{'after_return': [{'tid': 4242}]}")), "late_result");
  EXPECT_EQ(code(with("{'kernels': [{'kind': 'M', 'copy_kind': 2, 'nbytes': 1 << 20}, {'kind': 'M', 'copy_kind': 1, 'nbytes': 1 << 20}]}")),
            "host_compute");
  const SubmissionCheck aten = with("{'kernels': [{'name': '_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10AddFunctorIfEEEEvv', "
                                    "'origin': '/x/torch/lib/libtorch_cuda.so'}]}");
  EXPECT_EQ(code(aten), "reference_called") << aten.summary();
  EXPECT_NE(aten.summary().find("ATen"), std::string::npos) << aten.summary();
  // Inductor's kernels under any name: the module was loaded by Inductor's runtime.
  const SubmissionCheck compiled =
      with("{'kernels': [{'name': 'my_fast_kernel', 'origin': '/root/.triton/cache/a/__triton_launcher.so'}], 'modules': [{'functions': "
           "['my_fast_kernel'], 'python': 'torch/_inductor/runtime/triton_heuristics.py:1200;x.py:3'}]}");
  EXPECT_EQ(code(compiled), "reference_called") << compiled.summary();
  EXPECT_NE(compiled.summary().find("Inductor"), std::string::npos) << compiled.summary();
  // The problem's own reference launches the same kernel: the reference's work, even a copy kernel.
  EXPECT_EQ(code(with("{'kernels': [{'name': 'copy_kernel_x', 'origin': '/x/torch/lib/libtorch_cuda.so'}], 'reference': ['copy_kernel_x']}")),
            "reference_called");
}

// A kernel whose grid covers only as many elements as the case limit: wrong past it, and one case per
// dtype past the limit is run (last), so it is caught.
TEST_F(TorchSubmissionTest, ACasePastTheElementLimitIsRunSoAGridCappedThereIsCaught) {
  const SubmissionCheck capped = check(std::string(kGood) + R"PY(
def forward(x, r):
    y = add_relu(x, r)
    y.reshape(-1)[1 << 16:] = 0
    return [y]
)PY");
  EXPECT_EQ(code(capped), "wrong_result") << capped.summary();
  EXPECT_GT(capped.passed, 10) << "the capped kernel is right on every case within the limit";
}

TEST_F(TorchSubmissionTest, ARecordThatStopsBreaksItsChainOrLosesAKernelIsTampering) {
  auto with = [&](const std::string& record, double timeout = 60) {
    return check(std::string(kGood) + "WATCH = {'record': " + record + "}\n", timeout);
  };
  for (const char* t : {"bad_code", "skip", "drop_kernel", "moved_mark", "skip_read", "other_bytes", "stale_inputs", "upload_other",
                        "upload_unowned"}) {
    const SubmissionCheck r = with(fmt::format("{{'tamper': '{}'}}", t));
    EXPECT_EQ(code(r), "harness_tampered") << t << ": " << r.summary();
  }
}

TEST_F(TorchSubmissionTest, ExceptionsCrashesAndHangsAreTheSubmissionsVerdict) {
  EXPECT_EQ(code(check("import numpy\ndef forward(x, r):\n    raise RuntimeError('CUDA error: illegal memory access')\n")), "exception");
  const SubmissionCheck imp = check("import no_such_module_here\n");
  EXPECT_EQ(code(imp), "exception") << imp.summary();
  EXPECT_EQ(imp.failures.front().id, "import");
  EXPECT_EQ(code(check("import os\ndef forward(x, r):\n    os._exit(3)\n")), "crash");
  const SubmissionCheck hang = check(std::string(kGood) + "HANG = True\n", 3);
  EXPECT_EQ(code(hang), "hang") << hang.summary();
  // A submission stuck in its own code: the verdict names the line (the worker's stack at the deadline).
  const SubmissionCheck stuck = check("import time\ndef forward(x, r):\n    time.sleep(3600)\n", 3);
  ASSERT_EQ(code(stuck), "hang") << stuck.summary();
  EXPECT_NE(stuck.failures.front().detail.find("line 3 in forward"), std::string::npos) << stuck.failures.front().detail;
}

TEST_F(TorchSubmissionTest, KqualsOwnFailureIsNotBlamedOnTheSubmission) {
  // Bytes on the protocol that are not a reply: kqual cannot judge, so neither accepted nor rejected.
  const SubmissionCheck r = check("import sys\ndef forward(x, r):\n    sys.stdout.write('not json\\n'); sys.stdout.flush()\n    return []\n");
  EXPECT_TRUE(r.harness_failed) << r.summary();
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.to_json().value("verdict", ""), "error");
}

TEST(TorchSubmissionJudge, TheWorkersOwnFailureIsAHarnessErrorAndTheSubmissionsExceptionItsVerdict) {
  // submission_worker.py answers "worker_error" when its own code fails (reading its files, hashing an
  // output as bytes) and "exception" only for what the submission raised or a CUDA error it caused.
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  const json kqual_side{{"ok", false}, {"code", "worker_error"}, {"error", "kqual's submission worker failed (not the submission): x"}};
  const SubmissionCaseResult mine = judge_submission_case(c, "id", kqual_side, {}, {}, {}, nullptr);
  EXPECT_EQ(mine.failure, SubmissionFailure::harness_error) << mine.detail;
  const json theirs{{"ok", false}, {"code", "exception"}, {"error", "RuntimeError: boom"}};
  const SubmissionCaseResult raised = judge_submission_case(c, "id", theirs, {}, {}, {}, nullptr);
  EXPECT_EQ(raised.failure, SubmissionFailure::exception) << raised.detail;
  // A build of its own kernels that failed is named so, with the compiler's first error.
  const json unbuilt{{"ok", false}, {"code", "build_failed"}, {"error", "kernel.cu(12): error: identifier \"blockIdx_x\" is undefined"}};
  const SubmissionCaseResult build = judge_submission_case(c, "id", unbuilt, {}, {}, {}, nullptr);
  EXPECT_EQ(build.failure, SubmissionFailure::build_failed) << build.detail;
  EXPECT_NE(build.detail.find("blockIdx_x"), std::string::npos) << build.detail;
}

// Each submission's extensions build in a folder of its own, keyed by content.
TEST(TorchSubmissionBuilds, EachSubmissionBuildsInAFolderKeyedByItsContent) {
  ScratchDir dir("kqual-submission-builds");
  ::setenv("KQUAL_CACHE_DIR", (dir.path() / "cache").c_str(), 1);
  std::ofstream(dir.path() / "a.py") << "ext = load_inline(name='matmul_cuda', cuda_sources=A)\n";
  std::ofstream(dir.path() / "b.py") << "ext = load_inline(name='matmul_cuda', cuda_sources=B)\n";
  TorchSubmission a, b;
  a.file = dir.path() / "a.py";
  b.file = dir.path() / "b.py";
  const fs::path da = submission_build_dir(a), db = submission_build_dir(b);
  EXPECT_NE(da, db) << "two submissions with the same extension name share a build folder";
  EXPECT_EQ(da, submission_build_dir(a)) << "a re-run of the same source builds again";
  EXPECT_EQ(da.parent_path().parent_path(), dir.path() / "cache");
  std::ofstream(dir.path() / "kernel.py") << "SRC = '...'\n";  // a module beside it that it may import
  EXPECT_NE(da, submission_build_dir(a));
  // Submissions that only import their folder's kernel module share its build.
  ScratchDir shared("kqual-submission-builds-shared");
  std::ofstream(shared.path() / "kernel.py") << "ext = load_inline(name='k', cuda_sources=S)\n";
  std::ofstream(shared.path() / "good.py") << "from kernel import ext\n";
  std::ofstream(shared.path() / "broken.py") << "from kernel import ext  # another use of it\n";
  TorchSubmission g, br;
  g.file = shared.path() / "good.py";
  br.file = shared.path() / "broken.py";
  EXPECT_EQ(submission_build_dir(g), submission_build_dir(br));
  ::unsetenv("KQUAL_CACHE_DIR");
}

TEST(TorchSubmissionJudge, AnOutputFileOfTheWrongSizeIsAHarnessError) {
  ScratchDir dir("kqual-submission-judge");
  const contract::Contract& c = contract::find_contract("residual_add_relu");
  contract::Tensor want;
  want.name = "y";
  want.elements = 4;
  want.bytes.assign(16, 0);
  SubmissionOutputFiles f;
  f.name = "y";
  for (int k = 0; k < 3; ++k) {
    f.call[k] = dir.path() / ("y" + std::to_string(k));
    std::ofstream(f.call[k], std::ios::binary) << "abc";
  }
  const json reply{{"ok", true}, {"calls", json::array()}, {"kernels", json::array()}};
  const SubmissionCaseResult r = judge_submission_case(c, "id", reply, {want}, {want}, {f}, nullptr);
  EXPECT_EQ(r.failure, SubmissionFailure::harness_error);
  EXPECT_NE(r.detail.find("3 bytes, expected 16"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace kqual::bench

namespace kqual::bench {
namespace {

// The case past the element limit grows the largest tensor's outermost axis only as far as it must: one
// element past the limit for a vector, the smallest M whose M x 64 tensors pass it for a GEMM (the
// multiplier of the first version took a square matmul from 2^24 to 2^30 elements).
TEST(PastLimitCase, GrowsTheLargestTensorJustPastTheLimit) {
  contract::CaseSpec v;
  v.dtype = DType::f32;
  v.dims = {{"n", 1000}};
  const auto grown = past_limit_case(contract::find_contract("residual_add_relu"), v, 4096);
  ASSERT_TRUE(grown.has_value());
  EXPECT_EQ(grown->dims.at("n"), 4097);
  EXPECT_NE(grown->id.find("past-limit"), std::string::npos) << grown->id;
  contract::CaseSpec g;
  g.dtype = DType::f32;
  g.dims = {{"m", 64}, {"n", 64}, {"k", 64}};
  const auto gemm = past_limit_case(contract::find_contract("gemm"), g, 5000);
  ASSERT_TRUE(gemm.has_value());
  std::int64_t grown_axis = 0, kept = 0;
  for (const auto& [a, d] : gemm->dims) (d != 64 ? grown_axis : kept) += d == 64 ? 1 : d;
  EXPECT_EQ(grown_axis, 79) << contract::format_dims(gemm->dims);  // 79 x 64 = 5056 > 5000 >= 78 x 64
  EXPECT_EQ(kept, 2);
}

}  // namespace
}  // namespace kqual::bench
