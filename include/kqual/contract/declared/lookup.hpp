#pragma once
// Where contracts come from (docs/declared-contracts.md, "Where contracts come from"): the one way a
// contract value — a manifest's `contract`, a command line's `--contract`, a problem file — becomes a
// contract. A command builds one ContractLookup from the user's choices and passes it to whatever reads
// manifests; no process-wide setting decides what a name means. The contracts once loaded are kept by
// the declared registry (declared.hpp), so a file loaded twice is one contract.
#include <filesystem>
#include <string>
#include <vector>

namespace kqual::contract {

class Contract;

// The user picks the judge: a contract named by name comes only from the user's folders, the project's
// contracts/ folder or the built-ins; a contract file beside a candidate judges it only when asked for.
enum class ContractOrigin { built_in, user, project, candidate };
const char* to_string(ContractOrigin o);  // "built-in", "user", "project", "candidate"

// The user's choices, given on the command line (--contracts, --allow-candidate-contract).
struct ContractSources {
  std::vector<std::filesystem::path> user_dirs;  // --contracts DIR, in the order given
  bool allow_candidate_contract = false;         // a manifest may name a contract file outside the folders below
};

// A folder declared contracts are looked up in by name.
struct ContractRoot {
  std::filesystem::path dir;  // canonical
  ContractOrigin origin;      // user or project
};

// What decided a contract: its origin, and for a declared one its file and that file's SHA-256.
struct ContractProvenance {
  ContractOrigin origin = ContractOrigin::built_in;
  std::filesystem::path file;
  std::string sha256;
};

// True when a contract value is a path (it has a '/' or ends in ".toml"), not a name.
bool contract_value_is_path(const std::string& value);

class ContractLookup {
 public:
  ContractLookup() = default;  // no --contracts folders; a contract file supplied with a candidate is refused
  explicit ContractLookup(ContractSources s) : sources_(std::move(s)) {}
  const ContractSources& sources() const { return sources_; }

  // In lookup order: the --contracts folders, $KQUAL_CONTRACTS (':'-separated, read at each call), then
  // the project's contracts/ ($KQUAL_HOME/contracts, else the nearest contracts/ above the kqual
  // executable). Never a folder found from a candidate's location or the working directory.
  std::vector<ContractRoot> roots() const;

  // Which folder `file` lies in: user or project when under one of roots(), else candidate.
  ContractOrigin origin_of(const std::filesystem::path& file) const;

  // The origin of a contract, and for a declared one its file and that file's SHA-256 now.
  ContractProvenance provenance(const Contract& c) const;

  // The contract a value names (`near`: the folder a relative path is relative to, the manifest's):
  // - a built-in name;
  // - a declared contract's name: looked up in roots() only (a contract registered from a file supplied
  //   with a candidate is never found by name);
  // - a path to a contract.toml (absolute or relative to `near`): accepted when it lies in one of roots(),
  //   else (a contract supplied with the candidate) only with ContractSources::allow_candidate_contract.
  // Throws Error(input) naming what was searched, or the file and the option that would allow it.
  const Contract& resolve(const std::string& name_or_path, const std::filesystem::path& near) const;

  // The file a value resolves to without loading it: for a path, the file (absolute, relative to
  // `near`); for a declared name, the first <name>/contract.toml or <name>.toml in roots(); empty for a
  // built-in name or when nothing is found.
  std::filesystem::path locate(const std::string& name_or_path, const std::filesystem::path& near) const;

  // Declared contract files in `extra` folders and roots() (for `kqual contracts`), in name order; each
  // is found, not loaded.
  std::vector<std::filesystem::path> discover(const std::vector<std::filesystem::path>& extra = {}) const;

 private:
  ContractSources sources_;
};

}  // namespace kqual::contract
