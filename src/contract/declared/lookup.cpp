// Where contracts come from (lookup.hpp): the folders a name is looked up in, a file's origin, and the
// one way a contract value (a built-in name, a declared name found in those folders, or a path, which
// is accepted outside them only with --allow-candidate-contract) becomes a contract. The contracts it
// loads are kept by the registry (declared_registry.cpp).
#include "kqual/contract/declared/lookup.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/self.hpp"
#include "kqual/core/sha256.hpp"

namespace kqual::contract {
namespace fs = std::filesystem;

namespace {

fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? p : c;
}

bool is_builtin_name(const std::string& name) {
  const auto names = contract_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_under(const fs::path& file, const fs::path& dir) {
  auto f = file.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++f) {
    if (d->empty()) continue;  // a trailing separator
    if (f == file.end() || *f != *d) return false;
  }
  return true;
}

}  // namespace

const char* to_string(ContractOrigin o) {
  switch (o) {
    case ContractOrigin::built_in: return "built-in";
    case ContractOrigin::user: return "user";
    case ContractOrigin::project: return "project";
    case ContractOrigin::candidate: return "candidate";
  }
  return "?";
}

bool contract_value_is_path(const std::string& value) {
  return value.find('/') != std::string::npos || (value.size() > 5 && value.ends_with(".toml"));
}

std::vector<ContractRoot> ContractLookup::roots() const {
  std::vector<ContractRoot> roots;
  for (const auto& d : sources_.user_dirs) roots.push_back({canonical_or_same(d), ContractOrigin::user});
  if (const char* env = std::getenv("KQUAL_CONTRACTS"))
    for (const std::string& dir : split_path_list(env)) roots.push_back({canonical_or_same(dir), ContractOrigin::user});
  // The project's contracts/: $KQUAL_HOME/contracts, else the nearest contracts/ above the executable.
  // Not the working directory and not the candidate's folder: either may be the candidate's own tree.
  if (auto p = find_project_folder("contracts")) roots.push_back({*p, ContractOrigin::project});
  return roots;
}

ContractOrigin ContractLookup::origin_of(const fs::path& file) const {
  const fs::path f = canonical_or_same(file);
  for (const auto& r : roots())
    if (is_under(f, r.dir)) return r.origin;
  return ContractOrigin::candidate;
}

ContractProvenance ContractLookup::provenance(const Contract& c) const {
  ContractProvenance p;
  p.file = declared_file(c);
  if (p.file.empty()) return p;
  p.origin = origin_of(p.file);
  try {
    p.sha256 = sha256_file_hex(p.file.string());
  } catch (const std::exception&) {
    p.sha256.clear();  // removed since it was loaded: the provenance says so by leaving it empty
  }
  return p;
}

fs::path ContractLookup::locate(const std::string& value, const fs::path& near) const {
  std::error_code ec;
  if (contract_value_is_path(value)) {
    fs::path p = fs::path(value).is_absolute() || near.empty() ? fs::path(value) : near / value;
    if (fs::is_directory(p, ec)) p /= "contract.toml";
    return canonical_or_same(p);
  }
  if (is_builtin_name(value)) return {};
  for (const auto& r : roots())
    for (const fs::path& p : {r.dir / value / "contract.toml", r.dir / (value + ".toml")})
      if (fs::is_regular_file(p, ec)) return canonical_or_same(p);
  return {};
}

const Contract& ContractLookup::resolve(const std::string& text, const fs::path& near) const {
  if (contract_value_is_path(text)) {
    // A contract file: one in the user's or the project's folders is theirs; any other was supplied
    // with the candidate and judges it only when the user asked for that.
    std::error_code ec;
    const fs::path p = locate(text, near);
    if (!fs::exists(p, ec)) throw_error(ErrorKind::input, fmt::format("contract file {} does not exist", p.string()));
    if (origin_of(p) == ContractOrigin::candidate && !sources_.allow_candidate_contract) {
      std::vector<std::string> dirs;
      for (const auto& r : roots()) dirs.push_back(r.dir.string());
      throw_error(ErrorKind::input,
                  fmt::format("\"{}\" names the contract file {}, which is supplied with the candidate (it is in none of the "
                              "contract folders: {}); kqual judges a candidate by a contract the user picks: name a contract "
                              "from those folders, add the file's folder with --contracts DIR, or accept this file with "
                              "--allow-candidate-contract (results.json and the memo then name it, with its SHA-256)",
                              text, p.string(), dirs.empty() ? std::string("none found") : fmt::format("{}", fmt::join(dirs, ", "))));
    }
    return load_declared_contract(p);
  }
  if (is_builtin_name(text)) return find_contract(text);
  // By name: only the user's and the project's folders. A contract registered from a file supplied
  // with a candidate is not found this way (another candidate must not be judged by it).
  if (const fs::path f = locate(text, near); !f.empty()) return load_declared_contract(f);
  std::vector<std::string> searched;
  for (const auto& root : roots()) searched.push_back(fmt::format("{} ({})", root.dir.string(), to_string(root.origin)));
  throw_error(ErrorKind::input,
              fmt::format("unknown contract '{}': not built in ({}) and no {}/contract.toml or {}.toml in {} (contracts are "
                          "found by name only in the project's contracts/ folder, --contracts DIR and $KQUAL_CONTRACTS, "
                          "never beside the manifest)",
                          text, fmt::join(contract_names(), ", "), text, text,
                          searched.empty() ? std::string("any contract folder (none found)") : fmt::format("{}", fmt::join(searched, ", "))));
}

std::vector<fs::path> ContractLookup::discover(const std::vector<fs::path>& extra) const {
  std::vector<fs::path> dirs = extra;
  for (const auto& r : roots()) dirs.push_back(r.dir);
  std::map<std::string, fs::path> found;  // by file name stem, first folder wins
  std::error_code ec;
  for (const auto& dir : dirs) {
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      fs::path f = e.is_directory() ? e.path() / "contract.toml" : e.path();
      if (f.extension() != ".toml" || !fs::is_regular_file(f, ec)) continue;
      const std::string key = e.is_directory() ? e.path().filename().string() : f.stem().string();
      found.emplace(key, fs::weakly_canonical(f, ec));
    }
  }
  std::vector<fs::path> v;
  for (auto& [k, p] : found) v.push_back(p);
  return v;
}

}  // namespace kqual::contract
