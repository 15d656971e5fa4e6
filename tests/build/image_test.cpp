// Candidates from prebuilt images (manifest `image`: cubin, fatbin, PTX, shared library) and
// candidates compiled by nvcc (compiler = "nvcc"). CPU only: the images are built here with nvcc
// and NVRTC, and build_candidate only parses them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "kqual/artifact/artifact.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/build/toolchain.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "test_util.hpp"

namespace kqual::build {
namespace {
namespace fs = std::filesystem;

// A template kernel (instantiated explicitly: nvcc has no name expressions) and an extern "C" one.
constexpr const char* kSource = R"(
template <typename T>
__global__ void add_relu(const T* x, const T* r, T* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { T v = x[i] + r[i]; y[i] = v > T(0) ? v : (v != v ? v : T(0)); }
}
template __global__ void add_relu<float>(const float*, const float*, float*, long long);
extern "C" __global__ void add_relu_c(const float* x, const float* r, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i] + r[i]; y[i] = v > 0.0f ? v : (v != v ? v : 0.0f); }
}
)";

std::string manifest_text(const std::string& candidate_keys, const std::string& kernel = "add_relu<{T}>") {
  return "[candidate]\ncontract = \"residual_add_relu\"\n" + candidate_keys +
         "\n[supports]\ndtypes = [\"f32\"]\n[[launch]]\nkernel = \"" + kernel +
         "\"\ngrid = \"cdiv(n, 256)\"\nblock = 256\nargs = [\"x\", \"r\", \"y\", \"n:i64\"]\n";
}

class ImageCandidate : public ::testing::Test {
 protected:
  ScratchDir dir{"kqual-image-test"};
  ScratchDir out{"kqual-image-out"};

  void SetUp() override { write_file_atomic(dir.path() / "k.cu", kSource); }

  // nvcc ARGS in the test folder; the image it writes must exist.
  fs::path nvcc(const std::string& args, const std::string& output) {
    fs::path tool = resolve_tool("nvcc", "default", nullptr);
    auto r = test::run("cd " + test::quote(dir.path()) + " && " + test::quote(tool) + " " + args + " -o " + output + " k.cu");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(dir.path() / output)) << r.output;
    return dir.path() / output;
  }

  Manifest manifest(const std::string& candidate_keys, const std::string& kernel = "add_relu<{T}>") {
    write_file_atomic(dir.path() / "kqual.toml", manifest_text(candidate_keys, kernel));
    return load_manifest(dir.path());
  }

  // build_candidate must fail with Error(input) whose message holds every one of `words`.
  void expect_input_error(const Manifest& m, const std::string& arch, std::initializer_list<const char*> words) {
    try {
      build_candidate(m, arch, out.path());
      FAIL() << "built";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
      for (const char* w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " in: " << e.what();
    }
  }

  BuiltCandidate built_image(const std::string& args, const std::string& file);
};

// The lowered names point at symbols the loaded image holds; the hash is of the loaded bytes.
void expect_consistent(const BuiltCandidate& b) {
  ASSERT_TRUE(fs::exists(b.image_path));
  const std::string bytes = read_text_file(b.image_path);
  EXPECT_EQ(b.image_sha256, sha256_hex(bytes));
  EXPECT_EQ(b.image_bytes, bytes.size());
  const auto symbols = artifact::kernel_symbols(artifact::parse_artifact(b.image_path.string()));
  ASSERT_FALSE(b.lowered.empty());
  for (const auto& [name, symbol] : b.lowered)
    EXPECT_NE(std::find(symbols.begin(), symbols.end(), symbol), symbols.end()) << name << " → " << symbol;
}

// The image nvcc writes with `args` as `file`, named by a manifest and built for sm_90: its build,
// checked consistent.
BuiltCandidate ImageCandidate::built_image(const std::string& args, const std::string& file) {
  nvcc(args, file);
  BuiltCandidate b = build_candidate(manifest("image = \"" + file + "\""), "sm_90", out.path());
  expect_consistent(b);
  return b;
}

TEST_F(ImageCandidate, CubinIsAdoptedWithItsHashAndKernelSymbols) {
  fs::path cubin = nvcc("-cubin -arch=sm_90", "k.cubin");
  Manifest m = manifest("image = \"k.cubin\"");
  EXPECT_EQ(m.image, cubin);
  EXPECT_TRUE(m.source.empty());
  BuiltCandidate b = build_candidate(m, "sm_90", out.path());
  expect_consistent(b);
  EXPECT_EQ(b.compiler, "prebuilt cubin");
  EXPECT_EQ(b.lowered.at("add_relu<float>"), "_Z8add_reluIfEvPKT_S2_PS0_x");
  EXPECT_EQ(b.image_file, cubin);
  EXPECT_EQ(b.image_file_sha256, sha256_hex(read_text_file(cubin)));
  EXPECT_EQ(b.image_sha256, b.image_file_sha256);
  EXPECT_EQ(b.load_path, "native_sass");
  EXPECT_FALSE(b.load_entry.empty());
  json j = b.to_json();
  EXPECT_EQ(j["image"]["file"], cubin.string());
  EXPECT_EQ(j["image"]["load_path"], "native_sass");
  EXPECT_EQ(j["compiler"], "prebuilt cubin");
  // An extern "C" kernel matches its own name.
  BuiltCandidate c = build_candidate(manifest("image = \"k.cubin\"", "add_relu_c"), "sm_90", out.path());
  EXPECT_EQ(c.lowered.at("add_relu_c"), "add_relu_c");
}

TEST_F(ImageCandidate, Sm80CubinIsRefusedOnSm90NamingWhatItHolds) {
  nvcc("-cubin -arch=sm_80", "k80.cubin");
  Manifest m = manifest("image = \"k80.cubin\"");
  expect_input_error(m, "sm_90", {"kqual.toml", "k80.cubin", "sm_90", "sm_80"});
}

TEST_F(ImageCandidate, FatbinPicksNativeSassOrFallsBackToPtx) {
  fs::path fat = nvcc("-fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]",
                      "k.fatbin");
  Manifest m = manifest("image = \"k.fatbin\"");
  BuiltCandidate b = build_candidate(m, "sm_90", out.path());
  expect_consistent(b);
  EXPECT_EQ(b.compiler, "prebuilt fatbin");
  EXPECT_EQ(b.load_path, "native_sass");
  EXPECT_EQ(b.image_file_sha256, sha256_hex(read_text_file(fat)));
  EXPECT_EQ(b.image_sha256, b.image_file_sha256);
  // A newer device has no SASS here: the compute_90 PTX is JIT-compiled.
  BuiltCandidate j = build_candidate(m, "sm_100", out.path());
  EXPECT_EQ(j.load_path, "ptx_jit");
  // A device older than every entry loads nothing: refused, naming what the fatbin holds.
  expect_input_error(m, "sm_75", {"k.fatbin", "sm_75", "sm_80", "sm_90", "compute_90"});
}

TEST_F(ImageCandidate, MalformedFatbinIsAnInputErrorNamingTheManifest) {
  fs::path fat = nvcc("-fatbin -arch=sm_90", "k.fatbin");
  std::string bytes = read_text_file(fat);
  write_file_atomic(dir.path() / "cut.fatbin", bytes.substr(0, bytes.size() / 3));
  expect_input_error(manifest("image = \"cut.fatbin\""), "sm_90", {"kqual.toml", "cut.fatbin"});
}

TEST_F(ImageCandidate, PtxForAnOlderArchIsAcceptedAsJitWithANote) {
  const BuiltCandidate b = built_image("-ptx -arch=compute_80", "k.ptx");
  EXPECT_EQ(b.compiler, "prebuilt PTX");
  EXPECT_EQ(b.load_path, "ptx_jit");
  EXPECT_NE(b.image_kind.find("JIT"), std::string::npos) << b.image_kind;
  EXPECT_EQ(b.image_file_sha256, sha256_hex(read_text_file(dir.path() / "k.ptx")));
  bool noted = false;
  for (const auto& n : b.notes) noted |= n.find("JIT") != std::string::npos && n.find("compute_80") != std::string::npos;
  EXPECT_TRUE(noted) << b.to_json().dump(2);
  // PTX for a newer arch cannot be loaded by an older device.
  nvcc("-ptx -arch=compute_90", "k90.ptx");
  expect_input_error(manifest("image = \"k90.ptx\""), "sm_80", {"k90.ptx", "sm_80", "compute_90"});
}

TEST_F(ImageCandidate, SharedLibraryContributesTheModuleHoldingTheKernels) {
  const BuiltCandidate b = built_image("-shared -Xcompiler -fPIC -arch=sm_90", "libk.so");
  EXPECT_EQ(b.compiler, "prebuilt module extracted from host binary libk.so");
  EXPECT_EQ(b.image_file_sha256, sha256_hex(read_text_file(dir.path() / "libk.so")));
  EXPECT_NE(b.image_sha256, b.image_file_sha256) << "the loaded module, not the whole library";
  EXPECT_EQ(b.lowered.at("add_relu<float>"), "_Z8add_reluIfEvPKT_S2_PS0_x");
  EXPECT_EQ(artifact::parse_artifact(b.image_path.string()).container, artifact::ContainerKind::fatbin);
  // A kernel no module holds: every module's kernels are listed.
  expect_input_error(manifest("image = \"libk.so\"", "add_relu_fast<{T}>"), "sm_90",
                     {"kqual.toml", "libk.so", "add_relu_fast<float>", "add_relu<float>", "add_relu_c"});
}

TEST_F(ImageCandidate, KernelNotInTheImageListsWhatItHolds) {
  nvcc("-cubin -arch=sm_90", "k.cubin");
  expect_input_error(manifest("image = \"k.cubin\"", "add_relu_fast<{T}>"), "sm_90",
                     {"kqual.toml", "add_relu_fast<float>", "add_relu<float>", "add_relu_c"});
}

TEST_F(ImageCandidate, RelativePathsResolveAgainstTheManifestFolder) {
  fs::create_directories(dir.path() / "img");
  nvcc("-cubin -arch=sm_90", "img/k.cubin");
  ScratchDir elsewhere("kqual-image-cwd");
  fs::path cwd = fs::current_path();
  fs::current_path(elsewhere.path());
  Manifest m = manifest("image = \"img/k.cubin\"");
  fs::current_path(cwd);
  EXPECT_EQ(m.image, dir.path() / "img" / "k.cubin");
}

TEST_F(ImageCandidate, ManifestErrorsNameTheFileAndTheKey) {
  write_file_atomic(dir.path() / "k.cubin", "not used");
  auto expect_error = [&](const std::string& keys, std::initializer_list<const char*> words) {
    try {
      manifest(keys);
      FAIL() << keys;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      EXPECT_NE(std::string(e.what()).find("kqual.toml"), std::string::npos) << e.what();
      for (const char* w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " in: " << e.what();
    }
  };
  expect_error("source = \"k.cu\"\nimage = \"k.cubin\"", {"not both", "k.cu", "k.cubin"});
  expect_error("", {"candidate.source", "image"});
  expect_error("image = \"nowhere.cubin\"", {"candidate.image", "does not exist", "nowhere.cubin"});
  expect_error("image = \"k.cubin\"\ncompiler = \"nvcc\"", {"candidate.compiler", "prebuilt"});
  expect_error("image = \"k.cubin\"\nnvrtc_options = [\"-DX\"]", {"candidate.nvrtc_options"});
  expect_error("source = \"k.cu\"\ncompiler = \"clang\"", {"candidate.compiler", "clang", "nvcc"});
  expect_error("source = \"k.cu\"\nnvcc_options = [\"-lineinfo\"]", {"candidate.nvcc_options", "compiler"});
  expect_error("source = \"k.cu\"\ncompiler = \"nvcc\"\nnvrtc_options = [\"-DX\"]", {"candidate.nvrtc_options", "nvcc_options"});
  expect_error("source = \"k.cu\"\ncompiler = \"nvcc\"\nnvcc_options = [\"-arch=sm_80\"]", {"candidate.nvcc_options[0]", "-arch"});
  expect_error("source = \"k.cu\"\ncompiler = \"nvcc\"\nnvcc_options = [\"-o\", \"x\"]", {"candidate.nvcc_options[0]"});
  // Options that merely look like banned ones pass.
  EXPECT_EQ(manifest("source = \"k.cu\"\ncompiler = \"nvcc\"\nnvcc_options = [\"-O3\", \"-Xptxas=-v\", \"--extended-lambda\"]")
                .nvcc_options.size(),
            3u);
}

// INFINITY comes from <math.h>, which nvcc's CUDA headers bring in and NVRTC does not.
constexpr const char* kInfinitySource = R"(
template <typename T>
__global__ void add_relu(const T* x, const T* r, T* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i] + r[i]; y[i] = v == -INFINITY ? 0.0f : (v > 0.0f ? v : (v != v ? v : 0.0f)); }
}
)";

TEST_F(ImageCandidate, NvccCandidateBuildsWhatNvrtcRejectsAndRecordsTheCommand) {
  write_file_atomic(dir.path() / "inf.cu", kInfinitySource);
  try {
    build_candidate(manifest("source = \"inf.cu\""), "sm_90", out.path());
    FAIL() << "NVRTC accepted INFINITY without <math.h>: pick another construct for this test";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::nvrtc);
    EXPECT_NE(std::string(e.what()).find("INFINITY"), std::string::npos) << e.what();
  }
  Manifest m = manifest("source = \"inf.cu\"\ncompiler = \"nvcc\"\nnvcc_options = [\"-lineinfo\", \"-DUNUSED=1\"]");
  EXPECT_EQ(m.compiler, Compiler::nvcc);
  BuiltCandidate b = build_candidate(m, "sm_90", out.path());
  expect_consistent(b);
  EXPECT_EQ(b.lowered.at("add_relu<float>"), "_Z8add_reluIfEvPKT_S2_PS0_x");
  EXPECT_EQ(b.compiler.rfind("nvcc release ", 0), 0u) << b.compiler;
  EXPECT_NE(b.compiler.find(", V"), std::string::npos) << b.compiler;  // "nvcc release 13.0, V13.0.88 (/path/nvcc)"
  for (const char* o : {"-cubin", "-arch=sm_90", "-lineinfo", "-DUNUSED=1", "-std=c++17"})
    EXPECT_NE(std::find(b.options.begin(), b.options.end(), o), b.options.end()) << o;
  EXPECT_EQ(b.source_sha256, sha256_hex(std::string(kInfinitySource)));
  EXPECT_EQ(b.image_kind, "cubin (native SASS)");
  bool command = false;
  for (const auto& n : b.notes) command |= n.rfind("nvcc command: ", 0) == 0 && n.find("-lineinfo") != std::string::npos;
  EXPECT_TRUE(command) << b.to_json().dump(2);
  json j = b.to_json();
  EXPECT_EQ(j["compiler"], b.compiler);
  EXPECT_EQ(j["options"].size(), b.options.size());
  // The cubin's own compiler notes agree: ptxas of the same toolkit.
  artifact::Artifact a = artifact::parse_artifact(b.image_path.string());
  ASSERT_EQ(a.container, artifact::ContainerKind::cubin);
}

// The bundled prebuilt example (candidates/residual_add_relu/prebuilt): PTX for compute_80 made by
// NVRTC from the good candidate's kernel.cu. KQUAL_REGENERATE_PREBUILT=1 rewrites it.
TEST(BundledPrebuilt, PtxIsTheGoodKernelCompiledByNvrtc) {
  const fs::path folder = test::repo_root() / "candidates/residual_add_relu/prebuilt";
  Manifest m = load_manifest(folder);
  Manifest good = load_manifest(test::repo_root() / "candidates/residual_add_relu/good");
  cuda::NvrtcRequest req;
  req.source = read_text_file(good.source);
  req.source_name = good.source.filename().string();
  req.arch = "compute_80";
  req.include_dirs = {good.dir.string()};
  for (DType t : good.supports.dtypes)
    for (const auto& k : good.kernel_names(t)) req.name_expressions.push_back(k);
  cuda::NvrtcResult r = cuda::nvrtc_compile(req);
  std::string ptx(r.image.begin(), r.image.end());
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  if (const char* e = std::getenv("KQUAL_REGENERATE_PREBUILT"); e && std::string(e) == "1") write_file_atomic(m.image, ptx);
  const std::string stored = read_text_file(m.image);
  auto toolkit_line = [](const std::string& text) {
    auto p = text.find("// Cuda compilation tools");
    return p == std::string::npos ? std::string() : text.substr(p, text.find('\n', p) - p);
  };
  if (toolkit_line(stored) != toolkit_line(ptx))
    GTEST_SKIP() << "NVRTC here (" << toolkit_line(ptx) << ") is not the one that generated " << m.image << " ("
                 << toolkit_line(stored) << ")";
  // NVRTC names an anonymous namespace with a per-compilation unique id, so its mangled names
  // (_ZN47_GLOBAL__N__00000000_9_kernel_cu_c55c2035_116263Vec...: length, hash, counter) differ
  // from run to run; everything else must be identical.
  auto normalized = [](const std::string& text) {
    static const std::regex unique(R"(_ZN[0-9]+_GLOBAL__N__[0-9]+_[0-9]+_kernel_cu_[0-9a-f]+_[0-9]+)");
    return std::regex_replace(text, unique, "_ZN_ANONYMOUS_NAMESPACE_");
  };
  EXPECT_TRUE(normalized(stored) == normalized(ptx))
      << m.image << " is not what NVRTC makes from " << good.source
      << " now: regenerate with KQUAL_REGENERATE_PREBUILT=1 ctest --test-dir build -R BundledPrebuilt";
  EXPECT_EQ(m.launches.size(), good.launches.size());
  BuiltCandidate b = build_candidate(m, "sm_90", fs::temp_directory_path());
  EXPECT_EQ(b.load_path, "ptx_jit");
  for (const auto& [name, symbol] : r.lowered) EXPECT_EQ(b.lowered.at(name), symbol) << name;
}

}  // namespace
}  // namespace kqual::build
