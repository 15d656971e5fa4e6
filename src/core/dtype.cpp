#include "kqual/core/dtype.hpp"

namespace kqual {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u32: return "u32";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i32, DType::i64, DType::u32})
    if (to_string(t) == s) return t;
  if (s == "float32" || s == "float") return DType::f32;
  if (s == "bfloat16") return DType::bf16;
  if (s == "float16" || s == "half") return DType::f16;
  if (s == "int32") return DType::i32;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::bf16: case DType::f16: return 2;
    case DType::f64: case DType::i64: return 8;
  }
  return 0;
}

std::string_view cxx_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::bf16: return "__nv_bfloat16";
    case DType::f16: return "__half";
    case DType::f64: return "double";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::u32: return "unsigned";
  }
  return "?";
}

}  // namespace kqual
