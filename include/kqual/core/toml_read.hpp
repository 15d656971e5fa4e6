#pragma once
// Reading a TOML file so that every error names the file, the key and what is wrong: the kqual.toml
// manifests (build/manifest.cpp) read with these; declared contracts' files are read the same way.
#include <filesystem>
#include <initializer_list>
#include <string>
#include <toml++/toml.h>

namespace kqual {

// The file being read; fail() throws Error(input) "FILE: KEY: WHAT".
class TomlContext {
 public:
  explicit TomlContext(std::filesystem::path f) : file_(std::move(f)) {}
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
};

// `text` (the contents of `file`) parsed; a syntax error is Error(input) "FILE:LINE:COLUMN: TOML syntax
// error: WHAT", as every TOML file kqual reads reports one (manifests, contracts, profiles).
toml::table parse_toml(const std::string& text, const std::filesystem::path& file);

// A value as the file writes it (a string quoted), for messages.
std::string toml_value_text(const toml::node& n);

// fail() naming the first key of `t` that is not in `allowed`; `where` is t's dotted path ("" at the top).
void check_keys(const TomlContext& cx, const toml::table& t, const std::string& where, std::initializer_list<const char*> allowed);

}  // namespace kqual
