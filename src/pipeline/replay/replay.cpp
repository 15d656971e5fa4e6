// kqual replay (replay.hpp): the recorded case picked, the candidate and contract found unchanged,
// the case checked to be the one the run's seed makes, then the folder written beside its target
// and renamed into place: whole or not at all.
#include "kqual/pipeline/replay.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <sstream>

#include "kqual/check/evaluate.hpp"
#include "kqual/check/labels.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/version.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "replay_internal.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;
using namespace replay_detail;

namespace {

// The recorded case is the one the contract makes under the run's seed for these claims: the
// README's command then runs exactly it. Error(input) otherwise.
void require_same_case(const contract::Contract& c, const build::Manifest& m, const std::string& label, std::uint64_t seed,
                       const std::string& command_line, const contract::CaseSpec& recorded) {
  const auto made = check::find_case(c, m.supports, seed, recorded.id);
  const std::string where = fmt::format("under seed {} (the recorded command line: '{}')", seed, command_line);
  if (!made)
    throw_error(ErrorKind::input, fmt::format("case '{}' is not a case of contract {} for {}'s claims {}: the manifest's claims "
                                              "or the contract changed since the run",
                                              recorded.id, c.name(), label, where));
  if (made->seed != recorded.seed || made->dims != recorded.dims || made->dtype != recorded.dtype || made->family != recorded.family ||
      made->offset_elements != recorded.offset_elements)
    throw_error(ErrorKind::input, fmt::format("case '{}' {} is made with case seed {} and dims {}; the results recorded seed {} and "
                                              "dims {}: the case would not be the run's",
                                              recorded.id, where, made->seed, json(made->dims).dump(), recorded.seed,
                                              json(recorded.dims).dump()));
}

// The target folder: absent, or an empty folder (replaced). Error(input) otherwise, before anything is written.
void require_free_target(const fs::path& dir) {
  if (dir.empty()) throw_error(ErrorKind::usage, "--out DIR is required: the folder the reproducer is written to");
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec) || !fs::is_empty(dir, ec))
    throw_error(ErrorKind::input, fmt::format("--out {}: already exists and is not an empty folder; choose another or remove it", dir.string()));
}

json failing_record(const Recorded& r) {
  json j = json::object();
  for (const auto& s : r.sides) {
    if (s.entry.is_null()) {
      j[s.label] = {{"status", "pass"}, {"note", "not among this side's failing cases in the recorded run"}};
      continue;
    }
    json e{{"status", "fail"}, {"code", s.entry.value("code", std::string())}, {"detail", s.entry.value("detail", std::string())}};
    for (const char* k : {"debug", "failing_elements", "run_to_run", "input_sha256", "reference"})
      if (s.entry.contains(k)) e[k] = s.entry.at(k);
    j[s.label] = e;
  }
  return j;
}

// Everything under `tmp`: the sides, the contract, the case, the records and the README.
void write_folder(const fs::path& tmp, const fs::path& target, const Recorded& r, const std::vector<build::Manifest>& manifests,
                  const contract::CaseSpec& spec, const json& entry, const ReplayOptions& o, ReplayOutcome& out) {
  const contract::Contract& c = manifests.front().resolved_contract();
  for (std::size_t i = 0; i < manifests.size(); ++i) {
    if (o.progress) o.progress("copy: " + r.sides[i].label + " from " + manifests[i].dir.string());
    (void)copy_side(manifests[i], r.sides[i], tmp / r.sides[i].label, out.notes);
    // The rewritten manifest reads, its copied source or image found beside it (a contract it named by
    // path is named by its name in the copy: found in contracts/ by the README's command only).
    if (!contract::contract_value_is_path(build::manifest_contract_value(manifests[i].file)))
      (void)build::load_manifest(tmp / r.sides[i].label, recorded_contract_lookup(r, o),
                                 r.sides[i].artifact ? build::ManifestUse::launch_plan : build::ManifestUse::candidate);
  }
  const bool contract_copied = copy_contract(c, tmp / "contracts");
  for (const auto& s : r.sides) out.commands.push_back(check_command(s.label, spec.id, out.run_seed, contract_copied));
  std::vector<json> hashes;
  for (const auto& s : r.sides)
    if (s.entry.is_object() && s.entry.contains("input_sha256")) hashes.push_back(s.entry.at("input_sha256"));
  CaseFiles files = write_case(c, spec, hashes, tmp, o.max_bytes, o.progress);
  out.tensors = files.tensors;
  out.generated_on_device = !files.generated.is_null();
  out.inputs_verified = files.inputs_verified;
  out.notes.insert(out.notes.end(), files.notes.begin(), files.notes.end());
  out.dir = target;
  write_file_atomic(tmp / "layout.json", files.layout.dump(2) + "\n");
  write_file_atomic(tmp / "failing.json", failing_record(r).dump(2) + "\n");
  json case_doc = schema_header("replay");
  case_doc.update(out.to_json());
  case_doc["case"] = {{"id", spec.id}, {"dtype", std::string(to_string(spec.dtype))}, {"dims", spec.dims}, {"family", spec.family},
                      {"offset_elements", spec.offset_elements}, {"seed", spec.seed}};
  case_doc["contract"] = {{"name", r.contract_name}, {"origin", r.contract_origin}, {"file", r.contract_file.string()},
                          {"sha256", r.contract_sha256}, {"copied", contract_copied}};
  case_doc["recorded_command_line"] = r.command_line;
  if (!files.generated.is_null()) case_doc["generated"] = files.generated;
  write_file_atomic(tmp / "case.json", case_doc.dump(2) + "\n");
  write_file_atomic(tmp / "README.md", readme_text(ReadmeFacts{r, spec, entry, out, files, contract_copied}));
}

}  // namespace

json ReplayOutcome::to_json() const {
  json t = json::array();
  for (const auto& x : tensors)
    t.push_back({{"name", x.name}, {"role", x.role}, {"dtype", x.dtype}, {"npy_dtype", x.npy_dtype}, {"shape", x.shape},
                 {"elements", x.elements}, {"bytes", x.bytes}, {"npy", x.npy}, {"raw", x.raw}, {"sha256", x.sha256}});
  return json{{"dir", dir.string()},       {"results_schema", schema},           {"case_id", case_id},
              {"code", code},              {"expect_code", expect_code},         {"run_seed", run_seed},   {"sides", sides},
              {"commands", commands},      {"tensors", t},                       {"generated_on_device", generated_on_device},
              {"inputs_verified", inputs_verified}, {"notes", notes}};
}

std::uint64_t recorded_run_seed(const std::string& command_line) {
  std::istringstream in(command_line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  std::string text;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "--seed" && i + 1 < words.size()) text = words[i + 1];
    if (words[i].rfind("--seed=", 0) == 0) text = words[i].substr(7);
  }
  if (text.empty()) return QualifyOptions{}.seed;  // check, qualify and compare share this default
  try {
    std::size_t used = 0;
    const std::uint64_t v = std::stoull(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw_error(ErrorKind::input, fmt::format("the recorded command line gives --seed '{}', not a number", text));
}

ReplayOutcome replay(const json& doc, const ReplayOptions& o) {
  const auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  require_free_target(o.out_dir);
  ReplayOutcome out;
  Recorded r = read_recorded(doc);
  out.schema = r.schema;
  const json entry = pick_case(r, o.case_id, out.notes);
  const contract::CaseSpec spec = spec_of(entry);
  out.case_id = spec.id;
  for (const auto& s : r.sides) {
    out.sides.push_back(s.label);
    if (out.code.empty() && s.entry.is_object()) out.code = s.entry.value("code", std::string());
  }
  out.expect_code = out.code;
  if (out.code == "index_overflow") {
    for (const auto& s : r.sides)
      if (s.entry.is_object() && s.entry.value("code", std::string()) == "index_overflow")
        out.expect_code = check::index_overflow_fault(s.entry.value("detail", std::string()));
    out.notes.push_back(fmt::format("index_overflow is the run's diagnosis over its cases (this one failed while every smaller case "
                                    "passed); run alone with --case, the case fails with its own fault{}",
                                    out.expect_code.empty() ? " (not named in the recorded detail)" : ": " + out.expect_code));
  }
  say(fmt::format("case {} ({})", spec.id, out.code));
  // Another kqual recorded it: a built-in contract's rules (its error model, its run-to-run rule)
  // may have changed since, so the recorded failure may no longer be one.
  if (r.git_revision != git_revision())
    out.notes.push_back(fmt::format("recorded by kqual {} (revision {}), replayed by kqual {} (revision {}): the rules that judged "
                                    "the case (a built-in contract's error model or run-to-run rule) may have changed since, so "
                                    "the command may no longer fail with `{}`",
                                    r.kqual_version.empty() ? "?" : r.kqual_version, r.git_revision.empty() ? "?" : r.git_revision,
                                    kVersion, git_revision(), out.expect_code));

  // The candidates and the contract, where the run found them and unchanged since.
  const contract::ContractLookup contracts = recorded_contract_lookup(r, o);
  std::vector<build::Manifest> manifests;
  for (const auto& s : r.sides) manifests.push_back(load_side(s, contracts));
  for (const auto& m : manifests) require_recorded_contract(m.resolved_contract(), r, contracts);
  const contract::Contract& c = manifests.front().resolved_contract();
  out.run_seed = recorded_run_seed(r.command_line);
  for (std::size_t i = 0; i < manifests.size(); ++i) require_same_case(c, manifests[i], r.sides[i].label, out.run_seed, r.command_line, spec);

  // Written beside the target and renamed at the end: a failure leaves nothing behind.
  const fs::path target = fs::absolute(o.out_dir).lexically_normal();
  const fs::path parent = target.parent_path();
  fs::create_directories(parent);
  const fs::path tmp = parent / fmt::format(".{}.replay-{}", target.filename().string(), ::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp);
  try {
    write_folder(tmp, target, r, manifests, spec, entry, o, out);
    if (fs::exists(target, ec)) fs::remove(target);  // an empty folder (require_free_target)
    fs::rename(tmp, target);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  say("wrote " + target.string());
  return out;
}

}  // namespace kqual::pipeline
