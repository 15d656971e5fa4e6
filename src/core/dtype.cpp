#include "kqual/core/dtype.hpp"

#include "kqual/core/enum_names.hpp"

namespace kqual {

namespace {

constexpr EnumNames<DType, 12> kDTypeNames{{{
    {DType::f32, "f32"}, {DType::bf16, "bf16"}, {DType::f16, "f16"}, {DType::f64, "f64"},
    {DType::i32, "i32"}, {DType::i64, "i64"}, {DType::u32, "u32"}, {DType::i8, "i8"},
    {DType::u8, "u8"}, {DType::e4m3, "e4m3"}, {DType::e5m2, "e5m2"}, {DType::boolean, "bool"}}}};

// What Definitions, KernelBench captures and PyTorch call them.
constexpr EnumNames<DType, 15> kDTypeAliases{{{
    {DType::f32, "float32"}, {DType::f32, "float"}, {DType::bf16, "bfloat16"}, {DType::f16, "float16"},
    {DType::f16, "half"}, {DType::f64, "float64"}, {DType::f64, "double"}, {DType::i32, "int32"},
    {DType::i64, "int64"}, {DType::u32, "uint32"}, {DType::i8, "int8"}, {DType::u8, "uint8"},
    {DType::e4m3, "float8_e4m3fn"}, {DType::e5m2, "float8_e5m2"}, {DType::boolean, "boolean"}}}};

}  // namespace

std::string_view to_string(DType t) { return kDTypeNames.name(t, "?"); }

std::optional<DType> parse_dtype(std::string_view s) {
  if (auto t = kDTypeNames.parse(s)) return t;
  if (auto t = kDTypeAliases.parse(s)) return t;
  if (s == "fp8_e4m3") return DType::e4m3;
  if (s == "fp8_e5m2") return DType::e5m2;
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16 || t == DType::f64 || t == DType::e4m3 || t == DType::e5m2;
}
bool is_integral(DType t) { return !is_floating(t); }

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: case DType::u32: return 4;
    case DType::bf16: case DType::f16: return 2;
    case DType::f64: case DType::i64: return 8;
    case DType::i8: case DType::u8: case DType::e4m3: case DType::e5m2: case DType::boolean: return 1;
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
    case DType::i8: return "signed char";
    case DType::u8: return "unsigned char";
    case DType::e4m3: return "__nv_fp8_e4m3";
    case DType::e5m2: return "__nv_fp8_e5m2";
    case DType::boolean: return "bool";
  }
  return "?";
}

}  // namespace kqual
