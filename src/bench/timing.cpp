#include "kqual/bench/timing.hpp"

#include "kqual/worker/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include <unistd.h>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/check/timed_inputs.hpp"
#include "kqual/contract/generated.hpp"
#include "kqual/check/run_to_run.hpp"
#include "timed_verify.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

// fast_hash64 of an expected output's bytes, remembered per case and tensor (kqual compare times
// the same case in many fresh worker processes).
std::string expected_bytes_hash(const std::string& contract, const contract::CaseSpec& spec, const contract::Tensor& t) {
  static std::mutex mu;
  static std::map<std::string, std::string> memo;
  const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", contract, spec.id, spec.family, spec.seed, t.name, t.bytes.size());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  std::string h = fmt::format("{:016x}", fast_hash64(t.bytes.data(), t.bytes.size()));
  std::lock_guard<std::mutex> lock(mu);
  if (memo.size() > 256) memo.clear();
  memo[key] = h;
  return h;
}

}  // namespace

namespace {

fs::path input_dir(worker::Session& s, const TimingOptions& o, const contract::CaseSpec& spec) {
  const fs::path root = o.input_root.empty() ? s.scratch() / "bench" : o.input_root;
  fs::path dir = root / sha256_hex(spec.id + "|" + std::to_string(spec.seed)).substr(0, 16);
  fs::create_directories(dir);
  return dir;
}

// An input tensor as the worker reads it; kept files of the right size are reused. Written under a
// temporary name and renamed, so a reader never sees a partial file.
fs::path write_input_file(const fs::path& dir, const contract::Tensor& t, bool reuse) {
  const fs::path f = dir / (t.name + ".in");
  std::error_code ec;
  if (reuse && fs::file_size(f, ec) == t.bytes.size() && !ec) return f;
  const fs::path tmp = dir / (t.name + ".in.partial-" + std::to_string(::getpid()) + "-" +
                              std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())));
  write_file(tmp, t.bytes.data(), t.bytes.size());
  fs::rename(tmp, f);
  return f;
}

}  // namespace

contract::CaseSpec timing_case_spec(const contract::Contract& c, const contract::Dims& dims, const TimingOptions& o) {
  contract::CaseSpec spec;
  spec.dtype = o.dtype;
  spec.dims = dims;
  spec.family = c.benchmark_family();
  const std::string shape = contract::format_dims(dims);
  spec.seed = o.seed ^ std::hash<std::string>{}(shape);
  spec.id = fmt::format("bench/{}/{}", to_string(o.dtype), shape);
  return spec;
}

contract::CaseSpec timing_alt_case_spec(const contract::Contract& c, const contract::Dims& dims, const TimingOptions& o) {
  contract::CaseSpec spec = timing_case_spec(c, dims, o);
  spec.seed ^= 0x5BD1E9955BD1E995ull;
  spec.id += "/alt";
  return spec;
}

namespace {
// Whether a shape's timed inputs are generated on the device (nothing to prepare on the CPU).
bool fresh_shape(const contract::Contract& c, const contract::CaseSpec& spec, const TimingOptions& o) {
  if (!o.fresh_inputs) return false;
  contract::CaseSpec g = spec;
  g.family = contract::kGeneratedFamily;
  return c.inputs_generatable(g);
}
}  // namespace

void prepare_timing_cases(worker::Session& s, const contract::Contract& c, const TimingOptions& o) {
  for (const auto& dims : o.shapes.empty() ? c.benchmark_shapes() : o.shapes)
  for (const contract::CaseSpec& spec : {timing_case_spec(c, dims, o), timing_alt_case_spec(c, dims, o)}) {
    if (fresh_shape(c, spec, o)) continue;
    auto p = check::prepare_case(s, c, spec);
    for (const auto& t : p->expected) (void)expected_bytes_hash(c.name(), spec, t);
    if (o.keep_input_files && !o.input_root.empty()) {
      const fs::path dir = input_dir(s, o, spec);
      for (const auto& t : p->data.inputs) write_input_file(dir, t, true);
    }
  }
}

namespace {

// What a sample is and what state the L2 is in (TimingReport::l2_mode and ::boundary).
void describe_boundary(const TimingOptions& o, const worker::DeviceFacts& dev, bool flush, TimingReport& rep) {
  rep.timer = o.timer;
  rep.l2_mode = !flush                        ? "warm_l2"
                : o.flush_mode == "clean"      ? "cold_l2_clean_flush"
                : o.flush_mode == "invalidate" ? "cold_l2_invalidated"
                                               : "cold_l2_write_flush";
  const std::string l2 =
      !flush ? "No L2 flush: warm L2 (the previous sample's data may still be cached)"
             : fmt::format("Before every sample a {} MiB buffer (2x L2) is overwritten outside the timed region (cold L2){}",
                           (2 * double(dev.l2_bytes)) / (1 << 20),
                           o.flush_mode == "clean"
                               ? ", then read back so its dirty lines are written back before the timed window (flush mode clean)"
                           : o.flush_mode == "invalidate"
                               ? ", then its L2 lines are invalidated without write-back (PTX discard.global.L2; flush mode "
                                 "invalidate: the L2 is empty, as after ncu --cache-control all)"
                               : " (flush mode write: its dirty lines may be written back inside the timed window)");
  rep.boundary = fmt::format(
      "Timer {}: {}. {}. {} warm-up runs excluded (reported). Implementations are interleaved in {} rounds of {} "
      "samples, order rotated every round. {}",
      to_string(o.timer), worker::what_a_sample_is(o.timer), l2, o.warmup, o.rounds, o.samples_per_round,
      o.clock_guard ? "SM clock read (NVML) after every sample; a sample run below 90 % of the default clock or under a "
                      "power/thermal slowdown is discarded and the worker backs off (clocks in each series)."
                    : "Clock guard off.");
}

// Output elements of each shape whose timed launches are sampled for the reference (fresh inputs, no
// device reference that hashes every launch; -1: every launch verified otherwise).
std::vector<std::int64_t> sampled_output_elements(const contract::Contract& c, const std::vector<contract::Dims>& shapes,
                                                  const TimingOptions& o) {
  std::vector<std::int64_t> elements;
  for (const auto& dims : shapes) {
    contract::CaseSpec g = timing_case_spec(c, dims, o);
    g.family = contract::kGeneratedFamily;
    const bool sampled = fresh_shape(c, timing_case_spec(c, dims, o), o) && !c.device_reference(g);
    std::int64_t out_elements = 0;
    for (const auto& t : c.tensors())
      if (t.role == contract::Role::output) out_elements += c.tensor_elements(t.name, dims);
    elements.push_back(sampled ? out_elements : -1);
  }
  return elements;
}

// One shape's timed inputs and what their outputs must be. Fresh inputs (check/timed_inputs.hpp):
// generated on the device for every launch, nothing made on the CPU ahead. Otherwise two datasets,
// generated once per process and shape (harness's bounded case cache), so repeated timing calls
// (kqual compare's fresh worker processes) reuse inputs and references: timed samples alternate
// between them (and between two buffer sets), so a kernel that replays an earlier result for a
// buffer address it has seen gives the other dataset's output.
struct ShapeInputs {
  contract::CaseSpec spec, alt_spec;
  std::optional<check::FreshInputs> fresh;
  std::shared_ptr<const check::PreparedCase> prepared, alt;
  contract::Dims case_dims;
  fs::path dir, alt_dir;
  std::vector<worker::Buffer> inputs;  // datasets: the input files (A, with B as alt_file)
  std::size_t first_input_bytes = 0;
  bool bit_exact = true;               // every output compared by its bytes (no error model)
  std::vector<std::string> expected_hash, alt_expected_hash, output_names;

  const std::vector<contract::Tensor>& expected(int dataset) const {
    static const std::vector<contract::Tensor> none;
    if (fresh) return none;
    return dataset == 0 ? prepared->expected : alt->expected;
  }
};

ShapeInputs prepare_shape_inputs(worker::Session& s, const contract::Contract& c, const contract::Dims& dims,
                                 const TimingOptions& o, int saves_per_call, bool rerun_every_launch, ShapeResult& sh) {
  ShapeInputs in;
  in.spec = timing_case_spec(c, dims, o);
  in.alt_spec = timing_alt_case_spec(c, dims, o);
  if (fresh_shape(c, in.spec, o)) in.fresh = check::fresh_timing_inputs(s, c, in.spec);
  if (!in.fresh) {
    in.prepared = check::prepare_case(s, c, in.spec);
    in.alt = check::prepare_case(s, c, in.alt_spec);
  }
  in.case_dims = in.fresh ? in.fresh->spec.dims : in.prepared->data.dims;
  sh.min_bytes = c.min_bytes(in.case_dims, o.dtype);
  sh.flops = c.flops(in.case_dims, o.dtype);
  in.dir = input_dir(s, o, in.spec);
  in.alt_dir = input_dir(s, o, in.alt_spec);
  if (in.fresh) {
    for (const auto& b : in.fresh->buffers) {
      if (b.kind == worker::BufferKind::input && !in.first_input_bytes) in.first_input_bytes = b.bytes;
      if (b.kind == worker::BufferKind::output) in.output_names.push_back(b.name);
    }
    sh.timed_inputs = "fresh";
    sh.timed_inputs_detail =
        in.fresh->every_launch_verified
            ? "generated on the device before every launch (warm-up and timed) from a seed no other launch has; every "
              "launch's output hashed and compared with the contract's device reference on the same inputs"
            : fmt::format("generated on the device before every launch (warm-up and timed) from a seed no other launch has; "
                          "{} of the candidate's timed launches per call (one of each baseline's), picked at random where the "
                          "kernel cannot see the choice, have their output read back and compared with the contract's "
                          "reference on the same inputs{}",
                          saves_per_call,
                          rerun_every_launch ? "; every launch's output hash also compared with the candidate launched again "
                                               "untimed on the same inputs (the contract requires the same bytes every run)"
                                             : "");
    return in;
  }
  const contract::CaseData& data = in.prepared->data;
  for (std::size_t k = 0; k < data.inputs.size(); ++k) {
    const contract::Tensor& t = data.inputs[k];
    const fs::path f = write_input_file(in.dir, t, o.keep_input_files);
    worker::Buffer b{t.name, worker::BufferKind::input, t.bytes.size(), 0, f.string()};
    b.alt_file = write_input_file(in.alt_dir, in.alt->data.inputs.at(k), o.keep_input_files).string();
    in.inputs.push_back(b);
  }
  in.first_input_bytes = data.inputs.at(0).bytes.size();
  sh.timed_inputs = "datasets";
  sh.timed_inputs_detail = "two datasets made on the CPU, alternating over two buffer sets; every launch's output equal to "
                           "its dataset's untimed re-run, which is compared with the reference (the contract's inputs "
                           "need structure the device generator does not make, or fresh inputs were turned off)";
  // Bit-exact outputs (no error model): the expected bytes' hash, computed once per case.
  const auto& expected = in.expected(0);
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const contract::Tensor& t = expected[k];
    in.bit_exact = in.bit_exact && t.ref.empty() && t.bound.empty();
    in.expected_hash.push_back(expected_bytes_hash(c.name(), in.spec, t));
    in.alt_expected_hash.push_back(expected_bytes_hash(c.name(), in.alt_spec, in.expected(1).at(k)));
    in.output_names.push_back(t.name);
  }
  return in;
}

// Each implementation's bench request at this shape; an implementation the contract or its plan
// refuses gets its series' error instead.
std::vector<worker::BenchRequest> bench_requests(const std::vector<const build::BuiltCandidate*>& impls,
                                                 const contract::Contract& c, const TimingOptions& o, bool flush,
                                                 const worker::DeviceFacts& dev, const contract::Dims& dims,
                                                 const ShapeInputs& in, ShapeResult& sh) {
  sh.series.resize(impls.size());
  std::vector<worker::BenchRequest> requests(impls.size());
  for (std::size_t i = 0; i < impls.size(); ++i) {
    Series& se = sh.series[i];
    se.label = impls[i]->manifest.name;
    se.role = i == 0 ? "candidate" : "baseline";
    if (auto refusal = c.validate(c.request(o.dtype, dims), impls[i]->manifest.supports)) {
      se.error = std::string(kRefusedBeforeLaunch) + refusal->reason;
      continue;
    }
    check::ResolvedPlan plan = check::resolve_plan(*impls[i], o.dtype, in.case_dims, dev);
    if (!plan.refusal.empty()) {
      se.error = std::string(kRefusedBeforeLaunch) + plan.refusal;
      continue;
    }
    worker::BenchRequest& br = requests[i];
    br.module = impls[i]->image_path.string();
    if (in.fresh) {
      br.buffers = in.fresh->buffers;
      br.fresh_inputs = true;
      br.generator_module = in.fresh->generator_module;
    } else {
      br.buffers = in.inputs;
      for (const auto& t : in.expected(0)) {
        br.buffers.push_back({t.name, worker::BufferKind::output, t.bytes.size(), 0, ""});
        br.out_files[t.name] = (in.dir / fmt::format("{}.{}.out", t.name, i)).string();
        br.alt_out_files[t.name] = (in.alt_dir / fmt::format("{}.{}.out", t.name, i)).string();
      }
    }
    for (const auto& scr : plan.scratch) br.buffers.push_back(scr);
    br.launches = plan.launches;
    br.flush = flush;
    br.flush_mode = flush ? o.flush_mode : "write";
    br.timer = o.timer;
    br.graph_launches = o.graph_launches;
    br.clock_guard = o.clock_guard;
    br.give_hash_slots = o.give_hash_slots && i == 0;
  }
  return requests;
}

// A bench call's samples, clocks and warm-up times added to its series.
void absorb_reply(Series& se, const worker::BenchReply& r, int round) {
  se.samples_ms.insert(se.samples_ms.end(), r.samples_ms.begin(), r.samples_ms.end());
  se.timer = r.timer;
  se.event_ms.insert(se.event_ms.end(), r.event_ms.begin(), r.event_ms.end());
  se.graph_launches = std::max(se.graph_launches, r.graph_launches);
  se.sm_clock_mhz.insert(se.sm_clock_mhz.end(), r.sm_clock_mhz.begin(), r.sm_clock_mhz.end());
  se.mem_clock_mhz.insert(se.mem_clock_mhz.end(), r.mem_clock_mhz.begin(), r.mem_clock_mhz.end());
  se.reference_sm_mhz = r.reference_sm_mhz;
  se.max_temperature_c = std::max(se.max_temperature_c, r.max_temperature_c);
  se.clocks_note = r.clocks_note;
  se.discarded += r.discarded;
  for (const auto& e : r.clock_events)
    if (se.clock_events.size() < 20) se.clock_events.push_back(fmt::format("round {}, {}", round + 1, e));
  se.clock_guard_exhausted = se.clock_guard_exhausted || r.clock_guard_exhausted;
  if (round == 0) se.warmup_ms.insert(se.warmup_ms.end(), r.warmup_ms.begin(), r.warmup_ms.end());
}

// Every launch of a datasets call (warm-up and timed) must have produced exactly the output the same
// dataset gives when run again untimed: a kernel that skips, shortens or replays work once it has
// been launched often enough, or on buffers it has seen, is caught here.
void verify_launches_match_reruns(const worker::BenchReply& r, int round, const detail::Fail& fail) {
  const std::size_t n_warm = r.warmup_ms.size();
  for (const auto& [name, hashes] : r.sample_hashes) {
    const auto fin = r.final_hashes.find(name);
    for (std::size_t l = 0; l < hashes.size() && fin != r.final_hashes.end(); ++l) {
      const int d = l < r.sample_datasets.size() ? r.sample_datasets[l] : 0;
      if (std::size_t(d) >= fin->second.size() || hashes[l] == fin->second[std::size_t(d)]) continue;
      fail(fmt::format("round {}, {} {} (dataset {}): output '{}' differs from the output the same inputs give when "
                       "launched again untimed (device hash {} vs {}): the kernel does not compute the same result "
                       "every time it is launched",
                       round + 1, l < n_warm ? "warm-up launch" : "timed sample", l < n_warm ? l + 1 : l - n_warm + 1,
                       d == 0 ? "A" : "B", name, hashes[l], fin->second[std::size_t(d)]),
           "timed_output_wrong");
      break;
    }
  }
}

// The last round's untimed re-runs compared with the reference on both datasets. Bit-exact outputs
// are checked by hash first (no file); a mismatch runs the call once more with the outputs as files
// and compares them fully (a NaN payload may differ within the contract).
void verify_reruns_against_reference(worker::Session& s, const contract::Contract& c, const ShapeInputs& in,
                                     const worker::BenchRequest& base_request, const worker::BenchRequest& req,
                                     const worker::BenchReply& r, int round, const detail::Fail& fail) {
  for (int d = 0; d < 2; ++d) {
    const auto& exp = in.expected(d);
    const auto& exp_hash = d == 0 ? in.expected_hash : in.alt_expected_hash;
    const auto& got_hashes = d == 0 ? r.out_hashes : r.alt_out_hashes;
    const char* which = d == 0 ? "A" : "B";
    const worker::BenchRequest* files_of = &req;
    worker::BenchRequest again;
    if (in.bit_exact) {
      bool all_equal = true;
      for (std::size_t t = 0; t < exp.size(); ++t)
        all_equal = all_equal && got_hashes.count(exp[t].name) && got_hashes.at(exp[t].name) == exp_hash[t];
      if (all_equal) continue;
      again = base_request;
      again.warmup = 0;
      again.min_samples = 1;
      again.max_samples = 1;
      auto r2 = worker::call(s.worker(), again);
      if (!r2.ok()) {
        fail(fmt::format("timed output (dataset {}) differs from the reference bytes; the re-run to compare it failed: {}: {}",
                         which, worker::to_string(r2.raw.status), r2.raw.reason),
             "timed_output_wrong");
        break;
      }
      files_of = &again;
    }
    for (const auto& t : exp) {
      std::string code;
      std::string det = check::verify_output_file(c, t, (d == 0 ? files_of->out_files : files_of->alt_out_files).at(t.name), 0xFF, &code);
      if (!det.empty()) fail(fmt::format("round {}: timed output wrong on dataset {} ({}): {}", round + 1, which, code, det), "timed_output_wrong");
    }
  }
}

// What one round and implementation needs beyond the shape's base request.
struct RoundPlan {
  int round = 0;
  bool last = false;
  int warm = 0;
  std::uint64_t base = 0;      // fresh inputs: the round's seed base
  std::size_t save_at = 0;     // the timed launch every implementation of the round saves
  int saves_per_call = 0;
  bool rerun_every_launch = false;
};

// One implementation timed for one round: its call, its samples added, its launches verified.
void time_one_call(worker::Session& s, const contract::Contract& c, const ShapeInputs& in, const TimingOptions& o,
                   const worker::BenchRequest& base_request, std::size_t i, const RoundPlan& rp, std::random_device& entropy,
                   Series& se) {
  worker::BenchRequest req = base_request;
  // Every launch is fingerprinted on the device (outputs poisoned before it, hashed after it) and
  // must equal its dataset's untimed re-run. Those re-runs are compared with the reference in the
  // last round only: moving and comparing gigabytes every round would dominate the run time at large
  // sizes. Bit-exact outputs are checked by hash first (no file); a mismatch, or a tolerance
  // contract, takes the full comparison.
  if (!rp.last || in.bit_exact) {
    req.out_files.clear();
    req.alt_out_files.clear();
  }
  req.out_hashes = rp.last && in.bit_exact && !in.fresh;
  req.warmup = rp.warm;
  const bool share = in.fresh && !in.fresh->every_launch_verified;
  if (in.fresh) req.fresh_base = rp.base;
  if (share) {
    // The candidate: several timed launches, the baselines' one among them (last: its reference is
    // then the latest computed when a baseline of this round needs it); a baseline: that one.
    req.save_launches = i == 0 ? detail::pick_saved_launches(rp.save_at, rp.warm, o.samples_per_round, rp.saves_per_call, entropy)
                               : std::vector<std::size_t>{rp.save_at};
    for (const auto& name : in.output_names)
      for (std::size_t slot = 0; slot < req.save_launches.size(); ++slot)
        req.save_files[name].push_back((in.dir / fmt::format("{}.{}.saved{}", name, i, slot)).string());
  }
  req.min_samples = o.samples_per_round;
  req.max_samples = o.samples_per_round;
  auto answer = worker::call(s.worker(), req);
  if (!answer.ok()) {
    se.error = fmt::format("{}: {}", worker::to_string(answer.raw.status), answer.raw.reason);
    return;
  }
  const worker::BenchReply& r = *answer.reply;
  absorb_reply(se, r, rp.round);
  const detail::Fail fail = [&se](std::string detail, const char* code) {
    if (!se.verified) return;  // the first finding is kept
    se.verified = false;
    se.verify_code = code;
    se.verify_detail = std::move(detail);
  };
  // First: the candidate wrote into kqual's hash slots (the hashes judged were read back before it
  // ran again, so they stand; the attempt is the finding).
  if (!r.harness_memory_written.empty())
    fail(fmt::format("round {}: {}", rp.round + 1, r.harness_memory_written), "harness_memory_written");
  if (!r.guard_violations.empty())
    fail("guard region overwritten during timing: " + worker::describe(r.guard_violations.front()), "timed_output_wrong");
  if (in.fresh) {
    se.launches += r.launch_seeds.size();
    if (se.verified) se.reference_compared += detail::verify_fresh_call(s, c, *in.fresh, r, req, rp.round, fail);
    if (se.verified && i == 0 && share && rp.rerun_every_launch)
      se.rerun_compared += detail::verify_rerun_matches(s, req, r, rp.round, entropy, fail, &se.error);
    std::error_code ec_ignored;
    for (const auto& [name, files] : req.save_files)
      for (const auto& f : files) fs::remove(f, ec_ignored);
    return;
  }
  verify_launches_match_reruns(r, rp.round, fail);
  const std::size_t call_launches = r.sample_hashes.empty() ? 0 : r.sample_hashes.begin()->second.size();
  se.launches += call_launches;
  if (!se.verified) return;
  se.rerun_compared += call_launches;  // each equal to its dataset's untimed re-run
  // And the untimed re-runs give the reference's output, on both datasets (last round): this call's
  // launches are then compared with the reference through them.
  if (!rp.last) return;
  se.reference_compared += call_launches;
  verify_reruns_against_reference(s, c, in, base_request, req, r, rp.round, fail);
}

// Each series' summary, and the candidate (B) compared against every baseline (A); the memo uses the
// fastest one. Only a baseline whose timed outputs were right can be the one to beat: a wrong
// baseline is compared, and reported, but never "the fastest".
void summarize_shape(ShapeResult& sh, const TimingOptions& o) {
  for (auto& se : sh.series) {
    if (se.samples_ms.empty()) continue;
    se.summary = stats::summarize(se.samples_ms);
    se.bytes_per_s = sh.min_bytes / (se.summary.median * 1e-3);
    se.flops_per_s = sh.flops / (se.summary.median * 1e-3);
  }
  stats::DecisionOptions dopt;
  dopt.margin.relative = o.equivalence_margin;
  double best = 0;
  for (std::size_t i = 1; i < sh.series.size(); ++i) {
    const Series& b = sh.series[i];
    if (b.samples_ms.empty() || sh.series[0].samples_ms.empty()) continue;
    stats::Comparison cmp = stats::compare(b.samples_ms, sh.series[0].samples_ms, dopt);
    sh.vs_baselines.push_back(cmp);
    if (!b.verified || !b.error.empty()) continue;
    if (sh.fastest_baseline.empty() || b.summary.median < best) {
      best = b.summary.median;
      sh.fastest_baseline = b.label;
      sh.vs_fastest = cmp;
    }
  }
}

}  // namespace

TimingReport time_against_baselines(worker::Session& s, const build::BuiltCandidate& cand,
                                    const std::vector<const build::BuiltCandidate*>& baselines,
                                    const TimingOptions& o) {
  const contract::Contract& c = cand.manifest.resolved_contract();
  const worker::DeviceFacts& dev = s.device();
  if (!dev.present) throw_error(ErrorKind::cuda, "timing needs a GPU: " + dev.why_absent);
  TimingReport rep;
  const bool flush = o.flush_l2 && o.flush_mode != "none";
  if (o.timer == worker::TimerKind::graph && flush)
    throw_error(ErrorKind::usage, "the graph timer replays launches back to back with a warm L2: use it with --l2-flush none");
  describe_boundary(o, dev, flush, rep);
  std::vector<const build::BuiltCandidate*> impls{&cand};
  for (auto* b : baselines) impls.push_back(b);
  const std::vector<contract::Dims> shapes = o.shapes.empty() ? c.benchmark_shapes() : o.shapes;
  // The candidate's target number of launches compared with the reference is spread over the
  // shapes whose timed launches are sampled.
  const std::vector<std::int64_t> sampled_elements = sampled_output_elements(c, shapes, o);
  const std::size_t sampled_shapes =
      std::size_t(std::count_if(sampled_elements.begin(), sampled_elements.end(), [](std::int64_t e) { return e >= 0; }));
  const std::vector<int> saves_per_call = detail::saved_launches_per_call(o, sampled_elements);
  // Reproducible results required for the candidate's dtype: every launch is also compared with the
  // same kernel launched again untimed on the same inputs.
  const bool rerun_every_launch = check::run_to_run_policy(c, cand.manifest.supports, o.dtype).required;
  // The copy ceiling is measured at the shape that moves the most bytes.
  std::size_t largest = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    if (c.min_bytes(shapes[i], o.dtype) > c.min_bytes(shapes[largest], o.dtype)) largest = i;
  std::random_device entropy;
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const contract::Dims& dims = shapes[si];
    if (o.progress)
      o.progress(fmt::format("timing: shape {}/{} {} ({} implementation(s), {} rounds)", si + 1, shapes.size(),
                             contract::format_dims(dims), impls.size(), o.rounds));
    ShapeResult sh;
    sh.dims = dims;
    sh.shape = contract::format_dims(dims);
    sh.dtype = o.dtype;
    const ShapeInputs in = prepare_shape_inputs(s, c, dims, o, saves_per_call[si], rerun_every_launch, sh);
    const std::vector<worker::BenchRequest> requests = bench_requests(impls, c, o, flush, dev, dims, in, sh);
    for (int round = 0; round < o.rounds; ++round) {
      // Fresh inputs: one seed base per round, shared by every implementation (one reference per
      // seed), drawn at run time so that no build of a kernel can know it; and the timed launch
      // whose output is read back (verified on the host), picked the same way.
      RoundPlan rp;
      rp.round = round;
      rp.last = round + 1 == o.rounds;
      rp.base = (std::uint64_t(entropy()) << 32) ^ entropy();
      rp.warm = round == 0 ? o.warmup : 1;
      rp.save_at = std::size_t(rp.warm) + std::size_t(entropy() % unsigned(std::max(o.samples_per_round, 1)));
      rp.saves_per_call = saves_per_call[si];
      rp.rerun_every_launch = rerun_every_launch;
      for (std::size_t k = 0; k < impls.size(); ++k) {
        const std::size_t i = (k + std::size_t(round)) % impls.size();
        if (sh.series[i].error.empty()) time_one_call(s, c, in, o, requests[i], i, rp, entropy, sh.series[i]);
      }
    }
    summarize_shape(sh, o);
    if (o.measure_copy && si == largest) {
      std::size_t bytes = in.first_input_bytes;
      auto r = worker::call(s.worker(), worker::CopyBenchRequest{bytes, 30});
      if (r.ok()) {
        sh.copy_samples_ms = r.reply->samples_ms;
        double med = stats::median(sh.copy_samples_ms);
        sh.copy_bytes_per_s = 2.0 * double(bytes) / (med * 1e-3);
      }
    }
    std::error_code ec;
    if (!o.keep_input_files) fs::remove_all(in.dir, ec);
    rep.shapes.push_back(std::move(sh));
  }
  rep.verification = detail::verification_summary(rep, sampled_shapes ? o.verify_launches : 0, o.verify_element_budget);
  return rep;
}

}  // namespace kqual::bench
