#pragma once
// The base of every GPU test fixture: skipped, with the reason, where no driver or device is present
// (CTest reports it skipped, never passed: tests/CMakeLists.txt reads the "[  SKIPPED ]" line).
#include <gtest/gtest.h>

#include "kqual/cuda/driver.hpp"

namespace kqual::test {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  }
};

}  // namespace kqual::test
