// kqual replay, step 1: what results.json recorded (the candidate or both compare sides, the
// contract, the command line) and which case to replay.
#include <fmt/format.h>

#include <algorithm>

#include "kqual/check/evaluate.hpp"
#include "kqual/core/error.hpp"
#include "kqual/report/results.hpp"
#include "replay_internal.hpp"

namespace kqual::pipeline::replay_detail {
namespace {

std::string string_at(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
}

Recorded read_qualify_family(const json& doc, const std::string& schema) {
  const report::QualifyResult q = report::qualify_result_from_json(doc);
  Recorded r;
  r.schema = schema;
  r.command_line = string_at(q.provenance, "command_line");
  r.kqual_version = string_at(q.provenance, "kqual_version");
  r.git_revision = string_at(q.provenance, "git_revision");
  r.contract_name = q.contract.name;
  r.contract_origin = q.contract.origin;
  r.contract_file = q.contract.file;
  r.contract_sha256 = q.contract.file_sha256;
  if (!q.correctness)
    throw_error(ErrorKind::input, fmt::format("the correctness phase did not run in this {} run ({}): there is no failing case "
                                              "to replay",
                                              q.command, q.phases.has("correctness") ? q.phases.get("correctness") : "no correctness block"));
  RecordedSide s;
  s.label = "candidate";
  s.manifest = q.candidate.manifest;
  s.source = string_at(q.artifact, "source");
  s.source_sha256 = string_at(q.artifact, "source_sha256");
  s.correctness = *q.correctness;
  r.sides.push_back(std::move(s));
  return r;
}

Recorded read_compare(const json& doc) {
  const report::CompareResult c = report::compare_result_from_json(doc);
  Recorded r;
  r.schema = "kqual.compare/1";
  r.command_line = string_at(c.provenance, "command_line");
  r.kqual_version = string_at(c.provenance, "kqual_version");
  r.git_revision = string_at(c.provenance, "git_revision");
  if (!c.measured || !c.correctness.is_object() || !c.correctness.contains("old") || !c.correctness.contains("new"))
    throw_error(ErrorKind::input, "this compare result holds no correctness phase (it was not measured: no GPU?): there is no "
                                  "failing case to replay");
  if (!c.contract) throw_error(ErrorKind::input, "this compare result names no contract (prebuilt sides without a launch plan)");
  r.contract_name = c.contract->at("name").get<std::string>();
  const json source = c.contract->value("source", json::object());
  r.contract_origin = string_at(source, "origin");
  r.contract_file = string_at(source, "file");
  r.contract_sha256 = string_at(source, "sha256");
  for (const char* label : {"old", "new"}) {
    const json& side = c.sides.at(label);
    RecordedSide s;
    s.label = label;
    s.artifact = side.value("kind", std::string()) == "artifact";
    if (side.contains("manifest") && side.at("manifest").is_string()) s.manifest = side.at("manifest").get<std::string>();
    if (s.artifact) s.image_input = side.at("input").get<std::string>();
    if (side.contains("candidate") && side.at("candidate").is_object()) {
      s.source = string_at(side.at("candidate"), "source");
      s.source_sha256 = string_at(side.at("candidate"), "source_sha256");
    }
    if (s.manifest.empty())
      throw_error(ErrorKind::input, fmt::format("compare side {} records no manifest: nothing says how to launch it", label));
    s.correctness = c.correctness.at(label);
    r.sides.push_back(std::move(s));
  }
  return r;
}

// The cases a correctness block recorded: its failing cases (and every case with --all-cases).
const json& recorded_cases(const json& correctness) {
  static const json none = json::array();
  if (correctness.contains("failing_cases")) return correctness.at("failing_cases");
  if (correctness.contains("case_results")) return correctness.at("case_results");
  return none;
}

std::vector<std::string> failing_ids(const RecordedSide& s) {
  std::vector<std::string> ids;
  for (const auto& e : recorded_cases(s.correctness))
    if (e.value("status", std::string()) == "fail" && !check::is_sanitizer_finding_id(e.value("id", std::string())))
      ids.push_back(e.at("id").get<std::string>());
  return ids;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The default case of a compare: the first that fails on NEW only, else on OLD only, else on both.
std::string compare_default_case(const Recorded& r, std::vector<std::string>& notes) {
  const std::vector<std::string> old_fail = failing_ids(r.sides[0]), new_fail = failing_ids(r.sides[1]);
  for (const auto& id : new_fail)
    if (!has(old_fail, id)) return id;
  for (const auto& id : old_fail)
    if (!has(new_fail, id)) return id;
  if (!new_fail.empty()) {
    notes.push_back("no case fails on one side only: every failing case fails on both OLD and NEW; this is NEW's first");
    return new_fail.front();
  }
  return {};
}

}  // namespace

Recorded read_recorded(const json& doc) {
  const std::string schema = doc.is_object() ? doc.value("schema", std::string()) : std::string();
  const auto name = parse_schema_name(schema);
  if (name && (name->command == "qualify" || name->command == "check" || name->command == "bench"))
    return read_qualify_family(doc, schema);
  if (name && name->command == "compare") return read_compare(doc);
  throw_error(ErrorKind::input,
              fmt::format("replay reads the results of kqual qualify, check or compare; this is {}", schema.empty() ? "no kqual results document (no \"schema\")" : "a " + schema + " document"));
}

json pick_case(Recorded& r, const std::string& id, std::vector<std::string>& notes) {
  std::string want = id;
  if (want.empty()) {
    want = r.sides.size() == 2 ? compare_default_case(r, notes) : (failing_ids(r.sides[0]).empty() ? "" : failing_ids(r.sides[0])[0]);
    if (want.empty()) {
      const json& c = r.sides.back().correctness;
      throw_error(ErrorKind::input, fmt::format("no failing case: the correctness phase {} ({} of {} cases passed){}", r.sides.size() == 2 ? "of both sides accepted them" : "was " + c.value("verdict", std::string("?")),
                                                c.value("passed", 0), c.value("cases", 0),
                                                c.value("harness_errors", 0) > 0 ? "; cases kqual could not run are not failures of the kernel" : ""));
    }
  }
  if (check::is_sanitizer_finding_id(want)) {
    std::string detail;
    for (const auto& s : r.sides)
      for (const auto& e : recorded_cases(s.correctness))
        if (e.value("id", std::string()) == want && detail.empty()) detail = e.value("detail", std::string());
    throw_error(ErrorKind::input,
                fmt::format("--case '{}' is compute-sanitizer's finding over small cases that each passed on their own{}: no case "
                            "fails alone, so there is nothing to replay. `kqual check` of the candidate with the recorded seed "
                            "finds it again (its sanitizer pass), or replay a case that passed under compute-sanitizer by hand "
                            "(docs/replay.md)",
                            want, detail.empty() ? "" : " (" + detail + ")"));
  }
  json picked;
  for (auto& s : r.sides) {
    s.entry = json();
    for (const auto& e : recorded_cases(s.correctness)) {
      if (e.value("id", std::string()) != want) continue;
      const std::string status = e.value("status", std::string());
      if (status != "fail")
        throw_error(ErrorKind::input, fmt::format("--case '{}' did not fail{} in the recorded run (status {}, {}): replay "
                                                  "reproduces failing cases",
                                                  want, r.sides.size() == 2 ? " on " + s.label : "", status, e.value("detail", std::string())));
      s.entry = e;
      if (picked.is_null()) picked = e;
    }
  }
  if (picked.is_null()) {
    std::vector<std::string> all;
    for (const auto& s : r.sides)
      for (const auto& f : failing_ids(s))
        if (!has(all, f)) all.push_back(f);
    throw_error(ErrorKind::input, fmt::format("--case '{}': the results record no such case; the failing cases are: {}", want,
                                              all.empty() ? std::string("none") : fmt::format("{}", fmt::join(all, ", "))));
  }
  return picked;
}

contract::CaseSpec spec_of(const json& entry) {
  contract::CaseSpec s;
  s.id = entry.at("id").get<std::string>();
  s.family = entry.at("family").get<std::string>();
  const std::string dtype = entry.at("dtype").get<std::string>();
  const auto t = parse_dtype(dtype);
  if (!t) throw_error(ErrorKind::input, fmt::format("case '{}': unknown dtype '{}'", s.id, dtype));
  s.dtype = *t;
  for (const auto& [k, v] : entry.at("dims").items()) s.dims[k] = v.get<std::int64_t>();
  s.offset_elements = entry.value("offset_elements", std::int64_t(0));
  s.seed = entry.at("seed").get<std::uint64_t>();
  return s;
}

}  // namespace kqual::pipeline::replay_detail
