// One host-made case through the worker: admitted by the candidate's claims and launch plan, its
// inputs written and placed against unmapped pages, run twice and judged; a failure is then
// diagnosed by a few more runs (a misaligned access, a read past an input, leftover shared memory).
#include "kqual/check/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "kqual/check/in_place.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/worker/protocol.hpp"
#include "internal.hpp"

namespace kqual::check {
namespace fs = std::filesystem;

namespace detail {

// The candidate's claims and its launch plan admit the case: the resolved plan, or nullopt with
// res refused (the contract's refusal code, or launch_plan).
std::optional<ResolvedPlan> admit_case(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                       const contract::CaseSpec& spec, CaseResult& res) {
  const contract::Request req = c.request(spec.dtype, spec.dims, spec.offset_elements);
  if (auto refusal = c.validate(req, b.manifest.supports)) {
    res.status = CaseStatus::refused;
    res.code = refusal->code;
    res.detail = refusal->reason;
    return std::nullopt;
  }
  ResolvedPlan plan = resolve_plan(b, spec.dtype, spec.dims, s.device());
  if (!plan.refusal.empty()) {
    res.status = CaseStatus::refused;
    res.code = "launch_plan";
    res.detail = plan.refusal;
    return std::nullopt;
  }
  return plan;
}

namespace {

// A host case's request, and what judging a run of it needs: every re-run of a diagnosis is a
// variant of `request`, judged against the same expected outputs under the same rule.
struct HostCaseRuns {
  Session& s;
  const BuiltCandidate& b;
  const contract::Contract& c;
  const RunToRunPolicy& policy;
  const std::vector<contract::Tensor>& expected;
  worker::RunRequest request;

  bool judge(const worker::RunRequest& r, CaseResult& out) const {
    return judge_runs(c, policy, worker::call(s.worker(), r), r, expected, out);
  }
};

// Two runs. Run 1: outputs poisoned with 0xFF (f32/bf16 NaN), each input's last byte at the end of
// a mapping whose next page is unmapped (up to its claimed alignment less one byte earlier), every
// SM's shared memory filled with 0xA5. Run 2: poison 0x7F (a large finite value; 0x7B where an output
// is f16 or fp8, whose 0x7F.. is NaN: second_poison_byte), each input's
// first byte at the start of a mapping after an unmapped page, shared memory 0x5A. Reads past an
// input fault; outputs keep guard regions, which see writes. The inputs are written to files in `dir`.
worker::RunRequest host_case_request(const BuiltCandidate& b, const ResolvedPlan& plan, const contract::CaseSpec& spec,
                                     const PreparedCase& prepared, const RunStyle& style, const fs::path& dir) {
  auto offset_of = [&](const contract::Tensor& t) { return std::size_t(spec.offset_elements) * dtype_size(t.dtype); };
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
  for (const auto& t : prepared.data.inputs) {
    fs::path f = dir / (t.name + ".in");
    write_file(f, t.bytes.data(), t.bytes.size());
    worker::Buffer buf{t.name, worker::BufferKind::input, t.bytes.size(), offset_of(t), f.string()};
    buf.align = std::max(claimed_align, dtype_size(t.dtype));
    request.buffers.push_back(buf);
  }
  if (request.poison.size() == 2) request.poison[1] = second_poison_byte(prepared.expected);
  for (const auto& t : prepared.expected) {
    request.buffers.push_back({t.name, worker::BufferKind::output, t.bytes.size(), offset_of(t), ""});
    request.out_files[t.name] = {(dir / (t.name + ".out0")).string(), (dir / (t.name + ".out1")).string()};
    request.out_files[t.name].resize(request.poison.size());
  }
  for (const auto& sc : plan.scratch) request.buffers.push_back(sc);
  return request;
}

// Both runs right but not the same bytes: the two placements put the inputs at different
// alignments (mod 256), and a kernel may sum in another order on another path (vector loads when
// aligned). Run the first placement again: a deterministic kernel repeats its own bytes. True with
// res passed (and the difference the same placement gave, if any) when it does.
bool same_placement_repeats(const HostCaseRuns& runs, const PreparedCase& prepared, CaseResult& res) {
  const worker::RunRequest& request = runs.request;
  if (res.code != "nondeterministic" || request.poison.size() != 2 || request.placements.size() != 2 ||
      request.placements[0] == request.placements[1])
    return false;
  worker::RunRequest again = request;
  again.placements = {request.placements[0], request.placements[0]};
  if (!again.scribble.empty()) again.scribble = {request.scribble[0], request.scribble[1]};
  CaseResult a;
  if (!runs.judge(again, a)) return false;
  const contract::CaseSpec spec = res.spec;
  res = CaseResult{};
  res.spec = spec;
  res.reference = prepared.reference;
  res.degenerate = prepared.degenerate;
  res.run_to_run = a.run_to_run;  // the same placement twice: within the bound (or the same bytes)
  res.note = a.note;
  res.status = CaseStatus::pass;
  return true;
}

// The trap placement keeps only the claimed alignment; the guarded placement's buffers are
// 256-byte aligned. Right there: the kernel accesses wider than its claim allows.
void diagnose_misaligned(const HostCaseRuns& runs, CaseResult& res) {
  worker::RunRequest guarded = runs.request;
  guarded.placements = {"guarded", "guarded"};
  CaseResult g;
  if (runs.judge(guarded, g))
    res.detail = fmt::format("the kernel faults with a misaligned address when its inputs sit at the alignment its manifest "
                             "claims (min_alignment_bytes = {}; the view is aligned to that and no more) and runs right with "
                             "256-byte-aligned inputs: it makes accesses wider than the claimed alignment allows ({})",
                             runs.b.manifest.supports.min_alignment_bytes, res.detail);
}

// Which input is read outside its bounds, and on which side: each input alone against an unmapped
// page, one run each. "" when none faults alone.
std::string input_read_outside(const HostCaseRuns& runs, const contract::CaseData& data) {
  for (const auto& t : data.inputs) {
    for (const char* side : {"trap_after", "trap_before"}) {
      worker::RunRequest one = runs.request;
      one.poison = {0xFF};
      one.placements = {side};
      one.scribble = {0xA5};
      one.trap_only = {t.name};
      for (auto& [name, files] : one.out_files) files.resize(1);
      CaseResult x;
      runs.judge(one, x);
      if (is_fault(x.code))
        return std::string(side) == "trap_after"
                   ? fmt::format("input '{}' ({} bytes) is read past its last byte: with the input ending where its mapping "
                                 "ends (the next page unmapped) the kernel faults; with guard bytes after it, it does not",
                                 t.name, t.bytes.size())
                   : fmt::format("input '{}' is read before its first byte: with the input starting where its mapping "
                                 "starts (the previous page unmapped) the kernel faults; with guard bytes before it, it does not",
                                 t.name);
    }
  }
  return {};
}

// A fault with inputs against unmapped pages: does the same case run with guarded inputs?
void diagnose_fault(const HostCaseRuns& runs, const contract::CaseData& data, CaseResult& res) {
  worker::RunRequest guarded = runs.request;
  guarded.placements = {"guarded", "guarded"};
  CaseResult g;
  const bool guarded_ok = runs.judge(guarded, g);
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
    const std::string found = input_read_outside(runs, data);
    res.code = "out_of_bounds_read";
    res.detail = found.empty() ? fmt::format("the kernel faults only when every input lies against an unmapped page ({})", res.detail)
                               : found;
  }
}

// Wrong with shared memory scribbled: right when it holds zeros?
// Two runs that differ may do so by chance (atomics reorder adds whatever shared memory holds):
// then zeros must give agreeing runs three times before shared memory is blamed.
void diagnose_shared_memory(const HostCaseRuns& runs, CaseResult& res) {
  worker::RunRequest zeros = runs.request;
  zeros.scribble = {0x00, 0x00};
  CaseResult again;
  bool right_with_zeros = true;
  for (int k = 0; k < (res.code == "nondeterministic" ? 3 : 1) && right_with_zeros; ++k) {
    CaseResult z;
    right_with_zeros = runs.judge(zeros, z);
  }
  if (right_with_zeros && !runs.judge(runs.request, again)) {
    res.detail = fmt::format("the output depends on what shared memory held before the launch: right when it holds zeros, "
                             "wrong when it holds 0xA5/0x5A bytes ({}: {})",
                             res.code, res.detail);
    res.code = "uninitialized_shared";
  }
}

// The case's runs judged into res; a failure diagnosed when the style asks for it and the case is
// small enough for a few more runs to be cheap.
void judge_host_case(HostCaseRuns& runs, const PreparedCase& prepared, const RunStyle& style, CaseResult& res) {
  res.status = CaseStatus::fail;
  auto first = worker::call(runs.s.worker(), runs.request);
  bool traps_unavailable = false;
  if (first.raw.status == WorkerReply::Status::error && first.raw.body.is_object() &&
      first.raw.body.value("error", std::string()).find(worker::kTrapUnavailable) != std::string::npos) {
    // The platform cannot place inputs against unmapped pages: that check is not run (said in the
    // report), the case runs with guarded inputs, and no fault is blamed on a read past an input.
    traps_unavailable = true;
    res.checks_not_run = "inputs against unmapped pages (reads past an input): " + first.raw.body.value("error", std::string());
    runs.request.placements.assign(runs.request.placements.size(), "guarded");
    first = worker::call(runs.s.worker(), runs.request);
  }
  if (judge_runs(runs.c, runs.policy, first, runs.request, runs.expected, res)) {
    res.status = CaseStatus::pass;
    return;
  }
  if (same_placement_repeats(runs, prepared, res)) return;
  std::int64_t elements = 0;
  for (const auto& t : prepared.data.inputs) elements += t.elements;
  if (!style.diagnose || elements > (std::int64_t(1) << 24) || (style.diagnoses_left && *style.diagnoses_left <= 0)) return;
  if (style.diagnoses_left) --*style.diagnoses_left;
  if (res.code == "misaligned_address")
    diagnose_misaligned(runs, res);
  else if (is_fault(res.code) && !traps_unavailable)
    diagnose_fault(runs, prepared.data, res);
  else if (is_value_failure(res.code))
    diagnose_shared_memory(runs, res);
}

// A case that passed with separate buffers, again with the contract's in-place outputs on their
// inputs when the candidate claims in_place (in_place.hpp): res fails aliasing_wrong (or the
// in-place run's fault) when the outputs differ.
void run_in_place(const HostCaseRuns& runs, const PreparedCase& prepared, const fs::path& dir, CaseResult& res) {
  const std::vector<AliasPair> pairs =
      case_pairs(plan_in_place(runs.c, runs.b.manifest.supports), prepared.data.inputs, prepared.expected);
  if (pairs.empty()) return;
  res.in_place = describe_pairs(pairs);
  const worker::RunRequest aliased = in_place_request(runs.request, pairs, dir);
  if (judge_in_place(runs.c, runs.policy, worker::call(runs.s.worker(), aliased), aliased, runs.request, pairs, runs.expected, res))
    return;
  res.status = CaseStatus::fail;
  res.note.clear();
}

}  // namespace

CaseResult run_case_styled(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec,
                           const RunStyle& style) {
  CaseResult res;
  res.spec = spec;
  std::optional<ResolvedPlan> admitted = admit_case(s, b, c, spec, res);
  if (!admitted) return res;
  const RunToRunPolicy policy = run_to_run_policy(c, b.manifest.supports, spec.dtype);
  std::shared_ptr<const PreparedCase> prepared = prepare_case(s, c, spec);
  res.reference = prepared->reference;
  res.degenerate = prepared->degenerate;
  const fs::path dir = s.scratch() / "case";
  fs::create_directories(dir);
  HostCaseRuns runs{s, b, c, policy, prepared->expected, host_case_request(b, *admitted, spec, *prepared, style, dir)};
  judge_host_case(runs, *prepared, style, res);
  if (res.status == CaseStatus::pass && style.in_place) run_in_place(runs, *prepared, dir, res);
  if (res.status == CaseStatus::fail)
    for (const auto& t : prepared->data.inputs) res.input_sha256[t.name] = sha256_hex(t.bytes.data(), t.bytes.size());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return res;
}

}  // namespace detail

CaseResult run_case(Session& s, const BuiltCandidate& b, const contract::Contract& c, const contract::CaseSpec& spec) {
  return detail::run_case_styled(s, b, c, spec, detail::RunStyle{});
}

}  // namespace kqual::check
