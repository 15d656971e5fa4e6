// parse_artifact_pair (inspect --diff): NEW's entries stored as in OLD are taken from OLD's parse, and the
// result is what two parse_artifact calls give, field for field; a changed byte is never taken for the same.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../../src/artifact/reuse.hpp"
#include "fixture_util.hpp"
#include "kqual/artifact/artifact.hpp"
#include "test_util.hpp"

namespace kqual::artifact {
namespace {
namespace fs = std::filesystem;

// A library of ~100 entries made of the fixtures' fatbins, in the given order.
std::vector<std::uint8_t> library(const std::vector<std::string>& files) {
  std::vector<std::uint8_t> lib;
  while (lib.size() < 64 * 1024)
    for (const auto& f : files) {
      const auto b = test::read_bytes(test::fixture(f));
      lib.insert(lib.end(), b.begin(), b.end());
    }
  return lib;
}

// Writes `b` as `name` in the scratch folder; its path.
std::string write(const kqual::test::TempDir& d, const std::string& name, const std::vector<std::uint8_t>& b) {
  std::ofstream(d.path / name, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  return (d.path / name).string();
}

const std::vector<std::string> kOld = {"zstd.fatbin", "lz4.fatbin", "multi.fatbin", "ptx_compute90.fatbin", "sass_sm90.fatbin",
                                       "sm80_ptx80.fatbin"};
// An "upgrade": one module gone, the rest reordered, one repeated.
const std::vector<std::string> kNew = {"multi.fatbin", "zstd.fatbin", "sm80_ptx80.fatbin", "sass_sm90.fatbin",
                                       "ptx_compute90.fatbin", "multi.fatbin"};

TEST(ArtifactPair, EqualsTwoParsesFieldForField) {
  const kqual::test::TempDir d;
  const std::string o = write(d, "old.fatbin", library(kOld)), n = write(d, "new.fatbin", library(kNew));
  const auto [po, pn] = parse_artifact_pair(o, n);
  EXPECT_EQ(to_json(po), to_json(parse_artifact(o)));
  EXPECT_EQ(to_json(pn), to_json(parse_artifact(n)));
  const Arch sm90 = Arch::parse("sm_90");
  EXPECT_EQ(to_json(diff_artifacts(po, pn, sm90)), to_json(diff_artifacts(parse_artifact(o), parse_artifact(n), sm90)));
  // Two copies of one build: every entry of NEW is OLD's, at NEW's own places.
  const std::string copy = write(d, "copy.fatbin", library(kOld));
  const auto [co, cn] = parse_artifact_pair(o, copy);
  EXPECT_EQ(to_json(cn), to_json(parse_artifact(copy)));
  EXPECT_EQ(cn.name, copy);
}

TEST(ArtifactPair, WithoutTheHashesTheDiffInWordsNeedsTheKernelsAreStillCompared) {
  const kqual::test::TempDir d;
  const std::string o = write(d, "old.fatbin", library(kOld)), n = write(d, "new.fatbin", library(kNew));
  const auto [po, pn] = parse_artifact_pair(o, n, {.file_hash = false, .sass_image_hashes = false});
  const Artifact full = parse_artifact(n);
  EXPECT_EQ(pn.sha256, "");
  ASSERT_EQ(pn.entries.size(), full.entries.size());
  for (std::size_t i = 0; i < full.entries.size(); ++i) {
    const Entry &got = pn.entries[i], &want = full.entries[i];
    EXPECT_EQ(got.sha256, got.kind == EntryKind::sass ? "" : want.sha256) << i;  // PTX images are compared by theirs
    ASSERT_EQ(got.kernels.size(), want.kernels.size()) << i;
    for (std::size_t k = 0; k < got.kernels.size(); ++k) EXPECT_EQ(got.kernels[k].code_sha256, want.kernels[k].code_sha256);
    EXPECT_EQ(got.ptx_entries, want.ptx_entries) << i;
  }
  const Arch sm90 = Arch::parse("sm_90");
  const ArtifactDiff quick = diff_artifacts(po, pn, sm90), slow = diff_artifacts(parse_artifact(o), full, sm90);
  ASSERT_EQ(quick.kernels.size(), slow.kernels.size());
  for (std::size_t i = 0; i < quick.kernels.size(); ++i) EXPECT_EQ(quick.kernels[i].status, slow.kernels[i].status) << i;
  EXPECT_EQ(to_json(quick)["per_arch"], to_json(slow)["per_arch"]);
}

// A diff's JSON without the kernels' code hashes (those of twins may be left out; statuses and counts may not).
json without_code_hashes(json j) {
  if (j.is_object()) {
    j.erase("code_sha256");
    for (auto& [k, v] : j.items()) v = without_code_hashes(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = without_code_hashes(v);
  }
  return j;
}

// inspect --diff in words parses without the code hashes of entries stored byte for byte in both files (twins),
// hashing after all those a comparison needs: its diff equals the one made with every hash, on every target,
// for a copy, an "upgrade", modules moved so that a twin meets an entry of other bytes, and code that changed.
TEST(ArtifactPair, TwinsLeftUnhashedGiveTheDiffOfEveryHash) {
  const kqual::test::TempDir d;
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> pairs = {
      {kOld, kOld},
      {kOld, kNew},
      {{"multi.fatbin", "sass_sm90.fatbin"}, {"sass_sm90.fatbin", "multi.fatbin"}},
      {{"multi.fatbin", "sass_sm90.fatbin"}, {"sass_sm90_r24.fatbin", "multi.fatbin"}},
      {{"sass_sm90.fatbin", "zstd.fatbin"}, {"sass_sm90_r24.fatbin", "zstd.fatbin"}},
      {{"sm80_ptx80.fatbin", "ptx_compute90.fatbin"}, {"ptx_compute90_nc.fatbin", "sm80_ptx80.fatbin"}}};
  const ParseOptions quick{.file_hash = false, .sass_image_hashes = false, .twin_code_hashes = false};
  int p = 0;
  for (const auto& [old_files, new_files] : pairs) {
    const std::string o = write(d, fmt::format("old{}.fatbin", p), library(old_files));
    const std::string n = write(d, fmt::format("new{}.fatbin", p), library(new_files));
    ++p;
    const Artifact full_o = parse_artifact(o), full_n = parse_artifact(n);
    for (const char* target : {"sm_80", "sm_86", "sm_90", "sm_100"}) {
      SCOPED_TRACE(fmt::format("pair {}, {}", p - 1, target));
      const Arch arch = Arch::parse(target);
      const ArtifactPairDiff got = diff_artifact_files(o, n, arch, quick);
      EXPECT_EQ(without_code_hashes(to_json(got.diff)), without_code_hashes(to_json(diff_artifacts(full_o, full_n, arch))));
    }
  }
  // The statuses above are not all one: code changed with the register cap, and stayed with the move.
  const std::string o = write(d, "moved_old.fatbin", library({"multi.fatbin", "sass_sm90.fatbin"}));
  const std::string r24 = write(d, "r24.fatbin", library({"sass_sm90_r24.fatbin", "multi.fatbin"}));
  const ArtifactDiff changed = diff_artifact_files(o, r24, Arch::parse("sm_90"), quick).diff;
  EXPECT_TRUE(std::any_of(changed.kernels.begin(), changed.kernels.end(), [](const KernelChange& c) { return c.status == "changed"; }));
  // Two copies: nothing needs a hash, and no kernel's code was hashed.
  const std::string copy = write(d, "copy.fatbin", library(kOld)), copy2 = write(d, "copy2.fatbin", library(kOld));
  const ArtifactPairDiff same = diff_artifact_files(copy, copy2, Arch::parse("sm_90"), quick);
  for (const auto& c : same.diff.kernels) EXPECT_EQ(c.status, "identical") << c.name;
  for (const Artifact* a : {&same.old_art, &same.new_art})
    for (const Entry& e : a->entries) {
      EXPECT_NE(e.twin, 0u) << e.index;
      for (const auto& k : e.kernels) EXPECT_EQ(k.code_sha256, "") << e.index << " " << k.name;
    }
  // Moved modules: the per-architecture counts compare each side's last sm_90 kernels, OLD's in sass_sm90's twin
  // entries and NEW's in multi's (other bytes): those twins were hashed after all, and only those.
  const std::string moved = write(d, "moved_new.fatbin", library({"sass_sm90.fatbin", "multi.fatbin"}));
  const ArtifactPairDiff m = diff_artifact_files(o, moved, Arch::parse("sm_90"), quick);
  std::size_t hashed = 0, unhashed = 0;
  for (const Artifact* a : {&m.old_art, &m.new_art})
    for (const Entry& e : a->entries)
      if (e.kind == EntryKind::sass && !e.kernels.empty()) {
        EXPECT_NE(e.twin, 0u) << e.index;
        ++(e.kernels[0].code_sha256.empty() ? unhashed : hashed);
      }
  EXPECT_GT(hashed, 0u);
  EXPECT_GT(unhashed, 0u);
}

// The index finds an entry only when every byte of its header and stored payload is equal.
TEST(ArtifactPair, OneChangedByteIsAnotherEntry) {
  const std::vector<std::uint8_t> lib = library(kOld);
  const Artifact a = parse_artifact_bytes(lib, "old");
  const detail::EntryReuse index(a, lib);
  ASSERT_EQ(index.size(), a.entries.size());
  for (const auto& e : a.entries) {
    std::uint32_t ehs;
    std::uint64_t size;
    std::memcpy(&ehs, lib.data() + e.offset + 4, 4);
    std::memcpy(&size, lib.data() + e.offset + 8, 8);
    std::vector<std::uint8_t> raw(lib.begin() + std::ptrdiff_t(e.offset), lib.begin() + std::ptrdiff_t(e.offset + ehs + size));
    const Entry* same = index.find(raw);
    ASSERT_NE(same, nullptr) << e.index;
    EXPECT_EQ(same->sha256, e.sha256);
    for (std::size_t at : {std::size_t(0), std::size_t(ehs) + std::size_t(size) / 2, raw.size() - 1}) {
      raw[at] ^= 0x01;
      EXPECT_EQ(index.find(raw), nullptr) << "entry " << e.index << ", byte " << at;
      raw[at] ^= 0x01;
    }
  }
}

}  // namespace
}  // namespace kqual::artifact
