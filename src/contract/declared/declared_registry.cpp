// The registry of declared contracts (declared.hpp): where they come from (the user's folders and
// the project's contracts/ folder, the user's choices from the command line, a contract's origin),
// loading by file, resolving a manifest's contract value (a built-in name, a declared name found in
// those folders, or a path) and discovering the declared contracts `kqual contracts` lists. The
// contract itself: declared.cpp.
#include <fmt/format.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "declared_spec.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/self.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"

namespace kqual::contract {
namespace fs = std::filesystem;
using namespace declared;

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Contract>> by_name;
};
Registry& registry() {
  static Registry r;
  return r;
}

bool builtin(const std::string& name) {
  const auto names = contract_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<fs::path> find_in(const fs::path& root, const std::string& name) {
  std::error_code ec;
  for (const fs::path& p : {root / name / "contract.toml", root / (name + ".toml")})
    if (fs::is_regular_file(p, ec)) return p;
  return std::nullopt;
}

}  // namespace

// ---- where contracts come from ----
namespace {

struct Sources {
  std::mutex mu;
  ContractSources s;
};
Sources& sources() {
  static Sources s;
  return s;
}

fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? p : c;
}

// The project's contracts/: $KQUAL_HOME/contracts, else the nearest contracts/ above the executable.
// Not the working directory and not the candidate's folder: either may be the candidate's own tree.
std::optional<fs::path> project_contracts() { return find_project_folder("contracts"); }

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

void set_contract_sources(const ContractSources& s) {
  std::lock_guard<std::mutex> lock(sources().mu);
  sources().s = s;
}

ContractSources contract_sources() {
  std::lock_guard<std::mutex> lock(sources().mu);
  return sources().s;
}

std::vector<ContractRoot> contract_roots() {
  std::vector<ContractRoot> roots;
  for (const auto& d : contract_sources().user_dirs) roots.push_back({canonical_or_same(d), ContractOrigin::user});
  if (const char* env = std::getenv("KQUAL_CONTRACTS"))
    for (const std::string& dir : split_path_list(env)) roots.push_back({canonical_or_same(dir), ContractOrigin::user});
  if (auto p = project_contracts()) roots.push_back({*p, ContractOrigin::project});
  return roots;
}

ContractOrigin origin_of_file(const fs::path& file) {
  const fs::path f = canonical_or_same(file);
  for (const auto& r : contract_roots())
    if (is_under(f, r.dir)) return r.origin;
  return ContractOrigin::candidate;
}

ContractProvenance contract_provenance(const Contract& c) {
  ContractProvenance p;
  p.file = declared_file(c);
  if (p.file.empty()) return p;
  p.origin = origin_of_file(p.file);
  try {
    p.sha256 = sha256_file_hex(p.file.string());
  } catch (const std::exception&) {
    p.sha256.clear();  // removed since it was loaded: the provenance says so by leaving it empty
  }
  return p;
}

bool contract_value_is_path(const std::string& value) {
  return value.find('/') != std::string::npos || (value.size() > 5 && value.ends_with(".toml"));
}

fs::path locate_contract_file(const std::string& value, const fs::path& near) {
  std::error_code ec;
  if (contract_value_is_path(value)) {
    fs::path p = fs::path(value).is_absolute() || near.empty() ? fs::path(value) : near / value;
    if (fs::is_directory(p, ec)) p /= "contract.toml";
    return canonical_or_same(p);
  }
  const auto names = contract_names();
  if (std::find(names.begin(), names.end(), value) != names.end()) return {};
  for (const auto& r : contract_roots())
    for (const fs::path& p : {r.dir / value / "contract.toml", r.dir / (value + ".toml")})
      if (fs::is_regular_file(p, ec)) return canonical_or_same(p);
  return {};
}

std::string declared_contract_name(const fs::path& file) {
  try {
    const toml::table t = toml::parse_file(file.string());
    if (auto n = t["contract"]["name"].value<std::string>()) return *n;
  } catch (const std::exception&) {
    // unreadable or not TOML: loading the contract says why
  }
  return {};
}

// ---- the registry ----

const Contract& load_declared_contract(const fs::path& file_or_dir) {
  std::error_code ec;
  fs::path file = fs::is_directory(file_or_dir, ec) ? file_or_dir / "contract.toml" : file_or_dir;
  if (!fs::is_regular_file(file, ec)) throw_error(ErrorKind::input, fmt::format("{}: no such contract file", file.string()));
  file = fs::weakly_canonical(fs::absolute(file), ec);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [n, c] : r.by_name)
    if (spec_of(*c)->file == file) return *c;
  Spec s = parse_spec(read_text_file(file), file);
  if (builtin(s.name))
    throw_error(ErrorKind::input, fmt::format("{}: contract.name: \"{}\" is a built-in contract; give the declared one another name",
                                              file.string(), s.name));
  if (auto it = r.by_name.find(s.name); it != r.by_name.end())
    throw_error(ErrorKind::input, fmt::format("{}: contract.name: \"{}\" is already declared by {}", file.string(), s.name,
                                              spec_of(*it->second)->file.string()));
  std::unique_ptr<Contract> c = make_contract(std::move(s));
  const Contract& out = *c;
  r.by_name[c->name()] = std::move(c);
  return out;
}

namespace {

// A manifest's contract file: one in the user's or the project's folders is theirs; any other was
// supplied with the candidate and judges it only when the user asked for that.
const Contract& resolve_contract_file(const std::string& text, const fs::path& near) {
  std::error_code ec;
  const fs::path p = locate_contract_file(text, near);
  if (!fs::exists(p, ec)) throw_error(ErrorKind::input, fmt::format("contract file {} does not exist", p.string()));
  if (origin_of_file(p) == ContractOrigin::candidate && !contract_sources().allow_candidate_contract) {
    std::vector<std::string> roots;
    for (const auto& r : contract_roots()) roots.push_back(r.dir.string());
    throw_error(ErrorKind::input,
                fmt::format("\"{}\" names the contract file {}, which is supplied with the candidate (it is in none of the "
                            "contract folders: {}); kqual judges a candidate by a contract the user picks: name a contract "
                            "from those folders, add the file's folder with --contracts DIR, or accept this file with "
                            "--allow-candidate-contract (results.json and the memo then name it, with its SHA-256)",
                            text, p.string(), roots.empty() ? std::string("none found") : fmt::format("{}", fmt::join(roots, ", "))));
  }
  return load_declared_contract(p);
}

}  // namespace

const Contract& resolve_contract(const std::string& text, const fs::path& near) {
  if (contract_value_is_path(text)) return resolve_contract_file(text, near);
  if (builtin(text)) return find_contract(text);
  // By name: only the user's and the project's folders. A contract registered from a file supplied
  // with a candidate is not found this way (another candidate must not be judged by it).
  if (const fs::path f = locate_contract_file(text, near); !f.empty()) return load_declared_contract(f);
  std::vector<std::string> searched;
  for (const auto& root : contract_roots()) searched.push_back(fmt::format("{} ({})", root.dir.string(), to_string(root.origin)));
  std::vector<std::string> known = contract_names();
  throw_error(ErrorKind::input,
              fmt::format("unknown contract '{}': not built in ({}) and no {}/contract.toml or {}.toml in {} (contracts are "
                          "found by name only in the project's contracts/ folder, --contracts DIR and $KQUAL_CONTRACTS, "
                          "never beside the manifest)",
                          text, fmt::join(known, ", "), text, text,
                          searched.empty() ? std::string("any contract folder (none found)") : fmt::format("{}", fmt::join(searched, ", "))));
}

const Contract* find_declared_contract(const std::string& name) {
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    if (auto it = r.by_name.find(name); it != r.by_name.end()) return it->second.get();
  }
  for (const auto& root : contract_roots())
    if (auto f = find_in(root.dir, name)) return &load_declared_contract(*f);
  return nullptr;
}

fs::path registered_contract_file(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto it = r.by_name.find(name); it != r.by_name.end()) return spec_of(*it->second)->file;
  return {};
}

std::vector<fs::path> discover_declared_contracts(const std::vector<fs::path>& extra) {
  std::vector<fs::path> roots = extra;
  for (const auto& r : contract_roots()) roots.push_back(r.dir);
  std::map<std::string, fs::path> found;  // by file name stem, first root wins
  std::error_code ec;
  for (const auto& root : roots) {
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& e : fs::directory_iterator(root, ec)) {
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

fs::path declared_file(const Contract& c) {
  if (const Spec* s = spec_of(c)) return s->file;
  return {};
}

}  // namespace kqual::contract
