#pragma once
// Inputs a declared contract's [generator] makes (declared_generated.cpp): run in the contract's
// reference process, checked against what their `values` declare (dtype, shape, then the structure:
// indices in their axis, offsets from 0 to their axis, masks, probability rows, bounds), stored at
// their dtype. What fails is a contract error naming the generator, the case, the input and the
// element (docs/declared-contracts.md, "Inputs from a generator").
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "declared_spec.hpp"
#include "python_reference.hpp"

namespace kqual::contract::declared {

// The seed a case's generator call gets (its `seed` parameter and the global generators): 32 bits,
// as NumPy's np.random.seed takes, mixed from the case seed.
std::uint32_t generator_seed(std::uint64_t case_seed);

// Why generated values break what tensor `td` (at dtype d) declares, at axes `dims`: "" when they
// hold it. `values`: as the generator gave them (integers in i, floats in f); floats are judged as
// stored in d (a value past d's range is refused, not turned into Inf).
std::string generated_values_violation(const TensorDef& td, DType d, const RefOutput& values, const Dims& dims);

// Replaces the bytes of every generated input in `inputs` (generate_inputs leaves them zero) with the
// generator's values for this case, each checked (generated_values_violation). `seed`: the call's
// seed (generator_seed of the case's, or another to regenerate them). Throws Error(input) naming the
// contract, the generator, the case, the input and why.
void fill_generated(const Spec& s, PythonReference& py, const CaseSpec& spec, const Dims& dims, const std::map<std::string, DType>& dtypes,
                    std::uint32_t seed, std::vector<Tensor>& inputs);

// A generator that draws without the seed it is given is not reproducible: called twice with the
// same seed on this case, it must give the same values. Throws Error(input) naming the first input
// and element that differ.
void check_generator_deterministic(const Spec& s, PythonReference& py, const CaseSpec& spec, const Dims& dims,
                                   const std::map<std::string, DType>& dtypes);

}  // namespace kqual::contract::declared
