// A PyTorch submission run case by case in its own worker process (torch_submission.hpp): the
// contract's cases and references here, the calls in tools/torch/submission_worker.py, the verdict
// from torch_submission_judge.cpp.
#include "kqual/bench/torch_submission.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <set>

#include "kqual/bench/record_judge.hpp"
#include "kqual/bench/torch_baseline.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/self.hpp"
#include "kqual/core/sha256.hpp"
#include "torch_baseline_worker.hpp"
#include "torch_submission_cases.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {
constexpr double kRecordFlushWaitS = 30;  // [s] for the record's flush to arrive after a reply
}  // namespace

std::vector<std::int64_t> tensor_shape(const contract::Contract& c, const std::string& tensor, const contract::Dims& dims) {
  std::vector<std::string> axes;
  bool found = false;
  if (const auto ref = torch_reference_of(c)) {
    if (auto it = ref->shapes.find(tensor); it != ref->shapes.end()) {
      axes = it->second;
      found = true;
    }
  }
  if (!found)
    for (const auto& t : c.domain().tensors)
      if (t.name == tensor) {
        axes = t.shape;
        found = true;
      }
  if (!found) throw_error(ErrorKind::internal, fmt::format("{}: no tensor '{}' in the contract", c.name(), tensor));
  return axis_sizes(c, tensor, axes, dims);
}

std::string SubmissionCheck::summary() const {
  if (!not_run.empty()) return "not run: " + not_run;
  if (harness_failed)
    return fmt::format("not judged: kqual's side failed at {}: {}", failures.empty() ? "?" : failures.front().id,
                       failures.empty() ? "" : failures.front().detail);
  const std::string where = stream == "default" ? " (every call on PyTorch's default stream, --stream default)" : "";
  if (accepted) {
    double own = 0, all = 0;
    for (const auto& [origin, ns] : gpu_ns_by_origin) {
      all += ns;
      if (origin == "own") own += ns;
    }
    std::string partial;
    if (!kept_library.empty())
      partial = fmt::format("; operators kept in the library, as the problem allows: {}; the submission's own kernels ran {:.0f} % "
                            "of the calls' GPU time",
                            fmt::join(kept_library, ", "), all > 0 ? 100 * own / all : 0.0);
    return fmt::format("accepted: {} of {} cases right ({} left out){}{}{}{}", passed, cases, skipped, partial,
                       cases_note.empty() ? "" : "; " + cases_note,
                       parameters_by_shape.empty() ? "" : fmt::format("; the problem's parameters given by shape: {}", fmt::join(parameters_by_shape, ", ")),
                       where);
  }
  const auto& f = failures.front();
  std::string out = fmt::format("rejected: {} at {}: {}{}", to_string(f.failure), f.id, f.detail, where);
  if (!on_default_stream.empty())
    out += fmt::format(". Called on PyTorch's default stream, as KernelBench calls it, the same submission is {}", on_default_stream);
  return out;
}

json SubmissionCheck::to_json() const {
  json fs_ = json::array();
  for (const auto& f : failures)
    fs_.push_back({{"case", f.id}, {"code", to_string(f.failure)}, {"detail", f.detail}, {"kernels", f.kernels}});
  return json{{"verdict", !not_run.empty() ? "not_run" : harness_failed ? "error" : accepted ? "accepted" : "rejected"},
              {"not_run", not_run},
              {"torch", worker_torch},
              {"device", worker_device},
              {"cases", cases},
              {"passed", passed},
              {"skipped", skipped},
              {"failures", fs_},
              {"kernels", kernels},
              {"dtypes", dtypes},
              // [ns] GPU time of the calls' kernels and copies by where they came from (the activity record)
              {"gpu_ns_by_origin", gpu_ns_by_origin},
              // "own": every call on a stream of kqual's; "default": on PyTorch's default stream (--stream default)
              {"stream", stream},
              // a wrong_stream rejection checked again on the default stream (summary of that check), or ""
              {"on_default_stream", on_default_stream},
              // no case within the element limit: which ran instead (the problem's smallest size), or ""
              {"cases_note", cases_note},
              // a rejection at a scaled size checked again at the problem's own size (summary of that check), or ""
              {"own_size", own_size},
              // the problem's parameters the submission declares under other names, matched by shape ("a -> b")
              {"parameters_by_shape", parameters_by_shape},
              // an imported problem's operators the submission left to the library (allowed: partial replacement)
              {"kept_library", kept_library},
              {"not_applied", not_applied},
              // Where the time went [ms]: the worker's start (PyTorch imported, the submission's module
              // loaded), its cases, and kqual making the cases (overlapped with the worker's runs).
              {"time_ms", {{"worker_start", hello_ms}, {"worker_cases", worker_ms}, {"case_preparation", prepare_ms}}}};
}

namespace {

fs::path worker_script(const SubmissionCheckOptions& o) {
  if (!o.worker.empty()) return o.worker;
  const auto tools = find_project_folder("tools/torch");
  if (!tools || !fs::exists(*tools / "submission_worker.py"))
    throw_error(ErrorKind::input, "tools/torch/submission_worker.py not found ($KQUAL_HOME/tools/torch, or a folder above the kqual executable)");
  return *tools / "submission_worker.py";
}


// The dtypes a submission is judged at: those it claims, each one the contract has; else the contract's.
std::vector<DType> submission_dtypes(const contract::Contract& c, const TorchSubmission& s) {
  if (s.dtypes.empty()) return c.dtypes();
  const std::vector<DType> has = c.dtypes();
  for (DType t : s.dtypes)
    if (std::find(has.begin(), has.end(), t) == has.end()) {
      std::vector<std::string> names;
      for (DType h : has) names.emplace_back(to_string(h));
      throw_error(ErrorKind::input, fmt::format("submission {}: claims dtype {}, which contract {} does not have (it has {})", s.file.string(),
                                                to_string(t), c.name(), fmt::join(names, ", ")));
    }
  return s.dtypes;
}



json tensor_files(const contract::Contract& c, const contract::Tensor& t, const contract::Dims& dims, const std::vector<fs::path>& files) {
  json f = json::array();
  for (const auto& p : files) f.push_back(p.string());
  return json{{"dtype", to_string(t.dtype)}, {"shape", tensor_shape(c, t.name, dims)}, {"files", f}};
}

// One case made ready for the worker: both datasets' inputs written, their references computed, the
// request built. Made on a thread of its own while the worker runs the case before it.
struct PreparedCase {
  std::string id;
  json req;
  std::vector<contract::Tensor> ea, eb;
  std::vector<contract::Tensor> ia, ib;  // the inputs of datasets A and B: each call's, as the recorder must read them
  std::vector<SubmissionOutputFiles> files;
  fs::path dir;
  double ms = 0;  // [ms] making it
};

class CaseRunner {
 public:
  CaseRunner(const contract::Contract& c, const SubmissionCheckOptions& o, const fs::path& dir) : c_(c), o_(o), dir_(dir) {
    for (const auto& t : c_.domain().tensors)
      if (t.layout == contract::Layout::strided)
        throw_error(ErrorKind::input, fmt::format("{}: tensor '{}' is strided; PyTorch submissions are given dense tensors only",
                                                  c_.name(), t.name));
  }

  // `slot` names the case's folder: two slots, so that one case is written while the other runs.
  PreparedCase prepare(const contract::CaseSpec& spec, contract::ReferenceHost& host, int slot) const {
    const auto t0 = std::chrono::steady_clock::now();
    PreparedCase p;
    p.id = spec.id;
    contract::CaseSpec spec_b = spec;
    spec_b.seed = spec.seed ^ 0x9E3779B97F4A7C15ULL;  // dataset B: the same case drawn again
    const contract::CaseData a = c_.make_case(spec), b = c_.make_case(spec_b);
    p.ea = c_.reference(a, host);
    p.eb = c_.reference(b, host);
    p.ia = a.inputs;
    p.ib = b.inputs;
    p.dir = dir_ / fmt::format("case{}", slot);
    fs::remove_all(p.dir);
    fs::create_directories(p.dir);
    p.req = json{{"op", "check"}, {"id", spec.id}, {"axes", json::object()}, {"scalars", torch_scalars(c_)}, {"inputs", json::object()},
                 {"outputs", json::array()}, {"deadline_s", o_.case_timeout_s}};
    for (const auto& [k, v] : a.dims) p.req["axes"][k] = v;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) {
      const auto& t = a.inputs[i];
      const fs::path fa = p.dir / (t.name + ".a"), fb = p.dir / (t.name + ".b");
      write_file(fa, t.bytes.data(), t.bytes.size());
      write_file(fb, b.inputs.at(i).bytes.data(), b.inputs.at(i).bytes.size());
      p.req["inputs"][t.name] = tensor_files(c_, t, a.dims, {fa, fb});
    }
    for (const auto& t : p.ea) {
      SubmissionOutputFiles f;
      f.name = t.name;
      for (int k = 0; k < 3; ++k) f.call[k] = p.dir / fmt::format("{}.out{}", t.name, k + 1);
      json j = tensor_files(c_, t, a.dims, {f.call[0], f.call[1], f.call[2]});
      j["name"] = t.name;
      p.req["outputs"].push_back(j);
      p.files.push_back(f);
    }
    p.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return p;
  }

  // The case's calls in the worker, then its activity record (flushed by the worker after its reply)
  // judged with the files it wrote.
  SubmissionCaseResult run(TorchWorker& w, PreparedCase& p, std::size_t n, const TorchSubmission& s,
                           std::map<std::string, double>* by_origin, std::set<std::string>* kept_library,
                           std::set<std::string>* by_shape) const {
    const std::string token = fmt::format("case{}", n);
    p.req["token"] = token;
    const json reply = w.call(&p.req, o_.case_timeout_s);
    if (reply.is_object())
      for (const auto& m : reply.value("parameters_by_shape", json::array()))
        if (m.is_string()) by_shape->insert(m.get<std::string>());
    const bool answered = reply.is_object() && reply.contains("ok") && reply.value("code", std::string()) != "timeout" &&
                          reply.value("code", std::string()) != "worker_died";
    RecordJudgement rj;
    if (RecordChannel* ch = w.record(); ch && answered) {
      ActivityRecord rec;
      const bool flushed = ch->wait_flush(token, kRecordFlushWaitS, &rec);
      RecordRules rules;
      rules.allow = s.allow_kernels;
      // An imported KernelBench problem: a solution may keep some of its operators in the library.
      rules.partial_replacement = imported_problem(s.problem_dir);
      for (const auto& t : p.ea) rules.output_bytes += t.bytes.size();
      for (const auto& t : p.ia) rules.input_bytes.push_back(t.bytes.size());
      // The worker's inputs are uploaded by the recorder from kqual's files: A (calls 1 and 3, the reference) and B.
      for (int d = 0; d < 2; ++d)
        for (const auto& t : d == 0 ? p.ia : p.ib) rules.uploads[upload_label(d, t.name)] = bytes_content_mac(ch->key(), t.bytes.data(), t.bytes.size());
      rj = judge_case_record(rec, ch->modules(), reply.value("ok", false) ? 3 : 0, rules);
      if (!flushed && rj.failure == SubmissionFailure::none) {
        rj.failure = SubmissionFailure::harness_tampered;
        rj.detail = fmt::format("the activity record stopped: no flush within {:.0f} s of the worker's reply (the recorder was "
                                "silenced or its channel closed)",
                                kRecordFlushWaitS);
      }
      // The values judged are the GPU's: every output file the worker wrote, against the recorder's own read.
      if (flushed && reply.value("ok", false) && rj.failure != SubmissionFailure::harness_tampered &&
          rj.failure != SubmissionFailure::harness_error) {
        std::vector<std::pair<std::string, fs::path>> written;
        for (const auto& f : p.files)
          for (int k = 0; k < 3; ++k) written.push_back({fmt::format("out{}:{}", k + 1, f.name), f.call[k]});
        std::string bad = ch->check_reads(rec, written);
        // Each call ran on the values kqual gave: A, B (in A's tensors), A again.
        for (int k = 0; k < 3 && bad.empty(); ++k)
          for (const auto& t : k == 1 ? p.ib : p.ia)
            if (bad.empty()) bad = check_read_bytes(rec, ch->key(), fmt::format("in{}:{}", k + 1, t.name), t.bytes);
        if (!bad.empty()) {
          rj.failure = SubmissionFailure::harness_tampered;
          rj.detail = bad;
        }
        // And the bytes judged must be those the recorder read (the file read once, after this check).
        for (auto& f : p.files) {
          f.key = {ch->key()[0], ch->key()[1]};
          for (int k = 0; k < 3; ++k)
            for (const auto& rd : rec.reads)
              if (rd.label == fmt::format("out{}:{}", k + 1, f.name)) f.mac[k] = rd.mac;
        }
      }
      for (const auto& [origin, ns] : rj.gpu_ns_by_origin) (*by_origin)[origin] += ns;
      kept_library->insert(rj.kept_library.begin(), rj.kept_library.end());
    }
    SubmissionCaseResult r = judge_submission_case(c_, p.id, reply, p.ea, p.eb, p.files, answered ? &rj : nullptr);
    fs::remove_all(p.dir);
    return r;
  }

 private:
  const contract::Contract& c_;
  const SubmissionCheckOptions& o_;
  fs::path dir_;
};

// What the hello says about the submission before any case: its import raised, it has no such class,
// or importing it replaced a watched function. Throws Error(input) for a configuration it refused.
std::optional<SubmissionCaseResult> hello_failure(const contract::Contract& c, const json& hello) {
  const std::string code = hello.value("code", std::string());
  if (!hello.value("ok", false)) {
    if (code == "usage")
      throw_error(ErrorKind::input, "the PyTorch submission worker refused its configuration: " + hello.value("error", std::string()));
    json as_case = hello;
    if (code == "submission_import" || code == "no_class") as_case["code"] = "exception";
    return judge_submission_case(c, "import", as_case, {}, {}, {}, nullptr);
  }
  if (!hello.value("replaced", json::array()).empty())
    return judge_submission_case(c, "import", json{{"ok", false}, {"replaced", hello["replaced"]}}, {}, {}, {}, nullptr);
  return std::nullopt;
}

// The recorder's state once the submission is imported (the worker flushes "hello" before greeting):
// started and intact, or the case that says why not.
std::optional<SubmissionCaseResult> record_started(TorchWorker& w, const json& hello) {
  RecordChannel* ch = w.record();
  if (!ch) return std::nullopt;
  ActivityRecord rec;
  const bool flushed = ch->wait_flush("hello", kRecordFlushWaitS, &rec);
  SubmissionCaseResult f;
  f.id = "import";
  if (!rec.broken.empty()) {
    f.failure = SubmissionFailure::harness_tampered;
    f.detail = "the activity record was tampered with while the submission was imported: " + rec.broken;
  } else if (!rec.started || !rec.errors.empty() || !hello.value("record", true)) {
    f.failure = SubmissionFailure::harness_error;
    f.detail = "kqual's activity recorder is not running in the worker: " +
               (!rec.errors.empty() ? rec.errors.front() : hello.value("record_note", std::string("no hello line from it")));
  } else if (!flushed) {
    f.failure = SubmissionFailure::harness_tampered;
    f.detail = "the activity record stopped while the submission was imported (no flush after the worker's hello)";
  } else {
    return std::nullopt;
  }
  return f;
}

}  // namespace


fs::path submission_build_dir(const TorchSubmission& s) {
  // The key: the .py files of its folder (the modules it may import), by content, and its own file where
  // it builds an extension itself: solutions that each call load_inline build apart even in one folder,
  // while submissions sharing a kernel module of their folder share its build.
  const std::string own = read_text_file(s.file);
  const bool builds = own.find("load_inline") != std::string::npos || own.find("cpp_extension") != std::string::npos;
  std::string key = builds ? fs::absolute(s.file).filename().string() + "\n" + own : std::string("shared");
  std::vector<fs::path> beside;
  for (const auto& e : fs::directory_iterator(fs::absolute(s.file).parent_path()))
    if (e.is_regular_file() && e.path().extension() == ".py") beside.push_back(e.path());
  std::sort(beside.begin(), beside.end());
  for (const auto& p : beside) key += "\n" + p.filename().string() + "\n" + read_text_file(p);
  return kqual_cache_dir() / "torch_extensions" / sha256_hex(key).substr(0, 24);
}

std::unique_ptr<TorchWorker> start_submission_worker(const contract::Contract& c, const TorchSubmission& s, const SubmissionCheckOptions& o,
                                                     const fs::path& err_file) {
  json cfg{{"submission", fs::absolute(s.file).string()},
           {"class", s.class_name},
           {"seed", o.seed},
           {"stream", o.stream == SubmissionCheckOptions::Stream::legacy_default ? "default" : "own"}};
  cfg["contract_dir"] = fs::exists(s.problem_dir / "reference.py") && fs::exists(s.problem_dir / "problem.py")
                            ? json(fs::absolute(s.problem_dir).string())
                            : json(nullptr);
  if (const auto op = torch_operation_of(c); op && !op->builtin.empty()) {
    cfg["builtin"] = op->builtin;
  } else if (op && op->reference && cfg["contract_dir"].is_null()) {
    cfg["reference_py"] = fs::absolute(op->reference->file).string();
    cfg["reference_function"] = op->reference->function;
  }
  // kqual's recorder in the worker's process, loaded by the driver inside cuInit (before the
  // submission's code), writing to a FIFO made here: the evidence the verdict comes from.
  std::vector<std::pair<std::string, std::string>> env = o.env;
  auto channel = record_channel_for(err_file.parent_path() / "record", env);
  // Its extension builds in a folder of its own, keyed by its content: two submissions never share a
  // build (an extension name two of them use), and a re-run of the same source reuses its build.
  if (std::none_of(env.begin(), env.end(), [](const auto& e) { return e.first == "TORCH_EXTENSIONS_DIR"; }))
    env.emplace_back("TORCH_EXTENSIONS_DIR", submission_build_dir(s).string());
  auto w = std::make_unique<TorchWorker>(o.python.empty() ? contract::reference_python() : o.python, worker_script(o), cfg, err_file,
                                         "the PyTorch submission worker", env);
  w->attach_record(std::move(channel));
  return w;
}

std::vector<std::string> submission_rules_not_applied() {
  return {
      "poisoned outputs and guard bytes: the submission allocates its outputs (every output element is compared with the "
      "reference on two datasets instead, so an element left unwritten or stale cannot pass both)",
      "alignment offsets and trap pages: PyTorch allocates the input tensors (offset cases are left out)",
      "compute-sanitizer and the kernel's registers and spills: the kernels are built by the submission at run time",
      "the verdict's evidence (every kernel, copy and stream of every call, who launched it) comes from kqual's recorder, a "
      "native library the driver loads before the submission's code; the submission's native code shares its process and "
      "could in principle forge it from there (a record that stops, skips or breaks its keyed chain fails as "
      "harness_tampered); the watched Python functions are early signals only",
  };
}

namespace {

// A submission whose kernels run on the legacy default stream is wrong where it is called on any other
// stream (kqual's verdict), and may be right where KernelBench calls it, on the default stream: its
// author is told which, from a second check with every call there.
void recheck_on_default_stream(const contract::Contract& c, const TorchSubmission& s, const SubmissionCheckOptions& o, SubmissionCheck& r) {
  if (!o.recheck_on_default_stream || o.stream != SubmissionCheckOptions::Stream::own || r.failures.empty() ||
      r.failures.front().failure != SubmissionFailure::wrong_stream)
    return;
  SubmissionCheckOptions d = o;
  d.stream = SubmissionCheckOptions::Stream::legacy_default;
  d.recheck_on_default_stream = false;
  d.stop_at_first_failure = true;
  d.scratch.clear();
  const SubmissionCheck again = check_torch_submission(c, s, d);
  r.on_default_stream = again.accepted ? fmt::format("right: accepted on all {} cases", again.cases) : again.summary();
}

// A submission rejected at a size kqual scaled the problem to (wrong, raising, crashing) may be one written
// for the problem's own sizes: checked again there, and where it is right the verdict says so
// (shape_unsupported, naming both sizes).
void recheck_at_own_size(const contract::Contract& c, const TorchSubmission& s, const SubmissionCheckOptions& o, SubmissionCheck& r) {
  if (!o.recheck_own_size || !o.only_dims.empty() || r.failures.empty()) return;
  SubmissionCaseResult& f = r.failures.front();
  if (f.failure != SubmissionFailure::wrong_result && f.failure != SubmissionFailure::exception && f.failure != SubmissionFailure::crash)
    return;
  const std::vector<contract::Dims> own = c.benchmark_shapes();
  if (own.empty() || f.id == "import") return;
  for (const auto& d : own)
    if (f.id.find("/" + contract::format_dims(d) + "/") != std::string::npos) return;  // it failed at the problem's own size
  SubmissionCheckOptions d = o;
  d.only_dims = own;
  d.recheck_own_size = false;
  d.recheck_on_default_stream = false;
  d.stop_at_first_failure = true;
  d.scratch.clear();
  const SubmissionCheck again = check_torch_submission(c, s, d);
  if (again.cases == 0 || !again.not_run.empty()) return;
  r.own_size = again.summary();
  if (!again.accepted) return;
  std::vector<std::string> sizes;
  for (const auto& dims : own) sizes.push_back(contract::format_dims(dims));
  f.detail = fmt::format("{} at {} ({}); right at the problem's own size ({}; {} case(s)): the kernel handles the sizes it was written "
                         "for, not the others the problem's axes allow",
                         to_string(f.failure), f.id, f.detail, fmt::join(sizes, " "), again.cases);
  f.failure = SubmissionFailure::shape_unsupported;
}

}  // namespace

bool imported_problem(const fs::path& problem_dir) {
  return !problem_dir.empty() && fs::exists(problem_dir / "reference.py") && fs::exists(problem_dir / "problem.py");
}

SubmissionCheck check_torch_submission(const contract::Contract& c, const TorchSubmission& s, const SubmissionCheckOptions& o) {
  if (!fs::is_regular_file(s.file)) throw_error(ErrorKind::input, fmt::format("submission {}: no such file", s.file.string()));
  SubmissionCheck r;
  r.not_applied = submission_rules_not_applied();
  r.stream = o.stream == SubmissionCheckOptions::Stream::legacy_default ? "default" : "own";
  const std::vector<DType> dtypes = submission_dtypes(c, s);
  for (DType t : dtypes) r.dtypes.emplace_back(to_string(t));
  const std::vector<contract::CaseSpec> cases = submission_cases(c, dtypes, o, &r.skipped, &r.cases_note);
  if (cases.empty())
    throw_error(ErrorKind::input, fmt::format("{}: no case at most {} elements for a PyTorch submission (nor one of its smallest size "
                                              "within {} elements)",
                                              c.name(), o.max_case_elements, o.own_size_cap_elements));
  const WorkerScratch scratch(o.scratch, "kqual-submission");
  const fs::path& dir = scratch.path();
  std::unique_ptr<TorchWorker> wp = start_submission_worker(c, s, o, dir / "worker.stderr");
  TorchWorker& w = *wp;
  const auto t_hello = std::chrono::steady_clock::now();
  const double import_s = std::max(o.case_timeout_s, o.import_timeout_s);
  json hello = w.call(nullptr, import_s);
  if (hello.value("code", std::string()) == "hang")  // the import outlived its deadline: say what was running
    hello["error"] = fmt::format("the submission's import (PyTorch, its module and the extensions it builds) did not end in {:.0f} s; "
                                 "the worker was killed ({})",
                                 import_s, hello.value("error", std::string()));
  r.hello_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_hello).count();
  if (const std::string code = hello.value("code", std::string()); code == "no_torch" || code == "no_cuda") {
    r.not_run = hello.value("error", code);
    return r;
  }
  if (const auto f = hello_failure(c, hello)) {
    r.failures.push_back(*f);
    r.harness_failed = f->failure == SubmissionFailure::harness_error;
    return r;
  }
  if (const auto f = record_started(w, hello)) {
    r.failures.push_back(*f);
    r.harness_failed = f->failure == SubmissionFailure::harness_error;
    return r;
  }
  r.worker_torch = hello.value("torch", std::string());
  r.worker_device = hello.value("device", std::string());
  contract::ReferenceHost host;
  const CaseRunner runner(c, o, dir);
  std::set<std::string> kernels, kept, by_shape;
  // Case k+1 is made (inputs, references, files) while the worker runs case k.
  auto prepare = [&](std::size_t k) { return std::async(std::launch::async, [&, k] { return runner.prepare(cases[k], host, int(k % 2)); }); };
  std::future<PreparedCase> next = prepare(0);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    ++r.cases;
    PreparedCase p = next.get();
    r.prepare_ms += p.ms;
    if (k + 1 < cases.size()) next = prepare(k + 1);
    const auto t0 = std::chrono::steady_clock::now();
    SubmissionCaseResult one = runner.run(w, p, k, s, &r.gpu_ns_by_origin, &kept, &by_shape);
    r.worker_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    kernels.insert(one.kernels.begin(), one.kernels.end());
    if (one.failure == SubmissionFailure::none) {
      ++r.passed;
      continue;
    }
    if (one.failure == SubmissionFailure::harness_error) r.harness_failed = true;
    r.failures.push_back(std::move(one));
    if (o.stop_at_first_failure || r.harness_failed) break;
    if (r.failures.back().failure == SubmissionFailure::crash || r.failures.back().failure == SubmissionFailure::hang) break;
  }
  r.kernels.assign(kernels.begin(), kernels.end());
  r.kept_library.assign(kept.begin(), kept.end());
  r.parameters_by_shape.assign(by_shape.begin(), by_shape.end());
  r.accepted = r.failures.empty() && r.passed == r.cases;
  recheck_on_default_stream(c, s, o, r);
  recheck_at_own_size(c, s, o, r);
  return r;
}

}  // namespace kqual::bench
