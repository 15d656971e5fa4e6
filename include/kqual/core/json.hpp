#pragma once
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kqual {
using json = nlohmann::ordered_json;
// Version of every JSON document kqual writes; bump on incompatible change (docs/json-schema.md).
inline constexpr int kJsonSchemaVersion = 1;

// Every JSON document kqual writes names itself with one scheme: "schema": "kqual.<command>/<version>"
// (kqual.qualify/1, kqual.compare/1, kqual.inspect-diff/1, kqual.model-roofline/1, ...), and carries
// the same version as "schema_version". <command> is the subcommand, words joined by '-'.
std::string schema_name(std::string_view command);
// {"schema": schema_name(command), "schema_version": kJsonSchemaVersion}: the first two fields.
json schema_header(std::string_view command);

struct SchemaName {
  std::string command;  // "qualify", "inspect-diff"
  int version = 0;
};
// "kqual.<command>/<version>" → its parts; nullopt for anything else.
std::optional<SchemaName> parse_schema_name(std::string_view name);

}  // namespace kqual
