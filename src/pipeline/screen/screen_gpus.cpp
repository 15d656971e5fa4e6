// kqual screen --gpus: finding the host's GPUs without CUDA, selecting some, and the dispatcher that
// feeds one queue of candidates to one lane (worker session) per GPU.
#include "kqual/pipeline/screen_gpus.hpp"

#include "kqual/pipeline/lanes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "kqual/core/error.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) return out;
    pos = next + 1;
  }
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

// A non-negative decimal number, or -1.
long parse_count(const std::string& s) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stol(s);
}

}  // namespace

HostGpus host_gpus(const fs::path& proc_dir, const char* cuda_visible_devices) {
  HostGpus h;
  if (cuda_visible_devices) {
    // Inside a Slurm allocation (or a user's own restriction) the visible set is the host: pin each
    // worker to one of its entries, in its order. Entries may be ordinals or GPU UUIDs.
    h.source = fmt::format("CUDA_VISIBLE_DEVICES={}", cuda_visible_devices);
    const std::string v = trim(cuda_visible_devices);
    if (v.empty() || v == "-1" || v == "NoDevFiles") {
      h.why_none = fmt::format("CUDA_VISIBLE_DEVICES is '{}': no GPU is visible to this process", v);
      return h;
    }
    for (const std::string& e : split(v, ',')) {
      const std::string t = trim(e);
      if (t.empty()) continue;
      h.gpus.push_back(HostGpu{int(h.gpus.size()), t, ""});
    }
    return h;
  }
  h.source = proc_dir.string();
  std::error_code ec;
  if (!fs::is_directory(proc_dir, ec)) {
    h.why_none = fmt::format("{} does not exist: no NVIDIA driver on this host", proc_dir.string());
    return h;
  }
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(proc_dir, ec)) ids.push_back(e.path().filename().string());
  // Folder names are PCI bus ids ("0000:19:00.0"): zero-padded hex of fixed width, so their sorted
  // order is PCI bus order, the order CUDA_DEVICE_ORDER=PCI_BUS_ID numbers devices in.
  std::sort(ids.begin(), ids.end());
  for (const std::string& id : ids) {
    const int ordinal = int(h.gpus.size());
    h.gpus.push_back(HostGpu{ordinal, std::to_string(ordinal), id});
  }
  if (h.gpus.empty()) h.why_none = fmt::format("{} lists no GPU", proc_dir.string());
  return h;
}

std::vector<HostGpu> select_gpus(const std::string& spec_in, const HostGpus& host) {
  const std::string spec = trim(spec_in);
  if (spec.empty()) throw_error(ErrorKind::usage, "--gpus: empty; give all, a count (2) or a list of ordinals (0,2)");
  if (host.gpus.empty())
    throw_error(ErrorKind::usage, fmt::format("--gpus {}: no GPU found ({}); run with --no-gpu for the static phases only "
                                              "(manifest, contract, compile)",
                                              spec, host.why_none));
  const int have = int(host.gpus.size());
  if (spec == "all") return host.gpus;
  if (spec.find(',') == std::string::npos) {
    const long n = parse_count(spec);
    if (n < 0)
      throw_error(ErrorKind::usage, fmt::format("--gpus {}: not all, a count (2) or a list of ordinals (0,2)", spec));
    if (n < 1) throw_error(ErrorKind::usage, fmt::format("--gpus {}: the count must be at least 1", spec));
    if (n > have)
      throw_error(ErrorKind::usage, fmt::format("--gpus {}: asks for {} GPU(s) but {} has {}", spec, n, host.source, have));
    return std::vector<HostGpu>(host.gpus.begin(), host.gpus.begin() + n);
  }
  std::vector<HostGpu> out;
  std::set<long> seen;
  for (const std::string& part : split(spec, ',')) {
    const std::string t = trim(part);
    if (t.empty()) continue;  // "2," selects GPU 2 alone
    const long k = parse_count(t);
    if (k < 0)
      throw_error(ErrorKind::usage, fmt::format("--gpus {}: '{}' is not a GPU ordinal (0, 1, ...)", spec, t));
    if (k >= have)
      throw_error(ErrorKind::usage, fmt::format("--gpus {}: there is no GPU {} ({} has {}: ordinals 0 to {}, PCI bus order)",
                                                spec, k, host.source, have, have - 1));
    if (!seen.insert(k).second) throw_error(ErrorKind::usage, fmt::format("--gpus {}: GPU {} is named twice", spec, k));
    out.push_back(host.gpus[std::size_t(k)]);
  }
  if (out.empty()) throw_error(ErrorKind::usage, fmt::format("--gpus {}: names no GPU", spec));
  return out;
}

std::vector<std::pair<std::string, std::string>> pin_environment(const HostGpu& g) {
  return {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", g.visible}};
}

GpuGate::Hold GpuGate::shared() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return !exclusive_ && exclusive_waiting_ == 0; });
  ++shared_;
  return Hold(this, false);
}

GpuGate::Hold GpuGate::exclusive() {
  std::unique_lock<std::mutex> lk(mu_);
  ++exclusive_waiting_;
  cv_.wait(lk, [&] { return !exclusive_ && shared_ == 0; });
  --exclusive_waiting_;
  exclusive_ = true;
  return Hold(this, true);
}

std::pair<int, int> GpuGate::holders() {
  std::lock_guard<std::mutex> lk(mu_);
  return {shared_, exclusive_ ? 1 : 0};
}

int GpuGate::exclusive_waiting() {
  std::lock_guard<std::mutex> lk(mu_);
  return exclusive_waiting_;
}

void GpuGate::release(bool exclusive) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (exclusive)
      exclusive_ = false;
    else
      --shared_;
  }
  cv_.notify_all();
}

DispatchReport dispatch_lanes(std::size_t lanes, std::size_t items, const LaneHooks& hooks) {
  DispatchReport rep;
  rep.judged.assign(lanes, 0);
  rep.faults.assign(lanes, 0);
  rep.retired.assign(lanes, "");
  std::mutex mu;  // the report; serializes record()
  std::size_t next = run_lanes(lanes, items, [&](std::size_t lane, std::size_t item) {
    bool fault = false;
    ScreenVerdict v = hooks.check(lane, item, &fault);
    {
      std::lock_guard<std::mutex> lk(mu);
      hooks.record(lane, item, std::move(v));
      ++rep.judged[lane];
      if (fault) ++rep.faults[lane];
    }
    if (!fault) return true;
    // The candidate's verdict stands; the lane goes on only if its GPU still answers a fresh worker (a
    // lost GPU must not turn the rest of the queue into worker faults).
    std::string why = hooks.probe ? hooks.probe(lane) : std::string();
    if (why.empty()) return true;
    std::lock_guard<std::mutex> lk(mu);
    rep.retired[lane] = why;
    return false;
  });
  // Every lane retired before the queue ran out: what is left is recorded, not lost.
  std::string why_all;
  for (std::size_t l = 0; l < lanes; ++l)
    why_all += fmt::format("{}lane {}: {}", l ? "; " : "", l, rep.retired[l].empty() ? "none" : rep.retired[l]);
  for (; next < items; ++next) {
    ScreenVerdict v;
    v.verdict = ScreenVerdictKind::incomplete;
    v.reason = "no GPU left";
    v.detail = lanes == 0 ? std::string("no lane") : "every GPU's worker was retired (" + why_all + ")";
    hooks.record(std::size_t(-1), next, std::move(v));
    ++rep.unjudged;
  }
  return rep;
}

}  // namespace kqual::pipeline
