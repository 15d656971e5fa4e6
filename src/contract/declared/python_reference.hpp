#pragma once
// A declared contract's trusted reference: a NumPy (or PyTorch) function evaluated in float64 in a
// separate Python process, never where a candidate kernel runs. One process per contract, kept for
// the session; tensors go through files in a private scratch folder (/dev/shm when it exists).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <vector>

#include "declared_spec.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract::declared {

struct RefOutput {
  std::vector<double> f;        // floating outputs: float64 values
  std::vector<std::int64_t> i;  // integer outputs: exact
};

struct Evaluation {
  std::map<std::string, RefOutput> values;     // per output
  std::map<std::string, RefOutput> magnitude;  // per output: the reference on |inputs| (when asked for)
};

class PythonReference {
 public:
  explicit PythonReference(const Spec& s) : s_(s) {}
  ~PythonReference();
  PythonReference(const PythonReference&) = delete;
  PythonReference& operator=(const PythonReference&) = delete;

  // The outputs for these inputs (stored at their dtypes; widened exactly to float64, integers to
  // int64) and axes; with_magnitude: also the reference on |inputs| (the magnitude of a reduction
  // bound), in the same call (the inputs are handed over once).
  // Throws Error(input) "contract <file>: reference <py>:<function> on case <id>: <why>" when the
  // function raises, returns the wrong shape or a non-numeric dtype, or an integer output that is
  // not integral; and when the process cannot be started or dies.
  Evaluation evaluate(const std::vector<Tensor>& inputs, const Dims& dims, bool with_magnitude, const std::string& case_id,
                      const std::map<std::string, DType>& dtypes);

 private:
  void start();
  std::string call(const std::string& line, const std::string& case_id);
  void stop();
  [[noreturn]] void fail(const std::string& case_id, const std::string& why) const;

  const Spec& s_;
  std::mutex mu_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;  // bytes read past the last reply line
  std::unique_ptr<ScratchDir> dir_;
  std::uint64_t calls_ = 0;
};

}  // namespace kqual::contract::declared
