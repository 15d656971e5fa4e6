// Contract: y = relu(x + r), elementwise, contiguous.
// f32: IEEE single add (round to nearest even, denormals preserved), then relu.
// bf16: inputs and output bf16; x and r widened to f32, added in f32, relu, rounded RNE to bf16.
// f16: the same with f16 (11 significant bits, largest 65504, subnormals from 2^-24): x + r in f32,
// relu, rounded RNE to f16 (past 65504: Inf).
// Reference: the sum is formed in f64 and rounded once to f32 — bit-identical to an IEEE f32 add,
// because f64 has more than 2*24+2 significand bits (double rounding is innocuous for +). f16: the
// exact sum (in f64) rounded once to f16, which is what an f32 add rounded to f16 gives, since f32
// has 2*11+2 = 24 significand bits (and a sum of two f16 values below 2^-14 is exact in both).
// relu: NaN → NaN (any payload), x > 0 → x, otherwise (including -0 and -Inf) → +0.
#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "builtin_cases.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/narrow_float.hpp"

namespace kqual::contract {
namespace {

float relu_policy(float s) {
  if (std::isnan(s)) return s;
  return s > 0.0f ? s : 0.0f;  // -0 and -Inf become +0
}

float ref_f32(float x, float r) {
  double s = double(x) + double(r);
  return relu_policy(float(s));
}

std::uint16_t ref_bf16(std::uint16_t x, std::uint16_t r) {
  double s = double(bf16_to_f32(x)) + double(bf16_to_f32(r));
  return f32_to_bf16_rne(relu_policy(float(s)));
}

std::uint16_t ref_f16(std::uint16_t x, std::uint16_t r) {
  const double s = decode_narrow(kF16, x) + decode_narrow(kF16, r);  // exact: both are f16
  if (std::isnan(s)) return std::uint16_t(encode_narrow(kF16, s));
  return std::uint16_t(encode_narrow(kF16, s > 0 ? s : 0.0));       // relu before the one rounding
}

class ResidualAddRelu final : public builtin::FixedRuleContract {
 public:
  ResidualAddRelu()
      : FixedRuleContract(
            "residual_add_relu",
            "y = relu(x + r), elementwise over n contiguous elements",
            Domain{
                .dims = {{.name = "n", .from_length_of = "x"}},
                .tensors = {{.name = "x", .role = Role::input, .shape = {"n"}, .description = "activations, n elements"},
                            {.name = "r", .role = Role::input, .shape = {"n"}, .description = "residual, n elements"},
                            {.name = "y", .role = Role::output, .shape = {"n"}, .description = "result, n elements"}},
                .dtypes = {DType::f32, DType::bf16, DType::f16},
                .claim = {.dims = {"n"}},
                .in_place = InPlace{"y", "x"},
            },
            // Required: the output is bit-exact (one IEEE add, then relu), so a run that differs from another
            // has at least one wrong element; there is no legitimate order of operations to vary.
            builtin::bitwise_required("the output is bit-exact (one add and a relu per element): any run-to-run "
                                      "difference is already a wrong element",
                                      "none: an exact elementwise result has one right answer")) {}
  std::string numerical_policy() const override {
    return "Bit-exact. f32: x + r is one IEEE-754 single-precision add (round to nearest even; denormal inputs "
           "and results preserved, so flush-to-zero builds fail), then relu. bf16: x and r widened to f32, added "
           "in f32, relu, rounded to nearest even bf16. f16 likewise (rounded to nearest even f16; a sum past 65504 is "
           "Inf, as two values near 65504 give; f16 subnormals, 2^-24 .. 2^-14, are kept in inputs and results, so "
           "a kernel that flushes them, as add.ftz.f16 does, fails). relu(NaN) is NaN (any payload; fmaxf would swallow it); "
           "relu(v) = v for v > 0 (+Inf stays +Inf); every other value, -0 and -Inf included, gives +0. "
           "Inf + (-Inf) is NaN. Reference: the sum in f64, rounded once to f32 (exact for one add), on the CPU "
           "of the coordinating process (f16: the exact sum rounded once to f16, which equals the f32 sum rounded to "
           "f16). Run to run: two runs must agree bitwise (an exact result has one right answer). The large cases "
           "generated and verified on the device (2^27+5, 2^29+7 elements) are f32 and bf16 only. " +
           std::string(builtin::kNoGeneratedF16) + ".";
  }

  std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const override {
    std::vector<std::int64_t> sizes = {1, 2, 3, 255, 256, 257, 1023, 1024, 1025, 999983, (1 << 24) + 1};
    // And one size the candidate cannot predict: drawn from the seed, between 2^20 and 2^22.
    Rng pick(mix_seed(seed, 0x5151));
    sizes.insert(sizes.end() - 1, std::int64_t((1 << 20) + pick.below(3u << 20)));
    const std::vector<std::string> families = {"normal", "nonzero_mean", "all_negative", "near_max", "denormals",
                                               "specials"};
    std::vector<CaseSpec> cases;
    for (DType t : dtypes()) {
      if (!cand.supports(t)) continue;
      const bool unaligned = builtin::admits_element_offset(cand, t);
      for (std::int64_t n : sizes) {
        if (n > cand.max_n) continue;
        for (const auto& fam : families) {
          // The largest regular size gets the two families that catch most (values and specials).
          if (n > 2'000'000 && fam != "normal" && fam != "specials") continue;
          for (std::int64_t off : {std::int64_t(0), std::int64_t(1)}) {
            if (off == 1 && (!unaligned || (fam != "normal" && fam != "specials"))) continue;
            cases.push_back(builtin::vector_family_case(t, n, fam, off, seed));
          }
        }
      }
      if (include_large) {
        // 2^27+5: many waves of blocks; 2^29+7 f32 is over 2^31 bytes per tensor (32-bit byte offsets
        // overflow). Generated on the device and verified there against device_reference (made on
        // the CPU, the 2^29+7 case cost 46 s of files and CPU reference).
        for (std::int64_t n : {(std::int64_t(1) << 27) + 5, (std::int64_t(1) << 29) + 7}) {
          // f16: no generated case asked for yet (builtin::kNoGeneratedF16).
          if (t == DType::f16 || n > cand.max_n || (t != DType::f32 && n > (std::int64_t(1) << 28))) continue;
          CaseSpec c;
          c.dtype = t;
          c.dims = {{"n", n}};
          c.family = kGeneratedFamily;
          c.seed = mix_seed(seed, std::uint64_t(n));
          c.id = fmt::format("{}/n={}/{}", to_string(t), n, kGeneratedFamily);
          cases.push_back(c);
        }
      }
    }
    return cases;
  }

  // n just past 2^31 in every claimed dtype (a 32-bit signed index wraps there), and just past 2^32
  // in the narrowest one (an unsigned 32-bit index wraps there) when the claim reaches it.
  std::vector<CaseSpec> index_cases(const Supports& cand, std::uint64_t seed) const override {
    std::vector<CaseSpec> out;
    if (!claimed_range(cand).past_int32()) return out;
    auto add = [&](DType t, std::int64_t n, const char* what) {
      CaseSpec c;
      c.dtype = t;
      c.dims = {{"n", n}};
      c.family = kGeneratedFamily;
      c.seed = mix_seed(seed, std::uint64_t(n) * 977 + std::uint64_t(t));
      c.id = fmt::format("{}/n={}/{}", to_string(t), n, what);
      out.push_back(c);
    };
    const std::int64_t past31 = std::min<std::int64_t>(cand.max_n, (std::int64_t(1) << 31) + (1 << 20) + 3);
    std::optional<DType> narrowest;
    for (DType t : dtypes()) {
      if (!cand.supports(t) || t == DType::f16) continue;  // builtin::kNoGeneratedF16
      add(t, past31, "past-2^31");
      if (!narrowest || dtype_size(t) < dtype_size(*narrowest)) narrowest = t;
    }
    if (narrowest && cand.max_n > (std::int64_t(1) << 32))
      add(*narrowest, std::min<std::int64_t>(cand.max_n, (std::int64_t(1) << 32) + (1 << 20) + 5), "past-2^32");
    return out;
  }
  std::vector<OutputWindow> index_case_windows(const CaseSpec& spec) const override {
    return contiguous_windows(spec, spec.dim("n"), "y", {"x", "r"});
  }

  std::optional<OutputWindow> output_window(const CaseSpec& spec, const std::string& tensor, std::int64_t begin,
                                            std::int64_t count) const override {
    if (tensor != "y") return std::nullopt;
    OutputWindow w;
    w.tensor = "y";
    w.begin = begin;
    w.count = count;
    w.sub_dims = {{"n", count}};
    w.gather["x"] = {{begin, count}};
    w.gather["r"] = {{begin, count}};
    w.why = fmt::format("y[{}..{})", begin, begin + count);
    (void)spec;
    return w;
  }

  // The same policy as ref_f32 / ref_bf16 / ref_f16, in CUDA: the sum in f64 rounded once to f32,
  // relu with NaN kept, bf16 rounded to nearest even from that f32; f16's exact sum rounded once to
  // f16 after relu (decoded and encoded from the bits: no cuda_fp16.h). 64-bit indices, one element
  // per thread per grid-stride step: nothing clever, so that it is easy to trust.
  std::optional<GpuReference> device_reference(const CaseSpec& spec) const override {
    if (spec.family != kGeneratedFamily) return std::nullopt;
    if (spec.dtype != DType::f32 && spec.dtype != DType::bf16 && spec.dtype != DType::f16) return std::nullopt;
    GpuReference g;
    g.source = R"CUDA(
__device__ float kqual_relu_policy(float s) { return s != s ? s : (s > 0.0f ? s : 0.0f); }
extern "C" __global__ void kqual_ref_add_relu_f32(const float* x, const float* r, float* y, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = kqual_relu_policy(__double2float_rn((double)x[i] + (double)r[i]));
}
extern "C" __global__ void kqual_ref_add_relu_bf16(const unsigned short* x, const unsigned short* r, unsigned short* y,
                                                   unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const float a = __uint_as_float((unsigned int)x[i] << 16), b = __uint_as_float((unsigned int)r[i] << 16);
    const float s = kqual_relu_policy(__double2float_rn((double)a + (double)b));
    unsigned int u = __float_as_uint(s);
    if (s != s) u = (u | 0x00400000u);                 // NaN stays NaN (quiet) after truncation
    else u += 0x7FFFu + ((u >> 16) & 1u);              // round to nearest even
    y[i] = (unsigned short)(u >> 16);
  }
}
__device__ double kqual_f16_decode(unsigned h) {
  const unsigned e = (h >> 10) & 0x1Fu, f = h & 0x3FFu;
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (e == 0x1Fu) return f ? __longlong_as_double(0x7FF8000000000000ll) : sign * __longlong_as_double(0x7FF0000000000000ll);
  return e ? sign * ldexp((double)(f | 0x400u), (int)e - 25) : sign * ldexp((double)f, -24);
}
// Round to nearest even, once: subnormals, overflow to Inf (65520 and up) and NaN included.
__device__ unsigned short kqual_f16_encode(double s) {
  const unsigned short sign = (__double_as_longlong(s) < 0) ? 0x8000u : 0u;
  if (s != s) return (unsigned short)(sign | 0x7E00u);
  const double a = fabs(s);
  if (a >= 65520.0) return (unsigned short)(sign | 0x7C00u);
  if (a < ldexp(1.0, -14)) return (unsigned short)(sign | (unsigned)rint(a * ldexp(1.0, 24)));  // 1024 is the least normal
  int e;
  frexp(a, &e);                                      // a in [2^(e-1), 2^e)
  double q = rint(ldexp(a, 11 - e));                 // [1024, 2048]
  if (q == 2048.0) { q = 1024.0; ++e; }
  if (e - 1 + 15 >= 31) return (unsigned short)(sign | 0x7C00u);
  return (unsigned short)(sign | ((unsigned)(e - 1 + 15) << 10) | ((unsigned)q - 1024u));
}
extern "C" __global__ void kqual_ref_add_relu_f16(const unsigned short* x, const unsigned short* r, unsigned short* y,
                                                  unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const double s = kqual_f16_decode(x[i]) + kqual_f16_decode(r[i]);   // exact: both are f16
    y[i] = kqual_f16_encode(s != s ? s : (s > 0.0 ? s : 0.0));
  }
}
)CUDA";
    const std::int64_t n = spec.dim("n");
    GpuLaunch l;
    l.kernel = spec.dtype == DType::f32    ? "kqual_ref_add_relu_f32"
               : spec.dtype == DType::bf16 ? "kqual_ref_add_relu_bf16"
                                           : "kqual_ref_add_relu_f16";
    l.grid[0] = std::min<std::int64_t>((n + 255) / 256, 132 * 32);
    l.block[0] = 256;
    l.args = {{"x"}, {"r"}, {"y"}, {"", n, 8}};
    g.launches.push_back(l);
    Tensor y;
    y.name = "y";
    y.dtype = spec.dtype;
    y.elements = n;
    g.raw_outputs.push_back(y);
    return g;
  }

  std::string benchmark_family() const override { return "uniform"; }
  std::vector<Dims> benchmark_shapes() const override {
    return {{{"n", std::int64_t(1) << 12}}, {{"n", std::int64_t(1) << 20}}, {{"n", std::int64_t(1) << 28}}};
  }

  CaseData make_case(const CaseSpec& spec) const override {
    const std::int64_t n64 = spec.dim("n");
    if (n64 < 1) throw_error(ErrorKind::unsupported, "case with n < 1");
    CaseData d;
    d.spec = spec;
    d.dims["n"] = n64;
    std::size_t n = std::size_t(n64);
    std::vector<float> xs(n), rs(n);
    const float fmax = spec.dtype == DType::f32 ? FLT_MAX : spec.dtype == DType::bf16 ? bf16_to_f32(0x7F7F) : float(kF16.max_finite);
    // The smallest normal of the storage type's neighbourhood: a quarter of the denormals family's r are
    // normal values scaled near it, so sums cross between the subnormal and the normal range.
    const float tiny = spec.dtype == DType::f16 ? std::ldexp(1.0f, -13) : 1e-37f;
    // Values come in chunks of 2^16 elements, each from its own generator seeded by (seed, chunk):
    // the data is the same whatever the thread count, and large cases are generated in parallel.
    auto fill = [&](std::size_t i, Rng& rng) {
      auto denormal = [&]() {
        // A random subnormal of the storage type, either sign.
        float v;
        if (spec.dtype == DType::f32)
          v = f32_from_bits(std::uint32_t(1 + rng.below(0x7FFFFF)));
        else if (spec.dtype == DType::bf16)
          v = f32_from_bits(std::uint32_t(1 + rng.below(0x7F)) << 16);
        else  // f16: 2^-24 .. 2^-14 - 2^-24, exact in f32 (and so in the f16 input)
          v = f16_to_f32(std::uint16_t(1 + rng.below(0x3FF)));
        return rng.below(2) ? -v : v;
      };
      float x = 0, r = 0;
      if (spec.family == "normal") {
        x = float(rng.normal()); r = float(rng.normal());
      } else if (spec.family == "uniform") {
        x = float(rng.uniform(-1, 1)); r = float(rng.uniform(-1, 1));
      } else if (spec.family == "nonzero_mean") {
        x = float(3.0 + rng.normal()); r = float(-1.0 + 0.5 * rng.normal());
      } else if (spec.family == "all_negative") {
        x = -float(rng.uniform(1e-3, 100)); r = -float(rng.uniform(1e-3, 100));
      } else if (spec.family == "near_max") {
        // Half of the pairs share a sign, so their sum overflows to ±Inf.
        x = float(rng.uniform(0.5, 1.0)) * fmax; r = float(rng.uniform(0.5, 1.0)) * fmax;
        if (rng.below(2)) x = -x;
        if (rng.below(2)) r = -r;
      } else if (spec.family == "denormals") {
        x = denormal();
        r = rng.below(4) == 0 ? float(rng.normal()) * tiny : denormal();
      } else {  // specials
        x = float(rng.normal()); r = float(rng.normal());
        const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(), -0.0f, 0.0f};
        if (rng.below(8) == 0) x = specials[rng.below(5)];
        if (rng.below(8) == 0) r = specials[rng.below(5)];
      }
      xs[i] = x; rs[i] = r;
    };
    builtin::require_known_family(spec, {"normal", "uniform", "nonzero_mean", "all_negative", "near_max", "denormals", "specials"});
    builtin::for_each_in_seeded_chunks(n, spec.seed, fill);
    if (spec.family == "specials" && n >= 4) {
      // Make sure the classic traps are present whatever the random draw did.
      xs[0] = std::numeric_limits<float>::quiet_NaN();
      xs[1] = std::numeric_limits<float>::infinity(); rs[1] = -std::numeric_limits<float>::infinity();
      xs[2] = -0.0f; rs[2] = -0.0f;
      xs[n - 1] = std::numeric_limits<float>::quiet_NaN(); rs[n - 1] = -1.0f;
    }
    d.inputs.push_back(builtin::float_values_tensor("x", spec.dtype, xs));
    d.inputs.push_back(builtin::float_values_tensor("r", spec.dtype, rs));
    return d;
  }

  std::vector<Tensor> reference(const CaseData& data, ReferenceHost& /*host*/) const override {
    const Tensor& x = data.inputs.at(0);
    const Tensor& r = data.inputs.at(1);
    Tensor y = builtin::zeroed_tensor("y", x.dtype, x.elements);
    std::size_t n = std::size_t(x.elements);
    if (x.dtype == DType::f32) {
      auto* px = reinterpret_cast<const float*>(x.bytes.data());
      auto* pr = reinterpret_cast<const float*>(r.bytes.data());
      auto* py = reinterpret_cast<float*>(y.bytes.data());
      for (std::size_t i = 0; i < n; ++i) py[i] = ref_f32(px[i], pr[i]);
    } else {
      auto* px = reinterpret_cast<const std::uint16_t*>(x.bytes.data());
      auto* pr = reinterpret_cast<const std::uint16_t*>(r.bytes.data());
      auto* py = reinterpret_cast<std::uint16_t*>(y.bytes.data());
      const bool f16 = x.dtype == DType::f16;
      for (std::size_t i = 0; i < n; ++i) py[i] = f16 ? ref_f16(px[i], pr[i]) : ref_bf16(px[i], pr[i]);
    }
    return {y};
  }

  double flops(const std::map<std::string, std::int64_t>& dims, DType) const override { return 2.0 * double(dims.at("n")); }
};

}  // namespace

const Contract& residual_add_relu_contract() {
  static const ResidualAddRelu c;
  return c;
}

}  // namespace kqual::contract
