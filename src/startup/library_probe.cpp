// Child side of a library's first request (kqual compare OLD.so NEW.so): in this fresh process,
// dlopen the named libcublas, create its handle and make the first call of each shape, each timed
// apart. The call is kqual's own (cuda::LibraryCall: cublasSgemm_v2 / cublasGemmEx), never the
// library owner's host code. Nothing here writes to stdout: the parent parses the one JSON line.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "kqual/core/dtype.hpp"
#include "kqual/core/error.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/cuda/objects.hpp"
#include "probe_internal.hpp"

namespace kqual::startup::detail {
namespace {

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::string text;  // "m,n,k" as given
};

GemmShape parse_gemm_shape(const std::string& s) {
  GemmShape g;
  g.text = s;
  long long v[3] = {0, 0, 0};
  char tail = 0;
  if (std::sscanf(s.c_str(), "%lld,%lld,%lld%c", &v[0], &v[1], &v[2], &tail) != 3 || v[0] < 1 || v[1] < 1 || v[2] < 1 ||
      v[0] > INT32_MAX || v[1] > INT32_MAX || v[2] > INT32_MAX)
    throw_error(ErrorKind::usage, fmt::format("library shape '{}' is not m,n,k with 1 <= each < 2^31", s));
  g.m = v[0], g.n = v[1], g.k = v[2];
  return g;
}

// Every element 1/64 (exact in f32, bf16 and f16), so that every element of C is k/4096: a wrong
// result is seen at once (the contract's adversarial cases are the worker's job, not the probe's).
std::vector<std::uint8_t> filled(DType t, std::size_t elements) {
  std::vector<std::uint8_t> v(elements * dtype_size(t));
  if (t == DType::f32) {
    const float x = 1.0f / 64;
    for (std::size_t i = 0; i < elements; ++i) std::memcpy(v.data() + 4 * i, &x, 4);
  } else {
    const std::uint16_t x = t == DType::f16 ? 0x2400 : 0x3c80;  // 2^-6 in f16 / bf16
    for (std::size_t i = 0; i < elements; ++i) std::memcpy(v.data() + 2 * i, &x, 2);
  }
  return v;
}

double decode(DType t, const std::uint8_t* p) {
  if (t == DType::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  if (t == DType::bf16) {
    const std::uint32_t bits = std::uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;  // f16
  const double mag = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}

// One shape's operands, uploaded before anything is timed.
struct Operands {
  cuda::DeviceBuffer a, b, c;
};

Operands make_operands(DType t, const GemmShape& g) {
  Operands o{cuda::DeviceBuffer(std::size_t(g.m * g.k) * dtype_size(t)), cuda::DeviceBuffer(std::size_t(g.k * g.n) * dtype_size(t)),
             cuda::DeviceBuffer(std::size_t(g.m * g.n) * dtype_size(t))};
  const auto a = filled(t, std::size_t(g.m * g.k));
  const auto b = filled(t, std::size_t(g.k * g.n));
  o.a.upload(a.data(), a.size());
  o.b.upload(b.data(), b.size());
  return o;
}

// C's first and last element against k/4096 (rounded to the dtype, with the accumulation's slack).
std::string check_result(DType t, const GemmShape& g, const Operands& o) {
  const std::size_t es = dtype_size(t);
  std::vector<std::uint8_t> first(es), last(es);
  o.c.download(first.data(), es);
  o.c.download(last.data(), es, std::size_t(g.m * g.n - 1) * es);
  const double want = double(g.k) / 4096.0;
  const double tol = want * (t == DType::f32 ? 1e-5 : t == DType::f16 ? 2e-3 : 1e-2) + 1e-30;
  for (const double got : {decode(t, first.data()), decode(t, last.data())})
    if (!(std::fabs(got - want) <= tol))
      return fmt::format("shape {}: C holds {} where every element must be k/4096 = {}", g.text, got, want);
  return "";
}

}  // namespace

json library_probe(const ProbeRequest& req, long long t_main) {
  json out{{"ok", false}, {"kind", "library"}, {"no_gpu", false}};
  json phases = json::object();
  if (req.spawn_ns > 0) phases["process_start"] = double(t_main - req.spawn_ns) * 1e-6;
  const auto dtype = parse_dtype(req.library_dtype);
  if (!dtype || (*dtype != DType::f32 && *dtype != DType::bf16 && *dtype != DType::f16))
    throw_error(ErrorKind::usage, fmt::format("library probe: dtype '{}' is not f32, bf16 or f16", req.library_dtype));
  if (req.library_shapes.empty()) throw_error(ErrorKind::usage, "library probe: no shape to call");
  const bool lt = req.library_api == "cublaslt";
  if (!lt && req.library_api != "cublas")
    throw_error(ErrorKind::usage, fmt::format("library probe: api '{}' is not cublas or cublaslt", req.library_api));
  std::vector<GemmShape> shapes;
  for (const auto& s : req.library_shapes) shapes.push_back(parse_gemm_shape(s));

  if (!timed_driver_init(out, phases)) return out;
  long long t = monotonic_ns();
  // The context and stream as kqual's worker makes them (where the same calls are timed warm).
  cuda::Context ctx(0);
  cuda::Stream stream;
  phases["context"] = ms_since(t);

  // Operands first (allocation and upload are not the library's cost), then the library.
  std::vector<Operands> ops;
  for (const auto& g : shapes) ops.push_back(make_operands(*dtype, g));
  ::setenv("KQUAL_CUBLAS_LIBRARY", req.library.c_str(), 1);
  t = monotonic_ns();
  if (lt) (void)cuda::cublaslt_version();  // dlopen + symbols (its version is a constant: no work)
  else cuda::load_cublas();
  phases["library_load"] = ms_since(t);

  const std::string routine = fmt::format("{}.gemm<{}>", lt ? "cublaslt" : "cublas", cxx_type(*dtype));
  json per_shape = json::array();
  double kernel_first_use = phases["library_load"].get<double>();
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& g = shapes[i];
    t = monotonic_ns();
    cuda::LibraryCall call(routine, {ops[i].a.get(), ops[i].b.get(), ops[i].c.get()}, {g.m, g.n, g.k}, stream.get());
    const double setup = ms_since(t);
    t = monotonic_ns();
    call.enqueue(stream.get());
    stream.synchronize();
    const double first = ms_since(t);
    if (const std::string bad = check_result(*dtype, g, ops[i]); !bad.empty())
      throw_error(ErrorKind::cuda, fmt::format("{} returned a wrong result: {}", req.library, bad));
    std::vector<double> steady;
    for (int r = 0; r < req.steady_launches; ++r) {
      t = monotonic_ns();
      call.enqueue(stream.get());
      stream.synchronize();
      steady.push_back(ms_since(t));
    }
    std::sort(steady.begin(), steady.end());
    const double steady_ms = steady.empty() ? 0.0 : steady[steady.size() / 2];
    per_shape.push_back({{"shape", g.text}, {"setup_ms", setup}, {"first_call_ms", first}, {"steady_call_ms", steady_ms}});
    if (i == 0) {
      phases["handle"] = setup;  // the first LibraryCall creates the handle and its workspace
      phases["first_call"] = first;
      if (!steady.empty()) phases["steady_call"] = steady_ms;
      kernel_first_use += setup + first;
    } else {
      phases[fmt::format("first_call[{}]", g.text)] = setup + first;
    }
  }
  phases["kernel_first_use"] = kernel_first_use;
  phases["first_use"] = phases["driver_init"].get<double>() + phases["context"].get<double>() + kernel_first_use;

  // What ran, after every timed phase: the files mapped into this process and cuBLAS's own version.
  out["library"] = {{"requested", req.library},
                    {"api", req.library_api},
                    {"loaded", lt ? cuda::cublaslt_library_path() : cuda::cublas_library_path()},
                    {"cublaslt_loaded_first", lt ? std::string() : cuda::cublas_lt_library_path()},
                    {"mapped", cuda::loaded_library_files("cublas")},
                    {"version", lt ? cuda::cublaslt_version() : cuda::cublas_version()},
                    {"routine", routine}};
  const cuda::DriverApi& api = cuda::driver();
  if (api.cuModuleGetLoadingMode) {
    CUmoduleLoadingMode lm{};
    if (api.cuModuleGetLoadingMode(&lm) == CUDA_SUCCESS)
      out["loading_mode_applied"] = lm == CU_MODULE_LAZY_LOADING ? "LAZY" : "EAGER";
  }
  out["device"] = device_record();
  out["shapes"] = per_shape;
  out["phases"] = phases;
  out["skipped"] = json::array();
  out["ok"] = true;
  return out;
}

}  // namespace kqual::startup::detail
