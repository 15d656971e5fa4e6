#pragma once
// Recorded results for kqual replay's tests, made by the real writers without a GPU: `kqual check
// --no-gpu` (pipeline::qualify) and `kqual compare --no-gpu` (compare::run_compare) give the static
// document; the correctness block is a check::CorrectnessReport holding a real case of the contract
// (check::find_case under the recorded seed), failing as the check records it — its input hashes from
// the contract's own make_case — turned into JSON by CorrectnessReport::to_json, as a GPU run does.
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kqual/build/manifest.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/report/results.hpp"
#include "test_util.hpp"

namespace kqual::test::replay {
namespace fs = std::filesystem;

// The case `id` of the candidate's contract under `seed`, as the check makes it.
inline contract::CaseSpec case_of(const fs::path& candidate, std::uint64_t seed, const std::string& id) {
  const build::Manifest m = build::load_manifest(candidate);
  auto spec = check::find_case(m.resolved_contract(), m.supports, seed, id);
  if (!spec) throw std::runtime_error("no case " + id);
  return *spec;
}

// A failing case as the check records it: code, detail, the inputs' SHA-256 (host-made cases) and the
// first offending element.
inline check::CaseResult failing(const contract::Contract& c, const contract::CaseSpec& spec, const std::string& code,
                                 bool with_hashes = true) {
  check::CaseResult r;
  r.spec = spec;
  r.status = check::CaseStatus::fail;
  r.code = code;
  r.detail = "run 1 (poison 0xff): 1 element of 'y' still holds the poison; first: y[256]";
  r.reference = "cpu";
  r.wall_ms = 3.5;
  if (with_hashes && spec.family != contract::kGeneratedFamily)
    for (const auto& t : c.make_case(spec).inputs) r.input_sha256[t.name] = sha256_hex(t.bytes.data(), t.bytes.size());
  r.failing_elements = json::array({json{{"output", "y"}, {"run", 1}, {"index", 256}, {"expected", "0.5 (0x3f000000)"},
                                         {"actual", "nan (0xffffffff)"}}});
  return r;
}

// The correctness block of a run: `passed` passing cases and the failing ones, in run order.
inline json correctness(const std::string& name, const std::vector<check::CaseResult>& fails, int passed = 40) {
  check::CorrectnessReport rep;
  rep.candidate = name;
  for (int i = 0; i < passed; ++i) {
    check::CaseResult p;
    p.spec.id = fmt::format("f32/n={}/normal", i + 1);
    p.status = check::CaseStatus::pass;
    rep.results.push_back(p);
  }
  for (const auto& f : fails) {
    rep.results.push_back(f);
    ++rep.failure_codes[f.code];
  }
  rep.cases = int(rep.results.size());
  rep.passed = rep.evidence = passed;
  rep.failed = int(fails.size());
  return rep.to_json(false);
}

// `kqual check --seed SEED CANDIDATE` as recorded: the static document of the real command, with the
// correctness block a GPU run would have written.
inline json check_results(const fs::path& candidate, const fs::path& scratch, std::uint64_t seed, const std::vector<check::CaseResult>& fails,
                          int passed = 40) {
  pipeline::QualifyOptions o;
  o.candidate = candidate;
  o.out_dir = scratch / "check-out";
  o.use_gpu = false;
  o.command = "check";
  o.seed = seed;
  o.command_line = fmt::format("kqual check {} --seed {}", candidate.string(), seed);
  report::QualifyResult r = report::qualify_result_from_json(pipeline::qualify(o).results);
  r.correctness = correctness(r.candidate.name, fails, passed);
  return report::to_json(r);
}

// `kqual compare OLD NEW` as recorded, measured: both sides' correctness blocks.
inline json compare_results(const fs::path& old_dir, const fs::path& new_dir, const fs::path& scratch, const json& old_report,
                            const json& new_report) {
  compare::CompareOptions o;
  o.old_side.input = old_dir.string();
  o.new_side.input = new_dir.string();
  o.use_gpu = false;
  o.out_dir = scratch / "compare-out";
  o.command_line = fmt::format("kqual compare {} {}", old_dir.string(), new_dir.string());
  report::CompareResult r = report::compare_result_from_json(compare::run_compare(o).results);
  r.measured = true;
  r.correctness = json{{"old", old_report}, {"new", new_report}};
  return report::to_json(r);
}

// A .npy file read back: its header's dict and its data.
struct Npy {
  std::string header;
  std::vector<std::uint8_t> data;
};
inline Npy read_npy(const fs::path& p) {
  const std::string bytes = read_text_file(p);
  Npy n;
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0 || bytes[6] != 1 || bytes[7] != 0) return n;
  const std::size_t len = std::size_t(static_cast<unsigned char>(bytes[8])) | std::size_t(static_cast<unsigned char>(bytes[9])) << 8;
  n.header = bytes.substr(10, len);
  n.data.assign(bytes.begin() + std::ptrdiff_t(10 + len), bytes.end());
  return n;
}

inline std::vector<std::uint8_t> file_bytes(const fs::path& p) {
  const std::string s = read_text_file(p);
  return {s.begin(), s.end()};
}

inline void write_json(const fs::path& p, const json& doc) { std::ofstream(p) << doc.dump(2) << "\n"; }

// A copy of a bundled candidate folder (its manifest and source) under `to`, for tests that move or
// edit it.
inline fs::path copy_candidate(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) fs::copy_file(e.path(), to / e.path().filename());
  return to;
}

}  // namespace kqual::test::replay
