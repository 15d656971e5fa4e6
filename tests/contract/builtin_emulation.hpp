#pragma once
// The built-in contracts' dtype tests over emulated kernels: a bundled candidate's arithmetic written
// again on the CPU (the good source, or the good source under its known-broken manifest's one
// -DKQUAL_BUG_* define), run over the cases its claims give in the order kqual's check runs them
// (check::order_cases: small plain families, small special ones, large), each twice with the harness's
// two poison bytes, the outputs written to files as the worker writes them and judged by the harness's
// own judge_runs. As in the check, the first rejected case settles the verdict. The GPU runs the real
// kernels (kqual selftest); these say, without one, that the contract accepts the good arithmetic and
// rejects each defect for the reason its manifest states.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kqual/build/manifest.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/check/run_to_run.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/narrow_float.hpp"
#include "kqual/worker/protocol.hpp"
#include "../../src/check/internal.hpp"

namespace kqual::contract::emulation {

// An emulated kernel: fills the outputs (by name, each holding the run's poison bytes, as the harness
// hands them over) from the case's inputs, and leaves alone what the kernel would not write.
using Outputs = std::map<std::string, std::vector<std::uint8_t>>;
using Kernel = std::function<void(const CaseData& d, Outputs& out)>;

struct Judged {
  std::string verdict;  // "" (accepted) or "<case id>: <code>: <detail>" of the first rejected case
  std::string code;     // that case's code ("" when accepted)
  int passed = 0;       // cases accepted before it (all of them when accepted)
};

// One case as the harness runs it: twice, with its two poison bytes, `run` filling the outputs each
// time; the outputs written to files in `dir` as the worker writes them and judged by the harness's
// judge_runs against `want` (both runs, then each other under the contract's run-to-run rule).
// False, with res.code and res.detail, where the case is rejected.
inline bool judge_case(const Contract& c, const Supports& s, const CaseSpec& cs, const std::vector<Tensor>& want,
                       const std::function<void(Outputs&)>& run, const std::filesystem::path& dir, check::CaseResult& res) {
  worker::RunRequest request;
  request.poison = {0xFF, check::detail::second_poison_byte(want)};
  for (std::size_t r = 0; r < request.poison.size(); ++r) {
    Outputs out;
    for (const auto& w : want) out[w.name].assign(w.bytes.size(), request.poison[r]);
    run(out);
    for (const auto& w : want) {
      const std::filesystem::path f = dir / fmt::format("{}.out{}", w.name, r);
      std::ofstream(f, std::ios::binary).write(reinterpret_cast<const char*>(out[w.name].data()), std::streamsize(out[w.name].size()));
      request.out_files[w.name].push_back(f.string());
    }
  }
  worker::Answer<worker::RunReply> answer;
  answer.raw.status = worker::WorkerReply::Status::ok;
  answer.reply = worker::RunReply{};
  answer.reply->runs.resize(request.poison.size());
  res.spec = cs;
  return check::detail::judge_runs(c, check::run_to_run_policy(c, s, cs.dtype), answer, request, want, res);
}

// The cases of `s` under `seed` (no large ones; none past max_elements elements when given), in the
// check's order, judged until the first rejection.
inline Judged judge(const Contract& c, const Supports& s, const Kernel& k, std::uint64_t seed,
                    std::int64_t max_elements = std::numeric_limits<std::int64_t>::max()) {
  std::vector<CaseSpec> cases = c.correctness_cases(s, seed, false);
  check::order_cases(c, cases);
  ScratchDir dir("kqual-builtin-emulation");
  Judged j;
  for (const auto& cs : cases) {
    if (check::detail::case_elements(c, cs) > max_elements) continue;
    const CaseData d = c.make_case(cs);
    check::CaseResult res;
    if (!judge_case(c, s, cs, c.reference(d), [&](Outputs& out) { k(d, out); }, dir.path(), res)) {
      j.verdict = cs.id + ": " + res.code + ": " + res.detail;
      j.code = res.code;
      return j;
    }
    ++j.passed;
  }
  return j;
}

// A bundled manifest of a built-in contract's candidates: candidates/<op>/<sub>.
inline build::Manifest bundled(const std::string& op, const std::string& sub) {
  return build::load_manifest(std::filesystem::path(KQUAL_SOURCE_DIR) / "candidates" / op / sub);
}

// The -DKQUAL_BUG_* define of a known-broken manifest ("" when it has none).
inline std::string bug_define(const build::Manifest& m) {
  for (const auto& o : m.nvrtc_options)
    if (o.rfind("-DKQUAL_BUG_", 0) == 0) return o.substr(2);
  return "";
}

// The known-broken manifests of `op` that claim dtype t, by folder name.
inline std::map<std::string, build::Manifest> broken_claiming(const std::string& op, DType t) {
  std::map<std::string, build::Manifest> out;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(KQUAL_SOURCE_DIR) / "candidates" / op / "broken")) {
    if (!std::filesystem::exists(e.path() / "kqual.toml")) continue;
    build::Manifest m = build::load_manifest(e.path());
    if (m.supports.supports(t)) out.emplace(e.path().filename().string(), std::move(m));
  }
  return out;
}

// Whether a code is the one the manifest's [expect] states, or one of its alternatives.
inline bool expected_code(const build::Manifest& m, const std::string& code) {
  if (m.expect_rejected_for && *m.expect_rejected_for == code) return true;
  return std::find(m.expect_also_rejected_for.begin(), m.expect_also_rejected_for.end(), code) != m.expect_also_rejected_for.end();
}

// A manifest's claims narrowed to one dtype.
inline Supports only(Supports s, DType t) {
  s.dtypes = {t};
  return s;
}

// f16 helpers: decode, and f32 -> f16 rounded to nearest even as __float2half_rn (Inf past 65504).
inline float h2f(std::uint16_t h) { return f16_to_f32(h); }
inline std::uint16_t f2h(float v) { return f32_to_f16_rn(v); }
// v rounded to f16 and back: what keeping a value in an f16 register does.
inline float round_h(float v) { return h2f(f2h(v)); }

inline std::uint16_t half_at(const Tensor& t, std::size_t i) {
  std::uint16_t h;
  std::memcpy(&h, t.bytes.data() + 2 * i, 2);
  return h;
}
inline void put_half(std::vector<std::uint8_t>& out, std::size_t i, std::uint16_t h) { std::memcpy(out.data() + 2 * i, &h, 2); }

}  // namespace kqual::contract::emulation
