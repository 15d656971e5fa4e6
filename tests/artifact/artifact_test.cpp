// Parsed facts of the nvcc-built fixtures, checked against independent evidence: `nvcc -Xptxas -v`
// (registers, shared, stack), -maxrregcount, `nvcc --version`, the kernel source (launch bounds,
// parameter sizes) and the equality of images compressed in different ways.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fixture_util.hpp"
#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"

namespace kqual::artifact {
namespace {

using test::fixture;

const std::set<std::string> kKernels = {"add_relu", "smem_sum", "local_arr", "dyn_only", "_Z9templatedILi3EEvPf"};

const KernelInfo& kernel(const Entry& e, const std::string& name) {
  for (const auto& k : e.kernels)
    if (k.name == name) return k;
  throw std::runtime_error("kernel " + name + " not in entry " + e.arch.str());
}

std::set<std::string> kernel_names(const Entry& e) {
  std::set<std::string> s;
  for (const auto& k : e.kernels) s.insert(k.name);
  return s;
}

// Every kernel of a SASS entry matches what ptxas printed for it on that arch.
void expect_matches_ptxas(const Entry& e, const std::string& log) {
  const auto oracle = test::parse_ptxas_log(fixture(log));
  ASSERT_EQ(e.kind, EntryKind::sass);
  int checked = 0;
  for (const auto& k : e.kernels) {
    auto it = oracle.find({e.arch.str(), k.name});
    ASSERT_NE(it, oracle.end()) << log << " has no ptxas line for " << k.name << " on " << e.arch.str();
    EXPECT_EQ(k.registers, it->second.registers) << k.name << " " << e.arch.str();
    EXPECT_EQ(static_cast<long>(k.static_shared_bytes), it->second.smem) << k.name << " " << e.arch.str();
    EXPECT_EQ(static_cast<long>(k.local_bytes), it->second.stack) << k.name << " " << e.arch.str();
    ++checked;
  }
  EXPECT_EQ(checked, 5) << e.arch.str();
}

// The one entry of fixture `name`: a `container` holding a single entry of `kind` (at() ends the test
// where there is none).
Entry sole_entry(const std::string& name, ContainerKind container, EntryKind kind) {
  const Artifact a = parse_artifact(fixture(name));
  EXPECT_EQ(a.container, container) << name;
  EXPECT_EQ(a.entries.size(), 1u) << name;
  Entry e = a.entries.at(0);
  EXPECT_EQ(e.kind, kind) << name;
  return e;
}

TEST(ArtifactCubin, KernelsMatchPtxasOracle) {
  const Entry e = sole_entry("k_sm90.cubin", ContainerKind::cubin, EntryKind::sass);
  EXPECT_EQ(e.arch.str(), "sm_90");
  EXPECT_EQ(kernel_names(e), kKernels);
  expect_matches_ptxas(e, "k_sm90.ptxas.log");
  // Values the source fixes (not just consistency with ptxas):
  EXPECT_EQ(kernel(e, "smem_sum").static_shared_bytes, 128u * 4 + 16 * 8);  // float[128] + double[16]
  EXPECT_EQ(kernel(e, "local_arr").local_bytes, 64u * 4);                  // float a[64] on the stack
  EXPECT_EQ(kernel(e, "dyn_only").static_shared_bytes, 0u);                // extern __shared__ only
  EXPECT_GT(kernel(e, "dyn_only").shared_section_bytes, 0u);               // sm_90 reserved prefix kept raw
}

TEST(ArtifactCubin, LaunchBoundsParamsAndCode) {
  const Entry e = parse_artifact(fixture("k_sm90.cubin")).entries.at(0);
  EXPECT_EQ(kernel(e, "smem_sum").max_threads, 128);  // __launch_bounds__(128)
  EXPECT_EQ(kernel(e, "add_relu").max_threads, 0);    // no bound in the binary
  EXPECT_EQ(kernel(e, "add_relu").param_bytes, 8 + 8 + 8 + 4);
  EXPECT_EQ(kernel(e, "smem_sum").param_bytes, 8 + 8 + 4);
  EXPECT_EQ(kernel(e, "local_arr").param_bytes, 8 + 8);
  for (const auto& k : e.kernels) {
    EXPECT_GT(k.code_bytes, 0u) << k.name;
    EXPECT_EQ(k.code_sha256.size(), 64u) << k.name;
  }
  EXPECT_NE(kernel(e, "add_relu").code_sha256, kernel(e, "smem_sum").code_sha256);
}

TEST(ArtifactCubin, CompilerIdentityMatchesNvccVersion) {
  const Entry e = parse_artifact(fixture("k_sm90.cubin")).entries.at(0);
  ASSERT_TRUE(e.compiler.has_value());
  EXPECT_EQ(e.compiler->tool, "ptxas");
  ASSERT_FALSE(e.compiler->version.empty());
  EXPECT_NE(test::read_text(fixture("nvcc.version")).find(e.compiler->version), std::string::npos)
      << "ptxas identity '" << e.compiler->version << "' is not the installed nvcc's";
  EXPECT_NE(e.compiler->options.find("-arch sm_90"), std::string::npos) << e.compiler->options;
  EXPECT_GE(e.compiler->cuda_api_version, 120);
}

TEST(ArtifactCubin, MaxrregcountLowersRegisters) {
  const Entry base = parse_artifact(fixture("k_sm90.cubin")).entries.at(0);
  const Entry capped = parse_artifact(fixture("k_sm90_r24.cubin")).entries.at(0);
  expect_matches_ptxas(capped, "k_sm90_r24.ptxas.log");
  for (const auto& k : capped.kernels) EXPECT_LE(k.registers, 24) << k.name;
  ASSERT_GT(kernel(base, "local_arr").registers, 24) << "fixture no longer exercises the cap";
  EXPECT_EQ(kernel(capped, "local_arr").registers, 24);
  EXPECT_NE(capped.compiler->options.find("maxrregcount"), std::string::npos) << capped.compiler->options;
}

TEST(ArtifactCubin, ArchSpecificSuffix) {
  const Entry e = parse_artifact(fixture("k_sm90a.cubin")).entries.at(0);
  EXPECT_EQ(e.arch.str(), "sm_90a");
}

TEST(ArtifactPtx, TextFile) {
  const Entry e = sole_entry("k_compute90.ptx", ContainerKind::ptx, EntryKind::ptx);
  EXPECT_EQ(e.arch.str(), "compute_90");
  EXPECT_EQ(std::set<std::string>(e.ptx_entries.begin(), e.ptx_entries.end()), kKernels);
  // The .version line, read independently of the parser.
  const std::string text = test::read_text(fixture("k_compute90.ptx"));
  const std::string want = ".version " + std::to_string(e.ptx_isa_major) + "." + std::to_string(e.ptx_isa_minor);
  EXPECT_NE(text.find(want + "\n"), std::string::npos) << want;
}

TEST(ArtifactFatbin, SassOnlyUncompressedEqualsCubin) {
  const Entry e = sole_entry("sass_sm90.fatbin", ContainerKind::fatbin, EntryKind::sass);
  EXPECT_EQ(e.compression, Compression::none);
  EXPECT_EQ(e.arch.str(), "sm_90");
  expect_matches_ptxas(e, "k_sm90.ptxas.log");
  const Entry c = parse_artifact(fixture("k_sm90.cubin")).entries.at(0);
  for (const auto& k : c.kernels) EXPECT_EQ(kernel(e, k.name).code_sha256, k.code_sha256) << k.name;
}

TEST(ArtifactFatbin, PtxOnlyZstdAndUncompressedAgree) {
  const Artifact z = parse_artifact(fixture("ptx_compute90.fatbin"));
  const Artifact n = parse_artifact(fixture("ptx_compute90_nc.fatbin"));
  ASSERT_EQ(z.entries.size(), 1u);
  ASSERT_EQ(n.entries.size(), 1u);
  EXPECT_EQ(z.entries[0].kind, EntryKind::ptx);
  EXPECT_EQ(z.entries[0].compression, Compression::zstd);
  EXPECT_EQ(n.entries[0].compression, Compression::none);
  EXPECT_LT(z.entries[0].stored_bytes, z.entries[0].image_bytes);
  EXPECT_EQ(z.entries[0].sha256, n.entries[0].sha256);  // same PTX after decompression
  EXPECT_EQ(z.entries[0].arch.str(), "compute_90");
  EXPECT_EQ(std::set<std::string>(z.entries[0].ptx_entries.begin(), z.entries[0].ptx_entries.end()), kKernels);
  // The PTX inside the fatbin is the text nvcc -ptx writes (up to NUL padding).
  const Entry p = parse_artifact(fixture("k_compute90.ptx")).entries.at(0);
  EXPECT_EQ(p.ptx_isa_major, z.entries[0].ptx_isa_major);
  EXPECT_EQ(p.ptx_isa_minor, z.entries[0].ptx_isa_minor);
}

TEST(ArtifactFatbin, Lz4AndZstdDecompressToTheSameImages) {
  const Artifact l = parse_artifact(fixture("lz4.fatbin"));
  const Artifact z = parse_artifact(fixture("zstd.fatbin"));
  const Artifact plain_ptx = parse_artifact(fixture("ptx_compute90_nc.fatbin"));
  ASSERT_EQ(l.entries.size(), 2u);
  ASSERT_EQ(z.entries.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(l.entries[i].compression, Compression::lz4) << i;
    EXPECT_EQ(z.entries[i].compression, Compression::zstd) << i;
    EXPECT_EQ(l.entries[i].kind, z.entries[i].kind);
    EXPECT_EQ(l.entries[i].sha256, z.entries[i].sha256) << "entry " << i;
    EXPECT_EQ(l.entries[i].image_bytes, z.entries[i].image_bytes);
  }
  for (const auto& e : l.entries) {
    if (e.kind == EntryKind::sass) expect_matches_ptxas(e, "k_sm90.ptxas.log");
    if (e.kind == EntryKind::ptx) {
      EXPECT_EQ(e.sha256, plain_ptx.entries[0].sha256);
    }
  }
}

TEST(ArtifactFatbin, SeveralArchsEachMatchPtxas) {
  const Artifact a = parse_artifact(fixture("multi.fatbin"));
  std::multiset<std::string> keys;
  for (const auto& e : a.entries) keys.insert(std::string(to_string(e.kind)) + " " + e.arch.str());
  EXPECT_EQ(keys, (std::multiset<std::string>{"sass sm_80", "sass sm_86", "sass sm_90", "sass sm_90a", "ptx compute_90"}));
  for (const auto& e : a.entries)
    if (e.kind == EntryKind::sass) expect_matches_ptxas(e, "multi.ptxas.log");
  for (std::size_t i = 0; i < a.entries.size(); ++i) EXPECT_EQ(a.entries[i].index, i);
}

TEST(ArtifactFatbin, Sm80SassPlusPtx) {
  const Artifact a = parse_artifact(fixture("sm80_ptx80.fatbin"));
  ASSERT_EQ(a.entries.size(), 2u);
  int sass = 0, ptx = 0;
  for (const auto& e : a.entries) {
    if (e.kind == EntryKind::sass) { ++sass; EXPECT_EQ(e.arch.str(), "sm_80"); expect_matches_ptxas(e, "sm80_ptx80.ptxas.log"); }
    if (e.kind == EntryKind::ptx) { ++ptx; EXPECT_EQ(e.arch.str(), "compute_80"); }
  }
  EXPECT_EQ(sass, 1);
  EXPECT_EQ(ptx, 1);
}

TEST(ArtifactFatbin, StoredJitOptions) {
  const Artifact a = parse_artifact(fixture("ptx_opts.fatbin"));
  ASSERT_EQ(a.entries.size(), 1u);
  EXPECT_EQ(a.entries[0].jit_options, "-O2");
  EXPECT_EQ(parse_artifact(fixture("ptx_compute90_nc.fatbin")).entries.at(0).jit_options, "");
}

TEST(ArtifactFatbin, FamilyAndArchSpecificEntries) {
  const Artifact a = parse_artifact(fixture("family.fatbin"));
  std::multiset<std::string> keys;
  for (const auto& e : a.entries) keys.insert(std::string(to_string(e.kind)) + " " + e.arch.str());
  EXPECT_EQ(keys, (std::multiset<std::string>{"sass sm_100f", "ptx compute_100f", "sass sm_120a"}));
}

TEST(ArtifactHostBinary, ExecutableWithEmbeddedFatbin) {
  const Artifact a = parse_artifact(fixture("host_exe"));
  EXPECT_EQ(a.container, ContainerKind::host_binary);
  std::multiset<std::string> keys;
  for (const auto& e : a.entries) keys.insert(std::string(to_string(e.kind)) + " " + e.arch.str());
  // Two containers: one linked in with the static CUDA runtime (an sm_90 cubin without kernels)
  // and the program's own (sm_90 SASS + compute_90 PTX). Each is its own driver module.
  EXPECT_EQ(keys, (std::multiset<std::string>{"sass sm_90", "sass sm_90", "ptx compute_90"}));
  std::set<std::size_t> containers;
  int with_kernel = 0;
  for (const auto& e : a.entries) {
    containers.insert(e.container);
    EXPECT_GT(e.offset, 0u);  // inside the executable, not at its start
    if (e.kind == EntryKind::sass && !e.kernels.empty()) {
      ++with_kernel;
      ASSERT_EQ(e.kernels.size(), 1u);
      EXPECT_EQ(e.kernels[0].name, "host_scale");
      EXPECT_EQ(e.kernels[0].param_bytes, 8 + 4 + 4);
      EXPECT_GT(e.kernels[0].registers, 0);
    } else if (e.kind == EntryKind::ptx) {
      EXPECT_EQ(e.ptx_entries, std::vector<std::string>{"host_scale"});
    }
  }
  EXPECT_EQ(with_kernel, 1);
  EXPECT_EQ(containers.size(), 2u);
  const Selection s = select_for_arch(a, Arch::parse("sm_90"));
  EXPECT_EQ(s.path, LoadPath::native_sass);
  EXPECT_EQ(s.modules.size(), 2u);
  EXPECT_EQ(select_for_arch(a, Arch::parse("sm_80")).path, LoadPath::incompatible);
}

TEST(ArtifactHostBinary, SharedLibrary) {
  const Artifact a = parse_artifact(fixture("libkernels.so"));
  EXPECT_EQ(a.container, ContainerKind::host_binary);
  int found = 0;
  for (const auto& e : a.entries) {
    if (e.kind != EntryKind::sass || e.kernels.empty()) continue;
    ++found;
    EXPECT_EQ(kernel_names(e), kKernels);
    expect_matches_ptxas(e, "k_sm90.ptxas.log");
  }
  EXPECT_EQ(found, 1);
}

TEST(ArtifactErrors, NameTheFileAndTheProblem) {
  auto expect_input_error = [](const std::vector<std::uint8_t>& bytes, const std::string& needle) {
    try {
      parse_artifact_bytes(bytes, "bad.bin");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("bad.bin", 0), 0u) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  expect_input_error({}, "empty");
  expect_input_error({'h', 'e', 'l', 'l', 'o'}, "unrecognised format");
  // A host ELF without device code (not the test binary: kqual links CUB, which brings a fatbin).
  expect_input_error(test::read_bytes("/bin/ls"), "no .nv_fatbin");
  // A fatbin whose entry claims a kind-2 (SASS) image that is not ELF.
  auto fb = test::read_bytes(fixture("sass_sm90.fatbin"));
  ASSERT_GT(fb.size(), 0x60u);
  fb[16 + 64] = 'X';  // first byte of the first entry's payload: ELF magic broken
  expect_input_error(fb, "entry 0");
  EXPECT_THROW(parse_artifact("/nonexistent/kqual.fatbin"), Error);
}

}  // namespace
}  // namespace kqual::artifact

namespace kqual::artifact {
namespace {

// EIATTR_KPARAM_INFO, against the kernels' source signatures (tests/artifact/fixtures/kernels.cu)
// and the parameter block size the cubin records separately (CBANK_PARAM_SIZE).
TEST(ArtifactCubin, ParameterSizesAndOffsets) {
  const Entry e = parse_artifact(fixture("k_sm90.cubin")).entries.at(0);
  auto sizes = [&](const std::string& k) {
    std::vector<std::uint32_t> v;
    for (const auto& p : kernel(e, k).params) v.push_back(p.size);
    return v;
  };
  EXPECT_EQ(sizes("add_relu"), (std::vector<std::uint32_t>{8, 8, 8, 4}));
  EXPECT_EQ(sizes("smem_sum"), (std::vector<std::uint32_t>{8, 8, 4}));
  EXPECT_EQ(sizes("local_arr"), (std::vector<std::uint32_t>{8, 8}));
  for (const auto& k : e.kernels) {
    ASSERT_FALSE(k.params.empty()) << k.name;
    for (std::size_t i = 0; i < k.params.size(); ++i) EXPECT_EQ(k.params[i].ordinal, static_cast<int>(i)) << k.name;
    EXPECT_EQ(static_cast<int>(k.params.back().offset + k.params.back().size), k.param_bytes) << k.name;
  }
}

// A library-sized parse (>= 64 entries: the threaded path, each thread decoding into one reused
// buffer across images of different sizes and compressions) gives each entry exactly what parsing
// its fixture alone gives.
TEST(ArtifactFatbin, ManyEntriesParseAsEachAlone) {
  const std::vector<std::string> files = {"zstd.fatbin", "lz4.fatbin", "multi.fatbin", "ptx_compute90.fatbin",
                                          "sass_sm90.fatbin", "sm80_ptx80.fatbin"};
  std::vector<std::uint8_t> lib;
  std::vector<Entry> expected;
  while (expected.size() < 100) {
    for (const auto& f : files) {
      const auto b = test::read_bytes(fixture(f));
      lib.insert(lib.end(), b.begin(), b.end());
      for (const auto& e : parse_artifact(fixture(f)).entries) expected.push_back(e);
    }
  }
  const Artifact a = parse_artifact_bytes(lib, "library");
  ASSERT_EQ(a.entries.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Entry &got = a.entries[i], &want = expected[i];
    EXPECT_EQ(got.sha256, want.sha256) << i;
    EXPECT_EQ(got.image_bytes, want.image_bytes) << i;
    EXPECT_EQ(got.compression, want.compression) << i;
    EXPECT_EQ(got.ptx_entries, want.ptx_entries) << i;
    ASSERT_EQ(got.kernels.size(), want.kernels.size()) << i;
    for (std::size_t k = 0; k < got.kernels.size(); ++k) {
      EXPECT_EQ(got.kernels[k].code_sha256, want.kernels[k].code_sha256) << i;
      EXPECT_EQ(got.kernels[k].registers, want.kernels[k].registers) << i;
    }
  }
}

}  // namespace
}  // namespace kqual::artifact

#include <random>

#include "../../src/artifact/hash_lanes.hpp"
#include "kqual/core/sha256.hpp"

namespace kqual::artifact {
namespace {

// The two-lane hasher (every SASS image and kernel code hash) equals the one-message SHA-256 for
// every length around the block and padding boundaries, for messages of unequal lengths (lanes
// refilled at different times), checked against the SHA-NI and the portable one-message code.
TEST(HashLanes, EqualsSha256OfEachMessage) {
  std::mt19937_64 rng(42);
  std::vector<std::uint8_t> data(1 << 20);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  std::vector<std::span<const std::uint8_t>> msgs;
  for (std::size_t n = 0; n <= 200; ++n) msgs.emplace_back(data.data() + n, n);
  for (int i = 0; i < 50; ++i) {
    const std::size_t off = rng() % 1000, n = rng() % (data.size() - 1000);
    msgs.emplace_back(data.data() + off, n);
  }
  for (bool portable : {false, true}) {
    kqual::detail::sha256_force_portable(portable);
    const auto got = detail::sha256_hex_all(msgs);
    ASSERT_EQ(got.size(), msgs.size());
    for (std::size_t i = 0; i < msgs.size(); ++i)
      EXPECT_EQ(got[i], sha256_hex(msgs[i].data(), msgs[i].size())) << "message " << i << " of " << msgs[i].size() << " bytes";
  }
  kqual::detail::sha256_force_portable(false);
  EXPECT_TRUE(detail::sha256_hex_all({}).empty());
  EXPECT_EQ(detail::sha256_hex_all({std::span<const std::uint8_t>()}).at(0),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace kqual::artifact

namespace kqual::artifact {
namespace {

// The PTX scan (16 bytes at a time where SSE2 is there): every .entry found wherever it falls in a
// block, '.' inside instruction names skipped, and a control byte reported at its own offset.
TEST(ArtifactPtx, DirectivesAndBadBytesAtEveryOffset) {
  for (std::size_t pad = 0; pad < 40; ++pad) {
    std::string text = ".version 8.0\n.target sm_90\n" + std::string(pad, ' ') + "ld.global.f32 %f1;\n";
    text += ".visible .entry k" + std::to_string(pad) + "(\n) { ret; }\n\t.entry\tsecond_k(){}\n";
    const std::vector<std::uint8_t> b(text.begin(), text.end());
    const Artifact a = parse_artifact_bytes(b, "t.ptx");
    EXPECT_EQ(a.entries.at(0).ptx_entries, (std::vector<std::string>{"k" + std::to_string(pad), "second_k"})) << pad;
    std::vector<std::uint8_t> bad = b;
    bad.at(27 + pad) = 0x01;
    try {
      parse_artifact_bytes(bad, "t.ptx");
      ADD_FAILURE() << "accepted a control byte at " << 27 + pad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("PTX: byte " + std::to_string(27 + pad) + " is 0x01"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace kqual::artifact
