// A baseline's correctness verdict kept across qualify runs (baseline_reuse.hpp).
#include "kqual/pipeline/baseline_reuse.hpp"

#include <fmt/format.h>

#include <fstream>
#include <system_error>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/pipeline/screen_journal.hpp"
#include "kqual/pipeline/screen_key.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

bool report_accepted(const json& report) { return report.is_object() && report.value("verdict", std::string()) == "accepted"; }

BaselineVerdicts::BaselineVerdicts(fs::path root, const json& device, json options, contract::ContractLookup contracts)
    : root_(std::move(root)), options_(std::move(options)), contracts_(std::move(contracts)) {
  // The GPU that ran the check: its name, architecture and driver (not its clocks or free memory).
  json gpu = json::object();
  if (device.is_object())
    for (const char* k : {"name", "arch", "driver_version", "sms", "total_memory_bytes"})
      if (device.contains(k)) gpu[k] = device[k];
  options_["gpu"] = gpu;
  options_["what"] = "baseline correctness";
}

std::string BaselineVerdicts::key(const fs::path& baseline_dir, const std::string& contract) const {
  VerdictKeys keys(options_, contract, contracts_);
  return keys.key(baseline_dir);
}

std::optional<json> BaselineVerdicts::find(const std::string& key) const {
  if (key.empty()) return std::nullopt;
  std::ifstream in(root_ / (key + ".json"));
  if (!in) return std::nullopt;
  try {
    const json kept = json::parse(in);
    if (kept.value("key", std::string()) != key || !report_accepted(kept.value("report", json()))) return std::nullopt;
    json report = kept["report"];
    report["reused"] = json{{"checked_at", kept.value("checked_at", std::string())}, {"key", key}};
    return report;
  } catch (const std::exception&) {
    return std::nullopt;  // torn or foreign: checked again, and replaced
  }
}

void BaselineVerdicts::keep(const std::string& key, const json& report) const {
  if (key.empty() || !report_accepted(report)) return;
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return;
  json kept{{"key", key}, {"checked_at", utc_now()}, {"report", report}};
  kept["report"].erase("reused");
  // Written whole under a name of this process's, then renamed (write_file_atomic): qualify runs side by
  // side (GPU test lanes) keeping the same key never interleave their bytes. A cache that cannot be
  // written costs the next run a check, nothing else.
  try {
    write_file_atomic(root_ / (key + ".json"), kept.dump(1) + "\n");
  } catch (const Error&) {
  }
}

}  // namespace kqual::pipeline
