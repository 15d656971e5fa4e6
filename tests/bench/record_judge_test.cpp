// The activity record's reader and the judgements made from it (src/bench/activity_record.cpp,
// src/bench/record_judge.cpp), on records written by hand: no worker, no GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "kqual/bench/activity_record.hpp"
#include "kqual/bench/record_judge.hpp"
#include "kqual/bench/record_mac.hpp"

namespace kqual::bench {
namespace {

// Lines as the recorder writes them: numbered, chained under a key.
class Writer {
 public:
  explicit Writer(RecordReader& r) : r_(r) {}
  void line(const std::string& fields, bool forge = false, std::uint64_t skip = 0) {
    seq_ += 1 + skip;
    const std::string body = fmt::format("{}\t{}", seq_, fields);
    const std::uint64_t mac = kqual_record::chained_mac(kKey, prev_, body.data(), body.size());
    prev_ = mac;
    r_.feed(fmt::format("{}\t{:016x}", body, forge ? mac ^ 1 : mac));
  }
  static constexpr std::uint64_t kKey[2] = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};

 private:
  RecordReader& r_;
  std::uint64_t seq_ = 0, prev_ = 0;
};

struct Fixture {
  RecordReader reader{Writer::kKey};
  Writer w{reader};
  std::uint32_t corr = 100;
  Fixture() {
    w.line("H\t1\t1\tlibcupti.so.13\tpython");
    w.line("C\t1\t7");
  }
  void mark(const std::string& label, long tid = 1) { w.line(fmt::format("X\t{}\t{}\t{}\t13\t0", label, corr, tid)); }
  void kernel(std::uint64_t start, std::uint64_t end, std::uint32_t stream = 13, long tid = 1, const char* name = "k") {
    ++corr;
    w.line(fmt::format("L\t{}\t{}\t0\tcudaLaunchKernel\t0\t/x/ext.so\t-", corr, tid));
    w.line(fmt::format("K\t{}\t{}\t{}\t{}\t1\t1\t1\t256\t1\t1\t0\t{}", corr, stream, start, end, name));
  }
  // Call k of a check as the worker marks it: the spin, the call's kernels (name, object), the fence.
  void call(int k, std::initializer_list<std::pair<const char*, const char*>> ks) {
    const std::uint64_t t = 1'000'000 * std::uint64_t(k);
    mark(fmt::format("armed{}", k));
    kernel_from(t, t + 10, "/x/torch/lib/libtorch_cuda.so", "_ZN2at4cuda5sleepEx");
    mark(fmt::format("call{}", k));
    for (const auto& [name, object] : ks) kernel_from(t + 100, t + 200, object, name);
    mark(fmt::format("returned{}", k));
    kernel_from(t + 300, t + 310, "/x/torch/lib/libtorch_cuda.so", "FillFunctor_fence");
    mark(fmt::format("fenced{}", k));
  }
  void kernel_from(std::uint64_t start, std::uint64_t end, const char* object, const char* name) {
    ++corr;
    w.line(fmt::format("L\t{}\t1\t0\tcudaLaunchKernel\t0\t{}\t-", corr, object));
    w.line(fmt::format("K\t{}\t13\t{}\t{}\t1\t1\t1\t256\t1\t1\t0\t{}", corr, start, end, name));
  }
  // A copy the harness thread enqueued (kind: 1 to the GPU, 2 to the host, 8 on the GPU).
  void copy(int kind, std::uint64_t bytes) {
    ++corr;
    w.line(fmt::format("L\t{}\t1\t0\tcudaMemcpyAsync\t0\t/x/torch/lib/libtorch_cuda.so\t-", corr));
    w.line(fmt::format("M\t{}\t{}\t{}\t13\t5\t6\t0", corr, kind, bytes));
  }
  // The recorder's own upload of `bytes` under `label` (one copy from the host, its correlation id in the 'U' line).
  void upload(const std::string& label, const std::vector<std::uint8_t>& bytes, int status = 0) {
    ++corr;
    w.line(fmt::format("L\t{}\t1\t0\tcuMemcpyHtoD_v2\t0\t-\t-", corr));
    w.line(fmt::format("M\t{}\t1\t{}\t7\t5\t6\t0", corr, bytes.size()));
    w.line(fmt::format("U\t{}\t7f00\t{}\t{:016x}\t{}\t{}", label, bytes.size(), bytes_content_mac(Writer::kKey, bytes.data(), bytes.size()),
                       status, corr));
  }
  // The recorder's own read of device memory holding `bytes`.
  void read(const std::string& label, const std::vector<std::uint8_t>& bytes, int status = 0) {
    kqual_record::ContentMac mac(Writer::kKey);
    mac.update(bytes.data(), bytes.size());
    w.line(fmt::format("R\t{}\t7f00\t{}\t{:016x}\t{}\t{}", label, bytes.size(), mac.final(), status, corr));
  }
  // One timed sample: its marks around the kernels given as (start, end, stream).
  void sample(int id, std::initializer_list<std::array<std::uint64_t, 3>> ks) {
    mark(fmt::format("t{}", id));
    for (const auto& k : ks) kernel(k[0], k[1], std::uint32_t(k[2]));
    mark(fmt::format("/t{}", id));
  }
};

TEST(RecordReader, TheChainNumberingAndFormatAreChecked) {
  Fixture ok;
  ok.kernel(10, 20);
  EXPECT_TRUE(ok.reader.current().broken.empty()) << ok.reader.current().broken;
  EXPECT_TRUE(ok.reader.current().started);
  EXPECT_EQ(ok.reader.current().legacy_stream.value_or(0), 7u);
  ASSERT_EQ(ok.reader.current().activities.size(), 1u);
  EXPECT_EQ(ok.reader.current().activities[0].end, 20u);

  Fixture forged;
  forged.w.line("X\tcall1\t5\t1\t13\t0", /*forge=*/true);
  EXPECT_NE(forged.reader.current().broken.find("code"), std::string::npos) << forged.reader.current().broken;

  Fixture skipped;
  skipped.w.line("X\tcall1\t5\t1\t13\t0", false, /*skip=*/1);
  EXPECT_NE(skipped.reader.current().broken.find("skips"), std::string::npos) << skipped.reader.current().broken;

  Fixture malformed;
  malformed.w.line("K\t1\t2");
  EXPECT_NE(malformed.reader.current().broken.find("malformed"), std::string::npos) << malformed.reader.current().broken;
  // A break stays: every later read is judged by it.
  malformed.kernel(1, 2);
  EXPECT_FALSE(malformed.reader.take().broken.empty());
  EXPECT_FALSE(malformed.reader.current().broken.empty());
}

TEST(RecordTiming, EachSampleIsTheGpuSpanOfEverythingItsCallCausedOnEveryStream) {
  Fixture f;
  f.sample(3, {{1'000'000, 1'004'000, 13}, {1'001'000, 1'010'000, 17}});  // a side stream ends last
  f.sample(5, {{2'000'000, 2'005'000, 13}, {2'000'500, 2'006'000, 17}});
  const RecordTiming t = timing_from_record(f.reader.current(), {}, {3, 5}, {0.0101, 0.0062}, true);
  EXPECT_EQ(t.code, "") << t.detail;
  ASSERT_EQ(t.ms.size(), 2u);
  EXPECT_DOUBLE_EQ(t.ms[0], 0.010);
  EXPECT_DOUBLE_EQ(t.ms[1], 0.006);
}

TEST(RecordTiming, EventsThatReportLessThanTheGpuRanAreATimerPatched) {
  Fixture f;
  f.sample(0, {{1'000'000, 1'100'000, 13}});  // 0.1 ms of work
  const RecordTiming t = timing_from_record(f.reader.current(), {}, {0}, {0.025}, true);  // the events say a quarter
  EXPECT_EQ(t.code, "timer_patched") << t.detail;
  // Not judged (a baseline): the span only.
  EXPECT_EQ(timing_from_record(f.reader.current(), {}, {0}, {0.025}, false).code, "");
}

TEST(RecordTiming, ATimedCallWithoutWorkOrWithOtherWorkThanTheVerifiedOnesIsTimedOutputWrong) {
  Fixture none;
  none.sample(0, {{1'000'000, 1'001'000, 13}});
  none.sample(1, {});
  EXPECT_EQ(timing_from_record(none.reader.current(), {}, {0, 1}, {1, 1}, true).code, "timed_output_wrong");

  // As many kernels, far less kernel time than the verified calls on new values: memoised while timed.
  Fixture cheaper;
  for (std::uint64_t d = 0; d < 2; ++d) {
    cheaper.mark(fmt::format("v{}", d));
    cheaper.kernel(5'000'000 + d * 100'000, 5'050'000 + d * 100'000);  // 50 us
    cheaper.mark(fmt::format("vd{}", d));
  }
  cheaper.sample(0, {{1'000'000, 1'002'000, 13}});  // 2 us
  const RecordTiming c = timing_from_record(cheaper.reader.current(), {}, {0}, {1}, true);
  EXPECT_EQ(c.code, "timed_output_wrong") << c.detail;
  EXPECT_NE(c.detail.find("no timed call saw"), std::string::npos) << c.detail;

  Fixture fewer;
  fewer.mark("v0");
  fewer.kernel(5'000'000, 5'001'000);
  fewer.kernel(5'001'000, 5'002'000);
  fewer.mark("vd0");
  fewer.sample(0, {{1'000'000, 1'001'000, 13}});  // one kernel, the verified call ran two
  const RecordTiming t = timing_from_record(fewer.reader.current(), {}, {0}, {1}, true);
  EXPECT_EQ(t.code, "timed_output_wrong") << t.detail;
  EXPECT_NE(t.detail.find("verified"), std::string::npos) << t.detail;
}

TEST(RecordTiming, WorkAnotherThreadEnqueuesBetweenSamplesIsLateAndMissingMarksAreTampering) {
  Fixture late;
  late.sample(0, {{1'000'000, 1'001'000, 13}});
  late.kernel(1'002'000, 1'003'000, 13, /*tid=*/99);
  EXPECT_EQ(timing_from_record(late.reader.current(), {}, {0}, {1}, true).code, "late_result");

  // The submission's own kernel between two samples, outside both: its marks were moved.
  Fixture moved;
  moved.sample(0, {{1'000'000, 1'001'000, 13}});
  moved.kernel(1'002'000, 1'003'000);  // from /x/ext.so: the submission's own, on the harness's thread
  moved.sample(1, {{2'000'000, 2'001'000, 13}});
  EXPECT_EQ(timing_from_record(moved.reader.current(), {}, {0, 1}, {1, 1}, true).code, "timed_output_wrong");

  Fixture missing;
  missing.sample(0, {{1'000'000, 1'001'000, 13}});
  EXPECT_EQ(timing_from_record(missing.reader.current(), {}, {0, 1}, {1, 1}, true).code, "harness_tampered");
}

TEST(RecordTiming, ACopyFromTheHostBetweenTimedCallsThatTheRecorderDidNotMakeIsTampering) {
  const std::vector<std::uint8_t> a(4096, 1);
  const std::map<std::string, std::uint64_t> expected = {{"up0:x", bytes_content_mac(Writer::kKey, a.data(), a.size())}};
  auto judge = [&](const std::function<void(Fixture&)>& between) {
    Fixture f;
    f.upload("up0:x", a);  // the datasets, before the first sample
    f.copy(1, 4096);       // the submission's first call moving its constants: before any sample, not judged
    f.sample(0, {{1'000'000, 1'001'000, 13}});
    between(f);
    f.sample(1, {{2'000'000, 2'001'000, 13}});
    std::set<std::uint32_t> own;
    EXPECT_EQ(check_uploads(f.reader.current(), expected, &own), "");
    return timing_from_record(f.reader.current(), {}, {0, 1}, {1, 1}, true, &own);
  };
  EXPECT_EQ(judge([](Fixture&) {}).code, "") << judge([](Fixture&) {}).detail;
  EXPECT_EQ(judge([&](Fixture& f) { f.upload("up0:x", a); }).code, "");
  const RecordTiming t = judge([](Fixture& f) { f.copy(1, 4096); });  // values put where a read-back will look
  EXPECT_EQ(t.code, "harness_tampered") << t.detail;
  EXPECT_NE(t.detail.find("recorder did not make"), std::string::npos) << t.detail;
}

// Who did the work: fill and copy kernels are how outputs are made, unless the problem's own reference
// launches the same one; the user's allow list overrides; the submission's own kernels are never blamed.
TEST(RecordJudge, LibraryAndReferenceKernelsAgainstTheAllowList) {
  constexpr const char* kTorch = "/x/torch/lib/libtorch_cuda.so";
  constexpr const char* kExt = "/x/torch_extensions/mine/mine.so";
  auto judge = [&](std::initializer_list<std::pair<const char*, const char*>> ks, std::vector<const char*> reference,
                   std::vector<std::string> allow = {}) {
    Fixture f;
    for (int k = 1; k <= 3; ++k) f.call(k, ks);
    f.mark("ref");
    for (const char* r : reference) f.kernel_from(9'000'000, 9'000'100, kTorch, r);
    f.mark("ref-done");
    RecordRules rules;
    rules.allow = std::move(allow);
    return judge_case_record(f.reader.current(), {}, 3, rules);
  };
  EXPECT_EQ(judge({{"direct_copy_kernel_cuda", kTorch}, {"mine", kExt}}, {}).failure, SubmissionFailure::none);
  EXPECT_EQ(judge({{"direct_copy_kernel_cuda", kTorch}}, {"direct_copy_kernel_cuda"}).failure, SubmissionFailure::reference_called);
  EXPECT_EQ(judge({{"softmax_warp_forward", kExt}}, {"softmax_warp_forward"}).failure, SubmissionFailure::reference_called);
  EXPECT_EQ(judge({{"FillFunctor_x", kTorch}, {"mine", kExt}}, {"FillFunctor_x"}).failure, SubmissionFailure::none);
  EXPECT_EQ(judge({{"softmax_warp_forward", kTorch}}, {"softmax_warp_forward"}, {"softmax_warp_forward"}).failure,
            SubmissionFailure::none);
  EXPECT_EQ(judge({{"AddFunctor_kernel", kTorch}, {"mine", kExt}}, {}).failure, SubmissionFailure::reference_called);
  EXPECT_EQ(judge({{"mine", kExt}}, {"softmax_warp_forward", "direct_copy_kernel_cuda"}).failure, SubmissionFailure::none);
  // Marks moved: the call's kernel outside its marks, in the fence's region.
  Fixture moved;
  moved.mark("armed1");
  moved.kernel_from(1, 2, kTorch, "sleep");
  moved.mark("call1");
  moved.mark("returned1");
  moved.kernel_from(3, 4, kExt, "mine");
  moved.kernel_from(5, 6, kTorch, "FillFunctor_fence");
  moved.mark("fenced1");
  EXPECT_EQ(judge_case_record(moved.reader.current(), {}, 1, {}).failure, SubmissionFailure::harness_tampered);
}

// An imported problem (partial_replacement): a solution may leave some of the reference's operators to the
// library where its own kernels do part of the work and at least one reference kernel did not run.
TEST(RecordJudge, PartialReplacementKeepsTheOperatorsASolutionLeftAlone) {
  constexpr const char* kTorch = "/x/torch/lib/libtorch_cuda.so";
  constexpr const char* kCublas = "/x/nvidia/cu13/lib/libcublasLt.so.13";
  constexpr const char* kExt = "/x/torch_extensions/mine/mine.so";
  auto judge = [&](std::initializer_list<std::pair<const char*, const char*>> ks, bool partial) {
    Fixture f;
    for (int k = 1; k <= 3; ++k) f.call(k, ks);
    f.mark("ref");
    f.kernel_from(9'000'000, 9'000'100, kCublas, "sm90_xmma_gemm_f32f32");
    f.kernel_from(9'000'200, 9'000'300, kTorch, "vectorized_elementwise_kernel_relu");
    f.mark("ref-done");
    RecordRules rules;
    rules.partial_replacement = partial;
    return judge_case_record(f.reader.current(), {}, 3, rules);
  };
  // The GEMM kept in cuBLAS, the ReLU replaced by the solution's own kernel: allowed, and named.
  const RecordJudgement kept = judge({{"sm90_xmma_gemm_f32f32", kCublas}, {"fused_bias_relu", kExt}}, true);
  EXPECT_EQ(kept.failure, SubmissionFailure::none) << kept.detail;
  ASSERT_EQ(kept.kept_library.size(), 1u);
  EXPECT_NE(kept.kept_library[0].find("sm90_xmma_gemm"), std::string::npos);
  // Not for a problem that does not allow it (a built-in contract).
  EXPECT_EQ(judge({{"sm90_xmma_gemm_f32f32", kCublas}, {"fused_bias_relu", kExt}}, false).failure, SubmissionFailure::reference_called);
  // The whole reference, and a trivial kernel of its own beside it: nothing replaced.
  const RecordJudgement all = judge(
      {{"sm90_xmma_gemm_f32f32", kCublas}, {"vectorized_elementwise_kernel_relu", kTorch}, {"touch", kExt}}, true);
  EXPECT_EQ(all.failure, SubmissionFailure::reference_called);
  EXPECT_NE(all.detail.find("nothing was replaced"), std::string::npos) << all.detail;
  // Library kernels only (another library's GEMM instead of the reference's): its own kernels did none of the work.
  const RecordJudgement none = judge({{"ampere_sgemm_128x64", kCublas}, {"vectorized_elementwise_kernel_relu", kTorch}}, true);
  EXPECT_EQ(none.failure, SubmissionFailure::reference_called);
  EXPECT_NE(none.detail.find("did none of the work"), std::string::npos) << none.detail;
}

TEST(RecordReader, TheRecordersOwnReadsCarryTheCodeOfTheBytesTheGpuHeld) {
  Fixture f;
  const std::vector<std::uint8_t> a(1000, 7), b = [] {
    std::vector<std::uint8_t> v(1000, 7);
    v[999] = 8;  // one byte of a thousand
    return v;
  }();
  f.read("out1:y", a);
  f.read("in1:x", a);
  f.read("in1:x", a);
  f.read("out2:y", a, 1);
  const ActivityRecord& r = f.reader.current();
  ASSERT_TRUE(r.broken.empty()) << r.broken;
  ASSERT_EQ(r.reads.size(), 4u);
  EXPECT_EQ(r.reads[0].bytes, 1000u);
  EXPECT_EQ(check_read_bytes(r, Writer::kKey, "out1:y", a), "");
  EXPECT_NE(check_read_bytes(r, Writer::kKey, "out1:y", b).find("not the input kqual gave"), std::string::npos);
  EXPECT_NE(check_read_bytes(r, Writer::kKey, "in1:x", a).find("2 times"), std::string::npos);   // read twice
  EXPECT_NE(check_read_bytes(r, Writer::kKey, "out3:y", a).find("0 times"), std::string::npos);  // never read
  EXPECT_NE(check_read_bytes(r, Writer::kKey, "out2:y", a).find("could not read"), std::string::npos);
  // A file against the read: the same bytes pass, one byte changed does not.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("kqual_reads_{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto put = [&](const char* name, const std::vector<std::uint8_t>& v) {
    std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size()));
    return dir / name;
  };
  EXPECT_EQ(check_reads(r, Writer::kKey, {{"out1:y", put("same", a)}}), "");
  EXPECT_NE(check_reads(r, Writer::kKey, {{"out1:y", put("other", b)}}).find("not the 1000 bytes the recorder read"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(RecordJudge, WorkBetweenTheCallsThatTheHarnessDoesNotDoIsTampering) {
  constexpr const char* kTorch = "/x/torch/lib/libtorch_cuda.so";
  const std::vector<std::uint8_t> a(4096, 1), b(4096, 2);
  // Three calls of a one-input case (4096 bytes); `between` runs after call 1, before call 2.
  auto judge = [&](const std::function<void(Fixture&)>& between) {
    Fixture f;
    f.upload("up0:x", a);
    f.call(1, {{"add_relu", "/x/ext.so"}});
    f.read("out1:y", {1, 2});
    between(f);
    f.call(2, {{"add_relu", "/x/ext.so"}});
    f.read("out2:y", {1, 2});
    f.call(3, {{"add_relu", "/x/ext.so"}});
    f.read("out3:y", {1, 2});
    f.copy(1, 4096);  // after the last read: changes nothing judged
    f.mark("ref");
    f.kernel_from(9'000'000, 9'000'100, kTorch, "vectorized_elementwise_kernel_add");
    f.mark("ref-done");
    RecordRules rules;
    rules.input_bytes = {4096};
    rules.uploads = {{"up0:x", bytes_content_mac(Writer::kKey, a.data(), a.size())},
                     {"up1:x", bytes_content_mac(Writer::kKey, b.data(), b.size())}};
    return judge_case_record(f.reader.current(), {}, 3, rules);
  };
  // What the harness does there: the recorder uploads datasets B and A, B into A's tensors, reads to the host, the side streams' spins.
  const RecordJudgement harness = judge([&](Fixture& f) {
    f.upload("up1:x", b);
    f.copy(8, 4096);
    f.copy(2, 4096);
    f.kernel_from(1'500'000, 1'500'010, kTorch, "_ZN2at4cuda5sleepEx");
    f.upload("up0:x", a);
  });
  EXPECT_EQ(harness.failure, SubmissionFailure::none) << harness.detail;
  // A kernel computing values after the call (the reference's answer put where the output is read from).
  const RecordJudgement kernel = judge([&](Fixture& f) { f.kernel_from(1'500'000, 1'500'100, kTorch, "vectorized_elementwise_kernel_add"); });
  EXPECT_EQ(kernel.failure, SubmissionFailure::harness_tampered);
  EXPECT_NE(kernel.detail.find("between the calls"), std::string::npos) << kernel.detail;
  // A sleep kernel of the submission's own module is not the harness's spin.
  EXPECT_EQ(judge([&](Fixture& f) { f.kernel_from(1'500'000, 1'500'010, "/x/ext.so", "_ZN2at4cuda5sleepEx"); }).failure,
            SubmissionFailure::harness_tampered);
  // Values put on the GPU from the host by anyone but the recorder: of an input's size too.
  const RecordJudgement unowned = judge([&](Fixture& f) { f.copy(1, 4096); });
  EXPECT_EQ(unowned.failure, SubmissionFailure::harness_tampered);
  EXPECT_NE(unowned.detail.find("recorder did not make"), std::string::npos) << unowned.detail;
  // The recorder made to upload other bytes (a file the worker wrote) or under a label kqual did not give.
  const RecordJudgement other = judge([&](Fixture& f) { f.upload("up1:x", std::vector<std::uint8_t>(4096, 9)); });
  EXPECT_EQ(other.failure, SubmissionFailure::harness_tampered);
  EXPECT_NE(other.detail.find("not kqual's dataset"), std::string::npos) << other.detail;
  EXPECT_EQ(judge([&](Fixture& f) { f.upload("up7:x", b); }).failure, SubmissionFailure::harness_tampered);
  // A failed upload's copies are not the recorder's (the worker stops there: kqual's failure).
  EXPECT_EQ(judge([&](Fixture& f) { f.upload("up1:x", b, -3); }).failure, SubmissionFailure::harness_tampered);
  // More device copies than B into A's tensors needs.
  EXPECT_EQ(judge([&](Fixture& f) {
              for (int i = 0; i < 2; ++i) f.copy(8, 4096);
            }).failure,
            SubmissionFailure::harness_tampered);
}

TEST(RecordJudge, ACallThatUploadsItsResultComputedItOnTheHost) {
  // ups: bytes each call uploads; ref: what the problem's reference uploads in its run (none: it did not run);
  // out: the outputs' bytes.
  auto judge = [&](std::array<std::uint64_t, 3> ups, std::optional<std::uint64_t> ref, std::uint64_t out = 1 << 20) {
    Fixture f;
    for (int k = 1; k <= 3; ++k) {
      const std::uint64_t t = 1'000'000 * std::uint64_t(k);
      f.mark(fmt::format("armed{}", k));
      f.kernel_from(t, t + 10, "/x/torch/lib/libtorch_cuda.so", "_ZN2at4cuda5sleepEx");
      f.mark(fmt::format("call{}", k));
      f.kernel_from(t + 100, t + 200, "/x/ext.so", "add_relu");
      if (ups[std::size_t(k - 1)]) f.copy(1, ups[std::size_t(k - 1)]);
      f.mark(fmt::format("returned{}", k));
      f.kernel_from(t + 300, t + 310, "/x/torch/lib/libtorch_cuda.so", "FillFunctor_fence");
      f.mark(fmt::format("fenced{}", k));
    }
    if (ref) {
      f.mark("ref");
      f.kernel_from(9'000'000, 9'000'100, "/x/torch/lib/libtorch_cuda.so", "vectorized_elementwise_kernel_add");
      if (*ref) f.copy(1, *ref);
      f.mark("ref-done");
    }
    RecordRules rules;
    rules.output_bytes = out;
    return judge_case_record(f.reader.current(), {}, 3, rules);
  };
  // Uploaded on every call: computed on the host, whether or not the reference ran.
  const RecordJudgement each = judge({1 << 20, 1 << 20, 1 << 20}, std::nullopt);
  EXPECT_EQ(each.failure, SubmissionFailure::host_compute) << each.detail;
  EXPECT_NE(each.detail.find("computed on the host and uploaded"), std::string::npos) << each.detail;
  EXPECT_EQ(judge({1 << 20, 1 << 20, 1 << 20}, 0).failure, SubmissionFailure::host_compute);
  // Every result made on the host at once (from kqual's files) and uploaded in call 1, copied out on the GPU later.
  const RecordJudgement once = judge({2 << 20, 0, 0}, 0);
  EXPECT_EQ(once.failure, SubmissionFailure::host_compute) << once.detail;
  EXPECT_NE(once.detail.find("call 1 copied 2097152 bytes from the host"), std::string::npos) << once.detail;
  // A tensor the problem's own model moves to the GPU in forward (KernelBench's RNNs move h0): the reference uploads
  // as much; and where the reference did not run, a first call's constants moved once are not a result.
  EXPECT_EQ(judge({2 << 20, 0, 0}, 2 << 20).failure, SubmissionFailure::none);
  EXPECT_EQ(judge({2 << 20, 0, 0}, std::nullopt).failure, SubmissionFailure::none);
  // Small constants each call: below half the outputs. And never below 64 KiB: torch.compile's first call uploads
  // ~70 bytes, more than half of a one-element output (seen on an H100).
  EXPECT_EQ(judge({4096, 4096, 4096}, 0).failure, SubmissionFailure::none);
  EXPECT_EQ(judge({70, 0, 0}, 0, 4).failure, SubmissionFailure::none);
}

TEST(RecordJudge, TheOriginOfAKernelIsItsLaunchersObjectOrInductorsModule) {
  RecordLaunch l;
  l.origin = "/site-packages/torch/lib/libtorch_cuda.so";
  EXPECT_EQ(classify_origin(l, "k", {}), WorkOrigin::aten);
  l.origin = "/site-packages/nvidia/cu13/lib/libcublasLt.so.13";
  EXPECT_EQ(classify_origin(l, "k", {}), WorkOrigin::cublas);
  l.origin = "/root/.cache/torch_extensions/py312_cu130/my_ext/my_ext.so";
  EXPECT_EQ(classify_origin(l, "k", {}), WorkOrigin::own);
  l.origin = "/root/.triton/cache/abc/__triton_launcher.cpython-312-x86_64-linux-gnu.so";
  EXPECT_EQ(classify_origin(l, "renamed", {}), WorkOrigin::own);
  RecordModule inductor;
  inductor.python = "_inductor/runtime/triton_heuristics.py:1200;torchinductor_root/ab/cab.py:30";
  inductor.functions = {"renamed"};
  EXPECT_EQ(classify_origin(l, "renamed", {inductor}), WorkOrigin::inductor);
  l.python = "_inductor/runtime/static_triton_launcher.py:291";
  EXPECT_EQ(classify_origin(l, "other", {}), WorkOrigin::inductor);
  l.python = "-";
  l.origin = "?";
  EXPECT_EQ(classify_origin(l, "k", {}), WorkOrigin::unknown);
}

}  // namespace
}  // namespace kqual::bench
