#pragma once
// Internal to src/import/: what the importers (import_definition.cpp, import_kernelbench*.cpp)
// share. Not a public header.
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kqual/core/json.hpp"

namespace kqual::contract::detail {

// Checked reads of an untrusted JSON file (a Definition, its workloads, a KernelBench capture): a
// missing key or a value of another type is an input error naming the file and the key
// ("def.json: inputs.x.shape[1]: expected a string (an axis name), got the number 3"), never a json
// exception, which the command line would report as kqual's own internal error (exit 4).
class JsonIn {
 public:
  explicit JsonIn(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;
  // `v` itself, of the named type; `what` says what it is for ("an axis name").
  const json& object(const json& v, const std::string& key) const;
  const json& array(const json& v, const std::string& key) const;
  std::string string(const json& v, const std::string& key, const char* what = "a string") const;
  std::int64_t integer(const json& v, const std::string& key) const;
  double number(const json& v, const std::string& key) const;
  bool boolean(const json& v, const std::string& key) const;
  // The member `name` of the object `obj` (found at `key`; "" at the top level): required, or
  // nullptr when absent. A member that is present, null included, must have the expected type.
  const json* member(const json& obj, const std::string& key, const std::string& name, bool required) const;
  std::string string_or(const json& obj, const std::string& key, const std::string& name, const std::string& dflt) const;
  bool boolean_or(const json& obj, const std::string& key, const std::string& name, bool dflt) const;
  // "inputs" + "x" -> "inputs.x"; "" + "x" -> "x".
  static std::string at(const std::string& key, const std::string& name) { return key.empty() ? name : key + "." + name; }

 private:
  std::string file_;
};

// How a JSON value reads in an error: null, true, the number 3, the string "x", an array, an object.
std::string json_kind(const json& v);

// A name the written contract uses as a TOML key ([tensors.<name>]), an expression variable and a
// Python keyword argument of the reference: letters, digits and _, not starting with a digit.
bool is_plain_name(const std::string& s);

// A TOML basic string: quotes, backslashes and newlines escaped, other control characters as \uXXXX.
std::string toml_quoted(const std::string& s);

// An imported KernelBench output's error bound (import_magnitude.cpp): relative to the magnitude of the
// summed terms (the reference on the inputs' absolute values) where forward's ATen operators (the
// capture's "ops") sum and keep that reference a bound; else relative to |ref|. why: said in the contract.
struct MagnitudeBound {
  bool abs_inputs = false;
  std::string why;
};
MagnitudeBound magnitude_bound(const json& ops);

// Writes a contract folder whole or not at all: every file into `out`.kqual-tmp, renamed to `out`,
// then loaded back as a declared contract; a folder that does not load is removed and reported as
// the importer's bug. `out` must not exist.
void write_imported_contract(const std::filesystem::path& out, const std::map<std::string, std::string>& files);

// The [contract] lines that state the run-to-run rule of an imported contract, with a comment saying
// why: `source` is the benchmark the file came from ("flashinfer-bench", "KernelBench"). Floating
// outputs under the source's tolerance: not required (the source judges each run against its
// reference and never compares runs, so split-K and atomics are normal there; kqual still holds each
// run and the difference between two runs to the bound). Integer outputs only: required (exact).
std::string determinism_toml(bool any_float_output, const std::string& source);

// ---- tensor dtypes the importers take (import_dtypes.cpp) ----

// kqual's word for a peer's tensor dtype ("float16" -> "f16", "float8_e4m3fn" -> "e4m3", "bool" ->
// "bool"), or "" for one the importers do not take (fp4, complex, other float8 formats).
std::string imported_dtype(const std::string& peer);
// The peers' spellings imported_dtype takes, for refusals: "float32, bfloat16, ...".
std::string imported_dtype_names();
// Integers and bool (kqual's words): compared exactly, never given float value families.
bool is_exact_dtype(const std::string& kq);
// e4m3 and e5m2: 3 and 2 mantissa bits.
bool is_fp8_dtype(const std::string& kq);
// The least a tolerance must admit for an fp8 output (kqual's word): one fp8 ulp at the value, as a
// relative term (2^-3 for e4m3, 2^-2 for e5m2: ulp(x) <= that x for a normal x) and an absolute one
// for the subnormals (2^-9, 2^-16). A kernel that rounds a value computed in f32 from another order of
// operations lands on a neighbour of the reference's rounding. Zero for other dtypes.
struct Fp8Floor {
  double atol = 0, rtol = 0;
};
Fp8Floor fp8_floor(const std::string& kq);
// The `values` of an integer or bool DATA input whose source states no distribution: i8 and u8 (the
// weights and activations of a quantized kernel) every value of the dtype, bool a mask with p = 0.5;
// "" for the wider integers (indices, offsets, lengths: their meaning is not in the source).
std::string exact_input_values(const std::string& kq);

// ---- a reference that samples (import_sampling.cpp) ----

// Where a reference's Python source draws random numbers, by a static read (comments and docstrings
// skipped): "torch.multinomial at line 12"; "" when it does not. torch.rand*, randint, randperm,
// multinomial, bernoulli, torch.normal and the in-place samplers (.uniform_(), ...), np.random,
// Python's random, F.dropout unless training=False or p = 0, nn.Dropout with a literal p > 0. A call
// given its own `generator=` draws a fixed stream (a seeded generator) and is not counted.
// `function`: when not empty, the torch and Python samplers count only inside that function's body
// (KernelBench's forward: get_inputs() and __init__ draw inputs and weights with a seed), nn.Dropout
// anywhere; line numbers are the source's own (1 = its first line). `except_function`: a function
// whose body is not read (SOL-ExecBench's custom_inputs_entrypoint, which draws the inputs).
std::string sampling_call(const std::string& python_source, const std::string& function, const std::string& except_function = "");
// The same read over the code `entry` runs (a Definition's `run`): the module-level code (imports,
// constants, class bodies) and every top-level function named from it or from `entry`, transitively;
// never `except_function` (the input generator). A top-level function nothing that runs names — an
// input generator the Definition does not declare, a test helper — is not the reference. Without a
// top-level `entry`, as sampling_call(python_source, "", except_function).
std::string sampling_call_reached(const std::string& python_source, const std::string& entry, const std::string& except_function);
// The parameters of top-level `function` (self, *args and **kwargs aside) its body never names outside
// comments, docstrings and string literals: a backward pass given the saved activation takes the
// forward's bias and does not read it. Empty where the body reaches its arguments dynamically
// (locals(), vars(), inspect, ** unpacking) or `function` is not defined.
std::set<std::string> unread_parameters(const std::string& python_source, const std::string& function);
// "statistical operation: the reference samples (<where>); no statistical judge is declared ...".
std::string sampling_refusal(const std::string& where);
// A KernelBench problem whose forward samples, refused from its source before PyTorch runs
// ("<file>: forward: <refusal>"); a dropout p given by a variable is left to the capture.
void refuse_sampling_forward(const std::filesystem::path& problem);
// The problem's source without get_inputs() and get_init_inputs(), whose dtypes are not forward's casts.
std::string without_input_makers(const std::string& src);

// ---- the KernelBench capture (import_kernelbench_capture.cpp) ----

// Checks every field of a capture that translate_kernelbench reads for the type the capture script
// writes: an input error naming `capture_file` (or "<problem> (its capture)") and the key otherwise.
// Refuses, naming `problem`: a failed capture (its code and error), a random forward, a 0-d input
// or parameter, a dim of size 0. Returns notes (random_forward null: forward was not run).
std::vector<std::string> check_capture(const json& cap, const std::string& problem, const std::string& capture_file);

// ---- what an importer says when the source is silent (import_defaults.cpp) ----

// kqual's tolerance for a floating output when the source states none, from the output dtype and the
// operation's reduction length: `contraction` is the product of the axes an input has and no output
// has (a GEMM's k), `row` the output's innermost axis (a norm or a softmax may reduce along it). The
// kernel is taken to compute in f32 for f32 and bf16 outputs, in f64 for f64 ones (unit roundoff u):
//   K    = contraction when above 1, else row
//   rtol = 2u * max(64, 16 sqrt(K))             (+ 2^-8 for bf16: one more half ulp of bf16, for a
//                                                 reference that rounds to bf16 on the way)
//   atol = 2u * max(64, 8 * contraction)          (bf16: at least 2^-7, one ulp of bf16 at 1)
// `why` states it, with the figures, for the contract's comment and the policy.
struct DefaultTolerance {
  double atol = 0, rtol = 0;
  std::string why;
};
DefaultTolerance default_tolerance(const std::string& out_dtype, std::int64_t contraction, std::int64_t row);

// The precision an imported PyTorch reference really computes in, read from its source. kqual hands
// it float64 tensors; a cast in the source (`.float()`, `torch.float32`, `torch.bfloat16`,
// `.half()`) keeps its precision there, a cast back to an input's dtype is no rounding at all. The
// text names what was found ("float32 where run() casts to it (.float()), float64 elsewhere").
std::string reference_precision(const std::string& python_source, const std::string& function);

// ---- value families for imported contracts (import_families.cpp) ----

// An input the families may redraw: a floating tensor drawn from "normal" or "uniform" (integer
// inputs, indices, offsets, masks, constants and scalars are never offered), with its axes.
struct FamilyInput {
  std::string name, dist;           // dist: "normal" or "uniform"
  std::vector<std::string> shape;   // axis names, outermost first
  std::string dtype = "f32";        // kqual's: the extreme_scale factor and the subnormals follow it
};

// The largest tensor of a case the imported families run on: the small cases and the workload
// shapes up to about 8 MiB of float64 per tensor in the CPU reference (a few hundred ms each).
inline constexpr std::int64_t kFamilyMaxElements = std::int64_t(1) << 20;

struct FamilyText {
  std::string tool;                 // "kqual import-definition": who wrote them, for the comment
  double atol = 0;                  // the largest absolute tolerance over the floating outputs
  bool any_small_case = true;       // some case has every tensor within kFamilyMaxElements
  std::vector<std::string> kept;    // inputs that keep their values (weights, tables), for the comment
  // large_scale and extreme_scale are written unless an absolute tolerance sized for data of order 1
  // would fail a correct contraction at those scales (a GEMM's near-zero outputs): then `no_scale_up`
  // says why, in the comment.
  std::string no_scale_up;
};

// The data inputs of an operation, which the families redraw: the offered inputs with an output's
// shape (the tensors an output is computed element for element from); where none has one, the first
// offered input (a GEMM's A). The others keep their values: scaling every factor of a product by
// 1e-3 would move the output by 1e-6, where any tolerance swallows it.
std::vector<FamilyInput> data_inputs(const std::vector<FamilyInput>& offered, const std::vector<std::vector<std::string>>& output_shapes);

// `[families.small_scale]`, `[families.large_scale]` and `[families.nonzero_mean]` over `data`, with
// comments saying why each exists and what the imported tolerance leaves of it; "" when data is empty.
std::string value_families_toml(const std::vector<FamilyInput>& data, const FamilyText& how);

// `[families.specials]` (NaN, +-Inf, -0 at random positions), `[families.denormals]` (every value a
// subnormal of the input's dtype) and `[families.extreme_scale]` (the data 2^50 times larger in f32 and
// bf16, 2^400 in f64: as large as squares and dot products of the values still fit the dtype) over the
// floating data inputs, with comments saying how the expected output is made (the reference's own
// output on them) and how NaN/Inf are matched; "" when data is empty. Near-max values are not written
// (said in the comment). The names of the families written go to `written`.
std::string special_families_toml(const std::vector<FamilyInput>& data, const FamilyText& how, std::vector<std::string>& written);

// The policy sentence on special values of an imported contract: which families feed them, that the
// reference's own output on them is the expected one, how NaN and Inf are matched (nan = propagate),
// and which inputs never get them (integers, indices, masks, constants, scalars).
std::string special_values_policy(const std::vector<std::string>& families, const std::vector<std::string>& never);

}  // namespace kqual::contract::detail
