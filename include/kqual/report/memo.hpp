#pragma once
// The decision memo, rendered from a results document (so `kqual report results.json` and
// `kqual qualify` produce the same text from the same evidence).
#include <string>

#include "kqual/core/json.hpp"

namespace kqual::report {

std::string render_qualify_memo(const json& results);

}  // namespace kqual::report
