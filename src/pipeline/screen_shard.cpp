// kqual screen --shard I/N (which candidates a shard takes) and kqual screen merge (shards' results
// into one). docs/scale-out.md.
#include "kqual/pipeline/screen_shard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/pipeline/screen_journal.hpp"
#include "kqual/report/provenance.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

// A decimal number of at most 7 digits, or -1.
long small_number(const std::string& s) {
  if (s.empty() || s.size() > 7 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stol(s);
}

}  // namespace

std::string ShardSpec::text() const { return fmt::format("{}/{}", index, count); }

ShardSpec parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  const std::string usage = "give I/N with 0 <= I < N, shards numbered from 0 as Slurm's array task ids (e.g. 0/4 ... 3/4)";
  if (slash == std::string::npos)
    throw_error(ErrorKind::usage, fmt::format("--shard {}: not of the form I/N; {}", text, usage));
  const long i = small_number(text.substr(0, slash)), n = small_number(text.substr(slash + 1));
  if (i < 0 || n < 0)
    throw_error(ErrorKind::usage, fmt::format("--shard {}: I and N must be whole numbers; {}", text, usage));
  if (n < 1) throw_error(ErrorKind::usage, fmt::format("--shard {}: the shard count N must be at least 1", text));
  if (i >= n)
    throw_error(ErrorKind::usage, fmt::format("--shard {}: the index {} is not below the count {}; {}", text, i, n, usage));
  return ShardSpec{int(i), int(n)};
}

std::string candidate_content_sha256(const fs::path& dir) {
  std::vector<std::pair<std::string, fs::path>> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {  // editor and VCS litter is not the candidate
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.emplace_back(fs::relative(it->path(), dir).generic_string(), it->path());
  }
  if (ec) throw_error(ErrorKind::io, fmt::format("{}: cannot list the candidate folder: {}", dir.string(), ec.message()));
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& [rel, path] : files)
    text += fmt::format("{}\n{}\n{}\n", rel, fs::file_size(path), sha256_file_hex(path.string()));
  return sha256_hex(text);
}

int shard_of(const std::string& content_sha256, int count) {
  if (count <= 1) return 0;
  // The first 16 hex digits: 64 uniformly distributed bits.
  const unsigned long long h = std::stoull(content_sha256.substr(0, 16), nullptr, 16);
  return int(h % (unsigned long long)(count));
}

json ShardRecord::to_json() const {
  return json{{"index", spec.index},
              {"count", spec.count},
              {"spec", spec.text()},
              {"total", total},
              {"candidates_sha256", candidates_sha256},
              {"share_sizes", share_sizes}};
}

ShardRecord plan_shards(const ShardSpec& spec, const std::vector<fs::path>& candidates, std::vector<int>* which) {
  ShardRecord r;
  r.spec = spec;
  r.total = candidates.size();
  r.share_sizes.assign(std::size_t(spec.count), 0);
  std::vector<std::string> names;
  if (which) which->clear();
  for (const auto& c : candidates) {
    const int s = shard_of(candidate_content_sha256(c), spec.count);
    ++r.share_sizes[std::size_t(s)];
    if (which) which->push_back(s);
    names.push_back(c.string());
  }
  std::sort(names.begin(), names.end());
  r.candidates_sha256 = sha256_hex(fmt::format("{}", fmt::join(names, "\n")));
  return r;
}

MergeOutcome merge_screen(const MergeOptions& o) {
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  if (o.dirs.empty()) throw_error(ErrorKind::usage, "screen merge: no shard folder given");
  struct Shard {
    fs::path dir;
    json results;  // null when the folder has only a journal (its task did not finish)
    json options;
    json shard;
  };
  std::vector<Shard> shards;
  std::set<fs::path> seen_dirs;
  for (const auto& d : o.dirs) {
    const fs::path dir = fs::weakly_canonical(fs::absolute(d));
    if (!seen_dirs.insert(dir).second) continue;  // a folder given twice is one shard
    Shard s{dir, json(), json(), json()};
    const fs::path rj = dir / "results.json", jl = dir / "journal.jsonl";
    if (fs::exists(rj)) {
      try {
        s.results = json::parse(read_text_file(rj));
      } catch (const json::exception& e) {
        throw_error(ErrorKind::input, fmt::format("{}: not JSON ({})", rj.string(), e.what()));
      }
      if (!s.results.is_object() || s.results.value("schema", std::string()) != schema_header("screen").value("schema", std::string()))
        throw_error(ErrorKind::usage, fmt::format("{}: not the results of a kqual screen", rj.string()));
      s.options = s.results.value("options", json::object());
      s.shard = s.results.value("shard", json());
    } else if (fs::exists(jl)) {
      const ScreenJournal j = read_screen_journal(jl);
      s.options = j.header.is_null() ? json::object() : j.header.value("options", json::object());
      say(fmt::format("{}: no results.json (its task did not finish): its candidates count as missing", dir.string()));
    } else {
      throw_error(ErrorKind::usage, fmt::format("{}: holds neither results.json nor journal.jsonl: not a kqual screen --out folder",
                                                dir.string()));
    }
    if (!s.options.contains("shard"))
      throw_error(ErrorKind::usage, fmt::format("{}: not a sharded screen (run with --shard I/N); nothing to merge it with",
                                                dir.string()));
    shards.push_back(std::move(s));
  }
  // Every shard must have decided its verdicts the same way: same contract, seed, options, arch and
  // shard count (the index differs by design), and, where known, the same candidate list.
  const Shard* first = nullptr;
  for (const auto& s : shards)
    if (!s.results.is_null()) {
      first = &s;
      break;
    }
  if (!first) throw_error(ErrorKind::usage, "screen merge: no shard folder holds a results.json (no shard finished)");
  auto without_index = [](json opts) {
    const std::string spec = opts.value("shard", std::string());
    opts["shard"] = "I/" + spec.substr(spec.find('/') + 1);
    return opts;
  };
  const json base = without_index(first->options);
  for (const auto& s : shards) {
    const std::string diff = option_differences(base, without_index(s.options), display_name(first->dir), display_name(s.dir));
    if (!diff.empty())
      throw_error(ErrorKind::usage, fmt::format("screen merge: {} and {} were screened differently ({}): their verdicts do not "
                                                "belong in one result",
                                                first->dir.string(), s.dir.string(), diff));
    if (!s.results.is_null() && s.shard.value("candidates_sha256", "") != first->shard.value("candidates_sha256", ""))
      throw_error(ErrorKind::usage, fmt::format("screen merge: {} ({} candidates) and {} ({} candidates) were given different "
                                                "candidate lists: their shares do not partition one campaign",
                                                first->dir.string(), first->shard.value("total", 0), s.dir.string(),
                                                s.shard.value("total", 0)));
  }
  const int count = first->shard.value("count", 1);
  const std::vector<std::size_t> sizes = first->shard.value("share_sizes", std::vector<std::size_t>());

  // ---- verdicts: one per candidate folder; a second one is a duplicate ----
  MergeOutcome out;
  std::map<std::string, ScreenVerdict> by_candidate;
  std::set<int> finished;
  std::size_t conflicts = 0;
  json sources = json::array();
  for (const auto& s : shards) {
    const std::string spec = s.options.value("shard", std::string());
    json src{{"dir", s.dir.string()}, {"shard", spec}, {"finished", !s.results.is_null()}};
    if (s.results.is_null()) {
      sources.push_back(src);
      continue;
    }
    finished.insert(s.shard.value("index", -1));
    std::size_t rows = 0;
    for (const json& row : s.results.value("verdicts", json::array())) {
      ScreenVerdict v = ScreenVerdict::from_json(row);
      v.resumed = row.value("resumed", false);
      ++rows;
      auto [it, fresh] = by_candidate.emplace(v.candidate, v);
      if (!fresh) {
        ++out.duplicates;
        if (it->second.verdict != v.verdict || it->second.manifest_sha256 != v.manifest_sha256) ++conflicts;
      }
    }
    src["verdicts"] = rows;
    src["host"] = s.results.value("provenance", json::object()).value("host", json());
    sources.push_back(src);
  }
  json missing_shards = json::array();
  for (int k = 0; k < count; ++k)
    if (!finished.count(k)) {
      const std::size_t m = std::size_t(k) < sizes.size() ? sizes[std::size_t(k)] : 0;
      out.missing += m;
      missing_shards.push_back(json{{"shard", fmt::format("{}/{}", k, count)}, {"candidates", m}});
    }
  for (auto& [_, v] : by_candidate) out.verdicts.push_back(v);

  // ---- write ----
  const std::map<std::string, int> counts = verdict_counts(out.verdicts);
  json rows = json::array();
  for (const auto& v : out.verdicts) {
    json j = v.to_json();
    j["resumed"] = v.resumed;
    rows.push_back(j);
  }
  json options = first->options;
  options.erase("shard");
  json r = schema_header("screen");
  r["provenance"] = report::provenance(o.command_line, json());
  r["merged"] = json{{"shards", sources},
                     {"shard_count", count},
                     {"expected_candidates", first->shard.value("total", 0)},
                     {"duplicates", out.duplicates},
                     {"conflicting_duplicates", conflicts},
                     {"missing", out.missing},
                     {"missing_shards", missing_shards}};
  r["options"] = options;
  r["candidates"] = out.verdicts.size();
  r["counts"] = json{{"accepted", counts.at("accepted")}, {"rejected", counts.at("rejected")}, {"refused", counts.at("refused")},
                     {"incomplete", counts.at("incomplete")}, {"error", counts.at("error")}};
  r["verdicts"] = rows;

  std::string md = "# kqual screen (merged)\n\n";
  md += fmt::format("{} candidate(s) of {} expected, from {} of {} shard(s) — accepted {}, rejected {}, refused {}, incomplete {}{}; "
                    "{} duplicate verdict(s) dropped{}, {} candidate(s) missing.\n\n",
                    out.verdicts.size(), first->shard.value("total", 0), finished.size(), count, counts.at("accepted"),
                    counts.at("rejected"), counts.at("refused"), counts.at("incomplete"),
                    counts.at("error") ? fmt::format(", kqual errors {}", counts.at("error")) : std::string(), out.duplicates,
                    conflicts ? fmt::format(" ({} disagreeing)", conflicts) : std::string(), out.missing);
  for (const auto& m : missing_shards)
    md += fmt::format("- shard {} has no results: its {} candidate(s) are missing\n", m["shard"].get<std::string>(),
                      m["candidates"].get<std::size_t>());
  if (!missing_shards.empty()) md += "\n";
  md += screen_summary_table(out.verdicts);
  fs::create_directories(o.out_dir);
  out.results_path = o.out_dir / "results.json";
  out.summary_path = o.out_dir / "summary.md";
  write_file_atomic(out.results_path, r.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  write_file_atomic(out.summary_path, md);
  out.results = r;
  out.exit_code = screen_exit_code(counts, out.missing);
  return out;
}

}  // namespace kqual::pipeline
