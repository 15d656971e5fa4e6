// The bundled quantization contracts (fp8_e4m3_quantize, fp8_e4m3_dequantize, int8_row_quantize) on
// the CPU: every bundled candidate's manifest is read, its kernel's arithmetic emulated (the good
// source, or the good source with the manifest's one -DKQUAL_BUG_* define), run over every case its
// claims give (families included, no large cases), twice (the harness's two poison bytes), and judged
// as kqual judges a kernel's output: the good candidate accepted, each known-broken one rejected with
// its [expect] class. fp8 codes come from kqual::encode_narrow / decode_narrow, which agree with
// cvt.rn(.satfinite).e4m3x2.f32 and cvt.rn.f16x2.e4m3x2 bit for bit (core/narrow_float.hpp); the GPU
// runs the real kernels (kqual selftest).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kqual/build/manifest.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/dtype.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/narrow_float.hpp"
#include "kqual/worker/protocol.hpp"
#include "../../src/check/internal.hpp"
#include "builtin_emulation.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kQuantRepo = KQUAL_SOURCE_DIR;

// What an emulated kernel sees of a case: its inputs by name, the case's dims, whether the buffers
// start aligned (no start offset: the kernels take their vector paths only then), and the outputs
// to write, by name, poisoned.
struct KernelRun {
  const CaseData& d;
  std::map<std::string, std::vector<std::uint8_t>>& out;
  const std::uint8_t* in(const std::string& name) const {
    for (const auto& t : d.inputs)
      if (t.name == name) return t.bytes.data();
    throw std::runtime_error("no input " + name);
  }
  float f32(const std::string& name, std::size_t i) const { return float(element_as_double(DType::f32, in(name), i)); }
  std::int64_t dim(const std::string& a) const { return d.dims.at(a); }
  bool aligned() const { return d.spec.offset_elements == 0; }
};
using Kernel = std::function<void(const KernelRun&, const std::string& defect)>;

// The first rejection over the candidate's cases ("" = accepted): "<case id>: <code>: <detail>".
// Each case runs twice, with the harness's two poison bytes, the outputs written to files as the
// worker writes them and judged by the harness's own judge_runs (both runs against the reference,
// then against each other under the contract's run-to-run rule): emulation::judge_case.
std::string judge(const Contract& c, const Supports& s, const Kernel& k, const std::string& defect, std::uint64_t seed,
                  int* cases = nullptr) {
  ScratchDir dir("kqual-quant-test");
  for (const auto& cs : c.correctness_cases(s, seed, false)) {
    const CaseData d = c.make_case(cs);
    check::CaseResult res;
    if (!emulation::judge_case(c, s, cs, c.reference(d, test_util::run_host()),
                               [&](emulation::Outputs& out) { k(KernelRun{d, out}, defect); }, dir.path(), res))
      return cs.id + ": " + res.code + ": " + res.detail;
    if (cases) ++*cases;
  }
  return "";
}

std::string code_of(const std::string& verdict) {
  const std::size_t a = verdict.find(": ");
  if (a == std::string::npos) return verdict;
  const std::size_t b = verdict.find(':', a + 2);
  return verdict.substr(a + 2, b - a - 2);
}

// candidates/fp8_e4m3_quantize/good/kernel.cu: x * (1 / scale) in f32, paired satfinite conversions;
// eight elements per vector where x and q are aligned, the rest one by one.
void fp8_quantize_kernel(const KernelRun& l, const std::string& defect) {
  const std::int64_t n = l.dim("n");
  const float s = l.f32("scale", 0);
  const float k = defect == "KQUAL_BUG_MUL_SCALE" ? s : 1.0f / s;
  auto code = [&](float v) {
    if (defect == "KQUAL_BUG_TRUNCATE") v = f32_from_bits(f32_bits(v) & 0xFFF00000u);
    if (defect == "KQUAL_BUG_NO_SATURATION") return encode_narrow(kE4M3, v, Overflow::to_special);
    if (defect == "KQUAL_BUG_E5M2") return encode_narrow(kE5M2, v, Overflow::saturate);
    return encode_narrow(kE4M3, v, Overflow::saturate);
  };
  const std::int64_t written = l.aligned() && defect == "KQUAL_BUG_NO_TAIL" ? n / 8 * 8 : n;
  std::uint8_t* q = l.out.at("q").data();
  for (std::int64_t i = 0; i < written; ++i) q[i] = std::uint8_t(code(l.f32("x", std::size_t(i)) * k));
}

// candidates/fp8_e4m3_dequantize/good/kernel.cu: e4m3 -> f16 -> f32 (exact), one f32 multiplication.
void fp8_dequantize_kernel(const KernelRun& l, const std::string& defect) {
  const std::int64_t n = l.dim("n");
  const float s = l.f32("scale", 0);
  auto value = [&](std::uint8_t c) {
    float v;
    if (defect == "KQUAL_BUG_E5M2") v = float(decode_narrow(kE5M2, c));
    else if (defect == "KQUAL_BUG_NAN_AS_FINITE") v = f32_from_bits(std::uint32_t(c & 0x80u) << 24 | std::uint32_t(c & 0x7Fu) << 20) * 0x1p120f;
    else v = float(decode_narrow(kE4M3, c));
    return defect == "KQUAL_BUG_NO_SCALE" ? v : v * s;
  };
  const std::int64_t written = l.aligned() && defect == "KQUAL_BUG_NO_TAIL" ? n / 8 * 8 : n;
  const std::uint8_t* q = l.in("q");
  for (std::int64_t i = 0; i < written; ++i) store_element(DType::f32, l.out.at("y").data(), std::size_t(i), value(q[i]));
}

// candidates/int8_row_quantize/good/kernel.cu: one block of 256 threads per row; float4 per thread
// where cols % 4 == 0 and the rows start aligned, else one column per thread; the row max through
// the warps (per warp only, with KQUAL_BUG_WARP_MAX); rintf(clamp(x * (127 / max))).
void int8_row_quantize_kernel(const KernelRun& l, const std::string& defect) {
  const std::int64_t rows = l.dim("rows"), cols = l.dim("cols");
  const bool vec = cols % 4 == 0 && l.aligned();
  const float levels = defect == "KQUAL_BUG_SCALE_128" ? 128.0f : 127.0f;
  // The warp whose thread reads column j.
  auto warp_of = [&](std::int64_t j) { return int(((vec ? j / 4 : j) % 256) / 32); };
  for (std::int64_t r = 0; r < rows; ++r) {
    float m[8] = {};
    for (std::int64_t j = 0; j < cols; ++j) {
      float& w = m[defect == "KQUAL_BUG_WARP_MAX" ? warp_of(j) : 0];
      w = std::fmax(w, std::fabs(l.f32("x", std::size_t(r * cols + j))));
    }
    auto inv = [&](float mx) { return defect == "KQUAL_BUG_NO_ZERO_GUARD" || mx > 0 ? levels / mx : 0.0f; };
    store_element(DType::f32, l.out.at("scale").data(), std::size_t(r), m[0] / levels);
    for (std::int64_t j = 0; j < cols; ++j) {
      const float x = l.f32("x", std::size_t(r * cols + j));
      const float v = std::fmin(std::fmax(x * inv(m[defect == "KQUAL_BUG_WARP_MAX" ? warp_of(j) : 0]), -127.0f), 127.0f);
      const float c = defect == "KQUAL_BUG_ROUND_AWAY" ? std::round(v) : defect == "KQUAL_BUG_TRUNCATE" ? std::trunc(v) : std::nearbyint(v);
      l.out.at("q")[std::size_t(r * cols + j)] = std::uint8_t(std::int8_t(c));
    }
  }
}

// The one -DKQUAL_BUG_* define a known-broken manifest adds to the good source ("" for the good one).
std::string defect_of(const build::Manifest& m) {
  std::string d;
  for (const auto& o : m.nvrtc_options)
    if (o.rfind("-DKQUAL_BUG_", 0) == 0) d = o.substr(2);
  return d;
}

// Every bundled candidate of the contract: the good one accepted, each broken one rejected with its
// [expect] class; the broken ones are the good source plus exactly one define.
void check_bundled(const std::string& contract, const Kernel& k, std::size_t at_least_broken) {
  const fs::path dir = kQuantRepo / "candidates" / contract;
  const build::Manifest good = build::load_manifest(dir / "good");
  EXPECT_EQ(good.contract, contract);
  const Contract& c = good.resolved_contract();
  EXPECT_EQ(declared_file(c), fs::weakly_canonical(kQuantRepo / "contracts" / contract / "contract.toml"));
  // kqual's default seed (selftest's) and two others: the classes must not hang on one draw.
  for (std::uint64_t seed : {std::uint64_t(20261202), std::uint64_t(7), std::uint64_t(99)}) {
    int cases = 0;
    EXPECT_EQ(judge(c, good.supports, k, "", seed, &cases), "") << contract << "/good, seed " << seed;
    EXPECT_GT(cases, 40) << contract << ": the good candidate's claims leave few cases";
  }
  std::size_t broken = 0;
  for (const auto& e : fs::directory_iterator(dir / "broken")) {
    const build::Manifest m = build::load_manifest(e.path());
    ++broken;
    SCOPED_TRACE(contract + "/broken/" + e.path().filename().string());
    EXPECT_EQ(fs::weakly_canonical(m.source), fs::weakly_canonical(good.source));
    ASSERT_EQ(m.nvrtc_options.size(), 1u);
    const std::string defect = defect_of(m);
    ASSERT_FALSE(defect.empty()) << m.nvrtc_options.front();
    ASSERT_TRUE(m.expect_rejected_for.has_value());
    EXPECT_NE(read_text_file(good.source).find(defect), std::string::npos) << defect << " is not in the good source";
    std::vector<std::string> classes = m.expect_also_rejected_for;
    classes.push_back(*m.expect_rejected_for);
    for (std::uint64_t seed : {std::uint64_t(20261202), std::uint64_t(7), std::uint64_t(99)}) {
      const std::string v = judge(c, m.supports, k, defect, seed);
      EXPECT_NE(std::find(classes.begin(), classes.end(), code_of(v)), classes.end())
          << defect << ", seed " << seed << ": " << (v.empty() ? "accepted" : v);
    }
  }
  EXPECT_GE(broken, at_least_broken) << contract;
}

TEST(QuantContracts, Fp8QuantizeGoodAcceptedAndEachBrokenRejectedForItsClass) {
  KQUAL_NEED_NUMPY();
  check_bundled("fp8_e4m3_quantize", fp8_quantize_kernel, 3);
}

TEST(QuantContracts, Fp8DequantizeGoodAcceptedAndEachBrokenRejectedForItsClass) {
  KQUAL_NEED_NUMPY();
  check_bundled("fp8_e4m3_dequantize", fp8_dequantize_kernel, 3);
}

TEST(QuantContracts, Int8RowQuantizeGoodAcceptedAndEachBrokenRejectedForItsClass) {
  KQUAL_NEED_NUMPY();
  check_bundled("int8_row_quantize", int8_row_quantize_kernel, 3);
}

// The cases of one family, for the checks below that the families reach what their comments say.
std::vector<CaseSpec> family_cases(const Contract& c, const std::string& family) {
  Supports s;
  s.dtypes = c.dtypes();
  s.min_alignment_bytes = 1;
  std::vector<CaseSpec> v;
  for (const auto& cs : c.correctness_cases(s, 5, false))
    if (cs.family == family) v.push_back(cs);
  return v;
}

// The quantizer's families: saturation and +-Inf give +-448, NaN stays NaN, tiny quotients land on
// e4m3 subnormals and zero, and the ties family holds exact ties (the expected code an even one).
TEST(QuantContracts, Fp8QuantizeFamiliesReachTheirEdges) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kQuantRepo / "contracts/fp8_e4m3_quantize");
  std::map<std::string, int> seen;
  for (const char* family : {"saturation", "specials", "tiny", "ties"})
    for (const auto& cs : family_cases(c, family)) {
      const CaseData d = c.make_case(cs);
      const Tensor q = c.reference(d, test_util::run_host()).at(0);
      const double s = element_as_double(DType::f32, d.inputs[1].bytes.data(), 0);
      for (std::size_t i = 0; i < std::size_t(q.elements); ++i) {
        const double x = element_as_double(DType::f32, d.inputs[0].bytes.data(), i), v = x / s;
        const std::uint8_t code = q.bytes[i];
        if (std::isinf(x)) {
          EXPECT_EQ(code, x > 0 ? 0x7E : 0xFE) << cs.id << " [" << i << "]: +-Inf saturates to +-448";
          ++seen["inf"];
        } else if (std::isnan(x)) {
          EXPECT_TRUE(narrow_is_nan(kE4M3, code)) << cs.id;
          ++seen["nan"];
        } else if (std::fabs(v) > 464) {
          EXPECT_EQ(q.ref[i], std::copysign(448.0, v)) << cs.id;
          ++seen["saturated"];
        } else if (v != 0 && std::fabs(v) < 0x1p-6) {
          ++seen[q.ref[i] == 0 ? "to_zero" : "subnormal"];
        }
        if (std::string(family) == "ties" && std::fabs(v) >= 8 && encode_narrow(kE4M3, std::nextafter(v, 0.0)) != encode_narrow(kE4M3, std::nextafter(v, 2 * v))) {
          EXPECT_EQ(code & 1, 0) << cs.id << " [" << i << "]: the tie " << v << " rounds to an even code";
          EXPECT_EQ(q.bound[i], 0.0) << cs.id << ": an exact tie admits no neighbour";
          ++seen["tie"];
        }
      }
    }
  for (const char* k : {"inf", "nan", "saturated", "to_zero", "subnormal", "tie"}) EXPECT_GT(seen[k], 0) << k;
}

// dist = "bits" (the dequantizer's all_codes family): every one of the 256 e4m3 codes in one
// base-size case, NaN both ways included.
TEST(QuantContracts, BitsDrawEveryE4m3Code) {
  const Contract& c = load_declared_contract(kQuantRepo / "contracts/fp8_e4m3_dequantize");
  for (const auto& cs : family_cases(c, "all_codes")) {
    if (cs.dims.at("n") < 4096) continue;
    const CaseData d = c.make_case(cs);
    std::set<std::uint8_t> codes(d.inputs[0].bytes.begin(), d.inputs[0].bytes.end());
    EXPECT_EQ(codes.size(), 256u) << cs.id;
    return;
  }
  ADD_FAILURE() << "no all_codes case with n >= 4096";
}

TEST(QuantContracts, BitsAreRefusedWhereAValueCannotHoldThem) {
  ScratchDir dir("kqual-quant-test");
  fs::create_directories(dir.path() / "b");
  const fs::path file = dir.path() / "b" / "contract.toml";
  std::ofstream(file) << R"([contract]
name = "bits_i64"
summary = "y = x"
[axes.n]
range = [1, 100]
[tensors.x]
role = "input"
shape = ["n"]
values = { dist = "normal" }
[tensors.y]
role = "output"
shape = ["n"]
error = { model = "exact" }
[dtypes]
all = ["i64"]
[families.codes]
x = { dist = "bits" }
)" + test_util::cost_and_reference_tables("n");
  std::ofstream(dir.path() / "b" / "reference.py") << "def f(x):\n    return x\n";
  try {
    (void)load_declared_contract(file);
    ADD_FAILURE() << "bits of an i64 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("families.codes.x.dist"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'x' is i64"), std::string::npos) << e.what();
  }
}

// A constant axis bounds what a claim reaches: the per-tensor scale ([one], one = 1) stays one
// element whatever max_n a candidate claims, so the dequantizer (n below 2^31) claims nothing past
// 2^31 elements and the quantizer reaches past it through x and q alone.
TEST(QuantContracts, AOneElementScaleStaysOneElementUnderAnyClaim) {
  for (const char* name : {"fp8_e4m3_quantize", "fp8_e4m3_dequantize"}) {
    const Contract& c = load_declared_contract(kQuantRepo / "contracts" / name);
    Supports wide;
    wide.dtypes = c.dtypes();
    wide.min_alignment_bytes = 1;
    wide.max_n = kUnlimited;
    const ClaimedRange r = c.claimed_range(wide);
    EXPECT_EQ(r.tensor_elements.at("scale"), 1) << name;
    EXPECT_NE(r.tensor, "scale") << name;
    EXPECT_EQ(r.past_int32(), std::string(name) == "fp8_e4m3_quantize") << name << ": " << r.max_elements;
  }
  // A request giving the constant another value is still the contract's constraint.
  const Contract& q = load_declared_contract(kQuantRepo / "contracts/fp8_e4m3_quantize");
  Supports s;
  s.dtypes = q.dtypes();
  const auto refused = q.validate(q.request(DType::f32, {{"n", 64}, {"one", 2}}), s);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code, "constraint") << refused->reason;
}

// The int8 families: rows of the ties family whose max is 127 have scale 1 and exact ties decided
// to even; an all-zero row has scale 0 and q 0; the outliers' rows quantize the others to 0.
TEST(QuantContracts, Int8FamiliesReachTheirEdges) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kQuantRepo / "contracts/int8_row_quantize");
  std::map<std::string, int> seen;
  for (const char* family : {"ties", "zero_rows", "outliers"})
    for (const auto& cs : family_cases(c, family)) {
      const CaseData d = c.make_case(cs);
      const std::vector<Tensor> out = c.reference(d, test_util::run_host());
      const Tensor &q = out.at(0), &scale = out.at(1);
      const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
      for (std::int64_t r = 0; r < rows; ++r) {
        const double sc = element_as_double(DType::f32, scale.bytes.data(), std::size_t(r));
        if (std::string(family) == "zero_rows") {
          EXPECT_EQ(sc, 0.0) << cs.id;
          for (std::int64_t j = 0; j < cols; ++j) EXPECT_EQ(q.bytes[std::size_t(r * cols + j)], 0) << cs.id;
          ++seen["zero_row"];
        }
        for (std::int64_t j = 0; j < cols; ++j) {
          const std::size_t i = std::size_t(r * cols + j);
          const double x = element_as_double(DType::f32, d.inputs[0].bytes.data(), i);
          const auto code = std::int8_t(q.bytes[i]);
          if (std::string(family) == "ties" && sc == 1.0 && x != std::floor(x)) {
            EXPECT_EQ(code, std::nearbyint(x)) << cs.id << ": " << x;
            EXPECT_EQ(code % 2, 0) << cs.id << ": " << x;
            ++seen["tie"];
          }
          if (std::string(family) == "outliers" && std::fabs(x) > 1e37) ++seen["outlier"];
          EXPECT_GE(code, -127) << cs.id;
        }
      }
    }
  for (const char* k : {"tie", "zero_row", "outlier"}) EXPECT_GT(seen[k], 0) << k;
}

}  // namespace
}  // namespace kqual::contract
