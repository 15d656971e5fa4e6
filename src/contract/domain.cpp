// Everything derived from a contract's declared Domain: the refusal checks (in kRefusalCodes
// order), the domain's JSON, tensor sizes and dtypes, and the largest tensor a candidate's claims
// reach; the refusal codes and examples are in domain_examples.cpp. A contract declares its domain
// once; none of this is written per contract.
#include "kqual/contract/domain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "domain_internal.hpp"

namespace kqual::contract {
using namespace domain_detail;
namespace {

std::string joined(const std::vector<std::string>& names, const char* sep) { return fmt::format("{}", fmt::join(names, sep)); }

// 2^40, 2^31-1 for the round limits; decimal otherwise.
std::string format_count(std::int64_t v) {
  if (v == kUnlimited) return "none";
  if (v >= (std::int64_t(1) << 20)) {
    for (int k = 20; k < 63; ++k) {
      if (v == (std::int64_t(1) << k)) return fmt::format("2^{}", k);
      if (v == (std::int64_t(1) << k) - 1) return fmt::format("2^{}-1", k);
    }
  }
  return fmt::format("{}", v);
}

// "n = 1024" / "rows*cols = 64*32 = 2048".
std::string product_text(const std::vector<std::string>& names, const Dims& dims) {
  if (names.size() == 1) return fmt::format("{} = {}", names[0], dims.at(names[0]));
  std::vector<std::string> values;
  for (const auto& n : names) values.push_back(fmt::format("{}", dims.at(n)));
  return fmt::format("{} = {} = {}", joined(names, "*"), joined(values, "*"), product(names, dims));
}

std::string dtype_list(const std::vector<DType>& ts) {
  std::vector<std::string> v;
  for (DType t : ts) v.emplace_back(to_string(t));
  return joined(v, ", ");
}

// " (why)", or nothing.
std::string parenthesised(const std::string& why) { return why.empty() ? why : " (" + why + ")"; }

const TensorSpec* first_of(const Domain& d, Role r) {
  for (const auto& t : d.tensors)
    if (t.role == r) return &t;
  return nullptr;
}

// The tensor whose length an absent dim is taken from, when the request omits it.
const DimSpec* inferred_from(const Domain& d, const Dims& given, const TensorSpec& t) {
  if (t.shape.size() != 1) return nullptr;
  const DimSpec* dim = d.dim(t.shape[0]);
  if (!dim || dim->from_length_of.empty() || given.count(dim->name)) return nullptr;
  return dim;
}

// Largest value each dim can take under the domain's limits and a claim of max_n (every dim >= 1,
// so a limit on a product bounds each factor).
std::map<std::string, std::int64_t> dim_ceilings(const Domain& d, std::int64_t max_n) {
  std::map<std::string, std::int64_t> c = dim_maxima(d);
  for (const auto& dim : d.dims)
    if (dim.fixed > 0) c[dim.name] = std::min(c[dim.name], dim.fixed);
  for (const auto& l : d.limits)
    for (const auto& n : l.dims) c[n] = std::min(c[n], l.max);
  for (const auto& n : d.claim.dims) c[n] = std::min(c[n], max_n);
  if (d.claim.dims.empty())
    for (const auto& t : d.tensors)
      for (const auto& n : t.shape) c[n] = std::min(c[n], max_n);
  return c;
}

// Is `part` a sub-multiset of `whole`?
bool contained(std::vector<std::string> part, std::vector<std::string> whole) {
  std::sort(part.begin(), part.end());
  std::sort(whole.begin(), whole.end());
  return std::includes(whole.begin(), whole.end(), part.begin(), part.end());
}

std::vector<std::string> minus(std::vector<std::string> whole, const std::vector<std::string>& part) {
  for (const auto& p : part)
    if (auto it = std::find(whole.begin(), whole.end(), p); it != whole.end()) whole.erase(it);
  return whole;
}

}  // namespace

const DimSpec* Domain::dim(std::string_view name) const {
  for (const auto& d : dims)
    if (d.name == name) return &d;
  return nullptr;
}

const TensorSpec* Domain::tensor(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> declaration_problems(const Domain& d) {
  std::vector<std::string> p;
  std::set<std::string> dims, tensors;
  for (const auto& dim : d.dims) {
    if (dim.name.empty() || !dims.insert(dim.name).second) p.push_back(fmt::format("dim '{}' is unnamed or declared twice", dim.name));
    if (dim.max < 1) p.push_back(fmt::format("dim '{}' has a maximum below 1", dim.name));
  }
  auto known_dims = [&](const std::vector<std::string>& names, const std::string& where) {
    if (names.empty()) p.push_back(where + " names no dim");
    for (const auto& n : names)
      if (!dims.count(n)) p.push_back(fmt::format("{} names dim '{}', which is not declared", where, n));
  };
  for (const auto& t : d.tensors) {
    if (t.name.empty() || !tensors.insert(t.name).second) p.push_back(fmt::format("tensor '{}' is unnamed or declared twice", t.name));
    known_dims(t.shape, fmt::format("the shape of tensor '{}'", t.name));
    if (t.layout == Layout::row_major && t.shape.size() != 2)
      p.push_back(fmt::format("tensor '{}' is row_major but has {} dims, not 2", t.name, t.shape.size()));
    if (t.layout == Layout::strided) {
      if (t.shape.size() != 2) p.push_back(fmt::format("tensor '{}' is strided but has {} dims, not 2", t.name, t.shape.size()));
      if (!dims.count(t.row_length))
        p.push_back(fmt::format("tensor '{}' is strided with row length '{}', which is not a declared dim", t.name, t.row_length));
      if (t.stride_multiple < 1) p.push_back(fmt::format("tensor '{}' has a stride multiple below 1", t.name));
    } else if (!t.row_length.empty()) {
      p.push_back(fmt::format("tensor '{}' has a row length but is not strided", t.name));
    }
  }
  for (const auto& dim : d.dims) {
    if (dim.from_length_of.empty()) continue;
    const TensorSpec* t = d.tensor(dim.from_length_of);
    if (!t || t->shape != std::vector<std::string>{dim.name})
      p.push_back(fmt::format("dim '{}' is taken from the length of '{}', which is not a tensor of shape {{{}}}", dim.name,
                              dim.from_length_of, dim.name));
  }
  for (const auto& l : d.limits) {
    known_dims(l.dims, "a size limit");
    if (l.max < 1) p.push_back(fmt::format("the size limit on {} is below 1", joined(l.dims, "*")));
  }
  if (!d.claim.dims.empty()) known_dims(d.claim.dims, "the claim scope");
  std::set<DType> seen;
  if (d.dtypes.empty()) p.push_back("no dtype is declared");
  for (DType t : d.dtypes)
    if (!seen.insert(t).second) p.push_back(fmt::format("dtype {} is declared twice", to_string(t)));
  if (d.in_place) {
    const TensorSpec* o = d.tensor(d.in_place->output);
    const TensorSpec* i = d.tensor(d.in_place->input);
    if (!o || o->role != Role::output) p.push_back(fmt::format("in place: '{}' is not an output tensor", d.in_place->output));
    if (!i || i->role != Role::input) p.push_back(fmt::format("in place: '{}' is not an input tensor", d.in_place->input));
    if (o && i && (o->shape != i->shape || o->dtype != i->dtype))
      p.push_back(fmt::format("in place: '{}' and '{}' differ in shape or dtype", o->name, i->name));
  }
  if (d.mismatch_code != "length_mismatch" && d.mismatch_code != "shape_mismatch")
    p.push_back(fmt::format("mismatch_code '{}' is neither length_mismatch nor shape_mismatch", d.mismatch_code));
  return p;
}

std::int64_t tensor_elements(const Domain& d, const std::string& tensor, const Dims& dims) {
  const TensorSpec* t = d.tensor(tensor);
  if (!t) throw_error(ErrorKind::internal, fmt::format("the domain has no tensor '{}'", tensor));
  for (const auto& n : t->shape)
    if (!dims.count(n))
      throw_error(ErrorKind::internal, fmt::format("tensor '{}' needs dim '{}', absent from {}", tensor, n, format_dims(dims)));
  return product(t->shape, dims);
}

DType tensor_dtype(const Domain& d, const std::string& tensor, DType t) {
  if (auto row = d.dtype_rows.find(t); row != d.dtype_rows.end())
    if (auto it = row->second.find(tensor); it != row->second.end()) return it->second;
  const TensorSpec* s = d.tensor(tensor);
  if (!s) throw_error(ErrorKind::internal, fmt::format("the domain has no tensor '{}'", tensor));
  return s->dtype.value_or(t);
}

std::int64_t claim_quantity(const Domain& d, const Dims& dims) {
  if (!d.claim.dims.empty()) return product(d.claim.dims, dims);
  std::int64_t q = 0;
  for (const auto& t : d.tensors) q = std::max(q, product(t.shape, dims));
  return q;
}

Request make_request(const Domain& d, DType t, const Dims& dims, std::int64_t offset_elements) {
  Request r;
  r.dtype = t;
  r.dims = dims;
  r.offset_elements = offset_elements;
  for (const auto& ts : d.tensors) r.lengths[ts.name] = tensor_elements(d, ts.name, dims);
  return r;
}

std::optional<Refusal> check_request(const Domain& d, std::string_view contract, const Request& req, const Supports& cand) {
  auto refuse = [](const char* code, std::string reason) { return Refusal{code, std::move(reason)}; };
  if (!has(d.dtypes, req.dtype))
    return refuse("dtype_unsupported", fmt::format("dtype {} is outside the {} contract ({}{}{})", to_string(req.dtype), contract,
                                                   dtype_list(d.dtypes), d.dtype_note.empty() ? "" : "; ", d.dtype_note));
  if (!cand.supports(req.dtype))
    return refuse("dtype_not_claimed", fmt::format("the candidate does not claim dtype {}", to_string(req.dtype)));
  for (const auto& t : d.tensors)
    if (!req.lengths.count(t.name)) return refuse("missing_tensor", fmt::format("tensor '{}' is missing from the request", t.name));

  // The dims: from the request, or (a dim declared from_length_of) from that tensor's length.
  Dims dims;
  for (const auto& dim : d.dims) {
    if (auto it = req.dims.find(dim.name); it != req.dims.end()) dims[dim.name] = it->second;
    else if (!dim.from_length_of.empty()) dims[dim.name] = req.lengths.at(dim.from_length_of);
    else return refuse("missing_dim", fmt::format("dim '{}' is missing from the request", dim.name));
  }
  std::vector<std::string> names;
  for (const auto& dim : d.dims) names.push_back(dim.name);
  for (const auto& dim : d.dims) {
    const std::int64_t v = dims.at(dim.name);
    if (v >= 1) continue;
    if (d.dims.size() == 1)
      return refuse("empty", fmt::format("{} = {}: the {} contract needs at least one element", dim.name, v, contract));
    return refuse("empty", fmt::format("{} = {}: every dim of the {} contract ({}) must be at least 1", dim.name, v, contract,
                                       joined(names, ", ")));
  }
  for (const auto& dim : d.dims)
    if (dims.at(dim.name) > dim.max)
      return refuse("dim_too_large", fmt::format("{} = {} exceeds the {} contract's limit of {} for {}", dim.name, dims.at(dim.name),
                                                 contract, format_count(dim.max), dim.name));
  for (const auto& l : d.limits)
    if (product(l.dims, dims) > l.max)
      return refuse("too_large", fmt::format("{} exceeds the {} contract's limit of {}", product_text(l.dims, dims), contract,
                                             format_count(l.max)));

  for (const auto& t : d.tensors) {
    const std::int64_t have = req.lengths.at(t.name), want = product(t.shape, dims);
    if (have == want) continue;
    std::string because;
    if (const DimSpec* from = inferred_from(d, req.dims, t); from && from->from_length_of != t.name)
      because = fmt::format("{} has {}", from->from_length_of, want);
    else
      because = product_text(t.shape, dims);
    return refuse(d.mismatch_code == "shape_mismatch" ? "shape_mismatch" : "length_mismatch",
                  fmt::format("tensor '{}' has {} elements but {}", t.name, have, because));
  }

  if (d.constraint)
    if (std::string why = d.constraint(dims); !why.empty())
      return refuse("constraint", fmt::format("outside the {} contract's domain: {}", contract, why));

  if (!d.claim.dims.empty()) {
    if (product(d.claim.dims, dims) > cand.max_n) {
      const std::string what = d.claim.dims.size() == 1 ? d.claim.dims[0] : joined(d.claim.dims, "*");
      return refuse("exceeds_claim", fmt::format("{} = {} exceeds the candidate's claimed max_n = {}", what,
                                                 product(d.claim.dims, dims), cand.max_n));
    }
  } else {
    for (const auto& t : d.tensors)
      if (product(t.shape, dims) > cand.max_n)
        return refuse("exceeds_claim", fmt::format("tensor '{}' has {} elements, over the candidate's claimed max_n = {}", t.name,
                                                   product(t.shape, dims), cand.max_n));
  }

  for (const auto& [name, stride] : req.strides) {
    if (stride == 1) continue;
    const TensorSpec* t = d.tensor(name);
    if (t && t->layout == Layout::row_major && t->shape.size() == 2) {
      const std::int64_t rows = dims.at(t->shape[0]);
      if (stride == rows && rows > 1)
        return refuse("transposed", fmt::format("tensor '{}' is given with stride {} (column-major / transposed); the {} contract "
                                                "covers row-major operands only", name, stride, contract));
    }
    const bool matrix = t && t->shape.size() >= 2;
    return refuse("non_contiguous", fmt::format("tensor '{}' has stride {}; the {} contract covers contiguous {}tensors only", name,
                                                stride, contract, matrix ? "row-major " : ""));
  }
  for (const auto& t : d.tensors) {
    if (t.layout != Layout::strided) continue;
    const std::int64_t stride = dims.at(t.shape[1]), len = dims.at(t.row_length);
    if (stride < len)
      return refuse("non_contiguous", fmt::format("tensor '{}' has row stride {} = {}, below its row length {} = {}: its rows would "
                                                  "overlap (the {} contract's strided layout needs {} >= {})", t.name, t.shape[1],
                                                  stride, t.row_length, len, contract, t.shape[1], t.row_length));
  }
  if (req.offset_elements < 0)
    return refuse("negative_offset", fmt::format("start offset {} is negative", req.offset_elements));
  for (const auto& t : d.tensors) {
    if (t.layout != Layout::strided || t.stride_multiple <= 1) continue;
    const std::int64_t stride = dims.at(t.shape[1]);
    if (stride % t.stride_multiple)
      return refuse("misaligned", fmt::format("tensor '{}' has row stride {} = {}, not a multiple of {} elements: the {} contract "
                                              "guarantees that stride (its stride_multiple_of)", t.name, t.shape[1], stride,
                                              t.stride_multiple, contract));
  }
  for (const auto& t : d.tensors) {
    if (t.alignment <= 0) continue;
    const std::int64_t bytes = mul_sat(req.offset_elements, std::int64_t(dtype_size(tensor_dtype(d, t.name, req.dtype))));
    if (bytes % t.alignment)
      return refuse("misaligned", fmt::format("a start offset of {} element(s) ({} bytes) breaks the {} contract's alignment of {} bytes "
                                              "for tensor '{}'", req.offset_elements, bytes, contract, t.alignment, t.name));
  }
  if (cand.min_alignment_bytes > 0) {
    for (const auto& t : d.tensors) {
      const DType tt = tensor_dtype(d, t.name, req.dtype);
      const std::int64_t bytes = mul_sat(req.offset_elements, std::int64_t(dtype_size(tt)));
      if (bytes % cand.min_alignment_bytes == 0) continue;
      return refuse("misaligned", fmt::format("a start offset of {} element(s) ({} bytes{}) breaks the candidate's claimed alignment "
                                              "of {} bytes", req.offset_elements, bytes,
                                              t.dtype ? fmt::format(" of {} tensor '{}'", to_string(tt), t.name) : "",
                                              cand.min_alignment_bytes));
    }
    // A strided tensor's every row starts where its first does plus a multiple of the stride: the
    // candidate's alignment holds for each row only when the stride keeps it.
    for (const auto& t : d.tensors) {
      if (t.layout != Layout::strided || dims.at(t.shape[0]) < 2) continue;
      const std::int64_t stride = dims.at(t.shape[1]);
      const std::int64_t bytes = mul_sat(stride, std::int64_t(dtype_size(tensor_dtype(d, t.name, req.dtype))));
      if (bytes % cand.min_alignment_bytes == 0) continue;
      return refuse("misaligned", fmt::format("tensor '{}' has row stride {} = {} elements ({} bytes): its second row starts off the "
                                              "candidate's claimed alignment of {} bytes", t.name, t.shape[1], stride, bytes,
                                              cand.min_alignment_bytes));
    }
  }
  if (req.in_place) {
    const TensorSpec* out = first_of(d, Role::output);
    const TensorSpec* in = first_of(d, Role::input);
    const std::string o = d.in_place ? d.in_place->output : out ? out->name : "the output";
    const std::string i = d.in_place ? d.in_place->input : in ? in->name : "the input";
    if (!d.in_place)
      return refuse("aliasing_unsupported", fmt::format("{} aliases {}: the {} contract has no in-place form{}", o, i, contract,
                                                        parenthesised(d.no_in_place_reason)));
    if (!cand.in_place)
      return refuse("aliasing_not_claimed", fmt::format("{} aliases {}, but the candidate does not claim in-place support", o, i));
  }
  return std::nullopt;
}

json domain_json(const Domain& d) {
  json dims = json::array();
  for (const auto& dim : d.dims) {
    json j{{"name", dim.name}, {"min", 1}, {"max", dim.max == kUnlimited ? json("none") : json(dim.max)}};
    if (!dim.from_length_of.empty()) j["from_length_of"] = dim.from_length_of;
    dims.push_back(j);
  }
  json limits = json::array();
  for (const auto& l : d.limits) limits.push_back({{"of", joined(l.dims, "*")}, {"max", l.max}});
  json tensors = json::array();
  for (const auto& t : d.tensors) {
    tensors.push_back({{"name", t.name},
                       {"role", t.role == Role::input ? "input" : "output"},
                       {"shape", t.shape},
                       {"elements", joined(t.shape, "*")},
                       {"dtype", t.dtype ? std::string(to_string(*t.dtype)) : std::string("request")},
                       {"layout", t.layout == Layout::row_major ? "row_major" : t.layout == Layout::strided ? "strided" : "contiguous"},
                       {"description", t.description}});
    if (t.layout == Layout::strided) {
      tensors.back()["row_length"] = t.row_length;
      tensors.back()["row_stride"] = t.shape[1];
      tensors.back()["stride_multiple_of"] = t.stride_multiple;
    }
  }
  json dtypes = json::array();
  for (DType t : d.dtypes) dtypes.push_back(std::string(to_string(t)));
  json aliasing{{"in_place", d.in_place.has_value()}};
  if (d.in_place) {
    aliasing["output"] = d.in_place->output;
    aliasing["input"] = d.in_place->input;
    aliasing["text"] = fmt::format("{} may alias {} only if the candidate claims in_place", d.in_place->output, d.in_place->input);
  } else {
    aliasing["text"] = "no output may alias an input" + parenthesised(d.no_in_place_reason);
  }
  json j{{"dtypes", dtypes}};
  if (!d.dtype_note.empty()) j["dtype_note"] = d.dtype_note;
  j["dims"] = dims;
  j["limits"] = limits;
  j["tensors"] = tensors;
  j["claim"] = {{"max_n_bounds", d.claim.dims.empty() ? std::string("every tensor's element count") : joined(d.claim.dims, "*")},
                {"default_max_n", Supports{}.max_n}};
  j["alignment"] = std::string("the candidate's min_alignment_bytes, at every tensor's start (offset x element size); an offset of "
                               "one element is tested when the candidate claims element alignment") +
                   (d.alignment_note.empty() ? "" : "; " + d.alignment_note);
  j["aliasing"] = aliasing;
  j["refusal_codes"] = refusal_codes(d);
  return j;
}

ClaimedRange claimed_range(const Domain& d, const Supports& cand) {
  ClaimedRange r;
  std::int64_t widest = 0;  // the largest claimed element size of a request-dtype tensor
  for (DType t : cand.dtypes)
    if (has(d.dtypes, t)) widest = std::max(widest, std::int64_t(dtype_size(t)));
  for (const auto& t : d.tensors) r.tensor_elements[t.name] = 0;
  if (widest == 0 || cand.max_n < 1) return r;
  const auto ceil = dim_ceilings(d, cand.max_n);
  for (const auto& [n, c] : ceil)
    if (c < 1) return r;  // no dim can be 1: nothing is accepted
  for (const auto& t : d.tensors) {
    std::int64_t bound = ceiling_product(t.shape, ceil);
    for (const auto& l : d.limits)
      if (contained(l.dims, t.shape)) bound = std::min(bound, mul_sat(l.max, ceiling_product(minus(t.shape, l.dims), ceil)));
    if (d.claim.dims.empty()) bound = std::min(bound, cand.max_n);
    else if (contained(d.claim.dims, t.shape))
      bound = std::min(bound, mul_sat(cand.max_n, ceiling_product(minus(t.shape, d.claim.dims), ceil)));
    r.tensor_elements[t.name] = bound;
    const std::int64_t es = t.dtype ? std::int64_t(dtype_size(*t.dtype)) : widest;
    r.max_bytes = std::max(r.max_bytes, mul_sat(bound, es));
    if (bound > r.max_elements) {
      r.max_elements = bound;
      r.tensor = t.name;
    }
  }
  r.max_index = r.max_elements - 1;
  return r;
}

}  // namespace kqual::contract
