#pragma once
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kqual {
using json = nlohmann::ordered_json;

// Defines `json to_json(const Type& x)` (declared beside Type) writing the members listed, each
// under its own C++ name, in the order listed: KQUAL_DEFINE_TO_JSON(Ceilings, device, bytes_per_s)
// writes {"device": x.device, "bytes_per_s": x.bytes_per_s}. For a struct whose JSON is its plain
// members, so that each name is written once; nlohmann's NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE does the
// same for nlohmann::json (keys sorted), and its member-list machinery is what this expands.
#define KQUAL_DEFINE_TO_JSON(Type, ...)                                         \
  ::kqual::json to_json(const Type& nlohmann_json_t) {                          \
    ::kqual::json nlohmann_json_j = ::kqual::json::object();                    \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__))    \
    return nlohmann_json_j;                                                     \
  }
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
