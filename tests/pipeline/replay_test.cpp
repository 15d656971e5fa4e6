// kqual replay on a built-in contract (pipeline/replay.hpp), CPU only: a recorded check of the
// known-broken residual_add_relu/broken/missing_tail, made by the real writers, replayed into a
// folder whose manifest, source, .npy inputs and reference equal what the contract makes for the
// case; and every input error (unknown case, no failing case, a candidate that moved or changed, a
// taken --out, another kind of document, another seed), none of which leaves a folder behind.
#include <gtest/gtest.h>

#include "kqual/check/labels.hpp"
#include "kqual/contract/contract.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/self.hpp"
#include "kqual/pipeline/replay.hpp"
#include "replay_test_util.hpp"

namespace kqual::pipeline {
namespace {
namespace fs = std::filesystem;
using namespace kqual::test::replay;

constexpr std::uint64_t kSeed = 7;
const char* const kCase = "f32/n=257/normal";

fs::path missing_tail() { return test::repo_root() / "candidates/residual_add_relu/broken/missing_tail"; }

struct BuiltinReplay : ::testing::Test {
  ScratchDir scratch{"kqual-replay-test"};
  contract::CaseSpec spec = case_of(missing_tail(), kSeed, kCase);
  const contract::Contract& c = contract::find_contract("residual_add_relu");

  json recorded(const fs::path& candidate, bool hashes = true) {
    return check_results(candidate, scratch.path(), kSeed, {failing(c, spec, "unwritten_output", hashes)});
  }
  ReplayOptions options(const std::string& dir = "repro") {
    ReplayOptions o;
    o.out_dir = scratch.path() / dir;
    return o;
  }
  // Nothing but what the test itself put in the scratch folder: no reproducer, no half-written one.
  void expect_nothing_written(const std::string& dir = "repro") {
    EXPECT_FALSE(fs::exists(scratch.path() / dir));
    for (const auto& e : fs::directory_iterator(scratch.path()))
      EXPECT_EQ(e.path().filename().string().find(".replay-"), std::string::npos) << e.path();
  }
};

TEST_F(BuiltinReplay, TheFirstFailingCaseBecomesAFolderThatStandsAlone) {
  const ReplayOutcome out = replay(recorded(missing_tail()), options());
  const fs::path d = scratch.path() / "repro";
  EXPECT_EQ(out.case_id, kCase);
  EXPECT_EQ(out.code, "unwritten_output");
  EXPECT_EQ(out.expect_code, "unwritten_output") << "a failure of the case itself: the command gives the same code";
  EXPECT_EQ(out.run_seed, kSeed);
  EXPECT_TRUE(out.inputs_verified);
  EXPECT_FALSE(out.generated_on_device);
  for (const char* f : {"README.md", "case.json", "layout.json", "failing.json", "candidate/kqual.toml", "candidate/kernel.cu",
                        "inputs/x.npy", "inputs/x.bin", "inputs/r.npy", "inputs/r.bin", "reference/y.npy", "reference/y.bin"})
    EXPECT_TRUE(fs::is_regular_file(d / f)) << f;
  EXPECT_FALSE(fs::exists(d / "contracts")) << "a built-in contract is kqual's own: nothing to copy";
  // The source is the candidate's, byte for byte; the manifest reads from the copy.
  EXPECT_EQ(read_text_file(d / "candidate/kernel.cu"), read_text_file(missing_tail() / "kernel.cu"));
  const build::Manifest m = build::load_manifest(d / "candidate");
  EXPECT_EQ(m.source, fs::absolute(d / "candidate/kernel.cu").lexically_normal());
  EXPECT_EQ(m.name, "broken_missing_tail");
  EXPECT_EQ(m.expect_rejected_for.value_or(""), "unwritten_output");
}

TEST_F(BuiltinReplay, AnIndexOverflowDiagnosisSaysWhichFaultTheCaseGivesAlone) {
  // index_overflow is called over the run's cases (every smaller one passed); `--case` runs one case,
  // which shows its own fault: the folder says which, so a reader (and scripts/device-replay) knows
  // what "fails the same way" means.
  check::CaseResult r = failing(c, spec, "illegal_address");
  check::CorrectnessReport before;
  before.cases = before.passed = 24;
  check::label_index_case(before, true, "2^31", r);
  ASSERT_EQ(r.code, "index_overflow");
  const ReplayOutcome out = replay(check_results(missing_tail(), scratch.path(), kSeed, {r}), options());
  EXPECT_EQ(out.code, "index_overflow");
  EXPECT_EQ(out.expect_code, "illegal_address");
  const json doc = json::parse(read_text_file(scratch.path() / "repro/case.json"));
  EXPECT_EQ(doc.value("expect_code", ""), "illegal_address");
  const std::string readme = read_text_file(scratch.path() / "repro/README.md");
  EXPECT_NE(readme.find("Run alone, the case fails with **illegal_address**, not index_overflow"), std::string::npos) << readme;
}

TEST_F(BuiltinReplay, InputsAndReferenceAreTheContractsOwnBytesWithNpyHeaders) {
  (void)replay(recorded(missing_tail()), options());
  const fs::path d = scratch.path() / "repro";
  const contract::CaseData data = c.make_case(spec);
  ASSERT_EQ(data.inputs.size(), 2u);
  for (const auto& t : data.inputs) {
    const Npy n = read_npy(d / "inputs" / (t.name + ".npy"));
    EXPECT_NE(n.header.find("'descr': '<f4'"), std::string::npos) << n.header;
    EXPECT_NE(n.header.find("'shape': (257,)"), std::string::npos) << n.header;
    EXPECT_EQ((10 + n.header.size()) % 64, 0u) << "header padded to 64 bytes";
    EXPECT_EQ(n.header.back(), '\n');
    EXPECT_EQ(n.data, t.bytes) << t.name;
    EXPECT_EQ(file_bytes(d / "inputs" / (t.name + ".bin")), t.bytes) << t.name;
  }
  const std::vector<contract::Tensor> expected = c.reference(data);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(read_npy(d / "reference/y.npy").data, expected[0].bytes);
  const json layout = json::parse(read_text_file(d / "layout.json"));
  ASSERT_EQ(layout.at("tensors").size(), 3u);
  EXPECT_EQ(layout["tensors"][0]["name"], "x");
  EXPECT_EQ(layout["tensors"][0]["bytes"], 257 * 4);
  EXPECT_EQ(layout["tensors"][0]["sha256"], sha256_hex(data.inputs[0].bytes.data(), data.inputs[0].bytes.size()));
  EXPECT_EQ(layout["tensors"][0]["offset_elements"], 0);
  EXPECT_EQ(layout["tensors"][2]["role"], "reference");
}

TEST_F(BuiltinReplay, TheReadmeGivesTheOneCommandAndTheDebuggers) {
  const ReplayOutcome out = replay(recorded(missing_tail()), options());
  const std::string readme = read_text_file(scratch.path() / "repro/README.md");
  const std::string cmd = "kqual check candidate --case f32/n=257/normal --seed 7 --out kqual-out/candidate";
  ASSERT_EQ(out.commands.size(), 1u);
  EXPECT_EQ(out.commands[0], cmd);
  // The README assumes no kqual on the PATH: its commands run "$KQUAL", set to the kqual that wrote it.
  const std::string in_readme = "\"$KQUAL\"" + cmd.substr(5);
  EXPECT_NE(readme.find(in_readme), std::string::npos) << readme;
  EXPECT_NE(readme.find("KQUAL=" + shell_word(self_executable()->string()) + "\n"), std::string::npos) << readme;
  EXPECT_EQ(readme.find("on the PATH,"), std::string::npos) << readme;
  EXPECT_NE(readme.find("compute-sanitizer --tool memcheck --target-processes all " + in_readme + " --watchdog 600 --no-sanitizer-pass"),
            std::string::npos);
  EXPECT_NE(readme.find("cuda-gdb"), std::string::npos);
  EXPECT_NE(readme.find("unwritten_output"), std::string::npos);
  EXPECT_NE(readme.find("nan (0xffffffff)"), std::string::npos) << "the recorded failing element";
  const json failing_doc = json::parse(read_text_file(scratch.path() / "repro/failing.json"));
  EXPECT_EQ(failing_doc["candidate"]["code"], "unwritten_output");
  EXPECT_EQ(failing_doc["candidate"]["failing_elements"][0]["index"], 256);
  const json case_doc = json::parse(read_text_file(scratch.path() / "repro/case.json"));
  EXPECT_EQ(case_doc["schema"], "kqual.replay/1");
  EXPECT_EQ(case_doc["case"]["seed"], spec.seed);
  EXPECT_EQ(case_doc["case"]["dims"]["n"], 257);
}

TEST_F(BuiltinReplay, ACaseNamedByIdIsReplayed) {
  const contract::CaseSpec other = case_of(missing_tail(), kSeed, "f32/n=1025/specials");
  const json doc = check_results(missing_tail(), scratch.path(), kSeed,
                                 {failing(c, spec, "unwritten_output"), failing(c, other, "unwritten_output")});
  ReplayOptions o = options();
  o.case_id = other.id;
  const ReplayOutcome out = replay(doc, o);
  EXPECT_EQ(out.case_id, other.id);
  EXPECT_EQ(read_npy(scratch.path() / "repro/inputs/x.npy").data, c.make_case(other).inputs[0].bytes);
}

TEST_F(BuiltinReplay, AnOffsetCaseSaysWhereItsTensorsStart) {
  // int32_index claims 4-byte alignment: its cases include one-element offsets.
  const fs::path cand = test::repo_root() / "candidates/residual_add_relu/broken/int32_index";
  const contract::CaseSpec off = case_of(cand, kSeed, "f32/n=257/normal/offset=1");
  (void)replay(check_results(cand, scratch.path(), kSeed, {failing(c, off, "wrong_result")}), options());
  const json layout = json::parse(read_text_file(scratch.path() / "repro/layout.json"));
  EXPECT_EQ(layout["tensors"][0]["offset_elements"], 1);
  EXPECT_EQ(layout["tensors"][0]["view_offset_bytes"], 4);
  EXPECT_NE(read_text_file(scratch.path() / "repro/README.md").find("1 element(s) past an aligned address"), std::string::npos);
}

TEST_F(BuiltinReplay, PastMaxBytesTheTensorsAreNotWrittenAndTheFolderSaysSo) {
  ReplayOptions o = options();
  o.max_bytes = 1000;  // the case holds 3 x 257 x 4 bytes
  const ReplayOutcome out = replay(recorded(missing_tail()), o);
  EXPECT_TRUE(out.tensors.empty());
  EXPECT_FALSE(fs::exists(scratch.path() / "repro/inputs"));
  ASSERT_FALSE(out.notes.empty());
  EXPECT_NE(out.notes.back().find("over --max-bytes 1000"), std::string::npos) << out.notes.back();
  EXPECT_NE(read_text_file(scratch.path() / "repro/README.md").find("over --max-bytes 1000"), std::string::npos);
}

TEST_F(BuiltinReplay, WithoutRecordedHashesTheFolderSaysTheyWereNotCompared) {
  const ReplayOutcome out = replay(recorded(missing_tail(), false), options());
  EXPECT_FALSE(out.inputs_verified);
  bool said = false;
  for (const auto& n : out.notes) said = said || n.find("no input hashes") != std::string::npos;
  EXPECT_TRUE(said);
}

// A result recorded by another kqual (check-atomic-split.json: recorded at 922ce14, judged since by
// another run-to-run rule): the reproducer says so in case.json and its README, instead of promising
// the recorded failure. One recorded by this kqual says nothing of it.
TEST_F(BuiltinReplay, AResultRecordedByAnotherKqualSaysTheRulesMayHaveChanged) {
  json doc = recorded(missing_tail());
  const auto said = [](const ReplayOutcome& o) {
    bool s = false;
    for (const auto& n : o.notes) s = s || n.find("may have changed since") != std::string::npos;
    return s;
  };
  EXPECT_FALSE(said(replay(doc, options("same"))));
  doc["provenance"]["git_revision"] = "922ce14";
  const ReplayOutcome out = replay(doc, options("other"));
  EXPECT_TRUE(said(out));
  EXPECT_NE(read_text_file(scratch.path() / "other/README.md").find("revision 922ce14"), std::string::npos);
  EXPECT_NE(read_text_file(scratch.path() / "other/case.json").find("may have changed since"), std::string::npos);
}

void expect_input_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\n  lacks: " << p;
  }
}

TEST_F(BuiltinReplay, AnUnknownCaseIdNamesTheFailingOnes) {
  ReplayOptions o = options();
  o.case_id = "f32/n=999/normal";
  expect_input_error([&] { (void)replay(recorded(missing_tail()), o); }, {"f32/n=999/normal", "no such case", kCase});
  expect_nothing_written();
}

// A compute-sanitizer finding spans small cases that passed alone: replay names it as such (never "the
// claims changed"), the default case is a real failing one when there is one, and qualify's reproduce
// commands skip the finding.
TEST_F(BuiltinReplay, ASanitizerFindingIsNamedNotReplayed) {
  check::CaseResult f;
  f.spec.id = "sanitizer/memcheck";
  f.spec.family = "memcheck";
  f.sanitizer_finding = true;
  f.status = check::CaseStatus::fail;
  f.code = "out_of_bounds_read";
  f.detail = "compute-sanitizer memcheck on 2 small case(s) (f32/n=1/normal, f32/n=257/normal): Invalid __global__ read";
  const json only = check_results(missing_tail(), scratch.path(), kSeed, {f});
  expect_input_error([&] { (void)replay(only, options()); }, {"no failing case"});
  ReplayOptions o = options();
  o.case_id = "sanitizer/memcheck";
  expect_input_error([&] { (void)replay(only, o); }, {"sanitizer/memcheck", "compute-sanitizer's finding", "Invalid __global__ read",
                                                      "nothing to replay"});
  expect_nothing_written();
  QualifyOptions q;
  q.candidate = missing_tail();
  q.out_dir = scratch.path() / "check-out";
  EXPECT_FALSE(reproduce_commands(q, only.at("correctness")).has_value());
  // With a case that failed alone as well, that case is replayed and reproduced.
  const json both = check_results(missing_tail(), scratch.path(), kSeed, {f, failing(c, spec, "unwritten_output")});
  EXPECT_EQ(replay(both, options()).case_id, kCase);
  const auto rc = reproduce_commands(q, both.at("correctness"));
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(rc->case_id, kCase);
}

TEST_F(BuiltinReplay, ResultsWithoutAFailingCaseAreAnInputError) {
  const json doc = check_results(missing_tail(), scratch.path(), kSeed, {});
  expect_input_error([&] { (void)replay(doc, options()); }, {"no failing case", "40 of 40 cases passed"});
  // The correctness phase that did not run (no GPU): no case at all.
  pipeline::QualifyOptions q;
  q.candidate = missing_tail();
  q.out_dir = scratch.path() / "static";
  q.use_gpu = false;
  q.command = "check";
  expect_input_error([&] { (void)replay(pipeline::qualify(q).results, options()); }, {"correctness phase did not run"});
  expect_nothing_written();
}

TEST_F(BuiltinReplay, ACandidateFolderThatMovedIsNamed) {
  const fs::path cand = copy_candidate(missing_tail(), scratch.path() / "cand");
  const json doc = recorded(cand);
  fs::rename(cand, scratch.path() / "cand-moved");
  expect_input_error([&] { (void)replay(doc, options()); }, {"the candidate's manifest", (cand / "kqual.toml").string(), "moved"});
  expect_nothing_written();
}

TEST_F(BuiltinReplay, ASourceChangedSinceTheRunIsRefused) {
  const fs::path cand = copy_candidate(missing_tail(), scratch.path() / "cand");
  const json doc = recorded(cand);
  std::ofstream(cand / "kernel.cu", std::ios::app) << "\n// fixed?\n";
  expect_input_error([&] { (void)replay(doc, options()); }, {"changed since the run", "kernel.cu"});
  expect_nothing_written();
}

TEST_F(BuiltinReplay, ATakenOutputFolderIsLeftAsItWas) {
  fs::create_directories(scratch.path() / "repro");
  std::ofstream(scratch.path() / "repro/keep.txt") << "mine";
  expect_input_error([&] { (void)replay(recorded(missing_tail()), options()); }, {"already exists"});
  EXPECT_EQ(read_text_file(scratch.path() / "repro/keep.txt"), "mine");
  // An empty folder is taken over.
  fs::create_directories(scratch.path() / "empty");
  (void)replay(recorded(missing_tail()), options("empty"));
  EXPECT_TRUE(fs::is_regular_file(scratch.path() / "empty/README.md"));
}

TEST_F(BuiltinReplay, AFailureWhileWritingLeavesNoFolder) {
  // Hashes that are not the contract's: found after the candidate was copied into the folder being written.
  json doc = recorded(missing_tail());
  doc["correctness"]["failing_cases"][0]["input_sha256"]["x"] = std::string(64, '0');
  expect_input_error([&] { (void)replay(doc, options()); }, {"input 'x' regenerated here", "0000000000000000"});
  expect_nothing_written();
}

TEST_F(BuiltinReplay, ACaseTheRecordedSeedDoesNotMakeIsRefused) {
  json doc = recorded(missing_tail());
  doc["provenance"]["command_line"] = "kqual check candidates/residual_add_relu/broken/missing_tail --seed 8";
  expect_input_error([&] { (void)replay(doc, options()); }, {"under seed 8", "would not be the run's"});
  doc["provenance"]["command_line"] = "kqual check x --seed=abc";
  expect_input_error([&] { (void)replay(doc, options()); }, {"--seed 'abc'"});
  expect_nothing_written();
}

TEST_F(BuiltinReplay, OtherDocumentsAreRefusedByName) {
  expect_input_error([&] { (void)replay(json{{"schema", "kqual.selftest/1"}}, options()); }, {"kqual.selftest/1", "qualify, check or compare"});
  expect_input_error([&] { (void)replay(json::object(), options()); }, {"no \"schema\""});
  expect_nothing_written();
}

TEST(ReplaySeed, TheRecordedCommandLineGivesTheRunSeed) {
  EXPECT_EQ(recorded_run_seed("kqual check c --seed 42"), 42u);
  EXPECT_EQ(recorded_run_seed("kqual check c --seed=43 --out x"), 43u);
  EXPECT_EQ(recorded_run_seed("kqual check c"), QualifyOptions{}.seed);
}

}  // namespace
}  // namespace kqual::pipeline
