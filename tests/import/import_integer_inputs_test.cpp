// Integer inputs of imported Definitions (docs/declared-contracts.md, "Importing a Definition"): their
// values from the problem itself — a constraint on them (offsets), run()'s use of them (indices into
// an axis, lengths along a page), the Definition's own input generator (SOL-ExecBench's
// custom_inputs_entrypoint as the contract's [generator]) — and refused by name when none says what
// they are. Fixtures written here in the peers' public formats (tests/import/fixtures/definitions).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "contract/contract_test_util.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/import/import_definition.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::contract {
namespace {
namespace fs = std::filesystem;

const fs::path kIntFixtures = fs::path(KQUAL_SOURCE_DIR) / "tests/import/fixtures/definitions";

std::string read_all(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Imports `def` (a fixture's file or a text) into a fresh folder; the error's text when refused.
struct Imported {
  ScratchDir dir{"kqual-import-int"};
  DefinitionImport r;
  std::string error;
  Imported(const fs::path& def, const fs::path& workloads = {}) { run(def, workloads); }
  Imported(const std::string& def_text, const std::string& name) {
    const fs::path f = dir.path() / (name + ".json");
    std::ofstream(f) << def_text;
    run(f, {});
  }
  void run(const fs::path& def, const fs::path& workloads) {
    DefinitionImportOptions o;
    o.definition = def;
    o.workloads = workloads;
    o.out = dir.path() / "out";
    try {
      r = import_definition(o);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  bool has_note(const std::string& part) const {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
  }
};

std::vector<std::int64_t> ints_of(const CaseData& d, const std::string& name) {
  for (const auto& t : d.inputs)
    if (t.name == name) {
      std::vector<std::int64_t> v(std::size_t(t.elements));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::int64_t(element_as_double(t.dtype, t.bytes.data(), i));
      return v;
    }
  ADD_FAILURE() << "no input " << name;
  return {};
}

TEST(import_generator, PagedOffsetsIndicesAndLengthsComeFromTheDefinitionItself) {
  Imported im(kIntFixtures / "paged_token_sum_ps4.json");
  ASSERT_EQ(im.error, "");
  const std::string& t = im.r.contract_toml;
  EXPECT_NE(t.find("values = { dist = \"offsets\", axis = \"num_kv_indices\" }   # from the constraint \"num_kv_indices == "
                   "kv_indptr[-1].item()\""),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("values = { dist = \"indices\", axis = \"num_pages\" }   # from run() indexes cache along num_pages with it (line 19)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("values = { dist = \"int\", lo = 1, hi = 4 }   # from run() slices cache along page_size up to it"), std::string::npos) << t;
  // The value constraint became the values; the equality a derived axis.
  EXPECT_EQ(t.find("kv_indptr[-1]\"\nreason"), std::string::npos);
  EXPECT_NE(t.find("[axes.len_indptr]\nexpr = \"batch_size + 1\""), std::string::npos);
  // The gathered table's axis is no reduction: K is page_size (the tokens of a page summed), not num_pages x page_size.
  EXPECT_TRUE(im.has_note("reduction length K = 4 (")) << fmt::format("{}", fmt::join(im.r.notes, "\n"));
  // The scalar no workload sets: one draw, as the peers' generators draw it (N(0, 1)).
  EXPECT_TRUE(im.has_note("inputs.scale: no workload gives its value"));
  // The same draw from the same file under another Definition name (a contract name loads once).
  ScratchDir copy("kqual-import-int-copy");
  std::string renamed = read_all(kIntFixtures / "paged_token_sum_ps4.json");
  renamed.replace(renamed.find("\"paged_token_sum_ps4\""), 21, "\"paged_token_sum_again\"");
  std::ofstream(copy.path() / "paged_token_sum_ps4.json") << renamed;
  Imported again(copy.path() / "paged_token_sum_ps4.json");
  ASSERT_EQ(again.error, "");
  const auto scalar = [](const std::string& toml) { return test_util::toml_table(toml, "[scalars.scale]"); };
  EXPECT_EQ(scalar(t), scalar(again.r.contract_toml));
  const double v = std::stod(scalar(t).substr(scalar(t).find("value = ") + 8));
  EXPECT_GE(std::fabs(v), 0.1);
  EXPECT_GE(std::fabs(std::fabs(v) - 1), 0.1);
  // Every case's integer inputs hold their structure (kqual draws them: no Python needed).
  const Contract& c = load_declared_contract(im.r.out);
  Supports s = test_util::f32_only();
  int cases = 0;
  for (const auto& cs : c.correctness_cases(s, 3, false)) {
    const CaseData d = c.make_case(cs);
    const auto indptr = ints_of(d, "kv_indptr"), indices = ints_of(d, "kv_indices"), last = ints_of(d, "kv_last_page_len");
    ASSERT_EQ(std::int64_t(indptr.size()), d.dims.at("batch_size") + 1) << cs.id;
    EXPECT_EQ(indptr.front(), 0) << cs.id;
    EXPECT_EQ(indptr.back(), d.dims.at("num_kv_indices")) << cs.id;
    EXPECT_TRUE(std::is_sorted(indptr.begin(), indptr.end())) << cs.id;
    for (auto i : indices) ASSERT_TRUE(i >= 0 && i < d.dims.at("num_pages")) << cs.id;
    for (auto l : last) ASSERT_TRUE(l >= 1 && l <= 4) << cs.id;
    ++cases;
  }
  EXPECT_GT(cases, 10);
}

TEST(import_generator, SolsInputGeneratorBecomesTheContractsGenerator) {
  Imported im(kIntFixtures / "moe_scale_e8_k2.json", kIntFixtures / "moe_scale_e8_k2.jsonl");
  ASSERT_EQ(im.error, "");
  const std::string& t = im.r.contract_toml;
  EXPECT_NE(t.find("[generator]\npython = \"reference.py\"\nfunction = \"kqual_inputs\"\nkind = \"torch\""), std::string::npos) << t;
  EXPECT_NE(t.find("values = { source = \"generator\", dist = \"indices\", axis = \"E\" }   # made by the Definition's "
                   "custom_inputs_entrypoint; kqual checks them against run() indexes expert_scale along E"),
            std::string::npos)
      << t;
  // Floating inputs stay kqual's (its value families reach them); the note says the source makes them.
  EXPECT_NE(t.find("[tensors.expert_weights]\nrole = \"input\"\nshape = [\"T\", \"K\"]\nvalues = { dist = \"normal\" }"), std::string::npos) << t;
  EXPECT_TRUE(im.has_note("input 'expert_weights': the Definition's input generator makes it"));
  const std::string py = read_all(im.r.out / "reference.py");
  EXPECT_NE(py.find("def kqual_inputs(seed, family, **axes_and_scalars):"), std::string::npos) << py;
  EXPECT_NE(py.find("return generate_inputs(dict(axes_and_scalars), _kqual_torch.device(\"cpu\"))"), std::string::npos) << py;
  // Here (no PyTorch) the generator cannot run: refused by that name when a case is made.
  if (!test_util::have_numpy()) GTEST_SKIP() << "no python3 with NumPy here";
  const Contract& c = load_declared_contract(im.r.out);
  Supports s = test_util::f32_only();
  std::string e;
  try {
    (void)c.make_case_in(c.correctness_cases(s, 3, false).front(), test_util::run_host());
  } catch (const Error& err) {
    e = err.what();
  }
  if (e.empty()) GTEST_SKIP() << "PyTorch is installed here: the generator ran";
  EXPECT_NE(e.find("needs PyTorch: [reference] kind = \"torch\" and [generator] kind = \"torch\""), std::string::npos) << e;
}

std::string def_text(const std::string& name, const std::string& inputs, const std::string& outputs, const std::string& reference,
                     const std::string& axes = R"("n": {"type": "var"}, "m": {"type": "var"}, "h": {"type": "const", "value": 8})",
                     const std::string& constraints = "[]") {
  json r = reference;
  return R"({"name": ")" + name + R"(", "axes": {)" + axes + R"(}, "constraints": )" + constraints + R"(, "inputs": {)" + inputs +
         R"(}, "outputs": {)" + outputs + R"(}, "reference": )" + r.dump() + "}";
}

TEST(import_generator, WhatNothingExplainsIsRefusedByName) {
  // Packed ids: arithmetic on the values says nothing of their range.
  Imported packed(def_text("packed_ids", R"("x": {"shape": ["n", "h"], "dtype": "float32"}, "ids": {"shape": ["n"], "dtype": "int32"})",
                           R"("y": {"shape": ["n", "h"], "dtype": "float32"})",
                           "import torch\n\ndef run(x, ids):\n    return x * (ids >> 16).unsqueeze(-1)\n"),
                  "packed_ids");
  EXPECT_NE(packed.error.find("inputs.ids.dtype: integer input 'ids': what its values are is not in the Definition — no input "
                              "generator (SOL-ExecBench's custom_inputs_entrypoint), no constraint on its values, and run() never uses "
                              "them as an index into or a slice stop along another input"),
            std::string::npos)
      << packed.error;
  // Two ranges at once.
  Imported two(def_text("two_ranges",
                        R"("x": {"shape": ["n", "h"], "dtype": "float32"}, "t": {"shape": ["m", "h"], "dtype": "float32"}, "i": {"shape": ["n"], "dtype": "int64"})",
                        R"("y": {"shape": ["n", "h"], "dtype": "float32"})",
                        "import torch\n\ndef run(x, t, i):\n    return x[i] + t[i]\n"),
               "two_ranges");
  EXPECT_NE(two.error.find("integer input 'i': run() uses its values as an index along m and as an index along n: no one range states "
                           "them"),
            std::string::npos)
      << two.error;
  EXPECT_FALSE(fs::exists(two.dir.path() / "out"));
}

TEST(import_generator, AnIndexWrittenThroughIsUniqueAndItsAxisLargeEnough) {
  Imported im(def_text("slot_update",
                       R"("state": {"shape": ["m", "h"], "dtype": "float32"}, "x": {"shape": ["n", "h"], "dtype": "float32"}, "slots": {"shape": ["n"], "dtype": "int32"})",
                       R"("new_state": {"shape": ["m", "h"], "dtype": "float32"})",
                       "import torch\n\ndef run(state, x, slots):\n    out = state.clone()\n    for b in range(x.shape[0]):\n"
                       "        slot = int(slots[b])\n        out[slot] = out[slot] + x[b]\n    return out\n"),
              "slot_update");
  ASSERT_EQ(im.error, "");
  EXPECT_NE(im.r.contract_toml.find("values = { dist = \"indices\", axis = \"m\", unique = true }   # from run() indexes state along m "
                                    "with it (line 7) and writes through it: no index twice"),
            std::string::npos)
      << im.r.contract_toml;
  const Contract& c = load_declared_contract(im.r.out);
  Supports s = test_util::f32_only();
  const auto r = c.validate(c.request(DType::f32, c.complete_dims({{"n", 9}, {"m", 4}})), s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "constraint");
  EXPECT_NE(r->reason.find("n unique indices per row into m need n <= m"), std::string::npos) << r->reason;
  for (const auto& cs : c.correctness_cases(s, 3, false)) {
    auto slots = ints_of(c.make_case(cs), "slots");
    std::sort(slots.begin(), slots.end());
    EXPECT_EQ(std::adjacent_find(slots.begin(), slots.end()), slots.end()) << cs.id;
  }
}

// run() stating an axis from another tensor's dim (flashinfer-trace's paged prefill Definitions: batch_size =
// len_indptr - 1 in run(), no constraint saying so): the equality is added, so no case hands run() a
// kv_last_page_len shorter than the segments it indexes.
TEST(import_generator, AnAxisRunStatesFromAShapeIsTiedToIt) {
  Imported im(def_text("stated_batch",
                       R"("x": {"shape": ["t", "h"], "dtype": "float32"}, "indptr": {"shape": ["len_indptr"], "dtype": "int32"}, "lens": {"shape": ["batch_size"], "dtype": "float32"})",
                       R"("y": {"shape": ["t", "h"], "dtype": "float32"})",
                       "import torch\n\ndef run(x, indptr, lens):\n    len_indptr = indptr.shape[0]\n    batch_size = len_indptr - 1\n"
                       "    y = x.clone()\n    for b in range(batch_size):\n        y[int(indptr[b]):int(indptr[b + 1])] *= float(lens[b])\n"
                       "    return y\n",
                       R"("t": {"type": "var"}, "len_indptr": {"type": "var"}, "batch_size": {"type": "var"}, "h": {"type": "const", "value": 8})",
                       R"J(["t == indptr[-1].item()"])J"),
              "stated_batch");
  ASSERT_EQ(im.error, "");
  EXPECT_TRUE(im.has_note("run() states batch_size from indptr's shape (line 5): the constraint \"batch_size == len_indptr - 1\" added"));
  EXPECT_NE(im.r.contract_toml.find("[axes.batch_size]\nexpr = \"len_indptr - 1\""), std::string::npos) << im.r.contract_toml;
  EXPECT_NE(im.r.contract_toml.find("values = { dist = \"offsets\", axis = \"t\" }"), std::string::npos) << im.r.contract_toml;
}

// SOL-ExecBench's copies of flashinfer-trace Definitions have no `constraints`: run() asserts them, and
// reads a segment of one integer input between two values of another (kv_indices[kv_indptr[b]:kv_indptr[b + 1]]).
// The asserts become constraints; the bounds become offsets along the axis sliced.
TEST(import_generator, RunsAssertsAndSliceBoundsStateTheValues) {
  Imported im(def_text("asserted_pages",
                       R"("q": {"shape": ["total_q", "h"], "dtype": "float32"}, "cache": {"shape": ["num_pages", "h"], "dtype": "float32"}, )"
                       R"("qo_indptr": {"shape": ["len_indptr"], "dtype": "int32"}, "kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"}, )"
                       R"("kv_indices": {"shape": ["num_kv_indices"], "dtype": "int32"})",
                       R"("y": {"shape": ["total_q", "h"], "dtype": "float32"})",
                       "import torch\n\ndef run(q, cache, qo_indptr, kv_indptr, kv_indices):\n    total_q, h = q.shape\n"
                       "    len_indptr = qo_indptr.shape[0]\n    assert h == 8\n    assert total_q == int(qo_indptr[-1].item())\n"
                       "    y = torch.zeros_like(q)\n    for b in range(len_indptr - 1):\n"
                       "        kv_start = int(kv_indptr[b].item())\n        kv_end = int(kv_indptr[b + 1].item())\n"
                       "        pages = kv_indices[kv_start:kv_end].to(torch.long)\n"
                       "        y[int(qo_indptr[b]):int(qo_indptr[b + 1])] += cache[pages].sum(0)\n    return y\n",
                       R"("total_q": {"type": "var"}, "num_pages": {"type": "var"}, "len_indptr": {"type": "var"}, )"
                       R"("num_kv_indices": {"type": "var"}, "h": {"type": "const", "value": 8})",
                       "[]"),
              "asserted_pages");
  ASSERT_EQ(im.error, "");
  const std::string& t = im.r.contract_toml;
  // The assert over a var axis and a last value is a constraint; the one over a constant axis alone is not added.
  EXPECT_TRUE(im.has_note("run() asserts \"total_q == qo_indptr[-1].item()\" (line 7): added as a constraint")) << fmt::format("{}", fmt::join(im.r.notes, "\n"));
  EXPECT_FALSE(im.has_note("run() asserts \"h == 8\""));
  EXPECT_NE(t.find("values = { dist = \"offsets\", axis = \"total_q\" }"), std::string::npos) << t;
  EXPECT_NE(t.find("values = { dist = \"offsets\", axis = \"num_kv_indices\" }   # from run() slices kv_indices along num_kv_indices "
                   "between two of its values (line 12)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("values = { dist = \"indices\", axis = \"num_pages\" }"), std::string::npos) << t;
  const Contract& c = load_declared_contract(im.r.out);
  Supports s = test_util::f32_only();
  int cases = 0;
  for (const auto& cs : c.correctness_cases(s, 3, false)) {
    const CaseData d = c.make_case(cs);
    const auto qo = ints_of(d, "qo_indptr"), kv = ints_of(d, "kv_indptr");
    ASSERT_EQ(qo.size(), kv.size()) << cs.id;
    EXPECT_EQ(qo.back(), d.dims.at("total_q")) << cs.id;
    EXPECT_EQ(kv.front(), 0) << cs.id;
    EXPECT_EQ(kv.back(), d.dims.at("num_kv_indices")) << cs.id;
    EXPECT_TRUE(std::is_sorted(kv.begin(), kv.end())) << cs.id;
    ++cases;
  }
  EXPECT_GT(cases, 5);
}

}  // namespace
}  // namespace kqual::contract
