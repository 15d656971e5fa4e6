#pragma once
// The Contract over a declared contract's Spec (declared.hpp is the public side): its domain,
// references and comparison in declared.cpp, its cases in declared_cases.cpp. The harness treats it
// exactly as a built-in contract. Its reference runs in the Python reference process of the host
// the caller passes (the run's, kqual/contract/reference_host.hpp); the contract holds no process.
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "declared_spec.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "python_reference.hpp"

namespace kqual::contract::declared {

class DeclaredContract final : public Contract {
 public:
  explicit DeclaredContract(Spec s) : s_(std::move(s)) {
    build_domain();
    check_large_shape();
  }

  const Spec& spec() const { return s_; }
  std::string name() const override { return s_.name; }
  std::string summary() const override { return s_.summary; }
  const Domain& domain() const override { return d_; }
  std::string numerical_policy() const override;
  // The variable axes, then the row strides (which a request may leave out: complete() sets them).
  std::vector<std::string> given_dims() const override {
    std::vector<std::string> v;
    for (const auto& a : s_.axes)
      if (a.kind == Axis::variable) v.push_back(a.name);
    for (const auto& a : s_.axes)
      if (a.kind == Axis::stride) v.push_back(a.name);
    return v;
  }
  std::vector<std::string> optional_dims() const override {
    std::vector<std::string> v;
    for (const auto& a : s_.axes)
      if (a.kind == Axis::stride) v.push_back(a.name);
    return v;
  }
  Dims complete_dims(const Dims& given) const override {
    Dims v;
    for (const auto& a : s_.axes)
      if ((a.kind == Axis::variable || a.kind == Axis::stride) && given.count(a.name)) v[a.name] = given.at(a.name);
    return s_.complete(v);
  }
  std::vector<ScalarArg> scalars() const override {
    std::vector<ScalarArg> v;
    for (const auto& sc : s_.scalars) v.push_back({sc.name, sc.dtype, sc.value});
    return v;
  }
  // [contract] deterministic (default true) and deterministic_reason.
  Reproducibility reproducibility(DType t) const override;
  std::string roofline_ceiling() const override { return s_.ceiling; }
  std::string benchmark_family() const override { return s_.bench_family; }
  std::vector<Dims> benchmark_shapes() const override {
    std::vector<Dims> v;
    for (const auto& d : s_.bench_shapes) v.push_back(s_.complete(d));
    return v;
  }
  double flops(const Dims& dims, DType t) const override { return double(s_.flops.eval(cost_vars(dims, t))); }
  // Without a bytes formula: every tensor's view read or written once (a strided tensor's padding
  // is not moved).
  double min_bytes(const Dims& dims, DType t) const override;

  std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const override;
  // The case's inputs: drawn as declared, those from the [generator] made by it in the host's
  // reference process (the one-argument form: a host of its own for the call); declared_inputs.cpp.
  CaseData make_case(const CaseSpec& spec) const override;
  CaseData make_case_in(const CaseSpec& spec, ReferenceHost& host) const override;
  std::vector<Tensor> reference(const CaseData& data, ReferenceHost& host) const override;
  // Inputs drawn from normal or uniform values in f32/bf16 (the device generator's uniform [-1, 1)
  // is one such draw); integer, index, offset, mask and softmax-row inputs need their structure, and
  // a [generator]'s inputs its values.
  bool inputs_generatable(const CaseSpec& spec) const override {
    for (const auto& td : s_.tensors) {
      if (td.role != Role::input) continue;
      if (td.values.generated || (td.values.dist != "normal" && td.values.dist != "uniform")) return false;
      const DType d = tensor_dtype(td.name, spec.dtype);
      if (d != DType::f32 && d != DType::bf16) return false;
    }
    return true;
  }
  std::vector<CaseSpec> index_cases(const Supports& cand, std::uint64_t seed) const override;
  // "Cases not run: ..." for the policy text: the shapes of the case plan (every dtype row claimed,
  // no size limit from a candidate) that no case checks, and why; "" when none (declared_cases.cpp).
  std::string coverage_gaps() const;
  std::vector<OutputWindow> index_case_windows(const CaseSpec& spec) const override;
  bool prefers_gpu_reference(const Dims& dims) const override {
    return s_.reference.cuda && largest_tensor(s_.complete(dims)) > s_.max_case_elements;
  }
  std::optional<GpuReference> gpu_reference(const CaseData& data) const override;
  std::vector<Tensor> reference_from_gpu(const CaseData& data, const std::vector<Tensor>& raw) const override;
  Comparison compare(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) const override;

 private:
  std::map<std::string, DType> row(DType key) const {
    std::map<std::string, DType> m;
    for (const auto& t : s_.tensors) m[t.name] = tensor_dtype(t.name, key);
    return m;
  }
  std::map<std::string, std::int64_t> cost_vars(const Dims& dims, DType t) const {
    std::map<std::string, std::int64_t> v = s_.complete(dims);
    for (const auto& td : s_.tensors) v["size_" + td.name] = std::int64_t(dtype_size(tensor_dtype(td.name, t)));
    return v;
  }
  // The largest case: the CPU reference's cap, or the CUDA reference's where one is declared.
  std::int64_t case_cap() const { return s_.reference.cuda ? s_.reference.cuda->max_case_elements : s_.max_case_elements; }
  std::int64_t largest_tensor(const Dims& all) const {
    std::int64_t m = 0;
    for (const auto& t : s_.tensors) m = std::max(m, tensor_elements(t.name, all));
    return m;
  }
  bool admissible(const Dims& v) const {
    for (const auto& a : s_.axes)
      if (a.kind == Axis::variable && (v.at(a.name) < a.min || v.at(a.name) > a.max)) return false;
    try {
      const Dims all = s_.complete(v);
      return s_.violated(all).empty() && s_.layout_violated(all).empty();
    } catch (const Error&) {
      return false;
    }
  }
  void build_domain();
  std::int64_t stride_step(const Axis& a, const Supports& cand) const;
  Dims with_strides(Dims given, const Supports& cand, std::int64_t k) const;
  // The case plan; shapes left out for a reason the candidate's claims do not give (over the
  // reference's cap with no device-side generation) are described into `not_run` when it is given.
  struct NotRun {
    std::string why, what;  // why the shape is not checked; the shape ("rows=9000,cols=4096 (36864000 elements)")
  };
  std::vector<CaseSpec> plan_cases(const Supports& cand, std::uint64_t seed, bool include_large, std::vector<NotRun>* not_run) const;
  void large_generated(const Supports& cand, std::uint64_t seed, bool include_large,
                       const std::vector<std::pair<std::int64_t, Dims>>& over_cap, std::vector<CaseSpec>& cases,
                       std::vector<NotRun>* not_run) const;
  void family_limits(const std::vector<std::pair<std::int64_t, Dims>>& kept, std::vector<NotRun>& not_run) const;
  void check_large_shape() const;
  void check_nontrivial(ReferenceHost& host) const;
  // What lets a constant or input-ignoring kernel pass the reference on the case cs ("" when nothing
  // does); a sampling reference, or an unread input that moves an output, throws.
  // Inputs that moved no output where [contract] ignored_inputs allows it go to `ignored`.
  std::string discrimination_gap(ReferenceHost& host, const CaseSpec& cs, bool check_sampling,
                                 std::vector<std::string>* ignored) const;
  // A quantized output's expected bytes, values and bounds from the reference's real values.
  void quantized_expected(const TensorDef& td, const CaseData& data, const std::vector<double>& real, Tensor& e) const;
  // alternative: each output's values from [reference] alternative (Tensor::alt), when it has one.
  std::vector<Tensor> expected_from(const CaseData& data, std::map<std::string, RefOutput> ref,
                                    const std::map<std::string, RefOutput>* magnitude,
                                    std::map<std::string, RefOutput>* alternative = nullptr) const;

  Spec s_;
  Domain d_;
  // The non-triviality check runs before the first reference, once per contract (it is a property
  // of the reference, whatever host evaluates it).
  mutable std::once_flag nontrivial_once_;
  // A [generator] is held to its seed once per contract, on the first case made with a host.
  mutable std::once_flag generator_once_;
  // Set when the reference had to run its float inputs at float32 (Evaluation::reference_float32):
  // the numerical policy, and so the memo, says so.
  mutable std::mutex reference_note_mu_;
  mutable std::string reference_float32_;
  // Set when the base shape let a constant or input-ignoring kernel pass and a grown one did not (said
  // in the numerical policy).
  mutable std::string nontrivial_note_;
};

}  // namespace kqual::contract::declared
