// The processes a run computes references in (kqual/contract/reference_host.hpp).
#include "kqual/contract/reference_host.hpp"

#include "declared/declared_spec.hpp"
#include "declared/python_reference.hpp"

namespace kqual::contract {

ReferenceHost::ReferenceHost() = default;
ReferenceHost::~ReferenceHost() = default;  // each PythonReference's Child kills its group and reaps it

declared::PythonReference& ReferenceHost::python(const declared::Spec& spec) {
  // Keyed by what the process is started with (and the contract file its errors name), not by the
  // Spec's address: a contract loaded again shares the process, and a new one at an old address
  // never meets a stale one.
  const std::string key = spec.file.string() + '\n' + spec.reference.file.string() + '\n' + spec.reference.function + '\n' +
                          spec.reference.kind;
  std::lock_guard<std::mutex> lock(mu_);
  auto& p = python_[key];
  if (!p) p = std::make_unique<declared::PythonReference>();
  return *p;
}

int ReferenceHost::processes_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [key, p] : python_) n += p->processes_started();
  return n;
}

}  // namespace kqual::contract
