#pragma once
// PyTorch baselines (docs/kernelbench.md, "PyTorch baselines"): "torch_eager" and "torch_compiled"
// for every contract PyTorch can run: the six built-in contracts as their PyTorch one-liners (the
// op table of tools/torch/kqual_torch_ops.py, keyed by the contract's name) and declared contracts
// whose reference is a PyTorch function. Timed by a Python timing worker (tools/torch/timing_worker.py,
// a separate process) under kqual's timing rules: CUDA events around one replay of a CUDA graph that
// holds only the operation's kernels (Python dispatch and output allocation outside the window,
// measured apart as the Python overhead), the same L2 flush and clock guard, on the same input values
// as the candidate (files written here from the same prepared cases). The candidate is timed against
// them across processes as `kqual compare` times its sides: blocks in the order A B B A (A the
// candidate in kqual's worker on the same two datasets, B the PyTorch worker), bootstrap CIs, "no
// difference" inside the margin. Their outputs are checked against the contract's reference: a wrong
// baseline is reported, never "the fastest". torch.compile's compilation is reported apart, as a
// startup cost. The fidelity path times the candidate's own cubin through the PyTorch worker's path
// (time_cubin_through_torch): the two paths must agree on the same kernel.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kqual/bench/timing.hpp"
#include "kqual/core/json.hpp"
#include "kqual/worker/protocol.hpp"

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

// The built-in contracts the PyTorch worker runs (tools/torch/kqual_torch_ops.py, OPS: one entry each): the
// rows of contract::builtin_contracts() marked torch_op.
std::vector<std::string> torch_builtins();

// How PyTorch runs a contract's operation: a built-in's one-liner (by the contract's name) or a
// declared contract's PyTorch reference.
struct TorchOperation {
  std::string builtin;                      // a name of torch_builtins(), or "" for a reference
  std::optional<TorchReference> reference;  // set when builtin is ""
  std::string describe() const;             // "the built-in softmax" / "reference.py:gelu"
};
// nullopt: PyTorch has no form of this contract here (a declared contract with a NumPy reference).
std::optional<TorchOperation> torch_operation_of(const contract::Contract& c);

// torch.compile's mode, from KQUAL_TORCH_COMPILE_MODE ("" or unset: "default"; also
// "max-autotune-no-cudagraphs"). The modes with Inductor's own CUDA graphs ("reduce-overhead",
// "max-autotune") would nest inside the worker's graph: Error(usage) naming the variable and the choices.
std::string parse_torch_compile_mode(const char* value);
std::string torch_compile_mode();  // parse_torch_compile_mode(getenv("KQUAL_TORCH_COMPILE_MODE"))

// Why the phase does not run, as its status line ("not run: ..."), decided before any process
// starts; "" when it runs. `requested` as parse_torch_baselines gives it.
std::string torch_phase_blocker(const contract::Contract& c, const TimingOptions& o,
                                const std::optional<std::vector<std::string>>& requested);
// The same from the worker's hello: "" when it can time `op`, else "not run: torch not importable
// (...)", "not run: torch sees no CUDA device", "not run: the PyTorch worker has no operation for ...".
std::string torch_hello_blocker(const json& hello, const TorchOperation& op);

// One tensor of a request: its name and the files of its two datasets (A and B).
struct TorchTensorFiles {
  std::string name;
  std::filesystem::path a, b;
};
// The size of each axis of `tensor` under `dims`, outermost first: Error(internal) naming the contract,
// the tensor and an axis `dims` lacks. What the PyTorch requests (baselines and submissions) give as a shape.
std::vector<std::int64_t> axis_sizes(const contract::Contract& c, const std::string& tensor, const std::vector<std::string>& axes,
                                     const contract::Dims& dims);
// The contract's scalars by name as a PyTorch call takes them: integers as integers, an f32 scalar
// rounded to f32 first (the value the kernel sees).
json torch_scalars(const contract::Contract& c);
// The fields every implementation's request shares at one shape: the op ("builtin": the contract's
// name, or the reference's scalars), each tensor's dtype (the contract's, for case dtype t) and shape
// (the contract's dims, outermost first), the dataset files, and the timing rules of `o` (flush,
// clock guard, samples per block). `dims`: every dim of the contract (CaseData::dims).
// Error(internal) naming a tensor whose shape uses a dim `dims` lacks.
json torch_shape_request(const contract::Contract& c, const TorchOperation& op, const contract::Dims& dims, DType t,
                         const std::vector<TorchTensorFiles>& inputs, const std::vector<TorchTensorFiles>& outputs,
                         const TimingOptions& o);
// The "cubin" launch of a fidelity request: the module and its one launch, each argument a pointer to
// a contract tensor or an integer of 4 or 8 bytes. Error(unsupported) naming what the fidelity path
// does not cover (several launches, a library call, scratch buffers).
json torch_cubin_launch(const std::filesystem::path& module, const std::vector<worker::Launch>& launches,
                        const std::vector<worker::Buffer>& scratch);

// Why these timing options cannot time PyTorch baselines ("" when they can): the timer (the worker
// times with CUDA events only) or the L2 flush mode (invalidate has no PyTorch equivalent).
std::string torch_timing_blocker(const TimingOptions& o);

// The Python overhead of one implementation at one shape, measured apart from its samples: the call
// without a graph (dispatch, allocation where the op allocates, launch) against the graph replay the
// samples time, by CUDA events after the same L2 flush and on the host clock (until the call returns).
struct TorchOverhead {
  std::string impl;                         // "eager", "compiled", "cubin"
  double direct_ms = 0, graph_ms = 0;       // [ms] medians, events
  double overhead_ms = 0;                   // [ms] direct_ms - graph_ms
  double direct_host_us = 0, replay_host_us = 0, overhead_host_us = 0;  // [us] medians, host clock
};

struct TorchShapeStartup {
  std::string shape;
  double compile_s = -1;  // the first torch.compile call at this shape (host clock, synchronised); < 0: not run
  std::map<std::string, std::string> window;  // impl → "cuda_graph" or "eager_call: <why>"
  std::vector<TorchOverhead> overhead;
};

struct TorchBaselineReport {
  bool ran = false;
  std::string status;  // the phase line: "done: ..." or "not run: <why>"
  std::string torch_version, device, clocks;
  std::string operation;     // what PyTorch runs: the expression, or the reference
  std::string compile_mode;  // torch.compile's mode ("default", ...)
  std::string precision;     // the matmul precision settings the worker made
  std::vector<TorchShapeStartup> startup;
  std::vector<std::string> reused;  // "<shape> (measured <time>)": shapes whose series were kept from an earlier run
  std::vector<std::string> notes;
  json to_json() const;
};

// Appends a PyTorch series to a shape: compared (A) against the candidate's samples from the same
// A B B A blocks (B); the fastest baseline moves to it only when it is faster and its outputs were
// right. `candidate_samples` empty: the series is added without a comparison.
void add_torch_series(ShapeResult& sh, Series s, const std::vector<double>& candidate_samples, double equivalence_margin);

// The phase: decides whether it runs (kinds nullopt: automatic, both where PyTorch runs the contract), starts the worker, times every shape
// of `tr` and adds the series. Never throws for a missing torch, GPU-less torch or refused mode: the
// status says "not run: ..." instead.
// remeasure: every shape measured, none of the series kept from earlier runs reused (torch_baseline_cache.hpp).
// early: the worker start_torch_baselines_early started (else one is started here).
struct TorchEarlyStart;
TorchBaselineReport run_torch_baselines(worker::Session& s, const build::BuiltCandidate& cand, TimingReport& tr,
                                        const TimingOptions& o, const std::optional<std::vector<std::string>>& kinds,
                                        bool remeasure = false, std::shared_ptr<TorchEarlyStart> early = {});
// The phase's PyTorch worker started now and greeted only when the phase runs, so that PyTorch's import and
// CUDA start overlap kqual's correctness checks (qualify); nullptr where the phase would not run. Dropped
// unused (an incorrect candidate), the worker is killed.
std::shared_ptr<TorchEarlyStart> start_torch_baselines_early(worker::Session& s, const build::BuiltCandidate& cand, const TimingOptions& o,
                                                             const std::optional<std::vector<std::string>>& kinds);

// The fidelity path: the candidate's own cubin timed through the PyTorch worker (one launch on
// torch's stream, captured in a CUDA graph, as the baselines are) and through kqual's worker, in
// A B B A blocks on the same two datasets, per shape of o.shapes (the contract's benchmark shapes
// when empty). The two must agree: a ratio away from 1 means one of the paths measures something else.
struct TorchFidelityShape {
  std::string shape;
  std::string error;  // why this shape has no comparison; "" when it has one
  std::string window;  // the PyTorch path's window ("cuda_graph", or "eager_call: <why>")
  std::vector<double> torch_path_ms, kqual_path_ms;
  stats::Comparison torch_vs_kqual;  // A kqual's path, B the PyTorch path: estimate = median(torch) / median(kqual)
  bool outputs_verified = false;     // the PyTorch path's outputs matched the contract's reference
  std::vector<TorchOverhead> overhead;
};
struct TorchFidelityReport {
  std::string status;  // "done: ..." or "not run: <why>"
  std::string torch_version, device;
  std::vector<TorchFidelityShape> shapes;
  json to_json() const;
};
TorchFidelityReport time_cubin_through_torch(worker::Session& s, const build::BuiltCandidate& cand, const TimingOptions& o);

// One sentence on eager / compiled / custom at the largest timed shape ("" without PyTorch series),
// e.g. "At the largest shape (n=...), torch_compiled is fastest: the candidate takes 1.12x its time ...".
std::string torch_largest_shape_verdict(const TimingReport& tr);

// Per shape with PyTorch series: "n=...: eager 1.23 ms, compiled 0.98 ms, custom 0.91 ms (fastest: ...)".
std::vector<std::string> torch_shape_lines(const TimingReport& tr);

}  // namespace kqual::bench
