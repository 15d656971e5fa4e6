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

std::vector<std::string> contract_names() { return {"residual_add_relu", "transpose", "softmax", "gemm", "exclusive_scan", "reduce_sum"}; }

const Contract& find_contract(const std::string& name) {
  if (name == "residual_add_relu") return residual_add_relu_contract();
  if (name == "transpose") return transpose_contract();
  if (name == "softmax") return softmax_contract();
  if (name == "gemm") return gemm_contract();
  if (name == "exclusive_scan") return exclusive_scan_contract();
  if (name == "reduce_sum") return reduce_sum_contract();
  if (const Contract* d = find_declared_contract(name)) return *d;
  throw_error(ErrorKind::input, fmt::format("unknown contract '{}' (built in: {}; declared contracts are looked up as "
                                            "{}/contract.toml and {}.toml in the folders of --contracts and $KQUAL_CONTRACTS "
                                            "and in the project's contracts/ folder)",
                                            name, fmt::join(contract_names(), ", "), name, name));
}

}  // namespace kqual::contract
