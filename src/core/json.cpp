#include "kqual/core/json.hpp"

#include <charconv>

namespace kqual {
namespace {

bool command_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

}  // namespace

std::string schema_name(std::string_view command) {
  return "kqual." + std::string(command) + "/" + std::to_string(kJsonSchemaVersion);
}

json schema_header(std::string_view command) {
  return json{{"schema", schema_name(command)}, {"schema_version", kJsonSchemaVersion}};
}

std::optional<SchemaName> parse_schema_name(std::string_view name) {
  constexpr std::string_view prefix = "kqual.";
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  const std::size_t slash = name.find('/');
  if (slash == 0 || slash == std::string_view::npos) return std::nullopt;
  SchemaName s;
  s.command = std::string(name.substr(0, slash));
  for (char c : s.command)
    if (!command_char(c)) return std::nullopt;
  const std::string_view v = name.substr(slash + 1);
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s.version);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || s.version < 1) return std::nullopt;
  return s;
}

}  // namespace kqual
