// PyTorch baselines' series kept across qualify runs (bench/torch_baseline_cache.hpp), on the CPU: the key
// follows everything that decides a series, an entry comes back whole, and a torn or foreign file is
// never reused.
#include <gtest/gtest.h>

#include <fstream>

#include "kqual/bench/torch_baseline_cache.hpp"
#include "kqual/core/files.hpp"

namespace kqual::bench {
namespace {
namespace fs = std::filesystem;

json identity() { return json{{"operation", "the built-in residual_add_relu"}, {"torch", "2.11.0+cu130"}, {"gpu", {{"name", "H100"}}}}; }

TEST(TorchBaselineCache, TheKeyFollowsTheShapeTheDtypeAndEveryPartOfTheIdentity) {
  ScratchDir d("kqual-torch-cache-key");
  const TorchBaselineCache a(d.path(), identity());
  const std::string k = a.key("n=4096", "f32");
  EXPECT_EQ(k, TorchBaselineCache(d.path(), identity()).key("n=4096", "f32"));
  EXPECT_NE(k, a.key("n=8192", "f32"));
  EXPECT_NE(k, a.key("n=4096", "bf16"));
  for (const char* part : {"operation", "torch", "gpu"}) {
    json other = identity();
    other[part] = "something else";
    EXPECT_NE(k, TorchBaselineCache(d.path(), other).key("n=4096", "f32")) << part;
  }
}

TEST(TorchBaselineCache, AKeptEntryComesBackWholeAndATornOneIsNotReused) {
  ScratchDir d("kqual-torch-cache-keep");
  const TorchBaselineCache c(d.path() / "kept", identity());
  const std::string k = c.key("n=4096", "f32");
  EXPECT_FALSE(c.find(k));
  Series s;
  s.label = "torch_eager";
  s.samples_ms = {0.005, 0.0051, 0.0049};
  s.verified = true;
  c.keep(k, json{{"series", {{"eager", kept_series(s)}}}, {"window", {{"eager", "cuda_graph"}}}});
  const auto got = c.find(k);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->value("key", ""), k);
  EXPECT_FALSE(got->value("measured_at", "").empty());
  const Series back = series_from_kept((*got)["series"]["eager"]);
  EXPECT_EQ(back.label, "torch_eager");
  EXPECT_EQ(back.role, "baseline");
  EXPECT_EQ(back.samples_ms, s.samples_ms);
  EXPECT_TRUE(back.verified);
  EXPECT_FALSE(c.find(c.key("n=8192", "f32"))) << "another shape's entry is not this one";
  std::ofstream(d.path() / "kept" / (k + ".json")) << "{\"key\": \"" << k << "\", \"series\": {\"eag";
  EXPECT_FALSE(c.find(k)) << "a torn file is measured again";
  std::ofstream(d.path() / "kept" / (k + ".json")) << "{\"key\": \"another\", \"series\": {}}";
  EXPECT_FALSE(c.find(k)) << "a file holding another key is not reused";
  for (const auto& e : fs::directory_iterator(d.path() / "kept"))
    EXPECT_EQ(e.path().extension(), ".json") << "no temporary file left behind: " << e.path();
}

TEST(TorchBaselineCache, AgreementIsFivePercentOrTwiceTheKeptSpreadWhereThatIsWider) {
  EXPECT_DOUBLE_EQ(TorchBaselineCache::agreement({1.0, 1.0, 1.0, 1.0, 1.0}), 0.05);
  EXPECT_DOUBLE_EQ(TorchBaselineCache::agreement({1.0}), 0.05) << "too few samples to tell their spread";
  // Quartiles 0.95 and 1.05 around a median of 1: twice 0.10.
  EXPECT_NEAR(TorchBaselineCache::agreement({0.90, 0.95, 1.0, 1.05, 1.10}), 0.20, 1e-12);
}

}  // namespace
}  // namespace kqual::bench
