// kqual screen's results document at its JSON edge (screen_result.hpp): the journal's verdict line,
// the counts, and results.json of a run or a merge, written in the order screen has always written
// them and read back field by field.
#include "kqual/report/screen_result.hpp"

#include <fmt/format.h>

#include "json_read.hpp"
#include "kqual/core/error.hpp"

namespace kqual::report {

// ---- one verdict: the journal's line ----

json ScreenVerdict::to_json() const {
  json c = json::object();
  for (const auto& [k, n] : codes) c[k] = n;
  json j{{"candidate", candidate}, {"name", name},         {"manifest_sha256", manifest_sha256}, {"key", key},
         {"contract", contract},   {"verdict", to_string(verdict)}, {"reason", reason},
         {"codes", c},             {"detail", detail},     {"wall_ms", wall_ms},
         {"compile_ms", compile_ms}, {"finished", finished}};
  if (gpu >= 0) j["gpu"] = gpu;  // with --gpus only: the ordinal (PCI bus order) that judged it
  if (!speed.is_null()) j["speed"] = speed;  // with --timing only
  return j;
}

ScreenVerdict ScreenVerdict::from_json(const json& j) {
  ScreenVerdict v;
  try {
    v.candidate = j.at("candidate").get<std::string>();
    v.name = j.at("name").get<std::string>();
    v.manifest_sha256 = j.at("manifest_sha256").get<std::string>();
    v.key = j.value("key", std::string());  // absent in journals from before the key: never reused
    v.contract = j.value("contract", std::string());
    const std::string word = j.at("verdict").get<std::string>();
    const std::optional<ScreenVerdictKind> kind = kScreenVerdictNames.parse(word);
    if (!kind)
      throw_error(ErrorKind::input, fmt::format("a screen verdict \"{}\" is none of {}", word, kScreenVerdictNames.choices()));
    v.verdict = *kind;
    v.reason = j.value("reason", std::string());
    for (const auto& [k, n] : j.at("codes").items()) v.codes[k] = n.get<int>();
    v.detail = j.value("detail", std::string());
    v.wall_ms = j.value("wall_ms", 0.0);
    v.compile_ms = j.value("compile_ms", 0.0);
    v.finished = j.value("finished", std::string());
    if (j.contains("gpu") && j.at("gpu").is_number_integer()) v.gpu = j.at("gpu").get<int>();
    if (j.contains("speed") && j.at("speed").is_object()) v.speed = j.at("speed");
  } catch (const json::exception& e) {
    throw_error(ErrorKind::input, std::string("a screen journal entry lacks a field: ") + e.what());
  }
  return v;
}

// ---- counts ----

json ScreenCounts::to_json() const {
  json j = json::object();
  for (const auto& [kind, word] : kScreenVerdictNames.entries) j[word] = (*this)[kind];
  return j;
}

ScreenCounts verdict_counts(const std::vector<ScreenVerdict>& verdicts) {
  ScreenCounts counts;
  for (const auto& v : verdicts) ++counts.n[std::size_t(v.verdict)];
  return counts;
}

// ---- the document ----

namespace {

json screen_gpus_json(const std::vector<ScreenGpu>& gpus) {
  json g = json::array();
  for (const auto& x : gpus)
    g.push_back(json{{"ordinal", x.ordinal},
                     {"pci_bus_id", x.pci_bus_id},
                     {"cuda_visible_devices", x.cuda_visible_devices},
                     {"device", x.device},
                     {"judged", x.judged},
                     {"worker_faults", x.worker_faults},
                     {"worker_processes_started", x.worker_processes_started},
                     {"retired", x.retired.empty() ? json() : json(x.retired)}});
  return g;
}

}  // namespace

json to_json(const ScreenResult& r) {
  json j = schema_header("screen");
  j["provenance"] = r.provenance;
  if (r.merged) j["merged"] = *r.merged;
  j["options"] = r.options;
  const ScreenRunFacts* run = r.run ? &*r.run : nullptr;
  if (run) {
    j["journal"] = run->journal;
    j["device_present"] = run->device_present;
    j["why_no_gpu"] = run->why_no_gpu;
    if (run->gpus) {
      j["gpus"] = screen_gpus_json(*run->gpus);
      j["gpus_unavailable"] = run->gpus_unavailable;
    }
    if (run->shard) j["shard"] = *run->shard;
  }
  j["candidates"] = r.candidates;
  if (run) {
    j["resumed"] = run->resumed;
    j["run"] = run->run;
  }
  j["counts"] = r.counts.to_json();
  if (run) {
    j["compile_threads"] = run->compile_threads;
    j["wall_s"] = run->wall_s;
    j["candidates_per_hour"] = run->candidates_per_hour ? json(*run->candidates_per_hour) : json();
    j["worker_processes_started"] = run->worker_processes_started;
    j["workers_per_gpu"] = run->workers_per_gpu;
    j["not_candidates"] = run->not_candidates;
    j["contracts"] = run->contracts;
  }
  json rows = json::array();
  for (const auto& v : r.verdicts) {
    json row = v.to_json();
    row["resumed"] = v.resumed;
    rows.push_back(std::move(row));
  }
  j["verdicts"] = std::move(rows);
  if (r.ranking) j["ranking"] = *r.ranking;
  return j;
}

ScreenResult screen_result_from_json(const json& doc) {
  using namespace read;
  ScreenResult r;
  schema_command(doc, {"screen"});
  if (const json* p = member(doc, "", "provenance")) r.provenance = *p;
  if (const json* m = member(doc, "", "merged")) {
    if (!m->is_object()) wrong("merged", "an object", *m);
    r.merged = *m;
  }
  r.options = get_object(doc, "", "options");
  if (member(doc, "", "journal")) {  // a run's document (a merge's has no journal)
    ScreenRunFacts run;
    run.journal = get_str(doc, "", "journal");
    run.device_present = get_bool(doc, "", "device_present");
    run.why_no_gpu = get_str(doc, "", "why_no_gpu");
    if (member(doc, "", "gpus")) {
      run.gpus.emplace();
      for (const auto& [g, p] : get_items(doc, "", "gpus")) {
        ScreenGpu x;
        x.ordinal = get_int<int>(*g, p, "ordinal", -1);
        x.pci_bus_id = get_str(*g, p, "pci_bus_id");
        x.cuda_visible_devices = get_str(*g, p, "cuda_visible_devices");
        if (const json* d = member(*g, p, "device")) x.device = *d;
        x.judged = get_int<int>(*g, p, "judged");
        x.worker_faults = get_int<int>(*g, p, "worker_faults");
        x.worker_processes_started = get_int<int>(*g, p, "worker_processes_started");
        x.retired = get_str(*g, p, "retired");
        run.gpus->push_back(std::move(x));
      }
      run.gpus_unavailable = json(get_json_array(doc, "", "gpus_unavailable"));
    }
    if (const json* s = member(doc, "", "shard")) {
      if (!s->is_object()) wrong("shard", "an object", *s);
      run.shard = *s;
    }
    run.resumed = get_int<std::size_t>(doc, "", "resumed");
    run.run = get_int<std::size_t>(doc, "", "run");
    run.compile_threads = get_int<int>(doc, "", "compile_threads");
    run.wall_s = get_double(doc, "", "wall_s");
    if (member(doc, "", "candidates_per_hour")) run.candidates_per_hour = get_double(doc, "", "candidates_per_hour");
    run.worker_processes_started = get_int<int>(doc, "", "worker_processes_started");
    run.workers_per_gpu = get_int<int>(doc, "", "workers_per_gpu", 1);
    run.not_candidates = get_strings(doc, "", "not_candidates");
    run.contracts = get_object(doc, "", "contracts");
    r.run = std::move(run);
  }
  r.candidates = get_int<std::size_t>(doc, "", "candidates");
  const json counts = get_object(doc, "", "counts");
  for (const auto& [kind, word] : kScreenVerdictNames.entries) r.counts.n[std::size_t(kind)] = get_int<int>(counts, "counts", word);
  for (const auto& [row, p] : get_items(doc, "", "verdicts")) {
    ScreenVerdict v;
    try {
      v = ScreenVerdict::from_json(*row);
    } catch (const Error& e) {
      throw_error(ErrorKind::input, fmt::format("{}: {}", p, e.what()));
    }
    v.resumed = get_bool(*row, p, "resumed");
    r.verdicts.push_back(std::move(v));
  }
  if (const json* k = member(doc, "", "ranking")) {
    if (!k->is_object()) wrong("ranking", "an object", *k);
    r.ranking = *k;
  }
  return r;
}

}  // namespace kqual::report
