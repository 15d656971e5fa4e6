// What the PyTorch timing worker is asked (torch_baseline.hpp): which operation, whether the phase
// runs, and the request of one shape. No process and no GPU here: tests/bench/ checks it on the CPU.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "kqual/bench/torch_baseline.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

std::string TorchOperation::describe() const {
  if (!builtin.empty()) return "the built-in " + builtin;
  if (reference) return fmt::format("{}:{}", reference->file.filename().string(), reference->function);
  return "nothing";
}

std::vector<std::string> torch_builtins() {
  std::vector<std::string> out;
  for (const auto& b : contract::builtin_contracts())
    if (b.torch_op) out.emplace_back(b.name);
  return out;
}

std::optional<TorchOperation> torch_operation_of(const contract::Contract& c) {
  TorchOperation op;
  if (contract::declared_file(c).empty()) {
    const std::string name = c.name();
    const auto builtins = contract::builtin_contracts();
    if (std::none_of(builtins.begin(), builtins.end(), [&](const auto& b) { return b.torch_op && name == b.name; }))
      return std::nullopt;
    op.builtin = name;
    return op;
  }
  op.reference = torch_reference_of(c);
  if (!op.reference) return std::nullopt;
  return op;
}

std::string parse_torch_compile_mode(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "default") return "default";
  if (v == "max-autotune-no-cudagraphs") return v;
  throw_error(ErrorKind::usage, fmt::format("KQUAL_TORCH_COMPILE_MODE={}: default or max-autotune-no-cudagraphs (reduce-overhead "
                                            "and max-autotune use Inductor's own CUDA graphs, which would nest inside the graph "
                                            "the timing worker captures)",
                                            v));
}

std::string torch_compile_mode() { return parse_torch_compile_mode(std::getenv("KQUAL_TORCH_COMPILE_MODE")); }

std::string torch_phase_blocker(const contract::Contract& c, const TimingOptions& o,
                                const std::optional<std::vector<std::string>>& requested) {
  if (requested && requested->empty()) return "not run: --torch-baselines none";
  if (!torch_operation_of(c))
    return contract::declared_file(c).empty()
               ? fmt::format("not run: the PyTorch worker has no operation for the built-in contract {}", c.name())
               : "not run: the contract's reference is not PyTorch ([reference] kind is not \"torch\")";
  if (const std::string why = torch_timing_blocker(o); !why.empty()) return "not run: " + why;
  try {
    (void)torch_compile_mode();
  } catch (const Error& e) {
    return std::string("not run: ") + e.what();
  }
  return "";
}

std::string torch_hello_blocker(const json& hello, const TorchOperation& op) {
  if (!hello.is_object()) return "not run: the PyTorch worker did not start";
  if (!hello.value("ok", false)) {
    const std::string code = hello.value("code", std::string()), err = hello.value("error", std::string());
    if (code == "no_torch") return "not run: torch not importable (" + err + ")";
    if (code == "no_cuda") return "not run: " + err;
    return "not run: " + (err.empty() ? std::string("the PyTorch worker did not start") : err);
  }
  if (!op.builtin.empty()) {
    const json b = hello.value("builtins", json::array());
    if (std::find(b.begin(), b.end(), json(op.builtin)) == b.end())
      return fmt::format("not run: the PyTorch worker has no operation for {} (it knows {})", op.builtin, b.dump());
  }
  return "";
}

std::vector<std::int64_t> axis_sizes(const contract::Contract& c, const std::string& tensor, const std::vector<std::string>& axes,
                                     const contract::Dims& dims) {
  std::vector<std::int64_t> sizes;
  for (const auto& a : axes) {
    auto it = dims.find(a);
    if (it == dims.end())
      throw_error(ErrorKind::internal, fmt::format("{}: tensor '{}' has axis '{}', which the dims {} lack", c.name(), tensor, a,
                                                   contract::format_dims(dims)));
    sizes.push_back(it->second);
  }
  return sizes;
}

namespace {

// A tensor's shape: the contract's domain for a built-in, the reference's declared axes otherwise.
json torch_tensor_shape(const contract::Contract& c, const TorchOperation& op, const std::string& tensor, const contract::Dims& dims) {
  std::vector<std::string> axes;
  if (op.reference) {
    if (auto it = op.reference->shapes.find(tensor); it != op.reference->shapes.end()) axes = it->second;
  } else {
    for (const auto& t : c.domain().tensors)
      if (t.name == tensor) axes = t.shape;
  }
  if (axes.empty() && !op.reference)
    throw_error(ErrorKind::internal, fmt::format("{}: no tensor '{}' in the contract's domain", c.name(), tensor));
  return axis_sizes(c, tensor, axes, dims);
}

json torch_tensor_json(const contract::Contract& c, const TorchOperation& op, const TorchTensorFiles& f, const contract::Dims& dims,
                       DType t) {
  return json{{"dtype", to_string(c.tensor_dtype(f.name, t))},
              {"shape", torch_tensor_shape(c, op, f.name, dims)},
              {"files", {f.a.string(), f.b.string()}}};
}

}  // namespace

json torch_scalars(const contract::Contract& c) {
  json s = json::object();
  for (const auto& sc : c.scalars()) {
    if (sc.dtype == DType::i32 || sc.dtype == DType::i64 || sc.dtype == DType::u32) s[sc.name] = std::int64_t(sc.value);
    else if (sc.dtype == DType::f32) s[sc.name] = double(float(sc.value));
    else s[sc.name] = sc.value;
  }
  return s;
}

json torch_shape_request(const contract::Contract& c, const TorchOperation& op, const contract::Dims& dims, DType t,
                         const std::vector<TorchTensorFiles>& inputs, const std::vector<TorchTensorFiles>& outputs,
                         const TimingOptions& o) {
  json req{{"inputs", json::object()}, {"outputs", json::array()}, {"scalars", json::object()}, {"axes", json::object()},
           {"flush", o.flush_l2 ? o.flush_mode : "none"}, {"clock_guard", o.clock_guard}, {"samples", o.samples_per_round}};
  if (!op.builtin.empty()) req["builtin"] = op.builtin;
  for (const auto& f : inputs) req["inputs"][f.name] = torch_tensor_json(c, op, f, dims, t);
  for (const auto& f : outputs) {
    json j = torch_tensor_json(c, op, f, dims, t);
    j["name"] = f.name;
    req["outputs"].push_back(j);
  }
  if (op.reference) {
    // A reference takes the contract's scalars and axes by name (the worker passes those its
    // signature has); the built-ins' one-liners take tensors only.
    req["scalars"] = torch_scalars(c);
    for (const auto& [n, v] : dims) req["axes"][n] = v;
  }
  return req;
}

json torch_cubin_launch(const fs::path& module, const std::vector<worker::Launch>& launches, const std::vector<worker::Buffer>& scratch) {
  if (launches.size() != 1)
    throw_error(ErrorKind::unsupported, fmt::format("the fidelity path times one launch; this plan has {}", launches.size()));
  const worker::Launch& l = launches[0];
  if (!l.library.empty()) throw_error(ErrorKind::unsupported, "the fidelity path launches a module's kernel, not library routine " + l.library);
  if (!scratch.empty())
    throw_error(ErrorKind::unsupported, fmt::format("the fidelity path passes the contract's tensors only; this plan has {} scratch buffer(s)",
                                                    scratch.size()));
  json args = json::array();
  for (const auto& a : l.args) {
    if (!a.buffer.empty()) args.push_back({{"tensor", a.buffer}});
    else if (a.size == 4 || a.size == 8) args.push_back({{"value", a.scalar}, {"bytes", a.size}});
    else throw_error(ErrorKind::unsupported, fmt::format("the fidelity path passes integers of 4 or 8 bytes, not {}", a.size));
  }
  return json{{"module", fs::absolute(module).string()},
              {"kernel", l.kernel},
              {"grid", l.grid},
              {"block", l.block},
              {"shared", l.shared},
              {"args", args}};
}

}  // namespace kqual::bench
