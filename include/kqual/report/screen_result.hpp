#pragma once
// kqual screen's results as types (schema kqual.screen/1, docs/screen.md): one candidate's verdict as
// the journal and results.json hold it, the counts per verdict, and the whole document of a screen
// run or of `kqual screen merge`. The pipeline (src/pipeline/screen/) fills them; summary.md and
// ranking.html are rendered from them (src/report/screen_summary.cpp); JSON only at the edge
// (src/report/screen_result.cpp), with to_json(screen_result_from_json(doc)) == doc, key order
// included (tests/report/screen_result_test.cpp).
//
// Blocks kept as `json`: the provenance, the options that decide a verdict, a shard's record, the
// contracts, a merge's record and the ranking (each only ever JSON), and a verdict's speed record.
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/json.hpp"

namespace kqual::report {

// What screen says of one candidate; its word is the verdict in the journal, results.json and
// summary.md.
enum class ScreenVerdictKind {
  accepted,    // every case passed, with evidence
  rejected,    // a case failed, the module did not load, or its worker broke down
  refused,     // never reached the GPU: manifest invalid, build failed, the wrong contract
  incomplete,  // not judged: no GPU, no GPU left, or kqual's own failure on its cases
  error,       // kqual itself failed on this candidate
};
inline constexpr EnumNames<ScreenVerdictKind, 5> kScreenVerdictNames{{{{ScreenVerdictKind::accepted, "accepted"},
                                                                       {ScreenVerdictKind::rejected, "rejected"},
                                                                       {ScreenVerdictKind::refused, "refused"},
                                                                       {ScreenVerdictKind::incomplete, "incomplete"},
                                                                       {ScreenVerdictKind::error, "error"}}}};
inline const char* to_string(ScreenVerdictKind k) { return kScreenVerdictNames.name(k); }

// The verdict of one candidate, as journaled.
struct ScreenVerdict {
  std::string candidate;         // the folder, absolute
  std::string name;              // the folder's name (copies of one manifest share the manifest's name)
  std::string manifest_sha256;   // of kqual.toml; "" when it could not be read
  std::string key;               // of everything that decides the verdict (screen_key.hpp); "" = never reused
  ScreenVerdictKind verdict = ScreenVerdictKind::incomplete;
  std::string reason;            // one line: primary failure code, refusal kind, why incomplete
  std::map<std::string, int> codes;  // failure codes (rejected) or the refusal kind (refused)
  std::string detail;            // first failure's detail, the refusal's message
  std::string contract;
  double wall_ms = 0;            // build + checks of this candidate
  double compile_ms = 0;
  std::string finished;          // UTC time the verdict was journaled
  bool resumed = false;          // taken from the journal, not run by this invocation (results.json only)
  int gpu = -1;                  // with --gpus: the GPU (ordinal in PCI bus order) whose worker judged it
  json speed;                    // --timing, an accepted candidate: the speed record (screen_timing.hpp); null otherwise
  json to_json() const;          // the journal's line (no "resumed")
  // Error(input) when a field is missing or the verdict is not one of kScreenVerdictNames' words.
  static ScreenVerdict from_json(const json& j);
};

// Verdicts per kind.
struct ScreenCounts {
  std::array<int, kScreenVerdictNames.entries.size()> n{};
  int operator[](ScreenVerdictKind k) const { return n[std::size_t(k)]; }
  json to_json() const;  // {"accepted": 3, "rejected": 1, ...}: every kind, in kScreenVerdictNames' order
  bool operator==(const ScreenCounts&) const = default;
};
ScreenCounts verdict_counts(const std::vector<ScreenVerdict>& verdicts);

// One GPU of a --gpus screen: which it was, and what its lanes did.
struct ScreenGpu {
  int ordinal = -1;  // PCI bus order
  std::string pci_bus_id, cuda_visible_devices;
  json device;       // the device's record (name, memory, clocks ...)
  int judged = 0, worker_faults = 0, worker_processes_started = 0;
  std::string retired;  // why the GPU was taken out of the screen; "" = it served to the end (null in JSON)
};

// What one screen invocation did; a merge's document has none of it.
struct ScreenRunFacts {
  std::string journal;  // the journal's path
  bool device_present = false;
  std::string why_no_gpu;
  // --gpus: every GPU used (ordinals in PCI bus order), and those that could not be (ordinal, bus id, why).
  std::optional<std::vector<ScreenGpu>> gpus;
  json gpus_unavailable = json::array();
  std::optional<json> shard;  // --shard: the shard's record (screen_shard.hpp) with "not_in_list"
  std::size_t resumed = 0, run = 0;  // verdicts taken from the journal; candidates judged by this invocation
  int compile_threads = 0;
  double wall_s = 0;
  std::optional<double> candidates_per_hour;  // of this invocation, by wall time; none when nothing ran
  int worker_processes_started = 0, workers_per_gpu = 1;
  std::vector<std::string> not_candidates;  // scanned folders without kqual.toml
  json contracts = json::object();          // each contract once: origin, file, sha256
};

struct ScreenResult {
  json provenance;
  // screen merge: the shards read (dir, shard, finished, verdicts, host), shard_count,
  // expected_candidates, duplicates, missing, missing_candidates, missing_shards (shard, candidates), list.
  std::optional<json> merged;
  json options = json::object();  // the options that decide a verdict (a merge's without "shard")
  std::optional<ScreenRunFacts> run;
  std::size_t candidates = 0;
  ScreenCounts counts;
  std::vector<ScreenVerdict> verdicts;  // in candidate order (a merge's sorted by folder)
  std::optional<json> ranking;          // --timing: the campaign ranked (pipeline::screen_ranking)
};

json to_json(const ScreenResult& r);
// Error(input) naming the field when the document is not a screen document kqual wrote.
ScreenResult screen_result_from_json(const json& doc);

// ---- renderers (src/report/screen_summary.cpp) ----

// summary.md: the run's (or the merge's) header, every verdict in a table, and the ranking under --timing.
std::string render_screen_summary_md(const ScreenResult& r);
// The verdicts' table, one row each.
std::string screen_summary_table(const std::vector<ScreenVerdict>& verdicts);
// The ranking's section of summary.md.
std::string render_screen_ranking_md(const json& ranking);
// ranking.html: a static page (no script) with the ranking table, and every verdict.
std::string render_screen_ranking_html(const json& ranking, const std::vector<ScreenVerdict>& verdicts);

}  // namespace kqual::report
