#pragma once
// What the built-in contracts' f16 tests (tests/contract/builtin/<op>/<op>_f16_test.cpp) share: a candidate's
// f16-only claims, an f16 input tensor from values, and the checks every built-in f16 opt-in goes
// through (no f16 case past 2^31 elements; the bundled good kernel accepted, the known-broken f16
// one rejected for its stated reason), over the emulations of contract/builtin_emulation.hpp.
// The checks that stop a test on a missing manifest are called through ASSERT_NO_FATAL_FAILURE.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "contract/builtin_emulation.hpp"

namespace kqual::contract::emulation {

// A candidate claiming f16 only, its pointers aligned to `align` bytes.
inline Supports f16_claims(std::int64_t align = 2) {
  Supports s;
  s.dtypes = {DType::f16};
  s.min_alignment_bytes = align;
  return s;
}

// An f16 tensor of `elements` elements from `v`, each value rounded once to f16 (as store_element).
template <class V>
Tensor f16_tensor(const std::string& name, std::int64_t elements, const std::vector<V>& v) {
  Tensor t{name, DType::f16, elements, std::vector<std::uint8_t>(v.size() * 2), {}, {}};
  for (std::size_t i = 0; i < v.size(); ++i) store_element(DType::f16, t.bytes.data(), i, double(v[i]));
  return t;
}

// The correctness cases (large ones included, seed 1) of a candidate claiming f16 only, aligned to
// `align`: each checked to be f16 and shown to `each`, and every one of `families` among them.
// Returns how many start one element past an aligned address.
inline int f16_cases(const Contract& c, std::initializer_list<const char*> families, std::int64_t align = 2,
                     const std::function<void(const CaseSpec&)>& each = {}) {
  std::set<std::string> fams;
  int offsets = 0;
  for (const auto& cs : c.correctness_cases(f16_claims(align), 1, true)) {
    EXPECT_EQ(cs.dtype, DType::f16);
    if (each) each(cs);
    fams.insert(cs.family);
    offsets += cs.offset_elements == 1;
  }
  for (const char* f : families) EXPECT_TRUE(fams.count(f)) << f;
  return offsets;
}

// Past 2^31 elements only f32 is generated: a candidate claiming f32 and f16 (aligned to `align`)
// without a size limit gets one index case, in f32.
inline void expect_one_f32_index_case(const Contract& c, std::int64_t align = 2) {
  Supports all = f16_claims(align);
  all.dtypes = {DType::f32, DType::f16};
  all.max_n = std::numeric_limits<std::int64_t>::max();
  const auto idx = c.index_cases(all, 1);
  ASSERT_EQ(idx.size(), 1u);
  EXPECT_EQ(idx[0].dtype, DType::f32);
}

// The bundled good candidate candidates/<op>/<sub> claims f16, and `kernel` emulating it is accepted
// on every f16 case of `seed`. `s`: its claims narrowed to f16, for judging other kernels with.
inline void expect_good_f16_accepted(const Contract& c, const std::string& op, const std::string& sub, const Kernel& kernel,
                                     std::uint64_t seed, Supports* s = nullptr) {
  const build::Manifest good = bundled(op, sub);
  ASSERT_TRUE(good.supports.supports(DType::f16));
  const Supports f16 = only(good.supports, DType::f16);
  if (s) *s = f16;
  const Judged j = judge(c, f16, kernel, seed);
  EXPECT_EQ(j.verdict, "") << "seed " << seed;
  EXPECT_EQ(std::size_t(j.passed), c.correctness_cases(f16, seed, false).size()) << "seed " << seed;
}

// The known-broken candidate of `op` that claims f16: one manifest, defining `define`; `kernel`
// emulating it is rejected under every seed for a code the manifest states.
struct BrokenF16 {
  build::Manifest manifest;
  std::map<std::string, int> codes;  // how many seeds ended on each code
};
inline void judge_broken_f16(const Contract& c, const std::string& op, const std::string& define, const Kernel& kernel,
                             std::initializer_list<std::uint64_t> seeds, BrokenF16& out) {
  const auto broken = broken_claiming(op, DType::f16);
  ASSERT_EQ(broken.size(), 1u);
  const build::Manifest& m = broken.begin()->second;
  ASSERT_EQ(bug_define(m), define);
  out.manifest = m;
  for (std::uint64_t seed : seeds) {
    const Judged j = judge(c, only(m.supports, DType::f16), kernel, seed);
    EXPECT_TRUE(expected_code(m, j.code)) << "seed " << seed << ": " << (j.verdict.empty() ? "accepted" : j.verdict);
    ++out.codes[j.code];
  }
}

}  // namespace kqual::contract::emulation
