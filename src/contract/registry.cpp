#include <fmt/format.h>

#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract {

const Contract& residual_add_relu_contract();  // residual_add_relu.cpp
const Contract& transpose_contract();          // transpose.cpp
const Contract& softmax_contract();            // softmax.cpp
const Contract& gemm_contract();               // gemm.cpp

bool Supports::supports(DType t) const {
  for (DType d : dtypes)
    if (d == t) return true;
  return false;
}

std::vector<std::string> contract_names() { return {"residual_add_relu", "transpose", "softmax", "gemm"}; }

const Contract& find_contract(const std::string& name) {
  if (name == "residual_add_relu") return residual_add_relu_contract();
  if (name == "transpose") return transpose_contract();
  if (name == "softmax") return softmax_contract();
  if (name == "gemm") return gemm_contract();
  throw_error(ErrorKind::input, fmt::format("unknown contract '{}' (known: {})", name, fmt::join(contract_names(), ", ")));
}

}  // namespace kqual::contract
