// The bundled declared contracts against PyTorch on special values, on the GPU machine: PyTorch
// eager's own result (CUDA, the case's dtype row; tools/torch/declared_specials.py holds each
// contract's PyTorch form) on every case of each contract's special-value families (NaN, +-Inf and
// -0; subnormals; extreme magnitudes) is judged by the contract's own comparison, exactly as a kernel's
// output is, and must be accepted. A value the contract fixes where a PyTorch relu written as
// clamp_min could give another is listed below (kToleratedDifferences): only those elements may
// differ, and they are counted and printed; none is required. Skipped visibly without a GPU, NumPy or
// PyTorch.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/core/process.hpp"
#include "kqual/cuda/driver.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

const char* const kSpecialsContracts[] = {"bmm",     "gelu",    "layernorm", "residual_add_relu_declared", "rmsnorm",
                                          "rmsnorm_strided", "rotary", "softmax_declared", "swiglu"};

// The harness's first-run poison (src/check/evaluate.cpp): 0xFF bytes, a NaN no computation makes.
constexpr std::uint8_t kSpecialsPoison = 0xFF;

// A value on which PyTorch may differ from a contract that the policy settles: the element pairs it covers.
struct ToleratedDifference {
  const char* contract;
  const char* policy_says;  // a phrase the contract's policy must hold (it states its value there)
  const char* what;
  bool (*covers)(DType t, const std::uint8_t* expected, const std::uint8_t* actual);
};

bool plus_zero_vs_minus_zero(DType t, const std::uint8_t* e, const std::uint8_t* a) {
  if (t == DType::f32) {
    std::uint32_t x, y;
    std::memcpy(&x, e, 4);
    std::memcpy(&y, a, 4);
    return x == 0 && y == 0x80000000u;
  }
  if (t == DType::bf16) {
    std::uint16_t x, y;
    std::memcpy(&x, e, 2);
    std::memcpy(&y, a, 2);
    return x == 0 && y == 0x8000u;
  }
  return false;
}

// residual_add_relu_declared is the built-in residual_add_relu as data, cross-checked verdict for
// verdict (declared_device_test.cpp), so it keeps the built-in's relu(-0) = +0. PyTorch eager on CUDA
// gives +0 there too (measured on the H200 with PyTorch 2.11: 0 such elements); a relu computed as
// clamp_min(x, 0), returning x itself where x == 0, would give -0, so a -0 stays tolerated and counted.
const ToleratedDifference kToleratedDifferences[] = {
    {"residual_add_relu_declared", "PyTorch eager on CUDA gives relu(-0) = +0 too",
     "relu(-0): +0 by the contract, -0 from PyTorch (none expected: +0 measured on CUDA)", plus_zero_vs_minus_zero},
};

// The families of special values of a contract.toml: a [families.NAME] table that sets specials,
// denormals or extremes for an input, or a standard deviation of 20 or more (magnitudes where exp,
// tanh or x^3 saturate or overflow f32).
std::set<std::string> special_families(const fs::path& toml) {
  std::set<std::string> out;
  std::istringstream in(read_text_file(toml));
  std::string line, family;
  while (std::getline(in, line)) {
    if (line.starts_with("[")) {
      family.clear();
      if (line.starts_with("[families.")) family = line.substr(10, line.find(']') - 10);
      continue;
    }
    if (family.empty()) continue;
    const std::string code = line.substr(0, line.find('#'));
    bool special = code.find("specials") != std::string::npos || code.find("denormals") != std::string::npos ||
                   code.find("extremes") != std::string::npos;
    if (const std::size_t at = code.find("std ="); at != std::string::npos) special |= std::fabs(std::atof(code.c_str() + at + 5)) >= 20;
    if (special) out.insert(family);
  }
  return out;
}

// "NaN", "+Inf", "-Inf", "-0", "subnormal" or "finite": the class of one input element.
std::string value_class(DType t, const std::uint8_t* p, std::size_t i) {
  const double v = contract::element_as_double(t, p, i);
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return std::signbit(v) ? "-0" : "+0";
  if (t == DType::f32 || t == DType::bf16) return std::fabs(v) < 1.1754943508222875e-38 ? "subnormal" : "finite";
  return "finite";
}

struct PreparedSpecial {
  const contract::Contract* c = nullptr;
  contract::CaseData data;
  std::vector<contract::Tensor> expected;
  std::map<std::string, fs::path> out_files;
};

std::string last_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::size_t at = text.rfind('\n');
  return at == std::string::npos ? text : text.substr(at + 1);
}

bool torch_here(std::string* why) {
  ProcessResult pr = run_process(contract::reference_python(), {"-c", "import torch"}, {}, {}, 120);
  if (pr.exited && pr.exit_code == 0) return true;
  *why = "PyTorch not importable with " + contract::reference_python() + ": " + pr.err.substr(0, 300);
  return false;
}

TEST(DeclaredSpecials, PyTorchEagerPassesEachContractsSpecialValueCases) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  std::string why;
  try {
    if (!torch_here(&why)) GTEST_SKIP() << why;
  } catch (const Error& e) {
    GTEST_SKIP() << "no reference interpreter (Python with NumPy): " << e.what();
  }
  const fs::path root = test::repo_root();
  ScratchDir dir("kqual-specials");

  // Every case of every special-value family, inputs and poisoned outputs written, the reference kept.
  std::vector<PreparedSpecial> cases;
  contract::ReferenceHost host;  // one Python reference process per contract for every case
  json request{{"cases", json::array()}};
  for (const char* name : kSpecialsContracts) {
    const fs::path file = root / "contracts" / name / "contract.toml";
    const contract::Contract& c = contract::load_declared_contract(file);
    const std::set<std::string> fams = special_families(file);
    EXPECT_FALSE(fams.empty()) << name << ": no family of special values in " << file;
    const std::string policy = c.numerical_policy();
    EXPECT_NE(policy.find("PyTorch"), std::string::npos) << name << ": the policy does not say which framework's special values it follows: "
                                                         << policy;
    contract::Supports all;
    all.dtypes = c.dtypes();
    all.min_alignment_bytes = 16;
    all.max_n = std::numeric_limits<std::int64_t>::max();
    int taken = 0;
    for (const auto& spec : c.correctness_cases(all, 20260711, false)) {
      if (!fams.count(spec.family)) continue;
      PreparedSpecial p;
      p.c = &c;
      p.data = c.make_case(spec);
      p.expected = c.reference(p.data, host);
      const std::string tag = fmt::format("{:04d}", cases.size());
      json r{{"contract", name}, {"id", spec.id}, {"dtype", std::string(to_string(spec.dtype))}, {"inputs", json::object()},
             {"outputs", json::array()}, {"axes", json::object()}, {"scalars", json::object()}};
      for (const auto& t : p.data.inputs) {
        const fs::path f = dir.path() / (tag + "_" + t.name + ".in");
        write_file(f, t.bytes.data(), t.bytes.size());
        r["inputs"][t.name] = {{"file", f.string()}, {"dtype", std::string(to_string(t.dtype))}, {"elements", t.elements},
                               {"row_length", t.row_length}, {"row_stride", t.row_stride}};
      }
      for (const auto& t : p.expected) {
        const fs::path f = dir.path() / (tag + "_" + t.name + ".out");
        const std::vector<std::uint8_t> poison(t.bytes.size(), kSpecialsPoison);
        write_file(f, poison.data(), poison.size());
        p.out_files[t.name] = f;
        r["outputs"].push_back({{"name", t.name}, {"file", f.string()}, {"dtype", std::string(to_string(t.dtype))}, {"elements", t.elements},
                                {"row_length", t.row_length}, {"row_stride", t.row_stride}});
      }
      for (const auto& [k, v] : p.data.dims) r["axes"][k] = v;
      for (const auto& sc : c.scalars()) r["scalars"][sc.name] = sc.value;
      request["cases"].push_back(r);
      cases.push_back(std::move(p));
      ++taken;
    }
    EXPECT_GT(taken, 0) << name << ": no case in the families " << fmt::format("{}", fmt::join(fams, ", "));
  }
  const fs::path req = dir.path() / "request.json";
  write_file_atomic(req, request.dump());

  // PyTorch, once for every case.
  ProcessResult pr = run_process(contract::reference_python(), {(root / "tools/torch/declared_specials.py").string(), req.string()}, {}, {}, 300);
  ASSERT_TRUE(pr.exited && pr.exit_code == 0) << "declared_specials.py: exit " << pr.exit_code << (pr.timed_out ? " (timed out)" : "") << "\n"
                                              << pr.err;
  const json reply = json::parse(last_line(pr.out), nullptr, false);
  ASSERT_FALSE(reply.is_discarded()) << "declared_specials.py: not JSON: " << pr.out << "\n" << pr.err;
  if (!reply.value("ok", false)) {
    const std::string code = reply.value("code", std::string());
    if (code == "no_torch" || code == "no_cuda") GTEST_SKIP() << "declared_specials.py: " << reply.value("error", std::string());
    FAIL() << "declared_specials.py: " << reply.dump();
  }
  ASSERT_EQ(reply["cases"].size(), cases.size());
  std::cout << "PyTorch " << reply.value("torch", std::string("?")) << " on " << reply.value("device", std::string("?")) << " ("
            << reply.value("precision", std::string()) << ")\n";

  // Each output judged by its contract, as a kernel's is.
  struct Tally {
    int cases = 0, accepted = 0;
    std::int64_t tolerated = 0;              // elements covered by a tolerated difference
    std::map<std::string, int> disagree_on;  // "input=class" at the first elements of each rejected case
  };
  std::map<std::string, Tally> tally;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const PreparedSpecial& p = cases[k];
    const json& got = reply["cases"][k];
    const std::string name = p.c->name(), id = p.data.spec.id;
    Tally& ty = tally[name];
    ++ty.cases;
    if (!got.value("ok", false)) {
      ADD_FAILURE() << name << " " << id << ": PyTorch's form (" << reply["forms"].value(name, std::string("?"))
                    << ") failed: " << got.value("error", std::string());
      continue;
    }
    bool accepted = true;
    for (const auto& e : p.expected) {
      std::vector<std::uint8_t> out(e.bytes.size());
      {
        std::ifstream f(p.out_files.at(e.name), std::ios::binary);
        f.read(reinterpret_cast<char*>(out.data()), std::streamsize(out.size()));
        ASSERT_EQ(std::size_t(f.gcount()), out.size()) << name << " " << id << ": output '" << e.name << "' short";
      }
      const std::size_t es = dtype_size(e.dtype);
      for (const auto& d : kToleratedDifferences) {
        if (name != d.contract || !e.bound.empty()) continue;
        for (std::size_t i = 0; i < std::size_t(e.elements); ++i)
          if (d.covers(e.dtype, e.bytes.data() + i * es, out.data() + i * es)) {
            std::memcpy(out.data() + i * es, e.bytes.data() + i * es, es);
            ++ty.tolerated;
          }
      }
      const contract::Comparison cmp = p.c->compare(e, out.data(), kSpecialsPoison);
      if (cmp.ok) continue;
      accepted = false;
      std::string at;
      for (std::int64_t i : cmp.examples) {
        std::vector<std::string> ins;
        for (const auto& in : p.data.inputs) {
          if (in.elements != e.elements || in.row_stride > 0) continue;  // not elementwise to this output
          ins.push_back(fmt::format("{} = {}", in.name, contract::format_element(in.dtype, in.bytes.data(), std::size_t(i))));
          ++ty.disagree_on[in.name + "=" + value_class(in.dtype, in.bytes.data(), std::size_t(i))];
        }
        at += fmt::format("\n    {}[{}]: PyTorch {}, contract's reference {}{}", e.name, i, contract::format_element(e.dtype, out.data(), std::size_t(i)),
                          e.ref.empty() ? contract::format_element(e.dtype, e.bytes.data(), std::size_t(i)) : fmt::format("{:.9g}", e.ref[std::size_t(i)]),
                          ins.empty() ? "" : " (inputs there: " + fmt::format("{}", fmt::join(ins, ", ")) + ")");
      }
      ADD_FAILURE() << name << " " << id << ": the contract rejects PyTorch's " << reply["forms"].value(name, std::string("?")) << " on output '"
                    << e.name << "': " << cmp.code << ": " << cmp.detail << at;
    }
    ty.accepted += accepted;
  }

  std::cout << "contract                     cases  accepted  tolerated differences  special inputs where PyTorch disagrees\n";
  for (const auto& [name, ty] : tally) {
    std::vector<std::string> on;
    for (const auto& [k, n] : ty.disagree_on) on.push_back(fmt::format("{} ({})", k, n));
    std::cout << fmt::format("{:<28} {:>5}  {:>8}  {:>21}  {}\n", name, ty.cases, ty.accepted, ty.tolerated,
                             on.empty() ? "-" : fmt::format("{}", fmt::join(on, ", ")));
  }
  for (const auto& d : kToleratedDifferences) {
    const contract::Contract* c = nullptr;
    for (const auto& p : cases)
      if (p.c->name() == d.contract) c = p.c;
    ASSERT_NE(c, nullptr) << d.contract;
    EXPECT_NE(c->numerical_policy().find(d.policy_says), std::string::npos)
        << d.contract << ": the value PyTorch may differ on (" << d.what << ") is not stated in the policy: " << c->numerical_policy();
    std::cout << d.contract << ": tolerated difference " << d.what << ": " << tally[d.contract].tolerated << " element(s)\n";
  }
}

}  // namespace
}  // namespace kqual
