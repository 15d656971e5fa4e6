#include "kqual/check/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unistd.h>
#include <chrono>
#include <cstring>
#include <set>

#include "kqual/check/labels.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/sanitizer.hpp"
#include "internal.hpp"

namespace kqual::check {
namespace fs = std::filesystem;

std::string verify_output_file(const contract::Contract& c, const contract::Tensor& expected, const fs::path& file,
                               std::uint8_t poison, std::string* code) {
  MappedFile out = MappedFile::open_read(file);
  if (out.size() != expected.bytes.size()) {
    *code = "internal";
    return fmt::format("output file has {} bytes, expected {}", out.size(), expected.bytes.size());
  }
  contract::Comparison cmp = c.compare(expected, out.data(), poison);
  *code = cmp.code;
  return cmp.ok ? "" : cmp.detail;
}

// A failed worker request named by its cause: the driver's error when the worker reports one (the
// worker sends the CUresult's name), the watchdog's or the pipe's verdict otherwise.
std::string fault_code(const WorkerReply& r) {
  // The worker said it was doing kqual's own work (an allocation, the upload, the read-back) when it
  // failed, was lost or hung: the candidate's code was not running.
  if (r.status != WorkerReply::Status::ok && !r.harness.empty()) return "harness_error";
  switch (r.status) {
    case WorkerReply::Status::crashed: return "crash";
    case WorkerReply::Status::hung: return "hang";
    case WorkerReply::Status::protocol_error: return "worker_protocol";
    case WorkerReply::Status::ok: return "";
    case WorkerReply::Status::sticky_error:
    case WorkerReply::Status::error: {
      const std::string kind = r.body.is_object() ? r.body.value("kind", std::string()) : std::string();
      if (kind != "cuda") return r.status == WorkerReply::Status::sticky_error ? "device_fault" : "harness_error";
      static const std::map<std::string, std::string> by_name = {
          {"CUDA_ERROR_ILLEGAL_ADDRESS", "illegal_address"},
          {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned_address"},
          {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "illegal_instruction"},
          {"CUDA_ERROR_INVALID_PC", "illegal_instruction"},
          {"CUDA_ERROR_HARDWARE_STACK_ERROR", "stack_overflow"},
          {"CUDA_ERROR_LAUNCH_FAILED", "launch_failure"},
          {"CUDA_ERROR_LAUNCH_TIMEOUT", "hang"},
          {"CUDA_ERROR_ASSERT", "device_assert"},
      };
      auto it = by_name.find(r.body.value("cuda_error", std::string()));
      if (it != by_name.end()) return it->second;
      return r.status == WorkerReply::Status::sticky_error ? "device_fault" : "launch_error";
    }
  }
  return "?";
}




namespace detail {

// What one worker request says about a case: "" when every run was right; otherwise res.code and
// res.detail are set.
bool judge_runs(const contract::Contract& c, const RunToRunPolicy& policy, const worker::Answer<worker::RunReply>& r,
                const worker::RunRequest& request, const std::vector<contract::Tensor>& expected, CaseResult& res) {
  if (!r.ok()) {
    res.code = fault_code(r.raw);
    res.detail = fault_detail(r.raw);
    res.debug = fault_debug(r.raw);
    return false;
  }
  const std::vector<worker::RunResult>& runs = r.reply->runs;
  res.kernel_ms = runs.empty() ? 0.0 : runs.front().kernel_ms;
  for (const auto& run : runs) {
    if (!run.guard_violations.empty()) {
      res.code = "out_of_bounds_write";
      res.detail = worker::describe(run.guard_violations.front());
      return false;
    }
    for (const auto& in : run.inputs) {
      if (in.first_changed_byte >= 0) {
        res.code = "input_mutated";
        res.detail = fmt::format("input '{}' changed during the launch (hash {} -> {}), first at byte {}", in.name,
                                 in.hash_before, in.hash_after, in.first_changed_byte);
        return false;
      }
    }
  }
  for (const auto& t : expected) {
    const auto& files = request.out_files.at(t.name);
    for (std::size_t k = 0; k < files.size(); ++k) {
      std::string code;
      std::string detail = verify_output_file(c, t, files[k], request.poison[k], &code);
      if (!detail.empty()) {
        res.code = code;
        res.detail = fmt::format("run {} (poison 0x{:02x}): {}", k + 1, request.poison[k], detail);
        return false;
      }
    }
  }
  // Every run right: do the runs give the same bytes? Where they do not, by how much, against each
  // output's error bound; the rule (the contract's, tightened by the manifest) decides.
  RunToRun r2r;
  r2r.policy = policy;
  if (request.placements.size() >= 2 && request.placements[0] != request.placements[1])
    r2r.runs = fmt::format("runs 1 and 2 (inputs placed {} / {}: at different alignments a kernel may take another path)",
                           request.placements[0], request.placements[1]);
  for (const auto& t : expected) {
    const auto& files = request.out_files.at(t.name);
    if (files.size() < 2) continue;
    MappedFile a = MappedFile::open_read(files.at(0));
    MappedFile bb = MappedFile::open_read(files.at(1));
    if (same_bytes(t, a.data(), bb.data())) continue;
    r2r.outputs.push_back(measure_difference(t, a.data(), bb.data()));
  }
  if (!r2r.differs()) return true;
  res.run_to_run = r2r.to_json();
  if (r2r.rejects()) {
    res.code = "nondeterministic";
    res.detail = r2r.rejection();
    return false;
  }
  res.note = r2r.note();
  return true;
}

// A fault of the candidate's launch (not of kqual: harness_error; not a hang: the watchdog's).
bool is_fault(const std::string& code) {
  static const std::set<std::string> faults = {"crash", "device_fault", "launch_error", "illegal_address", "misaligned_address",
                                               "illegal_instruction", "stack_overflow", "launch_failure", "device_assert"};
  return faults.count(code) > 0;
}
// A case kqual could not run for its own reasons (its allocation, the upload, the worker lost outside
// the candidate's launch, its reference): not run, never counted against the candidate.
bool harness_not_run(CaseResult& r, CorrectnessReport& rep) {
  if (r.status != "fail" || r.code != "harness_error") return false;
  r.status = "not_run";
  ++rep.harness_errors;
  if (rep.harness_failure.empty()) rep.harness_failure = fmt::format("{}: {}", r.spec.id, r.detail);
  rep.results.push_back(r);
  return true;
}

// The expected outputs come from a reference worker or kernel (Error(cuda) when it fails): kqual's
// failure on this case, not the candidate's.
CaseResult harness_guarded(const contract::CaseSpec& spec, const std::function<CaseResult()>& run) {
  try {
    return run();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::cuda) throw;
    CaseResult r;
    r.spec = spec;
    r.status = "fail";
    r.code = "harness_error";
    r.detail = fmt::format("{} (the reference): {} — not the candidate's", worker::kHarnessFailure, e.what());
    return r;
  }
}

bool is_value_failure(const std::string& code) {
  return code == "wrong_result" || code == "nondeterministic" || code == "nan_policy" || code == "unwritten_output";
}

// The candidate's claims and its launch plan admit the case: the resolved plan, or nullopt with
// res refused (the contract's refusal code, or launch_plan).
std::optional<ResolvedPlan> admit_case(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                       const contract::CaseSpec& spec, CaseResult& res) {
  const contract::Request req = c.request(spec.dtype, spec.dims, spec.offset_elements);
  if (auto refusal = c.validate(req, b.manifest.supports)) {
    res.status = "refused";
    res.code = refusal->code;
    res.detail = refusal->reason;
    return std::nullopt;
  }
  ResolvedPlan plan = resolve_plan(b, spec.dtype, spec.dims, s.device());
  if (!plan.refusal.empty()) {
    res.status = "refused";
    res.code = "launch_plan";
    res.detail = plan.refusal;
    return std::nullopt;
  }
  return plan;
}

CaseResult run_case_styled(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                           const RunStyle& style) {
  CaseResult res;
  res.spec = spec;
  std::optional<ResolvedPlan> admitted = admit_case(s, b, c, spec, res);
  if (!admitted) return res;
  const ResolvedPlan& plan = *admitted;
  const RunToRunPolicy policy = run_to_run_policy(c, b.manifest.supports, spec.dtype);
  std::shared_ptr<const PreparedCase> prepared = prepare_case(s, c, spec);
  const contract::CaseData& data = prepared->data;
  const std::vector<contract::Tensor>& expected = prepared->expected;
  res.reference = prepared->reference;
  res.degenerate = prepared->degenerate;
  fs::path dir = s.scratch() / "case";
  fs::create_directories(dir);
  auto offset_of = [&](const contract::Tensor& t) { return std::size_t(spec.offset_elements) * dtype_size(t.dtype); };
  // Two runs. Run 1: outputs poisoned with 0xFF (f32/bf16 NaN), each input's last byte at the end of
  // a mapping whose next page is unmapped (up to its claimed alignment less one byte earlier), every
  // SM's shared memory filled with 0xA5. Run 2: poison 0x7F (a large finite value), each input's
  // first byte at the start of a mapping after an unmapped page, shared memory 0x5A. Reads past an
  // input fault; outputs keep guard regions, which see writes.
  worker::RunRequest request;
  request.module = b.image_path.string();
  request.launches = plan.launches;
  request.poison = {0xFF, 0x7F};
  request.placements = {"trap_after", "trap_before"};
  request.scribble = {0xA5, 0x5A};
  request.guard_bytes = style.guard_bytes;
  if (!style.traps) request.placements = {"guarded", "guarded"};
  if (!style.scribble) request.scribble.clear();
  if (style.runs == 1) {
    request.poison.resize(1);
    request.placements.resize(1);
    if (!request.scribble.empty()) request.scribble.resize(1);
  }
  const std::size_t claimed_align = std::size_t(std::max<std::int64_t>(b.manifest.supports.min_alignment_bytes, 1));
  for (const auto& t : data.inputs) {
    fs::path f = dir / (t.name + ".in");
    write_file(f, t.bytes.data(), t.bytes.size());
    worker::Buffer buf{t.name, worker::BufferKind::input, t.bytes.size(), offset_of(t), f.string()};
    buf.align = std::max(claimed_align, dtype_size(t.dtype));
    request.buffers.push_back(buf);
  }
  for (const auto& t : expected) {
    request.buffers.push_back({t.name, worker::BufferKind::output, t.bytes.size(), offset_of(t), ""});
    request.out_files[t.name] = {(dir / (t.name + ".out0")).string(), (dir / (t.name + ".out1")).string()};
    request.out_files[t.name].resize(request.poison.size());
  }
  for (const auto& sc : plan.scratch) request.buffers.push_back(sc);
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  res.status = "fail";
  auto first = worker::call(s.worker(), request);
  bool traps_unavailable = false;
  if (first.raw.status == WorkerReply::Status::error && first.raw.body.is_object() &&
      first.raw.body.value("error", std::string()).find(worker::kTrapUnavailable) != std::string::npos) {
    // The platform cannot place inputs against unmapped pages: that check is not run (said in the
    // report), the case runs with guarded inputs, and no fault is blamed on a read past an input.
    traps_unavailable = true;
    res.checks_not_run = "inputs against unmapped pages (reads past an input): " + first.raw.body.value("error", std::string());
    request.placements.assign(request.placements.size(), "guarded");
    first = worker::call(s.worker(), request);
  }
  if (judge_runs(c, policy, first, request, expected, res)) {
    cleanup();
    res.status = "pass";
    return res;
  }
  // Both runs right but not the same bytes: the two placements put the inputs at different
  // alignments (mod 256), and a kernel may sum in another order on another path (vector loads when
  // aligned). Run the first placement again: a deterministic kernel repeats its own bytes.
  if (res.code == "nondeterministic" && request.poison.size() == 2 && request.placements.size() == 2 &&
      request.placements[0] != request.placements[1]) {
    worker::RunRequest again = request;
    again.placements = {request.placements[0], request.placements[0]};
    if (!again.scribble.empty()) again.scribble = {request.scribble[0], request.scribble[1]};
    CaseResult a;
    if (judge_runs(c, policy, worker::call(s.worker(), again), again, expected, a)) {
      cleanup();
      res = CaseResult{};
      res.spec = spec;
      res.reference = prepared->reference;
      res.degenerate = prepared->degenerate;
      res.run_to_run = a.run_to_run;  // the same placement twice: within the bound (or the same bytes)
      res.note = a.note;
      res.status = "pass";
      return res;
    }
  }
  // A failure is diagnosed when the case is small enough for a few more runs to be cheap.
  std::int64_t elements = 0;
  for (const auto& t : data.inputs) elements += t.elements;
  if (!style.diagnose || elements > (std::int64_t(1) << 24) || (style.diagnoses_left && *style.diagnoses_left <= 0)) {
    cleanup();
    return res;
  }
  if (style.diagnoses_left) --*style.diagnoses_left;
  if (res.code == "misaligned_address") {
    // The trap placement keeps only the claimed alignment; the guarded placement's buffers are
    // 256-byte aligned. Right there: the kernel accesses wider than its claim allows.
    worker::RunRequest guarded = request;
    guarded.placements = {"guarded", "guarded"};
    CaseResult g;
    if (judge_runs(c, policy, worker::call(s.worker(), guarded), guarded, expected, g))
      res.detail = fmt::format("the kernel faults with a misaligned address when its inputs sit at the alignment its manifest "
                               "claims (min_alignment_bytes = {}; the view is aligned to that and no more) and runs right with "
                               "256-byte-aligned inputs: it makes accesses wider than the claimed alignment allows ({})",
                               b.manifest.supports.min_alignment_bytes, res.detail);
  } else if (is_fault(res.code) && !traps_unavailable) {
    // A fault with inputs against unmapped pages: does the same case run with guarded inputs?
    worker::RunRequest guarded = request;
    guarded.placements = {"guarded", "guarded"};
    CaseResult g;
    const bool guarded_ok = judge_runs(c, policy, worker::call(s.worker(), guarded), guarded, expected, g);
    if (!guarded_ok && g.code == "hang") {
      // Not a read past an input: the guarded re-run never finished.
      res.detail = fmt::format("{}; with guarded inputs the same case hangs ({})", res.detail, g.detail);
    } else if (!guarded_ok && !is_fault(g.code)) {
      // Wrong in the guarded placement too (e.g. a write past an output): that is the finding; the
      // fault says it also reads past an input.
      res.code = g.code;
      res.detail = g.detail + "; it also reads outside an input (it faults when the inputs lie against unmapped pages)";
    } else if (!is_fault(g.code)) {
      // Then an input is read outside its bounds: find which input and which side.
      std::string found;
      for (const auto& t : data.inputs) {
        for (const char* side : {"trap_after", "trap_before"}) {
          worker::RunRequest one = request;
          one.poison = {0xFF};
          one.placements = {side};
          one.scribble = {0xA5};
          one.trap_only = {t.name};
          for (auto& [name, files] : one.out_files) files.resize(1);
          CaseResult x;
          judge_runs(c, policy, worker::call(s.worker(), one), one, expected, x);
          if (is_fault(x.code)) {
            found = std::string(side) == "trap_after"
                        ? fmt::format("input '{}' ({} bytes) is read past its last byte: with the input ending where its mapping "
                                      "ends (the next page unmapped) the kernel faults; with guard bytes after it, it does not",
                                      t.name, t.bytes.size())
                        : fmt::format("input '{}' is read before its first byte: with the input starting where its mapping "
                                      "starts (the previous page unmapped) the kernel faults; with guard bytes before it, it does not",
                                      t.name);
            break;
          }
        }
        if (!found.empty()) break;
      }
      res.code = "out_of_bounds_read";
      res.detail = found.empty() ? fmt::format("the kernel faults only when every input lies against an unmapped page ({})", res.detail)
                                 : found;
    }
  } else if (is_value_failure(res.code)) {
    // Wrong with shared memory scribbled: right when it holds zeros?
    // Two runs that differ may do so by chance (atomics reorder adds whatever shared memory holds):
    // then zeros must give agreeing runs three times before shared memory is blamed.
    worker::RunRequest zeros = request;
    zeros.scribble = {0x00, 0x00};
    CaseResult again;
    bool right_with_zeros = true;
    for (int k = 0; k < (res.code == "nondeterministic" ? 3 : 1) && right_with_zeros; ++k) {
      CaseResult z;
      right_with_zeros = judge_runs(c, policy, worker::call(s.worker(), zeros), zeros, expected, z);
    }
    if (right_with_zeros && !judge_runs(c, policy, worker::call(s.worker(), request), request, expected, again)) {
      res.detail = fmt::format("the output depends on what shared memory held before the launch: right when it holds zeros, "
                               "wrong when it holds 0xA5/0x5A bytes ({}: {})",
                               res.code, res.detail);
      res.code = "uninitialized_shared";
    }
  }
  cleanup();
  return res;
}

std::int64_t case_elements(const contract::Contract& c, const contract::CaseSpec& spec) {
  std::int64_t total = 0;
  for (const auto& t : c.tensors()) total += c.tensor_elements(t.name, spec.dims);
  return total;
}


}  // namespace detail

using namespace detail;

CaseResult run_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec) {
  return run_case_styled(s, b, c, spec, RunStyle{});
}

void order_cases(const contract::Contract& c, std::vector<contract::CaseSpec>& cases) {
  // Plain value families catch tails, offsets and wrong arithmetic; the special ones catch NaN/Inf
  // policy, denormal flushing and overflow. Large cases cost seconds each, small ones milliseconds.
  static const std::set<std::string> special = {"specials", "denormals", "near_max", "neg_inf", "large_logits", "all_equal",
                                                "wrap"};
  constexpr std::int64_t kSmall = std::int64_t(1) << 22;
  auto key = [&](const contract::CaseSpec& x) {
    const std::int64_t e = case_elements(c, x);
    const int group = e > kSmall ? 2 : special.count(x.family) ? 1 : 0;
    return std::pair<int, std::int64_t>(group, e);
  };
  std::stable_sort(cases.begin(), cases.end(), [&](const contract::CaseSpec& a, const contract::CaseSpec& bb) { return key(a) < key(bb); });
}

namespace {

// One case through the harness: host-made cases run styled; large cases generated on the device are
// verified there against the contract's device reference when it has one, else in windows against
// the CPU reference. The wall time is the case's.
CaseResult run_one_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                        const CheckOptions& o, int* diagnoses) {
  auto t0 = std::chrono::steady_clock::now();
  RunStyle style;
  style.diagnoses_left = diagnoses;
  CaseResult r = harness_guarded(spec, [&] {
    return spec.family != contract::kGeneratedFamily ? run_case_styled(s, b, c, spec, style)
           : c.device_reference(spec)               ? run_device_verified_case(s, b, c, spec, o.index_case_timeout_s)
                                                    : run_generated_case(s, b, c, spec, o.index_case_timeout_s);
  });
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

bool over_size_cap(const contract::Contract& c, const contract::CaseSpec& spec, const CheckOptions& o) {
  if (o.max_case_elements <= 0) return false;
  std::int64_t total = 0;
  for (const auto& t : c.tensors()) total += c.tensor_elements(t.name, spec.dims);
  return total > o.max_case_elements;
}

// Counts a case that ran (pass, refused or fail) into the report.
void count_case(CorrectnessReport& rep, const CaseResult& r) {
  ++rep.cases;
  if (!r.checks_not_run.empty()) rep.checks_not_run.insert(r.checks_not_run);
  if (r.status == "pass") {
    ++rep.passed;
    if (r.degenerate.empty()) ++rep.evidence;
  } else if (r.status == "refused") {
    ++rep.refused;
  } else {
    ++rep.failed;
    ++rep.failure_codes[r.code];
  }
}

// A past-2^31 case failed in a check that skipped the large cases (--no-large-cases): they are run
// now, only to tell 32-bit index arithmetic from a failure that starts at a smaller size (2^27
// elements, a grid limit). True when every one of them ran and passed (or the contract has none).
bool bracket_with_large_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                              CorrectnessReport& rep, int* diagnoses) {
  std::set<std::string> regular;
  for (const auto& spec : c.correctness_cases(b.manifest.supports, o.seed, false)) regular.insert(spec.id);
  bool all_passed = true;
  for (const auto& spec : c.correctness_cases(b.manifest.supports, o.seed, true)) {
    if (regular.count(spec.id)) continue;
    if (over_size_cap(c, spec, o)) return false;
    CaseResult r = run_one_case(s, b, c, spec, o, diagnoses);
    rep.wall_ms += r.wall_ms;
    if (harness_not_run(r, rep)) return false;
    if (r.status == "skipped") {
      ++rep.skipped;
      rep.results.push_back(r);
      return false;
    }
    count_case(rep, r);
    all_passed = all_passed && r.status == "pass";
    rep.results.push_back(r);
    if (r.status == "fail") return false;
  }
  return all_passed;
}

// Past 2^31 elements, when the claims reach there: generated on the device, checked in windows.
// A failure there while every smaller case, the large ones included, passed is 32-bit index
// arithmetic (or its like): index_overflow, only on that evidence (labels.hpp).
void run_index_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                     CorrectnessReport& rep, int* diagnoses) {
  bool large_ran = o.include_large;
  for (const auto& spec : c.index_cases(b.manifest.supports, o.seed)) {
    auto t0 = std::chrono::steady_clock::now();
    CaseResult r = harness_guarded(spec, [&] { return run_generated_case(s, b, c, spec, o.index_case_timeout_s); });
    r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rep.wall_ms += r.wall_ms;
    if (harness_not_run(r, rep)) return;
    if (r.status == "skipped") {
      ++rep.skipped;
      rep.results.push_back(r);
      continue;
    }
    bool bracketed = false;
    if (r.status == "fail" && !large_ran && rep.failed == 0 && rep.skipped == 0 && is_index_overflow(rep, true, r))
      large_ran = bracketed = bracket_with_large_cases(s, b, c, o, rep, diagnoses) && rep.failed == 0;
    if (r.status == "fail") label_index_case(rep, large_ran, spec.id.find("2^32") != std::string::npos ? "2^32" : "2^31", r);
    if (bracketed) r.detail += " (the large cases below 2^31 elements, not asked for, were run to tell this apart and passed)";
    count_case(rep, r);
    rep.results.push_back(r);
    if (r.status == "fail" && (r.code == "index_overflow" || is_fault(r.code) || r.code == "hang")) return;
  }
}

// The sanitizer pass after the cases: memcheck and racecheck on passed candidates; on a wrong one,
// racecheck over two passed cases and the smallest wrong one (a shared-memory race as the cause?).
void sanitizer_after_cases(Session& s, const BuiltCandidate& b, const contract::Contract& c, const CheckOptions& o,
                           CorrectnessReport& rep) {
  if (!o.sanitizer_pass) return;
  if (rep.harness_errors > 0) {
    rep.sanitizer = {{"status", "not_run"}, {"why", "kqual's own failure stopped the cases (harness_error)"}};
    return;
  }
  if (!s.device().present) {
    rep.sanitizer = {{"status", "not_run"}, {"why", "no GPU"}};
    return;
  }
  if (rep.failed == 0) {
    sanitizer_pass(s, b, c, sanitizer_picks(c, o, rep), {"memcheck", "racecheck"}, rep);
    return;
  }
  const CaseResult* smallest = nullptr;
  for (const auto& r : rep.results)
    if (r.status == "fail" && is_value_failure(r.code) && r.spec.family != contract::kGeneratedFamily &&
        case_elements(c, r.spec) <= (std::int64_t(1) << 22) && (!smallest || case_elements(c, r.spec) < case_elements(c, smallest->spec)))
      smallest = &r;
  if (!smallest) {
    rep.sanitizer = {{"status", "not_run"}, {"why", "the candidate already failed (no wrong case small enough for racecheck)"}};
    return;
  }
  // racecheck sees shared-memory hazards only: a kernel that uses none is not run under it (a
  // sanitizer worker costs seconds, and a rejection should not wait on a diagnosis that cannot apply).
  bool uses_shared = false;
  for (const auto& [name, k] : b.kernels.items())
    if (k.is_object() && k.value("static_shared_bytes", std::int64_t(0)) > 0) uses_shared = true;
  for (const auto& l : resolve_plan(b, smallest->spec.dtype, smallest->spec.dims, s.device()).launches)
    if (l.shared > 0) uses_shared = true;
  if (!uses_shared) {
    rep.sanitizer = {{"status", "not_run"},
                     {"why", "the candidate already failed, and its kernels use no shared memory (racecheck would see nothing)"}};
    return;
  }
  CheckOptions small = o;
  small.sanitizer_cases = 2;
  std::vector<contract::CaseSpec> picks = sanitizer_picks(c, small, rep);
  picks.push_back(smallest->spec);
  sanitizer_pass(s, b, c, picks, {"racecheck"}, rep);
}

}  // namespace

CorrectnessReport check_correctness(Session& s, const BuiltCandidate& b, const CheckOptions& o) {
  const contract::Contract& c = b.manifest.resolved_contract();
  CorrectnessReport rep;
  rep.candidate = b.manifest.name;
  for (DType t : b.manifest.supports.dtypes) {
    const RunToRunPolicy p = run_to_run_policy(c, b.manifest.supports, t);
    rep.run_to_run_rule.push_back({{"dtype", std::string(to_string(t))}, {"required", p.required}, {"reason", p.reason},
                                   {"opt_out", p.opt_out}, {"rule_from", p.rule_from}});
  }
  bool stopped_on_fault = false;
  int diagnoses = 4;  // failing cases diagnosed (out-of-bounds read? leftover shared memory?) per candidate
  std::vector<contract::CaseSpec> cases = c.correctness_cases(b.manifest.supports, o.seed, o.include_large);
  order_cases(c, cases);
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const contract::CaseSpec& spec = cases[ci];
    if (!o.all_cases && rep.failed > 0) {
      // The verdict is settled: the first failing case rejected the candidate (and was diagnosed).
      for (std::size_t k = ci; k < cases.size(); ++k) rep.settled_not_run.push_back(cases[k].id);
      break;
    }
    if (over_size_cap(c, spec, o)) {
      ++rep.skipped;
      continue;
    }
    CaseResult r = run_one_case(s, b, c, spec, o, &diagnoses);
    rep.wall_ms += r.wall_ms;
    if (harness_not_run(r, rep)) break;  // kqual cannot run this candidate's cases now: no verdict
    if (r.status == "skipped") {
      ++rep.skipped;
      rep.results.push_back(r);
      continue;
    }
    count_case(rep, r);
    rep.results.push_back(r);
    if (o.stop_on_fault && (is_fault(r.code) || r.code == "hang" || r.code == "worker_protocol" || r.code == "harness_error" ||
                            r.code == "out_of_bounds_read")) {
      stopped_on_fault = true;
      break;
    }
  }
  const bool settled = !o.all_cases && rep.failed > 0;
  if (o.index_cases && s.device().present && settled)
    for (const auto& spec : c.index_cases(b.manifest.supports, o.seed)) rep.settled_not_run.push_back(spec.id);
  if (o.index_cases && s.device().present && !settled && !(o.stop_on_fault && rep.failed && stopped_on_fault))
    run_index_cases(s, b, c, o, rep, &diagnoses);
  sanitizer_after_cases(s, b, c, o, rep);
  return rep;
}

}  // namespace kqual::check

