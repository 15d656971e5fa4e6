#pragma once
// A KernelBench problem module (`class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`, module-
// level size constants) as a declared contract folder whose reference is the module's forward
// (docs/kernelbench.md). Two halves, kept apart so the translation is testable without torch:
//   capture:   tools/torch/kernelbench_capture.py, run with PyTorch, prints one JSON object (shapes and
//              dtypes on the meta device, which dims move with which module-level constant, sampled
//              values at scaled-down sizes, whether forward is random);
//   translate: that JSON → contract.toml + reference.py (pure; refusals by name).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::contract {

struct KernelBenchImportOptions {
  std::filesystem::path problem;        // PROBLEM.py
  std::filesystem::path out;            // the contract folder to write (must not exist)
  std::filesystem::path capture;        // a capture JSON to translate instead of running PyTorch (--capture)
  std::string name;                     // the contract's name (default kb_<file stem>)
  std::int64_t max_elements = std::int64_t(1) << 26;  // largest tensor of the benchmark shape (scaled down to it)
  double atol = -1, rtol = -1;          // < 0: KernelBench's own (1e-4 for f32/f64 outputs, 1e-2 for bf16)
  std::uint64_t seed = 0;               // torch.manual_seed before Model(*get_init_inputs())
};

struct KernelBenchImport {
  std::string name;
  std::filesystem::path out;
  std::string contract_toml, reference_py;
  std::string bench_shape;              // "batch_size=4096,dim=12288"
  std::vector<std::string> notes;       // what was inferred, scaled or held fixed, and why
};

// The largest tensor of a capture at the benchmark shape is cut to at most this many elements for
// value sampling (the capture script's SAMPLE_CAP).
inline constexpr std::int64_t kKernelBenchSampleCap = std::int64_t(1) << 16;

// Runs the capture script with the reference interpreter (reference_python()). Throws Error(input):
// "PyTorch is not importable with <python> ..." without torch; the script's error (code and text) for
// a module that does not import, is not a problem, or cannot run on the meta device.
json capture_kernelbench(const std::filesystem::path& problem, std::int64_t sample_cap = kKernelBenchSampleCap);

// The translation alone: no file is read or written. Throws Error(input) naming the problem file and
// the construct for what cannot be expressed (a random forward, a tensor of an unsupported dtype, a
// non-tensor non-number input, a one-element output, a shape over max_elements with no axis to scale).
KernelBenchImport translate_kernelbench(const json& capture, const KernelBenchImportOptions& o);

// Capture (or read o.capture), translate, write out/{contract.toml, reference.py, problem.py,
// capture.json} whole or not at all, and load the contract back.
KernelBenchImport import_kernelbench(const KernelBenchImportOptions& o);

// A Python tool shipped in tools/torch/ ($KQUAL_HOME/tools/torch/<file>, else the nearest folder above
// the kqual executable or the working directory holding tools/torch/<file>). Throws Error(input) when
// it cannot be found.
std::filesystem::path torch_tool(const std::string& file);

}  // namespace kqual::contract
