// Run-to-run reproducibility as a stated rule: every built-in contract states it per dtype with a
// reason; declared contracts read [contract] deterministic (default true) and deterministic_reason,
// refuse a value that is not a boolean, and every bundled contract.toml states it explicitly.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "kqual/contract/contract.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract::repro_test {
namespace fs = std::filesystem;

const fs::path kReproRepo = KQUAL_SOURCE_DIR;

// Required per contract and dtype: exact results require it; float reductions whose bound covers any
// summation order do not; softmax does (a fixed-order merge costs nothing, and it feeds sampling).
TEST(Reproducibility, BuiltInContractsStateTheirRuleWithAReason) {
  struct Rule {
    const char* contract;
    DType dtype;
    bool required;
  };
  const Rule rules[] = {
      {"residual_add_relu", DType::f32, true}, {"residual_add_relu", DType::bf16, true},
      {"transpose", DType::f32, true},         {"transpose", DType::bf16, true},
      {"transpose", DType::i32, true},         {"softmax", DType::f32, true},
      {"softmax", DType::bf16, true},          {"exclusive_scan", DType::i32, true},
      {"exclusive_scan", DType::f32, false},   {"gemm", DType::f32, false},
      {"gemm", DType::bf16, false},            {"reduce_sum", DType::f32, false},
      {"reduce_sum", DType::bf16, false},
  };
  for (const Rule& r : rules) {
    const Reproducibility got = find_contract(r.contract).reproducibility(r.dtype);
    EXPECT_EQ(got.required, r.required) << r.contract << " " << to_string(r.dtype);
    EXPECT_EQ(find_contract(r.contract).deterministic(r.dtype), r.required) << r.contract;
    EXPECT_GT(got.reason.size(), 20u) << r.contract << ": a reason, not a word";
    EXPECT_FALSE(got.opt_out.empty()) << r.contract;
  }
  // Every built-in, every dtype: a reason; the policy text says what two runs must do.
  for (const std::string& name : contract_names()) {
    const Contract& c = find_contract(name);
    for (DType t : c.dtypes()) EXPECT_FALSE(c.reproducibility(t).reason.empty()) << name << " " << to_string(t);
    EXPECT_NE(c.numerical_policy().find("un to run"), std::string::npos) << name << ": " << c.numerical_policy();
  }
  // Where it is not required, the opt-in is the manifest's claim.
  EXPECT_NE(find_contract("reduce_sum").reproducibility(DType::f32).opt_out.find("[supports] deterministic = true"), std::string::npos);
}

// A declared contract folder written by a test: y = 2 x over n, `contract_keys` in its [contract] table.
test_util::ContractFolder repro_folder(const std::string& name, const std::string& contract_keys) {
  test_util::OneAxis keys;
  keys.contract_keys = contract_keys;
  keys.axis = "range = [1, 1000000]\nbase = 40";
  return test_util::ContractFolder(test_util::one_axis_contract(name, keys), "def f(x):\n    return 2 * x\n", name);
}

std::string repro_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    return e.what();
  }
  return "";
}

TEST(Reproducibility, DeclaredKeyDefaultsToRequiredAndIsRead) {
  const auto plain = repro_folder("repro_default", "");
  const Contract& d = load_declared_contract(plain.file);
  EXPECT_TRUE(d.reproducibility(DType::f32).required);  // today's rule when the key is absent
  EXPECT_NE(d.reproducibility(DType::f32).opt_out.find(plain.file.string()), std::string::npos);
  EXPECT_NE(d.numerical_policy().find("two runs must agree bitwise"), std::string::npos) << d.numerical_policy();

  const auto loose = repro_folder("repro_loose", "deterministic = false\ndeterministic_reason = \"a split reduction with atomics\"\n");
  const Contract& l = load_declared_contract(loose.file);
  EXPECT_FALSE(l.reproducibility(DType::f32).required);
  EXPECT_EQ(l.reproducibility(DType::f32).reason, "a split reduction with atomics");
  EXPECT_NE(l.numerical_policy().find("not required"), std::string::npos) << l.numerical_policy();

  const auto strict = repro_folder("repro_strict", "deterministic = true\n");
  EXPECT_TRUE(load_declared_contract(strict.file).reproducibility(DType::f32).required);
}

TEST(Reproducibility, DeclaredKeyRefusesWhatIsNotABoolean) {
  for (const char* bad : {"deterministic = \"yes\"\n", "deterministic = 1\n", "deterministic_reason = 3\n"}) {
    const auto f = repro_folder(std::string("repro_bad_") + std::to_string(std::hash<std::string>{}(bad) % 1000), bad);
    const std::string e = repro_error_of([&] { (void)load_declared_contract(f.file); });
    EXPECT_NE(e.find(f.file.string()), std::string::npos) << e;
    EXPECT_NE(e.find("contract.deterministic"), std::string::npos) << e;
  }
}

// The bundled contracts state the rule explicitly, with a reason (a reader of the file sees it).
TEST(Reproducibility, BundledContractsStateItExplicitly) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kReproRepo / "contracts")) {
    const fs::path f = e.path() / "contract.toml";
    if (!fs::exists(f)) continue;
    ++n;
    const std::string text = read_text_file(f);
    EXPECT_NE(text.find("\ndeterministic = "), std::string::npos) << f;
    EXPECT_NE(text.find("\ndeterministic_reason = "), std::string::npos) << f;
    const Contract& c = load_declared_contract(f);
    EXPECT_EQ(c.reproducibility(DType::f32).required, text.find("\ndeterministic = true") != std::string::npos) << f;
  }
  EXPECT_GE(n, 9);
  // A reduction whose bound covers any order admits atomics; elementwise and row normalizations do not.
  EXPECT_FALSE(load_declared_contract(kReproRepo / "contracts/bmm/contract.toml").reproducibility(DType::f32).required);
  EXPECT_TRUE(load_declared_contract(kReproRepo / "contracts/gelu/contract.toml").reproducibility(DType::f32).required);
  EXPECT_TRUE(load_declared_contract(kReproRepo / "contracts/rmsnorm/contract.toml").reproducibility(DType::f32).required);
}

}  // namespace kqual::contract::repro_test
