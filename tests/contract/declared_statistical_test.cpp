// A reference that draws random numbers (sampling, dropout) cannot be compared element by element:
// the contract is refused by name when it is first used, whichever generator it draws from.
#include <gtest/gtest.h>

#include <fstream>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;


std::string first_use_error(const std::string& name, const std::string& py) {
  test_util::OneAxis keys;
  keys.summary = "y = f(x)";
  keys.axis = "range = [1, 100000]\nhints = [32]\nbase = 64";
  const test_util::ContractFolder folder(test_util::one_axis_contract(name, keys), py, name);
  const Contract& c = load_declared_contract(folder.file);
  Supports s = test_util::f32_only();
  try {
    (void)c.reference(c.make_case(c.correctness_cases(s, 1, false).front()), test_util::run_host());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StatisticalReference, SamplingReferencesAreRefusedByName) {
  if (!test_util::have_numpy()) GTEST_SKIP() << "no Python 3 with NumPy";
  for (const auto& [name, py] : std::vector<std::pair<std::string, std::string>>{
           {"np_sampler", "import numpy as np\ndef f(x):\n    return x + np.random.normal(size=x.shape)\n"},
           {"py_sampler", "import random\ndef f(x):\n    return x * random.random()\n"},
           {"dropout", "import numpy as np\ndef f(x):\n    return x * (np.random.rand(*x.shape) > 0.5)\n"}}) {
    const std::string e = first_use_error(name, py);
    EXPECT_NE(e.find("is a statistical operation"), std::string::npos) << name << ": " << e;
  }
  // A fixed generator of its own is deterministic: not a sample, accepted.
  EXPECT_EQ(first_use_error("own_generator",
                            "import numpy as np\ndef f(x):\n    g = np.random.default_rng(7)\n    return x * g.uniform(1, 2, size=x.shape)\n"),
            "");
}

}  // namespace
}  // namespace kqual::contract
