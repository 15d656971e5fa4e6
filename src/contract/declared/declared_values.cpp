// Input values of a declared contract's case, drawn as its `values` tables say (never guessed from
// names): a distribution, a scale, then NaN/Inf/-0, subnormals and near-overflow values at random
// positions. Values are drawn in chunks of 2^16 elements, each from its own generator seeded by
// (case seed, tensor, chunk), so a case is the same whatever the thread count.
#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "declared_spec.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/narrow_float.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract::declared {

double largest_finite(DType t) {
  switch (t) {
    case DType::bf16: return double(bf16_to_f32(0x7F7F));
    case DType::f64: return DBL_MAX;
    case DType::f16: return kF16.max_finite;
    case DType::e4m3: return kE4M3.max_finite;
    case DType::e5m2: return kE5M2.max_finite;
    default: return FLT_MAX;
  }
}

namespace {

bool is_int(DType t) { return is_integral(t); }

double denormal(DType t, Rng& rng) {
  double v;
  if (t == DType::f32) v = double(f32_from_bits(std::uint32_t(1 + rng.below(0x7FFFFF))));
  else if (t == DType::bf16) v = double(f32_from_bits(std::uint32_t(1 + rng.below(0x7F)) << 16));
  else if (const NarrowFormat* f = t == DType::f16 ? &kF16 : t == DType::e4m3 ? &kE4M3 : t == DType::e5m2 ? &kE5M2 : nullptr)
    v = double(1 + rng.below((1ull << f->mantissa_bits) - 1)) * f->min_subnormal();
  else v = std::ldexp(double(1 + rng.below(1ull << 51)), -1074);
  return rng.below(2) ? -v : v;
}

// One of the dtype's bit patterns, each equally likely, as the value it stands for: every code of a
// narrow float (subnormals, the largest, -0, NaN and Inf where the format has them) is drawn.
double random_pattern(DType t, Rng& rng) {
  const std::uint64_t bits = rng.next();
  std::uint8_t b[8];
  std::memcpy(b, &bits, sizeof b);
  return element_as_double(t, b, 0);
}

std::uint64_t name_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across platforms (std::hash is not)
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::vector<Tensor> generate_inputs(const Spec& s, const CaseSpec& spec, const Dims& dims,
                                    const std::map<std::string, DType>& dtypes, const std::string& only_tensor,
                                    std::uint64_t other_seed) {
  const Family* fam = nullptr;
  for (const auto& f : s.families)
    if (f.name == spec.family) fam = &f;
  if (!fam) throw_error(ErrorKind::internal, fmt::format("{}: unknown value family '{}'", s.file.string(), spec.family));
  std::vector<Tensor> out;
  for (const auto& td : s.tensors) {
    if (td.role != Role::input) continue;
    const Values& v = fam->values.at(td.name);
    const DType t = dtypes.at(td.name);
    std::int64_t n64 = 1;
    for (const auto& a : td.shape) n64 *= dims.at(a);
    const std::size_t n = std::size_t(n64);
    if (v.generated) {  // the generator's values replace these zeros (fill_generated, declared_generated.cpp)
      Tensor tn;
      tn.name = td.name;
      tn.dtype = t;
      tn.elements = n64;
      tn.bytes.assign(n * dtype_size(t), 0);
      out.push_back(std::move(tn));
      continue;
    }
    const std::size_t row = std::size_t(dims.at(td.shape.back()));  // the innermost axis: a "row"
    std::uint64_t seed = mix_seed(spec.seed, name_hash(td.name));
    if (td.name == only_tensor) seed = mix_seed(other_seed, name_hash(td.name));
    std::vector<double> vals;
    vals.reserve(n);
    advise_huge_pages(vals.data(), n * 8);
    vals.resize(n);

    if (v.dist == "offsets") {
      // Monotone offsets (CSR indptr): 0 first, the axis's value last, sorted draws between.
      const std::int64_t total = dims.at(v.axis);
      Rng rng(seed);
      for (std::size_t i = 0; i < n; ++i) vals[i] = double(rng.below(std::uint64_t(total) + 1));
      std::sort(vals.begin(), vals.end());
      vals.front() = 0;
      if (n > 1) vals.back() = double(total);
    } else if (v.dist == "indices" && v.unique) {
      // Each row holds distinct indices into the axis (Floyd's sampling).
      const std::int64_t range = dims.at(v.axis);
      if (std::int64_t(row) > range)
        throw_error(ErrorKind::unsupported, fmt::format("{}: tensors.{}: {} unique indices per row into {} = {} cannot exist",
                                                        s.file.string(), td.name, row, v.axis, range));
      parallel_for((n + row - 1) / row, [&](std::size_t r) {
        Rng rng(mix_seed(seed, r));
        std::vector<std::int64_t> picked;
        picked.reserve(row);
        std::vector<std::int64_t> sorted;
        for (std::int64_t j = range - std::int64_t(row); j < range; ++j) {
          std::int64_t k = std::int64_t(rng.below(std::uint64_t(j) + 1));
          const bool seen = std::find(picked.begin(), picked.end(), k) != picked.end();
          picked.push_back(seen ? j : k);
        }
        for (std::size_t j = 0; j < row && r * row + j < n; ++j) vals[r * row + j] = double(picked[j]);
      });
    } else if (v.dist == "softmax_rows") {
      parallel_for((n + row - 1) / row, [&](std::size_t r) {
        Rng rng(mix_seed(seed, r));
        const std::size_t b = r * row, e = std::min(n, b + row);
        double m = -INFINITY, sum = 0;
        for (std::size_t i = b; i < e; ++i) m = std::max(m, vals[i] = v.scale * rng.normal());
        for (std::size_t i = b; i < e; ++i) sum += (vals[i] = std::exp(vals[i] - m));
        for (std::size_t i = b; i < e; ++i) vals[i] /= sum;
      });
    } else {
      constexpr std::size_t kChunk = std::size_t(1) << 16;
      parallel_for((n + kChunk - 1) / kChunk, [&](std::size_t c) {
        Rng rng(mix_seed(seed, c));
        const std::size_t b = c * kChunk, e = std::min(n, b + kChunk);
        for (std::size_t i = b; i < e; ++i) {
          double x = 0;
          if (v.dist == "normal") x = v.scale * (v.mean + v.std * rng.normal());
          else if (v.dist == "uniform") x = v.scale * rng.uniform(v.lo, v.hi);
          else if (v.dist == "constant") x = v.value;
          else if (v.dist == "int") x = v.scale * (std::floor(v.lo) + double(rng.below(std::uint64_t(std::floor(v.hi) - std::floor(v.lo)) + 1)));
          else if (v.dist == "indices") x = double(rng.below(std::uint64_t(dims.at(v.axis))));
          else if (v.dist == "mask") x = rng.uniform() < v.p ? 1.0 : 0.0;
          else if (v.dist == "bits") x = random_pattern(t, rng);
          vals[i] = x;
        }
      });
    }
    // Special values at random positions (floating tensors only), the classic ones always present.
    if (!is_int(t) && (v.specials > 0 || v.denormals > 0 || v.extremes > 0)) {
      const double big = largest_finite(t);
      const double specials[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY, -0.0};
      constexpr std::size_t kChunk = std::size_t(1) << 16;
      parallel_for((n + kChunk - 1) / kChunk, [&](std::size_t c) {
        Rng rng(mix_seed(seed ^ 0x5bd1e995ull, c));
        const std::size_t b = c * kChunk, e = std::min(n, b + kChunk);
        for (std::size_t i = b; i < e; ++i) {
          const double u = rng.uniform();
          if (u < v.specials) vals[i] = specials[rng.below(4)];
          else if (u < v.specials + v.denormals) vals[i] = denormal(t, rng);
          else if (u < v.specials + v.denormals + v.extremes) vals[i] = (rng.below(2) ? -1 : 1) * rng.uniform(0.5, 1.0) * big;
        }
      });
      if (v.specials > 0) {
        Rng rng(mix_seed(seed, 0x51ec1a15));
        for (double sp : specials) vals[std::size_t(rng.below(n))] = sp;
      }
    }
    Tensor tn;
    tn.name = td.name;
    tn.dtype = t;
    tn.elements = n64;
    tn.bytes.reserve(n * dtype_size(t));
    advise_huge_pages(tn.bytes.data(), n * dtype_size(t));
    tn.bytes.resize(n * dtype_size(t));
    parallel_for((n + (1u << 16) - 1) / (1u << 16), [&](std::size_t c) {
      for (std::size_t i = c << 16; i < std::min(n, (c + 1) << 16); ++i) {
        double x = vals[i];
        if (is_int(t)) {
          x = std::nearbyint(x);
          if ((t == DType::u32 || t == DType::u8) && x < 0) x = 0;
        }
        store_element(t, tn.bytes.data(), i, x);
      }
    });
    if (td.layout == "strided") {
      // The same values in rows one stride apart, the padding poisoned (declared_strided.cpp).
      to_storage(s, tn, dims);
      poison_padding(s, tn, dims, spec.seed);
    }
    out.push_back(std::move(tn));
  }
  return out;
}

}  // namespace kqual::contract::declared
