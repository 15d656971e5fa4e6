#include <fmt/format.h>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract {

const Contract& residual_add_relu_contract();  // builtin/residual_add_relu.cpp
const Contract& transpose_contract();          // builtin/transpose.cpp
const Contract& softmax_contract();            // builtin/softmax.cpp
const Contract& gemm_contract();               // builtin/gemm.cpp
const Contract& exclusive_scan_contract();     // builtin/exclusive_scan.cpp
const Contract& reduce_sum_contract();         // builtin/reduce_sum.cpp

bool Supports::supports(DType t) const {
  for (DType d : dtypes)
    if (d == t) return true;
  return false;
}

namespace {
constexpr BuiltinContract kBuiltins[] = {
    {"residual_add_relu", residual_add_relu_contract, true}, {"transpose", transpose_contract, true},
    {"softmax", softmax_contract, true},                     {"gemm", gemm_contract, true},
    {"exclusive_scan", exclusive_scan_contract, true},       {"reduce_sum", reduce_sum_contract, true},
};
}  // namespace

std::span<const BuiltinContract> builtin_contracts() { return kBuiltins; }

std::vector<std::string> contract_names() {
  std::vector<std::string> out;
  for (const auto& b : kBuiltins) out.emplace_back(b.name);
  return out;
}

const Contract& find_contract(const std::string& name) {
  for (const auto& b : kBuiltins)
    if (name == b.name) return b.make();
  if (const Contract* d = find_declared_contract(name)) return *d;
  throw_error(ErrorKind::input, fmt::format("unknown contract '{}' (built in: {}; no declared contract of that name is "
                                            "loaded: declared contracts are found as {}/contract.toml and {}.toml in the "
                                            "folders of --contracts and $KQUAL_CONTRACTS and in the project's contracts/ folder)",
                                            name, fmt::join(contract_names(), ", "), name, name));
}

}  // namespace kqual::contract
