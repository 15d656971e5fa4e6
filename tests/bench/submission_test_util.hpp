#pragma once
// Shared by the tests that judge PyTorch submissions against the NumPy stand-in for their worker
// (fixtures/fake_submission_worker.py): a correct residual_add_relu submission in its calling
// convention; a fixture that writes submissions to a scratch folder and skips without Python and NumPy
// (contract_test_util.hpp's KQUAL_NEED_NUMPY).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "contract/contract_test_util.hpp"
#include "kqual/core/files.hpp"

namespace kqual::test::submission {

class SubmissionFixture : public ::testing::Test {
 protected:
  explicit SubmissionFixture(const std::string& scratch_prefix = "kqual-submission-test") : dir_(scratch_prefix) {}
  void SetUp() override { KQUAL_NEED_NUMPY(); }

  // `body` written as the scratch folder's submission.py; returns its path.
  std::filesystem::path write_submission(const std::string& body) const {
    const std::filesystem::path f = dir_.path() / "submission.py";
    std::ofstream(f) << body;
    return f;
  }

  ScratchDir dir_;
};

// relu(x + r) as the contract states it: the sum in f64 rounded once to f32, NaN kept, +0 otherwise;
// forward() returns the list of outputs, as the stand-in worker expects.
inline constexpr const char* kNumpyAddRelu = R"PY(
import numpy as np

def add_relu(x, r):
    s = (x.astype(np.float64) + r.astype(np.float64)).astype(np.float32)
    return np.where(np.isnan(s), s, np.where(s > 0, s, np.float32(0)))

def forward(x, r):
    return [add_relu(x, r)]
)PY";

}  // namespace kqual::test::submission
