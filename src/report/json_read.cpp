// Reading the results documents back, field by field with its path (json_read.hpp).
#include "json_read.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "kqual/decision/speed.hpp"

namespace kqual::report::read {

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

[[noreturn]] void wrong(const std::string& path, const char* wanted, const json& found) {
  throw_error(ErrorKind::input, fmt::format("{}: expected {}, found {}", path, wanted, found.type_name()));
}

// The member, or nullptr when it is absent (or null: a section not produced).
const json* member(const json& o, const std::string& path, std::string_view key) {
  if (!o.is_object()) wrong(path, "an object", o);
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

std::string get_str(const json& o, const std::string& path, std::string_view key, const std::string& def) {
  const json* v = member(o, path, key);
  if (!v) return def;
  if (!v->is_string()) wrong(join(path, key), "a string", *v);
  return v->get<std::string>();
}

bool get_bool(const json& o, const std::string& path, std::string_view key, bool def) {
  const json* v = member(o, path, key);
  if (!v) return def;
  if (!v->is_boolean()) wrong(join(path, key), "true or false", *v);
  return v->get<bool>();
}

// A number; JSON has no NaN, so kqual writes a NaN as null: null reads back as NaN.
double as_double(const json& v, const std::string& path) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) wrong(path, "a number", v);
  return v.get<double>();
}

double get_double(const json& o, const std::string& path, std::string_view key, double def) {
  if (!o.is_object()) wrong(path, "an object", o);
  auto it = o.find(key);
  if (it == o.end()) return def;
  return as_double(*it, join(path, key));
}

std::vector<double> get_doubles(const json& o, const std::string& path, std::string_view key) {
  std::vector<double> v;
  const json* a = member(o, path, key);
  if (!a) return v;
  if (!a->is_array()) wrong(join(path, key), "an array", *a);
  for (std::size_t i = 0; i < a->size(); ++i) v.push_back(as_double(a->at(i), fmt::format("{}.{}[{}]", path, key, i)));
  return v;
}

std::vector<std::string> get_strings(const json& o, const std::string& path, std::string_view key) {
  std::vector<std::string> v;
  const json* a = member(o, path, key);
  if (!a) return v;
  if (!a->is_array()) wrong(join(path, key), "an array", *a);
  for (std::size_t i = 0; i < a->size(); ++i) {
    if (!a->at(i).is_string()) wrong(fmt::format("{}.{}[{}]", path, key, i), "a string", a->at(i));
    v.push_back(a->at(i).get<std::string>());
  }
  return v;
}

// Members of an array field, each with its path.
std::vector<std::pair<const json*, std::string>> get_items(const json& o, const std::string& path, std::string_view key) {
  std::vector<std::pair<const json*, std::string>> v;
  const json* a = member(o, path, key);
  if (!a) return v;
  if (!a->is_array()) wrong(join(path, key), "an array", *a);
  for (std::size_t i = 0; i < a->size(); ++i) v.emplace_back(&a->at(i), fmt::format("{}.{}[{}]", path, key, i));
  return v;
}

// An object member kept as JSON ({} when absent).
json get_object(const json& o, const std::string& path, std::string_view key) {
  const json* v = member(o, path, key);
  if (!v) return json::object();
  if (!v->is_object()) wrong(join(path, key), "an object", *v);
  return *v;
}

std::vector<json> get_json_array(const json& o, const std::string& path, std::string_view key) {
  std::vector<json> v;
  for (const auto& [x, p] : get_items(o, path, key)) v.push_back(*x);
  return v;
}

PhaseList get_phases(const json& o, const std::string& path) {
  PhaseList ph;
  const json* p = member(o, path, "phases");
  if (!p) return ph;
  if (!p->is_object()) wrong(join(path, "phases"), "an object", *p);
  for (const auto& [k, v] : p->items()) {
    if (!v.is_string()) wrong(join(join(path, "phases"), k), "a string", v);
    ph.set(k, v.get<std::string>());
  }
  return ph;
}

json phases_json(const PhaseList& p) {
  json j = json::object();
  for (const auto& [k, v] : p.entries()) j[k] = v;
  return j;
}

// The "schema" field: kqual.<command>/<version>, of one of the commands given.
std::string schema_command(const json& doc, std::initializer_list<std::string_view> commands) {
  if (!doc.is_object()) wrong("", "a results document (an object)", doc);
  const std::string schema = get_str(doc, "", "schema");
  // Before the one naming scheme, qualify wrote "kqual.qualify" without a version (docs/json-schema.md).
  if (schema == "kqual.qualify" && std::find(commands.begin(), commands.end(), "qualify") != commands.end()) return "qualify";
  const auto s = parse_schema_name(schema);
  if (!s) throw_error(ErrorKind::input, fmt::format("schema: '{}' is not a kqual schema name (kqual.<command>/<version>)", schema));
  if (std::find(commands.begin(), commands.end(), s->command) == commands.end())
    throw_error(ErrorKind::input, fmt::format("schema: '{}' is not a {} document", schema, *commands.begin()));
  if (s->version > kJsonSchemaVersion)
    throw_error(ErrorKind::input, fmt::format("schema: '{}' is newer than this kqual reads (version {})", schema, kJsonSchemaVersion));
  return s->command;
}

decision::ShipVerdict get_ship_verdict(const json& o, const std::string& path) {
  const std::string word = get_str(o, path, "decision", "incomplete");
  const auto v = decision::ship_verdict_from_string(word);
  if (!v)
    throw_error(ErrorKind::input, fmt::format("{}: '{}' is not a verdict (ship, do_not_ship, no_difference, inconclusive, incomplete)",
                                              join(path, "decision"), word));
  return *v;
}


decision::QualifyVerdict qualify_verdict_from_json(const json& v, const std::string& path) {
  decision::QualifyVerdict q;
  q.verdict = get_ship_verdict(v, path);
  q.summary = get_str(v, path, "summary");
  q.reasons = get_strings(v, path, "reasons");
  q.would_reverse = get_strings(v, path, "would_reverse");
  if (const json* sp = member(v, path, "speed")) q.speed = decision::speed_judgement_from_json(*sp);
  return q;
}

}  // namespace kqual::report::read
