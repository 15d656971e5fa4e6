// The results documents' JSON edge: to_json writes each document in the order and with the keys the
// pipeline has always written; from_json reads it back, naming the field when one has the wrong type.
#include "kqual/report/results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "kqual/core/dtype.hpp"
#include "kqual/core/error.hpp"
#include "kqual/stats/compare.hpp"
#include "kqual/stats/summary.hpp"
#include "json_read.hpp"

namespace kqual::report {

using namespace read;  // the field readers (json_read.hpp)

// ---- PhaseList ----

void PhaseList::set(const std::string& phase, std::string status) {
  for (auto& [k, v] : entries_)
    if (k == phase) {
      v = std::move(status);
      return;
    }
  entries_.emplace_back(phase, std::move(status));
}

std::string PhaseList::get(const std::string& phase) const {
  for (const auto& [k, v] : entries_)
    if (k == phase) return v;
  return "";
}

bool PhaseList::has(const std::string& phase) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == phase; });
}

void PhaseList::keep_only(const std::vector<std::string>& phases) {
  std::erase_if(entries_, [&](const auto& e) { return std::find(phases.begin(), phases.end(), e.first) == phases.end(); });
}

namespace {

// ---- stats blocks, as stats::to_json writes them ----

stats::Summary summary_from_json(const json& j, const std::string& path) {
  stats::Summary s;
  s.n = get_int<std::size_t>(j, path, "n");
  s.median = get_double(j, path, "median");
  s.mean = get_double(j, path, "mean");
  s.min = get_double(j, path, "min");
  s.max = get_double(j, path, "max");
  s.p10 = get_double(j, path, "p10");
  s.p90 = get_double(j, path, "p90");
  s.stdev = get_double(j, path, "stdev");
  s.mad = get_double(j, path, "mad");
  s.rel_noise = get_double(j, path, "rel_noise");
  return s;
}

stats::Verdict stats_verdict(const std::string& word, const std::string& path) {
  for (stats::Verdict v : {stats::Verdict::faster, stats::Verdict::slower, stats::Verdict::no_difference, stats::Verdict::inconclusive})
    if (word == stats::to_string(v)) return v;
  throw_error(ErrorKind::input, fmt::format("{}: '{}' is not a comparison verdict", path, word));
}

stats::Comparison comparison_from_json(const json& j, const std::string& path) {
  stats::Comparison c;
  const std::string effect = get_str(j, path, "effect", "ratio_of_medians");
  if (effect != "ratio_of_medians" && effect != "difference_of_medians")
    throw_error(ErrorKind::input, fmt::format("{}: '{}' is not an effect", join(path, "effect"), effect));
  c.effect = effect == "ratio_of_medians" ? stats::Effect::ratio : stats::Effect::difference;
  c.null_value = c.effect == stats::Effect::ratio ? 1.0 : 0.0;
  c.paired = get_bool(j, path, "paired");
  c.n_a = get_int<std::size_t>(j, path, "n_a");
  c.n_b = get_int<std::size_t>(j, path, "n_b");
  c.median_a = get_double(j, path, "median_a");
  c.median_b = get_double(j, path, "median_b");
  c.estimate = get_double(j, path, "estimate");
  if (const json* ci = member(j, path, "ci")) {
    if (!ci->is_array() || ci->size() != 2) wrong(join(path, "ci"), "[lo, hi]", *ci);
    c.ci.lo = as_double(ci->at(0), join(path, "ci[0]"));
    c.ci.hi = as_double(ci->at(1), join(path, "ci[1]"));
  }
  c.confidence = get_double(j, path, "confidence", 0.95);
  c.margin = get_double(j, path, "margin");
  if (const json* t = member(j, path, "test")) {
    const std::string tp = join(path, "test");
    c.test.name = get_str(*t, tp, "name");
    c.test.statistic = get_double(*t, tp, "statistic");
    c.test.z = get_double(*t, tp, "z");
    c.test.p_value = get_double(*t, tp, "p_value", 1.0);
  }
  c.verdict = stats_verdict(get_str(j, path, "verdict", "inconclusive"), join(path, "verdict"));
  c.reason = get_str(j, path, "reason");
  return c;
}

// What a sample was (bench::TimingReport::timer, Series::timer): absent or "" is the events timer.
worker::TimerKind get_timer(const json& o, const std::string& path) {
  const std::string word = get_str(o, path, "timer");
  if (word.empty()) return worker::TimerKind::events;
  const std::optional<worker::TimerKind> kind = worker::parse_timer_kind(word);
  if (!kind) throw_error(ErrorKind::input, fmt::format("{}: unknown timer '{}' ({})", join(path, "timer"), word, worker::kTimerKindNames.choices()));
  return *kind;
}

json claims_json(const Claims& c) {
  return json{{"dtypes", c.dtypes}, {"min_alignment_bytes", c.min_alignment_bytes}, {"max_n", c.max_n},
              {"in_place", c.in_place}};
}

}  // namespace

// ---- bench::TimingReport ----

bench::TimingReport timing_report_from_json(const json& j) {
  const std::string path = "timing";
  bench::TimingReport t;
  t.boundary = get_str(j, path, "boundary");
  t.l2_mode = get_str(j, path, "l2_mode");
  t.timer = get_timer(j, path);
  for (const auto& [sj, sp] : get_items(j, path, "shapes")) {
    bench::ShapeResult sh;
    sh.shape = get_str(*sj, sp, "shape");
    if (const json* d = member(*sj, sp, "dims")) {
      if (!d->is_object()) wrong(join(sp, "dims"), "an object", *d);
      for (const auto& [k, v] : d->items()) {
        if (!v.is_number_integer()) wrong(join(join(sp, "dims"), k), "an integer", v);
        sh.dims[k] = v.get<std::int64_t>();
      }
    }
    const std::string dt = get_str(*sj, sp, "dtype", "f32");
    const auto dtype = parse_dtype(dt);
    if (!dtype) throw_error(ErrorKind::input, fmt::format("{}: unknown dtype '{}'", join(sp, "dtype"), dt));
    sh.dtype = *dtype;
    sh.min_bytes = get_double(*sj, sp, "min_bytes");
    sh.flops = get_double(*sj, sp, "flops");
    for (const auto& [xj, xp] : get_items(*sj, sp, "series")) {
      bench::Series s;
      s.label = get_str(*xj, xp, "label");
      s.role = get_str(*xj, xp, "role");
      s.verified = get_bool(*xj, xp, "verified", true);
      s.error = get_str(*xj, xp, "error");
      if (const json* su = member(*xj, xp, "summary_ms")) s.summary = summary_from_json(*su, join(xp, "summary_ms"));
      s.bytes_per_s = get_double(*xj, xp, "bytes_per_s");
      s.flops_per_s = get_double(*xj, xp, "flops_per_s");
      s.samples_ms = get_doubles(*xj, xp, "samples_ms");
      s.warmup_ms = get_doubles(*xj, xp, "warmup_ms");
      s.verify_detail = get_str(*xj, xp, "verify_detail");
      s.verify_code = get_str(*xj, xp, "verify_code");
      s.launches = get_int<std::size_t>(*xj, xp, "launches");
      s.reference_compared = get_int<std::size_t>(*xj, xp, "compared_with_reference");
      s.rerun_compared = get_int<std::size_t>(*xj, xp, "compared_with_untimed_rerun");
      s.timer = get_timer(*xj, xp);
      s.event_ms = get_doubles(*xj, xp, "event_ms");
      s.graph_launches = get_int<int>(*xj, xp, "graph_launches");
      if (const json* cl = member(*xj, xp, "clocks")) {
        const std::string cp = join(xp, "clocks");
        s.discarded = get_int<int>(*cl, cp, "discarded_samples");
        s.clock_guard_exhausted = get_bool(*cl, cp, "guard_exhausted", false);
        s.reference_sm_mhz = get_int<unsigned>(*cl, cp, "reference_sm_mhz");
        s.max_temperature_c = get_int<unsigned>(*cl, cp, "max_temperature_c");
        s.sm_clock_mhz = get_doubles(*cl, cp, "sm_mhz");
        s.mem_clock_mhz = get_doubles(*cl, cp, "mem_mhz");
        s.clocks_note = get_str(*cl, cp, "note");
        if (const json* ev = member(*cl, cp, "events")) {
          if (!ev->is_array()) wrong(join(cp, "events"), "an array", *ev);
          for (const auto& e : *ev) {
            if (!e.is_string()) wrong(join(cp, "events"), "strings", e);
            s.clock_events.push_back(e.get<std::string>());
          }
        }
      }
      sh.series.push_back(std::move(s));
    }
    sh.fastest_baseline = get_str(*sj, sp, "fastest_baseline");
    for (const auto& [cj, cp] : get_items(*sj, sp, "candidate_vs_baselines")) sh.vs_baselines.push_back(comparison_from_json(*cj, cp));
    if (const json* f = member(*sj, sp, "candidate_vs_fastest")) sh.vs_fastest = comparison_from_json(*f, join(sp, "candidate_vs_fastest"));
    if (const json* ti = member(*sj, sp, "timed_inputs")) {
      sh.timed_inputs = get_str(*ti, join(sp, "timed_inputs"), "kind");
      sh.timed_inputs_detail = get_str(*ti, join(sp, "timed_inputs"), "detail");
    }
    if (const json* c = member(*sj, sp, "device_copy")) {
      const std::string cp = join(sp, "device_copy");
      sh.copy_bytes_per_s = get_double(*c, cp, "bytes_per_s");
      sh.copy_samples_ms = get_doubles(*c, cp, "samples_ms");
    }
    t.shapes.push_back(std::move(sh));
  }
  if (const json* v = member(j, path, "verification")) t.verification = *v;
  return t;
}

// ---- qualify / check / bench ----

json to_json(const QualifyResult& r) {
  json j = schema_header(r.command);
  j["provenance"] = r.provenance;
  const QualifyCandidate& c = r.candidate;
  j["candidate"] = {{"name", c.name},
                    {"manifest", c.manifest},
                    {"contract", c.contract},
                    {"description", c.description},
                    {"claims", claims_json(c.claims)}};
  json refusals = json::array();
  for (const auto& x : r.contract.refusals_checked) refusals.push_back({{"request", x.request}, {"code", x.code}, {"reason", x.reason}});
  j["contract"] = {{"name", r.contract.name},
                   {"summary", r.contract.summary},
                   {"numerical_policy", r.contract.numerical_policy},
                   {"domain", r.contract.domain},
                   {"refusals_checked", refusals}};
  json source = {{"origin", r.contract.origin}, {"supplied_with_candidate", r.contract.origin == "candidate"}};
  if (!r.contract.file.empty()) {
    source["file"] = r.contract.file;
    source["sha256"] = r.contract.file_sha256;
  }
  j["contract"]["source"] = source;
  if (r.correctness) j["correctness"] = *r.correctness;
  if (r.baselines_correctness) j["baselines_correctness"] = *r.baselines_correctness;
  if (r.timing) j["timing"] = r.timing->to_json();
  j["artifact"] = r.artifact;
  j["baselines"] = r.baselines;
  j["phases"] = phases_json(r.phases);
  json wall = json::array();
  for (const auto& [step, sec] : r.wall_seconds) wall.push_back({{"step", step}, {"s", sec}});
  if (!wall.empty()) j["wall_seconds"] = wall;
  j["verdict"] = decision::to_json(r.verdict);
  if (r.reproduce)
    j["reproduce"] = {{"case", r.reproduce->case_id}, {"replay", r.reproduce->replay}, {"check", r.reproduce->check}};
  if (r.torch_baselines) j["torch_baselines"] = *r.torch_baselines;
  return j;
}

QualifyResult qualify_result_from_json(const json& doc) {
  QualifyResult r;
  r.command = schema_command(doc, {"qualify", "check", "bench"});
  if (const json* p = member(doc, "", "provenance")) r.provenance = *p;
  const json cand = get_object(doc, "", "candidate");
  r.candidate.name = get_str(cand, "candidate", "name");
  r.candidate.manifest = get_str(cand, "candidate", "manifest");
  r.candidate.contract = get_str(cand, "candidate", "contract");
  r.candidate.description = get_str(cand, "candidate", "description");
  const json claims = get_object(cand, "candidate", "claims");
  r.candidate.claims.dtypes = get_strings(claims, "candidate.claims", "dtypes");
  r.candidate.claims.min_alignment_bytes = get_int<std::int64_t>(claims, "candidate.claims", "min_alignment_bytes", 16);
  r.candidate.claims.max_n = get_int<std::int64_t>(claims, "candidate.claims", "max_n");
  r.candidate.claims.in_place = get_bool(claims, "candidate.claims", "in_place");
  const json con = get_object(doc, "", "contract");
  r.contract.name = get_str(con, "contract", "name");
  r.contract.summary = get_str(con, "contract", "summary");
  r.contract.numerical_policy = get_str(con, "contract", "numerical_policy");
  if (const json* d = member(con, "contract", "domain")) r.contract.domain = *d;
  if (const json* src = member(con, "contract", "source")) {  // absent in results written before it existed
    r.contract.origin = get_str(*src, "contract.source", "origin", "built-in");
    r.contract.file = get_str(*src, "contract.source", "file");
    r.contract.file_sha256 = get_str(*src, "contract.source", "sha256");
  }
  for (const auto& [x, p] : get_items(con, "contract", "refusals_checked"))
    r.contract.refusals_checked.push_back({get_str(*x, p, "request"), get_str(*x, p, "code"), get_str(*x, p, "reason")});
  if (const json* c = member(doc, "", "correctness")) r.correctness = *c;
  if (member(doc, "", "baselines_correctness")) r.baselines_correctness = get_json_array(doc, "", "baselines_correctness");
  if (const json* t = member(doc, "", "timing")) r.timing = timing_report_from_json(*t);
  r.artifact = get_object(doc, "", "artifact");
  r.baselines = get_json_array(doc, "", "baselines");
  r.phases = get_phases(doc, "");
  for (const auto& [x, p] : get_items(doc, "", "wall_seconds")) r.wall_seconds.emplace_back(get_str(*x, p, "step"), get_double(*x, p, "s"));
  r.verdict = qualify_verdict_from_json(get_object(doc, "", "verdict"), "verdict");
  if (const json* rp = member(doc, "", "reproduce"))
    r.reproduce = ReproduceCommands{get_str(*rp, "reproduce", "case"), get_str(*rp, "reproduce", "replay"),
                                    get_str(*rp, "reproduce", "check")};
  if (const json* tb = member(doc, "", "torch_baselines")) r.torch_baselines = *tb;
  return r;
}

// ---- compare ----

json to_json(const CompareResult& r) {
  json j = schema_header("compare");
  j["provenance"] = r.provenance;
  j["target"] = {{"arch", r.target.arch}, {"source", r.target.source}};
  j["sides"] = r.sides;
  if (r.contract) j["contract"] = *r.contract;
  j["artifact_diff"] = r.artifact_diff;
  if (r.measured) {
    if (r.correctness_relation)
      j["correctness_relation"] = {{"relation", r.correctness_relation->relation},
                                   {"new_blamed", r.correctness_relation->new_blamed},
                                   {"explanation", r.correctness_relation->explanation}};
    j["correctness"] = r.correctness;
    if (!r.wall_s.empty()) j["wall_s"] = r.wall_s;
    if (r.warm) j["warm"] = *r.warm;
    if (r.startup) j["startup"] = *r.startup;
    if (r.decisions) j["decisions"] = *r.decisions;
  }
  json verdict{{"reasons", r.verdict.reasons}};
  if (r.verdict.profile) verdict["profile"] = *r.verdict.profile;
  verdict["decision"] = decision::to_string(r.verdict.decision);
  verdict["exit_code"] = r.verdict.exit_code;
  verdict["summary"] = r.verdict.summary;
  // The order the two paths of run_compare have always written: the static one (no GPU) lists the
  // notes before what was not run; judge() after.
  j["phases"] = phases_json(r.phases);
  if (r.measured) {
    j["not_run"] = r.not_run;
    j["notes"] = r.notes;
  } else {
    j["notes"] = r.notes;
    j["not_run"] = r.not_run;
  }
  j["verdict"] = verdict;
  return j;
}

CompareResult compare_result_from_json(const json& doc) {
  CompareResult r;
  schema_command(doc, {"compare"});
  if (const json* p = member(doc, "", "provenance")) r.provenance = *p;
  const json t = get_object(doc, "", "target");
  r.target.arch = get_str(t, "target", "arch");
  r.target.source = get_str(t, "target", "source");
  r.sides = get_object(doc, "", "sides");
  if (member(doc, "", "contract")) r.contract = get_object(doc, "", "contract");
  r.artifact_diff = get_object(doc, "", "artifact_diff");
  r.measured = member(doc, "", "correctness") != nullptr;
  if (const json* c = member(doc, "", "correctness_relation"))
    r.correctness_relation = CorrectnessRelationBlock{get_str(*c, "correctness_relation", "relation"),
                                                      get_bool(*c, "correctness_relation", "new_blamed"),
                                                      get_str(*c, "correctness_relation", "explanation")};
  r.correctness = get_object(doc, "", "correctness");
  if (const json* w = member(doc, "", "wall_s")) {
    if (!w->is_object()) wrong("wall_s", "an object", *w);
    for (const auto& [k, v] : w->items()) r.wall_s[k] = as_double(v, join("wall_s", k));
  }
  if (const json* w = member(doc, "", "warm")) r.warm = *w;
  if (const json* s = member(doc, "", "startup")) r.startup = *s;
  if (const json* d = member(doc, "", "decisions")) r.decisions = *d;
  r.phases = get_phases(doc, "");
  r.not_run = get_strings(doc, "", "not_run");
  r.notes = get_strings(doc, "", "notes");
  const json v = get_object(doc, "", "verdict");
  r.verdict.reasons = get_strings(v, "verdict", "reasons");
  if (member(v, "verdict", "profile")) r.verdict.profile = get_str(v, "verdict", "profile");
  r.verdict.decision = get_ship_verdict(v, "verdict");
  r.verdict.exit_code = get_int<int>(v, "verdict", "exit_code", -1);
  r.verdict.summary = get_str(v, "verdict", "summary");
  return r;
}

// ---- selftest ----

json to_json(const SelftestResult& r) {
  json j = schema_header("selftest");
  json contracts = json::array();
  for (const auto& c : r.contracts)
    contracts.push_back({{"contract", c.contract}, {"broken", c.broken}, {"broken_rejected", c.broken_rejected},
                         {"broken_for_intended_reason", c.broken_for_intended_reason}, {"good", c.good},
                         {"good_accepted", c.good_accepted}});
  json classes = json::array();
  for (const auto& c : r.classes)
    classes.push_back({{"class", c.defect_class}, {"checks", c.checks}, {"rejected_for_it", c.rejected_for_it},
                       {"candidates", c.candidates}});
  json rows = json::array();
  for (const auto& c : r.candidates) {
    json row{{"candidate", c.candidate}, {"contract", c.contract}, {"dir", c.dir}, {"kind", c.kind}, {"expected", c.expected}};
    if (c.outcome) row["outcome"] = *c.outcome;
    if (c.sanitizer) row["sanitizer"] = *c.sanitizer;
    if (c.seeds) {
      json seeds = json::array();
      for (const auto& s : *c.seeds) {
        json codes = json::object();
        for (const auto& [k, n] : s.failure_codes) codes[k] = n;
        seeds.push_back({{"seed", s.seed}, {"outcome", s.outcome}, {"as_expected", s.as_expected}, {"cases", s.cases},
                         {"passed", s.passed}, {"failed", s.failed}, {"evidence", s.evidence}, {"skipped", s.skipped},
                         {"failure_codes", codes}, {"first_failure", s.first_failure}, {"timed", s.timed},
                         {"sanitizer_pass", s.sanitizer_pass}, {"wall_ms", s.wall_ms}, {"slowest_cases", s.slowest_cases}});
      }
      row["seeds"] = seeds;
    }
    if (c.as_expected) row["as_expected"] = *c.as_expected;
    rows.push_back(row);
  }
  j.update(json{{"provenance", r.provenance}, {"device_present", r.device_present}, {"why_no_device", r.why_no_device},
                {"seeds", r.seeds}, {"contracts", contracts}, {"classes", classes}, {"candidates", rows},
                {"checks", r.checks}, {"unexpected", r.unexpected}});
  if (r.sanitizer) j["sanitizer"] = json{{"tool", r.sanitizer->tool}, {"path", r.sanitizer->path}, {"note", r.sanitizer->note}};
  if (r.lanes) j["lanes"] = *r.lanes;
  if (r.compile_threads) j["compile_threads"] = *r.compile_threads;
  return j;
}

SelftestResult selftest_result_from_json(const json& doc) {
  SelftestResult r;
  schema_command(doc, {"selftest"});
  if (const json* p = member(doc, "", "provenance")) r.provenance = *p;
  r.device_present = get_bool(doc, "", "device_present");
  r.why_no_device = get_str(doc, "", "why_no_device");
  for (const auto& [s, p] : get_items(doc, "", "seeds")) {
    if (!s->is_number_unsigned() && !(s->is_number_integer() && s->get<std::int64_t>() >= 0)) wrong(p, "a seed", *s);
    r.seeds.push_back(s->get<std::uint64_t>());
  }
  for (const auto& [c, p] : get_items(doc, "", "contracts"))
    r.contracts.push_back({get_str(*c, p, "contract"), get_int<int>(*c, p, "broken"), get_int<int>(*c, p, "broken_rejected"),
                           get_int<int>(*c, p, "broken_for_intended_reason"), get_int<int>(*c, p, "good"),
                           get_int<int>(*c, p, "good_accepted")});
  for (const auto& [c, p] : get_items(doc, "", "classes"))
    r.classes.push_back({get_str(*c, p, "class"), get_int<int>(*c, p, "checks"), get_int<int>(*c, p, "rejected_for_it"),
                         get_strings(*c, p, "candidates")});
  for (const auto& [c, p] : get_items(doc, "", "candidates")) {
    SelftestCandidate row;
    row.candidate = get_str(*c, p, "candidate");
    row.contract = get_str(*c, p, "contract");
    row.dir = get_str(*c, p, "dir");
    row.kind = get_str(*c, p, "kind");
    row.expected = get_str(*c, p, "expected");
    if (member(*c, p, "outcome")) row.outcome = get_str(*c, p, "outcome");
    if (const json* s = member(*c, p, "sanitizer")) row.sanitizer = *s;
    if (member(*c, p, "seeds")) {
      row.seeds.emplace();
      for (const auto& [s, sp] : get_items(*c, p, "seeds")) {
        SelftestSeed sd;
        sd.seed = get_int<std::uint64_t>(*s, sp, "seed");
        sd.outcome = get_str(*s, sp, "outcome");
        sd.as_expected = get_bool(*s, sp, "as_expected");
        sd.cases = get_int<int>(*s, sp, "cases");
        sd.passed = get_int<int>(*s, sp, "passed");
        sd.failed = get_int<int>(*s, sp, "failed");
        sd.evidence = get_int<int>(*s, sp, "evidence");
        sd.skipped = get_int<int>(*s, sp, "skipped");
        if (const json* fc = member(*s, sp, "failure_codes")) {
          if (!fc->is_object()) wrong(join(sp, "failure_codes"), "an object", *fc);
          for (const auto& [k, n] : fc->items()) sd.failure_codes[k] = get_int<int>(*fc, join(sp, "failure_codes"), k);
        }
        sd.first_failure = get_str(*s, sp, "first_failure");
        sd.timed = get_bool(*s, sp, "timed");
        if (const json* x = member(*s, sp, "sanitizer_pass")) sd.sanitizer_pass = *x;
        sd.wall_ms = get_double(*s, sp, "wall_ms");
        if (const json* x = member(*s, sp, "slowest_cases")) sd.slowest_cases = *x;
        row.seeds->push_back(std::move(sd));
      }
    }
    if (member(*c, p, "as_expected")) row.as_expected = get_bool(*c, p, "as_expected");
    r.candidates.push_back(std::move(row));
  }
  r.checks = get_int<int>(doc, "", "checks");
  r.unexpected = get_int<int>(doc, "", "unexpected");
  if (const json* s = member(doc, "", "sanitizer"))
    r.sanitizer = SelftestSanitizer{get_str(*s, "sanitizer", "tool"), get_str(*s, "sanitizer", "path"), get_str(*s, "sanitizer", "note")};
  if (member(doc, "", "lanes")) r.lanes = get_int<int>(doc, "", "lanes");
  if (member(doc, "", "compile_threads")) r.compile_threads = get_int<int>(doc, "", "compile_threads");
  return r;
}

}  // namespace kqual::report
