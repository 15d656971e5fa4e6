#pragma once
// PyTorch baselines (issue 24, item 3; docs/kernelbench.md, "PyTorch baselines"): for a contract whose
// reference is a PyTorch function, "torch_eager" (the reference run by PyTorch on the GPU in the
// benchmark dtype) and "torch_compiled" (torch.compile of it), timed by a Python timing worker
// (tools/torch/timing_worker.py, a separate process) under kqual's timing rules, on the same input
// values as the native timing (files written here from the same prepared cases). The candidate is
// timed against them across processes as `kqual compare` times its sides: blocks in the order
// A B B A (A the candidate in kqual's worker, B the PyTorch worker), bootstrap CIs, "no difference"
// inside the margin. Their outputs are checked against the contract's reference: a wrong baseline is
// reported, never "the fastest". torch.compile's compilation is reported apart, as a startup cost.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kqual/bench/timing.hpp"
#include "kqual/core/json.hpp"

namespace kqual::bench {

inline constexpr const char* kTorchEager = "torch_eager";
inline constexpr const char* kTorchCompiled = "torch_compiled";

// --torch-baselines: "" or "auto" → nullopt (on when the contract's reference is PyTorch and torch is
// importable); "none" → {}; else a comma list of eager, compiled. Error(usage) naming anything else.
std::optional<std::vector<std::string>> parse_torch_baselines(const std::string& text);

struct TorchReference {
  std::filesystem::path file;  // reference.py
  std::string function;
  std::map<std::string, std::vector<std::string>> shapes;  // tensor → its axes, outermost first
};
// The PyTorch reference of a declared contract ([reference] kind = "torch"); nullopt for a NumPy or a
// built-in contract.
std::optional<TorchReference> torch_reference_of(const contract::Contract& c);

// Why these timing options cannot time PyTorch baselines ("" when they can): the timer (the worker
// times with CUDA events only) or the L2 flush mode (invalidate has no PyTorch equivalent).
std::string torch_timing_blocker(const TimingOptions& o);

struct TorchShapeStartup {
  std::string shape;
  double compile_s = -1;  // the first torch.compile call at this shape (host clock, synchronised); < 0: not run
};

struct TorchBaselineReport {
  bool ran = false;
  std::string status;  // the phase line: "done: ..." or "not run: <why>"
  std::string torch_version, device, clocks;
  std::vector<TorchShapeStartup> startup;
  std::vector<std::string> notes;
  json to_json() const;
};

// Appends a PyTorch series to a shape: compared (A) against the candidate's samples from the same
// A B B A blocks (B); the fastest baseline moves to it only when it is faster and its outputs were
// right. `candidate_samples` empty: the series is added without a comparison.
void add_torch_series(ShapeResult& sh, Series s, const std::vector<double>& candidate_samples, double equivalence_margin);

// The phase: decides whether it runs (kinds nullopt: automatic), starts the worker, times every shape
// of `tr` and adds the series. Never throws for a missing torch, GPU-less torch or refused mode: the
// status says "not run: ..." instead.
TorchBaselineReport run_torch_baselines(worker::Session& s, const build::BuiltCandidate& cand, TimingReport& tr,
                                        const TimingOptions& o, const std::optional<std::vector<std::string>>& kinds);

// One sentence on eager / compiled / custom at the largest timed shape ("" without PyTorch series),
// e.g. "At the largest shape (n=...), torch_compiled is fastest: the candidate takes 1.12x its time ...".
std::string torch_largest_shape_verdict(const TimingReport& tr);

// Per shape with PyTorch series: "n=...: eager 1.23 ms, compiled 0.98 ms, custom 0.91 ms (fastest: ...)".
std::vector<std::string> torch_shape_lines(const TimingReport& tr);

}  // namespace kqual::bench
