// Contract: c = a·b, row-major and contiguous: a (m x k), b (k x n), c (m x n).
// f32: a, b, c f32; products and sums in f32 FMA (no TF32 tensor cores, no narrower accumulation).
// bf16: a, b, c bf16; products and sums in f32 (or wider), c rounded once to bf16.
// f16: a, b, c f16; likewise (an 11-bit x 11-bit product is exact in f32), c rounded once to f16,
// Inf past 65504.
// Error model (not a flat allclose), per output element:
//   |c[i][j] - ref[i][j]| <= A[i][j] + 0.5 ulp_out(|ref[i][j]| + A[i][j]),
//   A[i][j] = (gamma(k) * u_acc + k * 2^-53) * S[i][j],  S[i][j] = sum_p |a[i][p] * b[p][j]|,
//   u_acc = 2^-24 (f32 accumulation), gamma(k) = min(k, 1.5 * sqrt(k) + 4).
// gamma = k is the worst-case (deterministic) bound for any summation order of k rounded FMAs;
// for long reductions rounding errors behave like a random walk (Higham & Mary, SIAM J. Sci.
// Comput. 2019: probabilistic error analysis), whose standard deviation for sequential
// summation of same-sign terms is about 0.25 sqrt(k) u S: 1.5 sqrt(k) + 4 is ~6 standard deviations
// (measured: max 86 u S at k = 8197, 101 u S at k = 16384, bounds 140 and 196).
// TF32 inputs (10-bit mantissas) give errors around 2^-11 sqrt(k) rms|ab|, i.e. ~2^13 / sqrt(k)
// u S: rms 60-86 u S on zero-mean data at k = 8192..16384, max 260-350, over the bound. On
// same-sign data at k = 16384 TF32 (max ~150 u S) is within 1.5x of correct sequential f32 and
// cannot be told apart by any S-scaled bound: the zero-mean long-K cases carry that evidence.
// bf16/f16 accumulation exceeds the bound by orders of magnitude. k * 2^-53 * S covers the f64
// reference's own error.
// Reference: f64 sums of exact f64 products (a 24-bit x 24-bit product is exact in f64), in k order,
// on the CPU (rows in parallel) or, for m*n*k > 2^31, by an fp64 GPU kernel in its own worker.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "builtin_cases.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract {
namespace {

constexpr std::int64_t kMaxGemmDim = 16384;
// Above this many multiply-adds a case's reference is computed by the fp64 GPU kernel.
constexpr std::int64_t kCpuReferenceMaxMacs = std::int64_t(1) << 31;

double gamma_of(std::int64_t k) { return std::min(double(k), 1.5 * std::sqrt(double(k)) + 4.0); }

// Distance between |x| and the next representable value of the output dtype (normal range; the
// subnormal spacing below it).
double ulp_out(DType t, double x) {
  const int mant = t == DType::bf16 ? 7 : t == DType::f16 ? 10 : 23;  // stored mantissa bits
  const int emin = t == DType::f16 ? -14 : -126;                      // f32 and bf16 share the exponent range
  x = std::fabs(x);
  int e = x > 0 && std::isfinite(x) ? std::ilogb(x) : emin;
  if (e < emin) e = emin;
  return std::ldexp(1.0, e - mant);
}

// The expected output from an f64 reference and S (shared by the CPU and GPU paths).
Tensor expected_c(DType t, std::int64_t m, std::int64_t n, std::int64_t k, const double* cref, const double* sabs) {
  Tensor c = builtin::zeroed_tensor("c", t, m * n, true);
  const std::size_t count = std::size_t(m * n);
  std::copy(cref, cref + count, c.ref.begin());
  const double rel = gamma_of(k) * unit_roundoff(DType::f32) + double(k) * std::ldexp(1.0, -53);
  for (std::size_t i = 0; i < count; ++i) {
    const double r = cref[i];
    const double acc = rel * sabs[i];
    c.bound[i] = std::isfinite(r) ? acc + 0.5 * ulp_out(t, std::fabs(r) + acc) : 0.0;
    store_element(t, c.bytes.data(), i, r);
  }
  return c;
}

const char* kGpuReferenceSource = R"(
// fp64 GEMM reference: one thread per output element (grid.y = row), products exact in f64,
// summed in k order: the same arithmetic as the CPU reference. at(p, q): element q of p as f64.
template <class T, double (*at)(const T*, long long)>
__device__ void gemm_ref(const T* a, const T* b, double* cref, double* sabs, long long m, long long n, long long k) {
  long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long i = blockIdx.y;
  if (j >= n || i >= m) return;
  double s = 0.0, t = 0.0;
  for (long long p = 0; p < k; ++p) {
    double x = at(a, i * k + p), y = at(b, p * n + j);
    s += x * y;
    t += fabs(x) * fabs(y);
  }
  cref[i * n + j] = s;
  sabs[i * n + j] = t;
}
__device__ double f32_at(const float* p, long long q) { return (double)p[q]; }
__device__ double bf16_at(const unsigned short* p, long long q) { return (double)__uint_as_float((unsigned)p[q] << 16); }
// f16 decoded from its bits (no cuda_fp16.h needed): subnormals, Inf and NaN included.
__device__ double f16_at(const unsigned short* p, long long q) {
  const unsigned h = p[q], e = (h >> 10) & 0x1Fu, f = h & 0x3FFu;
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (e == 0x1Fu) return f ? __longlong_as_double(0x7FF8000000000000ll) : sign * __longlong_as_double(0x7FF0000000000000ll);
  return e ? sign * ldexp((double)(f | 0x400u), (int)e - 25) : sign * ldexp((double)f, -24);
}
extern "C" __global__ void gemm_ref_f32(const float* a, const float* b, double* cref, double* sabs, long long m, long long n,
                                        long long k) {
  gemm_ref<float, f32_at>(a, b, cref, sabs, m, n, k);
}
extern "C" __global__ void gemm_ref_bf16(const unsigned short* a, const unsigned short* b, double* cref, double* sabs,
                                         long long m, long long n, long long k) {
  gemm_ref<unsigned short, bf16_at>(a, b, cref, sabs, m, n, k);
}
extern "C" __global__ void gemm_ref_f16(const unsigned short* a, const unsigned short* b, double* cref, double* sabs,
                                        long long m, long long n, long long k) {
  gemm_ref<unsigned short, f16_at>(a, b, cref, sabs, m, n, k);
}
)";

class Gemm final : public builtin::FixedRuleContract {
 public:
  Gemm()
      : FixedRuleContract(
            "gemm",
            "c = a·b, row-major contiguous a (m x k), b (k x n), c (m x n); f32 FMA accumulation",
            Domain{
                .dims = {{.name = "m"}, {.name = "n"}, {.name = "k"}},
                .tensors = {{.name = "a", .role = Role::input, .shape = {"m", "k"}, .description = "m x k, row-major",
                             .layout = Layout::row_major},
                            {.name = "b", .role = Role::input, .shape = {"k", "n"}, .description = "k x n, row-major",
                             .layout = Layout::row_major},
                            {.name = "c", .role = Role::output, .shape = {"m", "n"}, .description = "m x n, row-major",
                             .layout = Layout::row_major}},
                .dtypes = {DType::f32, DType::bf16, DType::f16},
                // Mixed dtypes (bf16 in, f32 out) are a different operation.
                .dtype_note = "a, b and c share the dtype",
                // The contract's size limit, per dim (too_large, as it has always been called for gemm).
                .limits = {{.dims = {"m"}, .max = kMaxGemmDim},
                           {.dims = {"n"}, .max = kMaxGemmDim},
                           {.dims = {"k"}, .max = kMaxGemmDim}},
                .claim = {},  // max_n bounds every tensor's element count
                .no_in_place_reason = "gemm reads every input element many times, so c may never alias a or b",
                .mismatch_code = "shape_mismatch",
            },
            // Not required: split-K and stream-K with atomic accumulation into c are standard techniques for
            // small m*n with large k, and the error bound is already written for any f32 summation order, so
            // two runs that add in different orders are both within it; the difference between them is held
            // to the same bound.
            builtin::any_order_admitted("split-K and stream-K with atomic accumulation are standard gemm techniques, "
                                        "and the reduction-aware error bound already covers any summation order")) {}

  std::string numerical_policy() const override {
    return "Bounded error, per element: |c - ref| <= A + 0.5 ulp_out(|ref| + A), A = (gamma(k) u + k 2^-53) S, "
           "S = sum_p |a[i][p] b[p][j]|, u = 2^-24 (f32 accumulation, for every dtype), gamma(k) = min(k, 1.5 sqrt(k) + 4). "
           "gamma = k is the worst case for any order of k rounded f32 FMAs; for long reductions the bound is "
           "probabilistic (rounding errors as a random walk; sequential summation of same-sign terms has a standard "
           "deviation near 0.25 sqrt(k) u S, so 1.5 sqrt(k) + 4 is ~6 of them). Any f32 summation order (sequential, "
           "split-K, tree) passes; TF32-rounded inputs fail on the zero-mean cases with k >= 8192 (on same-sign data "
           "at k = 16384 their error is within 1.5x of correct f32 and not distinguishable); bf16/f16 accumulation and dropped K tails "
           "fail. bf16: inputs are exact in f32, products exact, c rounded once to bf16 (the 0.5 ulp term). "
           "Reference: f64 sums of exact products in k order, on the CPU, or by an fp64 GPU kernel in its own worker "
           "for m*n*k > 2^31. NaN: a NaN anywhere in row i of a (or column j of b), or Inf*0, makes c[i][j] NaN; "
           "infinities must match exactly; NaN never matches a number. Run to run: bitwise reproducibility is not "
           "required (split-K with atomics is admitted); two runs must each be within the bound of "
           "the reference; their difference is reported, never failed (two runs within the bound may differ by up to "
           "twice it). f16: a, b and c f16, accumulation in f32 (f16 products are exact in f32), c rounded once "
           "to f16: the 0.5 ulp term with 11 significant bits (2^-25 below 2^-14, among f16's subnormals) and Inf past "
           "65504. Its families reach those edges: row_scaled over 2^-12..2^4 (a) and 2^-10..2^2 (b), with subnormal "
           "inputs and outputs; overflow, where rows of c pass 65504 (Inf) and other rows' products pass it but "
           "cancel in pairs to a finite c, exact in f32: an f16 accumulator turns those into Inf. The large cases "
           "(m*n*k > 2^31) are referenced by the fp64 GPU kernel for every dtype, f16 decoded from its bits.";
  }

  std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const override {
    struct S {
      std::int64_t m, n, k;
      const char* family;
      std::int64_t offset = 0;
    };
    // Tiles of the bundled candidates: 128 x 128 blocks, k-tiles of 16. The first case is 1x1x1
    // (a kernel without an edge guard writes just past c, into the guard region).
    const std::vector<S> f32_cases = {
        {1, 1, 1, "normal"}, {1, 1, 7, "normal"}, {2, 3, 5, "integers"}, {15, 16, 17, "normal"},
        {16, 15, 16, "nonzero_mean"}, {17, 17, 8, "normal"}, {63, 64, 65, "normal"}, {64, 64, 64, "integers"},
        {65, 63, 64, "specials"}, {127, 128, 129, "normal"}, {128, 128, 128, "nonzero_mean"}, {129, 129, 31, "row_scaled"},
        {131, 257, 67, "normal"}, {257, 131, 509, "identity"}, {1, 4099, 64, "normal"}, {4099, 1, 64, "nonzero_mean"},
        {1000, 7, 1000, "normal"}, {7, 1000, 1000, "specials"}, {509, 521, 127, "specials"}, {1031, 1029, 256, "normal"},
        {1024, 1024, 1024, "nonzero_mean"},
        // Long reductions: TF32 inputs and narrow accumulators show here.
        {64, 64, 8197, "normal"}, {64, 64, 8197, "nonzero_mean"}, {129, 65, 8197, "normal"},
        {33, 17, 16384, "nonzero_mean"}, {128, 128, 16384, "normal"}, {65, 127, 16384, "row_scaled"},
        // One-element offsets (a, b and c views start 4 bytes into their buffers).
        {65, 63, 64, "normal", 1}, {127, 128, 129, "nonzero_mean", 1}};
    const std::vector<S> bf16_cases = {
        {1, 1, 1, "normal"}, {15, 16, 17, "normal"}, {17, 17, 8, "specials"}, {64, 64, 64, "integers"},
        {127, 128, 129, "normal"}, {129, 129, 31, "nonzero_mean"}, {131, 257, 67, "row_scaled"}, {1, 4099, 64, "normal"},
        {4099, 1, 64, "nonzero_mean"}, {257, 131, 509, "identity"}, {65, 63, 64, "specials"}, {1031, 1029, 256, "normal"},
        {64, 64, 8197, "normal"}, {64, 64, 8197, "nonzero_mean"}, {33, 17, 16384, "nonzero_mean"},
        {65, 63, 64, "normal", 1}};
    // f16: bf16's shapes, row_scaled within f16's range (subnormal inputs and outputs), and overflow
    // (c past 65504; products past it cancelling in pairs, where an f16 accumulator gives Inf).
    const std::vector<S> f16_cases = {
        {1, 1, 1, "normal"}, {15, 16, 17, "normal"}, {17, 17, 8, "specials"}, {64, 64, 64, "integers"},
        {127, 128, 129, "normal"}, {129, 129, 31, "nonzero_mean"}, {131, 257, 67, "row_scaled"}, {33, 31, 31, "row_scaled"},
        {1, 4099, 64, "normal"}, {4099, 1, 64, "nonzero_mean"}, {257, 131, 509, "identity"}, {65, 63, 64, "specials"},
        {63, 64, 65, "overflow"}, {129, 65, 8, "overflow"}, {1031, 1029, 256, "normal"},
        {64, 64, 8197, "normal"}, {64, 64, 8197, "nonzero_mean"}, {33, 17, 16384, "nonzero_mean"},
        {65, 63, 64, "normal", 1}};
    const std::vector<S> f32_large = {{4096, 4096, 4096, "normal"}, {2053, 1031, 16384, "nonzero_mean"}};
    const std::vector<S> narrow_large = {{4096, 4096, 4096, "nonzero_mean"}};  // bf16, f16
    std::vector<CaseSpec> cases;
    for (DType t : dtypes()) {
      if (!cand.supports(t)) continue;
      const bool offsets_ok = builtin::admits_element_offset(cand, t);
      std::vector<S> list = t == DType::f32 ? f32_cases : t == DType::bf16 ? bf16_cases : f16_cases;
      if (include_large) {
        const auto& big = t == DType::f32 ? f32_large : narrow_large;
        list.insert(list.end(), big.begin(), big.end());
      }
      for (const S& s : list) {
        if (s.offset && !offsets_ok) continue;
        if (std::max({s.m * s.k, s.k * s.n, s.m * s.n}) > cand.max_n) continue;
        CaseSpec c;
        c.dtype = t;
        c.dims = {{"m", s.m}, {"n", s.n}, {"k", s.k}};
        c.family = s.family;
        c.offset_elements = s.offset;
        c.id = fmt::format("{}/m={},n={},k={}/{}{}", to_string(t), s.m, s.n, s.k, s.family, s.offset ? "/offset=1" : "");
        c.seed = mix_seed(seed, std::hash<std::string>{}(c.id));
        cases.push_back(c);
      }
    }
    return cases;
  }

  std::vector<Dims> benchmark_shapes() const override {
    return {{{"m", 1024}, {"n", 1024}, {"k", 1024}}, {{"m", 2048}, {"n", 2048}, {"k", 2048}}, {{"m", 4096}, {"n", 4096}, {"k", 4096}}};
  }

  bool prefers_gpu_reference(const Dims& d) const override {
    return d.at("m") * d.at("n") * d.at("k") > kCpuReferenceMaxMacs;
  }

  CaseData make_case(const CaseSpec& spec) const override {
    const std::int64_t m = spec.dim("m"), n = spec.dim("n"), k = spec.dim("k");
    if (m < 1 || n < 1 || k < 1) throw_error(ErrorKind::unsupported, fmt::format("gemm case {} has an empty dim", spec.id));
    builtin::require_known_family(spec, {"normal", "nonzero_mean", "integers", "identity", "row_scaled", "specials", "overflow"},
                                  "gemm value family");
    const bool f16 = spec.dtype == DType::f16;
    CaseData d;
    d.spec = spec;
    d.dims = {{"m", m}, {"n", n}, {"k", k}};
    std::vector<float> a(std::size_t(m * k)), b(std::size_t(k * n));
    const std::string& fam = spec.family;
    // Element e of a (row e / k) or b (column e % n), from a generator per 2^16-element chunk.
    auto fill = [&](std::vector<float>& v, std::uint64_t which, std::int64_t cols, bool is_a) {
      builtin::for_each_in_seeded_chunks(v.size(), spec.seed, [&](std::size_t e, Rng& rng) {
        const std::int64_t row = std::int64_t(e) / cols, col = std::int64_t(e) % cols;
        float x;
        if (fam == "nonzero_mean") x = is_a ? float(1.0 + 0.5 * rng.normal()) : float(0.5 + 0.25 * rng.normal());
        else if (fam == "integers") x = float(std::int64_t(rng.below(7)) - 3);
        else if (fam == "identity") x = is_a ? (row % k == col ? 1.0f : 0.0f) : float(rng.normal());
        else if (fam == "row_scaled" && !f16)
          // a's rows and b's columns scaled over 2^-20..2^20 and 2^-18..2^18: the bound must be per element.
          x = is_a ? float(std::ldexp(rng.normal(), int(row % 41) - 20)) : float(std::ldexp(rng.normal(), int(col % 37) - 18));
        else if (fam == "row_scaled")
          // f16: 2^-12..2^4 and 2^-10..2^2: subnormal inputs (below 2^-14) and outputs, c within 65504.
          x = is_a ? float(std::ldexp(rng.normal(), int(row % 17) - 12)) : float(std::ldexp(rng.normal(), int(col % 13) - 10));
        else if (fam == "overflow") x = is_a ? overflow_a(row, col, rng) : overflow_b(row, col);
        else x = float(rng.normal());  // normal, specials
        v[e] = x;
      }, which * 1000003);
    };
    fill(a, 1, k, true);
    fill(b, 2, n, false);
    if (fam == "overflow") pair_overflow_rows(a, m, k);
    if (fam == "specials") {
      const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
      auto A = [&](std::int64_t i, std::int64_t p) -> float& { return a[std::size_t(i * k + p)]; };
      auto B = [&](std::int64_t p, std::int64_t j) -> float& { return b[std::size_t(p * n + j)]; };
      A(m / 2, k / 3) = nan;              // row m/2 of c is NaN
      A(m - 1, k - 1) = inf;              // last row of c: ±Inf (in the K tail) ...
      B(k - 1, n / 2) = 0.0f;             // ... except Inf * 0 = NaN at (m-1, n/2)
      B(0, n - 1) = -inf;                 // last column of c: ±Inf (or NaN where it meets +Inf)
    }
    d.inputs.push_back(builtin::float_values_tensor("a", spec.dtype, a));
    d.inputs.push_back(builtin::float_values_tensor("b", spec.dtype, b));
    return d;
  }

  // Family overflow (for f16; exact integers, so every f32 partial sum and c itself are exact): b[p][j] =
  // 64 + 16 ((p / 2 + j) % 4), equal within each pair of k; rows i % 3 == 0 of a hold 1024 .. 1535 (every
  // product is past 65504, c is Inf), rows i % 3 == 1 the same at even p, each cancelled at p + 1 down to
  // (i + p / 2) % 4 (pair_overflow_rows: c = sum of those times b, finite, while a running sum passes
  // 65504), rows i % 3 == 2 N(0, 1/16).
  static float overflow_a(std::int64_t row, std::int64_t, Rng& rng) {
    return row % 3 == 2 ? float(0.25 * rng.normal()) : float(1024 + rng.below(512));
  }
  static float overflow_b(std::int64_t p, std::int64_t j) { return float(64 + 16 * ((p / 2 + j) % 4)); }
  static void pair_overflow_rows(std::vector<float>& a, std::int64_t m, std::int64_t k) {
    for (std::int64_t i = 1; i < m; i += 3) {
      float* r = a.data() + i * k;
      for (std::int64_t p = 0; p + 1 < k; p += 2) r[p + 1] = -(r[p] - float((i + p / 2) % 4));
      if (k % 2) r[k - 1] = 0.0f;  // the unpaired last one
    }
  }

  std::vector<Tensor> reference(const CaseData& data, ReferenceHost& /*host*/) const override {
    const std::int64_t m = data.dims.at("m"), n = data.dims.at("n"), k = data.dims.at("k");
    const Tensor& ta = data.inputs.at(0);
    const Tensor& tb = data.inputs.at(1);
    const DType t = ta.dtype;
    const std::size_t un = std::size_t(n), uk = std::size_t(k);
    std::vector<double> bd(uk * un), babs(uk * un);
    for (std::size_t e = 0; e < bd.size(); ++e) {
      bd[e] = element_as_double(t, tb.bytes.data(), e);
      babs[e] = std::fabs(bd[e]);
    }
    std::vector<double> cref(std::size_t(m) * un, 0.0), sabs(std::size_t(m) * un, 0.0);
    // i-p-j order: the inner loop runs over contiguous rows of b and c, and every c[i][j] is still
    // summed in k order (f64 products of f32/bf16 values are exact).
    parallel_for(std::size_t(m), [&](std::size_t i) {
      double* cr = cref.data() + i * un;
      double* sr = sabs.data() + i * un;
      for (std::size_t p = 0; p < uk; ++p) {
        const double x = element_as_double(t, ta.bytes.data(), i * uk + p), ax = std::fabs(x);
        const double* br = bd.data() + p * un;
        const double* bar = babs.data() + p * un;
        for (std::size_t j = 0; j < un; ++j) {
          cr[j] += x * br[j];
          sr[j] += ax * bar[j];
        }
      }
    });
    return {expected_c(t, m, n, k, cref.data(), sabs.data())};
  }

  std::optional<GpuReference> gpu_reference(const CaseData& data) const override {
    const std::int64_t m = data.dims.at("m"), n = data.dims.at("n"), k = data.dims.at("k");
    GpuReference g;
    g.source = kGpuReferenceSource;
    GpuLaunch l;
    const DType dt = data.inputs.at(0).dtype;
    l.kernel = dt == DType::bf16 ? "gemm_ref_bf16" : dt == DType::f16 ? "gemm_ref_f16" : "gemm_ref_f32";
    l.grid[0] = (n + 255) / 256;
    l.grid[1] = m;  // m <= 16384 < 65535
    l.block[0] = 256;
    l.args = {{"a", 0, 8}, {"b", 0, 8}, {"cref", 0, 8}, {"sabs", 0, 8}, {"", m, 8}, {"", n, 8}, {"", k, 8}};
    g.launches.push_back(l);
    for (const char* r : {"cref", "sabs"}) {
      Tensor t;
      t.name = r;
      t.dtype = DType::f64;
      t.elements = m * n;
      g.raw_outputs.push_back(t);
    }
    return g;
  }

  std::vector<Tensor> reference_from_gpu(const CaseData& data, const std::vector<Tensor>& raw) const override {
    const std::int64_t m = data.dims.at("m"), n = data.dims.at("n"), k = data.dims.at("k");
    const Tensor* cref = nullptr;
    const Tensor* sabs = nullptr;
    for (const auto& t : raw) {
      if (t.name == "cref") cref = &t;
      if (t.name == "sabs") sabs = &t;
    }
    const std::size_t want = std::size_t(m * n) * 8;
    if (!cref || !sabs || cref->bytes.size() != want || sabs->bytes.size() != want)
      throw_error(ErrorKind::internal, fmt::format("gemm GPU reference: expected raw outputs cref and sabs of {} bytes", want));
    std::vector<double> c(std::size_t(m * n)), s(std::size_t(m * n));
    std::memcpy(c.data(), cref->bytes.data(), want);
    std::memcpy(s.data(), sabs->bytes.data(), want);
    return {expected_c(data.inputs.at(0).dtype, m, n, k, c.data(), s.data())};
  }

  double flops(const std::map<std::string, std::int64_t>& d, DType) const override {
    return 2.0 * double(d.at("m")) * double(d.at("n")) * double(d.at("k"));
  }
  std::string roofline_ceiling() const override { return "fma"; }
};

}  // namespace

const Contract& gemm_contract() {
  static const Gemm c;
  return c;
}

}  // namespace kqual::contract
