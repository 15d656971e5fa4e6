#include "kqual/core/toml_read.hpp"

#include <fmt/format.h>

#include <sstream>

#include "kqual/core/error.hpp"

namespace kqual {

void TomlContext::fail(const std::string& key, const std::string& what) const {
  throw_error(ErrorKind::input, fmt::format("{}: {}: {}", file_.string(), key, what));
}

toml::table parse_toml(const std::string& text, const std::filesystem::path& file) {
  try {
    return toml::parse(text, file.string());
  } catch (const toml::parse_error& e) {
    throw_error(ErrorKind::input, fmt::format("{}:{}:{}: TOML syntax error: {}", file.string(), e.source().begin.line,
                                              e.source().begin.column, e.description()));
  }
}

std::string toml_value_text(const toml::node& n) {
  std::ostringstream os;
  n.visit([&](auto&& v) { os << v; });
  return n.is_string() ? "\"" + os.str() + "\"" : os.str();
}

void check_keys(const TomlContext& cx, const toml::table& t, const std::string& where, std::initializer_list<const char*> allowed) {
  for (const auto& [k, v] : t) {
    bool ok = false;
    for (const char* a : allowed) ok |= k.str() == a;
    if (!ok) cx.fail(where.empty() ? std::string(k.str()) : where + "." + std::string(k.str()),
                     fmt::format("unknown key (allowed here: {})", fmt::join(allowed, ", ")));
  }
}

}  // namespace kqual
