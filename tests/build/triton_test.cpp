// kqual import-triton's library: a Triton cache folder → a candidate folder with the cubin and a
// kqual.toml that parse_manifest refuses until its placeholders are completed. CPU only: the
// cache is synthetic (tests/build/triton_cache.hpp), its cubins compiled here by nvcc.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "kqual/build/candidate.hpp"
#include "kqual/build/manifest.hpp"
#include "kqual/build/triton.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "triton_cache.hpp"

namespace kqual::build {
namespace {
namespace fs = std::filesystem;

class TritonImportTest : public ::testing::Test {
 protected:
  static inline std::unique_ptr<ScratchDir> work;  // cubins compiled once for the suite
  static void SetUpTestSuite() { work = std::make_unique<ScratchDir>("kqual-triton-work"); }
  static void TearDownTestSuite() { work.reset(); }

  ScratchDir cache{"kqual-triton-cache"};
  ScratchDir outs{"kqual-triton-out"};

  fs::path cubin(const std::string& arch = "sm_90a") { return test::triton_like_cubin(work->path(), arch); }

  // Three compiles: add_kernel twice (4 and 8 warps), scale_kernel once.
  void three_kernels() {
    test::add_triton_entry(cache.path(), "AAAWARPS4", "add_kernel", cubin(), test::triton_metadata("add_kernel", 4, 0));
    test::add_triton_entry(cache.path(), "BBBWARPS8", "add_kernel", cubin(), test::triton_metadata("add_kernel", 8, 0));
    test::add_triton_entry(cache.path(), "CCCSCALE", "scale_kernel", cubin(), test::triton_metadata("scale_kernel", 4, 1024));
    // Triton also keeps its launcher stubs in the cache: a folder with no kernel in it.
    fs::create_directories(cache.path() / "DDDLAUNCHER");
    write_file_atomic(cache.path() / "DDDLAUNCHER" / "__triton_launcher.so", "not a kernel");
  }

  TritonImport import(const std::string& kernel, const std::string& out_name = "cand", const std::string& arch = "") {
    return import_triton_kernel(TritonImportOptions{cache.path(), kernel, outs.path() / out_name, arch});
  }

  // The call must throw `kind`, its message holding every one of `words`; nothing may be written.
  template <class F>
  void expect_error(F&& f, ErrorKind kind, std::initializer_list<std::string> words) {
    try {
      f();
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " in: " << e.what();
    }
    EXPECT_TRUE(fs::is_empty(outs.path())) << "something was written";
  }
};

TEST_F(TritonImportTest, ListsEveryCompiledKernelByFolderAndName) {
  three_kernels();
  const auto all = find_triton_kernels(cache.path());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].label(), "AAAWARPS4/add_kernel");
  EXPECT_EQ(all[1].label(), "BBBWARPS8/add_kernel");
  EXPECT_EQ(all[2].label(), "CCCSCALE/scale_kernel");
  for (const auto& e : all) {
    EXPECT_FALSE(e.cubin.empty());
    EXPECT_FALSE(e.metadata.empty());
    EXPECT_FALSE(e.group.empty());
  }
}

TEST_F(TritonImportTest, RefusesToGuessWhenSeveralKernelsMatch) {
  three_kernels();
  expect_error([&] { import(""); }, ErrorKind::usage,
               {"3 Triton kernels", "--kernel", "AAAWARPS4/add_kernel", "BBBWARPS8/add_kernel", "CCCSCALE/scale_kernel"});
  expect_error([&] { import("add_kernel"); }, ErrorKind::usage,
               {"2 Triton kernels named 'add_kernel'", "AAAWARPS4/add_kernel", "BBBWARPS8/add_kernel"});
  expect_error([&] { import("mul_kernel"); }, ErrorKind::usage, {"no Triton kernel 'mul_kernel'", "CCCSCALE/scale_kernel"});
}

TEST_F(TritonImportTest, PicksByNameByFolderAndTheOnlyOneOfAnEntry) {
  three_kernels();
  EXPECT_EQ(import("scale_kernel", "a").meta.num_warps, 4);
  EXPECT_EQ(import("BBBWARPS8/add_kernel", "b").meta.num_warps, 8);
  EXPECT_EQ(import("AAAWARPS4", "c").meta.num_warps, 4);
  // One entry's folder given: its one kernel, no --kernel needed.
  auto r = import_triton_kernel(TritonImportOptions{cache.path() / "CCCSCALE", "", outs.path() / "d", ""});
  EXPECT_EQ(r.meta.name, "scale_kernel");
}

TEST_F(TritonImportTest, WritesTheCubinAndAManifestWithTritonsLaunchFacts) {
  three_kernels();
  const TritonImport r = import("BBBWARPS8/add_kernel");
  const fs::path out = outs.path() / "cand";
  EXPECT_EQ(r.out, out);
  EXPECT_EQ(read_text_file(out / "add_kernel.cubin"), read_text_file(cubin()));
  const std::string t = read_text_file(out / "kqual.toml");
  EXPECT_EQ(t, r.manifest);
  EXPECT_EQ(r.cubin_arch.str(), "sm_90a");
  // Parameters from the cubin: x, y, out (8 B), n (4 B), then the two scratch pointers.
  ASSERT_EQ(r.params.size(), 6u);
  const std::uint32_t sizes[] = {8, 8, 8, 4, 8, 8}, offsets[] = {0, 8, 16, 24, 32, 40};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.params[i].ordinal, static_cast<int>(i));
    EXPECT_EQ(r.params[i].size, sizes[i]) << i;
    EXPECT_EQ(r.params[i].offset, offsets[i]) << i;
  }
  for (const char* line : {"image       = \"add_kernel.cubin\"", "kernel = \"add_kernel\"", "block  = 256 ",
                           "shared = 0 ", "#   3       24     4  32-bit integer",
                           "#   4       32     8  Triton's global scratch pointer (mapped below)",
                           "#   5       40     8  Triton's profile scratch pointer (mapped below)",
                           "name  = \"triton_global_scratch\"", "name  = \"triton_profile_scratch\""})
    EXPECT_NE(t.find(line), std::string::npos) << line << " in:\n" << t;
  EXPECT_NE(t.find("args   = [\"TODO: parameter 0 (8 B)\", \"TODO: parameter 1 (8 B)\", \"TODO: parameter 2 (8 B)\", "
                   "\"TODO: parameter 3 (4 B)\", \"triton_global_scratch\", \"triton_profile_scratch\"]"),
            std::string::npos)
      << t;
  EXPECT_EQ(r.placeholders, (std::vector<std::string>{"candidate.contract", "supports.dtypes[0]", "launch[0].grid",
                                                      "launch[0].args[0]", "launch[0].args[1]", "launch[0].args[2]",
                                                      "launch[0].args[3]"}));
  // Dynamic shared memory comes from "shared".
  const TritonImport s = import("scale_kernel", "s");
  EXPECT_NE(s.manifest.find("shared = 1024 "), std::string::npos) << s.manifest;
  EXPECT_NE(s.manifest.find("block  = 128 "), std::string::npos) << s.manifest;
  EXPECT_NE(s.manifest.find("#   1        8     8  pointer or 64-bit integer"), std::string::npos) << s.manifest;
}

TEST_F(TritonImportTest, TheGeneratedManifestIsRefusedNamingEachPlaceholderUntilCompleted) {
  three_kernels();
  const TritonImport r = import("AAAWARPS4/add_kernel");
  try {
    load_manifest(r.out);
    FAIL() << "an incomplete manifest was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    const std::string w = e.what();
    EXPECT_NE(w.find((r.out / "kqual.toml").string()), std::string::npos) << w;
    EXPECT_NE(w.find("incomplete manifest: 7 placeholder(s)"), std::string::npos) << w;
    for (const auto& p : r.placeholders) EXPECT_NE(w.find(p), std::string::npos) << p << " in: " << w;
  }
  // Completing all but one still refuses, naming the one left.
  std::string t = r.manifest;
  auto set = [&](const std::string& from, const std::string& to) {
    const auto p = t.find(from);
    ASSERT_NE(p, std::string::npos) << from;
    t.replace(p, from.size(), to);
  };
  set("\"TODO: the contract this kernel implements (kqual qualify lists them)\"", "\"residual_add_relu\"");
  set("\"TODO: the dtype(s) this compile handles, e.g. f32\"", "\"f32\"");
  set("\"TODO: parameter 0 (8 B)\"", "\"x\"");
  set("\"TODO: parameter 1 (8 B)\"", "\"r\"");
  set("\"TODO: parameter 2 (8 B)\"", "\"y\"");
  set("\"TODO: parameter 3 (4 B)\"", "\"n:i32\"");
  write_file_atomic(r.out / "kqual.toml", t);
  try {
    load_manifest(r.out);
    FAIL() << "accepted with the grid left";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 placeholder(s) to complete before kqual uses it: launch[0].grid"),
              std::string::npos)
        << e.what();
  }
  // Completed: a valid candidate whose prebuilt image is the Triton cubin, its plan as Triton's.
  t = std::regex_replace(t, std::regex("grid   = \"TODO:[^\"]*\""), "grid   = \"cdiv(n, 256)\"");
  write_file_atomic(r.out / "kqual.toml", t);
  const Manifest m = load_manifest(r.out);
  EXPECT_EQ(m.contract, "residual_add_relu");
  EXPECT_EQ(m.image, fs::absolute(r.out / "add_kernel.cubin").lexically_normal());
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].args.size(), 6u);
  ASSERT_EQ(m.scratch.size(), 2u);
  ScratchDir built("kqual-triton-built");
  const BuiltCandidate b = build_candidate(m, "sm_90", built.path());
  ASSERT_EQ(b.lowered.count("add_kernel"), 1u);
  EXPECT_EQ(b.lowered.at("add_kernel"), "add_kernel");
}

TEST_F(TritonImportTest, MissingMetadataIsAnErrorNamingTheFile) {
  fs::create_directories(cache.path() / "E1");
  fs::copy_file(cubin(), cache.path() / "E1" / "add_kernel.cubin");
  expect_error([&] { import(""); }, ErrorKind::input,
               {(cache.path() / "E1" / "add_kernel.json").string(), "missing", "E1/add_kernel"});
}

TEST_F(TritonImportTest, MissingCubinIsAnErrorNamingTheFile) {
  const auto dir = test::add_triton_entry(cache.path(), "E2", "add_kernel", cubin(), test::triton_metadata("add_kernel", 4, 0));
  fs::remove(dir / "add_kernel.cubin");
  expect_error([&] { import(""); }, ErrorKind::input, {(dir / "add_kernel.cubin").string(), "missing"});
}

TEST_F(TritonImportTest, MalformedJsonIsAnErrorNamingTheFile) {
  const auto dir = test::add_triton_entry(cache.path(), "E3", "add_kernel", cubin(), test::triton_metadata("add_kernel", 4, 0));
  write_file_atomic(dir / "add_kernel.json", "{\"name\": \"add_kernel\", \"num_warps\": 4,");
  expect_error([&] { import(""); }, ErrorKind::input, {(dir / "add_kernel.json").string(), "malformed JSON"});
  // A malformed group file too.
  write_file_atomic(dir / "add_kernel.json", test::triton_metadata("add_kernel", 4, 0).dump());
  write_file_atomic(dir / "__grp__add_kernel.json", "[1, 2");
  expect_error([&] { import(""); }, ErrorKind::input, {(dir / "__grp__add_kernel.json").string(), "malformed JSON"});
}

TEST_F(TritonImportTest, MissingOrMistypedKeysAreErrorsNamingTheKey) {
  const auto dir = test::add_triton_entry(cache.path(), "E4", "add_kernel", cubin(), test::triton_metadata("add_kernel", 4, 0));
  json m = test::triton_metadata("add_kernel", 4, 0);
  m.erase("num_warps");
  write_file_atomic(dir / "add_kernel.json", m.dump());
  expect_error([&] { import(""); }, ErrorKind::input, {(dir / "add_kernel.json").string(), "\"num_warps\""});
  m = test::triton_metadata("add_kernel", 4, 0);
  m["shared"] = "lots";
  write_file_atomic(dir / "add_kernel.json", m.dump());
  expect_error([&] { import(""); }, ErrorKind::input, {"\"shared\" is \"lots\""});
  m = test::triton_metadata("add_kernel", 4, 0);
  m["target"] = {{"backend", "hip"}, {"arch", "gfx942"}, {"warp_size", 64}};
  write_file_atomic(dir / "add_kernel.json", m.dump());
  expect_error([&] { import(""); }, ErrorKind::input, {"\"hip\"", "not a CUDA kernel"});
}

TEST_F(TritonImportTest, ACubinForAnotherArchThanTheTargetIsRefusedSayingSo) {
  // Metadata says cuda:80; the cubin holds sm_90a SASS.
  test::add_triton_entry(cache.path(), "E5", "add_kernel", cubin(), test::triton_metadata("add_kernel", 4, 0, 80));
  expect_error([&] { import(""); }, ErrorKind::input, {"add_kernel.cubin", "holds sm_90a SASS", "cuda:80"});
  // Consistent entry, but --arch names a GPU it cannot load on.
  test::add_triton_entry(cache.path(), "E5", "add_kernel", cubin(), test::triton_metadata("add_kernel", 4, 0, 90));
  expect_error([&] { import("", "cand", "sm_80"); }, ErrorKind::input, {"holds sm_90a SASS", "another GPU", "sm_80"});
  EXPECT_NO_THROW(import("", "cand", "sm_90"));
}

TEST_F(TritonImportTest, ClusterAndCooperativeLaunchesAreRefused) {
  json m = test::triton_metadata("add_kernel", 4, 0);
  m["num_ctas"] = 2;
  test::add_triton_entry(cache.path(), "E6", "add_kernel", cubin(), m);
  expect_error([&] { import(""); }, ErrorKind::input, {"num_ctas 2", "cluster"});
  m = test::triton_metadata("add_kernel", 4, 0);
  m["launch_cooperative_grid"] = true;
  test::add_triton_entry(cache.path(), "E6", "add_kernel", cubin(), m);
  expect_error([&] { import(""); }, ErrorKind::input, {"cooperative"});
}

TEST_F(TritonImportTest, AKernelNameTheCubinDoesNotHoldIsAnError) {
  test::add_triton_entry(cache.path(), "E7", "add_kernel", cubin(), test::triton_metadata("mul_kernel", 4, 0));
  expect_error([&] { import(""); }, ErrorKind::input, {"has no kernel 'mul_kernel'", "add_kernel", "scale_kernel"});
}

TEST_F(TritonImportTest, AnExistingOutputFolderIsNeverOverwritten) {
  test::add_triton_entry(cache.path(), "E8", "add_kernel", cubin(), test::triton_metadata("add_kernel", 4, 0));
  fs::create_directories(outs.path() / "cand");
  write_file_atomic(outs.path() / "cand" / "mine.txt", "keep");
  EXPECT_THROW(import(""), Error);
  EXPECT_EQ(read_text_file(outs.path() / "cand" / "mine.txt"), "keep");
  EXPECT_FALSE(fs::exists(outs.path() / "cand" / "kqual.toml"));
}

TEST_F(TritonImportTest, ScratchThatTheKernelUsesIsLeftToTheUserWithItsSize) {
  json m = test::triton_metadata("add_kernel", 4, 0);
  m["global_scratch_size"] = 128;
  m["global_scratch_align"] = 8;
  test::add_triton_entry(cache.path(), "E9", "add_kernel", cubin(), m);
  const TritonImport r = import("");
  EXPECT_NE(r.manifest.find("# Triton's global scratch pointer: 128 B per program, aligned to 8 B"), std::string::npos)
      << r.manifest;
  EXPECT_NE(std::find(r.placeholders.begin(), r.placeholders.end(), "scratch[0].bytes"), r.placeholders.end());
}

TEST_F(TritonImportTest, AnEmptyOrMissingCacheIsAnError) {
  expect_error([&] { import(""); }, ErrorKind::input, {"no Triton kernel here"});
  expect_error([&] { import_triton_kernel(TritonImportOptions{cache.path() / "nope", "", outs.path() / "c", ""}); },
               ErrorKind::input, {"not a folder"});
}

}  // namespace
}  // namespace kqual::build

namespace kqual::build {
namespace {
namespace fs = std::filesystem;

// The cache Triton 3.6.0 wrote on the H200 (tests/build/fixtures/triton-cache-h200/README.md): the
// format assumptions hold on a real one.
fs::path real_cache() { return test::repo_root() / "tests/build/fixtures/triton-cache-h200"; }

TEST(TritonRealCache, ListsBothCompilesAndReadsTheirMetadata) {
  const auto all = find_triton_kernels(real_cache());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].label(), "G2MOP2ICAXJ326UKD7SBW5TRYQTA6K6QMHLCJBAKUT5PSZW5EAKQ/add_relu");
  EXPECT_EQ(all[1].label(), "WOM7DAXOY7XDZANHSFIRJWOTUGRK4ZD7SNYSVHSYKMFUP6A5NTFA/read_pass");
  const TritonMetadata m = read_triton_metadata(all[1]);
  EXPECT_EQ(m.name, "read_pass");
  EXPECT_EQ(m.num_warps, 4);
  EXPECT_EQ(m.warp_size, 32);
  EXPECT_EQ(m.shared, 16u);
  EXPECT_EQ(m.arch, 90);
  EXPECT_EQ(m.triton_version, "3.6.0");
  EXPECT_EQ(m.global_scratch_size, std::optional<std::uint64_t>(0));
  EXPECT_EQ(m.profile_scratch_size, std::optional<std::uint64_t>(0));
}

TEST(TritonRealCache, ImportsAddReluWithItsTritonSignatureAndBuildsOnceCompleted) {
  ScratchDir outs("kqual-triton-real");
  const TritonImport r = import_triton_kernel(TritonImportOptions{real_cache(), "add_relu", outs.path() / "cand", "sm_90"});
  EXPECT_EQ(r.cubin_arch.str(), "sm_90a");  // Triton compiles capability 9.0 as sm_90a
  // x_ptr, r_ptr, y_ptr, n, then the global and profile scratch pointers Triton 3.6 appends.
  ASSERT_EQ(r.params.size(), 6u);
  const std::uint32_t sizes[] = {8, 8, 8, 4, 8, 8};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(r.params[i].size, sizes[i]) << i;
  for (const char* line : {"kernel = \"add_relu\"", "block  = 128 ", "shared = 0 ",
                           "Triton: x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}",
                           "Triton: n: i32 {tt.divisibility = 16 : i32}", "\"TODO: parameter 3 (4 B): n\"",
                           "Triton 3.6.0, compile key: 3698e7e9"})
    EXPECT_NE(r.manifest.find(line), std::string::npos) << line << " in:\n" << r.manifest;
  EXPECT_THROW(load_manifest(r.out), Error);
  std::string t = r.manifest;
  t = std::regex_replace(t, std::regex("contract    = \"TODO:[^\"]*\""), "contract    = \"residual_add_relu\"");
  t = std::regex_replace(t, std::regex("dtypes = \\[\"TODO:[^\"]*\"\\]"), "dtypes = [\"f32\"]");
  t = std::regex_replace(t, std::regex("grid   = \"TODO:[^\"]*\""), "grid   = \"cdiv(n, 4096)\"");
  t = std::regex_replace(t, std::regex("args   = \\[[^\\]]*\\]"),
                         "args   = [\"x\", \"r\", \"y\", \"n:i32\", \"triton_global_scratch\", \"triton_profile_scratch\"]");
  write_file_atomic(r.out / "kqual.toml", t);
  const Manifest m = load_manifest(r.out);
  ScratchDir built("kqual-triton-real-built");
  const BuiltCandidate b = build_candidate(m, "sm_90", built.path());
  EXPECT_EQ(b.lowered.at("add_relu"), "add_relu");
  EXPECT_EQ(b.load_path, "native_sass");
}

}  // namespace
}  // namespace kqual::build
