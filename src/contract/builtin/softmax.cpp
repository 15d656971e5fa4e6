// Contract: y = softmax(x) along each row of a rows x cols row-major matrix:
// y[r][j] = exp(x[r][j] - m_r) / sum_k exp(x[r][k] - m_r), m_r = max_k x[r][k].
// f32: f32 in, f32 math, f32 out. bf16, f16: bf16 (f16) in and out, math in f32, output rounded once.
// Reference: f64 on the CPU (exp, sum and division in double), with a per-element error bound
// (see numerical_policy()). Special values follow what a plain max-subtracting kernel produces.
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

// Error-model constants, shared with the tests (declared there too).
namespace softmax_model {
double exp_rel(double d);
double sum_rel(std::int64_t cols);
double div_rel();
double abs_floor();
double out_rel(DType t);
double out_abs(DType t);
// Relative error admitted for exp(d) evaluated in f32 from x - m: the rounding of x - m (|d| u),
// and exp itself, including fast-math __expf (2 + 1.173 |d| ulp, 1 ulp <= 2u): (6 + 4 |d|) u.
double exp_rel(double d) { return (6.0 + 4.0 * std::fabs(d)) * std::ldexp(1.0, -24); }
// Relative error admitted for the row sum of cols positive terms in f32, any order, including
// online (max, sum) rescaling: 6 (cols + 2) u (worst-case recursive summation is (cols - 1) u).
double sum_rel(std::int64_t cols) { return 6.0 * double(cols + 2) * std::ldexp(1.0, -24); }
// Division (IEEE, reciprocal-multiply or __fdividef: <= 2 ulp).
double div_rel() { return 4.0 * std::ldexp(1.0, -24); }
// Absolute floor: results below the smallest normal may be flushed to zero (FTZ, __expf underflow).
double abs_floor() { return std::ldexp(1.0, -125); }
// The output's rounding, relative (its unit roundoff) and absolute (half the spacing of its
// subnormals: f16 outputs below 2^-14 are multiples of 2^-24, a probability of 1e-6 is one of them).
double out_rel(DType t) { return t == DType::f32 ? std::ldexp(1.0, -24) : unit_roundoff(t); }
double out_abs(DType t) { return t == DType::f16 ? std::ldexp(1.0, -25) : 0.0; }
}  // namespace softmax_model

namespace {

constexpr std::int64_t kMaxSoftmaxDim = (std::int64_t(1) << 31) - 1;

class Softmax final : public builtin::FixedRuleContract {
 public:
  Softmax()
      : FixedRuleContract(
            "softmax",
            "y = softmax(x) along each row: y[r][j] = exp(x[r][j] - max_r) / sum_k exp(x[r][k] - max_r); rows x cols, row-major",
            Domain{
                .dims = {{.name = "rows", .max = kMaxSoftmaxDim}, {.name = "cols", .max = kMaxSoftmaxDim}},
                .tensors = {{.name = "x", .role = Role::input, .shape = {"rows", "cols"},
                             .description = "logits, rows x cols, row-major"},
                            {.name = "y", .role = Role::output, .shape = {"rows", "cols"},
                             .description = "probabilities, rows x cols, row-major"}},
                .dtypes = {DType::f32, DType::bf16, DType::f16},
                .claim = {.dims = {"rows", "cols"}},
                .in_place = InPlace{"y", "x"},
            },
            // Required, although the bound admits any order of the row sum: every output of a row waits for
            // the whole row's max and sum, so a kernel that splits a row over blocks needs a second pass over
            // the row anyway, and merging the blocks' partial (max, sum) pairs there in a fixed order costs
            // nothing over atomics. Reproducibility is worth more here than in a plain reduction: softmax
            // feeds sampling, top-k and argmax, where a last-bit difference picks another token.
            builtin::bitwise_required(
                "each row's outputs wait for its whole max and sum, so split rows merge their partial (max, sum) "
                "pairs in a second pass whose fixed order costs nothing over atomics, and softmax feeds sampling, "
                "top-k and argmax, where a last-bit difference changes the pick",
                "none for the built-in softmax; a declared contract (contracts/softmax_declared/contract.toml) "
                "may set [contract] deterministic = false")) {}
  std::string numerical_policy() const override {
    return "Bounded error against an f64 CPU reference, per element. For a finite row with max m and d_j = x_j - m, "
           "y_j = e_j / S with e_j = exp(d_j), S = sum_j e_j. Admitted: |y_hat_j - y_j| <= y_j * (E(d_j) + eps_S + 4u) "
           "+ 2^-125 for f32 output, with u = 2^-24, E(d) = (6 + 4|d|) u (the rounding of x - m and exp, including "
           "fast-math __expf: 2 + 1.173|d| ulp), eps_S = sum_k E(d_k) y_k + 6 (cols + 2) u (the row sum in f32 in any "
           "order, online (max, sum) rescaling included), 4u for the division (IEEE or __fdividef). bf16 output adds "
           "the final rounding: y_j * (rel_f32 * (1 + u_b) + u_b), u_b = 2^-8. f16 output (f16 in, math in f32, "
           "rounded once): y_j * (rel_f32 * (1 + u_h) + u_h) + 2^-25, u_h = 2^-11 (11 significant bits), 2^-25 "
           "half the spacing of f16's subnormals (outputs from 2^-24 to 2^-14 are kept: flushing them fails); "
           "exp computed in f16 without the max subtracted overflows past x = 11.09 (65504) and fails. The 2^-125 floor admits flushing "
           "results below the smallest normal to zero. The exp argument must carry an error proportional to |x - m|: "
           "exp2(x*log2e - m*log2e) with both products rounded has one proportional to |x| and fails on large "
           "logits (an FMA for x*log2e - m*log2e is fine: the common error cancels across the row). A row "
           "sum accumulated in bf16 or f16 fails on long rows (cols >= 8192). Rows sum to 1 within the same bound "
           "implicitly. Special values (what a plain max-subtracting kernel produces): a NaN anywhere in a row makes "
           "the whole row NaN; a +Inf in a row makes the whole row NaN (Inf - Inf); a row of only -Inf is NaN "
           "(-Inf - (-Inf)); a -Inf entry in a row with a finite max gives exactly 0 (within the floor). NaN never "
           "matches a number; infinities are never admitted where the reference is finite. Logits up to |x| = 1e4 "
           "(far beyond exp overflow at 88.7) are tested: only max subtraction survives them (bf16 up to 400, f16 up "
           "to 1000, where their spacing keeps rows from being one-hot). Run to run: two runs must agree bitwise. " +
           std::string(builtin::kNoGeneratedF16) + ".";
  }

  // rows x 1031 just past 2^31 elements, in each claimed dtype; whole rows around elements 2^31
  // and 2^32 are compared.
  std::vector<CaseSpec> index_cases(const Supports& cand, std::uint64_t seed) const override {
    return builtin::without_f16(matrix_index_cases(*this, cand, seed, 1031));
  }
  std::vector<OutputWindow> index_case_windows(const CaseSpec& spec) const override {
    return row_block_windows(spec, 2, spec.dim("cols"));
  }

  std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const override {
    // cols around the warp (32), the 4-wide vector times a warp (128), a 256-thread block (256,
    // 1024 with 4 per thread), rows longer than one block (1025, 4097, 65537: several passes or an
    // online merge), a long reduction (8192: narrow accumulation shows), many short rows, and one
    // 2^24-element case. Small to large.
    struct Shape { std::int64_t rows, cols; };
    std::vector<CaseSpec> cases;
    auto add = [&](DType t, Shape s, const std::string& fam, std::int64_t off = 0) {
      if (!cand.supports(t) || s.rows * s.cols > cand.max_n) return;
      if (off && !builtin::admits_element_offset(cand, t)) return;
      cases.push_back(builtin::matrix_family_case(t, s.rows, s.cols, fam, off, seed, 31));
    };
    const std::vector<Shape> shapes = {{1, 1},    {7, 1},     {5, 2},     {6, 3},     {5, 31},    {5, 32},
                                       {5, 33},   {9, 127},   {9, 128},   {9, 129},   {7, 255},   {7, 256},
                                       {7, 257},  {4, 1023},  {4, 1024},  {4, 1025},  {3, 4097},  {16, 8192},
                                       {2, 65537}, {65537, 7}, {4099, 33}, {1031, 1031}, {2048, 8192}};
    auto in = [](Shape s, std::initializer_list<Shape> list) {
      for (const Shape& o : list)
        if (o.rows == s.rows && o.cols == s.cols) return true;
      return false;
    };
    for (const Shape& s : shapes) {
      add(DType::f32, s, "normal");
      if (in(s, {{7, 1}, {5, 2}, {5, 31}, {5, 33}, {9, 128}, {9, 129}, {7, 257}, {4, 1025}, {3, 4097}, {16, 8192}, {2, 65537}, {4099, 33}}))
        add(DType::f32, s, "large_logits");
      if (in(s, {{7, 1}, {6, 3}, {5, 32}, {5, 33}, {9, 129}, {7, 256}, {4, 1024}, {4, 1025}, {3, 4097}, {65537, 7}, {4099, 33}}))
        add(DType::f32, s, "specials");
      if (in(s, {{9, 129}, {4, 1025}, {3, 4097}, {16, 8192}, {2, 65537}})) add(DType::f32, s, "ramp");
      if (in(s, {{5, 33}, {9, 128}, {4, 1025}, {16, 8192}})) add(DType::f32, s, "neg_inf");
      if (in(s, {{5, 32}, {4, 1023}, {4099, 33}})) add(DType::f32, s, "all_equal");
      if (in(s, {{9, 127}, {7, 255}, {1031, 1031}})) add(DType::f32, s, "nonzero_mean");
      if (in(s, {{1, 1}, {5, 33}, {9, 128}, {7, 257}, {4, 1025}, {3, 4097}, {16, 8192}, {4099, 33}, {1031, 1031}}))
        add(DType::bf16, s, "normal");
      if (in(s, {{5, 33}, {4, 1025}})) add(DType::bf16, s, "large_logits");
      if (in(s, {{9, 129}, {4, 1025}})) add(DType::bf16, s, "specials");
      // f16: bf16's shapes, and the families that reach its subnormal outputs (ramp: probabilities down to
      // ~5e-7, below 2^-14) and its -Inf and offset rows.
      if (in(s, {{1, 1}, {7, 1}, {5, 33}, {9, 128}, {7, 257}, {4, 1025}, {3, 4097}, {16, 8192}, {4099, 33}, {1031, 1031}}))
        add(DType::f16, s, "normal");
      if (in(s, {{5, 33}, {4, 1025}})) add(DType::f16, s, "large_logits");
      if (in(s, {{9, 129}, {4, 1025}})) add(DType::f16, s, "specials");
      if (in(s, {{9, 129}, {3, 4097}})) add(DType::f16, s, "ramp");
      if (in(s, {{5, 33}})) add(DType::f16, s, "neg_inf");
      if (in(s, {{9, 127}})) add(DType::f16, s, "nonzero_mean");
    }
    add(DType::f32, {5, 33}, "normal", 1);
    add(DType::f32, {4, 1025}, "specials", 1);
    add(DType::bf16, {9, 129}, "normal", 1);
    add(DType::f16, {9, 129}, "normal", 1);
    if (include_large) {
      add(DType::f32, {8, 4194305}, "normal");   // very long rows: 2^25 elements
      add(DType::bf16, {131072, 513}, "normal");  // very many rows: 2^26 elements
    }
    return cases;
  }

  std::vector<Dims> benchmark_shapes() const override {
    return {{{"rows", 4096}, {"cols", 128}}, {{"rows", 4096}, {"cols", 1024}}, {{"rows", 8192}, {"cols", 8192}}};
  }

  CaseData make_case(const CaseSpec& spec) const override {
    const std::int64_t rows = spec.dim("rows"), cols = spec.dim("cols");
    if (rows < 1 || cols < 1) throw_error(ErrorKind::unsupported, fmt::format("case {}: empty shape", spec.id));
    builtin::require_known_family(spec, {"normal", "nonzero_mean", "large_logits", "all_equal", "ramp", "neg_inf", "specials"});
    CaseData d;
    d.spec = spec;
    d.dims = {{"rows", rows}, {"cols", cols}};
    const std::size_t R = std::size_t(rows), C = std::size_t(cols);
    std::vector<float> v(R * C);
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::string& fam = spec.family;
    // Row by row, each row from its own generator: identical data whatever the thread count.
    parallel_for(R, [&](std::size_t r) {
      Rng rng(mix_seed(spec.seed, r));
      float* row = v.data() + r * C;
      const double mean = rng.uniform(-20, 20);
      for (std::size_t j = 0; j < C; ++j) row[j] = float(mean + 2.0 * rng.normal());
      if (fam == "nonzero_mean") {
        for (std::size_t j = 0; j < C; ++j) row[j] = float(30.0 + 3.0 * rng.normal());
      } else if (fam == "large_logits") {
        // Around ±(100 .. 1e4): exp overflows (or underflows to 0) unless the max is subtracted,
        // yet a spread of 1.5 keeps the softmax far from one-hot.
        // bf16 spacing at 1e4 is 64, which would make rows one-hot: its logits stay below 400.
        // f16 spacing at 1000 is 0.5 (and exp in f16 overflows at 11.09): its logits stay below 1000.
        const double top = spec.dtype == DType::bf16 ? 400.0 : spec.dtype == DType::f16 ? 1000.0 : 1e4;
        const double base = (rng.below(2) ? 1.0 : -1.0) * rng.uniform(100, top);
        for (std::size_t j = 0; j < C; ++j) row[j] = float(base + 1.5 * rng.normal());
      } else if (fam == "all_equal") {
        if (r % 2 == 0) {
          const float c = float(rng.uniform(-1e4, 1e4));
          for (std::size_t j = 0; j < C; ++j) row[j] = c;
        }
      } else if (fam == "ramp") {
        // Monotone rows: increasing (every element is a new max: the worst case for online
        // rescaling) or decreasing; a span of 12 so the outputs cover e^12.
        const double off = rng.uniform(-50, 50);
        for (std::size_t j = 0; j < C; ++j) {
          double t = C > 1 ? 12.0 * double(j) / double(C - 1) : 0.0;
          row[j] = float(off + (r % 2 == 0 ? t : -t));
        }
      } else if (fam == "neg_inf") {
        for (std::size_t j = 0; j < C; ++j)
          if (rng.below(5) == 0) row[j] = -inf;
        if (r == 0 && R > 1) {
          for (std::size_t j = 0; j < C; ++j) row[j] = -inf;  // all -Inf: NaN row
        } else if (r == 1) {
          const std::size_t keep = std::size_t(rng.below(C));  // one finite entry: y = 1 there, 0 elsewhere
          for (std::size_t j = 0; j < C; ++j)
            if (j != keep) row[j] = -inf;
        } else if (r == 2 && C > 1) {
          row[0] = -inf;  // a leading -Inf before any finite value (online kernels start from -Inf)
        }
      } else if (fam == "specials") {
        const std::size_t at = std::size_t(rng.below(C));
        switch (r % 4) {
          case 1: row[at] = nan; break;  // NaN row
          case 2: row[at] = inf; break;  // +Inf row: NaN
          case 3:  // -Inf entries and a -0: ordinary row
            row[at] = -inf;
            row[(at + C / 2) % C] = -0.0f;
            break;
          default: break;
        }
      }
    });
    d.inputs.push_back(builtin::float_values_tensor("x", spec.dtype, v));
    return d;
  }

  std::vector<Tensor> reference(const CaseData& data, ReferenceHost& /*host*/) const override {
    const Tensor& x = data.inputs.at(0);
    const DType t = x.dtype;
    const std::size_t R = std::size_t(data.dims.at("rows")), C = std::size_t(data.dims.at("cols"));
    Tensor y = builtin::zeroed_tensor("y", t, x.elements, true);
    const double uo = softmax_model::out_rel(t), ao = softmax_model::out_abs(t);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    parallel_for(R, [&](std::size_t r) {
      std::vector<double> xs(C), e(C);
      bool bad = false;  // NaN or +Inf present
      double m = -INFINITY;
      for (std::size_t j = 0; j < C; ++j) {
        xs[j] = element_as_double(t, x.bytes.data(), r * C + j);
        if (std::isnan(xs[j]) || xs[j] == INFINITY) bad = true;
        else if (xs[j] > m) m = xs[j];
      }
      double* ref = y.ref.data() + r * C;
      double* bound = y.bound.data() + r * C;
      if (bad || m == -INFINITY) {
        for (std::size_t j = 0; j < C; ++j) {
          ref[j] = nan;
          bound[j] = 0;
          store_element(t, y.bytes.data(), r * C + j, nan);
        }
        return;
      }
      double s = 0;
      for (std::size_t j = 0; j < C; ++j) {
        e[j] = std::exp(xs[j] - m);  // exp(-Inf) = 0
        s += e[j];
      }
      double eps_s = softmax_model::sum_rel(std::int64_t(C));
      for (std::size_t j = 0; j < C; ++j)
        if (e[j] > 0) eps_s += softmax_model::exp_rel(xs[j] - m) * e[j] / s;
      for (std::size_t j = 0; j < C; ++j) {
        const double yj = e[j] / s;
        const double rel = (e[j] > 0 ? softmax_model::exp_rel(xs[j] - m) : 0.0) + eps_s + softmax_model::div_rel();
        ref[j] = yj;
        bound[j] = (t == DType::f32 ? yj * (rel + uo) : yj * (rel * (1 + uo) + uo) + ao) + softmax_model::abs_floor();
        store_element(t, y.bytes.data(), r * C + j, yj);
      }
    });
    return {y};
  }

  // max, subtract, exp, add, multiply: ~5 operations per element.
  double flops(const std::map<std::string, std::int64_t>& d, DType) const override {
    return 5.0 * double(d.at("rows")) * double(d.at("cols"));
  }
};

}  // namespace

const Contract& softmax_contract() {
  static const Softmax c;
  return c;
}

}  // namespace kqual::contract
