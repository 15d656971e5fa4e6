// The bundled declared contracts in the narrow dtypes, contracts/layernorm_f16 (f16 in and out, f32
// statistics) and contracts/masked_softmax (a bool mask input), judged over CPU emulations of their
// bundled kernels (candidates/<contract>/good/kernel.cu and each known-broken define): the good kernel
// accepted on every case, each known-broken one rejected with the class its manifest states ([expect]
// rejected_for), for several seeds. The emulations follow the kernels' order of operations (the
// per-thread column slices, the xor butterflies, the warps' merge order, __half rounding where a
// kernel keeps __half), so a class found here is the class the GPU run finds; the device tests run
// the kernels themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kqual/build/manifest.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/narrow_float.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kF16MaskRepo = KQUAL_SOURCE_DIR;

constexpr std::uint8_t kPoison = 0xA5;  // the emulated output's bytes before the kernel writes
const std::uint64_t kSeeds[] = {20261202, 11, 7};  // qualify's default seed, and two more

// Where the emulated kernel finds its tensors: every start aligned (as in run 2, each input after an
// unmapped page, offset by the case's start offset), or every row misaligned (the scalar path only).
enum class Placement { aligned, scalar_only };

using Emulation = std::function<std::vector<std::uint8_t>(const CaseData&, const Tensor& y, Placement)>;

const Tensor& input(const CaseData& d, const std::string& name) {
  for (const auto& t : d.inputs)
    if (t.name == name) return t;
  throw std::runtime_error("no input " + name);
}

// The largest |y - ref| / bound over the finite elements of a comparison that passed.
double worst_fraction(const Tensor& want, const std::vector<std::uint8_t>& got) {
  double worst = 0;
  for (std::size_t i = 0; i < want.ref.size(); ++i) {
    const double a = element_as_double(want.dtype, got.data(), i), r = want.ref[i];
    if (std::isfinite(a) && std::isfinite(r) && want.bound[i] > 0) worst = std::max(worst, std::fabs(a - r) / want.bound[i]);
  }
  return worst;
}

// The first rejected case over the contract's ordered cases: "code: case id: detail" ("" = accepted).
// worst: where given, the largest worst_fraction of the accepted cases.
std::string first_rejection(const Contract& c, const Supports& s, std::uint64_t seed, const Emulation& k, double* worst = nullptr) {
  for (const auto& cs : c.correctness_cases(s, seed, false)) {
    const CaseData d = c.make_case(cs);
    const std::vector<Tensor> want = c.reference(d, test_util::run_host());
    const std::vector<std::uint8_t> got = k(d, want.at(0), Placement::aligned);
    const Comparison cmp = c.compare(want.at(0), got.data(), kPoison);
    if (!cmp.ok) return cmp.code + ": " + cs.id + ": " + cmp.detail;
    if (worst) *worst = std::max(*worst, worst_fraction(want.at(0), got));
  }
  return "";
}

// Per value family, the first rejected case of that family ("" = every case of it accepted).
std::map<std::string, std::string> rejections_by_family(const Contract& c, const Supports& s, std::uint64_t seed, const Emulation& k) {
  std::map<std::string, std::string> by;
  for (const auto& cs : c.correctness_cases(s, seed, false)) {
    std::string& first = by[cs.family];
    if (!first.empty()) continue;
    const CaseData d = c.make_case(cs);
    const std::vector<Tensor> want = c.reference(d, test_util::run_host());
    const std::vector<std::uint8_t> got = k(d, want.at(0), Placement::aligned);
    const Comparison cmp = c.compare(want.at(0), got.data(), kPoison);
    if (!cmp.ok) first = cmp.code + ": " + cs.id + ": " + cmp.detail;
  }
  return by;
}

std::string code_of(const std::string& rejection) { return rejection.substr(0, rejection.find(':')); }

// What a manifest's comment says of the families: each listed family's first rejection has the code
// given ("" = every case of the family accepted).
void expect_families(const std::map<std::string, std::string>& got, const std::map<std::string, std::string>& said,
                     const std::string& defect) {
  for (const auto& [fam, code] : said) {
    ASSERT_TRUE(got.count(fam)) << defect << ": no family " << fam;
    EXPECT_EQ(code_of(got.at(fam)), code) << defect << ", family " << fam << ": " << got.at(fam);
  }
}

// The class a known-broken candidate's manifest states.
std::string stated_class(const std::string& contract, const std::string& defect) {
  const build::Manifest m = build::load_manifest(kF16MaskRepo / "candidates" / contract / "broken" / defect / "kqual.toml");
  return m.expect_rejected_for.value_or("");
}

// The class a CPU emulation can show: the stated one, else the first alternative that is a comparison
// class ([expect] or_rejected_for) where the stated one is a device fault the CPU cannot raise
// (int_mask's misaligned_address on the H200; its wrong_result here).
std::string emulated_class(const std::string& contract, const std::string& defect) {
  const build::Manifest m = build::load_manifest(kF16MaskRepo / "candidates" / contract / "broken" / defect / "kqual.toml");
  const std::string stated = m.expect_rejected_for.value_or("");
  if (stated != "misaligned_address" && stated != "illegal_address") return stated;
  for (const auto& alt : m.expect_also_rejected_for)
    if (alt != "misaligned_address" && alt != "illegal_address") return alt;
  return stated;
}

// ---- layernorm_f16 ------------------------------------------------------------------------------

enum class LnBug { none, half_stats, no_eps, odd_tail, one_pass };

float half_round(double v) { return float(decode_narrow(kF16, encode_narrow(kF16, v))); }

// The kernel's accumulator: f32, or __half (each operation rounded once to f16, as __hadd and __hfma).
struct Acc {
  bool half = false;
  float of(float v) const { return half ? half_round(v) : v; }
  float add(float a, float b) const { return half ? half_round(double(a) + double(b)) : a + b; }
  float square_add(float d, float q) const { return half ? half_round(double(d) * d + q) : std::fma(d, d, q); }
};

constexpr int kLnThreads = 256;

// block_sum: a xor butterfly in each warp, then the warps' sums in warp order.
float ln_block_sum(const Acc& a, const std::vector<float>& v) {
  float t = a.of(0.0f);
  for (int w = 0; w < kLnThreads / 32; ++w) {
    float lane[32];
    for (int i = 0; i < 32; ++i) lane[i] = v[std::size_t(32 * w + i)];
    for (int o = 16; o > 0; o >>= 1) {
      float next[32];
      for (int i = 0; i < 32; ++i) next[i] = a.add(lane[i], lane[i ^ o]);
      std::memcpy(lane, next, sizeof lane);
    }
    t = a.add(t, lane[0]);
  }
  return t;
}

// unrounded: where given, each y in f32 before its rounding to f16.
std::vector<std::uint8_t> emulate_layernorm(const CaseData& d, const Tensor& y, Placement place, LnBug bug,
                                            std::vector<float>* unrounded = nullptr) {
  const Tensor &x = input(d, "x"), &w = input(d, "w"), &b = input(d, "b");
  const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
  const std::int64_t off = d.spec.offset_elements, pairs = (cols + 1) / 2, full = cols / 2;
  const Acc acc{bug == LnBug::half_stats};
  auto at = [](const Tensor& t, std::int64_t i) { return float(element_as_double(DType::f16, t.bytes.data(), std::size_t(i))); };
  std::vector<std::uint8_t> out(y.bytes.size(), kPoison);
  if (unrounded) unrounded->assign(std::size_t(y.elements), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> s(kLnThreads), q(kLnThreads);
  // Element i of a tensor starts 4-byte aligned when (offset + i) is even (2-byte elements).
  const bool wb_vec = place == Placement::aligned && off % 2 == 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t row = r * cols;
    const bool vec = wb_vec && (off + row) % 2 == 0;
    for (int t = 0; t < kLnThreads; ++t) {
      s[std::size_t(t)] = acc.of(0.0f);
      q[std::size_t(t)] = 0.0f;
      for (std::int64_t v = t; v < pairs; v += kLnThreads)
        for (std::int64_t j = 2 * v; j < std::min(2 * v + 2, cols); ++j) {
          const float xv = at(x, row + j);
          s[std::size_t(t)] = bug == LnBug::one_pass ? s[std::size_t(t)] + xv : acc.add(s[std::size_t(t)], acc.of(xv));
          if (bug == LnBug::one_pass) q[std::size_t(t)] = std::fma(xv, xv, q[std::size_t(t)]);
        }
    }
    const float mean = ln_block_sum(acc, s) / float(cols);
    float var;
    if (bug == LnBug::one_pass) {
      var = std::fma(-mean, mean, ln_block_sum(acc, q) / float(cols));  // NVRTC contracts a - m * m into an fma
    } else {
      for (int t = 0; t < kLnThreads; ++t) {
        q[std::size_t(t)] = acc.of(0.0f);
        for (std::int64_t v = t; v < pairs; v += kLnThreads)
          for (std::int64_t j = 2 * v; j < std::min(2 * v + 2, cols); ++j)
            q[std::size_t(t)] = acc.square_add(acc.of(at(x, row + j) - mean), q[std::size_t(t)]);
      }
      var = ln_block_sum(acc, q) / float(cols);
    }
    const float rstd = float(1.0 / std::sqrt(double(bug == LnBug::no_eps ? var : var + 1e-5f)));
    const std::int64_t written = bug == LnBug::odd_tail && vec ? full : pairs;
    for (std::int64_t j = 0; j < std::min(2 * written, cols); ++j) {
      const float z = (at(x, row + j) - mean) * rstd;
      const float v = std::fma(z, at(w, j), at(b, j));
      if (unrounded) (*unrounded)[std::size_t(row + j)] = v;
      const std::uint16_t h = f32_to_f16_rn(v);
      std::memcpy(out.data() + 2 * std::size_t(row + j), &h, 2);
    }
  }
  return out;
}

Emulation layernorm_kernel(LnBug bug) {
  return [bug](const CaseData& d, const Tensor& y, Placement p) { return emulate_layernorm(d, y, p, bug); };
}

Supports layernorm_f16_claims() {
  Supports s;  // as candidates/layernorm_f16/good/kqual.toml claims: element alignment, so the offset case runs
  s.dtypes = {DType::f16};
  s.min_alignment_bytes = 2;
  s.in_place = true;
  return s;
}

TEST(DeclaredF16Mask, LayernormF16AcceptsTheGoodKernelOnEveryPath) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kF16MaskRepo / "contracts/layernorm_f16");
  EXPECT_EQ(c.tensor_dtype("x", DType::f16), DType::f16);
  EXPECT_EQ(c.tensor_dtype("w", DType::f16), DType::f16);
  EXPECT_EQ(c.tensor_dtype("y", DType::f16), DType::f16);
  for (std::uint64_t seed : kSeeds) {
    double worst = 0;
    EXPECT_EQ(first_rejection(c, layernorm_f16_claims(), seed, layernorm_kernel(LnBug::none), &worst), "") << "seed " << seed;
    std::cout << "layernorm_f16 good, seed " << seed << ": worst error " << worst << " of the bound\n";
  }
  // The f32 arithmetic's own error, before y's rounding to f16, against what the bound leaves beside
  // that rounding (2^-11 |ref|): a kernel's f32 value off by more would round to a wrong f16 near a
  // rounding boundary. The bound as a whole is ~0.8 used by the rounding alone where |y| > 1.
  double worst_f32 = 0;
  for (const auto& cs : c.correctness_cases(layernorm_f16_claims(), kSeeds[0], false)) {
    const CaseData d = c.make_case(cs);
    const Tensor want = c.reference(d, test_util::run_host()).at(0);
    std::vector<float> v;
    (void)emulate_layernorm(d, want, Placement::aligned, LnBug::none, &v);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (std::isfinite(want.ref[i]))
        worst_f32 = std::max(worst_f32, std::fabs(double(v[i]) - want.ref[i]) / (want.bound[i] - std::ldexp(std::fabs(want.ref[i]), -11)));
  }
  std::cout << "layernorm_f16 good: the f32 value before rounding is off by at most " << worst_f32 << " of the bound less f16's rounding\n";
  EXPECT_LT(worst_f32, 0.5);
  // The __half2 path and the scalar one add in the same order: the same bytes wherever rows start
  // (two runs place inputs at different alignments and must agree bitwise).
  int compared = 0;
  for (const auto& cs : c.correctness_cases(layernorm_f16_claims(), kSeeds[0], false)) {
    if (cs.family != "base" && cs.family != "wide") continue;
    const CaseData d = c.make_case(cs);
    Tensor y;
    y.dtype = DType::f16;
    y.elements = d.dims.at("rows") * d.dims.at("cols");
    y.bytes.resize(std::size_t(y.elements) * 2);
    EXPECT_EQ(emulate_layernorm(d, y, Placement::aligned, LnBug::none), emulate_layernorm(d, y, Placement::scalar_only, LnBug::none))
        << cs.id;
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

TEST(DeclaredF16Mask, LayernormF16RejectsEachKnownBrokenKernelForItsStatedClass) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kF16MaskRepo / "contracts/layernorm_f16");
  const std::pair<const char*, LnBug> broken[] = {
      {"half_stats", LnBug::half_stats}, {"no_eps", LnBug::no_eps}, {"odd_tail", LnBug::odd_tail}, {"one_pass", LnBug::one_pass}};
  for (const auto& [defect, bug] : broken) {
    const std::string want = stated_class("layernorm_f16", defect);
    ASSERT_FALSE(want.empty()) << defect;
    for (std::uint64_t seed : kSeeds) {
      const std::string got = first_rejection(c, layernorm_f16_claims(), seed, layernorm_kernel(bug));
      EXPECT_EQ(code_of(got), want) << defect << ", seed " << seed << ": " << got;
      if (seed == kSeeds[0]) std::cout << "layernorm_f16 " << defect << ": " << got.substr(0, 300) << "\n";
    }
  }
  // The families each manifest's comment names.
  auto families = [&](LnBug bug) { return rejections_by_family(c, layernorm_f16_claims(), kSeeds[0], layernorm_kernel(bug)); };
  expect_families(families(LnBug::half_stats), {{"wide", "wrong_result"}, {"nonzero_mean", "nan_policy"}}, "half_stats");
  expect_families(families(LnBug::no_eps), {{"constant_rows", "nan_policy"}}, "no_eps");
  expect_families(families(LnBug::one_pass), {{"nonzero_mean", "wrong_result"}, {"base", ""}, {"wide", ""}, {"extremes", ""},
                                              {"tiny", ""}, {"constant_rows", ""}, {"specials", ""}},
                  "one_pass");
}

// ---- masked_softmax -----------------------------------------------------------------------------

enum class MsBug { none, ignore_mask, fill_1e4, no_max, int_mask };

struct State {
  float m = -INFINITY, s = 0.0f;
};

void ms_fold(State& st, float v, MsBug bug) {
  if (bug == MsBug::no_max) {
    if (v != -INFINITY) st.s += std::exp(v), st.m = 0.0f;
    return;
  }
  if (v > st.m) {
    st.s = st.s * std::exp(st.m - v) + 1.0f;
    st.m = v;
  } else if (v != -INFINITY) {
    st.s += std::exp(v - st.m);
  }
}

State ms_merge(State a, State b) {
  const float mn = std::fmax(a.m, b.m);
  State r;
  r.s = mn == -INFINITY ? a.s + b.s : a.s * std::exp(a.m - mn) + b.s * std::exp(b.m - mn);
  r.m = mn;
  return r;
}

// The kernel's final (m, 1 / s).
std::pair<float, float> ms_finish(State st) {
  float inv = std::isnan(st.s) || st.m == INFINITY ? std::numeric_limits<float>::quiet_NaN() : st.m == -INFINITY ? 0.0f : 1.0f / st.s;
  return {st.m == -INFINITY ? 0.0f : st.m, inv};
}

// guard: what the bytes after the bool mask hold when a kernel reads it as ints (past its end).
std::vector<std::uint8_t> emulate_masked_softmax(const CaseData& d, const Tensor& y, MsBug bug, std::uint8_t guard) {
  const Tensor &x = input(d, "x"), &mask = input(d, "mask");
  const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
  const std::int64_t groups = (cols + 3) / 4;
  const int threads = cols <= 1024 ? 32 : 256;
  auto xv = [&](std::int64_t i) { return float(element_as_double(DType::f32, x.bytes.data(), std::size_t(i))); };
  auto kept = [&](std::int64_t i) -> bool {
    if (bug == MsBug::int_mask) {
      for (std::int64_t k = 4 * i; k < 4 * i + 4; ++k)
        if ((k < std::int64_t(mask.bytes.size()) ? mask.bytes[std::size_t(k)] : guard) != 0) return true;
      return false;
    }
    return mask.bytes[std::size_t(i)] != 0;
  };
  auto logit = [&](std::int64_t i) {
    if (bug == MsBug::ignore_mask) return xv(i);
    if (bug == MsBug::fill_1e4) return kept(i) ? xv(i) : -1.0e4f;
    return kept(i) ? xv(i) : -INFINITY;
  };
  auto zeroed = [&](std::int64_t i) { return bug != MsBug::ignore_mask && bug != MsBug::fill_1e4 && !kept(i); };
  std::vector<std::uint8_t> out(y.bytes.size(), kPoison);
  std::vector<State> lane(static_cast<std::size_t>(threads));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t row = r * cols;
    for (int t = 0; t < threads; ++t) {
      State st;
      for (std::int64_t g = t; g < groups; g += threads)
        for (std::int64_t j = 4 * g; j < std::min(4 * g + 4, cols); ++j) ms_fold(st, logit(row + j), bug);
      lane[std::size_t(t)] = st;
    }
    // The xor butterfly within each warp: every lane merges its own state with its partner's.
    for (int w = 0; w < threads / 32; ++w)
      for (int o = 16; o >= 1; o /= 2) {
        std::vector<State> next(32);
        for (int i = 0; i < 32; ++i) next[std::size_t(i)] = ms_merge(lane[std::size_t(32 * w + i)], lane[std::size_t(32 * w + (i ^ o))]);
        for (int i = 0; i < 32; ++i) lane[std::size_t(32 * w + i)] = next[std::size_t(i)];
      }
    if (threads == 256) {  // a block per row: warp 0's state, then the others' in warp order
      State st = lane[0];
      for (int w = 1; w < 8; ++w) st = ms_merge(st, lane[std::size_t(32 * w)]);
      for (auto& l : lane) l = st;
    }
    for (std::int64_t g = 0; g < groups; ++g) {
      const auto [m, inv] = ms_finish(lane[std::size_t(g % threads)]);
      for (std::int64_t j = 4 * g; j < std::min(4 * g + 4, cols); ++j) {
        const float v = zeroed(row + j) ? 0.0f : std::exp(logit(row + j) - m) * inv;
        std::memcpy(out.data() + 4 * std::size_t(row + j), &v, 4);
      }
    }
  }
  return out;
}

Emulation masked_softmax_kernel(MsBug bug, std::uint8_t guard = 0) {
  return [bug, guard](const CaseData& d, const Tensor& y, Placement) { return emulate_masked_softmax(d, y, bug, guard); };
}

Supports masked_softmax_claims() {
  Supports s;  // as candidates/masked_softmax/good/kqual.toml claims
  s.dtypes = {DType::f32};
  s.min_alignment_bytes = 1;
  s.in_place = true;
  return s;
}

TEST(DeclaredF16Mask, MaskedSoftmaxReferenceKeepsMaskedPositionsOutOfTheRow) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kF16MaskRepo / "contracts/masked_softmax");
  EXPECT_EQ(c.tensor_dtype("mask", DType::f32), DType::boolean);
  int rows_checked = 0, empty_rows = 0, nan_rows = 0, masked_specials = 0;
  for (const auto& cs : c.correctness_cases(masked_softmax_claims(), kSeeds[0], false)) {
    if (cs.family != "specials" && cs.family != "fully_masked" && cs.family != "sparse") continue;
    const CaseData d = c.make_case(cs);
    const Tensor y = c.reference(d, test_util::run_host()).at(0);
    const Tensor &x = input(d, "x"), &mask = input(d, "mask");
    const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols");
    for (std::int64_t r = 0; r < rows; ++r) {
      bool any_finite_kept = false, poisoned = false;
      double sum = 0;
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t i = std::size_t(r * cols + j);
        const double xv = element_as_double(DType::f32, x.bytes.data(), i), yv = y.ref[i];
        if (!mask.bytes[i]) {
          EXPECT_EQ(yv, 0.0) << cs.id << " row " << r << " col " << j << ": a masked position";  // NaN/Inf there included
          masked_specials += !std::isfinite(xv);
          continue;
        }
        any_finite_kept |= xv > -INFINITY;
        poisoned |= std::isnan(xv) || xv == INFINITY;
        sum += yv;
      }
      ++rows_checked;
      if (poisoned) {
        ++nan_rows;
        EXPECT_TRUE(std::isnan(sum)) << cs.id << " row " << r;
      } else if (!any_finite_kept) {
        ++empty_rows;
        EXPECT_EQ(sum, 0.0) << cs.id << " row " << r << ": nothing kept (FlashAttention-style zeros)";
      } else {
        EXPECT_NEAR(sum, 1.0, 1e-12) << cs.id << " row " << r;
      }
    }
  }
  EXPECT_GT(rows_checked, 1000);
  EXPECT_GT(empty_rows, 100);
  EXPECT_GT(nan_rows, 10);
  EXPECT_GT(masked_specials, 10);
}

TEST(DeclaredF16Mask, MaskedSoftmaxAcceptsTheGoodKernel) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kF16MaskRepo / "contracts/masked_softmax");
  for (std::uint64_t seed : kSeeds) {
    double worst = 0;
    EXPECT_EQ(first_rejection(c, masked_softmax_claims(), seed, masked_softmax_kernel(MsBug::none), &worst), "") << "seed " << seed;
    std::cout << "masked_softmax good, seed " << seed << ": worst error " << worst << " of the bound\n";
  }
}

TEST(DeclaredF16Mask, MaskedSoftmaxRejectsEachKnownBrokenKernelForItsStatedClass) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kF16MaskRepo / "contracts/masked_softmax");
  const std::pair<const char*, MsBug> broken[] = {
      {"ignore_mask", MsBug::ignore_mask}, {"fill_1e4", MsBug::fill_1e4}, {"no_max", MsBug::no_max}, {"int_mask", MsBug::int_mask}};
  for (const auto& [defect, bug] : broken) {
    const std::string want = emulated_class("masked_softmax", defect);
    ASSERT_FALSE(want.empty()) << defect;
    for (std::uint64_t seed : kSeeds) {
      // Past the bool tensor an int-reading kernel meets the worker's guard bytes (0xA5), or anything.
      for (std::uint8_t guard : {std::uint8_t(0xA5), std::uint8_t(0x00)}) {
        if (bug != MsBug::int_mask && guard != 0xA5) continue;
        const std::string got = first_rejection(c, masked_softmax_claims(), seed, masked_softmax_kernel(bug, guard));
        EXPECT_EQ(code_of(got), want) << defect << ", seed " << seed << ": " << got;
        if (seed == kSeeds[0] && guard == 0xA5) std::cout << "masked_softmax " << defect << ": " << got.substr(0, 300) << "\n";
      }
    }
  }
  // The families each manifest's comment names.
  auto families = [&](MsBug bug) { return rejections_by_family(c, masked_softmax_claims(), kSeeds[0], masked_softmax_kernel(bug, 0xA5)); };
  expect_families(families(MsBug::ignore_mask), {{"fully_masked", "wrong_result"}}, "ignore_mask");
  expect_families(families(MsBug::fill_1e4), {{"fully_masked", "wrong_result"}}, "fill_1e4");
  expect_families(families(MsBug::no_max), {{"large_logits", "nan_policy"}, {"base", ""}, {"fully_masked", ""}, {"sparse", ""}}, "no_max");
  expect_families(families(MsBug::int_mask), {{"fully_masked", "wrong_result"}}, "int_mask");
}

}  // namespace
}  // namespace kqual::contract

namespace kqual::contract {
namespace {

// Each policy names the framework whose special values it follows, as every bundled one does, and
// masked_softmax the one place it departs from it (rows that keep nothing) and whose behaviour it takes.
TEST(DeclaredF16Mask, PoliciesNameTheFrameworkTheyFollow) {
  for (const char* name : {"layernorm_f16", "masked_softmax"}) {
    const std::string policy = load_declared_contract(kF16MaskRepo / "contracts" / name).numerical_policy();
    EXPECT_NE(policy.find("Special values follow PyTorch eager ("), std::string::npos) << name << ": " << policy;
  }
  const std::string masked = load_declared_contract(kF16MaskRepo / "contracts/masked_softmax").numerical_policy();
  for (const char* says : {"FlashAttention-style", "masked_fill(~mask, float('-inf')).softmax(-1) gives NaN there"})
    EXPECT_NE(masked.find(says), std::string::npos) << says << " not in: " << masked;
  EXPECT_NE(load_declared_contract(kF16MaskRepo / "contracts/layernorm_f16").numerical_policy().find("y rounded once to f16"),
            std::string::npos);
}

// Both contracts' axes stop at 2^31 elements (declared contracts take no f16 or bool inputs from the
// device generator, so no case past it could check a claim there): their policies list no shapes past
// 2^31 as not run, where a contract reaching past 2^31 without [index_cases] (rmsnorm_strided) still does.
TEST(DeclaredF16Mask, NoShapesPast2To31AreListedWhereTheAxesStopBelow) {
  for (const char* name : {"layernorm_f16", "masked_softmax"}) {
    const Contract& c = load_declared_contract(kF16MaskRepo / "contracts" / name);
    Supports widest;
    widest.dtypes = c.dtypes();
    widest.max_n = std::numeric_limits<std::int64_t>::max();
    EXPECT_FALSE(c.claimed_range(widest).past_int32()) << name;
    EXPECT_EQ(c.numerical_policy().find("past 2^31"), std::string::npos) << name << ": " << c.numerical_policy();
  }
  const Contract& strided = load_declared_contract(kF16MaskRepo / "contracts/rmsnorm_strided");
  EXPECT_NE(strided.numerical_policy().find("every shape past 2^31 elements: no [index_cases] axis"), std::string::npos)
      << strided.numerical_policy();
}

}  // namespace
}  // namespace kqual::contract
