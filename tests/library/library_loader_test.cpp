// cuBLAS is dlopen'ed at run time: without it, a clear error naming what was tried; the routine
// table is consistent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "kqual/core/error.hpp"
#include "kqual/cuda/library.hpp"

namespace kqual::cuda {
namespace {

// The kind and message of the Error load_cublas raises with KQUAL_CUBLAS_LIBRARY set to `library`
// (a failure, and an empty message, where it loads); the variable is unset again.
std::pair<ErrorKind, std::string> load_error(const char* library) {
  ::setenv("KQUAL_CUBLAS_LIBRARY", library, 1);
  std::pair<ErrorKind, std::string> out{ErrorKind::internal, ""};
  try {
    load_cublas();
    ADD_FAILURE() << "load_cublas accepted " << library;
  } catch (const Error& e) {
    out = {e.kind(), e.what()};
  }
  ::unsetenv("KQUAL_CUBLAS_LIBRARY");
  return out;
}

TEST(LibraryLoader, MissingCublasIsAClearError) {
  const auto [kind, w] = load_error("/nonexistent/libcublas.so.13");
  EXPECT_EQ(kind, ErrorKind::cuda);
  EXPECT_NE(w.find("cuBLAS could not be loaded"), std::string::npos) << w;
  EXPECT_NE(w.find("/nonexistent/libcublas.so.13"), std::string::npos) << w;
  EXPECT_EQ(cublas_library_path(), "");  // nothing cached from the failed attempt
}

TEST(LibraryLoader, ALibraryWithoutTheSymbolsIsAClearError) {
  const std::string w = load_error("libm.so.6").second;
  EXPECT_NE(w.find("libm.so.6 has no symbol cublasCreate_v2"), std::string::npos) << w;
}

TEST(LibraryLoader, RoutineTable) {
  const LibraryRoutine* r = find_library_routine("cublas.gemm");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->library, "cuBLAS");
  EXPECT_EQ(r->signature(), "cublas.gemm<T>(a, b, c, m:i32, n:i32, k:i32)");
  EXPECT_EQ(find_library_routine("cub.exclusive_sum")->signature(), "cub.exclusive_sum<T>(in, out, n:i64)");
  EXPECT_EQ(find_library_routine("cub.segmented_sum")->signature(), "cub.segmented_sum<T>(in, out, rows:i64, cols:i64)");
  EXPECT_EQ(find_library_routine("nope"), nullptr);
  ASSERT_NE(find_library_routine("cublaslt.gemm"), nullptr);
  EXPECT_EQ(find_library_routine("cublaslt.gemm")->library, "cuBLASLt");
  EXPECT_EQ(find_library_routine("cublaslt.gemm")->signature(), "cublaslt.gemm<T>(a, b, c, m:i32, n:i32, k:i32)");
  LibraryName n = split_library_name("cub.exclusive_sum<__nv_bfloat16>");
  EXPECT_EQ(n.routine, "cub.exclusive_sum");
  EXPECT_EQ(n.type, "__nv_bfloat16");
  EXPECT_NE(cub_version().find("CUB 3."), std::string::npos) << cub_version();
}

// A named libcublas brings the libcublasLt of its own folder: loaded first, so the dynamic linker
// cannot take another build's by soname. Run in a child process (the loader is once per process).
TEST(LibraryLoader, ANamedCublasBringsTheCublasLtBesideIt) {
  const std::filesystem::path real = "/usr/local/cuda/lib64";
  if (!std::filesystem::exists(real / "libcublas.so.13") || !std::filesystem::exists(real / "libcublasLt.so.13"))
    GTEST_SKIP() << "no cuBLAS 13 in " << real;
  std::string tmpl = (std::filesystem::temp_directory_path() / "kqual-cublas-XXXXXX").string();
  const std::filesystem::path dir = mkdtemp(tmpl.data());
  // A build of its own: the files under another name of the folder (links keep the test light).
  std::filesystem::create_symlink(real / "libcublas.so.13", dir / "libcublas.so.13.9.9");
  std::filesystem::create_symlink(real / "libcublasLt.so.13", dir / "libcublasLt.so.13");
  const std::string named = (dir / "libcublas.so.13.9.9").string();
  const std::string lt = (dir / "libcublasLt.so.13").string();
  EXPECT_EXIT(
      {
        ::setenv("KQUAL_CUBLAS_LIBRARY", named.c_str(), 1);
        load_cublas();
        bool mapped = false;
        for (const auto& f : loaded_library_files("cublasLt")) mapped = mapped || f == lt;
        std::exit(cublas_library_path() == named && cublas_lt_library_path() == lt && mapped ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kqual::cuda
