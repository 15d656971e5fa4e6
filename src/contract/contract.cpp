// Contract: the methods every contract derives from its declared domain() (the rest of the
// derivation is domain.cpp's), and the reference with a host of its own.
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/reference_host.hpp"

namespace kqual::contract {

// ---- Contract: the methods derived from domain() ---------------------------------------------

std::vector<TensorDecl> Contract::tensors() const {
  std::vector<TensorDecl> v;
  for (const auto& t : domain().tensors) v.push_back({t.name, t.role, t.description});
  return v;
}

std::vector<std::string> Contract::dims() const {
  std::vector<std::string> v;
  for (const auto& d : domain().dims) v.push_back(d.name);
  return v;
}

std::vector<DType> Contract::dtypes() const { return domain().dtypes; }
json Contract::domain_json() const { return contract::domain_json(domain()); }
std::int64_t Contract::tensor_elements(const std::string& tensor, const Dims& dims) const {
  return contract::tensor_elements(domain(), tensor, dims);
}
DType Contract::tensor_dtype(const std::string& tensor, DType t) const { return contract::tensor_dtype(domain(), tensor, t); }
Request Contract::request(DType t, const Dims& dims, std::int64_t offset_elements) const {
  return make_request(domain(), t, dims, offset_elements);
}
std::optional<Refusal> Contract::validate(const Request& req, const Supports& cand) const {
  return check_request(domain(), name(), req, cand);
}

std::vector<std::pair<Request, std::string>> Contract::unsupported_examples() const {
  std::vector<std::pair<Request, std::string>> v;
  for (auto& e : refusal_examples())
    if (!e.claims) v.emplace_back(std::move(e.request), std::move(e.code));
  return v;
}

std::vector<RefusalExample> Contract::refusal_examples() const { return contract::refusal_examples(domain()); }
ClaimedRange Contract::claimed_range(const Supports& cand) const { return contract::claimed_range(domain(), cand); }

std::vector<Tensor> Contract::reference(const CaseData& data) const {
  ReferenceHost own;
  return reference(data, own);
}

Comparison Contract::compare(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) const {
  return compare_output(expected, actual, poison_byte);
}

double Contract::min_bytes(const Dims& dims, DType t) const {
  double bytes = 0;
  for (const auto& ts : domain().tensors)
    bytes += double(contract::tensor_elements(domain(), ts.name, dims)) * double(dtype_size(contract::tensor_dtype(domain(), ts.name, t)));
  return bytes;
}

}  // namespace kqual::contract
