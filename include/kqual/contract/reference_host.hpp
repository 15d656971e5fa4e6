#pragma once
// The processes a run computes references in. A contract holds none: whoever computes references
// (check/reference.cpp for a session's run, `kqual contracts --verify`, a test) makes one host and
// passes it to Contract::reference; it lives as long as that run and ends every process it started.
// Built-in contracts compute on the CPU and ignore it; a declared contract's reference runs in its
// Python reference process, one per contract, started here on first use (python_reference.hpp).
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace kqual::contract {

namespace declared {
class PythonReference;
struct Spec;
}  // namespace declared

class ReferenceHost {
 public:
  ReferenceHost();
  ~ReferenceHost();  // each process's group killed and reaped; never throws
  ReferenceHost(const ReferenceHost&) = delete;
  ReferenceHost& operator=(const ReferenceHost&) = delete;

  // The Python reference process of this declared contract (its file and its reference's file,
  // function and kind), made on first use; it starts on its first evaluation. Thread-safe: each
  // process answers one evaluation at a time.
  declared::PythonReference& python(const declared::Spec& spec);
  // Reference processes started so far, restarts included (a run starts one per declared contract).
  int processes_started() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<declared::PythonReference>> python_;
};

}  // namespace kqual::contract
