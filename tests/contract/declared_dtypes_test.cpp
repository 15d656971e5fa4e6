// Declared contracts in the narrow and integer dtypes: the quantized error model (the reference's
// real value rounded by the declared rule, either neighbour only near a boundary, never at one),
// f16 / fp8 / i8 / bool tensors through the reference process, and refusals of what the model
// cannot mean. Kernels are emulated on the CPU (their stored bytes); the GPU tests run real ones.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/narrow_float.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

// y = quantize(x * k): i8, half to even, clamped to [-127, 127]; x holds halves (ties everywhere)
// in the `ties` family and values past the clamp in `wide`.
std::string quantizer(const std::string& name, const std::string& error, const std::string& out_dtype = "i8",
                      const std::string& k = "1.0") {
  return R"(
[contract]
name = ")" + name + R"("
summary = "y = x * k, quantized"
[axes.n]
range = [1, 1000000]
hints = [32]
base = 600
[scalars.k]
dtype = "f32"
value = )" + k + R"(
[tensors.x]
role = "input"
shape = ["n"]
dtype = "f32"
values = { dist = "normal", std = 40 }
[tensors.y]
role = "output"
shape = ["n"]
dtype = ")" + out_dtype + R"("
error = )" + error + R"(
[dtypes]
all = ["f32"]
[families.ties]
x = { dist = "int", lo = -254, hi = 254, scale = 0.5 }
[families.wide]
x = { dist = "normal", std = 1000 }
)" + test_util::cost_and_reference_tables("n");
}
const char* kTimesK = "def f(x, k):\n    return x * k\n";

using Emulated = std::function<void(double x, std::uint8_t* out, std::size_t i)>;

// The first failing case's class over the contract's cases ("" = accepted).
std::string judge(const Contract& c, DType out, const Emulated& k) {
  Supports s = test_util::f32_only();
  s.min_alignment_bytes = 4;
  for (const auto& cs : c.correctness_cases(s, 7, false)) {
    CaseData d = c.make_case(cs);
    auto want = c.reference(d, test_util::run_host());
    std::vector<std::uint8_t> got(want.at(0).bytes.size(), 0xA5);
    for (std::size_t i = 0; i < std::size_t(want.at(0).elements); ++i) k(element_as_double(DType::f32, d.inputs[0].bytes.data(), i), got.data(), i);
    Comparison cmp = c.compare(want.at(0), got.data(), 0xA5);
    if (!cmp.ok) return cmp.code + ": " + cmp.detail;
    (void)out;
  }
  return "";
}

void store_i8(std::uint8_t* out, std::size_t i, double q) { out[i] = std::uint8_t(std::int8_t(q)); }

TEST(QuantizedModel, HalfEvenInt8QuantizerAcceptsTheRuleAndRejectsItsNeighbours) {
  KQUAL_NEED_NUMPY();
  test_util::ContractFolder f(quantizer("q8", R"({ model = "quantized", rounding = "half_even", clamp = [-127, 127] })"), kTimesK, "q8");
  const Contract& c = load_declared_contract(f.file);
  auto clamp127 = [](double q) { return std::clamp(q, -127.0, 127.0); };
  EXPECT_EQ(judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) { store_i8(o, i, clamp127(std::nearbyint(float(x)))); }), "");
  // f32 arithmetic a little off the real value: near (not at) a boundary either neighbour is right.
  // Exact ties (the halves of the `ties` family) stay exact in any f32 arithmetic of x * 1: there the
  // rule decides, as the next kernel shows.
  EXPECT_EQ(judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) {
              const bool tie = x * 2 == std::floor(x * 2);
              store_i8(o, i, clamp127(std::nearbyint(tie ? float(x) : float(x) * (1.0f + 0x1p-22f))));
            }), "");
  const std::string away = judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) { store_i8(o, i, clamp127(std::round(x))); });
  EXPECT_EQ(away.substr(0, away.find(':')), "wrong_result") << "ties rounded away from zero must be rejected: " << away;
  const std::string trunc = judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) { store_i8(o, i, clamp127(std::trunc(x))); });
  EXPECT_EQ(trunc.substr(0, trunc.find(':')), "wrong_result") << trunc;
  // No clamp: values past 127 wrap around in the byte.
  const std::string wrap = judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) {
    o[i] = std::uint8_t(std::int64_t(std::nearbyint(x)));
  });
  EXPECT_EQ(wrap.substr(0, wrap.find(':')), "wrong_result") << wrap;
  // A clamp to the dtype's -128 instead of the contract's symmetric -127.
  const std::string asym = judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) {
    store_i8(o, i, std::clamp(std::nearbyint(x), -128.0, 127.0));
  });
  EXPECT_EQ(asym.substr(0, asym.find(':')), "wrong_result") << asym;
}

// k = 1 + 2^-23: every half times k lies just past its tie, closer than f32 arithmetic can tell, so
// a kernel's f32 product may land on the tie or past it: either neighbour is right there, and only there.
TEST(QuantizedModel, NearABoundaryEitherNeighbourIsRight) {
  KQUAL_NEED_NUMPY();
  test_util::ContractFolder f(quantizer("q8k", R"({ model = "quantized", rounding = "half_even", clamp = [-127, 127] })", "i8", "1.00000011920928955078125"),
           "def f(x, k):\n    return x * k\n", "q8k");
  const Contract& c = load_declared_contract(f.file);
  const float k = 1.0f + 0x1p-23f;
  auto clamp127 = [](double q) { return std::clamp(q, -127.0, 127.0); };
  // The exact product rounds up at every half (it is past the tie); an f32 product lands on the tie
  // for some and rounds to even: both are admitted.
  EXPECT_EQ(judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) { store_i8(o, i, clamp127(std::nearbyint(x * double(k)))); }), "");
  EXPECT_EQ(judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) { store_i8(o, i, clamp127(std::nearbyint(float(x) * k))); }), "");
  // Away from a boundary the neighbour is still wrong.
  const std::string off = judge(c, DType::i8, [&](double x, std::uint8_t* o, std::size_t i) {
    store_i8(o, i, clamp127(std::nearbyint(x * double(k)) + (std::fabs(x) > 3 ? 1 : 0)));
  });
  EXPECT_EQ(off.substr(0, off.find(':')), "wrong_result") << off;
}

TEST(QuantizedModel, Fp8SaturatesOrNotAsDeclared) {
  KQUAL_NEED_NUMPY();
  test_util::ContractFolder sat(quantizer("e4", R"({ model = "quantized", saturate = true })", "e4m3"), kTimesK, "e4");
  const Contract& c = load_declared_contract(sat.file);
  auto fp8 = [](Overflow o) {
    return [o](double x, std::uint8_t* out, std::size_t i) { out[i] = std::uint8_t(encode_narrow(kE4M3, float(x), o)); };
  };
  EXPECT_EQ(judge(c, DType::e4m3, fp8(Overflow::saturate)), "");
  const std::string nosat = judge(c, DType::e4m3, fp8(Overflow::to_special));
  EXPECT_EQ(nosat.substr(0, nosat.find(':')), "nan_policy") << "NaN past 448 where the contract saturates: " << nosat;
  // e5m2 bits stored where e4m3 is declared.
  const std::string e5 = judge(c, DType::e4m3, [](double x, std::uint8_t* out, std::size_t i) {
    out[i] = std::uint8_t(encode_narrow(kE5M2, x, Overflow::saturate));
  });
  EXPECT_NE(e5, "");

  test_util::ContractFolder nan(quantizer("e4n", R"({ model = "quantized" })", "e4m3"), kTimesK, "e4n");
  const Contract& n = load_declared_contract(nan.file);
  EXPECT_EQ(judge(n, DType::e4m3, fp8(Overflow::to_special)), "");
  EXPECT_NE(judge(n, DType::e4m3, fp8(Overflow::saturate)), "");
}

TEST(QuantizedModel, WhatTheModelCannotMeanIsRefusedByName) {
  KQUAL_NEED_NUMPY();
  auto error_of = [](const std::string& toml) {
    test_util::ContractFolder f(toml, kTimesK, "bad");
    try {
      (void)load_declared_contract(f.file);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(quantizer("bad", R"({ model = "quantized", rounding = "stochastic" })")).find("unknown rounding \"stochastic\""),
            std::string::npos);
  EXPECT_NE(error_of(quantizer("bad", R"({ model = "quantized", clamp = [5, -5] })")).find("is empty"), std::string::npos);
  EXPECT_NE(error_of(quantizer("bad", R"({ model = "quantized", rounding = "floor" })", "f16")).find("rounding and clamp are for integer"),
            std::string::npos);
  EXPECT_NE(error_of(quantizer("bad", R"({ model = "ulps", ulps = 1 })")).find("an integer output (i8)"), std::string::npos);
  EXPECT_NE(error_of(quantizer("bad", R"({ model = "ulps", ulps = 1, band = 3 })", "f16")).find("not a parameter of model \"ulps\""),
            std::string::npos);
}

// A reference value a quantized integer output cannot hold, without saturate or clamp: the contract's error.
TEST(QuantizedModel, AnUnclampedValuePastTheDtypeIsTheContractsError) {
  KQUAL_NEED_NUMPY();
  test_util::ContractFolder f(quantizer("q8w", R"({ model = "quantized" })"), kTimesK, "q8w");
  const Contract& c = load_declared_contract(f.file);
  try {
    (void)judge(c, DType::i8, [](double x, std::uint8_t* o, std::size_t i) { store_i8(o, i, std::clamp(std::nearbyint(x), -128.0, 127.0)); });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("outside i8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kqual::contract
