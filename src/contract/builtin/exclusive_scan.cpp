// Contract: exclusive prefix sum. y[0] = 0, y[i] = x[0] + ... + x[i-1], n contiguous elements.
// i32: exact, two's-complement wrap-around on overflow (the sum modulo 2^32) is the defined result.
// f32: error model. Any association order of IEEE single adds is admissible (sequential, blocked,
// tree, reduce-then-scan, decoupled look-back), so the bound is the worst case over all orders:
// y[i] is formed by k = i - 1 adds of the i terms x[0..i-1], each partial sum is at most
// S_i (1+u)^k in magnitude (S_i = sum_{j<i} |x_j|), so |y[i] - sum| <= k u S_i exp(k u),
// u = 2^-24. The reference is accumulated in long double (64-bit significand) on the CPU; its own
// error (and the rounding of the reference to double) is added to the bound.
#include <fmt/format.h>

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

constexpr std::int64_t kMaxN = std::int64_t(1) << 40;  // contract domain limit [elements]

class ExclusiveScan final : public builtin::DescribedContract {
 public:
  ExclusiveScan()
      : DescribedContract(
            "exclusive_scan",
            "y[0] = 0, y[i] = x[0] + ... + x[i-1] (exclusive prefix sum) over n contiguous elements",
            Domain{
                .dims = {{.name = "n", .from_length_of = "x"}},
                .tensors = {{.name = "x", .role = Role::input, .shape = {"n"}, .description = "values, n elements"},
                            {.name = "y", .role = Role::output, .shape = {"n"},
                             .description = "exclusive prefix sums, n elements"}},
                .dtypes = {DType::i32, DType::f32},
                .limits = {{.dims = {"n"}, .max = kMaxN}},
                .claim = {.dims = {"n"}},
                .in_place = InPlace{"y", "x"},
            }) {}
  // i32: required — the sum modulo 2^32 is exact in any order, so a difference between runs is a
  // wrong element. f32: not required — the error bound admits any association order, and the
  // standard single-pass scan (decoupled look-back, CUB's DeviceScan) combines a tile's
  // predecessors in an order that depends on timing (its f32 results differed between two runs on
  // the H200); each run is still held to the bound, and so is the difference between them.
  Reproducibility reproducibility(DType t) const override {
    if (t == DType::i32)
      return {.required = true,
              .reason = "the i32 scan is exact (modulo 2^32) in any order: any run-to-run difference is already a wrong "
                        "element",
              .opt_out = "none: an exact integer scan has one right answer"};
    return builtin::any_order_admitted(
        "the f32 error bound admits any association order, and single-pass scans with decoupled look-back (CUB's) combine "
        "tile prefixes in an order that depends on timing");
  }

  std::string numerical_policy() const override {
    return "i32: bit-exact; the sum is taken modulo 2^32 (two's-complement wrap-around on overflow is the defined "
           "result, not an error). f32: error model. Any association order of IEEE-754 single-precision adds is "
           "admissible (sequential, blocked, tree, reduce-then-scan, look-back), so for y[i] (k = i-1 adds of the "
           "terms x[0..i-1], S_i = sum_{j<i} |x_j|, u = 2^-24) the bound is |y[i] - ref[i]| <= k*u*S_i*exp(k*u) "
           "(the worst case over all orders; y[0] = 0 and y[1] = x[0] are exact), plus the reference's own error. "
           "The reference is accumulated in long double (64-bit significand) on the CPU. Accumulating in bf16 or "
           "f16 exceeds the bound on long prefixes (>= 8192 terms) of non-zero-mean data. Denormals must be "
           "preserved (y[1] = x[0] exactly). NaN never matches a number: after a NaN, or after both +Inf and -Inf, "
           "every later y is NaN; after +Inf alone every later y is +Inf. Run to run: i32 must be bitwise "
           "reproducible; f32 need not be (look-back scans vary the order), but two runs must each be within the "
           "bound of the reference; their difference is reported, never failed (two runs within the bound may differ "
           "by up to twice it).";
  }

  // i32 (exact, wrapping): n just past 2^31, and past 2^32 when the claim reaches it. f32 has no
  // such case: its error bound depends on the whole prefix, which a window cannot carry exactly.
  std::vector<CaseSpec> index_cases(const Supports& cand, std::uint64_t seed) const override {
    std::vector<CaseSpec> out;
    if (!cand.supports(DType::i32) || !claimed_range(cand).past_int32()) return out;
    auto add = [&](std::int64_t n, const char* what) {
      CaseSpec c;
      c.dtype = DType::i32;
      c.dims = {{"n", n}};
      c.family = kGeneratedFamily;
      c.seed = mix_seed(seed, std::uint64_t(n) * 613);
      c.id = fmt::format("i32/n={}/{}", n, what);
      out.push_back(c);
    };
    add(std::min<std::int64_t>(cand.max_n, (std::int64_t(1) << 31) + (1 << 20) + 3), "past-2^31");
    if (cand.max_n > (std::int64_t(1) << 32)) add(std::min<std::int64_t>(cand.max_n, (std::int64_t(1) << 32) + (1 << 20) + 5), "past-2^32");
    return out;
  }
  std::vector<OutputWindow> index_case_windows(const CaseSpec& spec) const override {
    return contiguous_windows(spec, spec.dim("n"), "y", {"x"});
  }
  // y[b..b+c) = carry + the exclusive scan of x[b..b+c), carry = x[0] + ... + x[b-1] (mod 2^32, summed
  // from the generator in parallel chunks): the scan of [carry, x[b], ..., x[b+c-1]] from its second element.
  std::vector<Tensor> window_reference(const CaseSpec& big, const OutputWindow& w, ReferenceHost& host) const override {
    if (big.dtype != DType::i32) throw_error(ErrorKind::internal, "exclusive_scan windows are i32 only");
    constexpr std::uint64_t kChunk = std::uint64_t(1) << 22;
    const std::uint64_t chunks = (std::uint64_t(w.begin) + kChunk - 1) / kChunk;
    std::vector<std::uint32_t> partial(chunks, 0);
    parallel_for(std::size_t(chunks), [&](std::size_t k) {
      std::uint32_t acc = 0;
      const std::uint64_t e = std::min<std::uint64_t>(std::uint64_t(w.begin), (k + 1) * kChunk);
      for (std::uint64_t i = k * kChunk; i < e; ++i) acc += generated_bits(big.seed, 0, i, DType::i32);
      partial[k] = acc;
    });
    std::uint32_t carry = 0;
    for (auto p : partial) carry += p;
    CaseData sub;
    sub.spec = big;
    sub.dims = {{"n", w.count + 1}};
    sub.spec.dims = sub.dims;
    Tensor x;
    x.name = "x";
    x.dtype = DType::i32;
    x.elements = w.count + 1;
    x.bytes.resize(std::size_t(x.elements) * 4);
    std::memcpy(x.bytes.data(), &carry, 4);
    for (std::int64_t k = 0; k < w.count; ++k) {
      const std::uint32_t v = generated_bits(big.seed, 0, std::uint64_t(w.begin + k), DType::i32);
      std::memcpy(x.bytes.data() + 4 * std::size_t(k + 1), &v, 4);
    }
    sub.inputs.push_back(std::move(x));
    Tensor y = reference(sub, host).at(0);
    y.bytes.erase(y.bytes.begin(), y.bytes.begin() + 4);
    y.elements = w.count;
    return {y};
  }

  std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const override {
    // Tile boundaries of common designs: warp 32, blocks of 256/1024 threads, 4096-element tiles
    // (256 threads x 16 items), several tiles, primes, and prefixes >= 8192 for precision.
    const std::vector<std::int64_t> sizes = {1,    2,    3,    31,   32,    33,    255,   256,    257,    1023,   1024,
                                             1025, 4095, 4096, 4097, 8191,  8192,  8193,  12289,  65537,  999983, (1 << 24) + 1};
    std::vector<CaseSpec> cases;
    auto add = [&](DType t, std::int64_t n, const std::string& fam, std::int64_t off) {
      if (n <= cand.max_n) cases.push_back(builtin::vector_family_case(t, n, fam, off, seed));
    };
    for (DType t : dtypes()) {
      if (!cand.supports(t)) continue;
      const bool unaligned = builtin::admits_element_offset(cand, t);
      const std::vector<std::string> fams = t == DType::i32
                                                ? std::vector<std::string>{"counts", "signed", "wrap"}
                                                : std::vector<std::string>{"normal", "nonzero_mean", "alternating", "log_uniform"};
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        const std::int64_t n = sizes[k];
        const std::string fam = fams[k % fams.size()];
        add(t, n, fam, 0);
        // Long prefixes of non-zero-mean data expose narrow accumulation (f32) / the carry (i32).
        const std::string extra = t == DType::i32 ? "counts" : "nonzero_mean";
        if (n >= 8192 && fam != extra) add(t, n, extra, 0);
        if (t == DType::f32 && (n == 33 || n == 4097 || n == 65537)) add(t, n, "specials", 0);
        if (unaligned && (n == 257 || n == 4097 || n == 65537)) add(t, n, fams[0], 1);
      }
      if (include_large) add(t, (std::int64_t(1) << 27) + 3, t == DType::i32 ? "wrap" : "nonzero_mean", 0);
    }
    return cases;
  }

  std::vector<Dims> benchmark_shapes() const override {
    return {{{"n", std::int64_t(1) << 12}}, {{"n", std::int64_t(1) << 20}}, {{"n", std::int64_t(1) << 28}}};
  }

  CaseData make_case(const CaseSpec& spec) const override {
    const std::int64_t n64 = spec.dim("n");
    if (n64 < 1) throw_error(ErrorKind::unsupported, "case with n < 1");
    builtin::require_known_family(spec, {"counts", "signed", "wrap", "normal", "nonzero_mean", "alternating", "log_uniform", "specials"});
    if (spec.dtype != DType::i32 && spec.dtype != DType::f32)
      throw_error(ErrorKind::unsupported, fmt::format("exclusive_scan has no dtype {}", to_string(spec.dtype)));
    const std::size_t n = std::size_t(n64);
    CaseData d;
    d.spec = spec;
    d.dims["n"] = n64;
    Tensor x = builtin::zeroed_tensor("x", spec.dtype, n64);
    builtin::for_each_in_seeded_chunks(n, spec.seed, [&](std::size_t i, Rng& rng) {
      if (spec.dtype == DType::i32) {
        std::int32_t v;
        if (spec.family == "counts") v = rng.below(3) == 0 ? 0 : std::int32_t(rng.below(10));  // runs of zeros
        else if (spec.family == "signed") v = std::int32_t(rng.below(2000001)) - 1000000;
        else {  // "wrap": large magnitudes, the sum overflows within a few elements
          std::uint32_t w = std::uint32_t(rng.below(std::uint64_t(1) << 30)) + (std::uint32_t(1) << 30);
          if (rng.below(5) == 0) w = 0u - w;
          std::memcpy(&v, &w, 4);
        }
        std::memcpy(x.bytes.data() + 4 * i, &v, 4);
      } else {
        float v;
        if (spec.family == "normal" || spec.family == "specials") v = float(rng.normal());
        else if (spec.family == "nonzero_mean") v = float(0.7 + 0.03 * rng.normal());  // mean >> std, biased rounding
        else if (spec.family == "alternating") v = float((i % 2 ? -1.0 : 1.0) * (1.0 + rng.uniform()));
        else v = float((rng.below(2) ? -1.0 : 1.0) * std::ldexp(1.0 + rng.uniform(), int(rng.below(41)) - 20));
        std::memcpy(x.bytes.data() + 4 * i, &v, 4);
      }
    });
    if (spec.family == "specials" && n >= 8) {
      // +Inf in the middle (later prefixes +Inf), NaN near the end (later prefixes NaN), -0 at the start.
      auto put = [&](std::size_t i, float v) { std::memcpy(x.bytes.data() + 4 * i, &v, 4); };
      put(0, -0.0f);
      put(n / 2, std::numeric_limits<float>::infinity());
      put(n - 3, std::numeric_limits<float>::quiet_NaN());
    }
    d.inputs.push_back(std::move(x));
    return d;
  }

  std::vector<Tensor> reference(const CaseData& data, ReferenceHost& /*host*/) const override {
    const Tensor& x = data.inputs.at(0);
    const std::size_t n = std::size_t(x.elements);
    Tensor y = builtin::zeroed_tensor("y", x.dtype, x.elements);
    if (x.dtype == DType::i32) {
      std::uint32_t acc = 0;  // modulo 2^32
      for (std::size_t i = 0; i < n; ++i) {
        std::memcpy(y.bytes.data() + 4 * i, &acc, 4);
        std::uint32_t v;
        std::memcpy(&v, x.bytes.data() + 4 * i, 4);
        acc += v;
      }
      return {y};
    }
    y.ref.resize(n);
    y.bound.resize(n);
    const double u = unit_roundoff(DType::f32);
    long double sum = 0, abs_sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double r = double(sum);
      y.ref[i] = r;
      const double k = i == 0 ? 0.0 : double(i - 1);  // adds needed to form y[i]
      const double s = double(abs_sum);
      // Worst case over all association orders, plus the long double accumulation (i * 2^-63 * S)
      // and the rounding of the reference to double (2^-53 |ref|).
      y.bound[i] = k * u * s * std::exp(k * u) + double(i) * std::ldexp(s, -62) + std::ldexp(std::fabs(r), -52);
      store_element(DType::f32, y.bytes.data(), i, r);
      float v;
      std::memcpy(&v, x.bytes.data() + 4 * i, 4);
      sum += v;
      abs_sum += std::fabs(v);
    }
    return {y};
  }

  double flops(const std::map<std::string, std::int64_t>& dims, DType) const override { return double(dims.at("n")); }
};

}  // namespace

const Contract& exclusive_scan_contract() {
  static const ExclusiveScan c;
  return c;
}

}  // namespace kqual::contract
