#pragma once
// Contracts declared as data (issue 22): a contract.toml with axes, tensors, dtype rows, value
// generation, evaluated domain constraints, an error model per output and cost formulas, plus a
// trusted reference (a NumPy or PyTorch function evaluated in float64 in a separate process).
// Format: docs/declared-contracts.md. A declared contract is a Contract like the built-in ones: every
// pipeline (check, qualify, bench, screen, compare, selftest, report) takes it unchanged.
#include <filesystem>
#include <string>
#include <vector>

#include "kqual/contract/contract.hpp"

namespace kqual::contract {

// Loads, validates and registers the contract in `file` (a contract.toml, or a folder holding one)
// under its declared name; later find_contract(name) calls return it. Loading the same file twice
// returns the same contract. Throws Error(input) naming the file, the key and the value: unknown
// keys, bad expressions, unknown axes or tensors, a dtype row naming an unknown tensor, a
// reference file that is missing, a name that is already a built-in or another file's contract.
const Contract& load_declared_contract(const std::filesystem::path& file);

// The contract a manifest names: a built-in name; a path to a contract.toml (absolute or relative to
// `near`); or a declared contract's name, looked up in this order: registered already, `near`/<name>.toml,
// `near`/contract.toml declaring that name, a contracts/ folder in `near` or any folder above it
// (<name>/contract.toml or <name>.toml), the folders of $KQUAL_CONTRACTS (':'-separated), the bundled
// contracts/ folder. Throws Error(input) naming what was searched.
const Contract& resolve_contract(const std::string& name_or_path, const std::filesystem::path& near);

// A declared contract by name (registered, or found in the search folders of resolve_contract but
// `near`); nullptr when none is found. find_contract falls back to it.
const Contract* find_declared_contract(const std::string& name);

// Declared contract files under the bundled contracts/ folder, $KQUAL_CONTRACTS and `extra` folders
// (for `kqual contracts`), in name order; each is not loaded, only found.
std::vector<std::filesystem::path> discover_declared_contracts(const std::vector<std::filesystem::path>& extra = {});

// The file a declared contract came from; empty for a built-in one.
std::filesystem::path declared_file(const Contract& c);

// The Python interpreter references run in: $KQUAL_PYTHON, else the first of python3 on PATH and
// /usr/bin/python3 that imports NumPy. Throws Error(input) saying what was tried.
std::string reference_python();

}  // namespace kqual::contract
