// The reference process of a declared contract (python_reference.hpp); its Python side is in
// python_reference_driver.cpp. A reference (or generator) that raises, returns the wrong shape or
// dtype, or cannot be imported is a contract error naming the file and the case, never a candidate
// failure.
#include "python_reference.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <numeric>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/process.hpp"

namespace kqual::contract::declared {
namespace fs = std::filesystem;

namespace {

constexpr double kRefAnswerS = 600;    // [s] one reply (a 2^24-element case takes ~1 s; the hello imports NumPy or PyTorch)
constexpr double kRefExitGraceS = 5;   // [s] for a process whose pipes closed to end, so its stderr is whole


bool is_int_dtype(DType t) { return is_integral(t); }

std::string which(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return exe;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  std::size_t b = 0;
  while (b <= p.size()) {
    std::size_t e = p.find(':', b);
    if (e == std::string::npos) e = p.size();
    fs::path cand = fs::path(p.substr(b, e - b)) / exe;
    if (access(cand.c_str(), X_OK) == 0) return cand.string();
    b = e + 1;
  }
  return "";
}

}  // namespace

PythonReference::~PythonReference() = default;  // the Child's destructor kills its group and reaps it

void PythonReference::fail(const Spec& s, const std::string& case_id, const std::string& why) const {
  throw_error(ErrorKind::input, fmt::format("contract {}: reference {}:{}{}: {}", s.file.string(), s.reference.file.string(),
                                            s.reference.function, case_id.empty() ? "" : " on case " + case_id, why));
}

void PythonReference::fail_generator(const Spec& s, const std::string& case_id, const std::string& why) const {
  throw_error(ErrorKind::input, fmt::format("contract {}: generator {}:{}{}: {}", s.file.string(), s.generator->file.filename().string(),
                                            s.generator->function, case_id.empty() ? "" : " on case " + case_id, why));
}

namespace {

// n 8-byte values from `file` into dst, then the file removed; false when it holds another size.
bool read_words(const fs::path& file, void* dst, std::size_t n, std::size_t& got, bool& longer) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  got = 0;
  while (got < n * 8) {
    ssize_t r = ::read(fd, static_cast<char*>(dst) + got, n * 8 - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += std::size_t(r);
  }
  char extra;
  longer = got == n * 8 && ::read(fd, &extra, 1) == 1;
  close(fd);
  fs::remove(file);
  return got == n * 8 && !longer;
}

// One input written where the driver reads it (`f`), and the request's entry for it.
json write_input(const Tensor& t, const TensorDef& td, const Dims& dims, const fs::path& f) {
  json shape = json::array();
  for (const auto& a : td.shape) shape.push_back(dims.at(a));
  const std::size_t n = std::size_t(t.elements);
  // Each input in a storage NumPy reads directly, exactly: f32 and f64 as they are, bf16 widened to
  // f32 (exact), integers as int64; the driver widens floats to float64.
  std::string kind = "f8";
  if (t.dtype == DType::f32 || t.dtype == DType::f64) {
    write_file(f, t.bytes.data(), t.bytes.size());
    kind = t.dtype == DType::f32 ? "f4" : "f8";
  } else if (is_floating(t.dtype)) {  // bf16, f16, e4m3, e5m2: every value is an f32 exactly
    MappedFile m = MappedFile::create(f, n * 4);
    auto* p = reinterpret_cast<float*>(m.data());
    parallel_for((n + (1u << 20) - 1) >> 20, [&](std::size_t c) {
      for (std::size_t i = c << 20; i < std::min(n, (c + 1) << 20); ++i) p[i] = float(element_as_double(t.dtype, t.bytes.data(), i));
    });
    kind = "f4";
  } else if (t.dtype == DType::boolean) {  // NumPy's bool_ is one byte, 0 or 1, like the kernel's
    write_file(f, t.bytes.data(), t.bytes.size());
    kind = "b1";
  } else {
    MappedFile m = MappedFile::create(f, n * 8);
    auto* p = reinterpret_cast<std::int64_t*>(m.data());
    if (t.dtype == DType::i64) {
      std::memcpy(p, t.bytes.data(), n * 8);  // exact beyond 2^53
    } else {
      parallel_for((n + (1u << 20) - 1) >> 20, [&](std::size_t c) {
        for (std::size_t i = c << 20; i < std::min(n, (c + 1) << 20); ++i) p[i] = std::int64_t(element_as_double(t.dtype, t.bytes.data(), i));
      });
    }
    kind = "i8";
  }
  return {{"file", f.string()}, {"dtype", kind}, {"int", is_int_dtype(t.dtype)}, {"shape", shape}};
}

// The scalars as the request carries them: the value the kernel gets.
json request_scalars(const Spec& s) {
  json out = json::object();
  for (const auto& sc : s.scalars) {
    if (is_int_dtype(sc.dtype)) out[sc.name] = std::int64_t(sc.value);
    else if (sc.dtype == DType::f32) out[sc.name] = double(float(sc.value));  // the value the kernel gets
    else out[sc.name] = sc.value;
  }
  return out;
}

// A reference request's case: its inputs written where the driver reads them, the scalars, the axes,
// and each output's name, shape and kind ("file" added by evaluate, which reads them back).
json case_request(const Spec& s, const std::vector<Tensor>& inputs, const Dims& dims, const fs::path& dir, std::uint64_t k,
                  const std::map<std::string, DType>& dtypes) {
  json req{{"inputs", json::object()}, {"scalars", request_scalars(s)}, {"axes", json::object()}, {"outputs", json::array()}};
  for (const auto& t : inputs)
    req["inputs"][t.name] = write_input(t, *s.tensor(t.name), dims, dir / fmt::format("in{}_{}.bin", k % 2, t.name));
  for (const auto& [n, v] : dims) req["axes"][n] = v;
  for (const auto& td : s.tensors) {
    if (td.role != Role::output) continue;
    json shape = json::array();
    for (const auto& a : td.shape) shape.push_back(dims.at(a));
    req["outputs"].push_back({{"name", td.name}, {"shape", shape}, {"int", reference_gives_integers(td, dtypes.at(td.name))}});
  }
  return req;
}

}  // namespace

std::map<std::string, RefOutput> PythonReference::generate(const Spec& s, const Dims& dims, const std::string& family, std::uint32_t seed,
                                                           const std::string& case_id, const std::map<std::string, DType>& dtypes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!child_) start(s);
  json req{{"op", "generate"}, {"seed", seed}, {"family", family}, {"scalars", json::object()}, {"axes", json::object()},
           {"tensors", json::array()}, {"other_inputs", json::array()}};
  req["scalars"] = request_scalars(s);
  for (const auto& [n, v] : dims) req["axes"][n] = v;
  struct Want {
    const TensorDef* td;
    fs::path file;
    std::size_t n;
  };
  std::vector<Want> wants;
  const std::uint64_t k = calls_++;
  for (const auto& td : s.tensors) {
    if (td.role != Role::input) continue;
    if (!td.values.generated) {
      req["other_inputs"].push_back(td.name);
      continue;
    }
    const DType d = dtypes.at(td.name);
    json shape = json::array();
    std::size_t n = 1;
    for (const auto& a : td.shape) {
      shape.push_back(dims.at(a));
      n *= std::size_t(dims.at(a));
    }
    const fs::path f = dir_->path() / fmt::format("gen{}_{}.bin", k % 2, td.name);
    const char* kind = d == DType::boolean ? "bool" : is_int_dtype(d) ? "int" : "float";
    req["tensors"].push_back({{"name", td.name}, {"file", f.string()}, {"shape", shape}, {"axes", td.shape}, {"kind", kind},
                              {"dtype", std::string(to_string(d))}});
    wants.push_back({&td, f, n});
  }
  const json r = answer(s, req, case_id, true);
  std::map<std::string, RefOutput> out;
  for (const auto& w : wants) {
    RefOutput& o = out[w.td->name];
    const bool integer = is_int_dtype(dtypes.at(w.td->name));
    void* dst = nullptr;
    if (integer) {
      o.i.resize(w.n);
      dst = o.i.data();
    } else {
      o.f.resize(w.n);
      dst = o.f.data();
    }
    std::size_t got = 0;
    bool longer = false;
    if (!read_words(w.file, dst, w.n, got, longer))
      fail_generator(s, case_id, fmt::format("input '{}': {} bytes written, expected {}", w.td->name,
                                             longer ? "more than " + std::to_string(got) : std::to_string(got), w.n * 8));
  }
  return out;
}

std::string PythonReference::stderr_after_exit() {
  if (!child_) return "";
  (void)child_->wait(Child::after(kRefExitGraceS));
  return child_->stderr_tail(2000);
}

void PythonReference::start(const Spec& s) {
  const std::string py = reference_python();
  dir_ = std::make_unique<ScratchDir>("kqual-ref");
  json cfg{{"file", s.reference.file.string()}, {"function", s.reference.function}, {"kind", s.reference.kind}};
  if (!s.reference.alternative.empty()) cfg["alternative"] = s.reference.alternative;
  if (s.generator)
    cfg["generator"] = {{"file", s.generator->file.string()}, {"function", s.generator->function}, {"kind", s.generator->kind}};
  ChildSpec spec;
  spec.exe = py;
  spec.args = {"-c", reference_driver_source(), cfg.dump()};
  spec.env = environment_with();
  spec.what = "the reference process";  // stderr captured: its tail explains a process that died
  child_ = std::make_unique<Child>(spec);
  ++started_;
  const std::string hello = call(s, "", "");
  json h = json::parse(hello, nullptr, false);
  if (h.is_discarded() || !h.value("ok", false)) {
    const std::string why = h.is_discarded() ? hello : h.value("error", std::string("?"));
    stop();
    // A contract that needs PyTorch where it is not installed is named as such (the driver's words).
    if (why.find("needs PyTorch") != std::string::npos) fail(s, "", why.substr(why.find("needs PyTorch")));
    fail(s, "", fmt::format("cannot be imported with {}: {}", py, why));
  }
}

// One request line (none: the hello) and its reply line, within the reference's time limit.
std::string PythonReference::call(const Spec& s, const std::string& line, const std::string& case_id) {
  const auto deadline = Child::after(kRefAnswerS);
  // A write or read that timed out, or found the process gone (`exited` words that from its stderr):
  // the process stopped and the call failed.
  auto check = [&](ChildIo io, auto&& exited) {
    if (io == ChildIo::timed_out) {
      stop();
      fail(s, case_id, fmt::format("no answer in {:.0f} s", kRefAnswerS));
    }
    if (io == ChildIo::closed) {
      const std::string err = stderr_after_exit();
      stop();
      fail(s, case_id, exited(err));
    }
  };
  if (!line.empty())
    check(child_->write(line + "\n", deadline),
          [](const std::string& err) { return "the reference process exited (its stderr: " + err + ")"; });
  std::string reply;
  check(child_->read_line(reply, deadline),
        [](const std::string& err) { return "the reference process exited" + (err.empty() ? std::string() : ": " + err); });
  return reply;
}

json PythonReference::answer(const Spec& s, const json& req, const std::string& case_id, bool generator) {
  const std::string reply = call(s, req.dump(), case_id);
  json r = json::parse(reply, nullptr, false);
  auto failed = [&](const std::string& why) { generator ? fail_generator(s, case_id, why) : fail(s, case_id, why); };
  if (r.is_discarded()) failed("unreadable answer: " + reply.substr(0, 500));
  if (!r.value("ok", false)) failed(r.value("error", std::string("?")) + "\n" + r.value("trace", std::string()));
  return r;
}

Evaluation PythonReference::evaluate(const Spec& s, const std::vector<Tensor>& inputs, const Dims& dims, bool with_magnitude,
                                     const std::string& case_id, const std::map<std::string, DType>& dtypes, std::uint64_t rng_seed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!child_) start(s);
  using clk = std::chrono::steady_clock;
  const auto t0 = clk::now();
  const std::uint64_t k = calls_++;
  json req = case_request(s, inputs, dims, dir_->path(), k, dtypes);
  req["magnitude"] = with_magnitude;
  req["rng_seed"] = rng_seed & 0xFFFFFFFFu;
  std::vector<fs::path> files;
  for (json& o : req["outputs"]) {
    const fs::path f = dir_->path() / fmt::format("out_{}.bin", o["name"].get<std::string>());
    files.push_back(f);
    o["file"] = f.string();
  }
  const auto t1 = clk::now();
  const json r = answer(s, req, case_id, false);
  const auto t2 = clk::now();
  Evaluation out;
  out.reference_float32 = r.value("reference_float32", std::string());
  // One output file into its place: read() straight into the vector, no mapping of the file.
  auto read_output = [&](const fs::path& file, const TensorDef& td, std::size_t n, RefOutput& o) {
    const bool integer = reference_gives_integers(td, dtypes.at(td.name));
    void* dst = nullptr;
    if (integer) {
      o.i.reserve(n);
      advise_huge_pages(o.i.data(), n * 8);
      o.i.resize(n);
      dst = o.i.data();
    } else {
      o.f.reserve(n);
      advise_huge_pages(o.f.data(), n * 8);
      o.f.resize(n);
      dst = o.f.data();
    }
    if (!fs::exists(file)) fail(s, case_id, fmt::format("output '{}' was not written", td.name));
    std::size_t got = 0;
    bool longer = false;
    if (!read_words(file, dst, n, got, longer))
      fail(s, case_id, fmt::format("output '{}': {} bytes written, expected {}", td.name, longer ? "more than " + std::to_string(got) : std::to_string(got), n * 8));
  };
  std::size_t fi = 0;
  for (const auto& td : s.tensors) {
    if (td.role != Role::output) continue;
    std::size_t n = 1;
    for (const auto& a : td.shape) n *= std::size_t(dims.at(a));
    const fs::path& file = files[fi++];
    read_output(file, td, n, out.values[td.name]);
    if (with_magnitude) read_output(file.string() + ".mag", td, n, out.magnitude[td.name]);
    if (!s.reference.alternative.empty() && !reference_gives_integers(td, dtypes.at(td.name)))
      read_output(file.string() + ".alt", td, n, out.alternative[td.name]);
  }
  if (std::getenv("KQUAL_REFERENCE_TRACE")) {
    auto ms = [](clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    fmt::print(stderr, "reference {}: inputs written {:.0f} ms, Python {:.0f} ms, outputs read {:.0f} ms\n", case_id, ms(t0, t1),
               ms(t1, t2), ms(t2, clk::now()));
  }
  return out;
}

std::map<std::string, bool> PythonReference::moves(const Spec& s, const std::vector<Tensor>& inputs, const std::vector<Tensor>& alternatives,
                                                   const Dims& dims, const std::string& case_id,
                                                   const std::map<std::string, DType>& dtypes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!child_) start(s);
  const std::uint64_t k = calls_++;
  json req = case_request(s, inputs, dims, dir_->path(), k, dtypes);
  req["op"] = "moves";
  req["rng_seed"] = 0;
  req["alternatives"] = json::object();
  for (const auto& t : alternatives)
    req["alternatives"][t.name] = write_input(t, *s.tensor(t.name), dims, dir_->path() / fmt::format("alt_{}.bin", t.name));
  const json r = answer(s, req, case_id, false);
  std::map<std::string, bool> out;
  for (const auto& t : alternatives) {
    const json m = r.value("moved", json::object());
    if (!m.contains(t.name) || !m[t.name].is_boolean()) fail(s, case_id, fmt::format("no answer for input '{}' in: {}", t.name, r.dump().substr(0, 500)));
    out[t.name] = m[t.name].get<bool>();
  }
  return out;
}

}  // namespace kqual::contract::declared

namespace kqual::contract {

bool needs_pytorch_here(const Error& e) {
  // The words of kqual's own reference driver (python_reference_driver.cpp) when torch cannot be imported.
  return std::string_view(e.what()).find("needs PyTorch: ") != std::string_view::npos;
}


std::string reference_python() {
  static std::mutex mu;
  static std::string chosen;
  std::lock_guard<std::mutex> lock(mu);
  if (!chosen.empty()) return chosen;
  std::vector<std::string> tries;
  if (const char* e = std::getenv("KQUAL_PYTHON"); e && *e) tries.push_back(e);
  else tries = {"python3", "/usr/bin/python3"};
  std::vector<std::string> tried;
  for (const auto& t : tries) {
    const std::string exe = declared::which(t);
    if (exe.empty()) {
      tried.push_back(t + " (not found)");
      continue;
    }
    ProcessResult r = run_process(exe, {"-c", std::string(declared::kIsolatedPrelude) + "import numpy"}, {}, {}, 60);
    if (r.exited && r.exit_code == 0) return chosen = exe;
    tried.push_back(exe + " (no NumPy)");
  }
  throw_error(ErrorKind::input, fmt::format("declared contracts need Python 3 with NumPy for their reference (tried {}; "
                                            "install python3-numpy, or set KQUAL_PYTHON)", fmt::join(tried, ", ")));
}

}  // namespace kqual::contract
