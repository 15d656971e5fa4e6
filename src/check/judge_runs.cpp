// Judging what a worker request gave back: a failed request named by its cause (fault_code), each
// output against the reference (verify_output_file), and the two runs against each other under the
// run-to-run rule (judge_runs).
#include "kqual/check/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>

#include "kqual/check/labels.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/core/files.hpp"
#include "kqual/worker/protocol.hpp"
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

namespace {

// Whether element i of an output's bytes holds the byte b repeated (a run's poison pattern).
bool holds(const std::uint8_t* p, std::size_t esize, std::size_t i, std::uint8_t b) {
  for (std::size_t j = 0; j < esize; ++j)
    if (p[i * esize + j] != b) return false;
  return true;
}

// Whether some element of a dense output holds run k's own poison in run k and other bytes in the
// other run: left unwritten in run k. A kernel that writes a value writes it in both runs; poison
// that was never overwritten follows the poison (a kernel whose tail path depends on where the
// inputs are placed may skip an element in one run only). An element holding run k's pattern in
// both runs was written with that value (in a one-byte output every byte is a value: 0xFF is -1 in
// i8 and NaN in e4m3, 0x7F is 127 in i8) and is judged by its value.
bool left_unwritten(const contract::Tensor& t, const std::vector<std::string>& files, const std::vector<std::uint8_t>& poison,
                    std::size_t k) {
  if (files.size() < 2 || poison.at(0) == poison.at(1)) return true;
  const MappedFile a = MappedFile::open_read(files.at(k)), b = MappedFile::open_read(files.at(1 - k));
  const std::size_t es = dtype_size(t.dtype), n = std::size_t(t.elements);
  if (a.size() < n * es || b.size() < n * es) return true;
  for (std::size_t i = 0; i < n; ++i)
    if (holds(a.data(), es, i, poison[k]) && !holds(b.data(), es, i, poison[k])) return true;
  return false;
}

// A byte whose repeated pattern no element of the file holds (nullopt when all 256 occur): a
// comparison given it as the poison judges every element by its value.
std::optional<std::uint8_t> absent_pattern(const contract::Tensor& t, const std::string& file) {
  const MappedFile f = MappedFile::open_read(file);
  const std::size_t es = dtype_size(t.dtype), n = std::min(std::size_t(t.elements), f.size() / es);
  std::array<bool, 256> seen{};
  for (std::size_t i = 0; i < n; ++i)
    if (holds(f.data(), es, i, f.data()[i * es])) seen[f.data()[i * es]] = true;
  for (int b = 0; b < 256; ++b)
    if (!seen[std::size_t(b)]) return std::uint8_t(b);
  return std::nullopt;
}

// The first offending elements of output t in one run's file, compared with `poison` as the verdict
// was: what a reproducer (kqual replay) shows next to the case's inputs. Each: the output, the run,
// the element's index (of the tensor's storage), the expected element and the written one as value
// and bits, and the reference in higher precision with its bound where the contract has one.
json offending_elements(const contract::Contract& c, const contract::Tensor& t, const std::string& file, std::uint8_t poison,
                        std::size_t run) {
  const MappedFile out = MappedFile::open_read(file);
  json elements = json::array();
  if (out.size() != t.bytes.size()) return elements;
  const contract::Comparison cmp = c.compare(t, out.data(), poison);
  for (const std::int64_t i : cmp.examples) {
    if (i < 0 || i >= t.elements) continue;
    const std::size_t at = std::size_t(i);
    json e{{"output", t.name},
           {"run", run + 1},
           {"index", i},
           {"expected", contract::format_element(t.dtype, t.bytes.data(), at)},
           {"actual", contract::format_element(t.dtype, out.data(), at)}};
    if (at < t.ref.size() && at < t.bound.size()) {
      e["reference"] = t.ref[at];
      e["bound"] = t.bound[at];
    }
    elements.push_back(std::move(e));
  }
  return elements;
}

}  // namespace

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
      if (detail.empty()) continue;
      std::uint8_t judged_with = request.poison[k];
      // (A strided output's padding must hold the run's own poison: it keeps the verdict as it is.)
      if (code == "unwritten_output" && t.row_stride == 0 && k < 2 && !left_unwritten(t, files, request.poison, k)) {
        // Every element holding this run's poison holds it in the other run too: the kernel wrote
        // that value. Judged by value instead, against a pattern no element holds.
        if (const auto b = absent_pattern(t, files[k])) {
          std::string by_value_code;
          std::string by_value = verify_output_file(c, t, files[k], *b, &by_value_code);
          if (!by_value.empty()) {
            code = by_value_code;
            detail = by_value;
            judged_with = *b;
          }
        }
      }
      res.code = code;
      res.detail = fmt::format("run {} (poison 0x{:02x}): {}", k + 1, request.poison[k], detail);
      if (code != "internal") res.failing_elements = offending_elements(c, t, files[k], judged_with, k);
      return false;
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

bool is_value_failure(const std::string& code) {
  return code == "wrong_result" || code == "nondeterministic" || code == "nan_policy" || code == "unwritten_output";
}

std::uint8_t second_poison_byte(const std::vector<contract::Tensor>& outputs) {
  for (const auto& t : outputs)
    if (t.dtype == DType::f16 || t.dtype == DType::e4m3 || t.dtype == DType::e5m2) return 0x7B;
  return 0x7F;
}

}  // namespace detail
}  // namespace kqual::check
