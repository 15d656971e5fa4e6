// Which cases a PyTorch submission takes (torch_submission_cases.hpp): the contract's correctness cases at
// its dtypes within the element limit, one grown past it per dtype, the smallest size where none is within
// it, and the problem's own sizes for a recheck there.
#include "torch_submission_cases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace kqual::bench {

std::int64_t case_elements(const contract::Contract& c, const contract::CaseSpec& spec) {
  std::int64_t most = 0;
  for (const auto& t : c.domain().tensors) {
    std::int64_t n = 1;
    for (const auto& a : t.shape)
      if (auto it = spec.dims.find(a); it != spec.dims.end()) n *= it->second;
    most = std::max(most, n);
  }
  return most;
}

// The cases a submission takes: the contract's correctness cases at the dtypes it is judged at, one per
// (dtype, dims, family): alignment offsets do not apply (PyTorch allocates the tensors it is given).
std::vector<contract::CaseSpec> submission_cases(const contract::Contract& c, const std::vector<DType>& dtypes, const SubmissionCheckOptions& o,
                                                 int* skipped, std::string* note) {
  contract::Supports all;
  all.dtypes = dtypes;
  all.min_alignment_bytes = 1;
  std::vector<contract::CaseSpec> out;
  std::set<std::string> seen;
  // Per dtype, the largest case within the limit, grown past it (past_limit_case) and run last.
  std::map<DType, contract::CaseSpec> largest;
  std::vector<contract::CaseSpec> over;  // past the limit
  std::vector<contract::CaseSpec> made = c.correctness_cases(all, o.seed, false);
  if (!o.only_dims.empty()) {
    // The problem's own sizes: the contract's cases there, else its base case made at them; whatever
    // their size up to the hard cap, nothing grown past them.
    std::vector<contract::CaseSpec> own;
    for (const auto& dims : o.only_dims)
      for (DType t : dtypes) {
        const contract::CaseSpec* like = nullptr;
        bool found = false;
        for (const auto& spec : made) {
          if (spec.dtype != t || spec.offset_elements != 0) continue;
          if (spec.dims == dims) {
            own.push_back(spec);
            found = true;
          } else if (!like || (like->family != "base" && spec.family == "base")) {
            like = &spec;
          }
        }
        if (!found && like) {
          contract::CaseSpec spec = *like;
          spec.dims = dims;
          spec.id = fmt::format("{}/{}/{}", to_string(t), contract::format_dims(dims), spec.family);
          own.push_back(std::move(spec));
        }
      }
    for (auto& spec : own) {
      const std::string key = fmt::format("{}/{}/{}", to_string(spec.dtype), contract::format_dims(spec.dims), spec.family);
      if (!seen.insert(key).second) continue;
      if (case_elements(c, spec) > o.own_size_cap_elements) ++*skipped;
      else out.push_back(std::move(spec));
    }
    return out;
  }
  for (auto& spec : made) {
    const std::string key = fmt::format("{}/{}/{}", to_string(spec.dtype), contract::format_dims(spec.dims), spec.family);
    if (spec.offset_elements != 0 || !seen.insert(key).second) continue;
    if (case_elements(c, spec) > o.max_case_elements) {
      ++*skipped;
      over.push_back(std::move(spec));
      continue;
    }
    if (auto it = largest.find(spec.dtype); it == largest.end() || case_elements(c, spec) > case_elements(c, it->second))
      largest[spec.dtype] = spec;
    out.push_back(std::move(spec));
  }
  for (const auto& [dt, spec] : largest)
    if (auto grown = past_limit_case(c, spec, o.max_case_elements)) out.push_back(std::move(*grown));
  if (out.empty()) {
    // Nothing within the limit: a problem whose fixed sizes are larger (weights no axis scales). Its
    // smallest size, per dtype, every family there, judged as the problem makes it (up to a hard cap).
    std::map<DType, std::int64_t> smallest;
    for (const auto& spec : over) {
      const std::int64_t n = case_elements(c, spec);
      if (n > o.own_size_cap_elements) continue;
      if (auto it = smallest.find(spec.dtype); it == smallest.end() || n < it->second) smallest[spec.dtype] = n;
    }
    for (auto& spec : over)
      if (auto it = smallest.find(spec.dtype); it != smallest.end() && case_elements(c, spec) == it->second) out.push_back(std::move(spec));
    *skipped -= int(out.size());
    if (!out.empty())
      *note = fmt::format("no case of {} is within {} elements (sizes the problem fixes are larger); the {} case(s) of its smallest size "
                          "ran ({} elements{})",
                          c.name(), o.max_case_elements, out.size(), smallest.begin()->second,
                          smallest.size() > 1 ? " for the first dtype" : "");
  }
  return out;
}

// A case just past the element limit (declared in the header): `spec` (the largest within it) with its outermost axis multiplied
// until its largest tensor holds more than `limit` elements, if the contract accepts that shape. A kernel
// whose grid stops at the limit's size (2^24 elements) is wrong there, and only there.
std::optional<contract::CaseSpec> past_limit_case(const contract::Contract& c, const contract::CaseSpec& spec, std::int64_t limit) {
  const std::int64_t n = case_elements(c, spec);
  if (n < 1) return std::nullopt;
  std::string axis;
  for (const auto& t : c.domain().tensors) {
    std::int64_t e = 1;
    for (const auto& a : t.shape)
      if (auto it = spec.dims.find(a); it != spec.dims.end()) e *= it->second;
    if (e == n && !t.shape.empty() && spec.dims.count(t.shape.front())) {
      axis = t.shape.front();
      break;
    }
  }
  if (axis.empty()) return std::nullopt;
  // The smallest size of that axis whose largest tensor passes the limit (an axis that appears twice, as
  // in a square matmul, grows by its square root), found by bisection.
  const auto largest_at = [&](std::int64_t v) {
    std::int64_t most = 0;
    for (const auto& t : c.domain().tensors) {
      std::int64_t e = 1;
      for (const auto& a : t.shape)
        if (a == axis) e *= v;
        else if (auto it = spec.dims.find(a); it != spec.dims.end()) e *= it->second;
      most = std::max(most, e);
    }
    return most;
  };
  std::int64_t lo = spec.dims.at(axis), hi = lo * (limit / n + 1);
  if (largest_at(hi) <= limit) return std::nullopt;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (largest_at(mid) > limit ? hi : lo) = mid;
  }
  contract::CaseSpec grown = spec;
  grown.dims[axis] = hi;
  grown.id = fmt::format("{}/past-limit/{}", to_string(spec.dtype), contract::format_dims(grown.dims));
  contract::Request req;
  req.dtype = grown.dtype;
  req.dims = grown.dims;
  contract::Supports any;
  any.dtypes = {grown.dtype};
  any.min_alignment_bytes = 1;
  for (const auto& t : c.domain().tensors) {
    std::int64_t e = 1;
    for (const auto& a : t.shape)
      if (auto it = grown.dims.find(a); it != grown.dims.end()) e *= it->second;
    req.lengths[t.name] = e;
    req.strides[t.name] = 1;
  }
  if (c.validate(req, any)) return std::nullopt;  // a shape the contract refuses: no such case
  return grown;
}

}  // namespace kqual::bench
