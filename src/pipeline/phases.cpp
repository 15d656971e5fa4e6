#include "kqual/pipeline/phases.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "kqual/check/plan.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

double phases_ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The sanitizer pass as its phase line: its status, and why when it says.
std::string sanitizer_phase_line(const json& sanitizer) {
  if (!sanitizer.is_object()) return "not run";
  return sanitizer.value("status", "not_run") + (sanitizer.contains("why") ? ": " + sanitizer.value("why", "") : "");
}

}  // namespace

BuiltOne build_one(const fs::path& folder, const BuildOneOptions& o) {
  BuiltOne b;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    b.manifest = build::load_manifest(folder, o.contracts);
  } catch (const Error& e) {
    b.manifest_error = e.what();
  }
  if (b.manifest && o.pass_over) b.passed_over = o.pass_over(*b.manifest);
  if (b.manifest && b.passed_over.empty()) {
    try {
      fs::create_directories(o.dir);
      b.built = build::build_candidate(*b.manifest, o.arch, o.dir);
    } catch (const Error& e) {
      b.build_error = e.what();
    }
  }
  b.build_ms = phases_ms_since(t0);
  return b;
}

std::string CorrectnessSummary::first_failure() const { return failures.empty() ? std::string() : failures.front().detail; }

std::string CorrectnessSummary::first_failure_with(const std::vector<std::string>& codes) const {
  for (const auto& f : failures)
    if (std::find(codes.begin(), codes.end(), f.code) != codes.end()) return f.detail;
  return "";
}

std::string CorrectnessSummary::phase_line() const {
  return fmt::format("{}: {} passed, {} failed, {} refused of {} cases", accepted ? "accepted" : "rejected", passed, failed, refused,
                     cases);
}

CorrectnessSummary summarize_correctness(const check::CorrectnessReport& rep) {
  CorrectnessSummary s;
  s.accepted = rep.accepted();
  s.incomplete = rep.incomplete();
  s.counts() = {.cases = rep.cases, .passed = rep.passed, .failed = rep.failed, .refused = rep.refused,
                .evidence = rep.evidence, .skipped = rep.skipped};
  s.harness_errors = rep.harness_errors;
  s.harness_failure = rep.harness_failure;
  s.settled_not_run = int(rep.settled_not_run.size());
  s.primary_code = rep.primary_code();
  s.failure_codes = rep.failure_codes;
  for (const auto& x : rep.results)
    if (x.status == check::CaseStatus::fail) s.failures.push_back({x.spec.id, x.code, x.detail});
  s.sanitizer = sanitizer_phase_line(rep.sanitizer);
  s.wall_ms = rep.wall_ms;
  return s;
}

CheckedOne check_one(worker::Session& s, build::BuiltCandidate& b, const CheckOneOptions& o) {
  CheckedOne out;
  const auto t0 = std::chrono::steady_clock::now();
  if (o.load) out.load_error = check::load_and_describe(s, b);
  if (out.loaded()) {
    if (o.correctness) {
      out.report = check::check_correctness(s, b, o.check);
      out.correctness = summarize_correctness(*out.report);
    }
    if (o.timing && (!out.correctness || out.correctness->accepted))
      out.timing = bench::time_against_baselines(s, b, {}, *o.timing);
  }
  out.wall_ms = phases_ms_since(t0);
  return out;
}

// ---- target, write ----
Target open_target(const TargetOptions& o) {
  worker::SessionOptions so;
  so.use_gpu = o.use_gpu;
  so.watchdog_seconds = o.watchdog_seconds;
  Target t;
  t.session = std::make_unique<worker::Session>(so);
  t.device = &t.session->device();
  if (t.device->present) {
    if (!o.arch.empty() && o.arch != t.device->arch)
      throw_error(ErrorKind::usage, fmt::format("--arch {} given but the device is {}", o.arch, t.device->arch));
    t.arch = t.device->arch;
    t.arch_source = "device 0";
  } else {
    t.arch = o.arch.empty() ? std::string(KQUAL_DEFAULT_ARCH) : o.arch;
    t.arch_source = o.arch.empty() ? "default (no device)" : "--arch";
    t.why_no_gpu = o.use_gpu ? t.device->why_absent : "GPU phases disabled (--no-gpu)";
  }
  return t;
}

DType timing_dtype(const std::string& asked, const std::vector<DType>& claimed, const std::string& who) {
  std::vector<std::string> names;
  for (DType t : claimed) names.push_back(std::string(to_string(t)));
  if (asked.empty()) {
    if (claimed.empty()) throw_error(ErrorKind::input, fmt::format("{} claims no dtype: nothing to time it at", who));
    return claimed.front();
  }
  const auto t = parse_dtype(asked);
  if (!t) throw_error(ErrorKind::usage, fmt::format("--dtype: unknown dtype '{}'", asked));
  if (std::find(claimed.begin(), claimed.end(), *t) == claimed.end())
    throw_error(ErrorKind::usage, fmt::format("--dtype {}: {} does not claim it (it claims {}); it is timed only at a dtype it "
                                              "claims (leave --dtype out to time it at {})",
                                              asked, who, fmt::join(names, ", "), names.empty() ? "?" : names.front()));
  return *t;
}

Written write_results(const fs::path& dir, const json& results, const std::vector<ResultFile>& files) {
  fs::create_directories(dir);
  Written w{dir / "results.json", {}};
  std::vector<std::pair<fs::path, std::string>> all{{w.results, results.dump(2, ' ', false, json::error_handler_t::replace) + "\n"}};
  for (const auto& f : files) {
    w.files.push_back(dir / f.name);
    all.emplace_back(w.files.back(), f.text);
  }
  auto partial = [](const fs::path& p) { return p.parent_path() / ("." + p.filename().string() + ".partial"); };
  try {
    for (const auto& [path, text] : all) write_file_atomic(partial(path), text);
    for (const auto& [path, text] : all) fs::rename(partial(path), path);
  } catch (...) {
    std::error_code ec;
    for (const auto& [path, text] : all) fs::remove(partial(path), ec);
    throw;
  }
  return w;
}

}  // namespace kqual::pipeline
