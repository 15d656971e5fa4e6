#pragma once
// The parsed form of a contract.toml (docs/declared-contracts.md), shared by the parser
// (declared_spec.cpp), the value generator (declared_values.cpp), the contract itself
// (declared.cpp) and the reference process (python_reference.cpp).
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kqual/contract/contract.hpp"
#include "kqual/core/expr.hpp"

namespace kqual::contract::declared {

struct Axis {
  // stride: the row stride of strided tensors (`layout = "strided"`), in elements; a request may give
  // it, else it is the row length `of` rounded up to multiple_of (Spec::complete).
  enum Kind { variable, constant, derived, stride } kind = variable;
  std::string name;
  std::int64_t min = 1, max = (std::int64_t(1) << 31) - 1;  // variable: the claimed range
  std::vector<std::int64_t> hints;  // tile widths: t-1, t, t+1 are generated
  std::int64_t base = 0;            // the value other axes' cases hold this one at
  std::int64_t large = 0;           // the value in the large case (0: base)
  std::int64_t multiple_of = 1;
  bool power_of_two = false;
  Expr expr;                        // derived: over other axes; constant: its value
  std::string of;                   // stride: the row length axis (the tensors' inner axis)
};

struct Scalar {
  std::string name;
  DType dtype = DType::f32;  // f32, f64, i32, i64
  double value = 0;
};

// How one input's values are drawn (a `values` table; families override keys of it).
struct Values {
  // normal, uniform, constant, int, indices, offsets, softmax_rows, mask, bits; with source =
  // "generator" also any (no claim beyond dtype and shape).
  std::string dist = "normal";
  double mean = 0, std = 1, lo = -1, hi = 1, value = 0, p = 0.5, scale = 1;
  std::string axis;             // indices: values in [0, axis); offsets: monotone, 0 .. axis
  bool unique = false;          // indices: no repeats within a row
  double specials = 0;          // share of elements set to NaN, +Inf, -Inf or -0
  double denormals = 0;         // share set to subnormals of the tensor's dtype
  double extremes = 0;          // share set to +-[0.5, 1) x the dtype's largest finite value
  // source = "generator": the contract's [generator] function makes the values (in the reference
  // process), and `dist` with its keys is what kqual checks them against instead of drawing them
  // (declared_generated.cpp); every family keeps them.
  bool generated = false;
  double tol = -1;              // softmax_rows from a generator: |row sum - 1| allowed (-1: the dtype's)
};

struct ErrorModel {
  enum Kind { exact, ulp, allclose, reduction, quantized } kind = exact;
  // quantized: the reference gives the real value before the output's last rounding; kqual rounds it
  // by `rounding` (integers; floats always round to nearest even, as cvt.rn), clamps it to `clamp`
  // (or, with `saturate`, to the dtype's range; fp8 and f16 to their largest finite value instead of
  // NaN or Inf), and the output must equal that — or either neighbour where the real value lies
  // within band x 2^-24 x |value| of a rounding boundary (a kernel computes it in f32).
  enum Rounding { half_even, half_away, floor, ceil, toward_zero } rounding = half_even;
  bool saturate = false;
  std::optional<std::pair<double, double>> clamp;
  double band = 8;
  double ulps = 0, atol = 0, rtol = 0, c = 0;
  double match_ratio = 1, cap = 0;  // allclose: a share (1 - match_ratio) may exceed the bound, none the cap
  bool either = false;              // allclose: max(atol, rtol |ref|) (fail only past both, as flashinfer-bench) instead of the sum
  std::string axis;                 // reduction: K
  // reduction: abs_inputs (reference on |inputs|, the default) or reference (|ref|); allclose: reference (the
  // default) or abs_inputs (rtol times the larger of |ref| and the reference on |inputs|: the magnitude of the
  // summed terms, for sums that cancel)
  std::string magnitude = "abs_inputs";
  // The reference is also computed on the inputs' absolute values for this output.
  bool uses_abs_inputs() const { return (kind == reduction || kind == allclose) && magnitude == "abs_inputs"; }
  std::optional<DType> eps_dtype;   // reduction: eps of this dtype (default: the output's)
  enum Nan { propagate, finite, same_class } nan = propagate;
};

struct TensorDef;
// The reference gives this output as exact integers (int64), not as float64 values: integer
// outputs, unless they are quantized from a real value.
bool reference_gives_integers(const TensorDef& t, DType d);
// The smallest and largest value an integer dtype (bool included) holds (declared_quantized.cpp).
std::pair<double, double> integer_range(DType t);
// The largest finite value a float dtype holds; f32's for any other (declared_values.cpp).
double largest_finite(DType t);

struct TensorDef {
  std::string name;
  Role role = Role::input;
  std::vector<std::string> shape;
  std::optional<DType> dtype;  // fixed (indices, scales); else from the dtype row
  std::string layout = "contiguous";  // contiguous, row_major or strided
  std::string stride_axis;     // strided: the axis holding the row stride (default "stride_<tensor>")
  std::string aliases;         // output: the input it may overwrite (in place)
  std::int64_t alignment = 0;  // the start alignment the contract guarantees [bytes] (0: the element's)
  std::string description;
  Values values;               // inputs
  ErrorModel error;            // outputs
  std::string unread;          // input: why the reference never reads it (the non-triviality check skips it)
};

struct Family {
  std::string name;
  std::map<std::string, Values> values;  // per input, complete (base merged with the overrides)
  bool small_only = true;                // run on small shapes only (false: every shape)
  // The largest tensor of a case it runs on: 2^16 with small_only (the default), unlimited without;
  // `max_elements = N` in the table sets it (an imported contract runs its special families on the
  // workload shapes the CPU reference can take).
  std::int64_t max_elements = std::int64_t(1) << 16;
};

struct Constraint {
  Expr expr;
  std::string reason;
};
// The first of `cs` that `all` breaks, as its reason and why; "" when every one holds. One that cannot
// be evaluated breaks too: its reason, then `eval_lead` and the evaluation's error in brackets.
std::string first_violated(const std::vector<Constraint>& cs, const Dims& all, std::string_view eval_lead);

// [reference.cuda]: a simple fp64 CUDA reference for cases too large for the CPU (above
// max_case_elements, up to its own max_case_elements), compiled by NVRTC and run in the session's
// reference worker. Its raw outputs are float64 (int64 for integer outputs) buffers named as the
// outputs, plus "<output>_magnitude" for a reduction bound over |inputs|.
struct CudaReference {
  std::filesystem::path file;
  std::string source;
  struct Launch {
    std::string kernel;
    std::array<Expr, 3> grid{Expr::constant(1), Expr::constant(1), Expr::constant(1)};
    std::array<Expr, 3> block{Expr::constant(1), Expr::constant(1), Expr::constant(1)};
    std::vector<std::string> args;  // tensors, raw outputs, "axis:i64" / "axis:i32", scalars
  };
  std::vector<Launch> launches;
  std::int64_t max_case_elements = std::int64_t(1) << 28;
};

// [generator]: a Python function that makes the inputs whose values say source = "generator"
// (indices, offsets, masks, probabilities a kernel needs in their structure), run in the contract's
// reference process with the case's axes, scalars and seed (docs/declared-contracts.md, "Inputs from
// a generator").
struct Generator {
  std::filesystem::path file;   // a .py file (may be the reference's own)
  std::string function;
  std::string kind = "numpy";   // numpy or torch
};

struct Reference {
  std::filesystem::path file;   // a .py file
  std::string function;
  std::string kind = "numpy";   // numpy or torch
  // The precision the reference really computes in, for the policy text (default "float64": kqual
  // hands it float64 arrays). An imported PyTorch reference that casts to float32 or rounds to
  // bfloat16 itself says so here.
  std::string precision;
  // A second function of the same file, also accepted where `function`'s output is NaN or +-Inf
  // (frameworks that disagree on special values: one gives +-0 where the other gives NaN). "": none.
  std::string alternative;
  std::optional<CudaReference> cuda;
};

struct Spec {
  std::filesystem::path file, dir;
  std::string name, summary, policy;
  std::vector<Axis> axes;
  std::vector<Scalar> scalars;
  std::vector<TensorDef> tensors;
  // Dtype rows: each maps every tensor without a fixed dtype to one; the row's key is the dtype of
  // the first such tensor (the case dtype), unique across rows.
  std::vector<std::pair<DType, std::map<std::string, DType>>> rows;
  std::vector<Constraint> constraints;
  std::vector<Family> families;  // families[0] is "base"
  std::optional<Expr> bytes;
  Expr flops;
  std::string ceiling = "bandwidth";
  std::vector<Dims> bench_shapes;
  std::string bench_family = "base";
  std::int64_t max_case_elements = std::int64_t(1) << 24;  // the largest tensor of a CPU-referenced case
  // [contract] deterministic: two runs on the same inputs must give the same bytes (default true, the
  // rule before the key existed); deterministic_reason says why, for the memo and refusals.
  bool deterministic = true;
  std::string deterministic_reason;
  // [contract] ignored_inputs: why the reference may leave some inputs without effect (a model's bias
  // that a following BatchNorm cancels). The non-triviality check then names such inputs instead of
  // refusing the contract; constant outputs are refused all the same.
  std::string ignored_inputs;
  Reference reference;
  std::optional<Generator> generator;
  // [index_cases] axis: outputs are independent across this axis (the outermost of every tensor
  // holding it), so cases past 2^31 elements are generated on the device and checked in windows of it.
  std::string independent_axis;

  const TensorDef* tensor(const std::string& n) const;
  // The raw outputs a CUDA reference writes: every output, and "<output>_magnitude" for each
  // reduction bound over |inputs|.
  std::vector<std::string> raw_outputs() const;
  const Axis* axis(const std::string& n) const;
  // Elements of the tensor's view (its shape's product; a strided tensor's storage is rows x stride).
  std::int64_t dense_elements(const TensorDef& t, const Dims& all) const;
  bool has_strided() const;
  // Why `all` breaks a strided tensor's layout (stride below the row length, off its multiple); "".
  std::string layout_violated(const Dims& all) const;
  // Every axis by value, derived and constant ones computed from the variable ones, row strides
  // not given set to their row length rounded up to their multiple.
  Dims complete(const Dims& variable) const;
  // The first failing constraint's reason ("" when every constraint holds).
  std::string violated(const Dims& all) const;
};

// Parse and validate; throws Error(input) "<file>: <key>: <what>".
Spec parse_spec(const std::string& toml_text, const std::filesystem::path& file);

// The Contract over a spec (declared.cpp), and the spec of a declared contract (nullptr for a
// built-in one); the registry (declared_registry.cpp) keeps the contracts.
std::unique_ptr<Contract> make_contract(Spec s);
const Spec* spec_of(const Contract& c);

// Inputs for one case (values stored at the tensor's dtype; a strided tensor in its storage, the
// padding poisoned: declared_strided.cpp); declared_values.cpp. Inputs whose values come from the
// generator are left zero here (their bytes sized): fill_generated (declared_generated.hpp) sets them.
std::vector<Tensor> generate_inputs(const Spec& s, const CaseSpec& spec, const Dims& dims,
                                    const std::map<std::string, DType>& dtypes, const std::string& only_tensor = "",
                                    std::uint64_t other_seed = 0);

// Strided layouts (declared_strided.cpp): the view of a strided tensor as dense rows, and back.
// A tensor's dense copy (rows of `cols` taken every `stride` elements); others returned as they are.
Tensor dense_view(const Spec& s, const Tensor& t, const Dims& all);
// Each input's dense view (a strided one without its padding), for the reference.
std::vector<Tensor> dense_inputs(const std::vector<Tensor>& in, const Dims& all, const Spec& s);
// Expands a dense output to the tensor's storage (padding filled with element 0's value, so that a
// constant output still reads as constant), recording row_length and row_stride.
void to_storage(const Spec& s, Tensor& t, const Dims& all);
// Poisons the padding of a strided input in storage: NaN (odd seeds) or the byte 0x7F repeated
// (about 3.4e38 in f32 and bf16; even seeds), so that a kernel computing with it goes wrong
// whether or not its arithmetic swallows NaN.
void poison_padding(const Spec& s, Tensor& t, const Dims& all, std::uint64_t seed);
// A strided output's padding, checked before its values: the first element the kernel wrote
// (no longer the poison byte), as a failed Comparison with code out_of_bounds_write; ok otherwise.
Comparison check_padding(const Tensor& expected, const std::uint8_t* actual, std::uint8_t poison_byte);
// The dense part of a strided output's actual bytes (expected's rows), and the expected output's
// own dense part (values, references and bounds): compared as any dense output, indices dense.
std::vector<std::uint8_t> dense_bytes(const Tensor& expected, const std::uint8_t* actual);
Tensor dense_expected(const Tensor& expected);

}  // namespace kqual::contract::declared
