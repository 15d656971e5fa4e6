#pragma once
// PyTorch baselines' timed series kept across qualify runs (docs/torch-baselines.md, "Kept across
// runs"). Timing PyTorch eager and torch.compile at every shape took most of a qualify on an H100 (45
// of 61 s, 37 s of it at n = 2^28: datasets made on the CPU, torch.compile, the blocks), and a reviewer
// iterating on a kernel qualifies it dozens of times a day. A shape's series are reused only while
// everything that decides them is the same: the operation (the contract and what PyTorch runs), the
// shape and dtype, PyTorch and torch.compile's mode, the GPU (name, architecture, driver) and the
// timing options; and only after this run measured one shape again (the middle one) and every
// implementation's median there agrees with the kept one within agreement(). Otherwise every shape is
// measured again, and kept.
#include <filesystem>
#include <optional>
#include <string>

#include "kqual/bench/timing.hpp"
#include "kqual/core/json.hpp"

namespace kqual::bench {

class TorchBaselineCache {
 public:
  // A median measured again agrees with the kept series when their ratio is within 1 +- agreement(kept):
  // kAgreement, or twice the kept samples' interquartile range over their median where that is wider (a
  // 4 us torch.compile kernel's median moved 6-8 % between runs on an H100).
  static constexpr double kAgreement = 0.05;
  static double agreement(const std::vector<double>& kept_samples);
  // `root`: the folder (kqual_cache_dir() / "torch-baselines"); `identity`: what decides the series
  // besides the shape and dtype (the operation, PyTorch, the GPU, the timing options, kqual).
  TorchBaselineCache(std::filesystem::path root, json identity);
  std::string key(const std::string& shape, const std::string& dtype) const;
  // The entry kept under `key` ({"measured_at", "series": {impl: series}, "startup": ...}); nullopt when
  // none parses with that key.
  std::optional<json> find(const std::string& key) const;
  // Kept whole or not at all (written under a name of this process's, then renamed); a cache that
  // cannot be written is no error.
  void keep(const std::string& key, json entry) const;

 private:
  std::filesystem::path root_;
  json identity_;
};

// A PyTorch series as kept (samples, verification, error, label) and back.
json kept_series(const Series& s);
Series series_from_kept(const json& j);

}  // namespace kqual::bench
