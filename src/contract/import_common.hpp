#pragma once
// Internal to src/contract/: what the importers (import_definition.cpp, import_kernelbench*.cpp)
// share. Not a public header.
#include <filesystem>
#include <map>
#include <string>

namespace kqual::contract::detail {

// A TOML basic string: quotes, backslashes and newlines escaped.
std::string toml_quoted(const std::string& s);

// Writes a contract folder whole or not at all: every file into `out`.kqual-tmp, renamed to `out`,
// then loaded back as a declared contract; a folder that does not load is removed and reported as
// the importer's bug. `out` must not exist.
void write_imported_contract(const std::filesystem::path& out, const std::map<std::string, std::string>& files);

}  // namespace kqual::contract::detail
