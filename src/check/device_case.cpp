// Large cases verified on the device. The inputs are generated on the device from
// the counter-based generator (contract/generated.hpp), in the candidate's worker and, separately,
// in the session's reference worker, where the contract's trusted reference kernel
// (Contract::device_reference) computes the expected outputs. Neither output moves to the host:
// each worker returns one position-dependent hash per chunk of 2^20 elements and a poison count.
// The coordinator compares the hash lists; only a chunk whose hashes differ is read back (a window)
// and compared element by element with the contract's CPU reference of that window, which names
// the first wrong element. The reference's hashes are kept for the process, so every candidate of a
// screen (same contract, seed and case) reuses them.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "internal.hpp"
#include "kqual/check/labels.hpp"
#include "kqual/contract/generated.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::check {
namespace fs = std::filesystem;

namespace detail {
namespace {

constexpr std::size_t kExplainChunks = 4;                   // differing chunks read back at first

using ChunkHashes = std::map<std::string, std::vector<std::uint64_t>>;

// The reference's chunk hashes for a case, computed once per process (a screen's candidates share them).
ChunkHashes reference_hashes(Session& s, const contract::Contract& c, const contract::CaseSpec& spec, const contract::GpuReference& g) {
  static std::mutex mu;
  static std::map<std::string, ChunkHashes> cache;
  const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", c.name(), spec.id, to_string(spec.dtype), contract::format_dims(spec.dims),
                                      spec.seed, s.device().arch);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  worker::RunRequest request;
  request.module = reference_module(s, g.source, c.name());
  request.generator_module = generator_module(s);
  request.launches = worker_launches(g);
  request.poison = {0xFF};
  request.placements = {"guarded"};
  request.buffers = generated_buffers(c, spec, &g.raw_outputs, nullptr);
  auto r = worker::call(s.reference_worker(), request);
  if (!r.ok()) throw_error(ErrorKind::cuda, fmt::format("the device reference of {} failed on {}: {}", c.name(), spec.id, r.raw.reason));
  const worker::RunResult& run = r.reply->runs.at(0);
  for (const auto& p : run.poison_scans)
    if (p.poisoned)
      throw_error(ErrorKind::internal, fmt::format("the device reference of {} left {} element(s) of '{}' unwritten on {}", c.name(),
                                                   p.poisoned, p.name, spec.id));
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = run.chunk_hashes;
  return run.chunk_hashes;
}

}  // namespace

CaseResult run_device_verified_case(Session& s, const BuiltCandidate& b, const contract::Contract& c,
                                    const contract::CaseSpec& spec, double timeout_s) {
  CaseResult res;
  std::optional<ResolvedPlan> admitted = admit_generated(s, b, c, spec, "gpu (device reference, other process; chunk hashes)", res);
  if (!admitted) return res;
  const ResolvedPlan& plan = *admitted;
  const std::optional<contract::GpuReference> g = c.device_reference(spec);
  if (!g) throw_error(ErrorKind::internal, fmt::format("contract {} has no device reference for {}", c.name(), spec.id));
  const ChunkHashes want = reference_hashes(s, c, spec, *g);

  worker::RunRequest request = generated_request(s, b, plan, generated_buffers(c, spec, nullptr, nullptr));
  res.status = CaseStatus::fail;
  auto r = worker::call(s.worker(), request, timeout_s);
  if (!generated_runs_clean(r, res)) return res;
  const auto& runs = r.reply->runs;
  res.kernel_ms = runs.empty() ? 0.0 : runs.front().kernel_ms;
  // Chunks whose hash differs from the reference's, per run and output.
  std::map<std::string, std::vector<std::uint64_t>> differing;  // output -> chunk indices (any run)
  std::size_t differing_count = 0;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    for (const auto& [name, ref] : want) {
      auto it = runs[k].chunk_hashes.find(name);
      if (it == runs[k].chunk_hashes.end() || it->second.size() != ref.size())
        throw_error(ErrorKind::internal, fmt::format("the worker returned no chunk hashes of '{}' for {}", name, spec.id));
      for (std::size_t j = 0; j < ref.size(); ++j)
        if (it->second[j] != ref[j]) differing[name].push_back(j);
    }
  }
  for (auto& [name, v] : differing) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    differing_count += v.size();
  }
  if (differing_count == 0) {
    // Equal to the reference chunk for chunk in both runs (so deterministic too); no element holds the
    // poison unless the reference's does, which reference_hashes refuses.
    res.status = CaseStatus::pass;
    return res;
  }
  // Explain: read the first few differing chunks back (a fresh run per poison) and compare them with
  // the contract's CPU reference on exactly the inputs they depend on; that names the first wrong
  // element. Generated inputs are finite, so an exact contract's output has no NaN whose payload
  // could differ harmlessly: a differing chunk that the re-run gets right means the output changes
  // from run to run on the same inputs.
  fs::path dir = s.scratch() / "case-device";
  fs::create_directories(dir);
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> windows;
  std::vector<contract::OutputWindow> ows;
  for (const auto& [name, chunks] : differing) {
    const std::int64_t n = c.tensor_elements(name, spec.dims);
    for (std::size_t i = 0; i < chunks.size() && i < kExplainChunks; ++i) {
      const std::int64_t begin = std::int64_t(chunks[i] * kChunkElements), count = std::min<std::int64_t>(std::int64_t(kChunkElements), n - begin);
      std::optional<contract::OutputWindow> w = c.output_window(spec, name, begin, count);
      if (!w) continue;
      windows[name].push_back({std::uint64_t(begin), std::uint64_t(count)});
      ows.push_back(*w);
    }
  }
  const std::string summary = fmt::format("{} chunk(s) of 2^20 elements differ from the device reference (first: chunk {} of '{}')",
                                          differing_count, differing.begin()->second.front(), differing.begin()->first);
  if (ows.empty()) {
    res.code = "wrong_result";
    res.detail = summary + "; the contract cannot name the elements";
    return res;
  }
  worker::RunRequest again = generated_request(s, b, plan, generated_buffers(c, spec, nullptr, &windows));
  for (const auto& [name, ws] : windows) again.out_files[name] = {(dir / (name + ".w0")).string(), (dir / (name + ".w1")).string()};
  auto w = worker::call(s.worker(), again, timeout_s);
  if (!w.ok()) {
    res.code = fault_code(w.raw);
    res.detail = summary + "; the re-run that reads them back failed: " + fault_detail(w.raw);
    res.debug = fault_debug(w.raw);
    cleanup();
    return res;
  }
  std::map<std::string, std::size_t> next_at;
  for (const auto& ow : ows) {
    const ReadBackWindow got = read_back_window(s, c, spec, ow, again, next_at);
    if (got.rejected_run) {
      const std::size_t k = *got.rejected_run;
      res.code = got.rejection.code;
      res.detail = fmt::format("{}; run {} (poison 0x{:02x}), {} (element offsets relative to element {}): {}", summary, k + 1,
                               again.poison[k], ow.why, ow.begin, got.rejection.detail);
      cleanup();
      return res;
    }
  }
  cleanup();
  // A device reference exists only for exact outputs, and generated inputs are finite (no NaN whose
  // payload could differ harmlessly): a chunk that differed was wrong in that run, beyond a bound of
  // 0, whatever the rule. The elements of the first runs are gone, so no ulp figure is measured.
  const RunToRunPolicy policy = run_to_run_policy(c, b.manifest.supports, spec.dtype);
  res.code = "nondeterministic";
  res.detail = fmt::format("{} in the first two runs, and the same chunks were right when run again on the same inputs: the "
                           "output changes from run to run, beyond the exact output's bound of 0; {}",
                           summary,
                           policy.required ? fmt::format("bitwise reproducible results are required: {}. Opt-out: {}", policy.reason,
                                                         policy.opt_out)
                                           : fmt::format("the rule admits differences within the bound only ({})", policy.reason));
  return res;
}

}  // namespace detail
}  // namespace kqual::check
