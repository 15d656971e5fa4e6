// kqual replay, step 3: the case regenerated on the CPU from the contract and the recorded spec (the
// same function the check used: Contract::make_case is a pure function of the spec), checked against
// the input hashes the results recorded, and written as .npy files and raw bytes with their layout;
// the reference outputs beside them. A case the device generator made is described, not written.
#include <fmt/format.h>

#include <fstream>
#include <map>

#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "replay_internal.hpp"

namespace kqual::pipeline::replay_detail {
namespace {

// The tensor's shape from the contract's declaration and the case's dims; its element count alone
// when the declaration does not give exactly that many (a strided tensor's storage).
std::vector<std::int64_t> shape_of(const contract::Contract& c, const std::map<std::string, std::int64_t>& dims,
                                   const contract::Tensor& t) {
  const contract::TensorSpec* decl = c.domain().tensor(t.name);
  if (t.row_stride > 0 && t.row_length > 0 && t.elements % t.row_stride == 0) return {t.elements / t.row_stride, t.row_stride};
  if (decl && !decl->shape.empty()) {
    std::vector<std::int64_t> shape;
    std::int64_t product = 1;
    for (const auto& d : decl->shape) {
      const auto it = dims.find(d);
      if (it == dims.end()) return {t.elements};
      shape.push_back(it->second);
      product *= it->second;
    }
    if (product == t.elements) return shape;
  }
  return {t.elements};
}

json tensor_json(const ReplayTensor& t, const contract::Tensor& src, std::int64_t offset_elements) {
  json j{{"name", t.name},     {"role", t.role},   {"dtype", t.dtype},       {"npy", t.npy},
         {"raw", t.raw},       {"npy_dtype", t.npy_dtype}, {"shape", t.shape}, {"elements", t.elements},
         {"bytes", t.bytes},   {"sha256", t.sha256},
         {"offset_elements", offset_elements},
         {"view_offset_bytes", std::uint64_t(offset_elements) * dtype_size(src.dtype)}};
  if (src.row_stride > 0) j["rows"] = {{"row_length", src.row_length}, {"row_stride", src.row_stride}};
  return j;
}

// One tensor as <dir>/<sub>/<name><suffix>.npy and .bin.
ReplayTensor write_tensor(const contract::Contract& c, const contract::CaseData& data, const contract::Tensor& t, const fs::path& dir,
                          const std::string& sub, const std::string& role) {
  ReplayTensor r;
  r.name = t.name;
  r.role = role;
  r.dtype = std::string(to_string(t.dtype));
  r.npy_dtype = npy_descr(t.dtype);
  r.shape = shape_of(c, data.dims, t);
  r.elements = t.elements;
  r.bytes = t.bytes.size();
  r.npy = sub + "/" + t.name + ".npy";
  r.raw = sub + "/" + t.name + ".bin";
  r.sha256 = sha256_hex(t.bytes.data(), t.bytes.size());
  fs::create_directories(dir / sub);
  write_npy(dir / r.npy, r.npy_dtype, r.shape, t.bytes.data(), t.bytes.size());
  write_file(dir / r.raw, t.bytes.data(), t.bytes.size());
  return r;
}

// The reference in higher precision and its bound, where the output is compared under one.
void write_bounds(const contract::Tensor& t, const std::vector<std::int64_t>& shape, const fs::path& dir, json& entry) {
  if (t.ref.empty() || t.ref.size() != std::size_t(t.elements)) return;
  write_npy(dir / "reference" / (t.name + ".f64.npy"), "<f8", shape, t.ref.data(), t.ref.size() * sizeof(double));
  entry["reference_f64"] = "reference/" + t.name + ".f64.npy";
  if (t.bound.size() == t.ref.size()) {
    write_npy(dir / "reference" / (t.name + ".bound.npy"), "<f8", shape, t.bound.data(), t.bound.size() * sizeof(double));
    entry["bound_f64"] = "reference/" + t.name + ".bound.npy";
  }
  if (t.alt.size() == t.ref.size()) {  // [reference] alternative: also accepted where the reference is NaN or +-Inf
    write_npy(dir / "reference" / (t.name + ".alt.f64.npy"), "<f8", shape, t.alt.data(), t.alt.size() * sizeof(double));
    entry["alternative_f64"] = "reference/" + t.name + ".alt.f64.npy";
  }
}

// A generated case: what the device generator makes, element by element, from the case's seed.
json describe_generated(const contract::Contract& c, const contract::CaseSpec& spec) {
  json inputs = json::array(), outputs = json::array(), windows = json::array();
  int stream = 0;
  for (const auto& t : c.tensors()) {
    const DType d = c.tensor_dtype(t.name, spec.dtype);
    const std::int64_t n = c.tensor_elements(t.name, spec.dims);
    json e{{"name", t.name}, {"dtype", std::string(to_string(d))}, {"elements", n}, {"bytes", std::uint64_t(n) * dtype_size(d)}};
    if (t.role == contract::Role::input) {
      e["stream"] = stream++;
      inputs.push_back(e);
    } else {
      outputs.push_back(e);
    }
  }
  for (const auto& w : c.index_case_windows(spec))
    windows.push_back({{"tensor", w.tensor}, {"begin", w.begin}, {"count", w.count}, {"why", w.why}});
  return json{{"generator", "kqual_generate (include/kqual/contract/generated.hpp)"},
              {"seed", spec.seed},
              {"element", "input element i of stream s is generated_bits(seed, s, i, dtype): f32 a multiple of 2^-23 in [-1, 1), "
                          "bf16 and f16 of magnitude in [2^-7, 1) with either sign, i32 any value; the same on the device and on the CPU"},
              {"inputs", inputs},
              {"outputs", outputs},
              {"windows_checked", windows},
              {"verified", c.device_reference(spec) ? "on the device, against the contract's device reference (hashes per 2^20 "
                                                      "elements; a differing chunk read back)"
                                                    : "in windows, against the contract's reference on each window's sub-case"}};
}

// The regenerated inputs against the hashes the results recorded (per side); true when some were
// recorded and all agree. Error(input) on a difference: the reproducer would not hold those inputs.
bool verify_inputs(const contract::CaseData& data, const std::vector<json>& recorded, std::vector<std::string>& notes) {
  std::map<std::string, std::string> now;
  for (const auto& t : data.inputs) now[t.name] = sha256_hex(t.bytes.data(), t.bytes.size());
  bool any = false;
  for (const json& side : recorded) {
    if (!side.is_object()) continue;
    for (const auto& [name, hash] : side.items()) {
      any = true;
      const auto it = now.find(name);
      if (it == now.end())
        throw_error(ErrorKind::input, fmt::format("case '{}': results.json records input '{}', which the contract does not make",
                                                  data.spec.id, name));
      if (it->second != hash.get<std::string>())
        throw_error(ErrorKind::input, fmt::format("case '{}': input '{}' regenerated here has SHA-256 {}..., the run recorded {}...: "
                                                  "this kqual or the contract makes other inputs than the run's did",
                                                  data.spec.id, name, it->second.substr(0, 16), hash.get<std::string>().substr(0, 16)));
    }
  }
  if (!any)
    notes.push_back("results.json records no input hashes for this case: the inputs were regenerated from the contract and the "
                    "case spec (deterministic), not compared with the run's");
  return any;
}

}  // namespace

std::string npy_descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";  // NumPy has no bfloat16: the bits (as f32: bits << 16)
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::u32: return "<u4";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::e4m3:
    case DType::e5m2: return "|u1";  // fp8: the codes
    case DType::boolean: return "|b1";
  }
  return "|u1";
}

CaseFiles write_case(const contract::Contract& c, const contract::CaseSpec& spec, const std::vector<json>& recorded_sha256,
                     const fs::path& dir, std::uint64_t max_bytes, const ProgressFn& progress) {
  CaseFiles f;
  if (spec.family == contract::kGeneratedFamily) {
    f.generated = describe_generated(c, spec);
    f.layout = {{"case", spec.id}, {"generated_on_device", true}, {"generator", f.generated}};
    f.notes.push_back("the case's inputs are generated on the device (past 2^31 elements): no input or reference bytes are "
                      "written; case.json gives the generator's seed and streams, and the command generates them again");
    return f;
  }
  if (progress) progress("inputs: " + spec.id);
  const contract::CaseData data = c.make_case(spec);
  f.inputs_verified = verify_inputs(data, recorded_sha256, f.notes);
  std::uint64_t total = 0;
  for (const auto& t : data.inputs) total += t.bytes.size();
  for (const auto& t : c.tensors())
    if (t.role != contract::Role::input) total += std::uint64_t(c.tensor_elements(t.name, spec.dims)) * dtype_size(c.tensor_dtype(t.name, spec.dtype));
  f.layout = {{"case", spec.id}, {"byte_order", "little-endian"}, {"generated_on_device", false}, {"tensors", json::array()}};
  if (max_bytes > 0 && total > max_bytes) {
    f.notes.push_back(fmt::format("inputs and reference outputs come to {} bytes, over --max-bytes {}: not written (the command "
                                  "regenerates them; raise --max-bytes to write them)",
                                  total, max_bytes));
    return f;
  }
  for (const auto& t : data.inputs) {
    f.tensors.push_back(write_tensor(c, data, t, dir, "inputs", "input"));
    f.layout["tensors"].push_back(tensor_json(f.tensors.back(), t, spec.offset_elements));
  }
  if (progress) progress("reference: " + spec.id);
  std::vector<contract::Tensor> expected;
  try {
    contract::ReferenceHost host;  // a declared contract's Python reference process, for this one case
    expected = c.reference(data, host);
  } catch (const Error& e) {
    f.notes.push_back(fmt::format("reference not computed on the CPU ({}): the folder holds no reference outputs; the check "
                                  "computes them as it did in the run",
                                  e.what()));
    return f;
  }
  for (const auto& t : expected) {
    f.tensors.push_back(write_tensor(c, data, t, dir, "reference", "reference"));
    json entry = tensor_json(f.tensors.back(), t, spec.offset_elements);
    write_bounds(t, f.tensors.back().shape, dir, entry);
    f.layout["tensors"].push_back(entry);
  }
  return f;
}

}  // namespace kqual::pipeline::replay_detail

namespace kqual::pipeline {

void write_npy(const std::filesystem::path& path, const std::string& descr, const std::vector<std::int64_t>& shape, const void* bytes,
               std::size_t size) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += fmt::format("{}{}", i ? ", " : "", shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // Magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64
  // bytes and ended by a newline (the .npy format, version 1.0).
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) throw_error(ErrorKind::internal, "npy header too long");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw_error(ErrorKind::io, fmt::format("{}: cannot write", path.string()));
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, 8);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xFF), static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), std::streamsize(header.size()));
  out.write(static_cast<const char*>(bytes), std::streamsize(size));
  if (!out) throw_error(ErrorKind::io, fmt::format("{}: write failed (disk full?)", path.string()));
}

}  // namespace kqual::pipeline
