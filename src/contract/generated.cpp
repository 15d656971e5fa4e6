#include "kqual/contract/generated.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract {

std::uint32_t generated_bits(std::uint64_t seed, int stream, std::uint64_t i, DType t) {
  std::uint64_t z = seed ^ (std::uint64_t(stream + 1) * 0xD1B54A32D192ED03ull);
  z += (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  switch (t) {
    case DType::f32: {
      const std::int32_t k = std::int32_t(std::uint32_t(z >> 40)) - (1 << 23);  // [-2^23, 2^23)
      const float v = float(k) * 0x1.0p-23f;
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      return bits;
    }
    case DType::bf16: {
      const std::uint32_t sign = std::uint32_t(z >> 63) << 15;
      const std::uint32_t exponent = 120u + std::uint32_t((z >> 40) % 7u);  // 2^-7 .. 2^-1
      const std::uint32_t mantissa = std::uint32_t(z >> 20) & 0x7Fu;
      return sign | (exponent << 7) | mantissa;
    }
    case DType::f16: {
      const std::uint32_t sign = std::uint32_t(z >> 63) << 15;
      const std::uint32_t exponent = 8u + std::uint32_t((z >> 40) % 7u);  // 2^-7 .. 2^-1
      const std::uint32_t mantissa = std::uint32_t(z >> 20) & 0x3FFu;
      return sign | (exponent << 10) | mantissa;
    }
    case DType::i32: return std::uint32_t(z >> 32);
    default: break;
  }
  throw_error(ErrorKind::internal, fmt::format("no generated values for dtype {}", to_string(t)));
}

int generated_dtype_code(DType t) {
  switch (t) {
    case DType::f32: return 0;
    case DType::bf16: return 1;
    case DType::i32: return 2;
    case DType::f16: return 3;
    default: break;
  }
  throw_error(ErrorKind::internal, fmt::format("no generated values for dtype {}", to_string(t)));
}

const char* generated_kernel_source() {
  return R"CUDA(
extern "C" __global__ void kqual_generate(void* p, unsigned long long n, unsigned long long seed, int stream, int dtype) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned long long z = seed ^ ((unsigned long long)(stream + 1) * 0xD1B54A32D192ED03ull);
    z += (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    if (dtype == 0) {
      int k = (int)(unsigned int)(z >> 40) - (1 << 23);
      ((float*)p)[i] = (float)k * 0x1.0p-23f;
    } else if (dtype == 1) {
      unsigned int sign = (unsigned int)(z >> 63) << 15;
      unsigned int exponent = 120u + (unsigned int)((z >> 40) % 7u);
      unsigned int mantissa = (unsigned int)(z >> 20) & 0x7Fu;
      ((unsigned short*)p)[i] = (unsigned short)(sign | (exponent << 7) | mantissa);
    } else if (dtype == 3) {
      unsigned int sign = (unsigned int)(z >> 63) << 15;
      unsigned int exponent = 8u + (unsigned int)((z >> 40) % 7u);
      unsigned int mantissa = (unsigned int)(z >> 20) & 0x3FFu;
      ((unsigned short*)p)[i] = (unsigned short)(sign | (exponent << 10) | mantissa);
    } else {
      ((unsigned int*)p)[i] = (unsigned int)(z >> 32);
    }
  }
}
)CUDA";
}

CaseData generated_subcase(const Contract& c, const CaseSpec& big, const OutputWindow& w) {
  CaseData d;
  d.spec = big;
  d.spec.dims = w.sub_dims;
  d.spec.id = big.id + "/window:" + w.why;
  d.dims = w.sub_dims;
  int stream = 0;
  for (const auto& t : c.tensors()) {
    if (t.role != Role::input) continue;
    const int this_stream = stream++;
    Tensor x;
    x.name = t.name;
    x.dtype = c.tensor_dtype(t.name, big.dtype);
    x.elements = c.tensor_elements(t.name, w.sub_dims);
    const std::size_t es = dtype_size(x.dtype);
    x.bytes.resize(std::size_t(x.elements) * es);
    auto it = w.gather.find(t.name);
    if (it == w.gather.end()) throw_error(ErrorKind::internal, fmt::format("window {} gathers nothing for input '{}'", w.why, t.name));
    std::size_t at = 0;
    for (const auto& [b, n] : it->second)
      for (std::int64_t k = 0; k < n; ++k, ++at) {
        if (at >= std::size_t(x.elements)) throw_error(ErrorKind::internal, fmt::format("window {}: gather overruns '{}'", w.why, t.name));
        const std::uint32_t bits = generated_bits(big.seed, this_stream, std::uint64_t(b + k), x.dtype);
        std::memcpy(x.bytes.data() + at * es, &bits, es);  // little-endian: the low bytes
      }
    if (at != std::size_t(x.elements))
      throw_error(ErrorKind::internal, fmt::format("window {}: gathered {} of {} elements of '{}'", w.why, at, x.elements, t.name));
    d.inputs.push_back(std::move(x));
  }
  return d;
}

namespace {

// Windows of `len` starting at each of `starts` (clipped to [0, total)), sorted, overlaps merged.
std::vector<std::pair<std::int64_t, std::int64_t>> merge_windows(std::vector<std::int64_t> starts, std::int64_t len,
                                                                 std::int64_t total) {
  for (auto& st : starts) st = std::clamp<std::int64_t>(st, 0, std::max<std::int64_t>(total - len, 0));
  std::sort(starts.begin(), starts.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::int64_t st : starts) {
    const std::int64_t e = std::min(total, st + len);
    if (!out.empty() && st <= out.back().first + out.back().second)
      out.back().second = std::max(out.back().first + out.back().second, e) - out.back().first;
    else
      out.push_back({st, e - st});
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> index_windows(std::int64_t n, std::int64_t len, std::uint64_t seed, int extra) {
  std::vector<std::int64_t> starts = {0, n - len};
  for (std::int64_t edge : {std::int64_t(1) << 31, std::int64_t(1) << 32})
    if (edge < n) starts.push_back(edge - len / 2);
  Rng rng(seed ^ 0xA5A5A5A5ull);
  for (int k = 0; k < extra; ++k) starts.push_back(std::int64_t(rng.below(std::uint64_t(std::max<std::int64_t>(n - len, 1)))));
  return merge_windows(std::move(starts), len, n);
}

std::vector<OutputWindow> contiguous_windows(const CaseSpec& spec, std::int64_t n, const std::string& output,
                                             const std::vector<std::string>& inputs) {
  std::vector<OutputWindow> out;
  for (const auto& [b, count] : index_windows(n, 4096, spec.seed, 4)) {
    OutputWindow w;
    w.tensor = output;
    w.begin = b;
    w.count = count;
    w.sub_dims = {{"n", count}};
    for (const auto& in : inputs) w.gather[in] = {{b, count}};
    w.why = fmt::format("{}[{}..{})", output, b, b + count);
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<OutputWindow> row_block_windows(const CaseSpec& spec, std::int64_t len, std::int64_t output_per_row) {
  const std::int64_t rows = spec.dim("rows"), cols = spec.dim("cols");
  std::vector<OutputWindow> out;
  for (const auto& [r0, n] : row_windows(rows, cols, len, spec.seed, 3)) {
    OutputWindow w;
    w.tensor = "y";
    w.begin = r0 * output_per_row;
    w.count = n * output_per_row;
    w.sub_dims = {{"rows", n}, {"cols", cols}};
    w.gather["x"] = {{r0 * cols, n * cols}};
    w.why = fmt::format("rows {}..{}", r0, r0 + n);
    out.push_back(std::move(w));
  }
  return out;
}


std::vector<Tensor> Contract::window_reference(const CaseSpec& big, const OutputWindow& w, ReferenceHost& host) const {
  return reference(generated_subcase(*this, big, w), host);
}

bool Contract::inputs_generatable(const CaseSpec& spec) const {
  for (const auto& t : tensors()) {
    if (t.role != Role::input) continue;
    const DType d = tensor_dtype(t.name, spec.dtype);
    if (d != DType::f32 && d != DType::bf16 && d != DType::f16 && d != DType::i32) return false;
  }
  return true;
}

CaseData generated_case(const Contract& c, const CaseSpec& spec) {
  OutputWindow all;
  all.why = "whole";
  all.sub_dims = spec.dims;
  for (const auto& t : c.tensors())
    if (t.role == Role::input) all.gather[t.name] = {{0, c.tensor_elements(t.name, spec.dims)}};
  CaseData d = generated_subcase(c, spec, all);
  d.spec.id = spec.id;
  return d;
}

std::vector<std::pair<std::int64_t, std::int64_t>> row_windows(std::int64_t rows, std::int64_t cols, std::int64_t len,
                                                               std::uint64_t seed, int extra) {
  std::vector<std::int64_t> starts = {0, rows - len};
  for (std::int64_t edge : {std::int64_t(1) << 31, std::int64_t(1) << 32})
    if (edge < rows * cols) starts.push_back(edge / cols - len / 2);
  Rng rng(seed ^ 0x5A5A5A5Aull);
  for (int k = 0; k < extra; ++k) starts.push_back(std::int64_t(rng.below(std::uint64_t(std::max<std::int64_t>(rows - len, 1)))));
  return merge_windows(std::move(starts), len, rows);
}

std::optional<Dims> past_int32_matrix(std::int64_t max_n, std::int64_t cols) {
  const std::int64_t want = (std::int64_t(1) << 31) + (1 << 20);  // a million elements past the wrap
  const std::int64_t target = std::min(max_n, want);
  if (target <= (std::int64_t(1) << 31)) return std::nullopt;
  std::int64_t rows = (target + cols - 1) / cols;
  while (rows * cols > target && rows > 1) --rows;
  if (rows * cols <= (std::int64_t(1) << 31)) {  // a tight claim: narrower rows that still pass 2^31
    rows = (std::int64_t(1) << 31) / cols + 1;
    if (rows * cols > max_n) return std::nullopt;
  }
  return Dims{{"rows", rows}, {"cols", cols}};
}

std::vector<CaseSpec> matrix_index_cases(const Contract& c, const Supports& cand, std::uint64_t seed, std::int64_t cols) {
  std::vector<CaseSpec> out;
  if (!c.claimed_range(cand).past_int32()) return out;
  const std::optional<Dims> dims = past_int32_matrix(cand.max_n, cols);
  if (!dims) return out;
  for (DType t : c.dtypes()) {
    if (!cand.supports(t)) continue;
    CaseSpec k;
    k.dtype = t;
    k.dims = *dims;
    k.family = kGeneratedFamily;
    k.seed = mix_seed(seed, std::uint64_t(dims->at("rows")) * 131 + std::uint64_t(t));
    k.id = fmt::format("{}/{}/past-2^31", to_string(t), format_dims(*dims));
    if (!c.validate(c.request(t, *dims), cand)) out.push_back(k);
  }
  return out;
}

}  // namespace kqual::contract
