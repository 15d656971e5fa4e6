// The registry of declared contracts (declared.hpp): loading by file, resolving a manifest's
// contract value (a built-in name, a declared name found in the search folders, or a path) and
// discovering the declared contracts `kqual contracts` lists. The contract itself: declared.cpp.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "declared_spec.hpp"
#include "kqual/contract/declared.hpp"
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

std::vector<fs::path> search_roots(const fs::path& near) {
  std::vector<fs::path> roots;
  std::error_code ec;
  auto walk = [&](fs::path start) {
    start = fs::weakly_canonical(fs::absolute(start, ec), ec);
    for (fs::path p = start; !p.empty(); p = p.parent_path()) {
      if (fs::is_directory(p / "contracts", ec)) roots.push_back(p / "contracts");
      if (p == p.parent_path()) break;
    }
  };
  if (!near.empty()) walk(near);
  if (const char* env = std::getenv("KQUAL_CONTRACTS")) {
    std::string s = env;
    std::size_t b = 0;
    while (b <= s.size()) {
      std::size_t e = s.find(':', b);
      if (e == std::string::npos) e = s.size();
      if (e > b) roots.push_back(s.substr(b, e - b));
      b = e + 1;
    }
  }
  if (const char* home = std::getenv("KQUAL_HOME")) roots.push_back(fs::path(home) / "contracts");
  walk(fs::current_path(ec));
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) walk(fs::path(std::string(buf, std::size_t(n))).parent_path());
  return roots;
}

std::optional<fs::path> find_in(const fs::path& root, const std::string& name) {
  std::error_code ec;
  for (const fs::path& p : {root / name / "contract.toml", root / (name + ".toml")})
    if (fs::is_regular_file(p, ec)) return p;
  return std::nullopt;
}

}  // namespace

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

const Contract& resolve_contract(const std::string& text, const fs::path& near) {
  std::error_code ec;
  const bool path_like = text.find('/') != std::string::npos || (text.size() > 5 && text.ends_with(".toml"));
  if (path_like) {
    fs::path p = fs::path(text).is_absolute() || near.empty() ? fs::path(text) : near / text;
    if (!fs::exists(p, ec)) throw_error(ErrorKind::input, fmt::format("contract file {} does not exist", p.string()));
    return load_declared_contract(p);
  }
  if (builtin(text)) return find_contract(text);
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    if (auto it = r.by_name.find(text); it != r.by_name.end()) return *it->second;
  }
  if (!near.empty()) {
    if (fs::is_regular_file(near / (text + ".toml"), ec)) return load_declared_contract(near / (text + ".toml"));
    if (fs::is_regular_file(near / "contract.toml", ec)) {
      const Contract& c = load_declared_contract(near / "contract.toml");
      if (c.name() == text) return c;
    }
  }
  std::vector<std::string> searched;
  for (const auto& root : search_roots(near)) {
    if (auto f = find_in(root, text)) return load_declared_contract(*f);
    searched.push_back(root.string());
  }
  std::vector<std::string> known = contract_names();
  throw_error(ErrorKind::input, fmt::format("unknown contract '{}': not built in ({}) and no {}/contract.toml or {}.toml in {}", text,
                                            fmt::join(known, ", "), text, text,
                                            searched.empty() ? std::string("any contracts/ folder (none found)") : fmt::format("{}", fmt::join(searched, ", "))));
}

const Contract* find_declared_contract(const std::string& name) {
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    if (auto it = r.by_name.find(name); it != r.by_name.end()) return it->second.get();
  }
  for (const auto& root : search_roots({}))
    if (auto f = find_in(root, name)) return &load_declared_contract(*f);
  return nullptr;
}

std::vector<fs::path> discover_declared_contracts(const std::vector<fs::path>& extra) {
  std::vector<fs::path> roots = extra;
  for (const auto& r : search_roots({})) roots.push_back(r);
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
