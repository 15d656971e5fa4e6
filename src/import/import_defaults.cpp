// What an importer writes where the source is silent (import_common.hpp): the default tolerance of a
// floating output, from its dtype and the operation's reduction length, and the precision the
// imported reference really computes in.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <vector>

#include "import_common.hpp"

namespace kqual::contract::detail {

DefaultTolerance default_tolerance(const std::string& out_dtype, std::int64_t contraction, std::int64_t row) {
  const bool f64 = out_dtype == "f64";
  const double u = f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);  // unit roundoff of the computation
  const std::int64_t kc = std::max<std::int64_t>(1, contraction), kr = std::max<std::int64_t>(1, row);
  const std::int64_t k = kc > 1 ? kc : kr;
  DefaultTolerance t;
  t.rtol = 2 * u * std::max(64.0, 16 * std::sqrt(double(k)));
  t.atol = 2 * u * std::max(64.0, 8 * double(kc));
  // A narrow output: the reference may round to it on the way (one more rounding than the kernel's),
  // and an output near 1 is off by a whole ulp of it when the two round different f32 values.
  std::string narrow_rtol, narrow_atol;
  if (out_dtype == "bf16" || out_dtype == "f16") {
    const bool bf16 = out_dtype == "bf16";
    t.rtol += std::ldexp(1.0, bf16 ? -8 : -11);
    t.atol = std::max(t.atol, std::ldexp(1.0, bf16 ? -7 : -10));
    narrow_rtol = fmt::format(" + 2^-{} ({}: one more half ulp, for references that round to {} on the way)", bf16 ? 8 : 11, out_dtype,
                              out_dtype);
    narrow_atol = fmt::format(", at least 2^-{} (one {} ulp at 1)", bf16 ? 7 : 10, out_dtype);
  } else if (is_fp8_dtype(out_dtype)) {
    const Fp8Floor f = fp8_floor(out_dtype);
    t.rtol += f.rtol;
    t.atol = std::max(t.atol, f.atol);
    narrow_rtol = fmt::format(" + {:g} (one {} ulp at the value: a kernel rounding another f32 value lands on a neighbour)", f.rtol, out_dtype);
    narrow_atol = fmt::format(", at least {:g} (one {} ulp among the subnormals)", f.atol, out_dtype);
  }
  t.why = fmt::format(
      "no tolerance in the source: kqual's default for a {} output, computed in {} (eps = 2u = {:.3g}), reduction length K = {} "
      "({}): rtol = eps max(64, 16 sqrt(K)){} = {:.3g}, atol = eps max(64, 8 x {}){} = {:.3g}",
      out_dtype, f64 ? "f64" : "f32", 2 * u, k,
      kc > 1 ? fmt::format("the contraction over the floating inputs' axes no output has, gathered tables left out, {}", kc)
             : fmt::format("no contraction; the output's innermost axis, {}, which a norm or softmax reduces along", kr),
      narrow_rtol, t.rtol, kc, narrow_atol, t.atol);
  return t;
}

std::string reference_precision(const std::string& src, const std::string& function) {
  struct Cast {
    const char* pattern;
    const char* dtype;
    const char* shown;
  };
  // Word-bounded: torch.float matches torch.float32's alias but not torch.float64.
  static const Cast casts[] = {
      {R"(\.float\(\))", "float32", ".float()"},          {R"(torch\.float32\b)", "float32", "torch.float32"},
      {R"(torch\.float\b(?!\d))", "float32", "torch.float"}, {R"(\.bfloat16\(\))", "bfloat16", ".bfloat16()"},
      {R"(torch\.bfloat16\b)", "bfloat16", "torch.bfloat16"}, {R"(\.half\(\))", "float16", ".half()"},
      {R"(torch\.(float16|half)\b)", "float16", "torch.float16"}, {R"(torch\.float8_e4m3fn\b)", "float8", "torch.float8_e4m3fn"},
      {R"(torch\.float8_e5m2\b)", "float8", "torch.float8_e5m2"}};
  std::vector<std::string> f32, narrow, fp8;
  for (const auto& c : casts)
    if (std::regex_search(src, std::regex(c.pattern)))
      (std::string(c.dtype) == "float32" ? f32 : std::string(c.dtype) == "float8" ? fp8 : narrow).push_back(c.shown);
  const bool back = std::regex_search(src, std::regex(R"(\.to\(\s*\w+\.dtype\s*\)|\.type_as\()"));
  std::vector<std::string> parts;
  if (f32.empty() && narrow.empty() && fp8.empty())
    parts.push_back(fmt::format("float64: kqual hands {}() float64 tensors and its source casts to no other dtype", function));
  else {
    if (!f32.empty())
      parts.push_back(fmt::format("float32 where {}() casts to it ({}), float64 elsewhere", function, fmt::join(f32, ", ")));
    else
      parts.push_back(fmt::format("float64 except where {}() casts", function));
    if (!narrow.empty())
      parts.push_back(fmt::format("rounded to bfloat16/float16 where it casts so ({}; the result widened exactly)", fmt::join(narrow, ", ")));
    // A quantizer's reference rounds last: its output is the fp8 value itself, exact in the output dtype.
    if (!fp8.empty())
      parts.push_back(fmt::format("rounded to float8 where it casts so ({}; PyTorch's rounding to nearest even, the result widened exactly)",
                                  fmt::join(fp8, ", ")));
  }
  if (back)
    parts.push_back("a cast back to an input's dtype (.to(x.dtype), .type_as) is float64 here: no rounding, where the source's own run rounds to "
                    "the input dtype");
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace kqual::contract::detail
