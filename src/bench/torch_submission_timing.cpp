// A PyTorch submission timed against PyTorch eager and torch.compile (torch_submission_timing.hpp):
// the datasets and references made here, the submission's blocks in its own worker, the baselines'
// in the timing worker, A B B A, and every implementation's last outputs checked.
#include "kqual/bench/torch_submission_timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "kqual/bench/record_judge.hpp"
#include "kqual/bench/timed_samples.hpp"
#include "kqual/bench/torch_baseline.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/dtype.hpp"
#include "timed_verify.hpp"
#include "torch_baseline_worker.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

constexpr double kCompileTimeout = 1800;  // [s] a baseline's first block that compiles (torch.compile)
constexpr const char* kSubmissionLabel = "submission";
constexpr double kRecordFlushS = 60;  // [s] for a block's record to arrive after its reply

// A block's samples from the activity record, the reply's event samples checked against it (judge: the
// submission's; a baseline's spans only). The reply's samples_ms become the record's; its events are
// kept as event_samples_ms.
// written: the outputs the worker wrote in this block (label, file), checked against the recorder's own reads.
// uploads (judge): the datasets the recorder may upload (check_uploads), by label.
RecordTiming read_block(TorchWorker& w, const std::string& token, json& a, bool judge,
                        const std::vector<std::pair<std::string, fs::path>>& written = {}, ActivityRecord* keep = nullptr,
                        const std::map<std::string, std::uint64_t>* uploads = nullptr) {
  RecordTiming t;
  RecordChannel* ch = w.record();
  if (!ch) {
    t.code = "harness_error";
    t.detail = "the worker has no activity record";
    return t;
  }
  ActivityRecord rec;
  if (!ch->wait_flush(token, kRecordFlushS, &rec)) {
    t.code = "harness_tampered";
    t.detail = rec.broken.empty() ? "the activity record stopped while timed (no flush after the block)" : rec.broken;
    return t;
  }
  const std::vector<int> ids = a.value("sample_ids", std::vector<int>{});
  const std::vector<double> events = a.value("samples_ms", std::vector<double>{});
  if (ids.size() != events.size()) {
    t.code = "harness_tampered";
    t.detail = fmt::format("the reply names {} sample(s) and holds {}", ids.size(), events.size());
    return t;
  }
  std::set<std::uint32_t> own;
  if (judge && uploads)
    if (std::string bad = check_uploads(rec, *uploads, &own); !bad.empty()) {
      t.code = "harness_tampered";
      t.detail = bad;
      return t;
    }
  t = timing_from_record(rec, ch->modules(), ids, events, judge, judge && uploads ? &own : nullptr);
  if (keep) *keep = rec;
  if (t.code.empty() || t.code == "timed_output_wrong")
    if (std::string bad = ch->check_reads(rec, written); !bad.empty()) {
      t.code = "harness_tampered";
      t.detail = bad;
      return t;
    }
  if ((t.code.empty() || t.code == "timed_output_wrong") && t.ms.size() == events.size()) {
    a["event_samples_ms"] = events;
    a["samples_ms"] = t.ms;
    std::vector<double> ratio;
    for (std::size_t i = 0; i < events.size(); ++i)
      if (t.ms[i] > 0) ratio.push_back(events[i] / t.ms[i]);
    if (!ratio.empty()) {
      std::nth_element(ratio.begin(), ratio.begin() + std::ptrdiff_t(ratio.size() / 2), ratio.end());
      a["events_over_record"] = ratio[ratio.size() / 2];
    }
  }
  return t;
}

// The two datasets of one shape and their references, made here as the baselines' are; and two more,
// C and D, that only the submission's verified last calls see (never a timed call): a result memoised or
// skipped while timed is computed there for the first time, and the record compares the work.
struct ShapeData {
  contract::CaseData a, b, c, d;
  std::vector<contract::Tensor> expected_a, expected_b, expected_c, expected_d;
};

std::int64_t largest_tensor(const contract::Contract& c, const contract::Dims& dims) {
  std::int64_t most = 0;
  for (const auto& t : c.domain().tensors) {
    std::int64_t n = 1;
    for (const auto& a : t.shape)
      if (auto it = dims.find(a); it != dims.end()) n *= it->second;
    most = std::max(most, n);
  }
  return most;
}

// The outputs written under `dir` (A/NAME.out, B/NAME.out) against the references: "" when right,
// else "output 'y' on dataset B (code): detail"; *code set to the check's failure code.
// fresh: the submission's, whose last outputs are those of datasets C and D (written as A and B).
std::string verify_written(const contract::Contract& c, const ShapeData& d, const fs::path& dir, bool fresh) {
  for (int k = 0; k < 2; ++k)
    for (const auto& t : k == 0 ? (fresh ? d.expected_c : d.expected_a) : (fresh ? d.expected_d : d.expected_b)) {
      std::string code;
      const std::string det = check::verify_output_file(c, t, dir / (k == 0 ? "A" : "B") / (t.name + ".out"), 0xFF, &code);
      if (!det.empty())
        return fmt::format("output '{}' on dataset {} ({}): {}", t.name, fresh ? (k == 0 ? "C" : "D") : (k == 0 ? "A" : "B"), code, det);
    }
  return "";
}

class SubmissionShape {
 public:
  SubmissionShape(const contract::Contract& c, const std::optional<TorchOperation>& op, TorchWorker& sub, TorchWorker* torch,
                  const contract::Dims& dims, const SubmissionTimingOptions& o, std::vector<std::string> kinds, const fs::path& dir,
                  contract::ReferenceHost& host, int verify_per_block)
      : c_(c), sub_(sub), torch_(torch), o_(o), kinds_(std::move(kinds)), dir_(dir), host_(host) {
    const TimingOptions& to = o.timing;
    d_.a = c.make_case(timing_case_spec(c, dims, to));
    d_.b = c.make_case(timing_alt_case_spec(c, dims, to));
    d_.expected_a = c.reference(d_.a, host);
    d_.expected_b = c.reference(d_.b, host);
    contract::CaseSpec spec_c = timing_case_spec(c, dims, to), spec_d = timing_alt_case_spec(c, dims, to);
    spec_c.seed ^= 0x2545F4914F6CDD1Dull;
    spec_d.seed ^= 0x2545F4914F6CDD1Dull;
    d_.c = c.make_case(spec_c);
    d_.d = c.make_case(spec_d);
    d_.expected_c = c.reference(d_.c, host);
    d_.expected_d = c.reference(d_.d, host);
    for (const char* side : {"in/A", "in/B", "in/C", "in/D", "sub/A", "sub/B", "torch/A", "torch/B"}) fs::create_directories(dir / side);
    std::vector<TorchTensorFiles> in, sub_out, torch_out;
    for (std::size_t k = 0; k < d_.a.inputs.size(); ++k) {
      const contract::Tensor& ta = d_.a.inputs[k];
      const contract::Tensor& tb = d_.b.inputs.at(k);
      const fs::path fa = dir / "in/A" / (ta.name + ".in"), fb = dir / "in/B" / (ta.name + ".in");
      write_file(fa, ta.bytes.data(), ta.bytes.size());
      write_file(fb, tb.bytes.data(), tb.bytes.size());
      in.push_back({ta.name, fa, fb});
    }
    for (const auto& t : d_.expected_a) {
      sub_out.push_back({t.name, dir / "sub/A" / (t.name + ".out"), dir / "sub/B" / (t.name + ".out")});
      torch_out.push_back({t.name, dir / "torch/A" / (t.name + ".out"), dir / "torch/B" / (t.name + ".out")});
    }
    const TorchOperation any_op = op.value_or(TorchOperation{});
    sub_req_ = torch_shape_request(c, any_op, d_.a.dims, to.dtype, in, sub_out, to);
    sub_req_.erase("builtin");
    sub_req_["op"] = "time";
    sub_req_["scalars"] = torch_scalars(c);
    sub_req_["axes"] = json::object();
    for (const auto& [k, v] : d_.a.dims) sub_req_["axes"][k] = v;
    sub_req_["deadline_s"] = o.call_timeout_s;
    // Datasets C and D: the submission's verified last calls only (its worker writes their outputs as A and B).
    for (std::size_t k = 0; k < d_.c.inputs.size(); ++k) {
      const contract::Tensor& tc = d_.c.inputs[k];
      const contract::Tensor& td = d_.d.inputs.at(k);
      const fs::path fc = dir / "in/C" / (tc.name + ".in"), fd = dir / "in/D" / (tc.name + ".in");
      write_file(fc, tc.bytes.data(), tc.bytes.size());
      write_file(fd, td.bytes.data(), td.bytes.size());
      sub_req_["inputs"][tc.name]["files"].push_back(fc.string());
      sub_req_["inputs"][tc.name]["files"].push_back(fd.string());
    }
    // What the recorder may upload: the four datasets' inputs, as kqual wrote them.
    if (RecordChannel* ch = sub.record()) {
      const contract::CaseData* sets[] = {&d_.a, &d_.b, &d_.c, &d_.d};
      for (int k = 0; k < 4; ++k)
        for (const auto& t : sets[k]->inputs) uploads_[upload_label(k, t.name)] = bytes_content_mac(ch->key(), t.bytes.data(), t.bytes.size());
    }
    // Fresh values: every dense floating-point input shifted by the recorder's draw before each timed call,
    // verify_per_block calls of each block read back (timed_samples.hpp).
    fs::create_directories(dir / "fresh");
    json rolled = json::array();
    for (const auto& t : d_.a.inputs) {
      rules_.inputs.push_back(t.name);
      if (is_floating(t.dtype) && t.row_stride == 0) {
        rules_.rolled[t.name] = t.elements;
        rolled.push_back(t.name);
      }
    }
    for (const auto& t : d_.expected_a) rules_.outputs.push_back(t.name);
    rules_.samples = to.samples_per_round;
    rules_.verify = verify_per_block;
    sub_req_["fresh"] = {{"inputs", rolled}, {"verify", verify_per_block}, {"dir", (dir / "fresh").string()}};
    if (op) torch_req_ = torch_shape_request(c, *op, d_.a.dims, to.dtype, in, torch_out, to);
    sh_.dims = d_.a.dims;
    sh_.shape = contract::format_dims(d_.a.dims);
    sh_.dtype = to.dtype;
    sh_.min_bytes = c.min_bytes(d_.a.dims, to.dtype);
    sh_.flops = c.flops(d_.a.dims, to.dtype);
    sh_.timed_inputs = "fresh";
    sh_.timed_inputs_detail = fmt::format(
        "two datasets made on the CPU, copied into the submission's static inputs before each sample (outside the window), each "
        "floating-point input ({}) rotated by a number kqual's recorder draws just before the call, so that no two timed calls see the "
        "same values; after each call a second draw picks {} call(s) per block whose inputs and outputs the recorder reads back, "
        "compared with the contract's reference on those values; then two more datasets the timed calls never saw, whose outputs are "
        "compared with the reference and whose GPU kernel time each timed call's must reach half of (the activity record)",
        rolled.empty() ? "none here" : rolled.dump(), verify_per_block);
    sub_series_.label = kSubmissionLabel;
    sub_series_.role = "candidate";
    base_.resize(kinds_.size());
    for (std::size_t i = 0; i < kinds_.size(); ++i) {
      base_[i].label = kinds_[i] == "eager" ? kTorchEager : kTorchCompiled;
      base_[i].role = "baseline";
    }
  }

  std::string window_note() const {
    std::string n = window_note_;
    if (!events_over_record_.empty()) {
      std::vector<double> r = events_over_record_;
      std::sort(r.begin(), r.end());
      n += fmt::format("{}the submission's CUDA events / the record's GPU span: median {:.3f} over its blocks", n.empty() ? "" : "; ",
                       r[r.size() / 2]);
    }
    return n;
  }

  ShapeResult run(std::string* window, std::string* harness) {
    const int pairs = std::max(1, (o_.timing.rounds + 1) / 2);
    for (int p = 0; p < pairs && sub_series_.error.empty(); ++p) {
      submission_block(2 * p, false);
      if (!sub_series_.error.empty()) break;
      torch_block(2 * p, false, false);
      torch_block(2 * p + 1, true, p + 1 == pairs);
      submission_block(2 * p + 1, p + 1 == pairs);
    }
    *window = window_;
    *harness = harness_;
    if (sub_series_.error.empty()) {
      const std::string wrong = sub_series_.verified ? verify_written(c_, d_, dir_ / "sub", true) : "";
      if (!wrong.empty()) {  // the first wrong output found is the one named
        sub_series_.verified = false;
        sub_series_.verify_code = "timed_output_wrong";
        sub_series_.verify_detail = "the submission's timed " + wrong;
      }
      sub_series_.summary = stats::summarize(sub_series_.samples_ms);
      sub_series_.bytes_per_s = sh_.min_bytes / (sub_series_.summary.median * 1e-3);
      sub_series_.flops_per_s = sh_.flops / (sub_series_.summary.median * 1e-3);
    }
    const std::vector<double> cand = sub_series_.error.empty() && sub_series_.verified ? sub_series_.samples_ms : std::vector<double>{};
    sh_.series.push_back(sub_series_);
    for (auto& b : base_) add_torch_series(sh_, std::move(b), cand, o_.timing.equivalence_margin);
    return std::move(sh_);
  }

 private:
  // The submission's failure while timed is its own (an exception, a crash, a hang, a replaced
  // timer); kqual's (an unreadable reply, a worker that could not start) is a harness failure.
  void submission_block(int block, bool last) {
    json r = sub_req_;
    r["warmup"] = block == 0 ? o_.timing.warmup : 1;
    r["write_outputs"] = last;
    if (window_ == "eager_call") r["window"] = "eager_call";
    r["token"] = fmt::format("{}-b{}-sub", sh_.shape, block);
    json a = sub_.call(&r, o_.call_timeout_s + (block == 0 ? o_.call_timeout_s : 0));
    if (!a.value("ok", false)) {
      const std::string code = a.value("code", std::string("?"));
      // The mapping the check uses: a code that is not the submission's own (worker_error, protocol,
      // usage, ...) is kqual's failure: nothing is decided about the submission.
      if (submission_failure_of_code(code) == SubmissionFailure::harness_error)
        harness_ = fmt::format("{}: the submission worker (kqual's own failure, not the submission's): {}: {}", sh_.shape, code,
                               a.value("error", ""));
      const std::string as = code == "worker_died" ? "crash" : code == "timeout" ? "hang" : code;
      sub_series_.error = fmt::format("{} while timed: {}", as, a.value("error", std::string()));
      return;
    }
    if (const json rep = a.value("replaced", json::array()); !rep.empty()) {
      sub_series_.error = fmt::format("timer_patched while timed: the submission replaced {}", rep.dump());
      return;
    }
    // The samples and their checks from the activity record, never from the submission's own events.
    std::vector<std::pair<std::string, fs::path>> written;
    if (last)  // the verified calls' outputs, written as datasets A's and B's (v0, v1)
      for (const auto& o : sub_req_["outputs"])
        for (int k = 0; k < 2; ++k)
          written.push_back({fmt::format("v{}:{}", k, o.value("name", std::string())), fs::path(o["files"][k].get<std::string>())});
    ActivityRecord rec;
    const RecordTiming rt = read_block(sub_, r["token"], a, true, written, &rec, &uploads_);
    if (rt.code == "timed_output_wrong") {
      sub_series_.verified = false;
      sub_series_.verify_code = rt.code;
      sub_series_.verify_detail = "the submission's " + rt.detail;
    } else if (!rt.code.empty()) {
      if (rt.code == "harness_error") harness_ = fmt::format("{}: {}", sh_.shape, rt.detail);
      sub_series_.error = fmt::format("{} while timed: {}", rt.code, rt.detail);
      return;
    }
    if (!check_fresh(rec, a, block)) return;
    add_torch_samples(a, block, sub_series_);
    if (a.contains("events_over_record")) events_over_record_.push_back(a["events_over_record"].get<double>());
    if (block == 0) {
      window_ = a.value("window", std::string("?"));
      std::vector<std::string> notes;
      for (const auto& n : a.value("notes", json::array())) notes.push_back(n.get<std::string>());
      if (!notes.empty()) window_note_ = fmt::format("{}", fmt::join(notes, "; "));
    }
  }

  // The block's fresh values and read-back calls (timed_samples.hpp): the draws checked, each call read back
  // compared with the reference of its own values. False where the record does not hold (the series' error).
  bool check_fresh(const ActivityRecord& rec, const json& a, int block) {
    const std::uint64_t* key = sub_.record()->key();
    const FreshBlock fb = fresh_block(rec, key, a.value("sample_ids", std::vector<int>{}), rules_);
    if (!fb.tampered.empty()) {
      sub_series_.error = fmt::format("harness_tampered while timed: block {}, {}", block + 1, fb.tampered);
      return false;
    }
    sub_series_.launches += std::size_t(fb.calls);
    for (const VerifiedCall& v : fb.verified) {
      std::string code;
      const std::string det = verify_read_back(c_, host_, v.dataset == 0 ? d_.a : d_.b, v, rec, key, dir_ / "fresh", &code);
      for (const auto& n : rules_.outputs) {
        std::error_code ec;
        fs::remove(read_back_file(dir_ / "fresh", v.id, n), ec);
      }
      if (code == "harness_tampered") {
        sub_series_.error = fmt::format("harness_tampered while timed: block {}, {}", block + 1, det);
        return false;
      }
      ++sub_series_.reference_compared;
      if (!det.empty() && sub_series_.verified) {
        sub_series_.verified = false;
        sub_series_.verify_code = "timed_output_wrong";
        sub_series_.verify_detail = fmt::format("the submission's block {}, {}", block + 1, det);
      }
    }
    return true;
  }

  void torch_block(int block, bool reversed, bool last) {
    if (!torch_) return;
    for (std::size_t j = 0; j < kinds_.size(); ++j) {
      const std::size_t i = reversed ? kinds_.size() - 1 - j : j;
      Series& se = base_[i];
      if (!se.error.empty()) continue;
      json r = torch_req_;
      r["impl"] = kinds_[i];
      r["warmup"] = block == 0 ? o_.timing.warmup : 1;
      r["write_outputs"] = last;
      if (window_ == "eager_call") r["window"] = "eager_call";  // the submission's window, for a like-for-like comparison
      r["token"] = fmt::format("{}-b{}-{}", sh_.shape, block, kinds_[i]);
      json a = torch_->call(&r, block == 0 && kinds_[i] == "compiled" ? kCompileTimeout : o_.call_timeout_s);
      if (!a.value("ok", false)) {
        se.error = fmt::format("{}: {}", a.value("code", std::string("?")), a.value("error", std::string()));
        continue;
      }
      // Timed as the submission is: the GPU span of each call from the activity record.
      if (const RecordTiming rt = read_block(*torch_, r["token"], a, false); !rt.code.empty()) {
        se.error = fmt::format("kqual's record of this baseline: {}: {}", rt.code, rt.detail);
        continue;
      }
      add_torch_samples(a, block, se);
      if (last) {
        const std::string wrong = verify_written(c_, d_, dir_ / "torch", false);
        if (!wrong.empty()) {
          se.verified = false;
          se.verify_code = "timed_output_wrong";
          se.verify_detail = fmt::format("PyTorch {} {}", kinds_[i], wrong);
        }
      }
    }
  }

  const contract::Contract& c_;
  TorchWorker& sub_;
  TorchWorker* torch_;
  const SubmissionTimingOptions& o_;
  std::vector<std::string> kinds_;
  fs::path dir_;
  contract::ReferenceHost& host_;
  FreshBlockRules rules_;
  ShapeData d_;
  std::map<std::string, std::uint64_t> uploads_;  // label -> the code of kqual's bytes (check_uploads)
  json sub_req_, torch_req_;
  ShapeResult sh_;
  Series sub_series_;
  std::vector<Series> base_;
  std::string window_, window_note_, harness_;
  std::vector<double> events_over_record_;  // per block, the median of events / record over its samples
};

// The shapes timed: the options' or the contract's benchmark shapes, up to the element limit.
std::vector<contract::Dims> timed_shapes(const contract::Contract& c, const SubmissionTimingOptions& o, std::vector<std::string>& notes) {
  std::vector<contract::Dims> out;
  for (const auto& d : o.timing.shapes.empty() ? c.benchmark_shapes() : o.timing.shapes) {
    if (largest_tensor(c, d) > o.max_shape_elements) {
      notes.push_back(fmt::format("{}: left out: a tensor of more than {} elements (the submission's shape limit)", contract::format_dims(d),
                                  o.max_shape_elements));
      continue;
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace

std::vector<SubmissionSpeedup> submission_speedups(const ShapeResult& sh) {
  std::vector<SubmissionSpeedup> out;
  std::size_t k = 0;
  for (std::size_t i = 1; i < sh.series.size() && k < sh.vs_baselines.size(); ++i) {
    if (sh.series[i].samples_ms.empty()) continue;  // listed without a comparison (add_torch_series)
    const stats::Comparison& cmp = sh.vs_baselines[k++];
    SubmissionSpeedup s;
    s.baseline = sh.series[i].label;
    // The comparison's estimate is median(submission) / median(baseline): its inverse is the speed-up.
    s.speedup = cmp.estimate > 0 ? 1.0 / cmp.estimate : 0;
    s.ci_low = cmp.ci.hi > 0 ? 1.0 / cmp.ci.hi : 0;
    s.ci_high = cmp.ci.lo > 0 ? 1.0 / cmp.ci.lo : 0;
    s.verdict = stats::to_string(cmp.verdict);
    out.push_back(s);
  }
  return out;
}

json SubmissionTiming::to_json() const {
  json sp = json::array();
  for (std::size_t i = 0; i < speedups.size(); ++i) {
    json row = json::array();
    for (const auto& s : speedups[i])
      row.push_back({{"baseline", s.baseline}, {"speedup", s.speedup}, {"ci", {s.ci_low, s.ci_high}}, {"verdict", s.verdict}});
    sp.push_back({{"shape", i < report.shapes.size() ? report.shapes[i].shape : ""}, {"speedups", row}});
  }
  return json{{"status", status},         {"windows", windows},   {"speedups", sp},          {"timing", report.to_json()},
              {"timed_output_failure", timed_output_failure}, {"harness_failure", harness_failure}, {"notes", notes}};
}

SubmissionTiming time_torch_submission(const contract::Contract& c, const TorchSubmission& s, const SubmissionCheckOptions& co,
                                       const SubmissionTimingOptions& o) {
  SubmissionTiming out;
  const std::vector<contract::Dims> shapes = timed_shapes(c, o, out.notes);
  if (shapes.empty()) {
    out.status = "not run: no benchmark shape within the submission's shape limit";
    return out;
  }
  const WorkerScratch scratch(co.scratch, "kqual-submission-timing");
  const fs::path& dir = scratch.path();
  std::unique_ptr<TorchWorker> sub = start_submission_worker(c, s, co, dir / "worker.stderr");
  const json hello = sub->call(nullptr, co.case_timeout_s);
  if (!hello.value("ok", false)) {
    const std::string code = hello.value("code", std::string("?"));
    out.status = fmt::format("not run: the submission worker: {}: {}", code, hello.value("error", std::string()));
    if (code != "no_torch" && code != "no_cuda") out.harness_failure = out.status;
    return out;
  }
  // The baselines: where PyTorch runs the contract and the options allow them.
  const std::string blocker = torch_phase_blocker(c, o.timing, o.baselines);
  const std::optional<TorchOperation> op = blocker.empty() ? torch_operation_of(c) : std::nullopt;
  std::vector<std::string> kinds;
  TorchStart ts;
  std::string no_baseline = blocker;
  if (op) {
    ts = start_torch_worker(dir, *op, torch_compile_mode(), true, /*record=*/true);
    if (ts.blocker.empty()) kinds = o.baselines ? *o.baselines : std::vector<std::string>{"eager", "compiled"};
    else no_baseline = ts.blocker;
  }
  TimingReport& tr = out.report;
  tr.timer = worker::TimerKind::events;  // the events are checked; the samples are the activity record's GPU spans
  tr.l2_mode = !o.timing.flush_l2 ? "warm_l2" : o.timing.flush_mode == "clean" ? "cold_l2_clean_flush" : "cold_l2_write_flush";
  tr.boundary = "the submission's forward call on its static inputs: one CUDA-graph replay where it can be captured, else the call "
                "itself (Python dispatch, allocation, launches); each sample the GPU span (first start to last end, every stream) of "
                "everything the call caused, read from kqual's activity record, the CUDA events checked against it";
  contract::ReferenceHost host;
  // Timed calls read back per block of each shape: one at least, more on the cheapest shapes up to the
  // options' target and element budget (as for kernel candidates: timed_verify.hpp).
  TimingOptions per_block = o.timing;
  per_block.rounds = 2 * std::max(1, (o.timing.rounds + 1) / 2);  // the submission's blocks
  std::vector<std::int64_t> elements;
  for (const auto& d : shapes) elements.push_back(largest_tensor(c, d));
  const std::vector<int> verify = detail::saved_launches_per_call(per_block, elements);
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const fs::path sdir = dir / fmt::format("shape{}", si);
    if (o.timing.progress) o.timing.progress(fmt::format("timing: submission against PyTorch {} at {}", kinds.empty() ? "(none)" : fmt::format("{}", fmt::join(kinds, ", ")), contract::format_dims(shapes[si])));
    SubmissionShape one(c, op, *sub, kinds.empty() ? nullptr : ts.w.get(), shapes[si], o, kinds, sdir, host, verify[si]);
    std::string window, harness;
    ShapeResult sh = one.run(&window, &harness);
    out.windows.push_back(fmt::format("{}: {}{}", sh.shape, window.empty() ? "not timed" : window,
                                      one.window_note().empty() ? "" : " (" + one.window_note() + ")"));
    if (!harness.empty() && out.harness_failure.empty()) out.harness_failure = harness;
    const Series& ss = sh.series.front();
    if (!ss.verified && out.timed_output_failure.empty()) out.timed_output_failure = sh.shape + ": " + ss.verify_detail;
    out.speedups.push_back(submission_speedups(sh));
    tr.shapes.push_back(std::move(sh));
    std::error_code ec;
    fs::remove_all(sdir, ec);
    if (!ss.error.empty() || !out.harness_failure.empty()) break;  // a submission that failed while timed is not timed further
  }
  tr.verification = submission_verification(tr, o.timing.verify_launches);
  out.status = fmt::format("done: the submission {} at {} shape(s){}", kinds.empty() ? "timed alone" : fmt::format("against PyTorch {}", fmt::join(kinds, ", ")),
                           tr.shapes.size(), kinds.empty() ? fmt::format(" (no baseline: {})", no_baseline.empty() ? "none asked for" : no_baseline) : "");
  return out;
}

}  // namespace kqual::bench
