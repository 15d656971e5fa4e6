#pragma once
// Internal to the Definition importer (import_definition.cpp): the parts of the written contract
// that follow from the whole Definition at once — the error model of each floating output (the
// source's tolerance, else kqual's dtype-aware default) and the [index_cases] axis
// (import_definition_parts.cpp). Not a public header.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "import_common.hpp"
#include "kqual/core/expr.hpp"

namespace kqual::contract::detail {

struct DefTensor {
  std::string name, dtype;         // kqual's dtype
  std::vector<std::string> shape;  // axis names, outermost first
};

// The Definition's shapes as the translation settled them.
struct DefShape {
  std::map<std::string, std::int64_t> base;    // every axis at the base shape
  std::map<std::string, std::int64_t> widest;  // every axis: the largest of its base and workload values
  std::vector<std::string> var;                // var axes, in the order written
  std::vector<DefTensor> inputs, outputs;      // tensors (scalars left out)
};

// The product of the axes (at their widest) that some input has and no output has: a GEMM's k, 1
// when there is none.
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
// holding it, every output holds it and every input is f32 or bf16 (what the device generator
// makes); "" otherwise, with why in `notes`.
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
