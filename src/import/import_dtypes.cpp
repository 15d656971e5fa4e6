// The tensor dtypes the importers take, and what follows from each where the source is silent
// (import_common.hpp): exact comparison for integers and bool, an fp8 output's least tolerance, the
// values of integer and bool data inputs.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

#include "import_common.hpp"

namespace kqual::contract::detail {

namespace {

// Peer spelling -> kqual's word. fp4 (float4_e2m1, packed as uint8 by some peers only when they say
// so), float8_e4m3fnuz / e5m2fnuz (no NaN encoding shared with CUDA's types) and complex are not here.
constexpr std::array<std::pair<const char*, const char*>, 12> kImportedDtypes{{{"float32", "f32"},
                                                                               {"bfloat16", "bf16"},
                                                                               {"float64", "f64"},
                                                                               {"float16", "f16"},
                                                                               {"float8_e4m3fn", "e4m3"},
                                                                               {"float8_e5m2", "e5m2"},
                                                                               {"int8", "i8"},
                                                                               {"uint8", "u8"},
                                                                               {"int32", "i32"},
                                                                               {"int64", "i64"},
                                                                               {"uint32", "u32"},
                                                                               {"bool", "bool"}}};

}  // namespace

std::string imported_dtype(const std::string& peer) {
  for (const auto& [p, k] : kImportedDtypes)
    if (peer == p) return k;
  return "";
}

std::string imported_dtype_names() {
  std::vector<std::string> v;
  for (const auto& [p, k] : kImportedDtypes) v.push_back(p);
  return fmt::format("{}", fmt::join(v, ", "));
}

bool is_exact_dtype(const std::string& kq) {
  return kq == "i8" || kq == "u8" || kq == "i32" || kq == "i64" || kq == "u32" || kq == "bool";
}

bool is_fp8_dtype(const std::string& kq) { return kq == "e4m3" || kq == "e5m2"; }

Fp8Floor fp8_floor(const std::string& kq) {
  if (kq == "e4m3") return {std::ldexp(1.0, -9), std::ldexp(1.0, -3)};
  if (kq == "e5m2") return {std::ldexp(1.0, -16), std::ldexp(1.0, -2)};
  return {};
}

std::string exact_input_values(const std::string& kq) {
  if (kq == "i8") return "{ dist = \"int\", lo = -128, hi = 127 }";
  if (kq == "u8") return "{ dist = \"int\", lo = 0, hi = 255 }";
  if (kq == "bool") return "{ dist = \"mask\", p = 0.5 }";
  return "";
}

}  // namespace kqual::contract::detail
