// kqual screen --shard I/N (which candidates a shard takes) and kqual screen merge (shards' results
// into one). docs/scale-out.md.
#include "kqual/pipeline/screen_shard.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/pipeline/screen_journal.hpp"
#include "kqual/pipeline/screen_timing.hpp"
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

json ShardRecord::to_json() const {
  return json{{"index", spec.index},
              {"count", spec.count},
              {"spec", spec.text()},
              {"total", total},
              {"candidates_sha256", candidates_sha256},
              {"list", list.string()},
              {"share_sizes", share_sizes}};
}

namespace {

constexpr const char* kShardListSchema = "kqual.screen-shard-list/1";

std::string list_sha256(const std::vector<std::string>& names, const std::vector<int>& shard) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) text += fmt::format("{}\t{}\n", names[i], shard[i]);
  return sha256_hex(text);
}

}  // namespace

fs::path default_shard_list(const fs::path& shard_out_dir, int count) {
  return fs::absolute(shard_out_dir).lexically_normal().parent_path() / fmt::format("shard-list-{}.json", count);
}

ShardList read_shard_list(const fs::path& file) {
  ShardList l;
  l.file = file;
  json j;
  try {
    j = json::parse(read_text_file(file));
    if (j.value("schema", std::string()) != kShardListSchema) throw std::runtime_error("no schema " + std::string(kShardListSchema));
    l.count = j.at("count").get<int>();
    for (const json& e : j.at("candidates")) {
      l.candidates.push_back(e.at("candidate").get<std::string>());
      l.shard.push_back(e.at("shard").get<int>());
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw_error(ErrorKind::input, fmt::format("{}: not a kqual screen candidate list ({})", file.string(), e.what()));
  }
  l.sha256 = list_sha256(l.candidates, l.shard);
  return l;
}

ShardList open_shard_list(const fs::path& file, int count, const std::vector<fs::path>& candidates, bool* created) {
  if (created) *created = false;
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    std::vector<std::string> names;
    for (const auto& c : candidates) names.push_back(c.string());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    json rows = json::array();
    for (std::size_t i = 0; i < names.size(); ++i)
      rows.push_back(json{{"candidate", names[i]}, {"name", display_name(names[i])}, {"shard", int(i % std::size_t(count))}});
    const json j{{"schema", kShardListSchema}, {"count", count}, {"created", utc_now()}, {"candidates", rows}};
    // Written aside, then linked into place: link() fails when another task's list got there first,
    // and then that one is the campaign's.
    fs::create_directories(file.parent_path());
    const fs::path tmp = file.string() + fmt::format(".{}.list", ::getpid());
    write_file_atomic(tmp, j.dump(1) + "\n");
    const int rc = ::link(tmp.c_str(), file.c_str());
    const int err = errno;
    fs::remove(tmp, ec);
    if (rc == 0 && created) *created = true;
    if (rc != 0 && err != EEXIST)
      throw_error(ErrorKind::io, fmt::format("{}: cannot write the campaign's candidate list: {}", file.string(), std::strerror(err)));
  }
  ShardList l = read_shard_list(file);
  if (l.count != count)
    throw_error(ErrorKind::usage, fmt::format("{} deals the candidates into {} shard(s), not {}: use the campaign's shard count, "
                                              "or another campaign folder (--shard-list FILE)",
                                              file.string(), l.count, count));
  return l;
}

ShardRecord plan_shards(const ShardSpec& spec, const ShardList& list, std::vector<fs::path>* mine) {
  ShardRecord r;
  r.spec = spec;
  r.total = list.candidates.size();
  r.list = list.file;
  r.candidates_sha256 = list.sha256;
  r.share_sizes.assign(std::size_t(spec.count), 0);
  if (mine) mine->clear();
  for (std::size_t i = 0; i < list.candidates.size(); ++i) {
    const int s = list.shard[i];
    if (s < 0 || s >= spec.count)
      throw_error(ErrorKind::input, fmt::format("{}: candidate {} is in shard {} of {}", list.file.string(), list.candidates[i], s, spec.count));
    ++r.share_sizes[std::size_t(s)];
    if (mine && s == spec.index) mine->push_back(list.candidates[i]);
  }
  return r;
}

namespace {

// results.json and summary.md of a merge (`merged`: the record results.json keeps under "merged"),
// from one typed result as a run's are.
void write_merged(const MergeOptions& o, const json& shard_options, json merged, MergeOutcome& out) {
  report::ScreenResult r;
  r.provenance = report::provenance(o.command_line, json());
  r.merged = std::move(merged);
  r.options = shard_options;
  r.options.erase("shard");
  r.candidates = out.verdicts.size();
  r.counts = verdict_counts(out.verdicts);
  r.verdicts = out.verdicts;
  // Shards screened with --timing: one ranking over every shard's timed verdicts.
  if (shard_options.contains("timing")) r.ranking = screen_ranking(out.verdicts);
  std::vector<ResultFile> files{{"summary.md", report::render_screen_summary_md(r)}};
  if (r.ranking) files.push_back({"ranking.html", report::render_screen_ranking_html(*r.ranking, r.verdicts)});
  out.results = report::to_json(r);
  const Written w = write_results(o.out_dir, out.results, files);
  out.results_path = w.results;
  out.summary_path = w.files.at(0);
  out.exit_code = screen_exit_code(r.counts, out.missing);
}

}  // namespace

namespace {

// One folder given to screen merge.
struct MergeShard {
  std::filesystem::path dir;
  json results;  // null when the folder has only a journal (its task did not finish)
  std::optional<report::ScreenResult> result;  // results.json read back
  json options;
  json shard;
};

// Each folder once: its results.json, or (a task that did not finish) its journal's options.
std::vector<MergeShard> read_merge_shards(const MergeOptions& o, const std::function<void(const std::string&)>& say) {
  if (o.dirs.empty()) throw_error(ErrorKind::usage, "screen merge: no shard folder given");
  std::vector<MergeShard> shards;
  std::set<fs::path> seen_dirs;
  for (const auto& d : o.dirs) {
    const fs::path dir = fs::weakly_canonical(fs::absolute(d));
    if (!seen_dirs.insert(dir).second) continue;  // a folder given twice is one shard
    MergeShard s{dir, json(), std::nullopt, json(), json()};
    const fs::path rj = dir / "results.json", jl = dir / "journal.jsonl";
    if (fs::exists(rj)) {
      try {
        s.results = json::parse(read_text_file(rj));
      } catch (const json::exception& e) {
        throw_error(ErrorKind::input, fmt::format("{}: not JSON ({})", rj.string(), e.what()));
      }
      if (!s.results.is_object() || s.results.value("schema", std::string()) != schema_header("screen").value("schema", std::string()))
        throw_error(ErrorKind::usage, fmt::format("{}: not the results of a kqual screen", rj.string()));
      try {
        s.result = report::screen_result_from_json(s.results);
      } catch (const Error& e) {
        throw_error(ErrorKind::input, fmt::format("screen merge: {}: {}", rj.string(), e.what()));
      }
      s.options = s.result->options;
      s.shard = s.result->run && s.result->run->shard ? *s.result->run->shard : json();
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
  return shards;
}

// Every shard must have decided its verdicts the same way: same contract, seed, options, arch and
// shard count (the index differs by design), and, where known, the same candidate list. Returns the
// first finished shard, which the others are held to.
const MergeShard& merge_shards_agree(const std::vector<MergeShard>& shards) {
  const MergeShard* first = nullptr;
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
  return *first;
}

// The campaign's list names every candidate and its shard: the one truth a merge checks against.
ShardList merge_campaign_list(const MergeShard& first) {
  const fs::path list_file = first.shard.value("list", std::string());
  if (list_file.empty() || !fs::exists(list_file))
    throw_error(ErrorKind::usage, fmt::format("screen merge: {} names no readable candidate list ({}): the campaign's list is "
                                              "needed to name what is missing",
                                              first.dir.string(), list_file.empty() ? "none recorded" : list_file.string()));
  ShardList list = read_shard_list(list_file);
  if (list.sha256 != first.shard.value("candidates_sha256", ""))
    throw_error(ErrorKind::usage, fmt::format("screen merge: {} was edited after {} was screened from it: its shares no longer "
                                              "say which shard judged which candidate",
                                              list_file.string(), first.dir.string()));
  return list;
}

// The verdicts of the finished shards, one per candidate folder, each from the shard the list gives
// it; a copy of a shard's verdicts counted as duplicates. Returns "shards": each folder as read.
json collect_merged_verdicts(const std::vector<MergeShard>& shards, const ShardList& list, int count,
                             std::map<std::string, ScreenVerdict>& by_candidate, std::set<int>& finished, MergeOutcome& out) {
  std::map<std::string, int> assigned;
  for (std::size_t i = 0; i < list.candidates.size(); ++i) assigned[list.candidates[i]] = list.shard[i];
  std::map<std::string, fs::path> from_dir;
  json sources = json::array();
  for (const auto& s : shards) {
    const std::string spec = s.options.value("shard", std::string());
    json src{{"dir", s.dir.string()}, {"shard", spec}, {"finished", !s.results.is_null()}};
    if (s.results.is_null()) {
      sources.push_back(src);
      continue;
    }
    const int index = s.shard.value("index", -1);
    finished.insert(index);
    std::size_t rows = 0;
    for (const ScreenVerdict& v : s.result->verdicts) {
      ++rows;
      const auto a = assigned.find(v.candidate);
      if (a == assigned.end() || a->second != index)
        throw_error(ErrorKind::input, fmt::format("screen merge: {} judged {} in shard {}, but the campaign's list {} {}: the "
                                                  "shards did not screen one list",
                                                  s.dir.string(), v.candidate, spec, list.file.string(),
                                                  a == assigned.end() ? std::string("does not name it")
                                                                      : fmt::format("gives it to shard {}/{}", a->second, count)));
      auto [it, fresh] = by_candidate.emplace(v.candidate, v);
      if (!fresh) {
        if (it->second.verdict != v.verdict || it->second.key != v.key)
          throw_error(ErrorKind::input, fmt::format("screen merge: two different verdicts for {}: {} in {}, {} in {}; which one "
                                                    "stands is not the merge's to choose (screen it again)",
                                                    v.candidate, to_string(it->second.verdict), from_dir[v.candidate].string(),
                                                    to_string(v.verdict), s.dir.string()));
        ++out.duplicates;  // the same shard given twice (a copy of its folder): the same verdict
      } else {
        from_dir[v.candidate] = s.dir;
      }
    }
    src["verdicts"] = rows;
    src["host"] = s.results.value("provenance", json::object()).value("host", json());
    sources.push_back(src);
  }
  return sources;
}

}  // namespace

MergeOutcome merge_screen(const MergeOptions& o) {
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  const std::vector<MergeShard> shards = read_merge_shards(o, say);
  const MergeShard& first = merge_shards_agree(shards);
  const int count = first.shard.value("count", 1);
  const std::vector<std::size_t> sizes = first.shard.value("share_sizes", std::vector<std::size_t>());
  const ShardList list = merge_campaign_list(first);

  // ---- verdicts: one per candidate folder, from the shard the list gives it ----
  MergeOutcome out;
  std::map<std::string, ScreenVerdict> by_candidate;
  std::set<int> finished;
  json sources = collect_merged_verdicts(shards, list, count, by_candidate, finished, out);
  json missing_shards = json::array();
  for (int k = 0; k < count; ++k)
    if (!finished.count(k)) {
      const std::size_t m = std::size_t(k) < sizes.size() ? sizes[std::size_t(k)] : 0;
      missing_shards.push_back(json{{"shard", fmt::format("{}/{}", k, count)}, {"candidates", m}});
    }
  for (const auto& c : list.candidates)
    if (!by_candidate.count(c)) out.missing_candidates.push_back(c);
  out.missing = out.missing_candidates.size();
  for (auto& [_, v] : by_candidate) out.verdicts.push_back(v);

  // ---- write ----
  json merged{{"shards", sources},
              {"shard_count", count},
              {"expected_candidates", first.shard.value("total", 0)},
              {"duplicates", out.duplicates},
              {"missing", out.missing},
              {"missing_candidates", out.missing_candidates},
              {"missing_shards", missing_shards},
              {"list", list.file.string()}};
  write_merged(o, first.options, std::move(merged), out);
  return out;
}

}  // namespace kqual::pipeline
