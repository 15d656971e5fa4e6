#pragma once
// Reading the results documents back: each field by its path, so that a field of the wrong type is
// reported where it is ("timing.shapes[1].series[0].summary_ms.median: expected a number, found
// string"). Shared by the documents' from_json functions in src/report/ (private to the module).
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/decision/decision.hpp"
#include "kqual/decision/qualify.hpp"
#include "kqual/report/results.hpp"

namespace kqual::report::read {

std::string join(const std::string& path, std::string_view key);
[[noreturn]] void wrong(const std::string& path, const char* wanted, const json& found);
// The member, or nullptr when it is absent (or null: a section not produced).
const json* member(const json& o, const std::string& path, std::string_view key);
std::string get_str(const json& o, const std::string& path, std::string_view key, const std::string& def = "");
bool get_bool(const json& o, const std::string& path, std::string_view key, bool def = false);

template <class Int>
Int get_int(const json& o, const std::string& path, std::string_view key, Int def = 0) {
  const json* v = member(o, path, key);
  if (!v) return def;
  if (!v->is_number_integer()) wrong(join(path, key), "an integer", *v);
  return v->get<Int>();
}

// A number; JSON has no NaN, so kqual writes a NaN as null: null reads back as NaN.
double as_double(const json& v, const std::string& path);
double get_double(const json& o, const std::string& path, std::string_view key, double def = 0);
std::vector<double> get_doubles(const json& o, const std::string& path, std::string_view key);
std::vector<std::string> get_strings(const json& o, const std::string& path, std::string_view key);
// Members of an array field, each with its path.
std::vector<std::pair<const json*, std::string>> get_items(const json& o, const std::string& path, std::string_view key);
// An object member kept as JSON ({} when absent).
json get_object(const json& o, const std::string& path, std::string_view key);
std::vector<json> get_json_array(const json& o, const std::string& path, std::string_view key);
PhaseList get_phases(const json& o, const std::string& path);
json phases_json(const PhaseList& p);
// The "schema" field: kqual.<command>/<version>, of one of the commands given.
std::string schema_command(const json& doc, std::initializer_list<std::string_view> commands);
// A "decision" word (ship, do_not_ship, ...), "incomplete" when absent.
decision::ShipVerdict get_ship_verdict(const json& o, const std::string& path);
// decision::to_json(QualifyVerdict) read back (its exit code is the verdict's).
decision::QualifyVerdict qualify_verdict_from_json(const json& v, const std::string& path);

}  // namespace kqual::report::read
