// Verification of the timed launches made on fresh inputs (timed_verify.hpp).
#include "timed_verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "kqual/core/error.hpp"

namespace kqual::bench::detail {

std::vector<int> saved_launches_per_call(const TimingOptions& o, const std::vector<std::int64_t>& elements) {
  const int samples = std::max(o.samples_per_round, 1), rounds = std::max(o.rounds, 1);
  std::vector<int> per_call(elements.size(), 0);
  std::int64_t total = 0;
  double cost = 0;
  for (std::size_t k = 0; k < elements.size(); ++k)
    if (elements[k] >= 0) {
      per_call[k] = 1;
      total += rounds;
      cost += double(rounds) * double(elements[k]);
    }
  while (total < o.verify_launches) {
    std::size_t best = elements.size();
    for (std::size_t k = 0; k < elements.size(); ++k)
      if (elements[k] >= 0 && per_call[k] < samples && (best == elements.size() || elements[k] < elements[best])) best = k;
    if (best == elements.size()) break;  // every sample of every call is compared already
    const double more = double(rounds) * double(elements[best]);
    if (o.verify_element_budget > 0 && cost + more > double(o.verify_element_budget)) break;
    ++per_call[best];
    total += rounds;
    cost += more;
  }
  return per_call;
}

std::vector<std::size_t> pick_saved_launches(std::size_t first, int warmup, int samples, int count, std::random_device& entropy) {
  std::vector<std::size_t> others;
  for (int k = 0; k < samples; ++k)
    if (std::size_t(warmup + k) != first) others.push_back(std::size_t(warmup + k));
  std::mt19937_64 g((std::uint64_t(entropy()) << 32) ^ entropy());
  std::shuffle(others.begin(), others.end(), g);
  others.resize(std::min<std::size_t>(others.size(), std::size_t(std::max(count - 1, 0))));
  others.push_back(first);
  return others;
}

namespace {

// The hash entry of saved launch `launch` (a graph replay hashes each launch it holds; they share
// the launch's seed).
std::size_t entry_of_launch(const worker::BenchReply& r, std::size_t launch) {
  std::size_t entry = 0, seen = 0;
  for (; entry < r.launch_seeds.size(); ++entry) {
    if (entry > 0 && r.launch_seeds[entry] == r.launch_seeds[entry - 1] && r.timer == worker::TimerKind::graph) continue;
    if (seen++ == launch) return entry;
  }
  throw_error(ErrorKind::internal, fmt::format("saved launch {} is past the {} launches of the call", launch, seen));
}

std::string launch_name(const worker::BenchReply& r, std::size_t entry) {
  return entry < r.hash_what.size() ? r.hash_what[entry] : fmt::format("launch {}", entry + 1);
}

}  // namespace

std::size_t verify_fresh_call(worker::Session& s, const contract::Contract& c, const check::FreshInputs& f,
                              const worker::BenchReply& r, const worker::BenchRequest& req, int round, const Fail& fail) {
  if (f.every_launch_verified) {
    const auto refs = check::fresh_reference_hashes(s, c, f, r.launch_seeds);
    std::size_t compared = 0;
    for (const auto& [name, hashes] : r.sample_hashes) {
      if (hashes.size() != r.launch_seeds.size())
        throw_error(ErrorKind::internal, fmt::format("the worker returned {} hashes of '{}' for {} launches", hashes.size(), name,
                                                     r.launch_seeds.size()));
      for (std::size_t e = 0; e < hashes.size(); ++e) {
        const auto& want = refs.at(r.launch_seeds[e]);
        auto it = want.find(name);
        if (it == want.end()) throw_error(ErrorKind::internal, fmt::format("the device reference of {} has no output '{}'", c.name(), name));
        if (it->second == hashes[e]) continue;
        fail(fmt::format("round {}, {} (fresh inputs, seed {:016x}): output '{}' differs from the device reference's on the same "
                         "inputs (hash {} vs {}): the kernel does not compute the right result for every timed launch",
                         round + 1, launch_name(r, e), r.launch_seeds[e], name, hashes[e], it->second),
             "timed_output_wrong");
        return compared + e;
      }
      compared = std::max(compared, hashes.size());
    }
    return compared;
  }
  std::size_t compared = 0;
  for (std::size_t i = 0; i < req.save_launches.size(); ++i) {
    const std::size_t entry = entry_of_launch(r, req.save_launches[i]);
    for (const auto& [name, files] : req.save_files) {
      std::string code;
      const std::string det = check::verify_fresh_output(s, c, f, r.launch_seeds[entry], name, files.at(i), &code);
      if (!det.empty()) {
        fail(fmt::format("round {}, {} (fresh inputs, seed {:016x}, read back and compared with the reference; {}): {}", round + 1,
                         launch_name(r, entry), r.launch_seeds[entry], code, det),
             "timed_output_wrong");
        return compared;
      }
    }
    ++compared;
  }
  return compared;
}

std::size_t verify_rerun_matches(worker::Session& s, const worker::BenchRequest& req, const worker::BenchReply& r, int round,
                                 std::random_device& entropy, const Fail& fail, std::string* error) {
  std::vector<std::uint64_t> seeds;
  std::set<std::uint64_t> seen;
  for (std::uint64_t sd : r.launch_seeds)
    if (seen.insert(sd).second) seeds.push_back(sd);
  if (seeds.empty()) return 0;
  // An order the kernel cannot predict: a launch counter's pattern does not line up with the call's.
  std::mt19937_64 g((std::uint64_t(entropy()) << 32) ^ entropy());
  std::shuffle(seeds.begin(), seeds.end(), g);
  worker::RunRequest run;
  run.module = req.module;
  run.buffers = req.buffers;
  run.launches = req.launches;
  run.generator_module = req.generator_module;
  run.gen_seeds = seeds;
  run.poison.assign(seeds.size(), 0xFF);
  run.placements.assign(seeds.size(), "guarded");
  auto a = worker::call(s.worker(), run);
  if (!a.ok()) {
    // As a failed timing call: the series' error (kqual's own when the reason says so).
    *error = fmt::format("{}: {} (round {}: launched again untimed on the inputs of its timed launches, to compare them)",
                         worker::to_string(a.raw.status), a.raw.reason, round + 1);
    return 0;
  }
  if (a.reply->runs.size() != seeds.size())
    throw_error(ErrorKind::internal, fmt::format("the worker returned {} runs for {} seeds", a.reply->runs.size(), seeds.size()));
  std::map<std::uint64_t, std::map<std::string, std::string>> again;
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    const worker::RunResult& run_k = a.reply->runs[k];
    for (const auto& [name, chunks] : run_k.chunk_hashes) again[seeds[k]][name] = worker::combine_chunk_hashes(chunks);
  }
  std::size_t compared = 0;
  for (const auto& [name, hashes] : r.sample_hashes) {
    for (std::size_t e = 0; e < hashes.size() && e < r.launch_seeds.size(); ++e) {
      const auto& want = again[r.launch_seeds[e]];
      auto it = want.find(name);
      if (it == want.end()) throw_error(ErrorKind::internal, fmt::format("the untimed re-run has no hash of output '{}'", name));
      if (it->second == hashes[e]) continue;
      fail(fmt::format("round {}, {} (fresh inputs, seed {:016x}): output '{}' differs from the output of the same kernel launched "
                       "again untimed on the same inputs (hash {} vs {}); the contract requires the same bytes from every run, so one "
                       "of the two launches did not compute the result in full",
                       round + 1, launch_name(r, e), r.launch_seeds[e], name, hashes[e], it->second),
           "timed_output_wrong");
      return compared + e;
    }
    compared = std::max(compared, std::min(hashes.size(), r.launch_seeds.size()));
  }
  return compared;
}

double detection_one_in_ten(std::size_t compared) { return 1.0 - std::pow(0.9, double(compared)); }

json verification_summary(const TimingReport& rep, int target, std::int64_t budget_elements) {
  std::size_t reference = 0, rerun = 0, launches = 0, timed = 0;
  json shapes = json::array();
  for (const auto& sh : rep.shapes) {
    if (sh.series.empty()) continue;
    const Series& c = sh.series[0];
    reference += c.reference_compared;
    rerun += c.rerun_compared;
    launches += c.launches;
    timed += c.samples_ms.size() + std::size_t(std::max(c.discarded, 0));  // only timed launches are ever saved
    shapes.push_back({{"shape", sh.shape}, {"launches", c.launches}, {"compared_with_reference", c.reference_compared},
                      {"compared_with_untimed_rerun", c.rerun_compared}});
  }
  const double p = detection_one_in_ten(reference);
  std::string said = fmt::format(
      "{} of the candidate's {} timed and warm-up launches were compared with the contract's reference on their own inputs, picked "
      "at run time where the kernel cannot see the choice: a kernel wrong on one launch in ten, at random, is caught with "
      "probability {:.2f} %{}.",
      reference, launches, 100 * p, reference >= launches && launches > 0 ? " (every launch)" : "");
  bool all_verified = true;
  for (const auto& sh : rep.shapes) all_verified = all_verified && (sh.series.empty() || sh.series[0].verified);
  if (all_verified && target > 0 && reference < std::size_t(target)) {
    // The binding limit: the timed launches themselves (warm-ups are never saved), or the host's
    // element budget; the target's own figure, not a fixed one.
    const std::string aimed = fmt::format(" That is fewer than the {} aimed at ({:.2f} %)", target, 100 * detection_one_in_ten(std::size_t(target)));
    if (reference >= timed)
      said += aimed + fmt::format(": every one of the {} timed launches was compared already (warm-up launches are never saved); more "
                                  "rounds or samples (--rounds, --samples) give more.",
                                  timed);
    else if (budget_elements > 0)
      said += aimed + fmt::format(": each comparison costs a reference computed on the host, and more would have read past {} output "
                                  "elements; --verify-launches N asks for N without that limit.",
                                  budget_elements == (std::int64_t(1) << 30) ? std::string("2^30") : std::to_string(budget_elements));
    else
      said += aimed + ": the calls saved no more launches (at most one per timed sample of each call).";
  }
  if (rerun > 0)
    said += fmt::format(" {} launches were also compared, byte for byte, with the same kernel launched again untimed on the same "
                        "inputs: a launch skipped or shortened by a launch count, a time or a cache is caught at every one of them.",
                        rerun);
  return json{{"launches", launches},
              {"compared_with_reference", reference},
              {"compared_with_untimed_rerun", rerun},
              {"target_compared_with_reference", target},
              {"detection_one_in_ten", p},
              {"statement", said},
              {"shapes", shapes}};
}

}  // namespace kqual::bench::detail
