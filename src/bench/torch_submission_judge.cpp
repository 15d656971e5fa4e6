// One case of a PyTorch submission judged from the worker's reply and the files it wrote
// (torch_submission.hpp). Order: what the worker saw around the calls (replaced functions, changed
// inputs, unjoined or late work, library kernels), then the outputs against the references.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <iterator>

#include "kqual/contract/absent_byte.hpp"
#include "kqual/bench/record_judge.hpp"
#include "kqual/bench/record_mac.hpp"
#include "kqual/bench/torch_submission.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/dtype.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

SubmissionCaseResult failed(const std::string& id, SubmissionFailure f, std::string detail) {
  SubmissionCaseResult r;
  r.id = id;
  r.failure = f;
  r.detail = std::move(detail);
  return r;
}

std::string joined(const json& arr, std::size_t most = 4) {
  std::string s;
  std::size_t k = 0;
  for (const auto& v : arr) {
    if (k == most) {
      s += fmt::format(" and {} more", arr.size() - most);
      break;
    }
    s += (k++ ? ", " : "") + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return s;
}

// The worker's own failure codes (submission_worker.py) and the client's (TorchWorker::call).
SubmissionCaseResult refused(const std::string& id, const json& reply) {
  const std::string code = reply.value("code", std::string()), err = reply.value("error", std::string());
  switch (submission_failure_of_code(code)) {
    case SubmissionFailure::exception: return failed(id, SubmissionFailure::exception, "the submission raised: " + err);
    case SubmissionFailure::build_failed:
      return failed(id, SubmissionFailure::build_failed, "the submission's kernels did not build; the compiler's first error: " + err);
    case SubmissionFailure::hang: return failed(id, SubmissionFailure::hang, "no answer: " + err + "; the worker was killed");
    case SubmissionFailure::harness_error:
      return failed(id, SubmissionFailure::harness_error,
                    fmt::format("the submission worker answered {}: {}", code.empty() ? "?" : code, err));
    default: return failed(id, submission_failure_of_code(code), err);
  }
}

// What the worker watched around the three calls, worst first.
SubmissionCaseResult watched(const std::string& id, const json& reply) {
  const json replaced = reply.value("replaced", json::array());
  if (!replaced.empty())
    return failed(id, SubmissionFailure::timer_patched,
                  fmt::format("the submission replaced {} (compared by identity with the objects captured before it was imported)",
                              joined(replaced)));
  const json calls = reply.value("calls", json::array());
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const json& c = calls[k];
    const json changed = c.value("inputs_changed", json::array());
    if (!changed.empty())
      return failed(id, SubmissionFailure::input_mutated, fmt::format("call {}: input {} changed during the call (hashed before and after)",
                                                                      k + 1, joined(changed)));
  }
  // Side streams and late work are the record's to judge (record_judge.cpp): a side stream that is only
  // idle is no failure. What the worker read itself stays: output bytes that changed after the caller's
  // stream was done.
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const int late = calls[k].value("late_bytes", 0);
    if (late > 0)
      return failed(id, SubmissionFailure::late_result,
                    fmt::format("call {}: {} output(s) read when the caller's stream was done differ from the same outputs read after the "
                                "whole device was",
                                k + 1, late));
  }
  return {};
}

std::vector<std::uint8_t> read_all(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  if (!in) return {};
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Judged {
  contract::Comparison cmp;
  std::vector<std::uint8_t> bytes;
  bool readable = true;
  bool genuine = true;  // the bytes carry the code of the recorder's own read of the device memory
};

Judged judge_output(const contract::Contract& c, const contract::Tensor& want, const SubmissionOutputFiles& f, int call) {
  Judged j;
  const fs::path& file = f.call[call];
  j.bytes = read_all(file);
  if (f.mac[call]) {
    kqual_record::ContentMac mac(f.key.data());
    mac.update(j.bytes.data(), j.bytes.size());
    j.genuine = mac.final() == *f.mac[call];
  }
  if (j.bytes.size() != want.bytes.size()) {
    j.readable = false;
    j.cmp.ok = false;
    j.cmp.detail = fmt::format("{}: {} bytes, expected {}", file.string(), j.bytes.size(), want.bytes.size());
    return j;
  }
  j.cmp = c.compare(want, j.bytes.data(), contract::absent_byte(j.bytes, dtype_size(want.dtype)));
  return j;
}

// KernelBench's own check beside kqual's, for an imported KernelBench problem's output kqual rejected:
// torch.allclose(atol = rtol = 1e-2) over every element, as its evaluation runs it (NaN never equal). Where
// it passes, the detail says so and why kqual is stricter: its bound at the element it named.
std::string kernelbench_beside(const contract::Contract& c, const contract::Tensor& want, const std::vector<std::uint8_t>& bytes) {
  const fs::path file = contract::declared_file(c);
  if (file.empty() || !fs::exists(file.parent_path() / "problem.py") || want.ref.size() != std::size_t(want.elements)) return "";
  constexpr double kTol = 1e-2;
  double worst = 0;
  for (std::size_t i = 0; i < want.ref.size(); ++i) {
    const double y = contract::element_as_double(want.dtype, bytes.data(), i), r = want.ref[i];
    if (std::isnan(y) || std::isnan(r)) return "";  // allclose fails on NaN: KernelBench rejects it too
    const double over = std::fabs(y - r) / (kTol + kTol * std::fabs(r));
    if (!(over <= 1)) return "";  // KernelBench rejects it too (Inf against a number included)
    worst = std::max(worst, over);
  }
  return fmt::format(". KernelBench's own check (torch.allclose, atol = rtol = 1e-2) passes this output (its worst element at {:.2g} of "
                     "that bound): kqual holds it to the contract's tolerance, stricter (the bound named above, from the problem's "
                     "atol/rtol and the magnitude of the summed terms where that applies)",
                     worst);
}

SubmissionFailure value_failure(const contract::Comparison& cmp) {
  return cmp.code == "nan_policy" ? SubmissionFailure::nan_policy : SubmissionFailure::wrong_result;
}

}  // namespace

SubmissionFailure submission_failure_of_code(const std::string& code) {
  if (code == "exception") return SubmissionFailure::exception;
  if (code == "build_failed") return SubmissionFailure::build_failed;
  if (code == "output_mismatch") return SubmissionFailure::output_mismatch;
  if (code == "parameters_differ") return SubmissionFailure::parameters_differ;
  if (code == "timeout") return SubmissionFailure::hang;
  if (code == "worker_died") return SubmissionFailure::crash;
  return SubmissionFailure::harness_error;
}

SubmissionCaseResult judge_submission_case(const contract::Contract& c, const std::string& id, const json& reply,
                                           const std::vector<contract::Tensor>& expected_a,
                                           const std::vector<contract::Tensor>& expected_b,
                                           const std::vector<SubmissionOutputFiles>& files, const RecordJudgement* record) {
  // The record's integrity first: a record that does not add up judges nothing else.
  if (record && (record->failure == SubmissionFailure::harness_tampered || record->failure == SubmissionFailure::harness_error))
    return failed(id, record->failure, record->detail);
  if (!reply.is_object() || !reply.value("ok", false)) {
    // A replaced timer explains what followed, whatever the call then did.
    if (reply.is_object() && !reply.value("replaced", json::array()).empty()) return watched(id, reply);
    return refused(id, reply);
  }
  // A replaced timer explains what followed; then what the record saw the calls do.
  if (!reply.value("replaced", json::array()).empty()) return watched(id, reply);
  if (record && record->failure != SubmissionFailure::none) {
    SubmissionCaseResult r = failed(id, record->failure, record->detail);
    for (const auto& k : record->kernels) r.kernels.push_back(fmt::format("{} [{}]", k.name, to_string(k.origin)));
    return r;
  }
  if (SubmissionCaseResult w = watched(id, reply); w.failure != SubmissionFailure::none) return w;
  SubmissionCaseResult ok;
  ok.id = id;
  if (record)
    for (const auto& k : record->kernels) ok.kernels.push_back(fmt::format("{} [{}]", k.name, to_string(k.origin)));
  for (std::size_t t = 0; t < files.size(); ++t) {
    const auto& f = files[t];
    auto find = [&](const std::vector<contract::Tensor>& v) -> const contract::Tensor* {
      for (const auto& x : v)
        if (x.name == f.name) return &x;
      return nullptr;
    };
    const contract::Tensor* a = find(expected_a);
    const contract::Tensor* b = find(expected_b);
    if (!a || !b) return failed(id, SubmissionFailure::harness_error, "no reference for output " + f.name);
    const Judged one = judge_output(c, *a, f, 0), two = judge_output(c, *b, f, 1), three = judge_output(c, *a, f, 2);
    for (const Judged* j : {&one, &two, &three}) {
      if (!j->genuine)
        return failed(id, SubmissionFailure::harness_tampered,
                      fmt::format("output '{}', call {}: the bytes judged are not the bytes the recorder read from the GPU's memory of "
                                  "that output (the file was changed after the worker wrote it)",
                                  f.name, j == &one ? 1 : j == &two ? 2 : 3));
      if (!j->readable) return failed(id, SubmissionFailure::harness_error, "an output file the worker wrote: " + j->cmp.detail);
    }
    if (!one.cmp.ok) {
      if (three.cmp.ok)
        return failed(id, SubmissionFailure::first_call_differs,
                      fmt::format("output '{}': the first call was wrong ({}) and a later call on the same values right", f.name,
                                  one.cmp.detail));
      return failed(id, value_failure(one.cmp),
                    fmt::format("call 1, output '{}': {}{}", f.name, one.cmp.detail, kernelbench_beside(c, *a, one.bytes)));
    }
    if (!two.cmp.ok) {
      if (two.bytes == one.bytes && a->bytes != b->bytes)
        return failed(id, SubmissionFailure::cached_output,
                      fmt::format("output '{}': new values given in the same tensors (same data_ptr, shape and dtype) got the "
                                  "previous values' output, byte for byte ({})",
                                  f.name, two.cmp.detail));
      return failed(id, value_failure(two.cmp), fmt::format("call 2 (dataset B in the same tensors), output '{}': {}{}", f.name,
                                                            two.cmp.detail, kernelbench_beside(c, *b, two.bytes)));
    }
    if (!three.cmp.ok)
      return failed(id, value_failure(three.cmp), fmt::format("call 3 (dataset A again, fresh tensors), output '{}': {}{}", f.name,
                                                              three.cmp.detail, kernelbench_beside(c, *a, three.bytes)));
    // Calls 1 and 3 had the same values: where the contract requires reproducibility, the same bits.
    if (c.deterministic(a->dtype) && one.bytes != three.bytes) {
      std::size_t at = 0;
      while (at < one.bytes.size() && one.bytes[at] == three.bytes[at]) ++at;
      return failed(id, SubmissionFailure::nondeterministic,
                    fmt::format("output '{}': calls 1 and 3 on the same values differ (first at byte {}, element {}), and {} requires "
                                "run-to-run reproducibility at {}",
                                f.name, at, at / std::max<std::size_t>(1, dtype_size(a->dtype)), c.name(), to_string(a->dtype)));
    }
  }
  // Outputs that share memory with an input or with an earlier call's output (judged after the values,
  // so a cached output is named as such first).
  const json calls = reply.value("calls", json::array());
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const json al = calls[k].value("aliases", json::array());
    // The buffer an earlier call returned, handed back by a call that did no GPU work at all: a cached
    // output, whatever the values (where both datasets hold the same pattern they cannot tell).
    const bool earlier = !al.empty() && al.dump().find("the output call") != std::string::npos;
    if (earlier && record && k < record->call_work.size() && record->call_work[k] == 0)
      return failed(id, SubmissionFailure::cached_output,
                    fmt::format("call {} returned a buffer it shares with {} and did no GPU work (the activity record holds no kernel, "
                                "copy or memset of that call): an output kept from an earlier call",
                                k + 1, joined(al)));
    if (!al.empty())
      return failed(id, SubmissionFailure::output_mismatch,
                    fmt::format("call {}: an output shares memory with {}: every call must return a buffer of its own", k + 1, joined(al)));
  }
  return ok;
}

}  // namespace kqual::bench
