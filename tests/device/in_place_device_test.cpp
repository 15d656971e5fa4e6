// The in-place check on a GPU, through `kqual selftest` as a user runs it: for every contract that
// admits in place and has bundled candidates, the good candidate (its in_place claim, where it makes
// one, now run with y on x) is accepted and broken/inplace_second_pass is rejected aliasing_wrong.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "kqual/contract/contract.hpp"
#include "kqual/core/json.hpp"
#include "kqual/cuda/driver.hpp"
#include "selftest_util.hpp"
#include "test_util.hpp"

namespace kqual {
namespace {
namespace fs = std::filesystem;

TEST(InPlaceDevice, BundledInPlaceClaimsPassAndTheSecondPassesAreRejectedAliasingWrong) {
  if (!cuda::driver_available()) GTEST_SKIP() << "no GPU: " << cuda::driver_unavailable_reason();
  const fs::path repo = test::repo_root();
  const fs::path root = fs::temp_directory_path() / "kqual-device-in-place";
  fs::remove_all(root);
  std::string args;
  int contracts = 0;
  for (const auto& e : fs::directory_iterator(repo / "candidates")) {
    const fs::path second = e.path() / "broken/inplace_second_pass";
    if (!fs::exists(second / "kqual.toml")) continue;
    const fs::path to = root / "candidates" / e.path().filename();
    fs::create_directories(to / "broken");
    fs::copy(e.path() / "good", to / "good", fs::copy_options::recursive);
    fs::copy(second, to / "broken/inplace_second_pass", fs::copy_options::recursive);
    args += " --contract " + e.path().filename().string();
    ++contracts;
  }
  ASSERT_GE(contracts, 10);
  const fs::path out = root / "out";
  // From the repository, so the declared contracts resolve by name from its contracts/.
  const json rows = test::selftest_rows("--seeds 1 --no-baselines --no-sanitizer-pass --root " + test::quote(root) + args, out, repo);
  int rejected = 0;
  for (const auto& row : rows) {
    const std::string got = row.dump();
    if (row.value("kind", std::string()) == "broken") {
      EXPECT_NE(got.find("rejected: aliasing_wrong"), std::string::npos) << row.dump(2);
      ++rejected;
    }
  }
  EXPECT_EQ(rejected, contracts);
  fs::remove_all(root);
}

}  // namespace
}  // namespace kqual
