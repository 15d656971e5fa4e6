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
#include "kqual/core/error.hpp"

namespace kqual::contract {

// Loads, validates and registers the contract in `file` (a contract.toml, or a folder holding one)
// under its declared name; later find_contract(name) calls return it. Loading the same file twice
// returns the same contract. Throws Error(input) naming the file, the key and the value: unknown
// keys, bad expressions, unknown axes or tensors, a dtype row naming an unknown tensor, a
// reference file that is missing, a name that is already a built-in or another file's contract.
const Contract& load_declared_contract(const std::filesystem::path& file);

// Where a contract comes from (docs/declared-contracts.md, "Where contracts come from"). The user
// picks the judge: a contract named by name comes only from the user's folders, the project's
// contracts/ folder or the built-ins; a contract file beside a candidate judges it only when asked for.
enum class ContractOrigin { built_in, user, project, candidate };
const char* to_string(ContractOrigin o);  // "built-in", "user", "project", "candidate"

// The user's choices, given on the command line (--contracts, --allow-candidate-contract). Set once
// per command by the pipelines before any manifest is read; $KQUAL_CONTRACTS is read at each lookup.
struct ContractSources {
  std::vector<std::filesystem::path> user_dirs;  // --contracts DIR, in the order given
  bool allow_candidate_contract = false;         // a manifest may name a contract file outside the folders below
};
void set_contract_sources(const ContractSources& s);
ContractSources contract_sources();

// A folder declared contracts are looked up in by name.
struct ContractRoot {
  std::filesystem::path dir;  // canonical
  ContractOrigin origin;      // user or project
};
// In lookup order: --contracts folders, $KQUAL_CONTRACTS (':'-separated), then the project's
// contracts/ ($KQUAL_HOME/contracts, else the nearest contracts/ above the kqual executable). Never a
// folder found from a candidate's location or the working directory.
std::vector<ContractRoot> contract_roots();

// Which folder `file` lies in: user or project when under one of contract_roots(), else candidate.
ContractOrigin origin_of_file(const std::filesystem::path& file);

// What decided a contract: its origin, and for a declared one its file and that file's SHA-256.
struct ContractProvenance {
  ContractOrigin origin = ContractOrigin::built_in;
  std::filesystem::path file;
  std::string sha256;
};
ContractProvenance contract_provenance(const Contract& c);

// The contract a manifest names (`near`: the manifest's folder):
// - a built-in name;
// - a declared contract's name: looked up in contract_roots() only (a contract registered from a file
//   supplied with a candidate is never found by name);
// - a path to a contract.toml (absolute or relative to `near`): accepted when it lies in one of
//   contract_roots(), else (a contract supplied with the candidate) only with
//   ContractSources::allow_candidate_contract.
// Throws Error(input) naming what was searched, or the file and the option that would allow it.
const Contract& resolve_contract(const std::string& name_or_path, const std::filesystem::path& near);

// True when a manifest's contract value is a path (it has a '/' or ends in ".toml"), not a name.
bool contract_value_is_path(const std::string& value);

// The file a contract name or path resolves to without loading it: for a path, the file (absolute,
// relative to `near`); for a declared name, the first <name>/contract.toml or <name>.toml in
// contract_roots(); empty for a built-in name or when nothing is found.
std::filesystem::path locate_contract_file(const std::string& name_or_path, const std::filesystem::path& near);

// The name a contract file declares ([contract] name), read without loading the contract; empty
// when the file cannot be read or has none.
std::string declared_contract_name(const std::filesystem::path& file);

// The file registered under `name` in this process; empty when none is.
std::filesystem::path registered_contract_file(const std::string& name);

// A declared contract by name (registered, or found in contract_roots()); nullptr when none is
// found. find_contract falls back to it.
const Contract* find_declared_contract(const std::string& name);

// Declared contract files in `extra` folders and contract_roots()
// (for `kqual contracts`), in name order; each is not loaded, only found.
std::vector<std::filesystem::path> discover_declared_contracts(const std::vector<std::filesystem::path>& extra = {});

// The file a declared contract came from; empty for a built-in one.
std::filesystem::path declared_file(const Contract& c);

// The Python interpreter references run in: $KQUAL_PYTHON, else the first of python3 on PATH and
// /usr/bin/python3 that imports NumPy. Throws Error(input) saying what was tried.
std::string reference_python();

// Whether a declared contract's error is only that its PyTorch reference or generator cannot run here
// (no PyTorch in kqual's Python): the contract is not wrong, it was not run (`contracts --verify`: exit 3).
bool needs_pytorch_here(const Error& e);

}  // namespace kqual::contract
