// The refusal codes a Domain can give and one example request per code (domain.hpp): what the
// conformance test and `kqual check` (qualify's contract block) hold every contract to — each example
// refused with its own code, the claim-dependent ones only under their claims.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "kqual/contract/domain.hpp"
#include "kqual/core/error.hpp"
#include "domain_internal.hpp"

namespace kqual::contract {
using namespace domain_detail;
namespace {

// The order in which dtypes outside a contract are picked for its dtype_unsupported examples.
constexpr DType kOutsidePreference[] = {DType::f16, DType::f64, DType::i32, DType::bf16, DType::i64, DType::u32, DType::f32};

// The dims the refusal examples start from: a small request inside the domain, dims 64, 32, 16, ...
// (at least 2, so that a row count tells a transposed stride from stride 2), or the domain's own
// example_dims, brought under the limits.
Dims example_base(const Domain& d) {
  Dims base;
  std::int64_t size = 64;
  for (const auto& dim : d.dims) {
    base[dim.name] = std::min(std::max<std::int64_t>(size, 2), dim.max);
    size /= 2;
  }
  if (d.example_dims) base = *d.example_dims;  // a domain with constraints picks a request inside them
  // A strided tensor's rows at least a row length apart, the stride a multiple of its claim and of
  // 256 elements: every row then starts on any alignment a candidate claims (up to 256 bytes), so the
  // examples of claim-independent codes are refused for their own reason under every claim.
  for (const auto& ts : d.tensors)
    if (ts.layout == Layout::strided) {
      const std::int64_t step = std::lcm(ts.stride_multiple, std::int64_t(256));
      base[ts.shape[1]] = (std::max(base.at(ts.shape[1]), base.at(ts.row_length)) + step - 1) / step * step;
    }
  for (const auto& l : d.limits)
    while (product(l.dims, base) > l.max) {
      auto big = std::max_element(l.dims.begin(), l.dims.end(), [&](const auto& a, const auto& b) { return base[a] < base[b]; });
      if (base[*big] <= 1) break;
      base[*big] /= 2;
    }
  return base;
}

// A row-major matrix given with its row count as stride, refused as "transposed" — only where it
// has more than one row: a 1 x n matrix read transposed is the same bytes (stride 1), and that
// request is accepted. The base may hold the rows at 1 (a declared contract's base, as SOL-ExecBench's
// softmax_h4096 with batch_size 1 first had: `kqual check` then stopped, its refusal example
// accepted), so each row-major tensor is tried at the base, then with its row axis at 2, 3, ... 64
// where the domain accepts that request (constraints, limits); nullopt where no row count above one
// is admissible (the rows a constant 1): then no operand of the domain can be transposed at all.
std::optional<Request> transposed_example(const Domain& d, const Request& ok) {
  const Supports widest = widest_claims(d);
  for (const auto& ts : d.tensors) {
    if (ts.layout != Layout::row_major || ts.shape.size() != 2) continue;
    const std::string& rows = ts.shape[0];
    std::vector<std::int64_t> tries{ok.dims.at(rows)};
    for (std::int64_t n = 2; n <= 64; ++n) tries.push_back(n);
    for (const std::int64_t n : tries) {
      Request r = ok;
      r.dims[rows] = n;
      for (const auto& t : d.tensors) r.lengths[t.name] = product(t.shape, r.dims);
      if (n <= 1 || check_request(d, "(domain)", r, widest)) continue;
      r.strides[ts.name] = n;
      return r;
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> refusal_codes(const Domain& d) {
  std::set<std::string> on;
  if (std::any_of(std::begin(kAllDTypes), std::end(kAllDTypes), [&](DType t) { return !has(d.dtypes, t); }))
    on.insert("dtype_unsupported");
  if (!d.dtypes.empty()) on.insert("dtype_not_claimed");
  if (!d.tensors.empty()) {
    on.insert("missing_tensor");
    on.insert(d.mismatch_code);
    on.insert("non_contiguous");
  }
  for (const auto& dim : d.dims) {
    on.insert("empty");
    if (dim.from_length_of.empty()) on.insert("missing_dim");
    if (dim.max != kUnlimited) on.insert("dim_too_large");
  }
  const auto ceil = dim_maxima(d);
  for (const auto& l : d.limits)
    if (ceiling_product(l.dims, ceil) > l.max) on.insert("too_large");
  if (d.constraint) on.insert("constraint");
  on.insert("exceeds_claim");
  if (std::any_of(d.tensors.begin(), d.tensors.end(), [](const TensorSpec& t) { return t.layout == Layout::row_major; })) {
    // Only where some row-major operand can have more than one row (transposed_example).
    bool can = true;
    if (!d.dtypes.empty()) {
      const Request ok = make_request(d, d.dtypes.front(), example_base(d));
      can = check_request(d, "(domain)", ok, widest_claims(d)) || transposed_example(d, ok);  // a domain refusing its own base: refusal_examples says so
    }
    if (can) on.insert("transposed");
  }
  on.insert("negative_offset");
  on.insert("misaligned");
  on.insert(d.in_place ? "aliasing_not_claimed" : "aliasing_unsupported");
  std::vector<std::string> v;
  for (const char* c : kRefusalCodes)
    if (on.count(c)) v.emplace_back(c);
  return v;
}

Supports widest_claims(const Domain& d) {
  Supports s;
  s.dtypes = d.dtypes;
  s.min_alignment_bytes = 1;
  s.max_n = kUnlimited;
  s.in_place = d.in_place.has_value();
  return s;
}

namespace {

// The refusal examples of one domain, in the order refusal_examples gives them: each a change to
// `ok`, a small request the domain accepts under the widest claims, refused for its code (under
// its claims, where they are given).
class RefusalExampleSet {
 public:
  explicit RefusalExampleSet(const Domain& d)
      : d_(d), base_(example_base(d)), t0_(d.dtypes.front()), ok_(make_request(d, t0_, base_)) {
    if (auto r = check_request(d, "(domain)", ok_, widest_claims(d)))
      throw_error(ErrorKind::internal,
                  fmt::format("the domain refuses its own small request {} ({}): {}", format_dims(base_), r->code, r->reason));
  }

  std::vector<RefusalExample> take() { return std::move(v_); }

  // dtype_unsupported, missing_tensor, missing_dim: what the request lacks or the domain lacks.
  void missing_parts() {
    int outside = 0;
    for (DType t : kOutsidePreference)
      if (!has(d_.dtypes, t) && outside++ < 2) {
        Request r = ok_;
        r.dtype = t;
        add(r, "dtype_unsupported");
      }
    if (!d_.tensors.empty()) {
      Request r = ok_;
      r.lengths.erase(d_.tensors.back().name);
      add(r, "missing_tensor");
    }
    for (const auto& dim : d_.dims)
      if (dim.from_length_of.empty()) {
        Request r = ok_;
        r.dims.erase(dim.name);
        add(r, "missing_dim");
        break;
      }
  }

  // empty, dim_too_large, too_large: a dim at 0, past its maximum, a limit's product over.
  void sizes() {
    for (const auto& dim : d_.dims) {
      Dims z = base_;
      z[dim.name] = 0;
      add(with_dims(z), "empty");
    }
    for (const auto& dim : d_.dims)
      if (dim.max != kUnlimited) {
        Dims z = base_;
        z[dim.name] = dim.max + 1;
        add(with_dims(z), "dim_too_large");
      }
    const auto ceil = dim_maxima(d_);
    for (const auto& l : d_.limits) {
      // Grow the limit's dims one after the other (each up to its own maximum) until the product is over.
      Dims z = base_;
      for (const auto& n : l.dims) {
        const std::int64_t others = product(l.dims, z) / z[n];
        const std::int64_t need = l.max / others + 1;  // others * need > l.max
        z[n] = std::min(need, ceil.at(n));
        if (product(l.dims, z) > l.max) break;
      }
      if (product(l.dims, z) > l.max) add(with_dims(z), "too_large");
    }
  }

  // Length or shape mismatch, transposed, non_contiguous, negative_offset, aliasing_unsupported: the
  // tensors as laid out in memory.
  void layouts() {
    if (!d_.tensors.empty()) {
      Request r = ok_;
      r.lengths[d_.tensors.back().name] -= 1;
      add(r, d_.mismatch_code == "shape_mismatch" ? "shape_mismatch" : "length_mismatch");
    }
    if (auto r = transposed_example(d_, ok_)) add(*r, "transposed");
    if (!d_.tensors.empty()) {
      const TensorSpec& ts = d_.tensors.front();
      Request r = ok_;
      const bool two_rows = ts.layout == Layout::row_major && ts.shape.size() == 2 && base_.at(ts.shape[0]) == 2;
      r.strides[ts.name] = two_rows ? 3 : 2;
      add(r, "non_contiguous");
    }
    for (const auto& ts : d_.tensors)
      if (ts.layout == Layout::strided && base_.at(ts.row_length) > 1) {
        Dims z = base_;
        z[ts.shape[1]] = base_.at(ts.row_length) - 1;
        add(with_dims(z), "non_contiguous");  // rows overlapping
        break;
      }
    {
      Request r = ok_;
      r.offset_elements = -1;
      add(r, "negative_offset");
    }
    if (!d_.in_place) {
      Request r = ok_;
      r.in_place = true;
      add(r, "aliasing_unsupported");
    }
  }

  void constraint() {
    if (!d_.constraint) return;
    if (!d_.constraint_example)
      throw_error(ErrorKind::internal, "a domain with constraints gives a request outside them (constraint_example)");
    add(with_dims(*d_.constraint_example), "constraint");
  }

  // Claim-dependent: refused under the claims given, accepted under the widest claims.
  void narrower_claims() {
    {
      Supports s = widest_claims(d_);
      s.dtypes.erase(std::remove(s.dtypes.begin(), s.dtypes.end(), t0_), s.dtypes.end());
      add(ok_, "dtype_not_claimed", s);
    }
    {
      Supports s = widest_claims(d_);
      s.max_n = claim_quantity(d_, base_) - 1;
      add(ok_, "exceeds_claim", s);
    }
  }

  // misaligned: off the contract's own alignment (whatever the candidate claims), off an alignment
  // the candidate claims, and for strided tensors a row stride off either.
  void misalignments() {
    // The contract's own alignment: the smallest offset every tensor's alignment admits (in elements).
    std::int64_t step = 1;
    bool aligned_by_contract = false;
    for (const auto& ts : d_.tensors)
      if (ts.alignment > 0) {
        aligned_by_contract = true;
        const std::int64_t es = element_bytes(ts);
        while ((step * es) % ts.alignment) step *= 2;
      }
    if (aligned_by_contract && step > 1) {
      Request r = ok_;
      r.offset_elements = 1;
      add(r, "misaligned");  // refused whatever the candidate claims
    }
    {
      std::int64_t smallest = kUnlimited;
      for (const auto& ts : d_.tensors) smallest = std::min(smallest, step * element_bytes(ts));
      Supports s = widest_claims(d_);
      s.min_alignment_bytes = 1;
      while (s.min_alignment_bytes <= smallest) s.min_alignment_bytes *= 2;
      Request r = ok_;
      r.offset_elements = step;
      add(r, "misaligned", s);
    }
    for (const auto& ts : d_.tensors)
      if (ts.layout == Layout::strided) misaligned_strides(ts);
  }

  void aliasing_not_claimed() {
    if (!d_.in_place) return;
    Supports s = widest_claims(d_);
    s.in_place = false;
    Request r = ok_;
    r.in_place = true;
    add(r, "aliasing_not_claimed", s);
  }

 private:
  void add(Request r, const char* code, std::optional<Supports> claims = std::nullopt) {
    v_.push_back(RefusalExample{std::move(r), code, std::move(claims)});
  }
  Request with_dims(const Dims& dims) const {
    Request r = ok_;
    r.dims = dims;
    for (const auto& ts : d_.tensors) r.lengths[ts.name] = product(ts.shape, dims);
    return r;
  }
  std::int64_t element_bytes(const TensorSpec& ts) const {
    return std::int64_t(dtype_size(tensor_dtype(d_, ts.name, t0_)));
  }

  // A strided tensor's row stride: off the contract's stride multiple, and (with more than one
  // row) admitted by the contract but starting rows off an alignment the candidate could claim.
  void misaligned_strides(const TensorSpec& ts) {
    const std::int64_t len = base_.at(ts.row_length), m = ts.stride_multiple;
    if (m > 1) {
      Dims z = base_;
      z[ts.shape[1]] = (len + m - 1) / m * m + 1;
      add(with_dims(z), "misaligned");  // the contract's stride claim, whatever the candidate claims
    }
    if (base_.at(ts.shape[0]) > 1) {
      Dims z = base_;
      z[ts.shape[1]] = (len + m - 1) / m * m + m;
      const std::int64_t bytes = z[ts.shape[1]] * element_bytes(ts);
      Supports s = widest_claims(d_);
      s.min_alignment_bytes = (bytes & -bytes) * 2;
      add(with_dims(z), "misaligned", s);
    }
  }

  const Domain& d_;
  const Dims base_;
  const DType t0_;
  const Request ok_;
  std::vector<RefusalExample> v_;
};

}  // namespace

std::vector<RefusalExample> refusal_examples(const Domain& d) {
  if (d.dtypes.empty()) throw_error(ErrorKind::internal, "a domain without dtypes has no request to refuse");
  RefusalExampleSet set(d);
  set.missing_parts();
  set.sizes();
  set.layouts();
  set.constraint();
  set.narrower_claims();
  set.misalignments();
  set.aliasing_not_claimed();
  return set.take();
}

}  // namespace kqual::contract
