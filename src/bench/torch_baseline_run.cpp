// The PyTorch baseline phase (torch_baseline.hpp): the timing worker process, the input files, the
// A B B A blocks and the check of the baselines' outputs against the contract's reference.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kqual/bench/torch_baseline.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/contract/declared.hpp"
#include "kqual/contract/import_kernelbench.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

// tools/torch/timing_worker.py as a child process answering one JSON line per JSON line.
class TorchWorker {
 public:
  TorchWorker(const std::string& python, const fs::path& script, const json& cfg, const fs::path& err_file) : err_file_(err_file) {
    int in_pipe[2], out_pipe[2];
    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0)
      throw_error(ErrorKind::io, std::string("pipe: ") + std::strerror(errno));
    signal(SIGPIPE, SIG_IGN);
    std::vector<std::string> args = {python, script.string(), cfg.dump()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ < 0) throw_error(ErrorKind::io, std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
      dup2(in_pipe[0], STDIN_FILENO);
      dup2(out_pipe[1], STDOUT_FILENO);
      const int ef = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (ef >= 0) dup2(ef, STDERR_FILENO);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    to_ = in_pipe[1];
    from_ = out_pipe[0];
  }
  ~TorchWorker() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
    }
  }
  TorchWorker(const TorchWorker&) = delete;
  TorchWorker& operator=(const TorchWorker&) = delete;

  // One reply; {"ok": false, "code": "worker_died" | "timeout", ...} when there is none.
  json call(const json* request, double timeout_s) {
    if (request) {
      const std::string l = request->dump() + "\n";
      for (std::size_t off = 0; off < l.size();) {
        const ssize_t w = write(to_, l.data() + off, l.size() - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return died();
        off += std::size_t(w);
      }
    }
    for (;;) {
      if (auto nl = pending_.find('\n'); nl != std::string::npos) {
        const std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        json j = json::parse(line, nullptr, false);
        if (j.is_discarded()) return json{{"ok", false}, {"code", "protocol"}, {"error", "unreadable reply: " + line.substr(0, 300)}};
        return j;
      }
      pollfd p{from_, POLLIN, 0};
      const int r = poll(&p, 1, int(timeout_s * 1000));
      if (r == 0) return json{{"ok", false}, {"code", "timeout"}, {"error", fmt::format("no reply in {:.0f} s", timeout_s)}};
      if (r < 0 && errno == EINTR) continue;
      char buf[65536];
      const ssize_t n = read(from_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return died();
      pending_.append(buf, std::size_t(n));
    }
  }

 private:
  json died() {
    std::string err;
    try {
      err = read_text_file(err_file_);
    } catch (const Error&) {
    }
    if (err.size() > 1500) err = "..." + err.substr(err.size() - 1500);
    return json{{"ok", false}, {"code", "worker_died"}, {"error", "the PyTorch timing worker exited" + (err.empty() ? "" : ": " + err)}};
  }
  fs::path err_file_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string pending_;
};

fs::path write_tensor(const fs::path& dir, const contract::Tensor& t) {
  const fs::path f = dir / (t.name + ".in");
  write_file(f, t.bytes.data(), t.bytes.size());
  return f;
}

}  // namespace

TorchBaselineReport run_torch_baselines(worker::Session& s, const build::BuiltCandidate& cand, TimingReport& tr, const TimingOptions& o,
                                        const std::optional<std::vector<std::string>>& requested) {
  TorchBaselineReport rep;
  const contract::Contract& c = contract::find_contract(cand.manifest.contract);
  const std::optional<TorchReference> ref = torch_reference_of(c);
  if (requested && requested->empty()) {
    rep.status = "not run: --torch-baselines none";
    return rep;
  }
  if (!ref) {
    rep.status = fmt::format("not run: the contract's reference is not PyTorch ({})",
                             contract::declared_file(c).empty() ? "a built-in contract" : "[reference] kind is not \"torch\"");
    return rep;
  }
  if (const std::string why = torch_timing_blocker(o); !why.empty()) {
    rep.status = "not run: " + why;
    return rep;
  }
  const std::vector<std::string> kinds = requested ? *requested : std::vector<std::string>{"eager", "compiled"};
  std::string python;
  fs::path script;
  try {
    python = contract::reference_python();
    script = contract::torch_tool("timing_worker.py");
  } catch (const Error& e) {
    rep.status = std::string("not run: ") + e.what();
    return rep;
  }
  const fs::path root = s.scratch() / "torch";
  fs::create_directories(root);
  TorchWorker w(python, script, json{{"file", fs::absolute(ref->file).string()}, {"function", ref->function}}, root / "worker-stderr.txt");
  const json hello = w.call(nullptr, 300);
  if (!hello.value("ok", false)) {
    const std::string code = hello.value("code", std::string());
    rep.status = fmt::format("not run: {}", code == "no_torch" ? "torch not importable (" + hello.value("error", std::string()) + ")"
                                                               : hello.value("error", std::string("the PyTorch worker did not start")));
    return rep;
  }
  rep.torch_version = hello.value("torch", std::string());
  rep.device = hello.value("device", std::string());
  rep.clocks = hello.value("clocks", std::string());
  const int pairs = std::max(1, (o.rounds + 1) / 2);
  std::vector<std::string> timed;
  for (std::size_t si = 0; si < tr.shapes.size(); ++si) {
    ShapeResult& sh = tr.shapes[si];
    if (sh.series.empty() || !sh.series[0].error.empty() || !sh.series[0].verified) {
      rep.notes.push_back(fmt::format("{}: not timed against PyTorch: the candidate has no verified samples there", sh.shape));
      continue;
    }
    if (o.progress) o.progress(fmt::format("timing: PyTorch {} at {} (A B B A x {})", fmt::join(kinds, ", "), sh.shape, pairs));
    const contract::CaseSpec spec = timing_case_spec(c, sh.dims, o), alt_spec = timing_alt_case_spec(c, sh.dims, o);
    auto prepared = check::prepare_case(s, c, spec);
    auto alt = check::prepare_case(s, c, alt_spec);
    const fs::path dir = root / fmt::format("shape{}", si);
    fs::create_directories(dir / "A");
    fs::create_directories(dir / "B");
    json req{{"inputs", json::object()}, {"scalars", json::object()}, {"axes", json::object()}, {"outputs", json::array()},
             {"flush", o.flush_l2 ? o.flush_mode : "none"}, {"clock_guard", o.clock_guard}, {"samples", o.samples_per_round}};
    auto shape_of = [&](const std::string& tensor) {
      json shape = json::array();
      if (auto it = ref->shapes.find(tensor); it != ref->shapes.end())
        for (const auto& a : it->second) shape.push_back(prepared->data.dims.at(a));
      return shape;
    };
    for (std::size_t k = 0; k < prepared->data.inputs.size(); ++k) {
      const contract::Tensor& t = prepared->data.inputs[k];
      req["inputs"][t.name] = {{"files", {write_tensor(dir / "A", t).string(), write_tensor(dir / "B", alt->data.inputs.at(k)).string()}},
                               {"dtype", to_string(t.dtype)}, {"shape", shape_of(t.name)}};
    }
    for (const auto& sc : c.scalars()) {
      if (sc.dtype == DType::i32 || sc.dtype == DType::i64 || sc.dtype == DType::u32) req["scalars"][sc.name] = std::int64_t(sc.value);
      else if (sc.dtype == DType::f32) req["scalars"][sc.name] = double(float(sc.value));
      else req["scalars"][sc.name] = sc.value;
    }
    for (const auto& [n, v] : prepared->data.dims) req["axes"][n] = v;
    for (const auto& t : prepared->expected)
      req["outputs"].push_back({{"name", t.name}, {"dtype", to_string(t.dtype)}, {"shape", shape_of(t.name)},
                                {"files", {(dir / "A" / (t.name + ".out")).string(), (dir / "B" / (t.name + ".out")).string()}}});

    std::vector<double> cand_samples;
    std::vector<Series> series(kinds.size());
    TorchShapeStartup st{sh.shape, -1};
    auto candidate_block = [&](bool first) {
      TimingOptions one = o;
      one.shapes = {sh.dims};
      one.rounds = 1;
      one.warmup = first ? o.warmup : 1;
      one.measure_copy = false;
      one.progress = {};
      TimingReport r1 = time_against_baselines(s, cand, {}, one);
      const Series& cs = r1.shapes.at(0).series.at(0);
      if (cs.error.empty() && cs.verified) cand_samples.insert(cand_samples.end(), cs.samples_ms.begin(), cs.samples_ms.end());
      else rep.notes.push_back(fmt::format("{}: a candidate block failed: {}", sh.shape, cs.error.empty() ? cs.verify_detail : cs.error));
    };
    auto torch_block = [&](int block, bool reversed, bool last) {
      for (std::size_t j = 0; j < kinds.size(); ++j) {
        const std::size_t i = reversed ? kinds.size() - 1 - j : j;
        Series& se = series[i];
        if (!se.error.empty()) continue;
        json r = req;
        r["impl"] = kinds[i];
        r["warmup"] = block == 0 ? o.warmup : 1;
        r["write_outputs"] = last;
        const json a = w.call(&r, 600);
        if (!a.value("ok", false)) {
          se.error = fmt::format("{}: {}", a.value("code", std::string("?")), a.value("error", std::string()));
          continue;
        }
        auto add = [&](const char* key, std::vector<double>& into) {
          for (const auto& x : a.value(key, json::array())) into.push_back(x.get<double>());
        };
        add("samples_ms", se.samples_ms);
        if (block == 0) add("warmup_ms", se.warmup_ms);
        add("sm_mhz", se.sm_clock_mhz);
        add("mem_mhz", se.mem_clock_mhz);
        se.reference_sm_mhz = a.value("reference_sm_mhz", 0u);
        se.max_temperature_c = std::max(se.max_temperature_c, a.value("max_temperature_c", 0u));
        se.clocks_note = a.value("clocks_note", std::string());
        se.discarded += a.value("discarded", 0);
        for (const auto& e : a.value("clock_events", json::array()))
          if (se.clock_events.size() < 20) se.clock_events.push_back(fmt::format("block {}, {}", block + 1, e.get<std::string>()));
        se.clock_guard_exhausted = se.clock_guard_exhausted || a.value("guard_exhausted", false);
        if (a.contains("compile_s") && kinds[i] == "compiled") st.compile_s = a["compile_s"].get<double>();
        if (!last) continue;
        // The outputs of the last block, both datasets, against the reference (a wrong baseline is never the fastest).
        for (int d = 0; d < 2 && se.verified; ++d)
          for (const auto& t : d == 0 ? prepared->expected : alt->expected) {
            std::string code;
            const std::string det = check::verify_output_file(c, t, dir / (d == 0 ? "A" : "B") / (t.name + ".out"), 0xFF, &code);
            if (det.empty()) continue;
            se.verified = false;
            se.verify_code = "timed_output_wrong";
            se.verify_detail = fmt::format("PyTorch {} output '{}' on dataset {} ({}): {}", kinds[i], t.name, d == 0 ? "A" : "B", code, det);
            break;
          }
      }
    };
    for (int p = 0; p < pairs; ++p) {
      candidate_block(p == 0);
      torch_block(2 * p, false, false);
      torch_block(2 * p + 1, true, p + 1 == pairs);
      candidate_block(false);
    }
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      Series& se = series[i];
      se.label = kinds[i] == "eager" ? kTorchEager : kTorchCompiled;
      se.role = "baseline";
      se.timer = "events";
      add_torch_series(sh, std::move(se), cand_samples, o.equivalence_margin);
    }
    rep.startup.push_back(st);
    timed.push_back(sh.shape);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  rep.ran = !timed.empty();
  std::vector<std::string> compile;
  for (const auto& st : rep.startup)
    if (st.compile_s >= 0) compile.push_back(fmt::format("{:.1f} s at {}", st.compile_s, st.shape));
  rep.status = rep.ran ? fmt::format("done: {} at {} shape(s), torch {} on {}; A B B A blocks against the candidate{}{}", fmt::join(kinds, ", "),
                                     timed.size(), rep.torch_version, rep.device,
                                     compile.empty() ? "" : fmt::format("; torch.compile startup (compilation, first call) {}", fmt::join(compile, ", ")),
                                     rep.clocks == "nvml" ? "" : "; " + rep.clocks)
                       : "not run: no shape with verified candidate samples";
  return rep;
}

}  // namespace kqual::bench
