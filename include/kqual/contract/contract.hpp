#pragma once
// An operation contract: tensors and dims, domain, numerical policy, trusted reference, case
// generator and refusals. Contracts are pure CPU code: references never live where a candidate
// kernel could reach them (they are computed and compared in the coordinating process, or in a
// process the run holds: reference_host.hpp). A contract holds no process itself.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kqual/contract/domain.hpp"
#include "kqual/contract/generated.hpp"
#include "kqual/core/dtype.hpp"
#include "kqual/core/json.hpp"

namespace kqual::contract {

class ReferenceHost;  // reference_host.hpp: the processes a run computes references in

struct CaseSpec {
  std::string id;         // e.g. "f32/n=257/specials/off=0"
  std::string family;     // value family
  DType dtype = DType::f32;
  Dims dims;              // e.g. {{"n", 257}}
  std::int64_t offset_elements = 0;
  std::uint64_t seed = 0;
  std::int64_t dim(const std::string& name) const;  // throws Error(internal) when absent
};

struct Tensor {
  std::string name;
  DType dtype = DType::f32;
  std::int64_t elements = 0;
  std::vector<std::uint8_t> bytes;   // inputs: the data; expected outputs: the reference rounded to dtype
  // Expected outputs under a tolerance (error model): the higher-precision reference value and the
  // largest admissible |actual - ref| per element. Empty for bit-exact outputs.
  std::vector<double> ref;
  std::vector<double> bound;
  // A strided tensor (Layout::strided): `elements` is its storage, rows of row_length elements one
  // every row_stride elements. The elements between are padding: poison in inputs; in an expected
  // output, what the harness poisoned the buffer with must still be there. 0: dense.
  std::int64_t row_length = 0, row_stride = 0;
  // Where ref is NaN or +-Inf: a second value also accepted there, rounded to dtype (a declared
  // contract's [reference] alternative: one framework's +-0 where another gives NaN). Empty: none.
  std::vector<double> alt = {};
};

struct CaseData {
  CaseSpec spec;
  std::map<std::string, std::int64_t> dims;
  std::vector<Tensor> inputs;
};

// One mismatch class, in order of precedence when several apply.
struct Comparison {
  bool ok = true;
  std::string code;    // "", "unwritten_output", "nan_policy", "wrong_result"
  std::string detail;  // first offending index with expected and actual values
  std::int64_t mismatches = 0;
  std::vector<std::int64_t> examples;  // indices of the first few offending elements of the reported class
};

struct GpuLaunch {
  std::string kernel;                       // extern "C" name in GpuReference::source
  std::int64_t grid[3] = {1, 1, 1};
  std::int64_t block[3] = {1, 1, 1};
  std::int64_t shared = 0;
  // Each argument: a tensor name (input or raw output, passed as a device pointer) or a scalar.
  struct Arg {
    std::string tensor;                     // empty: scalar
    std::int64_t scalar = 0;
    int scalar_bytes = 8;                   // 4 or 8
  };
  std::vector<Arg> args;
};

struct GpuReference {
  std::string source;                       // compiled with NVRTC for the device's arch
  std::vector<GpuLaunch> launches;
  std::vector<Tensor> raw_outputs;          // name, dtype, elements (bytes left empty)
};

// A scalar kernel argument the contract fixes (declared contracts' [scalars]: eps = 1e-6 as f32).
struct ScalarArg {
  std::string name;
  DType dtype = DType::f32;  // f32, f64, i32, i64
  double value = 0;
};

// A contract's run-to-run rule for one dtype.
struct Reproducibility {
  bool required = true;  // two runs on the same inputs must give the same bytes
  std::string reason;    // why (or why not): one sentence for the memo and for refusals
  // How a user who needs the other rule gets it: a built-in contract's rule is fixed, a declared
  // contract's owner sets [contract] deterministic in its file.
  std::string opt_out;
};

class Contract {
 public:
  virtual ~Contract() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;            // one line: the operation
  // The domain, declared once (include/kqual/contract/domain.hpp); every method of the next group
  // is derived from it.
  virtual const Domain& domain() const = 0;
  virtual std::string numerical_policy() const = 0;   // text for the memo

  // ---- Derived from domain() (src/contract/domain.cpp) ----
  std::vector<TensorDecl> tensors() const;
  std::vector<std::string> dims() const;
  std::vector<DType> dtypes() const;
  json domain_json() const;
  // Elements of a tensor for the given dims, and its dtype when the case's dtype is t.
  std::int64_t tensor_elements(const std::string& tensor, const Dims& dims) const;
  DType tensor_dtype(const std::string& tensor, DType t) const;
  // A contiguous request for dims (every tensor's length from the dims).
  Request request(DType t, const Dims& dims, std::int64_t offset_elements = 0) const;
  // Refuse before launch; nullopt = accepted.
  std::optional<Refusal> validate(const Request& req, const Supports& cand) const;
  // Requests refused whatever the candidate claims (given it claims their dtype), with the expected
  // code (tests and memo); refusal_examples() adds the claim-dependent ones with their claims.
  std::vector<std::pair<Request, std::string>> unsupported_examples() const;
  std::vector<RefusalExample> refusal_examples() const;
  // The largest tensor (elements, index, bytes) a request accepted under cand can have.
  ClaimedRange claimed_range(const Supports& cand) const;

  // The dims a user gives (parse_shape); the others follow from them through complete_dims
  // (declared contracts' constant and derived axes). Built-in contracts: every dim, unchanged.
  virtual std::vector<std::string> given_dims() const { return dims(); }
  virtual Dims complete_dims(const Dims& given) const { return given; }
  // Given dims a request may leave out, complete_dims filling them in (declared contracts' row
  // strides: the row length rounded up to the stride multiple). None for built-in contracts.
  virtual std::vector<std::string> optional_dims() const { return {}; }
  // Scalars passed to kernels by name in a manifest's args ("eps"); none for built-in contracts.
  virtual std::vector<ScalarArg> scalars() const { return {}; }

  // Whether two runs on the same inputs must give the same bytes for dtype t, and why. Every
  // contract states it (docs/contracts.md, "Run-to-run reproducibility"); where it is not required,
  // the two runs must still each match the reference and differ by no more than the error bound.
  virtual Reproducibility reproducibility(DType t) const = 0;
  bool deterministic(DType t) const { return reproducibility(t).required; }
  virtual std::vector<CaseSpec> correctness_cases(const Supports& cand, std::uint64_t seed, bool include_large) const = 0;
  // Shapes timed by default (the last one is "the large shape" for rooflines), dtype f32.
  virtual std::vector<Dims> benchmark_shapes() const = 0;
  // The value family timed inputs are drawn from (a family make_case knows).
  virtual std::string benchmark_family() const { return "normal"; }
  // The reference a harness should use for a case this large; the CPU one otherwise (see
  // gpu_reference below).
  virtual bool prefers_gpu_reference(const Dims& /*dims*/) const { return false; }
  // A simple fp64 GPU reference for cases too large for the CPU: CUDA source (extern "C" kernels)
  // and a launch plan. It runs in its own worker process, never in a candidate's; raw outputs come
  // back to reference_from_gpu, which turns them into expected tensors. nullopt: CPU only.
  virtual std::optional<GpuReference> gpu_reference(const CaseData& /*data*/) const;
  virtual std::vector<Tensor> reference_from_gpu(const CaseData& data, const std::vector<Tensor>& raw) const;
  virtual CaseData make_case(const CaseSpec& spec) const = 0;
  // The same in the processes of the run (`host`, as for reference() below): a declared contract
  // whose inputs come from its [generator] runs it in its reference process there (make_case starts
  // a process of its own for the call); every other contract ignores `host`.
  virtual CaseData make_case_in(const CaseSpec& spec, ReferenceHost& host) const {
    (void)host;
    return make_case(spec);
  }
  // Cases past 2^31 (and 2^32) elements, for candidates whose claims reach there: generated on the
  // device and checked in windows (contract/generated.hpp). Empty when the claims stop below 2^31
  // elements, or when the contract has no windowed check (docs/contracts.md says which).
  virtual std::vector<CaseSpec> index_cases(const Supports& /*cand*/, std::uint64_t /*seed*/) const { return {}; }
  virtual std::vector<OutputWindow> index_case_windows(const CaseSpec& /*spec*/) const { return {}; }
  // The expected outputs of one window: by default the reference on generated_subcase(big, w); a
  // contract whose outputs depend on everything before them (a scan) overrides it. `host` as for
  // reference() below.
  virtual std::vector<Tensor> window_reference(const CaseSpec& big, const OutputWindow& w, ReferenceHost& host) const;
  // Large cases verified on the device: for a generated case (kGeneratedFamily), a
  // trusted reference kernel over the same generated inputs whose raw outputs ARE the expected
  // outputs, bit for bit (exact contracts only). It runs in the session's reference worker, never in
  // a candidate's process; the two outputs are compared through per-chunk hashes. nullopt: such
  // cases are checked in windows instead (index_case_windows).
  virtual std::optional<GpuReference> device_reference(const CaseSpec& /*spec*/) const { return std::nullopt; }
  // Timed inputs may be generated on the device (fresh values for every timed launch):
  // any values the generator makes (contract/generated.hpp: f32 in [-1, 1), bf16 and f16 of
  // magnitude in [2^-7, 1), i32 any) are valid inputs of `spec`'s dtype and dims. By default: every
  // input is f32, bf16, f16 or i32. A contract whose inputs need structure (indices, offsets) says false.
  virtual bool inputs_generatable(const CaseSpec& spec) const;
  // The window of output `tensor`, elements [begin, begin + count), with the inputs it depends on
  // (a chunk whose hash differs is explained on the CPU through it). nullopt: not expressible.
  virtual std::optional<OutputWindow> output_window(const CaseSpec& /*spec*/, const std::string& /*tensor*/, std::int64_t /*begin*/,
                                                    std::int64_t /*count*/) const {
    return std::nullopt;
  }
  // Expected outputs, computed in higher precision, rounded as the policy states. `host` holds the
  // processes a reference runs in, made per run by whoever computes references (check/reference.cpp
  // chooses between this and the GPU reference): a declared contract's reference runs in its Python
  // reference process there; a built-in contract computes on the CPU here and ignores it.
  virtual std::vector<Tensor> reference(const CaseData& data, ReferenceHost& host) const = 0;
  // The same with a host of its own for this one call: fine for a built-in contract, while a declared
  // contract starts and ends its Python process each time (a run passes its host instead).
  std::vector<Tensor> reference(const CaseData& data) const;
  // Compare one output tensor; poison_byte is the pattern the harness filled it with. Default:
  // compare_output (bit-exact, or under the expected tensor's bounds when it has them).
  virtual Comparison compare(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte) const;
  // Minimum bytes any implementation must move: each input read once, each output written once
  // (by default the domain's tensors at their dtypes).
  virtual double min_bytes(const Dims& dims, DType t) const;
  virtual double flops(const Dims& dims, DType t) const = 0;
  // The roofline ceiling that bounds a good implementation: "bandwidth" (memory bound) or "fma"
  // (compute bound, f32 FMA throughput).
  virtual std::string roofline_ceiling() const { return "bandwidth"; }
};

// Parse "4096" (contracts with one dim) or "m=128,n=64,k=8192"; throws Error(usage) naming the text.
Dims parse_shape(const Contract& c, const std::string& text);

// The built-in contracts, one row each: the name, the function that makes it, and whether PyTorch's worker
// runs it as a one-liner of its own (tools/torch/kqual_torch_ops.py, OPS). Adding a built-in is one row here
// (src/contract/registry.cpp) and its file in builtin/.
struct BuiltinContract {
  const char* name;
  const Contract& (*make)();
  bool torch_op;
};
std::span<const BuiltinContract> builtin_contracts();

// A built-in contract by name, or a declared one already loaded in this process; throws Error(input)
// listing the known names. A name the user gives is resolved by ContractLookup::resolve
// (declared/lookup.hpp), which finds declared contracts in the folders the user picked and loads them.
const Contract& find_contract(const std::string& name);
std::vector<std::string> contract_names();  // the built-ins', in the table's order

}  // namespace kqual::contract
