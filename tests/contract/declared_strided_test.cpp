// Strided tensors in declared contracts (docs/declared-contracts.md, "Strided tensors"): the layout
// keys and their errors, the row-stride axis kernels receive by name, requests refused by name before
// launch, cases with padding of several sizes, inputs poisoned between rows, the reference on dense
// views, and outputs whose padding must stay as the harness poisoned it (CPU emulations of the
// bundled candidates/rmsnorm_strided kernels' defects; the GPU runs the kernels themselves).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "contract_test_util.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kRepo = KQUAL_SOURCE_DIR;

using test_util::error_of;

struct Written {
  ScratchDir dir{"kqual-strided-test"};
  fs::path file;
  explicit Written(const std::string& toml) {
    fs::create_directories(dir.path() / "c");
    file = dir.path() / "c" / "contract.toml";
    std::ofstream(file) << toml;
    std::ofstream(dir.path() / "c" / "reference.py") << "def f(x):\n    return 2 * x\n";
  }
};

// y = 2 x over a rows x cols view (test_util::rows_cols_contract); x_keys and y_keys are the tensors'
// layout keys, extra more tables.
std::string scale_contract(const std::string& name, const std::string& x_keys, const std::string& y_keys,
                           const std::string& extra = "") {
  test_util::RowsCols keys;
  keys.summary = "y = 2 x over strided rows";
  keys.axes = "[axes.rows]\nrange = [1, 100000]\nbase = 5\n[axes.cols]\nrange = [1, 100000]\nhints = [32]\nbase = 40";
  keys.x_keys = x_keys;
  keys.y_keys = y_keys;
  keys.extra = extra;
  return test_util::rows_cols_contract(name, keys);
}

TEST(DeclaredStrided, LayoutKeysMakeARowStrideAxis) {
  Written w(scale_contract("strided_parse", "layout = \"strided\"", "layout = \"strided\"\nstride = \"ldy\"\nstride_multiple_of = 4"));
  const Contract& c = load_declared_contract(w.file);
  // The strides are dims kernels take by name; requests may leave them out.
  const auto given = c.given_dims();
  EXPECT_EQ(given, (std::vector<std::string>{"rows", "cols", "stride_x", "ldy"}));
  EXPECT_EQ(c.optional_dims(), (std::vector<std::string>{"stride_x", "ldy"}));
  const Dims d = parse_shape(c, "rows=3,cols=5");
  EXPECT_EQ(d.at("stride_x"), 5);  // the row, rounded up to the multiple: dense
  EXPECT_EQ(d.at("ldy"), 8);
  const Dims g = parse_shape(c, "rows=3,cols=5,stride_x=7,ldy=12");
  EXPECT_EQ(g.at("stride_x"), 7);
  EXPECT_EQ(g.at("ldy"), 12);
  // The harness holds the storage (rows x stride); the view is rows x cols.
  const TensorSpec* x = c.domain().tensor("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->layout, Layout::strided);
  EXPECT_EQ(x->shape, (std::vector<std::string>{"rows", "stride_x"}));
  EXPECT_EQ(x->row_length, "cols");
  EXPECT_EQ(c.domain().tensor("y")->stride_multiple, 4);
  EXPECT_EQ(c.tensor_elements("x", g), 21);
  EXPECT_EQ(c.tensor_elements("y", g), 36);
  EXPECT_EQ(c.domain_json().at("tensors")[0].at("layout"), "strided");
  EXPECT_EQ(c.domain_json().at("tensors")[0].at("row_stride"), "stride_x");
  EXPECT_TRUE(declaration_problems(c.domain()).empty());
  // Without a bytes formula the views are moved once, never the padding.
  EXPECT_EQ(c.min_bytes(g, DType::f32), 2.0 * 15 * 4);
}

TEST(DeclaredStrided, BadLayoutKeysAreNamed) {
  auto err = [](const std::string& name, const std::string& x, const std::string& y, const std::string& extra = "") {
    Written w(scale_contract(name, x, y, extra));
    return error_of([&] { (void)load_declared_contract(w.file); });
  };
  std::string e = err("bad1", "layout = \"columnar\"", "");
  EXPECT_NE(e.find("tensors.x.layout: \"columnar\": expected \"contiguous\", \"row_major\" or \"strided\""), std::string::npos) << e;
  e = err("bad2", "layout = \"strided\"\nstride_pad = 3", "");
  EXPECT_NE(e.find("tensors.x.stride_pad: unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find("stride_multiple_of"), std::string::npos) << e;  // the allowed keys are listed
  e = err("bad3", "stride = \"ld\"", "");
  EXPECT_NE(e.find("tensors.x.stride: only a tensor with layout = \"strided\" takes it"), std::string::npos) << e;
  e = err("bad4", "layout = \"strided\"\nstride_multiple_of = 0", "");
  EXPECT_NE(e.find("tensors.x.stride_multiple_of: 0 is below 1"), std::string::npos) << e;
  e = err("bad5", "layout = \"strided\"\nstride = \"rows\"", "");
  EXPECT_NE(e.find("tensors.x.stride: 'rows' is already an axis that is not a row stride"), std::string::npos) << e;
  e = err("bad6", "layout = \"strided\"", "layout = \"strided\"\nstride = \"stride_x\"\nstride_multiple_of = 2");
  EXPECT_NE(e.find("tensors.y.stride: 'stride_x' is the row stride of another tensor"), std::string::npos) << e;
  e = err("bad7", "layout = \"strided\"", "layout = \"strided\"\naliases = \"x\"");
  EXPECT_NE(e.find("tensors.y.aliases:"), std::string::npos) << e;
  EXPECT_NE(e.find("shares its input's layout and row stride"), std::string::npos) << e;
  e = err("bad8", "layout = \"strided\"", "", "[index_cases]\naxis = \"rows\"");
  EXPECT_NE(e.find("index_cases.axis: tensor 'x' is strided"), std::string::npos) << e;
  e = err("bad9", "layout = \"strided\"", "", "[bench]\nshapes = [\"rows=4,cols=64,stride_x=60\"]");
  EXPECT_NE(e.find("bench.shapes[0]: row stride stride_x = 60 is below the row length cols = 64"), std::string::npos) << e;
  // A 1-D tensor has no rows to stride.
  test_util::OneAxis one_d;
  one_d.summary = "s";
  one_d.axis = "range = [1, 10]";
  one_d.x_keys = "layout = \"strided\"";
  Written one(test_util::one_axis_contract("bad10", one_d));
  e = error_of([&] { (void)load_declared_contract(one.file); });
  EXPECT_NE(e.find("tensors.x.layout: strided is for 2-D tensors"), std::string::npos) << e;
  // An in-place output sharing its input's stride is fine.
  Written ok(scale_contract("strided_in_place", "layout = \"strided\"\nstride = \"ld\"", "layout = \"strided\"\nstride = \"ld\"\naliases = \"x\""));
  EXPECT_EQ(error_of([&] { (void)load_declared_contract(ok.file); }), "");
}

TEST(DeclaredStrided, RequestsOutsideTheLayoutAreRefusedByName) {
  Written w(scale_contract("strided_refusals", "layout = \"strided\"", "layout = \"strided\"\nstride = \"ldy\"\nstride_multiple_of = 4"));
  const Contract& c = load_declared_contract(w.file);
  Supports any;
  any.dtypes = {DType::f32};
  any.min_alignment_bytes = 4;
  auto verdict = [&](const std::string& shape, const Supports& s) { return c.validate(c.request(DType::f32, parse_shape(c, shape)), s); };
  EXPECT_FALSE(verdict("rows=4,cols=64,stride_x=64,ldy=64", any));
  EXPECT_FALSE(verdict("rows=4,cols=64,stride_x=65,ldy=68", any));
  auto r = verdict("rows=4,cols=64,stride_x=63,ldy=64", any);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "non_contiguous");
  EXPECT_NE(r->reason.find("row stride stride_x = 63, below its row length cols = 64: its rows would overlap"), std::string::npos) << r->reason;
  r = verdict("rows=4,cols=64,stride_x=64,ldy=66", any);  // the contract's claim, whatever the candidate's
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "misaligned");
  EXPECT_NE(r->reason.find("row stride ldy = 66, not a multiple of 4 elements"), std::string::npos) << r->reason;
  Supports aligned = any;
  aligned.min_alignment_bytes = 16;  // a candidate reading rows as float4
  r = verdict("rows=4,cols=64,stride_x=65,ldy=64", aligned);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "misaligned");
  EXPECT_NE(r->reason.find("tensor 'x' has row stride stride_x = 65 elements (260 bytes): its second row starts off the candidate's "
                           "claimed alignment of 16 bytes"), std::string::npos) << r->reason;
  EXPECT_FALSE(verdict("rows=1,cols=64,stride_x=65,ldy=64", aligned));  // one row: no second row to misplace
  EXPECT_FALSE(verdict("rows=4,cols=64,stride_x=68,ldy=64", aligned));
  // Every refusal example of the domain is refused with its code (the conformance bar).
  bool overlap = false, claim = false, candidate = false;
  for (const auto& ex : refusal_examples(c.domain())) {
    const Supports s = ex.claims ? *ex.claims : widest_claims(c.domain());
    auto got = check_request(c.domain(), c.name(), ex.request, s);
    ASSERT_TRUE(got) << ex.code;
    EXPECT_EQ(got->code, ex.code) << got->reason;
    overlap |= got->reason.find("rows would overlap") != std::string::npos;
    claim |= got->reason.find("stride_multiple_of") != std::string::npos;
    candidate |= got->reason.find("second row starts off") != std::string::npos;
  }
  EXPECT_TRUE(overlap && claim && candidate);
}

// The bundled strided contract, claimed as its good candidate claims it (element alignment).
const Contract& strided_rmsnorm() { return ContractLookup().resolve("rmsnorm_strided", kRepo / "candidates/rmsnorm_strided/good"); }

Supports claims(std::int64_t alignment, std::vector<DType> dtypes = {DType::f32, DType::bf16}) {
  Supports s;
  s.dtypes = std::move(dtypes);
  s.min_alignment_bytes = alignment;
  s.max_n = kUnlimited;
  return s;
}

TEST(DeclaredStrided, CasesHavePaddingOfSeveralSizes) {
  const Contract& c = strided_rmsnorm();
  const Supports s = claims(2);
  const auto cases = c.correctness_cases(s, 7, false);
  std::set<std::int64_t> pads;
  bool dense = false, off_vector = false, twice = false, distinct = false;
  for (const auto& cs : cases) {
    EXPECT_FALSE(c.validate(c.request(cs.dtype, cs.dims, cs.offset_elements), s)) << cs.id;
    const std::int64_t cols = cs.dims.at("cols"), sx = cs.dims.at("stride_x"), sy = cs.dims.at("stride_y");
    EXPECT_GE(sx, cols);
    EXPECT_GE(sy, cols);
    pads.insert(sx - cols);
    dense |= sx == cols && sy == cols;
    off_vector |= cols % 4 == 0 && sx % 4 != 0 && cs.dims.at("rows") > 1;  // rows past the first off float4 alignment
    twice |= sx == 2 * cols;
    distinct |= sx != sy;
    EXPECT_NE(cs.id.find("stride_x="), std::string::npos) << cs.id;  // the case names its strides
  }
  EXPECT_TRUE(dense);
  EXPECT_TRUE(off_vector);
  EXPECT_TRUE(twice);
  EXPECT_TRUE(distinct);
  for (std::int64_t p : {0, 1, 3, 4, 37}) EXPECT_TRUE(pads.count(p)) << p;
  // A candidate claiming 16-byte alignment gets only strides that keep every row on it.
  const Supports vec = claims(16);
  for (const auto& cs : c.correctness_cases(vec, 7, false)) {
    EXPECT_FALSE(c.validate(c.request(cs.dtype, cs.dims, cs.offset_elements), vec)) << cs.id;
    EXPECT_EQ(cs.dims.at("stride_x") % 8, 0) << cs.id;  // bf16 rows: 8 elements are 16 bytes
  }
  // The benchmark shapes give strides too.
  const auto bench = c.benchmark_shapes();
  ASSERT_FALSE(bench.empty());
  EXPECT_EQ(bench.front().at("stride_x"), 8192);
  EXPECT_EQ(bench.front().at("cols"), 4096);
}

float f32_at(const Tensor& t, std::size_t i) { return float(element_as_double(t.dtype, t.bytes.data(), i)); }

TEST(DeclaredStrided, InputsArePoisonedBetweenRows) {
  const Contract& c = strided_rmsnorm();
  CaseSpec cs;
  cs.dtype = DType::f32;
  cs.family = "base";
  for (std::uint64_t seed : {2u, 3u}) {
    cs.seed = seed;
    cs.dims = c.complete_dims({{"rows", 3}, {"cols", 10}, {"stride_x", 13}, {"stride_y", 11}});
    const CaseData padded = c.make_case(cs);
    cs.dims = c.complete_dims({{"rows", 3}, {"cols", 10}});
    const CaseData dense = c.make_case(cs);
    const Tensor& x = padded.inputs[0];
    ASSERT_EQ(x.name, "x");
    ASSERT_EQ(x.elements, 39);
    ASSERT_EQ(x.bytes.size(), 39u * 4);
    EXPECT_EQ(x.row_length, 10);
    EXPECT_EQ(x.row_stride, 13);
    for (std::size_t r = 0; r < 3; ++r) {
      for (std::size_t j = 0; j < 10; ++j)  // the same values as the dense case, one stride apart
        EXPECT_EQ(f32_at(x, r * 13 + j), f32_at(dense.inputs[0], r * 10 + j)) << r << "," << j;
      for (std::size_t j = 10; j < 13; ++j) {
        const float v = f32_at(x, r * 13 + j);
        if (seed & 1) EXPECT_TRUE(std::isnan(v)) << v;
        else EXPECT_GT(std::fabs(v), 3e38f) << v;  // bytes 0x7F: ~3.4e38, which swallowing NaN does not hide
      }
    }
    EXPECT_EQ(padded.inputs[1].elements, 10);  // w stays dense
  }
}

// A CPU emulation of candidates/rmsnorm_strided's kernel (f32), with one of its known defects.
enum class Defect { none, ignore_stride, write_padding, y_with_x_stride, skip_last };

std::string first_failure(const Contract& c, const std::vector<CaseSpec>& cases, Defect defect) {
  for (const auto& cs : cases) {
    const CaseData d = c.make_case(cs);
    const auto want = c.reference(d, test_util::run_host());
    const std::int64_t rows = d.dims.at("rows"), n = d.dims.at("cols");
    std::int64_t sx = d.dims.at("stride_x"), sy = d.dims.at("stride_y");
    if (defect == Defect::ignore_stride) sx = n;
    if (defect == Defect::y_with_x_stride) sy = sx;
    for (std::uint8_t poison : {std::uint8_t(0xFF), std::uint8_t(0x7F)}) {
      std::vector<std::uint8_t> out(want[0].bytes.size(), poison);
      const Tensor& x = d.inputs[0];
      for (std::int64_t r = 0; r < rows; ++r) {
        float ss = 0;
        for (std::int64_t j = 0; j < n; ++j) ss = std::fma(f32_at(x, std::size_t(r * sx + j)), f32_at(x, std::size_t(r * sx + j)), ss);
        const float k = std::isinf(ss) ? std::numeric_limits<float>::quiet_NaN() : 1.0f / std::sqrt(ss / float(n) + 1e-6f);  // a +-Inf row: NaN
        const std::int64_t last = defect == Defect::skip_last && r == rows - 1 ? n - 1 : n;
        for (std::int64_t j = 0; j < last; ++j) {
          const std::size_t at = std::size_t(r * sy + j);
          if (at < std::size_t(want[0].elements))
            store_element(DType::f32, out.data(), at, f32_at(x, std::size_t(r * sx + j)) * k * f32_at(d.inputs[1], std::size_t(j)));
        }
        if (defect == Defect::write_padding)
          for (std::int64_t j = n; j < sy; ++j) store_element(DType::f32, out.data(), std::size_t(r * sy + j), 0.0);
      }
      const Comparison cmp = c.compare(want[0], out.data(), poison);
      if (!cmp.ok) return cs.id + ": " + cmp.code + ": " + cmp.detail;
    }
  }
  return "";
}

TEST(DeclaredStrided, ReferenceOnDenseViewsAndPaddingWritesRejected) {
  KQUAL_NEED_NUMPY();
  const Contract& c = strided_rmsnorm();
  std::vector<CaseSpec> cases;
  for (const auto& cs : c.correctness_cases(claims(4, {DType::f32}), 11, false))
    if (cs.dims.at("rows") * cs.dims.at("stride_y") <= 40000 && cs.offset_elements == 0) cases.push_back(cs);
  ASSERT_GT(cases.size(), 10u);
  {
    const CaseData d = c.make_case(cases.back());
    const auto want = c.reference(d, test_util::run_host());
    ASSERT_EQ(want.size(), 1u);
    EXPECT_EQ(want[0].elements, d.dims.at("rows") * d.dims.at("stride_y"));  // the output buffer is the storage
    EXPECT_EQ(want[0].row_length, d.dims.at("cols"));
    EXPECT_EQ(want[0].row_stride, d.dims.at("stride_y"));
  }
  EXPECT_EQ(first_failure(c, cases, Defect::none), "");
  const std::string ignore = first_failure(c, cases, Defect::ignore_stride);
  EXPECT_TRUE(ignore.find(": wrong_result: ") != std::string::npos || ignore.find(": nan_policy: ") != std::string::npos) << ignore;
  const std::string pad = first_failure(c, cases, Defect::write_padding);
  EXPECT_NE(pad.find(": out_of_bounds_write: 'y' is strided"), std::string::npos) << pad;
  EXPECT_NE(pad.find("padding between rows were written, the first at row 0, column"), std::string::npos) << pad;
  const std::string shifted = first_failure(c, cases, Defect::y_with_x_stride);
  EXPECT_NE(shifted.find(": out_of_bounds_write: "), std::string::npos) << shifted;
  const std::string last = first_failure(c, cases, Defect::skip_last);
  EXPECT_NE(last.find(": unwritten_output: "), std::string::npos) << last;
  EXPECT_NE(last.find("indices into the"), std::string::npos) << last;
}

}  // namespace
}  // namespace kqual::contract
