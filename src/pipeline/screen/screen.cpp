#include "kqual/pipeline/screen.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "kqual/build/candidate.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/pipeline/screen_gpus.hpp"
#include "screen_lanes.hpp"
#include "pipeline/build_pool.hpp"
#include "screen_contracts.hpp"
#include "kqual/pipeline/screen_journal.hpp"
#include "kqual/pipeline/screen_key.hpp"
#include "kqual/pipeline/screen_shard.hpp"
#include "kqual/pipeline/screen_timing.hpp"
#include "kqual/pipeline/screen_submission.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// What the builder threads hand to the GPU lanes.
struct BuildSlot {
  std::optional<build::BuiltCandidate> built;
  std::optional<bench::TorchSubmissionManifest> submission;  // a torch_module folder: nothing to build
  std::optional<ScreenVerdict> verdict;  // set when the candidate ends before the GPU (refused, error)
  double build_ms = 0;
  std::string contract;
};

// A verdict for one reason that no case gives: the reason is its one code, and `detail` says why.
ScreenVerdict verdict_for(ScreenVerdictKind kind, const std::string& code, const std::string& detail) {
  ScreenVerdict v;
  v.verdict = kind;
  v.reason = code;
  v.codes[code] = 1;
  v.detail = detail;
  return v;
}

// The candidate ended before the GPU: its manifest, contract or build.
ScreenVerdict refused(const std::string& kind, const std::string& why) { return verdict_for(ScreenVerdictKind::refused, kind, why); }

// A rejection that no case gives: the module did not load, the worker broke down on the candidate.
ScreenVerdict rejected_for(const std::string& code, const std::string& detail) {
  return verdict_for(ScreenVerdictKind::rejected, code, detail);
}

// The correctness phase's summary as screen's verdict.
ScreenVerdict screen_verdict_of(const CorrectnessSummary& sum) {
  ScreenVerdict v;
  v.codes = sum.failure_codes;
  if (sum.incomplete) {
    // kqual's own failure (its allocation, the upload, its reference, the worker lost outside the
    // candidate's launch): no verdict on the candidate, and not kept on resume.
    v.verdict = ScreenVerdictKind::incomplete;
    v.reason = "harness_error";
    v.codes["harness_error"] = sum.harness_errors;
    v.detail = sum.harness_failure;
  } else if (sum.accepted) {
    v.verdict = ScreenVerdictKind::accepted;
    v.reason = fmt::format("{} of {} cases passed, {} refused as the contract requires", sum.passed, sum.cases, sum.refused);
  } else {
    v.verdict = ScreenVerdictKind::rejected;
    v.reason = sum.primary_code;
    if (v.reason.empty()) {  // nothing failed, but nothing proved anything either
      v.reason = "no_evidence";
      v.codes["no_evidence"] = 1;
      v.detail = "every passed case's expected output is degenerate (all zero or all equal)";
    }
    if (!sum.failures.empty()) v.detail = sum.first_failure();
  }
  return v;
}

// One candidate's GPU phases in session `s`; *fault when its worker broke down on the way.
ScreenVerdict check_on_gpu(worker::Session& s, build::BuiltCandidate& b, const CheckOneOptions& co, bool* fault) {
  ScreenVerdict v;
  const int started = s.worker().processes_started();
  try {
    const CheckedOne one = check_one(s, b, co);
    v = one.loaded() ? screen_verdict_of(*one.correctness) : rejected_for("load_failed", one.load_error);
  } catch (const Error& e) {
    // A worker that broke down on this candidate is the candidate's verdict; anything else is kqual's.
    if (e.kind() == ErrorKind::worker) {
      v = rejected_for("worker_fault", e.what());
      *fault = true;
    } else {
      v.verdict = ScreenVerdictKind::error;
      v.reason = std::string("internal error (") + to_string(e.kind()) + ")";
      v.detail = e.what();
    }
  }
  // A crash, hang or sticky error ends the worker (the client starts a fresh one on the next call):
  // a ping that has to start one shows the candidate cost this lane its worker. A lane's first
  // worker, started by its first check, is no fault of that candidate's.
  const worker::WorkerReply p = s.worker().call(json{{"op", "ping"}}, 30);
  if (p.status != worker::WorkerReply::Status::ok || s.worker().processes_started() > std::max(started, 1)) *fault = true;
  return v;
}

using ScreenSay = std::function<void(const std::string&)>;

// What one screen run works through: the candidates (this shard's, when sharded), what the journal
// already answers, and the verdicts as they are reached.
struct ScreenRun {
  std::vector<fs::path> cands, skipped;
  std::optional<ShardSpec> shard;
  std::optional<ShardRecord> shard_rec;
  json not_in_list = json::array();
  std::vector<ScreenVerdict> verdicts;
  std::vector<std::string> hashes, keys;
  std::vector<std::size_t> todo;  // indices into cands still to run
  std::size_t resumed = 0;
};

// The candidates under o.inputs; with --shard, this shard's share of the campaign's list.
void gather_screen_candidates(const ScreenOptions& o, ScreenRun& run, const ScreenSay& say) {
  run.shard = o.shard.empty() ? std::nullopt : std::optional<ShardSpec>(parse_shard(o.shard));
  run.cands = screen_candidates(o.inputs, &run.skipped);
  for (const auto& s : run.skipped) say(fmt::format("not a candidate (no kqual.toml): {}", s.string()));
  if (!run.shard) return;
  // The campaign's list, not today's folder contents, says which candidates are this shard's.
  bool created = false;
  const fs::path file = o.shard_list.empty() ? default_shard_list(o.out_dir, run.shard->count) : fs::absolute(o.shard_list);
  const ShardList list = open_shard_list(file, run.shard->count, run.cands, &created);
  std::vector<fs::path> mine;
  run.shard_rec = plan_shards(*run.shard, list, &mine);
  const std::set<std::string> listed(list.candidates.begin(), list.candidates.end());
  for (const auto& c : run.cands)
    if (!listed.count(c.string())) run.not_in_list.push_back(c.string());
  // A list that names none of the candidates given is another campaign's (two campaigns with the
  // same shard count and --out folders under one parent): screening its candidates would be wrong.
  if (!run.cands.empty() && run.not_in_list.size() == run.cands.size())
    throw_error(ErrorKind::input, fmt::format("--shard {}: the campaign list {} names none of the {} candidate(s) given (first: {}): it "
                                              "is another campaign's; give this campaign its own folder for --out, or --shard-list FILE",
                                              run.shard->text(), file.string(), run.cands.size(), run.cands.front().string()));
  if (!run.not_in_list.empty())
    say(fmt::format("{} candidate(s) found now are not in the campaign's list {} and are not screened (first: {})",
                    run.not_in_list.size(), file.string(), run.not_in_list.front().get<std::string>()));
  say(fmt::format("shard {}: {} of {} candidate(s) of {} ({})", run.shard->text(), mine.size(), list.candidates.size(),
                  file.string(), created ? "written now" : "the campaign's"));
  run.cands = std::move(mine);
}

// The journal's descriptor, open for appending while the screen runs.
struct ScreenJournalFd {
  int fd = -1;
  ScreenJournalFd() = default;
  ScreenJournalFd(const ScreenJournalFd&) = delete;
  ScreenJournalFd& operator=(const ScreenJournalFd&) = delete;
  ~ScreenJournalFd() {
    if (fd >= 0) ::close(fd);
  }
};

// The journal at `path`: resumed under the same options (a torn last line dropped), or started
// fresh; open for appending in `jfd`, its header written when new. Returns what it already held.
ScreenJournal open_screen_journal(const ScreenOptions& o, const json& options, const fs::path& path, ScreenJournalFd& jfd,
                                  const ScreenSay& say) {
  ScreenJournal jr;
  if (o.restart) {
    std::error_code ec;
    fs::remove(path, ec);
  } else {
    jr = read_screen_journal(path);
  }
  if (!jr.header.is_null()) {
    const std::string diff = option_differences(jr.header.value("options", json::object()), options);
    if (!diff.empty())
      throw_error(ErrorKind::usage, fmt::format("{} was made with other options ({}); run with the same options, "
                                                "another --out, or --restart to start a fresh journal",
                                                path.string(), diff));
  }
  if (jr.torn_tail) {
    say(fmt::format("journal: dropped a torn last line (a write cut short); that candidate runs again"));
    if (::truncate(path.c_str(), off_t(jr.good_bytes)) != 0)
      throw_error(ErrorKind::io, fmt::format("{}: cannot drop the torn last line: {}", path.string(), std::strerror(errno)));
  }
  jfd.fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (jfd.fd < 0) throw_error(ErrorKind::io, fmt::format("{}: cannot open the journal: {}", path.string(), std::strerror(errno)));
  if (jr.header.is_null())
    append_journal_line(jfd.fd, path,
                        json{{"journal", kScreenJournalName}, {"options", options}, {"started", utc_now()}, {"command_line", o.command_line}}
                            .dump(-1, ' ', false, json::error_handler_t::replace));
  return jr;
}

// Which candidates the journal already answers (same folder, same key: screen_key.hpp); the rest
// are run.todo.
void plan_screen_run(const ScreenOptions& o, const json& options, const ScreenJournal& jr, bool gpu, ScreenRun& run) {
  std::map<std::string, ScreenVerdict> journaled;  // the last line per folder wins
  for (const auto& e : jr.entries) journaled[e.candidate] = e;
  const std::size_t n = run.cands.size();
  run.verdicts.assign(n, ScreenVerdict{});
  run.hashes.assign(n, std::string());
  run.keys.assign(n, std::string());
  VerdictKeys keyer(options, o.contract, contract::ContractLookup(o.sources));
  if (o.timing.on) keyer.time_against(o.timing.baseline_dirs, o.timing.profile);
  for (std::size_t i = 0; i < n; ++i) {
    std::error_code ec;
    if (fs::is_regular_file(run.cands[i] / "kqual.toml", ec)) {
      try {
        run.hashes[i] = sha256_file_hex((run.cands[i] / "kqual.toml").string());
      } catch (const std::exception&) {
        run.hashes[i].clear();  // unreadable: load_manifest says why, and the candidate always runs
      }
    }
    run.keys[i] = keyer.key(run.cands[i]);
    auto it = journaled.find(run.cands[i].string());
    const bool reuse = it != journaled.end() && reusable(it->second, run.keys[i], gpu);
    if (reuse) {
      run.verdicts[i] = it->second;
      run.verdicts[i].resumed = true;
    } else {
      run.todo.push_back(i);
    }
  }
  run.resumed = n - run.todo.size();
}

// Candidate i's static phases (contract, manifest, build into its own folder under `scratch`); a
// verdict in the slot when it ends before the GPU.
BuildSlot build_screen_slot(const ScreenOptions& o, const ScreenContracts& contracts, const fs::path& cand, std::size_t i,
                            const std::string& arch, const fs::path& scratch) {
  BuildSlot slot;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    if (contracts.refusals[i]) {
      slot.verdict = contracts.refusals[i];
      slot.contract = contracts.refusals[i]->contract;
    } else if (bench::is_torch_submission_manifest(cand)) {
      try {
        slot.submission = screen_submission_of(cand);
        slot.contract = slot.submission->contract;
        if (!o.contract.empty() && slot.contract != o.contract) {
          slot.verdict = refused("contract_mismatch", fmt::format("{} is a {} submission; this screen is against {}",
                                                                  slot.submission->file.string(), slot.contract, o.contract));
          slot.submission.reset();
        }
      } catch (const Error& e) {
        slot.verdict = refused("manifest_invalid", e.what());
      }
    } else {
      BuildOneOptions bo;
      bo.arch = arch;
      bo.contracts = contract::ContractLookup(o.sources);
      bo.dir = scratch / fmt::format("c{}", i);  // a folder per candidate: copies of one manifest share its file names
      bo.pass_over = [&](const build::Manifest& m) {
        return o.contract.empty() || m.contract == o.contract
                   ? std::string()
                   : fmt::format("{} is a {} candidate; this screen is against {}", m.file.string(), m.contract, o.contract);
      };
      BuiltOne one = build_one(cand, bo);
      if (one.manifest) slot.contract = one.manifest->contract;
      if (!one.manifest)
        slot.verdict = refused("manifest_invalid", one.manifest_error);
      else if (!one.passed_over.empty())
        slot.verdict = refused("contract_mismatch", one.passed_over);
      else if (!one.built)
        slot.verdict = refused("build_failed", one.build_error);
      else
        slot.built = std::move(one.built);
    }
  } catch (const std::exception& e) {
    ScreenVerdict v;
    v.verdict = ScreenVerdictKind::error;
    v.reason = "internal error";
    v.detail = e.what();
    slot.verdict = v;
  }
  slot.build_ms = ms_since(t0);
  return slot;
}

// Build: a pool of NVRTC threads, ahead of the GPU lanes. Check: each lane takes the next candidate
// from one queue; every verdict journaled (on `journal_fd`) and put in run.verdicts.
DispatchReport check_screen_lanes(const ScreenOptions& o, const ScreenContracts& contracts, Lanes& lanes, ScreenRun& run,
                                  const ScratchDir& build_scratch, int journal_fd, const fs::path& journal_path,
                                  const ScreenSay& say) {
  const std::size_t n = run.cands.size();
  auto build_one = [&](std::size_t k) {
    const std::size_t i = run.todo[k];
    return build_screen_slot(o, contracts, run.cands[i], i, lanes.arch, build_scratch.path());
  };
  const int threads = int(std::min<std::size_t>(std::size_t(o.jobs), std::max<std::size_t>(run.todo.size(), 1)));
  BuildPool<BuildSlot> pool(run.todo.size(), threads, build_one);

  std::optional<ScreenTimer> timer;  // --timing: accepted candidates timed in their lane's session
  if (o.timing.on && lanes.gpu()) timer.emplace(o.timing, lanes.arch, build_scratch.path(), o.seed, contract::ContractLookup(o.sources));
  CheckOneOptions co;
  co.check.seed = o.seed;
  co.check.include_large = o.large_cases;
  co.check.all_cases = o.all_cases;
  co.check.sanitizer_pass = o.sanitizer_pass;
  std::size_t shown = 0;  // progress lines count 1..n
  for (std::size_t i = 0; i < n; ++i)
    if (run.verdicts[i].resumed)
      say(fmt::format("screen [{}/{}] {}: {} ({}; from the journal)", ++shown, n, display_name(run.cands[i]),
                      to_string(run.verdicts[i].verdict), run.verdicts[i].reason));
  auto take_slot = [&](std::size_t k) {
    std::optional<BuildSlot> slot = pool.take(k);
    if (!slot) throw_error(ErrorKind::internal, "the build pool stopped before building a candidate a lane needs");
    return std::move(*slot);
  };
  LaneHooks hooks;
  hooks.check = [&](std::size_t lane, std::size_t k, bool* fault) {
    BuildSlot slot = take_slot(k);
    ScreenVerdict v;
    double check_ms = 0;
    if (slot.verdict) {
      v = *slot.verdict;
    } else if (slot.submission) {
      const auto t0 = std::chrono::steady_clock::now();
      if (lanes.gpu()) {
        const HostGpu* g = lanes.gpu_of(lane);
        v = check_screen_submission(o, *slot.submission, g ? g->visible : std::string(), lanes.gate_of(lane),
                                    timer ? &*timer : nullptr);
      } else {
        v.verdict = ScreenVerdictKind::incomplete;
        v.reason = "PyTorch submission; no GPU";
        v.detail = lanes.why_no_gpu + ": a PyTorch submission runs only in its worker on a GPU (it has no static phase)";
      }
      check_ms = ms_since(t0);
    } else if (!lanes.gpu()) {
      v.verdict = ScreenVerdictKind::incomplete;
      v.reason = "compiled; no GPU";
      v.detail = lanes.why_no_gpu + ": load and correctness not run";
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      {
        const GpuGate::Hold checking = lanes.gate_of(lane).shared();  // checks share the GPU
        v = check_on_gpu(*lanes.sessions[lane], *slot.built, co, fault);
      }
      if (timer && v.verdict == ScreenVerdictKind::accepted && !*fault) {
        const GpuGate::Hold timing = lanes.gate_of(lane).exclusive();  // a timing has its GPU alone
        timer->time(*lanes.sessions[lane], *slot.built, slot.contract, v, fault);
      }
      check_ms = ms_since(t0);
    }
    v.contract = slot.contract;
    v.compile_ms = slot.built ? slot.built->compile_ms : 0;
    v.wall_ms = slot.build_ms + check_ms;
    return v;
  };
  hooks.probe = [&](std::size_t lane) -> std::string {
    const worker::WorkerReply r =
        lanes.sessions[lane]->worker().call(to_json(worker::HelloRequest{}), std::max(o.watchdog_seconds, 120.0));
    if (r.status == worker::WorkerReply::Status::ok) return "";
    say(fmt::format("{} no longer answers a fresh worker ({}): its lane is retired", lanes.lane_name(lane),
                    first_line(r.reason, 200)));
    return r.reason;
  };
  hooks.record = [&](std::size_t lane, std::size_t k, ScreenVerdict v) {  // serialized by dispatch_lanes
    const std::size_t i = run.todo[k];
    v.candidate = run.cands[i].string();
    v.name = display_name(run.cands[i]);
    v.manifest_sha256 = run.hashes[i];
    v.key = run.keys[i];
    if (const HostGpu* g = lanes.gpu_of(lane)) v.gpu = g->ordinal;
    v.finished = utc_now();
    append_journal_line(journal_fd, journal_path, v.to_json().dump(-1, ' ', false, json::error_handler_t::replace));
    std::error_code ec;
    fs::remove_all(build_scratch.path() / fmt::format("c{}", i), ec);  // scratch holds only what is still to run
    say(fmt::format("screen [{}/{}] {}: {} ({}){}", ++shown, n, v.name, to_string(v.verdict), first_line(v.reason, 200),
                    v.gpu >= 0 ? fmt::format(" on GPU {}", v.gpu) : std::string()));
    run.verdicts[i] = std::move(v);
  };
  // Without a GPU one lane records the static verdicts in candidate order.
  return dispatch_lanes(std::max<std::size_t>(lanes.sessions.size(), 1), run.todo.size(), hooks);
}

// The typed result of a screen run (report/screen_result.hpp): results.json, summary.md and
// ranking.html are all made from it.
report::ScreenResult screen_result(const ScreenOptions& o, const json& options, const fs::path& journal_path, const Lanes& lanes,
                                   const DispatchReport& dispatched, const ScreenRun& run, const ScreenContracts& contracts,
                                   double wall_s) {
  report::ScreenResult r;
  r.provenance = report::provenance(o.command_line, lanes.devices.empty() ? json() : lanes.devices.front());
  r.options = options;
  report::ScreenRunFacts f;
  f.journal = journal_path.string();
  f.device_present = lanes.gpu();
  f.why_no_gpu = lanes.why_no_gpu;
  if (!o.gpus.empty()) {
    // Ordinals are PCI bus order: each worker ran with CUDA_DEVICE_ORDER=PCI_BUS_ID and
    // CUDA_VISIBLE_DEVICES=<visible>, the numbering nvidia-smi and Slurm use.
    r.provenance["device_order"] = "PCI_BUS_ID";
    r.provenance["gpu_source"] = lanes.gpu_source;
    const std::vector<DeviceTally> tally = tally_devices(lanes, dispatched);
    f.gpus.emplace();
    for (std::size_t l = 0; l < lanes.gpus.size(); ++l)
      f.gpus->push_back({lanes.gpus[l].ordinal, lanes.gpus[l].pci_bus_id, lanes.gpus[l].visible, lanes.devices[l], int(tally[l].judged),
                         tally[l].worker_faults, tally[l].worker_processes_started, tally[l].retired});
    f.gpus_unavailable = lanes.unavailable;
  }
  if (run.shard_rec) {
    f.shard = run.shard_rec->to_json();
    (*f.shard)["not_in_list"] = run.not_in_list;
  }
  f.resumed = run.resumed;
  f.run = run.todo.size();
  f.compile_threads = o.jobs;
  f.wall_s = wall_s;
  // Throughput of this invocation (resumed verdicts cost nothing here), by wall time: with a GPU,
  // the time the GPUs were held.
  if (f.run > 0 && wall_s > 0) f.candidates_per_hour = double(f.run) / (wall_s / 3600.0);
  for (const auto& s : lanes.sessions) f.worker_processes_started += s->worker().processes_started();
  // Lanes per GPU (--workers-per-gpu): correctness checks side by side, each timing alone on its GPU.
  f.workers_per_gpu = lanes.per_gpu;
  for (const auto& s : run.skipped) f.not_candidates.push_back(s.string());
  f.contracts = contracts.to_json();
  r.run = std::move(f);
  r.candidates = run.cands.size();
  r.counts = verdict_counts(run.verdicts);
  r.verdicts = run.verdicts;
  if (o.timing.on) r.ranking = screen_ranking(run.verdicts);
  return r;
}

}  // namespace

ScreenOutcome screen(const ScreenOptions& o) {
  const auto t_start = std::chrono::steady_clock::now();
  const ScreenSay say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  if (o.jobs < 1) throw_error(ErrorKind::usage, fmt::format("--jobs {}: must be at least 1", o.jobs));
  ScreenRun run;
  gather_screen_candidates(o, run, say);
  // Every contract once, before any candidate runs: one name, one file, for the whole screen.
  const ScreenContracts contracts = resolve_screen_contracts(run.cands, o.contract, contract::ContractLookup(o.sources));

  // ---- target: one worker session, or one per GPU ----
  Lanes lanes = open_lanes(o);
  const json options = screen_verdict_options(o, lanes.arch, run.shard ? run.shard->text() : std::string());

  // ---- journal: resume under the same options, or start fresh ----
  ScreenOutcome out;
  fs::create_directories(o.out_dir);
  out.journal_path = o.out_dir / "journal.jsonl";
  ScreenJournalFd journal_fd;
  const ScreenJournal jr = open_screen_journal(o, options, out.journal_path, journal_fd, say);
  plan_screen_run(o, options, jr, lanes.gpu(), run);
  const std::size_t n = run.cands.size();
  say(fmt::format("{} candidate(s): {} from the journal, {} to run; {} compile thread(s); {}", n, run.resumed, run.todo.size(),
                  o.jobs,
                  !lanes.gpu()          ? "no GPU (" + lanes.why_no_gpu + "): static phases only"
                  : lanes.gpus.empty()
                      ? fmt::format("GPU checks in {} worker session(s){}", lanes.sessions.size(),
                                    lanes.per_gpu > 1 ? ", side by side; timings alone on the GPU" : "")
                      : fmt::format("GPU checks in {} worker session(s), {} per GPU{}", lanes.sessions.size(), lanes.per_gpu,
                                    lanes.per_gpu > 1 ? ", side by side; timings alone on their GPU" : "")));

  // ---- build and check ----
  ScratchDir build_scratch("kqual-screen");
  const DispatchReport dispatched =
      check_screen_lanes(o, contracts, lanes, run, build_scratch, journal_fd.fd, out.journal_path, say);
  const double wall_s = ms_since(t_start) / 1000.0;

  // ---- write: results.json, summary.md (and ranking.html under --timing), all from one result ----
  out.result = screen_result(o, options, out.journal_path, lanes, dispatched, run, contracts, wall_s);
  out.results = report::to_json(out.result);
  std::vector<ResultFile> files{{"summary.md", report::render_screen_summary_md(out.result)}};
  if (out.result.ranking) files.push_back({"ranking.html", report::render_screen_ranking_html(*out.result.ranking, out.result.verdicts)});
  const Written w = write_results(o.out_dir, out.results, files);
  out.results_path = w.results;
  out.summary_path = w.files.at(0);
  out.verdicts = run.verdicts;
  out.exit_code = screen_exit_code(out.result.counts);
  return out;
}

}  // namespace kqual::pipeline
