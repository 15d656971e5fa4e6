#pragma once
#include <nlohmann/json.hpp>

namespace kqual {
using json = nlohmann::ordered_json;
// Version of every JSON document kqual writes; bump on incompatible change (docs/json-schema.md).
inline constexpr int kJsonSchemaVersion = 1;
}  // namespace kqual
