// What the importers share (import_common.hpp).
#include "import_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract::detail {
namespace fs = std::filesystem;

std::string toml_quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    // TOML's basic strings hold no other control character (a description with \r or \f would not load).
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
      o += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
      continue;
    }
    o += c;
  }
  return o + "\"";
}

void write_imported_contract(const fs::path& out, const std::map<std::string, std::string>& files) {
  std::error_code ec;
  if (fs::exists(out, ec)) throw_error(ErrorKind::input, fmt::format("{} exists: give a new folder", out.string()));
  const fs::path tmp = out.string() + ".kqual-tmp";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp);
  try {
    for (const auto& [name, text] : files) write_file_atomic(tmp / name, text);
    fs::rename(tmp, out);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  try {
    (void)load_declared_contract(out);
  } catch (const Error& e) {
    fs::remove_all(out, ec);
    throw_error(ErrorKind::internal, fmt::format("the imported contract does not load (a bug in the importer): {}", e.what()));
  }
}

void JsonIn::fail(const std::string& key, const std::string& why) const {
  throw_error(ErrorKind::input, fmt::format("{}: {}: {}", file_, key.empty() ? "(top level)" : key, why));
}

std::string json_kind(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return "the number " + v.dump();
  if (v.is_string()) return "the string " + v.dump();
  return v.is_array() ? "an array" : "an object";
}

const json& JsonIn::object(const json& v, const std::string& key) const {
  if (!v.is_object()) fail(key, "expected an object, got " + json_kind(v));
  return v;
}
const json& JsonIn::array(const json& v, const std::string& key) const {
  if (!v.is_array()) fail(key, "expected an array, got " + json_kind(v));
  return v;
}
std::string JsonIn::string(const json& v, const std::string& key, const char* what) const {
  if (!v.is_string()) fail(key, fmt::format("expected {}, got {}", what, json_kind(v)));
  return v.get<std::string>();
}
std::int64_t JsonIn::integer(const json& v, const std::string& key) const {
  if (!v.is_number_integer()) fail(key, "expected an integer, got " + json_kind(v));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX)) fail(key, v.dump() + " is past 2^63 - 1");
  return v.get<std::int64_t>();
}
double JsonIn::number(const json& v, const std::string& key) const {
  if (!v.is_number()) fail(key, "expected a number, got " + json_kind(v));
  return v.get<double>();
}
bool JsonIn::boolean(const json& v, const std::string& key) const {
  if (!v.is_boolean()) fail(key, "expected true or false, got " + json_kind(v));
  return v.get<bool>();
}
const json* JsonIn::member(const json& obj, const std::string& key, const std::string& name, bool required) const {
  object(obj, key);
  auto it = obj.find(name);
  if (it == obj.end()) {
    if (required) fail(at(key, name), "missing (required)");
    return nullptr;
  }
  return &*it;
}
std::string JsonIn::string_or(const json& obj, const std::string& key, const std::string& name, const std::string& dflt) const {
  const json* v = member(obj, key, name, false);
  return v ? string(*v, at(key, name)) : dflt;
}
bool JsonIn::boolean_or(const json& obj, const std::string& key, const std::string& name, bool dflt) const {
  const json* v = member(obj, key, name, false);
  return v ? boolean(*v, at(key, name)) : dflt;
}

bool is_plain_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string determinism_toml(bool any_float_output, const std::string& source) {
  if (!any_float_output)
    return "# Every output is an integer, compared exactly: any run-to-run difference is already a wrong element.\n"
           "deterministic = true\n"
           "deterministic_reason = \"every output is an integer, compared exactly\"\n";
  return fmt::format(
      "# {0} judges each run against its reference under its tolerance and never compares two runs, so\n"
      "# kernels written for it may split reductions over blocks with atomics (the order of the adds, and\n"
      "# the last bits, vary from run to run). kqual holds each run to the error model below and the\n"
      "# difference between two runs to the same bound; set true to require bitwise reproducibility.\n"
      "deterministic = false\n"
      "deterministic_reason = {1}\n",
      source,
      toml_quoted(fmt::format("imported from {}, which compares each run with the reference under a tolerance and never "
                              "two runs with each other; split reductions with atomics are normal there",
                              source)));
}

}  // namespace kqual::contract::detail
