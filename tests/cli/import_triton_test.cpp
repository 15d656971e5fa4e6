// `kqual import-triton` as a user runs it: list, refuse to guess, import, and `kqual check` refusing
// the generated manifest until its placeholders are completed (exit 2, each placeholder named).
#include <gtest/gtest.h>

#include <filesystem>

#include "../build/triton_cache.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;


TEST(ImportTritonCli, ListsImportsAndTheResultIsRefusedByCheckUntilCompleted) {
  ScratchDir work("kqual-cli-triton-work"), cache("kqual-cli-triton-cache"), outs("kqual-cli-triton-out");
  const fs::path cubin = test::triton_like_cubin(work.path(), "sm_90a");
  test::add_triton_entry(cache.path(), "AAA", "add_kernel", cubin, test::triton_metadata("add_kernel", 4, 0));
  test::add_triton_entry(cache.path(), "BBB", "scale_kernel", cubin, test::triton_metadata("scale_kernel", 8, 0));

  auto r = test::run(test::kq() + " import-triton --list " + test::quote(cache.path()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("AAA/add_kernel"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("BBB/scale_kernel"), std::string::npos) << r.output;

  const fs::path out = outs.path() / "cand";
  r = test::run(test::kq() + " import-triton " + test::quote(cache.path()) + " --out " + test::quote(out));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("pick one with --kernel"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));

  r = test::run(test::kq() + " --json import-triton " + test::quote(cache.path()) + " --kernel add_kernel --out " + test::quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json j = json::parse(r.output);
  EXPECT_EQ(j["schema"], "kqual.import-triton/1");
  EXPECT_EQ(j["kernel"], "add_kernel");
  EXPECT_EQ(j["block"], 128);
  EXPECT_EQ(j["params"].size(), 6u);
  EXPECT_TRUE(fs::exists(out / "kqual.toml"));
  EXPECT_TRUE(fs::exists(out / "add_kernel.cubin"));

  r = test::run(test::kq() + " check --no-gpu " + test::quote(out) + " --out " + test::quote(outs.path() / "check"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const char* w : {"incomplete manifest", "candidate.contract", "launch[0].grid", "launch[0].args[0]"})
    EXPECT_NE(r.output.find(w), std::string::npos) << w << " in: " << r.output;
  EXPECT_FALSE(fs::exists(outs.path() / "check" / "results.json")) << "an incomplete manifest produced results";
}

}  // namespace
}  // namespace kqual
