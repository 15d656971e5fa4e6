// CPU tests of the transpose contract: reference, bit-exact comparison (NaN payloads, -0), case
// generator, refusals, and the known-broken candidates' bugs simulated on the CPU against the
// generated cases (each must be caught for the reason its manifest states).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "contract/contract_test_util.hpp"

namespace kqual::contract {
namespace {

const Contract& C() { return find_contract("transpose"); }

Supports claims(std::int64_t align = 4, std::vector<DType> t = {DType::f32, DType::bf16, DType::i32}) {
  return test_util::claims_of(std::move(t), align);
}

Request req(DType t, std::int64_t rows, std::int64_t cols) { return test_util::rows_cols_request(t, rows, cols, rows * cols); }

CaseData make(DType t, std::int64_t rows, std::int64_t cols, const std::string& fam, std::uint64_t seed = 5) {
  return C().make_case(CaseSpec{"t", fam, t, {{"rows", rows}, {"cols", cols}}, 0, seed});
}

TEST(TransposeReference, HandComputed2x3) {
  // x = [[1 2 3], [4 5 6]] → y = [[1 4], [2 5], [3 6]].
  CaseData d;
  d.dims = {{"rows", 2}, {"cols", 3}};
  Tensor x{"x", DType::i32, 6, std::vector<std::uint8_t>(24), {}, {}};
  std::int32_t xs[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(x.bytes.data(), xs, 24);
  d.inputs = {x};
  auto y = C().reference(d).at(0);
  std::int32_t ys[6];
  std::memcpy(ys, y.bytes.data(), 24);
  const std::int32_t want[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ys[i], want[i]) << i;
  EXPECT_TRUE(y.bound.empty());  // exact contract: no tolerance
}

TEST(TransposeReference, TransposeTwiceIsIdentityAndKeepsBits) {
  auto d = make(DType::f32, 33, 31, "specials");
  auto y = C().reference(d).at(0);
  CaseData back;
  back.dims = {{"rows", 31}, {"cols", 33}};
  back.inputs = {y};
  EXPECT_EQ(C().reference(back).at(0).bytes, d.inputs[0].bytes);
  // Corners: x[0][0] is a NaN with payload 1, which lands at y[0]; x[rows-1][cols-1] = -0 lands at y[n-1].
  std::uint32_t first, last;
  std::memcpy(&first, y.bytes.data(), 4);
  std::memcpy(&last, y.bytes.data() + y.bytes.size() - 4, 4);
  EXPECT_EQ(first, 0x7FC00001u);
  EXPECT_EQ(last, 0x80000000u);
}

TEST(TransposeCompare, BitsMustMatchIncludingNanPayloadsAndSignedZero) {
  auto d = make(DType::f32, 31, 33, "specials");
  auto y = C().reference(d).at(0);
  auto out = y.bytes;
  EXPECT_TRUE(C().compare(y, out.data(), 0xFF).ok);
  // A canonicalised NaN (0x7fffffff) in place of the payload 0x7fc00001: wrong_result (bits).
  auto bad = out;
  std::uint32_t canon = 0x7FFFFFFFu;
  std::memcpy(bad.data(), &canon, 4);
  auto c = C().compare(y, bad.data(), 0xFF);
  EXPECT_EQ(c.code, "wrong_result");
  EXPECT_NE(c.detail.find("payload"), std::string::npos);
  // compare_exact alone would have let it pass: the contract is stricter.
  EXPECT_TRUE(compare_exact(y, bad.data(), 0xFF).ok);
  // -0 turned into +0.
  bad = out;
  std::uint32_t zero = 0;
  std::memcpy(bad.data() + bad.size() - 4, &zero, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "wrong_result");
  // A NaN expected where a poison pattern 0xffffffff (itself a NaN) survived: unwritten, not a match.
  bad = out;
  std::memset(bad.data(), 0xFF, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "unwritten_output");
  // A number where a NaN belongs, and the reverse.
  bad = out;
  float one = 1.0f;
  std::memcpy(bad.data(), &one, 4);
  EXPECT_EQ(C().compare(y, bad.data(), 0xFF).code, "nan_policy");
  // i32 and bf16: plain bit comparison.
  auto di = make(DType::i32, 7, 5, "index");
  auto yi = C().reference(di).at(0);
  auto bi = yi.bytes;
  bi[4] ^= 1;
  EXPECT_EQ(C().compare(yi, bi.data(), 0xFF).code, "wrong_result");
  auto db = make(DType::bf16, 9, 129, "specials");
  auto yb = C().reference(db).at(0);
  auto bb = yb.bytes;
  EXPECT_TRUE(C().compare(yb, bb.data(), 0x7F).ok);
  std::memset(bb.data() + 10, 0x7F, 2);
  EXPECT_EQ(C().compare(yb, bb.data(), 0x7F).code, "unwritten_output");
}

TEST(TransposeCases, SizesFamiliesOffsetsAndCount) {
  auto cases = C().correctness_cases(claims(), 1, false);
  std::set<std::int64_t> rows, cols;
  std::set<std::string> fams;
  std::set<DType> types;
  int offsets = 0, square = 0, nonsquare = 0;
  std::int64_t largest = 0;
  for (const auto& c : cases) {
    rows.insert(c.dim("rows"));
    cols.insert(c.dim("cols"));
    fams.insert(c.family);
    types.insert(c.dtype);
    offsets += c.offset_elements == 1;
    (c.dim("rows") == c.dim("cols") ? square : nonsquare)++;
    largest = std::max(largest, c.dim("rows") * c.dim("cols"));
  }
  for (std::int64_t v : {1, 31, 32, 33, 63, 64, 65, 1009, 4099}) EXPECT_TRUE(rows.count(v)) << v;
  for (std::int64_t v : {1, 31, 32, 33, 63, 64, 65, 1013, 1031, 1000}) EXPECT_TRUE(cols.count(v)) << v;
  for (const char* f : {"index", "random_bits", "specials"}) EXPECT_TRUE(fams.count(f)) << f;
  EXPECT_EQ(types.size(), 3u);
  EXPECT_GT(offsets, 0);
  EXPECT_GT(square, 3);
  EXPECT_GT(nonsquare, 10);
  EXPECT_GE(largest, std::int64_t(1) << 24);
  EXPECT_LE(largest, std::int64_t(1) << 25);
  EXPECT_GE(cases.size(), 40u);
  EXPECT_LE(cases.size(), 90u);
  // 16-byte alignment claimed: no offset cases; only f32 claimed: only f32 cases.
  for (const auto& c : C().correctness_cases(claims(16), 1, false)) EXPECT_EQ(c.offset_elements, 0);
  for (const auto& c : C().correctness_cases(claims(4, {DType::f32}), 1, false)) EXPECT_EQ(c.dtype, DType::f32);
  // The large set adds bigger cases.
  EXPECT_GT(C().correctness_cases(claims(), 1, true).size(), cases.size());
  // Cases are ordered small to large (a faulting candidate has been judged on the small ones first).
  std::int64_t first_big = -1;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (cases[i].dim("rows") * cases[i].dim("cols") >= (std::int64_t(1) << 24)) { first_big = std::int64_t(i); break; }
  EXPECT_GT(first_big, std::int64_t(cases.size()) / 2);
}

TEST(TransposeCases, DeterministicBySeedAndNotDegenerate) {
  EXPECT_EQ(make(DType::f32, 65, 63, "random_bits", 1).inputs[0].bytes, make(DType::f32, 65, 63, "random_bits", 1).inputs[0].bytes);
  EXPECT_NE(make(DType::f32, 65, 63, "random_bits", 1).inputs[0].bytes, make(DType::f32, 65, 63, "random_bits", 2).inputs[0].bytes);
  for (const auto& spec : C().correctness_cases(claims(), 3, false)) {
    if (spec.dim("rows") * spec.dim("cols") < 2 || spec.dim("rows") * spec.dim("cols") > 200000) continue;
    auto y = C().reference(C().make_case(spec)).at(0);
    EXPECT_EQ(degenerate_reason(y), "") << spec.id;
  }
  // index: every f32 element distinct; specials: NaN payloads, -0 and infinities present.
  auto di = make(DType::f32, 64, 65, "index");
  std::set<std::uint32_t> seen;
  for (std::size_t i = 0; i < 64 * 65; ++i) {
    std::uint32_t b;
    std::memcpy(&b, di.inputs[0].bytes.data() + 4 * i, 4);
    seen.insert(b);
  }
  EXPECT_EQ(seen.size(), 64u * 65u);
  auto ds = make(DType::f32, 64, 64, "specials");
  std::set<std::uint32_t> nan_payloads;
  int negzero = 0, inf = 0;
  for (std::size_t i = 0; i < 64 * 64; ++i) {
    std::uint32_t b;
    std::memcpy(&b, ds.inputs[0].bytes.data() + 4 * i, 4);
    float f = f32_from_bits(b);
    if (std::isnan(f)) nan_payloads.insert(b);
    negzero += b == 0x80000000u;
    inf += std::isinf(f);
  }
  EXPECT_GE(nan_payloads.size(), 3u);
  EXPECT_GT(negzero, 0);
  EXPECT_GT(inf, 0);
  EXPECT_FALSE(nan_payloads.count(0x7FFFFFFFu) && nan_payloads.size() == 1);
}

TEST(TransposeDomain, EveryRefusalWithAReason) {
  using namespace test_util;
  auto code = [](const Request& r, const Supports& s) { return refusal_code(C(), r, s); };
  const Supports s = claims(16);
  EXPECT_EQ(code(req(DType::f32, 64, 32), s), "accepted");
  EXPECT_EQ(code(req(DType::f64, 64, 32), s), "dtype_unsupported");
  EXPECT_EQ(code(req(DType::bf16, 64, 32), claims(16, {DType::f32})), "dtype_not_claimed");
  EXPECT_EQ(code(without_tensor(req(DType::f32, 64, 32), "x"), s), "missing_tensor");
  EXPECT_EQ(code(without_dim(req(DType::f32, 64, 32), "rows"), s), "missing_dim");
  EXPECT_EQ(code(req(DType::f32, 0, 5), s), "empty");
  Request big = req(DType::f32, 1, 1);
  big.dims["cols"] = std::int64_t(1) << 31;
  EXPECT_EQ(code(big, s), "dim_too_large");
  const Request mm = with_length(req(DType::f32, 64, 32), "x", 2047);
  EXPECT_EQ(code(mm, s), "length_mismatch");
  EXPECT_NE(C().validate(mm, s)->reason.find("2047"), std::string::npos);
  EXPECT_EQ(code(req(DType::f32, 64, 32), at_most(s, 1000)), "exceeds_claim");
  EXPECT_EQ(code(with_stride(req(DType::f32, 64, 32), "y", 64), s), "non_contiguous");
  const Request off = offset_by(req(DType::f32, 64, 32), 1);
  EXPECT_EQ(code(off, s), "misaligned");
  EXPECT_EQ(code(off, claims(4)), "accepted");
  EXPECT_EQ(code(in_place(req(DType::f32, 64, 64)), in_place_claimed(s)), "aliasing_unsupported");
  // The contract's own examples: refused with the stated code whatever the claims.
  expect_examples_refused(C(), {s, claims(2)},
                          {"dtype_unsupported", "missing_tensor", "missing_dim", "empty", "dim_too_large", "length_mismatch",
                           "non_contiguous", "aliasing_unsupported"});
}

// ---- Known-broken candidates, their bugs replayed on the CPU --------------------------------

using Impl = std::function<void(const std::uint8_t* x, std::uint8_t* y, std::int64_t rows, std::int64_t cols, std::size_t es)>;

// Runs impl on every generated case (f32, up to a size) over a poisoned output; returns the
// failure codes seen (and checks the output region beyond n for out-of-bounds writes).
std::set<std::string> replay(const Impl& impl, DType t = DType::f32) {
  std::set<std::string> codes;
  for (const auto& spec : C().correctness_cases(claims(), 11, false)) {
    if (spec.dtype != t || spec.dim("rows") * spec.dim("cols") > 300000) continue;
    auto data = C().make_case(spec);
    auto y = C().reference(data).at(0);
    const std::size_t es = dtype_size(t);
    constexpr std::size_t kGuard = 4096;
    // Room for overruns of up to a tile in each dim.
    const std::size_t room = std::size_t(spec.dim("rows") + 64) * std::size_t(spec.dim("cols") + 64) * es + kGuard;
    std::vector<std::uint8_t> out(std::max(y.bytes.size() + kGuard, room), 0xFF);
    impl(data.inputs[0].bytes.data(), out.data(), spec.dim("rows"), spec.dim("cols"), es);
    bool oob = false;
    for (std::size_t b = y.bytes.size(); b < std::min(out.size(), y.bytes.size() + kGuard); ++b) oob |= out[b] != 0xFF;
    if (oob) {
      codes.insert("out_of_bounds_write");
      continue;
    }
    auto c = C().compare(y, out.data(), 0xFF);
    codes.insert(c.ok ? "pass" : c.code);
  }
  return codes;
}

void cpy(std::uint8_t* y, std::size_t yi, const std::uint8_t* x, std::size_t xi, std::size_t es) {
  std::memcpy(y + yi * es, x + xi * es, es);
}

TEST(TransposeBroken, CorrectImplementationPassesEveryCase) {
  auto codes = replay([](const std::uint8_t* x, std::uint8_t* y, std::int64_t R, std::int64_t C_, std::size_t es) {
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t j = 0; j < C_; ++j) cpy(y, std::size_t(j * R + i), x, std::size_t(i * C_ + j), es);
  });
  EXPECT_EQ(codes, std::set<std::string>{"pass"});
}

TEST(TransposeBroken, WrongStrideIsWrongResultOnNonSquare) {
  // candidates/transpose/broken/wrong_stride: out index o decomposed with cols where rows belongs.
  auto impl = [](const std::uint8_t* x, std::uint8_t* y, std::int64_t R, std::int64_t C_, std::size_t es) {
    for (std::int64_t o = 0; o < R * C_; ++o) {
      std::int64_t j = o / C_, i = o % C_;  // should be o / R, o % R
      cpy(y, std::size_t(o), x, std::size_t(i * R + j), es);
    }
  };
  auto codes = replay(impl);
  EXPECT_TRUE(codes.count("wrong_result"));
  EXPECT_FALSE(codes.count("unwritten_output"));
  EXPECT_FALSE(codes.count("out_of_bounds_write"));
  // ... and right on square shapes (the bug hides there).
  auto d = make(DType::f32, 64, 64, "index");
  auto y = C().reference(d).at(0);
  std::vector<std::uint8_t> out(y.bytes.size());
  impl(d.inputs[0].bytes.data(), out.data(), 64, 64, 4);
  EXPECT_TRUE(C().compare(y, out.data(), 0xFF).ok);
}

TEST(TransposeBroken, MissingEdgeWritesPastTheEnd) {
  // candidates/transpose/broken/missing_edge: 32x32 tiles, loads guarded, stores not.
  auto codes = replay([](const std::uint8_t* x, std::uint8_t* y, std::int64_t R, std::int64_t C_, std::size_t es) {
    const std::int64_t T = 32;
    for (std::int64_t r0 = 0; r0 < R; r0 += T)
      for (std::int64_t c0 = 0; c0 < C_; c0 += T)
        for (std::int64_t a = 0; a < T; ++a)
          for (std::int64_t b = 0; b < T; ++b) {
            // output row c0 + a, output col r0 + b: unguarded store
            std::int64_t i = r0 + b, j = c0 + a;
            std::uint8_t v[4] = {0, 0, 0, 0};
            if (i < R && j < C_) std::memcpy(v, x + std::size_t(i * C_ + j) * es, es);
            std::memcpy(y + std::size_t(j * R + i) * es, v, es);
          }
  });
  EXPECT_TRUE(codes.count("out_of_bounds_write"));
}

TEST(TransposeBroken, StaleTileFromAMissingBarrierIsWrongResult) {
  // candidates/transpose/broken/missing_sync: a warp reads the shared tile before the other warps
  // wrote it, so it sees the previous tile's values. Simulated: the first element of each column
  // a warp reads that another warp writes comes from the previous tile.
  auto codes = replay([](const std::uint8_t* x, std::uint8_t* y, std::int64_t R, std::int64_t C_, std::size_t es) {
    const std::int64_t T = 32;
    std::vector<std::uint8_t> tile(std::size_t(T * T) * es, 0);
    for (std::int64_t r0 = 0; r0 < R; r0 += T)
      for (std::int64_t c0 = 0; c0 < C_; c0 += T) {
        auto stale = tile;
        for (std::int64_t a = 0; a < T; ++a)
          for (std::int64_t b = 0; b < T; ++b)
            if (r0 + a < R && c0 + b < C_) std::memcpy(&tile[std::size_t(a * T + b) * es], x + std::size_t((r0 + a) * C_ + c0 + b) * es, es);
        for (std::int64_t a = 0; a < T; ++a)
          for (std::int64_t b = 0; b < T; ++b) {
            std::int64_t i = r0 + b, j = c0 + a;
            if (i >= R || j >= C_) continue;
            const auto& src = (b % 8 == 1) ? stale : tile;  // rows written by warp 1 are not there yet
            std::memcpy(y + std::size_t(j * R + i) * es, &src[std::size_t(b * T + a) * es], es);
          }
      }
  });
  EXPECT_TRUE(codes.count("wrong_result"));
}

TEST(TransposeBroken, FloatArithmeticCanonicalisesNanAndZero) {
  // candidates/transpose/broken/nan_canonical: y = x + 0.0f. On the GPU, a NaN operand gives the
  // canonical NaN 0x7fffffff, and -0 + 0 = +0.
  auto codes = replay([](const std::uint8_t* x, std::uint8_t* y, std::int64_t R, std::int64_t C_, std::size_t) {
    for (std::int64_t i = 0; i < R; ++i)
      for (std::int64_t j = 0; j < C_; ++j) {
        float v;
        std::memcpy(&v, x + std::size_t(i * C_ + j) * 4, 4);
        float w = std::isnan(v) ? f32_from_bits(0x7FFFFFFFu) : v + 0.0f;
        std::memcpy(y + std::size_t(j * R + i) * 4, &w, 4);
      }
  });
  EXPECT_TRUE(codes.count("wrong_result"));
  EXPECT_TRUE(codes.count("pass"));  // on families without NaN or -0 it is right: the specials catch it
}

}  // namespace
}  // namespace kqual::contract
