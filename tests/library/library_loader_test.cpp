// cuBLAS is dlopen'ed at run time: without it, a clear error naming what was tried; the routine
// table is consistent.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kqual/core/error.hpp"
#include "kqual/cuda/library.hpp"

namespace kqual::cuda {
namespace {

TEST(LibraryLoader, MissingCublasIsAClearError) {
  ::setenv("KQUAL_CUBLAS_LIBRARY", "/nonexistent/libcublas.so.13", 1);
  try {
    load_cublas();
    ADD_FAILURE() << "load_cublas succeeded with a missing library";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cuda);
    std::string w = e.what();
    EXPECT_NE(w.find("cuBLAS could not be loaded"), std::string::npos) << w;
    EXPECT_NE(w.find("/nonexistent/libcublas.so.13"), std::string::npos) << w;
  }
  ::unsetenv("KQUAL_CUBLAS_LIBRARY");
  EXPECT_EQ(cublas_library_path(), "");  // nothing cached from the failed attempt
}

TEST(LibraryLoader, ALibraryWithoutTheSymbolsIsAClearError) {
  ::setenv("KQUAL_CUBLAS_LIBRARY", "libm.so.6", 1);
  try {
    load_cublas();
    ADD_FAILURE() << "load_cublas accepted libm";
  } catch (const Error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("libm.so.6 has no symbol cublasCreate_v2"), std::string::npos) << w;
  }
  ::unsetenv("KQUAL_CUBLAS_LIBRARY");
}

TEST(LibraryLoader, RoutineTable) {
  const LibraryRoutine* r = find_library_routine("cublas.gemm");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->library, "cuBLAS");
  EXPECT_EQ(r->signature(), "cublas.gemm<T>(a, b, c, m:i32, n:i32, k:i32)");
  EXPECT_EQ(find_library_routine("cub.exclusive_sum")->signature(), "cub.exclusive_sum<T>(in, out, n:i64)");
  EXPECT_EQ(find_library_routine("cub.segmented_sum")->signature(), "cub.segmented_sum<T>(in, out, rows:i64, cols:i64)");
  EXPECT_EQ(find_library_routine("nope"), nullptr);
  LibraryName n = split_library_name("cub.exclusive_sum<__nv_bfloat16>");
  EXPECT_EQ(n.routine, "cub.exclusive_sum");
  EXPECT_EQ(n.type, "__nv_bfloat16");
  EXPECT_NE(cub_version().find("CUB 3."), std::string::npos) << cub_version();
}

}  // namespace
}  // namespace kqual::cuda
