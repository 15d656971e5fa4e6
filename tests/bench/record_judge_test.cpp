// The activity record's reader and the judgements made from it (src/bench/activity_record.cpp,
// src/bench/record_judge.cpp), on records written by hand: no worker, no GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>

#include "kqual/bench/activity_record.hpp"
#include "kqual/bench/record_judge.hpp"
#include "kqual/bench/record_mac.hpp"

namespace kqual::bench {
namespace {

// Lines as the recorder writes them: numbered, chained under a key.
class Writer {
 public:
  explicit Writer(RecordReader& r) : r_(r) {}
  void line(const std::string& fields, bool forge = false, int skip = 0) {
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
  const RecordTiming t = timing_from_record(f.reader.current(), {3, 5}, {0.0101, 0.0062}, true);
  EXPECT_EQ(t.code, "") << t.detail;
  ASSERT_EQ(t.ms.size(), 2u);
  EXPECT_DOUBLE_EQ(t.ms[0], 0.010);
  EXPECT_DOUBLE_EQ(t.ms[1], 0.006);
}

TEST(RecordTiming, EventsThatReportLessThanTheGpuRanAreATimerPatched) {
  Fixture f;
  f.sample(0, {{1'000'000, 1'100'000, 13}});  // 0.1 ms of work
  const RecordTiming t = timing_from_record(f.reader.current(), {0}, {0.025}, true);  // the events say a quarter
  EXPECT_EQ(t.code, "timer_patched") << t.detail;
  // Not judged (a baseline): the span only.
  EXPECT_EQ(timing_from_record(f.reader.current(), {0}, {0.025}, false).code, "");
}

TEST(RecordTiming, ATimedCallWithoutWorkOrWithOtherWorkThanTheVerifiedOnesIsTimedOutputWrong) {
  Fixture none;
  none.sample(0, {{1'000'000, 1'001'000, 13}});
  none.sample(1, {});
  EXPECT_EQ(timing_from_record(none.reader.current(), {0, 1}, {1, 1}, true).code, "timed_output_wrong");

  Fixture fewer;
  fewer.mark("v0");
  fewer.kernel(5'000'000, 5'001'000);
  fewer.kernel(5'001'000, 5'002'000);
  fewer.mark("vd0");
  fewer.sample(0, {{1'000'000, 1'001'000, 13}});  // one kernel, the verified call ran two
  const RecordTiming t = timing_from_record(fewer.reader.current(), {0}, {1}, true);
  EXPECT_EQ(t.code, "timed_output_wrong") << t.detail;
  EXPECT_NE(t.detail.find("verified"), std::string::npos) << t.detail;
}

TEST(RecordTiming, WorkAnotherThreadEnqueuesBetweenSamplesIsLateAndMissingMarksAreTampering) {
  Fixture late;
  late.sample(0, {{1'000'000, 1'001'000, 13}});
  late.kernel(1'002'000, 1'003'000, 13, /*tid=*/99);
  EXPECT_EQ(timing_from_record(late.reader.current(), {0}, {1}, true).code, "late_result");

  Fixture missing;
  missing.sample(0, {{1'000'000, 1'001'000, 13}});
  EXPECT_EQ(timing_from_record(missing.reader.current(), {0, 1}, {1, 1}, true).code, "harness_tampered");
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
