// Fresh timed inputs and their verification (check/timed_inputs.hpp).
#include "kqual/check/timed_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <mutex>

#include "internal.hpp"
#include "kqual/contract/generated.hpp"
#include "kqual/core/error.hpp"

namespace kqual::check {

std::optional<FreshInputs> fresh_timing_inputs(worker::Session& s, const contract::Contract& c, const contract::CaseSpec& spec) {
  if (!s.device().present) return std::nullopt;
  FreshInputs f;
  f.spec = spec;
  f.spec.family = contract::kGeneratedFamily;
  f.spec.id = spec.id + "/fresh";
  if (!c.inputs_generatable(f.spec)) return std::nullopt;
  f.buffers = detail::generated_buffers(c, f.spec, nullptr, nullptr);
  f.generator_module = detail::generator_module(s);
  f.every_launch_verified = c.device_reference(f.spec).has_value();
  return f;
}

std::map<std::uint64_t, std::map<std::string, std::string>> fresh_reference_hashes(worker::Session& s, const contract::Contract& c,
                                                                                   const FreshInputs& f,
                                                                                   const std::vector<std::uint64_t>& seeds) {
  static std::mutex mu;
  static std::map<std::string, std::map<std::uint64_t, std::map<std::string, std::string>>> cache;
  const std::string key = fmt::format("{}|{}|{}|{}", c.name(), to_string(f.spec.dtype), contract::format_dims(f.spec.dims), s.device().arch);
  std::vector<std::uint64_t> missing;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& known = cache[key];
    for (std::uint64_t sd : seeds)
      if (!known.count(sd) && std::find(missing.begin(), missing.end(), sd) == missing.end()) missing.push_back(sd);
  }
  if (!missing.empty()) {
    const std::optional<contract::GpuReference> g = c.device_reference(f.spec);
    if (!g) throw_error(ErrorKind::internal, fmt::format("contract {} has no device reference for {}", c.name(), f.spec.id));
    worker::RunRequest request;
    request.module = detail::reference_module(s, g->source, c.name());
    request.generator_module = f.generator_module;
    request.launches = detail::worker_launches(*g);
    request.buffers = detail::generated_buffers(c, f.spec, &g->raw_outputs, nullptr);
    request.poison.assign(missing.size(), 0xFF);
    request.placements.assign(missing.size(), "guarded");
    request.gen_seeds = missing;
    auto r = worker::call(s.reference_worker(), request);
    if (!r.ok())
      throw_error(ErrorKind::cuda, fmt::format("the device reference of {} failed on the timed inputs of {}: {}", c.name(), f.spec.id,
                                               r.raw.reason));
    if (r.reply->runs.size() != missing.size())
      throw_error(ErrorKind::internal, fmt::format("the reference worker returned {} runs for {} seeds", r.reply->runs.size(), missing.size()));
    std::lock_guard<std::mutex> lock(mu);
    auto& known = cache[key];
    if (known.size() > 4096) known.clear();  // bound memory across a long campaign
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const worker::RunResult& run = r.reply->runs[i];
      for (const auto& p : run.poison_scans)
        if (p.poisoned)
          throw_error(ErrorKind::internal, fmt::format("the device reference of {} left {} element(s) of '{}' unwritten on {}", c.name(),
                                                       p.poisoned, p.name, f.spec.id));
      auto& m = known[missing[i]];
      for (const auto& [name, chunks] : run.chunk_hashes) m[name] = worker::combine_chunk_hashes(chunks);
    }
  }
  std::map<std::uint64_t, std::map<std::string, std::string>> out;
  std::lock_guard<std::mutex> lock(mu);
  const auto& known = cache[key];
  for (std::uint64_t sd : seeds) out[sd] = known.at(sd);
  return out;
}

std::string verify_fresh_output(worker::Session& s, const contract::Contract& c, const FreshInputs& f, std::uint64_t seed,
                                const std::string& output, const std::filesystem::path& file, std::string* code) {
  // The expected outputs of the last few seeds (every implementation of a round saves the same
  // launch, so one reference serves them all).
  static std::mutex mu;
  static std::deque<std::pair<std::string, std::shared_ptr<const std::vector<contract::Tensor>>>> recent;
  const std::string key = fmt::format("{}|{}|{}|{}", c.name(), to_string(f.spec.dtype), contract::format_dims(f.spec.dims), seed);
  std::shared_ptr<const std::vector<contract::Tensor>> expected;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [k, v] : recent)
      if (k == key) expected = v;
  }
  if (!expected) {
    contract::CaseSpec spec = f.spec;
    spec.seed = seed;
    spec.id = fmt::format("{}/seed={:016x}", f.spec.id, seed);
    const contract::CaseData data = contract::generated_case(c, spec);
    expected = std::make_shared<const std::vector<contract::Tensor>>(compute_reference(s, c, data));
    std::lock_guard<std::mutex> lock(mu);
    recent.emplace_back(key, expected);
    while (recent.size() > 3) recent.pop_front();
  }
  auto it = std::find_if(expected->begin(), expected->end(), [&](const contract::Tensor& t) { return t.name == output; });
  if (it == expected->end()) throw_error(ErrorKind::internal, fmt::format("the reference of {} has no output '{}'", c.name(), output));
  return verify_output_file(c, *it, file, 0xFF, code);
}

}  // namespace kqual::check
