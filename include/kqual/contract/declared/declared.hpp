#pragma once
// Contracts declared as data: a contract.toml with axes, tensors, dtype rows, value
// generation, evaluated domain constraints, an error model per output and cost formulas, plus a
// trusted reference (a NumPy or PyTorch function evaluated in float64 in a separate process).
// Format: docs/declared-contracts.md. A declared contract is a Contract like the built-in ones: every
// pipeline (check, qualify, bench, screen, compare, selftest, report) takes it unchanged.
#include <filesystem>
#include <string>
#include <vector>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/lookup.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract {

// Loads, validates and registers the contract in `file` (a contract.toml, or a folder holding one)
// under its declared name; later find_contract(name) calls return it (the loaded contracts are the one
// thing kept for the process: a contract is the same object wherever it is used). Loading the same file twice
// returns the same contract. Throws Error(input) naming the file, the key and the value: unknown
// keys, bad expressions, unknown axes or tensors, a dtype row naming an unknown tensor, a
// reference file that is missing, a name that is already a built-in or another file's contract.
const Contract& load_declared_contract(const std::filesystem::path& file);

// The name a contract file declares ([contract] name), read without loading the contract; empty
// when the file cannot be read or has none.
std::string declared_contract_name(const std::filesystem::path& file);

// The file registered under `name` in this process; empty when none is.
std::filesystem::path registered_contract_file(const std::string& name);

// A declared contract already loaded in this process under `name`; nullptr when none is. find_contract
// falls back to it. Finding a contract in folders by its name is ContractLookup::resolve's alone.
const Contract* find_declared_contract(const std::string& name);

// The file a declared contract came from; empty for a built-in one.
std::filesystem::path declared_file(const Contract& c);

// The Python interpreter references run in: $KQUAL_PYTHON, else the first of python3 on PATH and
// /usr/bin/python3 that imports NumPy. Throws Error(input) saying what was tried.
std::string reference_python();

// Whether a declared contract's error is only that its PyTorch reference or generator cannot run here
// (no PyTorch in kqual's Python): the contract is not wrong, it was not run (`contracts --verify`: exit 3).
bool needs_pytorch_here(const Error& e);

}  // namespace kqual::contract
