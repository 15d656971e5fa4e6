// The non-triviality check of declared contracts: a reference that raises, gives the wrong shape,
// a constant or ignores an input is a contract error naming the file and the case; an axis held at 1
// in the base shape is raised before the reference is called constant; inputs declared unread.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {

using test_util::error_of;
using Written = test_util::ContractFolder;

// y = 2 x over n (test_util::one_axis_contract).
std::string y_twice_x(const std::string& name) { return test_util::one_axis_contract(name, test_util::OneAxis{}); }

TEST(DeclaredContract, ReferenceErrorsAreContractErrorsNamingFileAndCase) {
  KQUAL_NEED_NUMPY();
  struct Bad {
    const char* name;
    const char* py;
    const char* says;
  } bad[] = {
      {"ref_raises", "def f(x):\n    raise ValueError('boom')\n", "ValueError: boom"},
      {"ref_shape", "import numpy as np\ndef f(x):\n    return np.zeros(3)\n", "has shape (3,), expected"},
      {"ref_import", "import no_such_module_here\ndef f(x):\n    return x\n", "cannot be imported"},
      {"ref_constant", "import numpy as np\ndef f(x):\n    return np.ones_like(x)\n", "the same value at every element"},
      {"ref_nan", "import numpy as np\ndef f(x):\n    return np.where(x > 1, np.nan, x)\n", "forbids it"},
  };
  for (const auto& b : bad) {
    std::string toml = y_twice_x(b.name);
    if (std::string(b.name) == "ref_nan") toml.replace(toml.find("ulps = 1 }"), 10, "ulps = 1, nan = \"finite\" }");
    Written w(toml, b.py, b.name);
    const Contract& c = load_declared_contract(w.file);
    Supports s = test_util::f32_only();
    auto cases = c.correctness_cases(s, 1, false);
    ASSERT_FALSE(cases.empty());
    std::string e = error_of([&] {
      for (const auto& cs : cases) (void)c.reference(c.make_case(cs), test_util::run_host());
    });
    EXPECT_NE(e.find(w.file.string()), std::string::npos) << b.name << ": " << e;
    EXPECT_NE(e.find(b.says), std::string::npos) << b.name << ": " << e;
  }
  // An input the reference ignores: a kernel ignoring it would pass.
  std::string two = y_twice_x("ref_ignores");
  two.replace(two.find("[tensors.y]"), 11, "[tensors.z]\nrole = \"input\"\nshape = [\"n\"]\n[tensors.y]");
  Written w(two, "def f(x, z):\n    return 2 * x\n", "ref_ignores");
  const Contract& c = load_declared_contract(w.file);
  Supports s = test_util::f32_only();
  std::string e =
      error_of([&] { (void)c.reference(c.make_case(c.correctness_cases(s, 1, false).front()), test_util::run_host()); });
  EXPECT_NE(e.find("when input 'z' changes"), std::string::npos) << e;
  // Also when the reference writes into an argument it has read: each run gets the inputs afresh.
  Written w2(two.replace(two.find("ref_ignores"), 11, "ref_ignores_writes"), "def f(x, z):\n    y = 2 * x\n    x[:] = 0\n    return y\n",
             "ref_ignores_writes");
  const Contract& c2 = load_declared_contract(w2.file);
  e = error_of([&] { (void)c2.reference(c2.make_case(c2.correctness_cases(s, 1, false).front()), test_util::run_host()); });
  EXPECT_NE(e.find("when input 'z' changes"), std::string::npos) << e;
}

// A softmax whose base shape holds the row length at 1 gives 1 everywhere there, as any softmax over
// one element does: the check is made again with that axis at 2, where it discriminates, and the
// policy says so. An axis that cannot grow (its range ends at 1) keeps the refusal.
TEST(DeclaredContract, AnAxisHeldAtOneIsRaisedBeforeTheReferenceIsCalledConstant) {
  KQUAL_NEED_NUMPY();
  auto softmax = [](const char* name, const char* cols_range) {
    test_util::RowsCols keys;
    keys.summary = "row softmax";
    keys.axes = fmt::format("[axes.rows]\nrange = [1, 4096]\nbase = 3\n[axes.cols]\nrange = {}\nbase = 1", cols_range);
    keys.error = "{ model = \"allclose\", atol = 1e-6, rtol = 1e-5 }";
    return test_util::rows_cols_contract(name, keys);
  };
  const char* py = "import numpy as np\ndef f(x):\n    e = np.exp(x - x.max(axis=1, keepdims=True))\n    return e / e.sum(axis=1, keepdims=True)\n";
  Supports s = test_util::f32_only();
  Written grows(softmax("softmax_cols_one", "[1, 4096]"), py, "softmax_cols_one");
  const Contract& c = load_declared_contract(grows.file);
  EXPECT_NO_THROW((void)c.reference(c.make_case(c.correctness_cases(s, 1, false).front()), test_util::run_host()));
  EXPECT_NE(c.numerical_policy().find("Non-triviality: at the base shape (cols=1,rows=3) the reference gives output 'y' the "
                                      "same value at every element (an axis held at 1); with cols=2,rows=3 it discriminates"),
            std::string::npos)
      << c.numerical_policy();
  Written fixed(softmax("softmax_cols_fixed", "[1, 1]"), py, "softmax_cols_fixed");
  const Contract& f = load_declared_contract(fixed.file);
  const std::string e =
      error_of([&] { (void)f.reference(f.make_case(f.correctness_cases(s, 1, false).front()), test_util::run_host()); });
  EXPECT_NE(e.find("gives output 'y' the same value at every element: a zero, constant"), std::string::npos) << e;
}

TEST(DeclaredContract, AnInputDeclaredUnreadIsExemptAndTheDeclarationChecked) {
  KQUAL_NEED_NUMPY();
  // A backward pass given the saved activation takes the forward's bias but never reads it: said with
  // `unread`, the contract verifies; an `unread` input the reference does read is refused by name.
  auto with_z = [](const char* name, const char* unread) {
    std::string t = y_twice_x(name);
    t.replace(t.find("[tensors.y]"), 11,
              std::string("[tensors.z]\nrole = \"input\"\nshape = [\"n\"]\n") + unread + "[tensors.y]");
    return t;
  };
  Supports s = test_util::f32_only();
  Written ok(with_z("unread_ok", "unread = \"the backward is given the activation\"\n"), "def f(x, z):\n    return 2 * x\n", "unread_ok");
  const Contract& c = load_declared_contract(ok.file);
  EXPECT_NO_THROW((void)c.reference(c.make_case(c.correctness_cases(s, 1, false).front()), test_util::run_host()));
  Written lie(with_z("unread_lie", "unread = \"not read\"\n"), "def f(x, z):\n    return 2 * x + z\n", "unread_lie");
  const Contract& l = load_declared_contract(lie.file);
  const std::string e =
      error_of([&] { (void)l.reference(l.make_case(l.correctness_cases(s, 1, false).front()), test_util::run_host()); });
  EXPECT_NE(e.find("tensors.z.unread says the reference never reads it (not read), but the reference"), std::string::npos) << e;
  Written empty(with_z("unread_empty", "unread = \"\"\n"), "def f(x, z):\n    return 2 * x\n", "unread_empty");
  EXPECT_NE(error_of([&] { (void)load_declared_contract(empty.file); }).find("tensors.z.unread"), std::string::npos);
}

// [contract] ignored_inputs: an input the reference never feels is named in the policy instead of
// refusing the contract (a KernelBench model's conv bias ahead of a training-mode BatchNorm); an
// output that no input moves is refused all the same.
TEST(DeclaredContract, IgnoredInputsAreNamedNotRefusedButNeverAll) {
  KQUAL_NEED_NUMPY();
  auto with_z = [](const char* name) {
    std::string t = y_twice_x(name);
    t.replace(t.find("[tensors.y]"), 11, "[tensors.z]\nrole = \"input\"\nshape = [\"n\"]\n[tensors.y]");
    t.replace(t.find("[contract]\n"), 11, "[contract]\nignored_inputs = \"the model's z is cancelled downstream\"\n");
    return t;
  };
  Supports s = test_util::f32_only();
  Written ok(with_z("ignores_z"), "def f(x, z):\n    return 2 * x\n", "ignores_z");
  const Contract& c = load_declared_contract(ok.file);
  EXPECT_NO_THROW((void)c.reference(c.make_case(c.correctness_cases(s, 1, false).front()), test_util::run_host()));
  EXPECT_NE(c.numerical_policy().find(": z (the model's z is cancelled downstream); a kernel may leave them unread."), std::string::npos)
      << c.numerical_policy();
  Written none(with_z("ignores_both"), "import numpy as np\ndef f(x, z):\n    return np.arange(x.size, dtype=np.float64)\n",
               "ignores_both");
  const Contract& n = load_declared_contract(none.file);
  const std::string e =
      error_of([&] { (void)n.reference(n.make_case(n.correctness_cases(s, 1, false).front()), test_util::run_host()); });
  EXPECT_NE(e.find("does not change any output when any of its inputs changes"), std::string::npos) << e;
  Written empty(with_z("ignores_empty"), "def f(x, z):\n    return 2 * x\n", "ignores_empty");
  std::string t = read_text_file(empty.file);
  t.replace(t.find("the model's z is cancelled downstream"), 37, "");
  std::ofstream(empty.file) << t;
  EXPECT_NE(error_of([&] { (void)load_declared_contract(empty.file); }).find("contract.ignored_inputs: empty"), std::string::npos);
}

}  // namespace
}  // namespace kqual::contract
