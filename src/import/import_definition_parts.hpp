#pragma once
// Internal to the Definition importer (import_definition.cpp): the parts of the written contract
// that follow from the whole Definition at once — the error model of each floating output (the
// source's tolerance, else kqual's dtype-aware default) and the [index_cases] axis
// (import_definition_parts.cpp). Not a public header.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "import_common.hpp"
#include "kqual/core/expr.hpp"

namespace kqual::contract::detail {

struct DefTensor {
  std::string name, dtype;         // kqual's dtype
  std::vector<std::string> shape;  // axis names, outermost first
};

// Where run() uses an integer input's values: as an index into (how "index") or a slice stop along
// ("stop") dim `dim` of input `tensor`; `written` when the subscript is assigned to (line: run()'s).
struct IndexUse {
  std::string tensor;
  int dim = 0;
  std::string how;
  bool written = false;
  int line = 0;
};

// What a Definition says that a declared contract holds another way, rewritten in the Definition
// before the translation reads it (import_definition_rewrite.cpp).
struct DefinitionRewrite {
  std::set<std::string> zero_d;                 // tensors declared 0-d (shape []): one element along c1
  std::set<std::string> bool_scalars;           // boolean scalars: i32 0 or 1
  std::set<std::string> fp4_inputs;             // float4_e2m1fn_x2 inputs: held as u8 bytes
  std::map<std::string, std::string> equal_to;  // var axis -> the expression an equality constraint fixes it to (now derived)
  // An integer input a constraint reads the last value of (`total_q == qo_indptr[-1].item()`): its
  // values are offsets ending at that axis (the constraint, removed from the constraints).
  std::map<std::string, std::string> offsets_of, offsets_constraint;
  // run()'s uses of the integer inputs' values (read_index_uses), and why they could not be read.
  std::map<std::string, std::vector<IndexUse>> index_uses;
  std::string why_no_read;
  std::vector<std::string> notes;
};

// Rewrites `def` (its groups already checked to be objects): a literal size in a shape ("1") and a 0-d
// tensor become constant axes c<N>; `T.shape[i]` in a constraint becomes the axis there; a var axis an
// equality constraint fixes (`len_indptr == batch_size + 1`) becomes a derived axis; a boolean scalar
// an i32 one; a float4_e2m1fn_x2 input u8 bytes. Refuses, naming the file and key, a literal "0" (an empty tensor) and inputs that are all
// scalars (the declared-contract engine generates at least one input tensor).
DefinitionRewrite rewrite_definition(const std::filesystem::path& f, json& def);

// The reference.py lines after the Definition's own: `kqual_run`, which hands run() its 0-d tensors,
// Python bools and float4_e2m1fn_x2 views and gives 0-d outputs back as one element; "" when the contract can call run().
std::string reference_adapter_py(const DefinitionRewrite& rw, const std::vector<std::string>& outputs);

// Python's boolean words and floor division as kqual's operators ("attention_head_dim // 2",
// "a and b"): the expression text written into contract.toml.
std::string kqual_expr_text(std::string text);

// ---- integer inputs (import_integer_inputs.cpp) ----

// A constraint "AXIS == T[-1].item()" (either side, with or without .item()) with T a 1-D int32,
// int64 or uint32 input: T holds offsets (0 first, never decreasing) ending at AXIS, recorded in
// rw.offsets_of and removed from the constraints (the values declare it; kqual checks every case).
// Also reads run() once (read_index_uses) into rw.index_uses, and adds the constraint run() states
// tying a var axis to another tensor's dim (`batch_size = int(qo_indptr.shape[0]) - 1`) and the
// equalities it asserts (`assert num_kv_indices == kv_indptr[-1].item()`) that no constraint states.
void value_constraints(json& def, DefinitionRewrite& rw);

// A static read of run()'s source by Python's own parser (kqual's reference interpreter): for each of
// `ints`, its uses on `tensors` (the other tensor inputs); `relations`: run()'s assignments of one of
// `axes` from a tensor's dim plus a constant; `asserted`: its asserts of an equality over `axes`,
// integer constants and an int's last value ({"text", "line"}), with at least one of `var_axes` or a
// last value in it. Empty with `why_not` set when the read cannot run (no Python, a source that does
// not parse).
std::map<std::string, std::vector<IndexUse>> read_index_uses(const std::string& source, const std::string& function,
                                                             const std::vector<std::string>& ints, const std::vector<std::string>& tensors,
                                                             const std::vector<std::string>& axes, const std::vector<std::string>& var_axes,
                                                             std::string& why_not, json& relations, json& asserted);

// The `values` of an integer input (int32, int64, uint32), a comment and a note: offsets from a
// constraint (rw), else indices into the axis run() indexes with it (unique when it writes through
// them), else a length in [1, N] along a constant axis it slices up to. `from_generator`: the
// Definition's input generator makes it (source = "generator"), checked as that structure when one is
// known, else dtype and shape only. Refuses naming the input and why when nothing states its values.
struct IntegerInputValues {
  std::string values, comment, note;
};
IntegerInputValues integer_input_values(const std::filesystem::path& f, const std::string& tn, const json& def, const DefinitionRewrite& rw,
                                        const std::map<std::string, std::vector<IndexUse>>& uses, const std::string& why_no_read,
                                        bool from_generator);

// The reference.py lines of the [generator]: kqual_inputs(seed, family, **axes_and_scalars), calling
// SOL-ExecBench's custom_inputs_entrypoint `entrypoint` as its evaluator does (a dict, a device: the CPU).
std::string generator_adapter_py(const std::string& entrypoint);

// ---- the domain (import_definition_domain.cpp) ----

// Why the axis values `v` (every var and const axis) lie outside the domain: a derived axis below 1 or
// not evaluable, or a constraint false; "" when inside.
std::string outside_domain(std::map<std::string, std::int64_t> v, const std::vector<std::pair<std::string, Expr>>& derived,
                           const std::vector<std::pair<std::string, Expr>>& constraints);

// The base shape (where the other axes' cases hold each var axis, and the value families run) must
// satisfy the Definition's constraints, or the written contract does not load: the bases chosen from
// the workloads, else those with the constraints' equalities applied ("len_indptr == batch_size + 1"
// sets len_indptr), else the first workload shape inside the constraints, else one value for every var
// axis (with the equalities applied), said in a note; else refused naming the constraint. Derived
// axes follow.
void settle_base(const std::filesystem::path& f, std::map<std::string, std::int64_t>& axis_value, const std::vector<std::string>& var_axes,
                 const std::vector<std::pair<std::string, Expr>>& derived, const std::vector<std::pair<std::string, Expr>>& constraints,
                 const std::vector<std::map<std::string, std::int64_t>>& workload_shapes, std::vector<std::string>& notes);

// ---- the workloads (import_definition_workloads.cpp) ----

using Workloads = std::vector<std::pair<std::string, json>>;  // where ("W.jsonl:3"), the line

// The workload lines of definition `def_name` (others are skipped), each checked for the types read
// and named by where it came from ("W.jsonl:3") for errors.
Workloads read_workloads(const std::filesystem::path& file, const std::string& def_name);
// The line itself, or its "workload" object (flashinfer-bench wraps lines as {"definition", "workload"}).
const json& workload_body(const std::pair<std::string, json>& w);
// An axis value a workload gives, checked: an integer in [1, 2^31 - 1]; nullopt when it gives none.
std::optional<std::int64_t> workload_axis(const std::pair<std::string, json>& w, const std::string& an);
// The workloads whose axes are all non-zero: a workload with an axis at 0 (an empty tensor, which the
// declared-contract engine does not run) is named in a note and left out of the hints, bases and
// benchmark shapes; it still gives scalar values and tolerances.
Workloads sized_workloads(const Workloads& all, const json& def, std::vector<std::string>& notes);
// kqual's scalars are fixed per contract: where the workloads give a scalar input several values, the
// contract holds one — `chosen`'s (NAME -> "true", "false" or a number) where given, else the value
// most workloads give (the first of those tied) — and keeps the workloads that give that value (or none); the others are left out, and a
// note names each value left and how to import it. Values that round to one float32 are one value.
// Refused by name: a chosen scalar the Definition lacks, or a value no workload gives.
Workloads one_value_per_scalar(const std::filesystem::path& def_file, const std::filesystem::path& workloads_file, const Workloads& all,
                               const json& def, const std::set<std::string>& bool_scalars, const std::map<std::string, std::string>& chosen,
                               std::vector<std::string>& notes);
// The [scalars.<tn>] section of a scalar input: its value, the same in every workload that sets it
// (values written at float32 in some lines and float64 in others are one value when they round to the
// same float32); a boolean scalar's true/false as 1/0.
std::string definition_scalar_toml(const std::filesystem::path& def_file, const std::filesystem::path& workloads_file,
                                   const Workloads& workloads, const std::string& tn, const std::string& key, const std::string& dt,
                                   bool is_bool, std::vector<std::string>& notes);

// The Definition's shapes as the translation settled them.
struct DefShape {
  std::map<std::string, std::int64_t> base;    // every axis at the base shape
  std::map<std::string, std::int64_t> widest;  // every axis: the largest of its base and workload values
  std::vector<std::string> var;                // var axes, in the order written
  std::vector<DefTensor> inputs, outputs;      // tensors (scalars left out)
  std::map<std::string, std::set<std::string>> derived_reads;  // derived axis -> the axes its expression reads
  std::set<std::string> gathered;              // axes an integer input's values index (tables read at those entries)
};

// The product of the axes (at their widest) that some floating input has and no output has, the
// gathered ones left out: a GEMM's k, 1 when there is none.
std::int64_t contraction_length(const DefShape& d);

// The tolerance the source states (the strictest across workloads), how it combines, and SOL's
// matched ratio (", match_ratio = R, cap = C" or ""); cli_*: --atol / --rtol (negative: not given).
struct SourceTolerance {
  std::optional<double> atol, rtol;
  std::string combine = "max";
  std::string ratio;
  double cli_atol = -1, cli_rtol = -1;
};

struct ErrorModels {
  std::map<std::string, std::string> by_output;  // floating output -> "{ model = \"allclose\", ... }"
  double widest_atol = 0;
  bool defaulted = false;                        // some term is kqual's default (the source gave none)
  std::vector<std::string> notes;                // for the import's notes
  std::string policy;                            // one sentence for the policy text ("" when the source gave both)
};
ErrorModels definition_error_models(const DefShape& d, const SourceTolerance& src);

// "[index_cases]\naxis = ..." with a comment, when a var axis is the outermost axis of every tensor
// holding it, every output holds it, no tensor holds a derived axis that reads it (a window of it
// would change that tensor's size) and every input is f32 or bf16 (what the device generator makes);
// "" otherwise, with why in `notes`.
std::string definition_index_cases(const DefShape& d, std::vector<std::string>& notes);

// The value families (import_families.cpp) over the data inputs, the scale families and the special
// ones, appended to `text` with a note; the smallest cases hold one var axis at 1 and the others at
// `base`. `contraction_default`: the tolerance is kqual's default for a contraction (an absolute term
// sized for data of order 1), so no family scales the data up. Returns the special families written.
std::vector<std::string> definition_families(const std::vector<FamilyInput>& offered, const std::vector<std::vector<std::string>>& output_shapes,
                                             const std::vector<std::string>& var_axes, const std::map<std::string, std::int64_t>& base,
                                             const std::vector<std::pair<std::string, Expr>>& derived,
                                             const std::vector<std::vector<std::string>>& tensor_shapes, double atol, bool contraction_default,
                                             std::string& text, std::vector<std::string>& notes);

}  // namespace kqual::contract::detail
