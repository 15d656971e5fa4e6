#pragma once
// A declared contract's trusted reference: a NumPy (or PyTorch) function evaluated in float64 in a
// separate Python process, never where a candidate kernel runs. The process belongs to the run, not
// to the contract: a ReferenceHost (kqual/contract/reference_host.hpp) holds one per contract,
// started on the first evaluation and kept until the host ends. Tensors go through files in a
// private scratch folder (/dev/shm when it exists); requests and replies are JSON lines.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "declared_spec.hpp"
#include "kqual/core/child.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract::declared {

// The Python text the process runs (python_reference_driver.cpp).
const char* reference_driver_source();
// The first lines of every `python3 -c` kqual runs for a reference (the driver, the NumPy probe):
// `-c` puts the working directory first on sys.path, and the working directory may be a candidate's
// tree, whose numpy.py or json.py would then run inside the trusted reference process. Only `sys`
// (built in) is imported before the entry is removed.
constexpr const char* kIsolatedPrelude = "import sys\nsys.path[:] = [p for p in sys.path if p not in ('', '.')]\n";

struct RefOutput {
  std::vector<double> f;        // floating outputs: float64 values
  std::vector<std::int64_t> i;  // integer outputs: exact
};

struct Evaluation {
  std::map<std::string, RefOutput> values;     // per output
  std::map<std::string, RefOutput> magnitude;  // per output: the reference on |inputs| (when asked for)
  // per floating output: [reference] alternative's values on the same inputs (when the contract names one)
  std::map<std::string, RefOutput> alternative;
  // Non-empty when the reference ran its float inputs at float32: a torch reference that mixes
  // float32 tensors of its own with float64 inputs (PyTorch's error, which made the driver retry).
  std::string reference_float32;
};

class PythonReference {
 public:
  PythonReference() = default;
  ~PythonReference();
  PythonReference(const PythonReference&) = delete;
  PythonReference& operator=(const PythonReference&) = delete;

  // The outputs of s's reference for these inputs (stored at their dtypes; widened exactly to
  // float64, integers to int64) and axes; with_magnitude: also the reference on |inputs| (the
  // magnitude of a reduction bound), in the same call (the inputs are handed over once). The process
  // starts on the first call, and again after one that ended it. Always the same contract's
  // reference (ReferenceHost::python keys it so).
  // Throws Error(input) "contract <file>: reference <py>:<function> on case <id>: <why>" when the
  // function raises, returns the wrong shape or a non-numeric dtype, or an integer output that is
  // not integral; and when the process cannot be started, dies, or gives no answer in time.
  // rng_seed seeds NumPy's, PyTorch's and Python's global generators before the call: a reference
  // that draws random numbers answers differently for another seed (DeclaredContract's check).
  Evaluation evaluate(const Spec& s, const std::vector<Tensor>& inputs, const Dims& dims, bool with_magnitude,
                      const std::string& case_id, const std::map<std::string, DType>& dtypes, std::uint64_t rng_seed = 0);
  // For each tensor of `alternatives` (an input of s with other values): does the reference, run on
  // `inputs` with that one input replaced, give any output that differs from its outputs on `inputs`
  // (exactly, NaN equal to NaN, as kqual reads them)? The base inputs are handed over once, and the
  // reference runs once per alternative in its process (the non-triviality check's every-input-moves
  // test). Throws as evaluate does.
  std::map<std::string, bool> moves(const Spec& s, const std::vector<Tensor>& inputs, const std::vector<Tensor>& alternatives,
                                    const Dims& dims, const std::string& case_id, const std::map<std::string, DType>& dtypes);
  // The inputs of s whose values say source = "generator", made by its [generator] function for these
  // axes, family and seed (NumPy's, PyTorch's and Python's global generators seeded with it too), by
  // name: integers and bool as int64 (i), floats as float64 (f). The driver checks each one's dtype
  // kind and shape; the caller checks its values against the declaration (declared_generated.cpp).
  // Throws Error(input) "contract <file>: generator <py>:<function> on case <id>: <why>" when the
  // function raises or returns something else, and as evaluate does when the process fails.
  std::map<std::string, RefOutput> generate(const Spec& s, const Dims& dims, const std::string& family, std::uint32_t seed,
                                            const std::string& case_id, const std::map<std::string, DType>& dtypes);
  int processes_started() const { return started_.load(); }

 private:
  void start(const Spec& s);
  std::string call(const Spec& s, const std::string& line, const std::string& case_id);
  // One request and its parsed reply; a reply that is not JSON or not ok throws as evaluate says
  // (generator: as generate says).
  json answer(const Spec& s, const json& req, const std::string& case_id, bool generator);
  void stop() { child_.reset(); }
  [[noreturn]] void fail(const Spec& s, const std::string& case_id, const std::string& why) const;
  [[noreturn]] void fail_generator(const Spec& s, const std::string& case_id, const std::string& why) const;
  // The process ended (or is ending): its stderr, once it has ended, for the error message.
  std::string stderr_after_exit();

  std::mutex mu_;
  std::unique_ptr<Child> child_;
  std::unique_ptr<ScratchDir> dir_;
  std::uint64_t calls_ = 0;
  std::atomic<int> started_{0};
};

}  // namespace kqual::contract::declared
