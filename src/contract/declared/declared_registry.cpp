// The registry of declared contracts (declared.hpp): the contracts loaded in this process, by file and
// by name. Where a contract value finds its file: lookup.cpp. The contract itself: declared.cpp.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "declared_spec.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

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

}  // namespace

std::string declared_contract_name(const fs::path& file) {
  try {
    const toml::table t = toml::parse_file(file.string());
    if (auto n = t["contract"]["name"].value<std::string>()) return *n;
  } catch (const std::exception&) {
    // unreadable or not TOML: loading the contract says why
  }
  return {};
}

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

const Contract* find_declared_contract(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto it = r.by_name.find(name); it != r.by_name.end()) return it->second.get();
  return nullptr;
}

fs::path registered_contract_file(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto it = r.by_name.find(name); it != r.by_name.end()) return spec_of(*it->second)->file;
  return {};
}

fs::path declared_file(const Contract& c) {
  if (const Spec* s = spec_of(c)) return s->file;
  return {};
}

}  // namespace kqual::contract
