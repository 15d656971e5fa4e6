// Inputs from a declared contract's [generator] (docs/declared-contracts.md, "Inputs from a
// generator"): a CSR SpMV whose row offsets and column indices come from a NumPy generator, run in
// the reference process end to end on the CPU — values checked against their declaration, the
// generator held to its seed, the reference and a kernel's output judged; generators that break a
// declaration, draw without the seed or return the wrong thing refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include "contract_test_util.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kGenRepo = KQUAL_SOURCE_DIR;
const fs::path kCsr = kGenRepo / "tests/contract/fixtures/declared/csr_spmv";

using test_util::error_of;

std::string file_text(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
}

// A copy of the CSR fixture named `name`, with its generator's and contract's text edited.
struct CsrVariant {
  ScratchDir dir{"kqual-generated-test"};
  fs::path file;
  CsrVariant(const std::string& name, const std::string& inputs_py, const std::vector<std::pair<std::string, std::string>>& edits = {}) {
    const fs::path d = dir.path() / name;
    fs::create_directories(d);
    std::string toml = file_text(kCsr / "contract.toml");
    replace_once(toml, "name = \"csr_spmv\"", "name = \"" + name + "\"");
    for (const auto& [from, to] : edits) replace_once(toml, from, to);
    file = d / "contract.toml";
    std::ofstream(file) << toml;
    std::ofstream(d / "inputs.py") << inputs_py;
    fs::copy_file(kCsr / "reference.py", d / "reference.py");
  }
};

std::vector<std::int64_t> ints(const Tensor& t) {
  std::vector<std::int64_t> v(std::size_t(t.elements));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::int64_t(element_as_double(t.dtype, t.bytes.data(), i));
  return v;
}

const Tensor& input(const CaseData& d, const std::string& name) {
  for (const auto& t : d.inputs)
    if (t.name == name) return t;
  throw std::runtime_error("no input " + name);
}

// A CPU SpMV in f32 (a kernel's arithmetic); `skip_last`: each row forgets its last stored value.
std::vector<std::uint8_t> spmv_kernel(const CaseData& d, bool skip_last) {
  const auto indptr = ints(input(d, "indptr")), indices = ints(input(d, "indices"));
  const Tensor &vals = input(d, "vals"), &x = input(d, "x");
  const std::size_t rows = indptr.size() - 1;
  std::vector<std::uint8_t> y(rows * 4);
  for (std::size_t r = 0; r < rows; ++r) {
    float acc = 0;
    const std::int64_t end = skip_last && indptr[r + 1] > indptr[r] ? indptr[r + 1] - 1 : indptr[r + 1];
    for (std::int64_t j = indptr[r]; j < end; ++j)
      acc += float(element_as_double(DType::f32, vals.bytes.data(), std::size_t(j))) *
             float(element_as_double(DType::f32, x.bytes.data(), std::size_t(indices[std::size_t(j)])));
    std::memcpy(y.data() + 4 * r, &acc, 4);
  }
  return y;
}

TEST(declared_generator, CsrInputsComeFromTheGeneratorAndHoldTheirDeclaration) {
  KQUAL_NEED_NUMPY();
  const Contract& c = load_declared_contract(kCsr);
  Supports s = test_util::f32_only();
  const auto cases = c.correctness_cases(s, 5, false);
  ASSERT_GT(cases.size(), 10u);
  std::set<std::vector<std::int64_t>> seen_indptr;
  int empty_rows = 0, checked = 0, skipped_rejected = 0;
  for (const auto& cs : cases) {
    const CaseData d = c.make_case_in(cs, test_util::run_host());
    const auto indptr = ints(input(d, "indptr")), indices = ints(input(d, "indices"));
    const std::int64_t rows = d.dims.at("rows"), cols = d.dims.at("cols"), nnz = d.dims.at("nnz");
    ASSERT_EQ(std::int64_t(indptr.size()), rows + 1) << cs.id;
    EXPECT_EQ(indptr.front(), 0) << cs.id;
    EXPECT_EQ(indptr.back(), nnz) << cs.id;
    EXPECT_TRUE(std::is_sorted(indptr.begin(), indptr.end())) << cs.id;
    for (std::int64_t j : indices) ASSERT_TRUE(j >= 0 && j < cols) << cs.id;
    for (std::size_t r = 0; r + 1 < indptr.size(); ++r) empty_rows += indptr[r] == indptr[r + 1];
    seen_indptr.insert(indptr);
    // The reference on these inputs, and a kernel judged against it.
    const auto want = c.reference(d, test_util::run_host());
    const auto good = spmv_kernel(d, false);
    const Comparison ok = c.compare(want.at(0), good.data(), 0xA5);
    EXPECT_TRUE(ok.ok) << cs.id << ": " << ok.detail;
    const auto bad = spmv_kernel(d, true);
    skipped_rejected += !c.compare(want.at(0), bad.data(), 0xA5).ok;
    ++checked;
  }
  EXPECT_EQ(checked, int(cases.size()));
  EXPECT_GT(skipped_rejected, checked / 2) << "a kernel forgetting each row's last value";
  EXPECT_GT(empty_rows, 0);  // the generator's own structure: rows with no stored value
  EXPECT_GT(seen_indptr.size(), cases.size() / 2);
  // The same case twice: the same values (the generator is held to its seed).
  const CaseData a = c.make_case_in(cases.back(), test_util::run_host());
  const CaseData b = c.make_case(cases.back());  // a process of its own
  EXPECT_EQ(input(a, "indptr").bytes, input(b, "indptr").bytes);
  EXPECT_EQ(input(a, "indices").bytes, input(b, "indices").bytes);
  // vals and x are kqual's: the specials family reaches vals, never the generated inputs.
  bool specials = false;
  for (const auto& cs : cases)
    if (cs.family == "specials") {
      const CaseData d = c.make_case_in(cs, test_util::run_host());
      const Tensor& v = input(d, "vals");
      for (std::size_t i = 0; i < std::size_t(v.elements); ++i) specials |= std::isnan(element_as_double(v.dtype, v.bytes.data(), i));
      const auto indptr = ints(input(d, "indptr"));
      EXPECT_EQ(indptr.back(), d.dims.at("nnz"));
    }
  EXPECT_TRUE(specials);
}

TEST(declared_generator, AGeneratorBreakingItsDeclarationIsRefusedByName) {
  KQUAL_NEED_NUMPY();
  const std::string head = "import numpy as np\n\ndef make_csr(rows, cols, nnz, seed):\n    rng = np.random.default_rng(seed)\n";
  const std::string good_indices = "    indices = rng.integers(0, cols, size=nnz).astype(np.int32)\n";
  const std::string good_indptr =
      "    indptr = np.concatenate([[0], np.sort(rng.integers(0, nnz + 1, size=rows - 1)), [nnz]]).astype(np.int32)\n";
  struct Bad {
    const char* name;
    std::string body;
    const char* says;
  };
  const Bad bad[] = {
      {"gen_last_short", good_indices + "    indptr = np.linspace(0, nnz - 1, rows + 1).astype(np.int32)\n",
       "input 'indptr' breaks its declared values: the last element is"},
      {"gen_not_monotone", good_indices + good_indptr + "    indptr[1], indptr[2] = nnz, 0\n", "offsets never decrease"},
      {"gen_first_not_zero", good_indices + good_indptr + "    indptr[0] = 1\n", "offsets start at 0"},
      {"gen_index_out", good_indptr + "    indices = rng.integers(0, cols + 1, size=nnz).astype(np.int32)\n    indices[0] = cols\n",
       "not an index into cols"},
      {"gen_wrong_shape", good_indptr + "    indices = np.zeros(nnz + 1, np.int32)\n", "input 'indices' has shape"},
      {"gen_float_indices", good_indptr + "    indices = np.zeros(nnz, np.float32)\n", "expected integers: it is declared i32"},
      {"gen_missing", good_indptr + "    return {'indptr': indptr}\n", "expected the inputs with source = \"generator\""},
      {"gen_unknown", good_indices + good_indptr + "    return {'indptr': indptr, 'indices': indices, 'bogus': indices}\n",
       "'bogus' is no input of the contract"},
      {"gen_raises", "    raise RuntimeError('no CSR today')\n", "RuntimeError: no CSR today"},
      {"gen_past_i32", good_indptr + "    indices = np.full(nnz, 2**40, np.int64)\n", "outside i32's range"},
  };
  Supports s = test_util::f32_only();
  for (const auto& b : bad) {
    std::string py = head + b.body;
    if (py.find("return") == std::string::npos) py += "    return {'indptr': indptr, 'indices': indices}\n";
    CsrVariant v(b.name, py);
    const Contract& c = load_declared_contract(v.file);
    const std::string e = error_of([&] {
      for (const auto& cs : c.correctness_cases(s, 5, false)) (void)c.make_case_in(cs, test_util::run_host());
    });
    EXPECT_NE(e.find(b.says), std::string::npos) << b.name << ": " << e;
    EXPECT_NE(e.find("generator inputs.py:make_csr"), std::string::npos) << b.name << ": " << e;
    EXPECT_NE(e.find(v.file.string()), std::string::npos) << b.name << ": " << e;
  }
}

TEST(declared_generator, AGeneratorDrawingWithoutItsSeedIsRefused) {
  KQUAL_NEED_NUMPY();
  const std::string unseeded =
      "import numpy as np\n\ndef make_csr(rows, cols, nnz):\n    rng = np.random.default_rng()\n"
      "    cuts = np.sort(rng.integers(0, nnz + 1, size=rows - 1))\n"
      "    return {'indptr': np.concatenate([[0], cuts, [nnz]]).astype(np.int32),\n"
      "            'indices': rng.integers(0, cols, size=nnz).astype(np.int32)}\n";
  CsrVariant v("gen_unseeded", unseeded);
  const Contract& c = load_declared_contract(v.file);
  Supports s = test_util::f32_only();
  // The case with the most stored values: two unseeded draws of a tiny case (one row, one column) can
  // agree by chance, which would make this test flaky rather than wrong.
  const auto unseeded_cases = c.correctness_cases(s, 5, false);
  const auto widest = std::max_element(unseeded_cases.begin(), unseeded_cases.end(), [](const auto& a, const auto& b) {
    return a.dims.at("nnz") * a.dims.at("cols") < b.dims.at("nnz") * b.dims.at("cols");
  });
  ASSERT_GE(widest->dims.at("nnz"), 64);
  const std::string e = error_of([&] { (void)c.make_case_in(*widest, test_util::run_host()); });
  EXPECT_NE(e.find("is not deterministic under its seed: two calls with seed"), std::string::npos) << e;
  // NumPy's global generator, which kqual seeds with the case's seed: reproducible, accepted, and
  // another case (another seed) gets other values.
  const std::string global =
      "import numpy as np\n\ndef make_csr(rows, cols, nnz):\n"
      "    cuts = np.sort(np.random.randint(0, nnz + 1, size=rows - 1))\n"
      "    return {'indptr': np.concatenate([[0], cuts, [nnz]]).astype(np.int32),\n"
      "            'indices': np.random.randint(0, cols, size=nnz).astype(np.int32)}\n";
  CsrVariant g("gen_global_rng", global);
  const Contract& cg = load_declared_contract(g.file);
  const auto cases = cg.correctness_cases(s, 5, false);
  const CaseData d1 = cg.make_case_in(cases.back(), test_util::run_host());
  const CaseData d2 = cg.make_case_in(cases.back(), test_util::run_host());
  EXPECT_EQ(input(d1, "indices").bytes, input(d2, "indices").bytes);
  CaseSpec other = cases.back();
  other.seed ^= 0x1234;
  EXPECT_NE(input(cg.make_case_in(other, test_util::run_host()), "indices").bytes, input(d1, "indices").bytes);
  (void)cg.reference(d1, test_util::run_host());  // the non-triviality check passes with generated inputs
}

TEST(declared_generator, TheFileFormatIsCheckedByName) {
  const std::string gen = file_text(kCsr / "inputs.py");
  struct Bad {
    const char* name;
    const char* from;
    const char* to;
    const char* says;
  };
  const Bad bad[] = {
      {"fmt_no_table", "[generator]\npython = \"inputs.py\"\nfunction = \"make_csr\"\n", "",
       "tensors.indptr.values.source: \"generator\": the contract has no [generator] table"},
      {"fmt_normal", "dist = \"offsets\", axis = \"nnz\"", "dist = \"normal\"", "with source = \"generator\" the dist is the structure"},
      {"fmt_scale", "dist = \"offsets\", axis = \"nnz\"", "dist = \"offsets\", axis = \"nnz\", scale = 2",
       "tensors.indptr.values.scale: unknown key"},
      {"fmt_source", "source = \"generator\", dist = \"offsets\"", "source = \"python\", dist = \"offsets\"", "expected \"kqual\""},
      {"fmt_family", "[families.specials]\nvals = { specials = 0.01 }", "[families.specials]\nindptr = { dist = \"offsets\", axis = \"nnz\" }",
       "families.specials.indptr: 'indptr' takes its values from the [generator] in every family"},
      {"fmt_float_offsets", "shape = [\"rows_p1\"]\ndtype = \"i32\"", "shape = [\"rows_p1\"]\ndtype = \"f32\"", "\"offsets\" holds integers"},
      {"fmt_kind", "function = \"make_csr\"", "function = \"make_csr\"\nkind = \"jax\"", "generator.kind: \"jax\""},
      {"fmt_missing_file", "python = \"inputs.py\"", "python = \"nowhere.py\"", "generator.python: \"nowhere.py\": no such file"},
      {"fmt_no_generated", "values = { source = \"generator\", dist = \"indices\", axis = \"cols\" }", "values = { dist = \"indices\", axis = \"cols\" }",
       ""},  // still one generated input: loads
  };
  for (const auto& b : bad) {
    CsrVariant v(b.name, gen, {{b.from, b.to}});
    const std::string e = error_of([&] { (void)load_declared_contract(v.file); });
    if (std::string(b.says).empty()) EXPECT_EQ(e, "") << b.name;
    else EXPECT_NE(e.find(b.says), std::string::npos) << b.name << ": " << e;
  }
  // A [generator] that no input uses.
  std::string toml = file_text(kCsr / "contract.toml");
  replace_once(toml, "name = \"csr_spmv\"", "name = \"fmt_unused\"");
  replace_once(toml, "values = { source = \"generator\", dist = \"offsets\", axis = \"nnz\" }", "values = { dist = \"offsets\", axis = \"nnz\" }");
  replace_once(toml, "values = { source = \"generator\", dist = \"indices\", axis = \"cols\" }", "values = { dist = \"indices\", axis = \"cols\" }");
  test_util::ContractFolder f(toml, file_text(kCsr / "reference.py"), "fmt_unused");
  std::ofstream(f.file.parent_path() / "inputs.py") << gen;
  EXPECT_NE(error_of([&] { (void)load_declared_contract(f.file); }).find("generator: no input takes its values from it"), std::string::npos);
}

TEST(declared_generator, GeneratedMasksAndProbabilityRowsAreChecked) {
  KQUAL_NEED_NUMPY();
  const std::string toml = R"toml(
[contract]
name = "NAME"
summary = "y = sum over the row of p * x where mask"
[axes.rows]
range = [1, 4096]
hints = [8]
base = 9
[axes.cols]
range = [1, 4096]
hints = [32]
base = 40
[generator]
python = "inputs.py"
function = "make"
[tensors.p]
role = "input"
shape = ["rows", "cols"]
values = { source = "generator", dist = "softmax_rows" }
[tensors.m]
role = "input"
shape = ["rows", "cols"]
dtype = "bool"
values = { source = "generator", dist = "mask" }
[tensors.x]
role = "input"
shape = ["rows", "cols"]
[tensors.y]
role = "output"
shape = ["rows"]
error = { model = "allclose", atol = 1e-6, rtol = 1e-5 }
)toml" + test_util::f32_reference_tables("rows * cols");
  const std::string ref = "import numpy as np\n\ndef f(p, m, x):\n    return (p * x * m).sum(axis=1)\n";
  auto variant = [&](const std::string& name, const std::string& body) {
    auto folder = std::make_unique<test_util::ContractFolder>(test_util::named(toml, name), ref, name);
    std::ofstream(folder->file.parent_path() / "inputs.py")
        << "import numpy as np\n\ndef make(rows, cols, seed):\n    rng = np.random.default_rng(seed)\n"
           "    z = np.exp(rng.normal(size=(rows, cols)))\n    p = (z / z.sum(axis=1, keepdims=True)).astype(np.float32)\n"
           "    m = rng.random((rows, cols)) < 0.7\n"
        << body << "    return {'p': p, 'm': m}\n";
    return folder;
  };
  Supports s = test_util::f32_only();
  {
    auto ok = variant("gen_probs_ok", "");
    const Contract& c = load_declared_contract(ok->file);
    for (const auto& cs : c.correctness_cases(s, 3, false)) {
      const CaseData d = c.make_case_in(cs, test_util::run_host());
      (void)c.reference(d, test_util::run_host());
    }
  }
  const std::pair<const char*, const char*> bad[] = {
      {"    p = p * 1.01\n", "sums to"},
      {"    p[0, 0] = -1e-3\n", "not a probability"},
      {"    m = m.astype(np.int32)\n", "expected booleans (dtype bool)"},
  };
  int k = 0;
  for (const auto& [body, says] : bad) {
    auto v = variant("gen_probs_bad" + std::to_string(k++), body);
    const Contract& c = load_declared_contract(v->file);
    const std::string e = error_of([&] { (void)c.make_case_in(c.correctness_cases(s, 3, false).front(), test_util::run_host()); });
    EXPECT_NE(e.find(says), std::string::npos) << body << ": " << e;
  }
}

TEST(declared_generator, ATorchGeneratorNeedsPyTorch) {
  KQUAL_NEED_NUMPY();
  CsrVariant v("gen_torch", "import torch\n\ndef make_csr(rows, cols, nnz, seed):\n    raise RuntimeError('unused')\n",
               {{"function = \"make_csr\"", "function = \"make_csr\"\nkind = \"torch\""}});
  const Contract& c = load_declared_contract(v.file);
  Supports s = test_util::f32_only();
  const std::string e = error_of([&] { (void)c.make_case_in(c.correctness_cases(s, 5, false).front(), test_util::run_host()); });
  if (e.find("RuntimeError: unused") != std::string::npos) GTEST_SKIP() << "PyTorch is installed here: the generator ran";
  EXPECT_NE(e.find("needs PyTorch: [generator] kind = \"torch\""), std::string::npos) << e;
}

TEST(declared_generator, UniqueIndicesImplyAConstraint) {
  const std::string gen = file_text(kCsr / "inputs.py");
  CsrVariant v("gen_unique", gen, {{"dist = \"indices\", axis = \"cols\" }", "dist = \"indices\", axis = \"cols\", unique = true }"},
                                   {"base = 300", "base = 30"}});
  const Contract& c = load_declared_contract(v.file);
  Supports s = test_util::f32_only();
  const auto r = c.validate(c.request(DType::f32, c.complete_dims({{"rows", 4}, {"cols", 8}, {"nnz", 9}})), s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "constraint");
  EXPECT_NE(r->reason.find("nnz unique indices per row into cols need nnz <= cols"), std::string::npos) << r->reason;
  EXPECT_FALSE(c.validate(c.request(DType::f32, c.complete_dims({{"rows", 4}, {"cols", 8}, {"nnz", 8}})), s));
}

// A loss: one output element cannot vary across its elements; the non-triviality check requires that
// redrawing every input changes it instead (a constant-writing kernel could pass otherwise).
TEST(declared_generator, OneElementOutputsAreJudgedByRedrawingTheInputs) {
  KQUAL_NEED_NUMPY();
  const std::string toml = R"toml(
[contract]
name = "NAME"
summary = "mean squared error of p against t: one value"
[axes.n]
range = [1, 100000]
hints = [32]
base = 64
[axes.one]
value = 1
[tensors.p]
role = "input"
shape = ["n"]
[tensors.t]
role = "input"
shape = ["n"]
[tensors.loss]
role = "output"
shape = ["one"]
error = { model = "allclose", atol = 1e-6, rtol = 1e-5 }
)toml" + test_util::f32_reference_tables("3 * n");
  Supports s = test_util::f32_only();
  test_util::ContractFolder good(test_util::named(toml, "one_value_mse"), "import numpy as np\n\ndef f(p, t):\n    return np.array([np.mean((p - t) ** 2)])\n",
                                 "one_value_mse");
  const Contract& c = load_declared_contract(good.file);
  for (const auto& cs : c.correctness_cases(s, 3, false)) {
    const auto want = c.reference(c.make_case(cs), test_util::run_host());
    ASSERT_EQ(want.at(0).elements, 1) << cs.id;
  }
  test_util::ContractFolder constant(test_util::named(toml, "one_value_const"), "import numpy as np\n\ndef f(p, t):\n    return np.array([0.5])\n",
                                     "one_value_const");
  const Contract& k = load_declared_contract(constant.file);
  const std::string e = error_of([&] { (void)k.reference(k.make_case(k.correctness_cases(s, 3, false).front()), test_util::run_host()); });
  EXPECT_NE(e.find("gives the one-element output 'loss' the same value when every input is redrawn"), std::string::npos) << e;
}

}  // namespace
}  // namespace kqual::contract
