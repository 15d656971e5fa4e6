// A contract declared as data (declared.hpp, declared_contract.hpp): the Contract interface over a
// parsed contract.toml — its domain, its reference in the run's Python process (or a CUDA one), and
// the comparison of outputs under its error models. Its cases: declared_cases.cpp.
#include "kqual/contract/declared/declared.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>

#include "declared_contract.hpp"
#include "declared_spec.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/random.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/narrow_float.hpp"
#include "python_reference.hpp"

namespace kqual::contract {
namespace fs = std::filesystem;
using namespace declared;

namespace {

bool is_int(DType t) { return is_integral(t); }

// Spacing of dtype t's values at |r| (one unit in the last place), subnormals included.
double ulp_at(DType t, double r) {
  // Precision p (mantissa bits + 1) and the smallest normal exponent: bf16 shares f32's range.
  int p = 24, emin = -126;
  if (t == DType::f64) p = 53, emin = -1022;
  else if (t == DType::bf16) p = 8;
  else if (const NarrowFormat* f = t == DType::f16 ? &kF16 : t == DType::e4m3 ? &kE4M3 : t == DType::e5m2 ? &kE5M2 : nullptr)
    p = f->mantissa_bits + 1, emin = 1 - f->bias;
  int e = 0;
  std::frexp(std::fabs(r), &e);  // |r| = m 2^e, m in [0.5, 1)
  return std::ldexp(1.0, std::max(e, emin + 1) - p);
}


std::string model_text(const TensorDef& t) {
  const ErrorModel& e = t.error;
  const char* nan = e.nan == ErrorModel::propagate ? "NaN and +-Inf where the reference has them"
                    : e.nan == ErrorModel::finite ? "finite everywhere"
                                                  : "non-finite exactly where the reference is";
  switch (e.kind) {
    case ErrorModel::exact: return fmt::format("{}: exact (the float64 reference rounded once to the output's dtype; integers never cast).", t.name);
    case ErrorModel::quantized: {
      static const char* const kRounding[] = {"half to even", "half away from zero", "down", "up", "toward zero"};
      return fmt::format("{}: quantized: the reference's real value rounded {}{}{}, exactly; either neighbour where that value lies within "
                         "{:g} x 2^-24 of a rounding boundary.",
                         t.name, kRounding[e.rounding], e.clamp ? fmt::format(", clamped to [{:g}, {:g}]", e.clamp->first, e.clamp->second) : "",
                         e.saturate ? ", saturating at the dtype's range" : "", e.band);
    }
    case ErrorModel::ulp: return fmt::format("{}: within {:g} ulp of the output dtype at the reference; {}.", t.name, e.ulps, nan);
    case ErrorModel::allclose:
      return fmt::format("{}: |y - ref| <= {}({:g}, {:g} {}) + the output's rounding{}; {}.", t.name, e.either ? "max" : "sum", e.atol, e.rtol,
                         e.magnitude == "abs_inputs" ? "max(|ref|, ref(|inputs|)) (the magnitude of the summed terms)" : "|ref|",
                         e.match_ratio < 1 ? fmt::format(" for a share {:g} of elements, every element within {:g}", e.match_ratio, e.cap) : "",
                         nan);
    case ErrorModel::reduction:
      return fmt::format("{}: |y - ref| <= {:g} eps({}) {} {}{} + the output's rounding ({}); {}.", t.name, e.c,
                         e.eps_dtype ? std::string(to_string(*e.eps_dtype)) : "output", e.axis,
                         e.magnitude == "abs_inputs" ? "ref(|inputs|)" : "|ref|", e.atol > 0 ? fmt::format(" + {:g}", e.atol) : "",
                         e.magnitude == "abs_inputs" ? "reduction-length-aware: the reference on the inputs' absolute values" : "relative", nan);
  }
  return "";
}
}  // namespace

namespace declared {

Reproducibility DeclaredContract::reproducibility(DType) const {
  Reproducibility r;
  r.required = s_.deterministic;
  r.reason = !s_.deterministic_reason.empty() ? s_.deterministic_reason
             : r.required ? "the declared contract requires it ([contract] deterministic is true, the default)"
                          : "the declared contract admits run-to-run differences within its error bound ([contract] "
                            "deterministic = false)";
  r.opt_out = r.required ? fmt::format("the contract's owner may set [contract] deterministic = false in {} when the "
                                       "operation admits run-to-run differences within its error bound",
                                       s_.file.string())
                         : "claim [supports] deterministic = true in the candidate's manifest to be held to bitwise "
                           "reproducibility";
  return r;
}

std::string DeclaredContract::numerical_policy() const {
  std::vector<std::string> parts;
  if (!s_.policy.empty()) parts.push_back(s_.policy.ends_with(".") ? s_.policy : s_.policy + ".");
  for (const auto& t : s_.tensors)
    if (t.role == Role::output) parts.push_back(model_text(t));
  parts.push_back(s_.deterministic ? "Run to run: two runs must agree bitwise."
                                   : "Run to run: bitwise reproducibility is not required; two runs must each be within "
                                     "the bound of the reference; their difference is reported, never failed (two "
                                     "runs within the bound may differ by up to twice it).");
  std::string precision = s_.reference.precision.empty() ? std::string("float64") : s_.reference.precision;
  {
    std::lock_guard<std::mutex> lock(reference_note_mu_);
    if (!nontrivial_note_.empty()) parts.push_back(nontrivial_note_);
    if (!reference_float32_.empty())
      precision = fmt::format("float inputs at float32, not float64: it mixes float32 tensors of its own with float64 "
                              "inputs ({})",
                              reference_float32_);
  }
  parts.push_back(fmt::format("Reference: {}:{} ({}, {}) in its own process, declared in {}.", s_.reference.file.filename().string(),
                              s_.reference.function, s_.reference.kind, precision, s_.file.string()));
  // Shapes of the case plan no case checks (over the CPU reference's cap, nothing past 2^31): said
  // here, so the memo that quotes this policy lists them (declared_cases.cpp).
  if (const std::string gaps = coverage_gaps(); !gaps.empty()) parts.push_back(gaps);
  return fmt::format("{}", fmt::join(parts, " "));
}

double DeclaredContract::min_bytes(const Dims& dims, DType t) const {
  if (s_.bytes) return double(s_.bytes->eval(cost_vars(dims, t)));
  const Dims all = s_.complete(dims);
  double b = 0;
  for (const auto& td : s_.tensors) b += double(s_.dense_elements(td, all)) * double(dtype_size(tensor_dtype(td.name, t)));
  return b;
}

// The large shape must fit the CPU reference's cap: a large case left out without a word would
// look like coverage that is not there.
void DeclaredContract::check_large_shape() const {
  Dims large;
  bool any = false;
  for (const auto& a : s_.axes)
    if (a.kind == Axis::variable) large[a.name] = a.large ? (any = true, a.large) : a.base;
  if (!any) return;
  const Dims all = s_.complete(large);
  if (const std::int64_t big = largest_tensor(all); big > case_cap())
    throw_error(ErrorKind::input, fmt::format("{}: axes.*.large: the large shape {} has a tensor of {} elements, over the "
                                              "largest case a reference takes ({}: {}): lower a large value, raise the cap or "
                                              "declare [reference.cuda]", s_.file.string(), format_dims(all), big,
                                              s_.reference.cuda ? "reference.cuda.max_case_elements" : "contract.max_case_elements",
                                              case_cap()));
}

void DeclaredContract::build_domain() {
  for (const auto& a : s_.axes)
    d_.dims.push_back({.name = a.name, .max = a.kind == Axis::variable ? a.max : kUnlimited,
                       .fixed = a.kind == Axis::constant ? a.expr.eval({}) : 0});
  for (const auto& t : s_.tensors) {
    TensorSpec ts{.name = t.name, .role = t.role, .shape = t.shape, .description = t.description, .dtype = t.dtype,
                  .layout = t.layout == "row_major" ? Layout::row_major : Layout::contiguous, .alignment = t.alignment};
    if (t.layout == "strided") {
      // The harness holds the storage (rows x stride); the view is rows x cols.
      ts.shape = {t.shape[0], t.stride_axis};
      ts.layout = Layout::strided;
      ts.row_length = t.shape[1];
      ts.stride_multiple = s_.axis(t.stride_axis)->multiple_of;
    }
    d_.tensors.push_back(ts);
  }
  std::vector<std::string> rows_text;
  for (const auto& [key, r] : s_.rows) {
    d_.dtypes.push_back(key);
    d_.dtype_rows[key] = r;
    std::vector<std::string> parts;
    for (const auto& [n, t] : r) parts.push_back(fmt::format("{}={}", n, to_string(t)));
    rows_text.push_back("{" + fmt::format("{}", fmt::join(parts, ", ")) + "}");
  }
  d_.dtype_note = fmt::format("dtype rows {}", fmt::join(rows_text, " "));
  for (const auto& t : s_.tensors)
    if (!t.aliases.empty()) d_.in_place = InPlace{t.name, t.aliases};
  if (!d_.in_place) d_.no_in_place_reason = "no output declares aliases";
  // Variable axes above their range's minimum, and every declared constraint, refuse as "constraint".
  std::vector<Constraint> all;
  for (const auto& a : s_.axes)
    if (a.kind == Axis::variable && a.min > 1)
      all.push_back({Expr::parse(fmt::format("{} >= {}", a.name, a.min)), fmt::format("{} is at least {}", a.name, a.min)});
  for (const auto& a : s_.axes)
    if (a.kind == Axis::constant || a.kind == Axis::derived)
      all.push_back({Expr::parse(fmt::format("{} == {}", a.name, a.expr.text())), fmt::format("{} is {}", a.name, a.expr.text())});
  for (const auto& c : s_.constraints) all.push_back(c);
  if (all.empty()) return;
  d_.constraint = [all](const Dims& dims) { return first_violated(all, dims, ""); };
  Dims base;
  for (const auto& a : s_.axes)
    if (a.kind == Axis::variable) base[a.name] = a.base;
  d_.example_dims = s_.complete(base);
  if (!d_.constraint(*d_.example_dims).empty())
    throw_error(ErrorKind::input, fmt::format("{}: axes: the base values {} break a constraint: {}", s_.file.string(),
                                              format_dims(*d_.example_dims), d_.constraint(*d_.example_dims)));
  // A request outside the constraints: each variable axis moved to small values until one is false,
  // else a derived axis given a wrong value.
  for (const auto& a : s_.axes) {
    if (a.kind != Axis::variable) continue;
    for (std::int64_t v = 1; v <= 64 && !d_.constraint_example; ++v) {
      Dims g = base;
      g[a.name] = v;
      Dims c;
      try {
        c = s_.complete(g);
      } catch (const Error&) {
        continue;
      }
      // Only a request that nothing before the constraint check refuses (a derived axis at 0 is "empty").
      const bool in_range = std::all_of(c.begin(), c.end(), [&](const auto& kv) {
        const Axis* ax = s_.axis(kv.first);
        return kv.second >= 1 && (!ax || ax->kind != Axis::variable || kv.second <= ax->max);
      });
      if (in_range && !d_.constraint(c).empty()) d_.constraint_example = c;
    }
  }
  if (!d_.constraint_example)
    for (const auto& a : s_.axes)
      if ((a.kind == Axis::constant || a.kind == Axis::derived) && !d_.constraint_example) {
        Dims c = *d_.example_dims;
        c[a.name] += 1;
        d_.constraint_example = c;
      }
  if (!d_.constraint_example) d_.constraint = nullptr;  // constraints no small request breaks: none to refuse
}

std::vector<Tensor> DeclaredContract::expected_from(const CaseData& data, std::map<std::string, RefOutput> ref,
                                                    const std::map<std::string, RefOutput>* magnitude,
                                                    std::map<std::string, RefOutput>* alternative) const {
  std::vector<Tensor> out;
  for (const auto& td : s_.tensors) {
    if (td.role != Role::output) continue;
    Tensor e;
    e.name = td.name;
    e.dtype = tensor_dtype(td.name, data.spec.dtype);
    e.elements = s_.dense_elements(td, data.dims);  // the view; to_storage spreads a strided one below
    const std::size_t n = std::size_t(e.elements);
    e.bytes.reserve(n * dtype_size(e.dtype));
    advise_huge_pages(e.bytes.data(), n * dtype_size(e.dtype));
    e.bytes.resize(n * dtype_size(e.dtype));
    RefOutput& r = ref.at(td.name);
    if (td.error.kind == ErrorModel::quantized) {
      quantized_expected(td, data, r.f, e);
      out.push_back(std::move(e));
      continue;
    }
    if (is_int(e.dtype)) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t v = r.i[i];
        const auto [lo, hi] = integer_range(e.dtype);
        const bool fits = e.dtype == DType::i64 || (double(v) >= lo && double(v) <= hi);
        if (!fits)
          throw_error(ErrorKind::input, fmt::format("contract {}: reference output '{}' on case {}: element {} = {} does not fit {}",
                                                    s_.file.string(), td.name, data.spec.id, i, v, to_string(e.dtype)));
        std::memcpy(e.bytes.data() + i * dtype_size(e.dtype), &v, dtype_size(e.dtype));  // little-endian low bytes
      }
      to_storage(s_, e, data.dims);
      out.push_back(std::move(e));
      continue;
    }
    const ErrorModel& m = td.error;
    if (m.nan == ErrorModel::finite)
      for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(r.f[i]))
          throw_error(ErrorKind::input, fmt::format("contract {}: reference output '{}' on case {} is {} at element {}, and its policy "
                                                    "(nan = \"finite\") forbids it: a contract error, not a candidate failure",
                                                    s_.file.string(), td.name, data.spec.id, r.f[i], i));
    const bool bounded = m.kind != ErrorModel::exact;
    if (bounded) {
      e.bound.reserve(n);
      advise_huge_pages(e.bound.data(), n * 8);
      e.bound.resize(n);
    }
    const double u_out = unit_roundoff(e.dtype);
    const double k = m.kind == ErrorModel::reduction ? double(data.dims.at(m.axis)) : 0;
    const double eps = m.kind == ErrorModel::reduction ? 2 * unit_roundoff(m.eps_dtype.value_or(e.dtype)) : 0;
    const std::vector<double>* mag = magnitude ? &magnitude->at(td.name).f : nullptr;
    // One pass: the reference rounded to the output dtype, and the bound of the element.
    parallel_for((n + (1u << 20) - 1) >> 20, [&](std::size_t c) {
      for (std::size_t i = c << 20; i < std::min(n, (c + 1) << 20); ++i) {
        if (e.dtype == DType::f32) {
          const float v = float(r.f[i]);
          std::memcpy(e.bytes.data() + 4 * i, &v, 4);
        } else {
          store_element(e.dtype, e.bytes.data(), i, r.f[i]);
        }
        if (!bounded) continue;
        const double a = std::fabs(r.f[i]);
        double b = 0;
        switch (m.kind) {
          case ErrorModel::ulp: b = m.ulps * ulp_at(e.dtype, r.f[i]); break;
          case ErrorModel::allclose: {
            // abs_inputs: the larger of |ref| and the reference on |inputs| (a sum that cancels is as exact as its terms).
            const double g = m.magnitude == "abs_inputs" && mag ? std::max(a, std::fabs((*mag)[i])) : a;
            b = (m.either ? std::max(m.atol, m.rtol * g) : m.atol + m.rtol * g) + u_out * a;
            break;
          }
          case ErrorModel::reduction: {
            const double g = m.magnitude == "reference" || !mag ? a : std::fabs((*mag)[i]);
            b = m.c * eps * k * g + m.atol + u_out * a;
            break;
          }
          case ErrorModel::exact:
          case ErrorModel::quantized: break;  // quantized_expected, above
        }
        e.bound[i] = b;
      }
    });
    if (bounded) e.ref = std::move(r.f);
    if (alternative && alternative->count(td.name)) e.alt = std::move(alternative->at(td.name).f);
    to_storage(s_, e, data.dims);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Tensor> DeclaredContract::reference(const CaseData& data, ReferenceHost& host) const {
  std::call_once(nontrivial_once_, [&] { check_nontrivial(host); });
  const auto dt = row(data.spec.dtype);
  bool need_abs = false;
  for (const auto& t : s_.tensors)
    need_abs |= t.role == Role::output && t.error.uses_abs_inputs();
  const auto t0 = std::chrono::steady_clock::now();
  // The reference sees every tensor dense: a strided input's rows without their padding.
  PythonReference& py = host.python(s_);
  Evaluation ev = s_.has_strided() ? py.evaluate(s_, dense_inputs(data.inputs, data.dims, s_), data.dims, need_abs, data.spec.id, dt)
                                   : py.evaluate(s_, data.inputs, data.dims, need_abs, data.spec.id, dt);
  const auto t1 = std::chrono::steady_clock::now();
  if (!ev.reference_float32.empty()) {
    std::lock_guard<std::mutex> lock(reference_note_mu_);
    if (reference_float32_.empty()) reference_float32_ = ev.reference_float32;
  }
  auto out = expected_from(data, std::move(ev.values), need_abs ? &ev.magnitude : nullptr, &ev.alternative);
  if (std::getenv("KQUAL_REFERENCE_TRACE"))
    fmt::print(stderr, "reference {}: evaluation {:.0f} ms, expected outputs and bounds {:.0f} ms\n", data.spec.id,
               std::chrono::duration<double, std::milli>(t1 - t0).count(),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
  return out;
}

Comparison DeclaredContract::compare(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) const {
  if (expected.row_stride > 0) {
    // A strided output: its padding first (a write there is outside the output, as a guard's would
    // be), then its rows as a dense output, indices into the view.
    Comparison pad = check_padding(expected, actual, poison_byte);
    if (!pad.ok) return pad;
    const std::vector<std::uint8_t> rows = dense_bytes(expected, actual);
    Comparison c = compare(dense_expected(expected), rows.data(), poison_byte);
    if (!c.ok)
      c.detail += fmt::format(" (indices into the {} x {} view: row = index / {}, column = index % {})",
                              expected.elements / expected.row_stride, expected.row_length, expected.row_length, expected.row_length);
    return c;
  }
  const TensorDef* td = s_.tensor(expected.name);
  if (!td || expected.bound.empty()) return compare_exact(expected, actual, poison_byte);
  const ErrorModel& m = td->error;
  if (m.match_ratio >= 1 && m.nan != ErrorModel::same_class && expected.alt.empty()) return compare_bounded(expected, actual, poison_byte);
  // A share of elements over the bound (never over the cap), and/or non-finite class matching.
  const DType t = expected.dtype;
  const std::size_t n = std::size_t(expected.elements);
  const std::size_t chunks = (n + (std::size_t(1) << 20) - 1) >> 20;
  std::vector<std::int64_t> over(std::max<std::size_t>(chunks, 1), 0);
  ElementScan scan = scan_elements(n, [&](std::size_t lo, std::size_t hi, ElementScan& y) {
    std::int64_t& o = over[lo >> 20];
    for (std::size_t i = lo; i < hi; ++i) {
      const double r = expected.ref[i], b = expected.bound[i];
      const double a = element_as_double(t, actual, i);
      if (!std::isfinite(r) || !std::isfinite(a)) {
        bool ok = m.nan == ErrorModel::same_class
                      ? !std::isfinite(r) && !std::isfinite(a)
                      : (std::isnan(r) && std::isnan(a)) || (!std::isnan(r) && (r == a || (std::isinf(a) && rounded_to(t, r) == a)));
        // The contract's alternative where the reference is not finite (a NaN alternative takes a NaN).
        if (!ok && !std::isfinite(r) && !expected.alt.empty()) {
          const double alt = expected.alt[i];
          ok = std::isnan(alt) ? std::isnan(a) : rounded_to(t, alt) == a;
        }
        if (ok) continue;
        if (is_poison(t, actual, i, poison_byte)) y.note(Mismatch::unwritten, i);
        else y.note(Mismatch::nan_policy, i);
        continue;
      }
      const double err = std::fabs(a - r);
      if (err <= b) continue;
      if (is_poison(t, actual, i, poison_byte)) y.note(Mismatch::unwritten, i);
      else if (m.match_ratio < 1 && err <= m.cap) ++o;
      else y.note(Mismatch::wrong, i, err, m.match_ratio < 1 ? err / m.cap : (b > 0 ? err / b : INFINITY));
    }
  });
  Comparison c = scan.verdict(expected.name, n, [&](std::size_t i) {
    return fmt::format("{}[{}]: expected {:.9g} ± {:.3g}{}, got {}", expected.name, i, expected.ref[i], expected.bound[i],
                       m.match_ratio < 1 ? fmt::format(" (cap {:g})", m.cap) : "", format_element(t, actual, i));
  }, poison_byte);
  if (!c.ok) return c;
  std::int64_t total = 0;
  for (auto o : over) total += o;
  const double allowed = (1 - m.match_ratio) * double(n);
  if (double(total) > allowed) {
    c.ok = false;
    c.code = "wrong_result";
    c.mismatches = total;
    c.detail = fmt::format("{} of {} elements of '{}' exceed {:g} + {:g} |ref| (within the cap {:g}); the contract admits a share of "
                           "{:g} ({:.0f} elements)", total, n, expected.name, m.atol, m.rtol, m.cap, 1 - m.match_ratio, allowed);
  }
  return c;
}

std::optional<GpuReference> DeclaredContract::gpu_reference(const CaseData& data) const {
  if (!s_.reference.cuda) return std::nullopt;
  const CudaReference& cr = *s_.reference.cuda;
  GpuReference g;
  g.source = cr.source;
  const std::map<std::string, std::int64_t>& vars = data.dims;
  for (const auto& l : cr.launches) {
    GpuLaunch gl;
    gl.kernel = l.kernel;  // "{dtype}" names the case's dtype row: rmsnorm_ref_{dtype} -> rmsnorm_ref_bf16
    for (std::size_t p; (p = gl.kernel.find("{dtype}")) != std::string::npos;) gl.kernel.replace(p, 7, to_string(data.spec.dtype));
    for (int k = 0; k < 3; ++k) {
      gl.grid[k] = l.grid[std::size_t(k)].eval(vars);
      gl.block[k] = l.block[std::size_t(k)].eval(vars);
    }
    for (const auto& a : l.args) {
      const std::string name = a.substr(0, a.find(':'));
      GpuLaunch::Arg arg;
      if (data.dims.count(name)) {
        arg.scalar = data.dims.at(name);
        arg.scalar_bytes = a.ends_with(":i32") ? 4 : 8;
      } else if (auto sc = std::find_if(s_.scalars.begin(), s_.scalars.end(), [&](const Scalar& x) { return x.name == name; });
                 sc != s_.scalars.end()) {
        if (sc->dtype == DType::f32) {
          arg.scalar = std::int64_t(f32_bits(float(sc->value)));
          arg.scalar_bytes = 4;
        } else if (sc->dtype == DType::f64) {
          std::memcpy(&arg.scalar, &sc->value, 8);
        } else {
          arg.scalar = std::int64_t(sc->value);
          arg.scalar_bytes = sc->dtype == DType::i32 ? 4 : 8;
        }
      } else {
        arg.tensor = name;
      }
      gl.args.push_back(arg);
    }
    g.launches.push_back(gl);
  }
  for (const auto& r : s_.raw_outputs()) {
    const std::string out = r.ends_with("_magnitude") ? r.substr(0, r.size() - 10) : r;
    Tensor t;
    t.name = r;
    t.dtype = reference_gives_integers(*s_.tensor(out), tensor_dtype(out, data.spec.dtype)) ? DType::i64 : DType::f64;
    t.elements = s_.dense_elements(*s_.tensor(out), data.dims);  // dense, whatever the output's layout
    g.raw_outputs.push_back(t);
  }
  return g;
}

std::vector<Tensor> DeclaredContract::reference_from_gpu(const CaseData& data, const std::vector<Tensor>& raw) const {
  std::map<std::string, RefOutput> ref, mag;
  for (const auto& t : raw) {
    const bool m = t.name.ends_with("_magnitude");
    RefOutput& o = (m ? mag : ref)[m ? t.name.substr(0, t.name.size() - 10) : t.name];
    const std::size_t n = std::size_t(t.elements);
    if (t.bytes.size() != n * 8)
      throw_error(ErrorKind::internal, fmt::format("CUDA reference output '{}': {} bytes for {} elements", t.name, t.bytes.size(), n));
    if (t.dtype == DType::i64) {
      o.i.resize(n);
      std::memcpy(o.i.data(), t.bytes.data(), n * 8);
    } else {
      o.f.resize(n);
      std::memcpy(o.f.data(), t.bytes.data(), n * 8);
    }
  }
  return expected_from(data, std::move(ref), mag.empty() ? nullptr : &mag);
}

std::unique_ptr<Contract> make_contract(Spec s) { return std::make_unique<DeclaredContract>(std::move(s)); }
const Spec* spec_of(const Contract& c) {
  const auto* d = dynamic_cast<const DeclaredContract*>(&c);
  return d ? &d->spec() : nullptr;
}
}  // namespace declared

}  // namespace kqual::contract
