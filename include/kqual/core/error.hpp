#pragma once
// One error family for the whole library (cf. nvbench's NVBENCH_CUDA_CALL): every failure carries
// what was being done, where, and — for CUDA — the call text and the error's name and string.
// Library code throws; only tools/kqual/main turns an Error into an exit code.
#include <stdexcept>
#include <string>

namespace kqual {

enum class ErrorKind {
  usage,        // bad command line
  input,        // bad file from the user: manifest, artifact, profile, results
  unsupported,  // a request outside a contract's or candidate's domain
  cuda,         // a CUDA driver call failed
  nvrtc,        // NVRTC failed (compile errors carry the log)
  worker,       // a worker process crashed, hung or broke protocol
  io,           // file system, process
  internal,     // a bug in kqual
};

const char* to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message);
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] void throw_error(ErrorKind kind, std::string message);
// "file:line: <call> failed: <name> (<string>)" — out of line so the macros stay small.
[[noreturn]] void throw_call_error(ErrorKind kind, const char* file, int line, const char* call,
                                   const std::string& name, const std::string& description);

}  // namespace kqual
