// The driver selection rule on synthetic artifacts (each case states the documented fact it
// checks; docs/artifact.md), plus the fixtures whose load behaviour was observed on an H200.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fixture_util.hpp"
#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"

namespace kqual::artifact {
namespace {

Entry make(EntryKind kind, const std::string& arch, int isa = 0) {
  Entry e;
  e.kind = kind;
  e.arch = Arch::parse(arch);
  e.ptx_isa_major = isa / 10;
  e.ptx_isa_minor = isa % 10;
  return e;
}

Artifact art(std::vector<Entry> es) {
  Artifact a;
  a.name = "synthetic";
  for (std::size_t i = 0; i < es.size(); ++i) es[i].index = i;
  a.entries = std::move(es);
  return a;
}

Selection sel(const Artifact& a, const char* target) { return select_for_arch(a, Arch::parse(target)); }

// The element of `v` whose `key` is `k`; where there is none, a failure and a default element.
template <class T>
T find_by(const std::vector<T>& v, std::string T::*key, const std::string& k) {
  const auto it = std::find_if(v.begin(), v.end(), [&](const T& x) { return x.*key == k; });
  EXPECT_NE(it, v.end()) << k;
  return it == v.end() ? T{} : *it;
}

TEST(Arch, ParseAndPrint) {
  EXPECT_EQ(Arch::parse("sm_90").str(), "sm_90");
  EXPECT_EQ(Arch::parse("sm_90a").str(), "sm_90a");
  EXPECT_EQ(Arch::parse("sm_100f").str(), "sm_100f");
  EXPECT_EQ(Arch::parse("compute_80").str(), "compute_80");
  EXPECT_EQ(Arch::parse("90").str(), "sm_90");
  EXPECT_EQ(Arch::parse("9.0").str(), "sm_90");
  EXPECT_EQ(Arch::parse("sm_120").major, 12);
  for (const char* bad : {"", "sm_", "sm_9", "sm_90b", "sm_90aa", "gfx90a", "sm_1000", "compute_"})
    EXPECT_THROW(Arch::parse(bad), Error) << bad;
}

TEST(Selection, NativeSassPreferredOverPtx) {
  const Artifact a = art({make(EntryKind::ptx, "compute_90", 90), make(EntryKind::sass, "sm_90")});
  const Selection s = sel(a, "sm_90");
  EXPECT_EQ(s.path, LoadPath::native_sass);
  EXPECT_EQ(s.entry, 1u);
}

TEST(Selection, SassRunsOnSameMajorHigherMinorOnly) {
  const Artifact a = art({make(EntryKind::sass, "sm_80")});
  EXPECT_EQ(sel(a, "sm_80").path, LoadPath::native_sass);
  EXPECT_EQ(sel(a, "sm_86").path, LoadPath::native_sass);
  EXPECT_EQ(sel(a, "sm_89").path, LoadPath::native_sass);
  EXPECT_EQ(sel(a, "sm_90").path, LoadPath::incompatible);  // observed: CUDA_ERROR_NO_BINARY_FOR_GPU
  EXPECT_EQ(sel(a, "sm_75").path, LoadPath::incompatible);
  const Artifact b = art({make(EntryKind::sass, "sm_86")});
  EXPECT_EQ(sel(b, "sm_80").path, LoadPath::incompatible);
}

TEST(Selection, BestSassIsHighestMinorNotAbove) {
  const Artifact a = art({make(EntryKind::sass, "sm_80"), make(EntryKind::sass, "sm_86"), make(EntryKind::sass, "sm_89")});
  EXPECT_EQ(sel(a, "sm_87").entry, 1u);
  EXPECT_EQ(sel(a, "sm_89").entry, 2u);
  EXPECT_EQ(sel(a, "sm_80").entry, 0u);
}

TEST(Selection, ArchSpecificSassOnlyOnExactCc) {
  const Artifact a = art({make(EntryKind::sass, "sm_90a")});
  EXPECT_EQ(sel(a, "sm_90").path, LoadPath::native_sass);
  EXPECT_EQ(sel(a, "sm_90a").path, LoadPath::native_sass);  // target suffix ignored: devices have a CC
  const Artifact b = art({make(EntryKind::sass, "sm_100a")});
  EXPECT_EQ(sel(b, "sm_103").path, LoadPath::incompatible);
  const Artifact both = art({make(EntryKind::sass, "sm_90"), make(EntryKind::sass, "sm_90a")});
  EXPECT_EQ(sel(both, "sm_90").entry, 1u);  // the more specific image of the same CC
}

TEST(Selection, FamilySpecificWithinFamily) {
  const Artifact a = art({make(EntryKind::sass, "sm_100f"), make(EntryKind::ptx, "compute_100f", 90)});
  EXPECT_EQ(sel(a, "sm_100").path, LoadPath::native_sass);
  EXPECT_EQ(sel(a, "sm_103").path, LoadPath::native_sass);
  EXPECT_EQ(sel(a, "sm_120").path, LoadPath::incompatible);
  EXPECT_EQ(sel(a, "sm_90").path, LoadPath::incompatible);
  const Artifact p = art({make(EntryKind::ptx, "compute_100f", 90)});
  EXPECT_EQ(sel(p, "sm_103").path, LoadPath::ptx_jit);
  EXPECT_EQ(sel(p, "sm_110").path, LoadPath::incompatible);
}

TEST(Selection, PtxJitForAnyHigherArch) {
  const Artifact a = art({make(EntryKind::ptx, "compute_80", 90), make(EntryKind::ptx, "compute_86", 90)});
  const Selection s = sel(a, "sm_90");
  EXPECT_EQ(s.path, LoadPath::ptx_jit);
  EXPECT_EQ(s.entry, 1u);  // the highest PTX not above the device
  EXPECT_NE(s.reason.find("JIT"), std::string::npos);
  EXPECT_EQ(sel(a, "sm_120").path, LoadPath::ptx_jit);
  EXPECT_EQ(sel(a, "sm_75").path, LoadPath::incompatible);
}

TEST(Selection, ArchSpecificPtxOnlyForExactCc) {
  const Artifact a = art({make(EntryKind::ptx, "compute_90a", 90)});
  EXPECT_EQ(sel(a, "sm_90").path, LoadPath::ptx_jit);  // observed on H200: loads via JIT
  EXPECT_EQ(sel(a, "sm_100").path, LoadPath::incompatible);
}

TEST(Selection, EachContainerIsItsOwnModule) {
  Entry a90 = make(EntryKind::sass, "sm_90"), b80 = make(EntryKind::sass, "sm_80");
  b80.container = 1;
  const Artifact a = art({a90, b80});
  const Selection s = sel(a, "sm_90");
  ASSERT_EQ(s.modules.size(), 2u);
  EXPECT_EQ(s.modules[0].path, LoadPath::native_sass);
  EXPECT_EQ(s.modules[1].path, LoadPath::incompatible);
  EXPECT_EQ(s.path, LoadPath::incompatible);  // the module without sm_90 code fails to load
  EXPECT_EQ(sel(a, "sm_86").path, LoadPath::incompatible);
}

TEST(Selection, NvvmIrIsNeverLoadedByTheDriver) {
  const Artifact a = art({make(EntryKind::nvvm_ir, "compute_90")});
  const Selection s = sel(a, "sm_90");
  EXPECT_EQ(s.path, LoadPath::incompatible);
  EXPECT_FALSE(s.entry.has_value());
  EXPECT_NE(s.reason.find("NO_BINARY_FOR_GPU"), std::string::npos);
}

// Fixtures whose loading was observed on an H200 (driver 580, CUDA 13.0; docs/artifact.md).
TEST(Selection, FixturesOnSm90) {
  using test::fixture;
  EXPECT_EQ(sel(parse_artifact(fixture("sass_sm90.fatbin")), "sm_90").path, LoadPath::native_sass);
  EXPECT_EQ(sel(parse_artifact(fixture("k_sm90a.cubin")), "sm_90").path, LoadPath::native_sass);
  EXPECT_EQ(sel(parse_artifact(fixture("ptx_compute90.fatbin")), "sm_90").path, LoadPath::ptx_jit);
  EXPECT_EQ(sel(parse_artifact(fixture("k_compute90.ptx")), "sm_90").path, LoadPath::ptx_jit);
  EXPECT_EQ(sel(parse_artifact(fixture("sm80_only.fatbin")), "sm_90").path, LoadPath::incompatible);
  const Artifact m = parse_artifact(fixture("sm80_ptx80.fatbin"));
  const Selection s = sel(m, "sm_90");
  ASSERT_EQ(s.path, LoadPath::ptx_jit);
  EXPECT_EQ(m.entries.at(*s.entry).arch.str(), "compute_80");
  EXPECT_EQ(sel(m, "sm_86").path, LoadPath::native_sass);
  const Artifact multi = parse_artifact(fixture("multi.fatbin"));
  const Selection ms = sel(multi, "sm_90");
  ASSERT_EQ(ms.path, LoadPath::native_sass);
  EXPECT_EQ(multi.entries.at(*ms.entry).arch.str(), "sm_90a");
  EXPECT_EQ(multi.entries.at(*sel(multi, "sm_89").entry).arch.str(), "sm_86");
  EXPECT_EQ(sel(multi, "sm_100").path, LoadPath::ptx_jit);
}

TEST(Diff, LosingSassIsAWorseLoadingPath) {
  using test::fixture;
  const Artifact o = parse_artifact(fixture("zstd.fatbin"));       // sm_90 SASS + compute_90 PTX
  const Artifact n = parse_artifact(fixture("ptx_compute90.fatbin"));  // PTX only
  const ArtifactDiff d = diff_artifacts(o, n, Arch::parse("sm_90"));
  EXPECT_EQ(d.old_selection.path, LoadPath::native_sass);
  EXPECT_EQ(d.new_selection.path, LoadPath::ptx_jit);
  EXPECT_TRUE(d.loading_path_worse);
  EXPECT_EQ(d.entries_removed, std::vector<std::string>{"sass sm_90"});
  EXPECT_TRUE(d.entries_added.empty());
  const ArtifactDiff back = diff_artifacts(n, o, Arch::parse("sm_90"));
  EXPECT_FALSE(back.loading_path_worse);
  EXPECT_EQ(back.entries_added, std::vector<std::string>{"sass sm_90"});
}

TEST(Diff, SameCodeDifferentCompressionIsIdentical) {
  using test::fixture;
  const ArtifactDiff d = diff_artifacts(parse_artifact(fixture("lz4.fatbin")), parse_artifact(fixture("sass_sm90.fatbin")),
                                        Arch::parse("sm_90"));
  EXPECT_FALSE(d.loading_path_worse);
  ASSERT_EQ(d.kernels.size(), 5u);
  for (const auto& k : d.kernels) EXPECT_EQ(k.status, "identical") << k.name;
  EXPECT_EQ(d.entries_removed, std::vector<std::string>{"ptx compute_90"});
}

TEST(Diff, MaxrregcountShowsAsChangedKernel) {
  using test::fixture;
  const ArtifactDiff d = diff_artifacts(parse_artifact(fixture("k_sm90.cubin")),
                                        parse_artifact(fixture("k_sm90_r24.cubin")), Arch::parse("sm_90"));
  bool saw_local_arr = false;
  for (const auto& k : d.kernels) {
    if (k.name != "local_arr") continue;
    saw_local_arr = true;
    EXPECT_EQ(k.status, "changed");
    ASSERT_TRUE(k.old_kernel && k.new_kernel);
    EXPECT_GT(k.old_kernel->registers, k.new_kernel->registers);
  }
  EXPECT_TRUE(saw_local_arr);
  EXPECT_FALSE(d.loading_path_worse);
}

// A library's diff per architecture: every arch either side carries, its kernels added/removed/changed/identical
// and bytes; and for common GPUs, which side needs the PTX JIT or has no image.
TEST(Diff, PerArchitectureCountsAndWhichGpusNeedTheJit) {
  using test::fixture;
  const Artifact o = parse_artifact(fixture("zstd.fatbin"));           // sm_90 SASS + compute_90 PTX
  const Artifact n = parse_artifact(fixture("ptx_compute90.fatbin"));  // PTX only
  const ArtifactDiff d = diff_artifacts(o, n, Arch::parse("sm_90"));
  const auto arch = [&](const std::string& a) { return find_by(d.per_arch, &ArchDiff::arch, a); };
  const ArchDiff sass = arch("sm_90");
  EXPECT_EQ(sass.old_entries, 1u);
  EXPECT_EQ(sass.new_entries, 0u);
  EXPECT_GT(sass.removed, 0u);
  EXPECT_EQ(sass.added + sass.changed + sass.identical, 0u);
  EXPECT_GT(sass.old_bytes, 0u);
  EXPECT_EQ(sass.new_bytes, 0u);
  EXPECT_EQ(d.per_arch.front().arch, "sm_90") << "SASS first";
  const auto gpu = [&](const std::string& g) { return find_by(d.loading, &GpuLoading::gpu, g); };
  const GpuLoading h100 = gpu("sm_90");
  EXPECT_EQ(h100.old_sass, 1u);
  EXPECT_EQ(h100.new_jit, 1u);
  const GpuLoading a100 = gpu("sm_80");  // compute_90 PTX cannot be JIT-compiled for an older GPU
  EXPECT_EQ(a100.old_none, 1u);
  EXPECT_EQ(a100.new_none, 1u);
  EXPECT_EQ(gpu("sm_120").new_jit, 1u);
  // The same file on both sides: every kernel identical in every arch.
  for (const auto& a : diff_artifacts(o, o, Arch::parse("sm_90")).per_arch) EXPECT_EQ(a.added + a.removed + a.changed, 0u) << a.arch;
}

}  // namespace
}  // namespace kqual::artifact
