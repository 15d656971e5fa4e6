// kqual judge CONTRACT --case ID [OUTPUT...]: outputs a user computed elsewhere (another framework, a
// simulator, a kernel run by hand) judged by the contract's own comparison, on the CPU, no GPU. The case
// is one of the contract's correctness cases (`kqual contracts --cases NAME` lists them); --write-inputs
// DIR writes its inputs and the reference outputs (.npy and raw bytes) to compute the outputs from.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "command_util.hpp"
#include "kqual/contract/absent_byte.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/dtype.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/pipeline/replay.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {
namespace {
namespace fs = std::filesystem;

struct JudgeArgs {
  std::string contract, case_id;
  std::uint64_t seed = 20261202;  // check's default: the same ids give the same cases
  std::vector<fs::path> outputs;
  fs::path write_inputs;
  contract::ContractSources sources;
};

// numpy's name for a dtype's element: bf16 and the fp8 formats as their bits (numpy has no such floats).
std::string npy_descr_of(DType t) {
  switch (t) {
    case DType::f64: return "<f8";
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";
    case DType::i64: return "<i8";
    case DType::i32: return "<i4";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::u32: return "<u4";
    case DType::boolean: return "|b1";
    default: return dtype_size(t) == 1 ? "|u1" : dtype_size(t) == 2 ? "<u2" : "<u4";
  }
}

std::vector<std::int64_t> shape_of(const contract::Contract& c, const std::string& tensor, const contract::Dims& dims) {
  std::vector<std::int64_t> shape;
  for (const auto& t : c.domain().tensors)
    if (t.name == tensor)
      for (const auto& a : t.shape)
        if (auto it = dims.find(a); it != dims.end()) shape.push_back(it->second);
  return shape;
}

// A .npy file's payload (format 1.0 to 3.0, C order), checked against the expected element size and
// count; raw bytes where the file is not .npy. Error(input) naming the file and what differs.
std::vector<std::uint8_t> read_output(const fs::path& file, const contract::Tensor& want) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::uint8_t> all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t at = 0;
  if (all.size() >= 10 && std::memcmp(all.data(), "\x93NUMPY", 6) == 0) {
    const int major = all[6];
    const std::size_t len = major == 1 ? std::size_t(all[8]) | std::size_t(all[9]) << 8
                                       : std::size_t(all[8]) | std::size_t(all[9]) << 8 | std::size_t(all[10]) << 16 | std::size_t(all[11]) << 24;
    const std::size_t start = major == 1 ? 10 : 12;
    if (start + len > all.size()) throw_error(ErrorKind::input, fmt::format("{}: a .npy header longer than the file", file.string()));
    const std::string header(all.begin() + std::ptrdiff_t(start), all.begin() + std::ptrdiff_t(start + len));
    if (header.find("'fortran_order': True") != std::string::npos)
      throw_error(ErrorKind::input, fmt::format("{}: Fortran order; write it in C order (numpy.ascontiguousarray)", file.string()));
    const std::size_t d = header.find("'descr': '");
    const std::string descr = d == std::string::npos ? "" : header.substr(d + 10, header.find('\'', d + 10) - d - 10);
    const std::string item = descr.size() > 2 ? descr.substr(2) : "";
    if (descr.empty() || descr[0] == '>' || item.empty() || std::stoul(item) != dtype_size(want.dtype))
      throw_error(ErrorKind::input, fmt::format("{}: elements of dtype '{}', output '{}' is {} ({} little-endian, {} bytes each)", file.string(),
                                                descr, want.name, to_string(want.dtype), npy_descr_of(want.dtype), dtype_size(want.dtype)));
    at = start + len;
  }
  std::vector<std::uint8_t> bytes(all.begin() + std::ptrdiff_t(at), all.end());
  if (bytes.size() != want.bytes.size())
    throw_error(ErrorKind::input, fmt::format("{}: {} bytes of data, output '{}' of this case has {} ({} elements of {})", file.string(),
                                              bytes.size(), want.name, want.bytes.size(), want.elements, to_string(want.dtype)));
  return bytes;
}

int run_judge(const JudgeArgs& a, const GlobalOptions& g) {
  const contract::Contract& c = contract::ContractLookup(a.sources).resolve(a.contract, fs::current_path());
  contract::Supports wide;
  wide.dtypes = c.dtypes();
  wide.min_alignment_bytes = 1;
  wide.max_n = contract::kUnlimited;
  const contract::CaseSpec spec = check::require_case(c, wide, a.seed, a.case_id);
  contract::ReferenceHost host;
  const contract::CaseData data = c.make_case_in(spec, host);
  const std::vector<contract::Tensor> want = c.reference(data, host);
  json j{{"contract", c.name()}, {"case", spec.id}, {"seed", a.seed}, {"outputs", json::array()}};
  if (!a.write_inputs.empty()) {
    fs::create_directories(a.write_inputs);
    for (const auto& group : {&data.inputs, &want})
      for (const auto& t : *group) {
        const std::string stem = (group == &want ? "reference_" : "") + t.name;
        write_file(a.write_inputs / (stem + ".bin"), t.bytes.data(), t.bytes.size());
        pipeline::write_npy(a.write_inputs / (stem + ".npy"), npy_descr_of(t.dtype), shape_of(c, t.name, data.dims), t.bytes.data(),
                            t.bytes.size());
      }
    j["written"] = a.write_inputs.string();
  }
  if (!a.outputs.empty() && a.outputs.size() != want.size()) {
    std::vector<std::string> names;
    for (const auto& t : want) names.push_back(t.name);
    throw_error(ErrorKind::usage, fmt::format("{} output file(s) given; case {} of {} has {} output(s), in this order: {}", a.outputs.size(),
                                              spec.id, c.name(), want.size(), fmt::join(names, ", ")));
  }
  bool all_ok = true;
  for (std::size_t i = 0; i < a.outputs.size(); ++i) {
    const std::vector<std::uint8_t> got = read_output(a.outputs[i], want[i]);
    const contract::Comparison cmp = c.compare(want[i], got.data(), contract::absent_byte(got, dtype_size(want[i].dtype)));
    all_ok = all_ok && cmp.ok;
    j["outputs"].push_back({{"name", want[i].name}, {"file", a.outputs[i].string()}, {"ok", cmp.ok}, {"code", cmp.ok ? "" : cmp.code},
                            {"detail", cmp.detail}});
  }
  j["verdict"] = a.outputs.empty() ? "not_judged" : all_ok ? "right" : "wrong";
  print_outcome(g, "judge", j, [&] {
    if (!a.write_inputs.empty())
      fmt::print("case {} of {}: inputs and reference outputs written to {} (.npy and .bin)\n", spec.id, c.name(), a.write_inputs.string());
    for (const auto& o : j["outputs"])
      fmt::print("{}: {}{}\n", o["name"].get<std::string>(), o["ok"].get<bool>() ? "right" : "WRONG",
                 o["ok"].get<bool>() ? "" : ": " + o["detail"].get<std::string>());
    if (a.outputs.empty() && a.write_inputs.empty())
      fmt::print("case {} of {}: give the output file(s) to judge, or --write-inputs DIR for its inputs\n", spec.id, c.name());
  });
  return all_ok ? kExitPass : kExitFail;
}

}  // namespace

void add_judge_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto a = std::make_shared<JudgeArgs>();
  CLI::App* cmd = app.add_subcommand("judge", "Judge outputs you computed elsewhere against a contract case, on the CPU (no GPU): exit 0 "
                                              "right, 1 wrong; --write-inputs gives the case's inputs and reference outputs");
  cmd->add_option("contract", a->contract, "The contract's name (kqual contracts lists them) or its file")->required();
  cmd->add_option("--case", a->case_id, "The case's id (kqual contracts --cases NAME lists them)")->required();
  cmd->add_option("--seed", a->seed, "The case generator's seed (that of the run whose case it is)")->capture_default_str();
  input_path(cmd->add_option("outputs", a->outputs, "The case's outputs, in the contract's order: .npy (C order) or raw little-endian bytes"),
             PathRole::file);
  output_path(cmd->add_option("--write-inputs", a->write_inputs, "Write the case's inputs and reference outputs here (.npy and .bin)"),
              PathRole::folder);
  add_contract_source_options(cmd, a->sources);
  add_quiet_flag(cmd, g);
  cmd->callback([a, &g, exit_code] { *exit_code = run_judge(*a, g); });
}

}  // namespace kqual::run
