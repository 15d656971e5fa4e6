// PyTorch baselines' timed series kept across qualify runs (torch_baseline_cache.hpp).
#include "kqual/bench/torch_baseline_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <system_error>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

}  // namespace

TorchBaselineCache::TorchBaselineCache(fs::path root, json identity) : root_(std::move(root)), identity_(std::move(identity)) {}

std::string TorchBaselineCache::key(const std::string& shape, const std::string& dtype) const {
  json k = identity_;
  k["shape"] = shape;
  k["dtype"] = dtype;
  return sha256_hex(k.dump());
}

std::optional<json> TorchBaselineCache::find(const std::string& key) const {
  std::ifstream in(root_ / (key + ".json"));
  if (!in) return std::nullopt;
  try {
    json kept = json::parse(in);
    if (kept.value("key", std::string()) != key || !kept.contains("series") || !kept["series"].is_object()) return std::nullopt;
    return kept;
  } catch (const std::exception&) {
    return std::nullopt;  // torn or foreign: measured again, and replaced
  }
}

void TorchBaselineCache::keep(const std::string& key, json entry) const {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return;
  entry["key"] = key;
  entry["identity"] = identity_;
  entry["measured_at"] = now_utc();
  try {
    write_file_atomic(root_ / (key + ".json"), entry.dump() + "\n");
  } catch (const Error&) {
    // a cache that cannot be written costs the next run a measurement, nothing else
  }
}

double TorchBaselineCache::agreement(const std::vector<double>& kept_samples) {
  if (kept_samples.size() < 4) return kAgreement;
  std::vector<double> v = kept_samples;
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) { return v[std::size_t(q * double(v.size() - 1) + 0.5)]; };
  const double median = at(0.5);
  return median > 0 ? std::max(kAgreement, 2 * (at(0.75) - at(0.25)) / median) : kAgreement;
}

json kept_series(const Series& s) {
  return json{{"label", s.label},           {"samples_ms", s.samples_ms}, {"warmup_ms", s.warmup_ms}, {"verified", s.verified},
              {"verify_code", s.verify_code}, {"verify_detail", s.verify_detail}, {"error", s.error}};
}

Series series_from_kept(const json& j) {
  Series s;
  s.label = j.value("label", std::string());
  s.role = "baseline";
  s.timer = worker::TimerKind::events;
  s.samples_ms = j.value("samples_ms", std::vector<double>{});
  s.warmup_ms = j.value("warmup_ms", std::vector<double>{});
  s.verified = j.value("verified", false);
  s.verify_code = j.value("verify_code", std::string());
  s.verify_detail = j.value("verify_detail", std::string());
  s.error = j.value("error", std::string());
  return s;
}

}  // namespace kqual::bench
