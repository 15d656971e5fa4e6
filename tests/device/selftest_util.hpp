#pragma once
// Shared by the GPU suites that run `kqual selftest` as a user would.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "kqual/core/json.hpp"
#include "test_util.hpp"

namespace kqual::test {

// `[cd DIR &&] kqual selftest ARGS --out OUT`: its output printed, exit 0 expected, and the rows of
// results.json returned, each checked to have come out as expected.
inline json selftest_rows(const std::string& args, const std::filesystem::path& out, const std::filesystem::path& cd = {}) {
  const std::string prefix = cd.empty() ? std::string() : "cd " + quote(cd) + " && ";
  auto r = run(prefix + kq() + " selftest " + args + " --out " + quote(out));
  std::cout << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  json res = json::parse(std::ifstream(out / "results.json"));
  for (const auto& row : res["candidates"]) EXPECT_TRUE(row.value("as_expected", false)) << row.dump(2);
  return res["candidates"];
}

// `kqual decide` on a results.json a GPU run just wrote must give back the verdict the run recorded:
// the decision is a function of the recorded samples (docs/decision.md, "Re-judging a result").
inline void expect_decide_agrees(const std::filesystem::path& results) {
  auto r = run(kq() + " --json decide " + quote(results));
  json d;
  try {
    d = json::parse(r.output.substr(r.output.find('{')));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "kqual decide " << results << ": no JSON (" << e.what() << "): " << r.output;
    return;
  }
  EXPECT_TRUE(d.value("agrees_with_recorded", false)) << "recorded " << d.value("recorded", std::string("?")) << ", decide says "
                                                      << d["verdict"].value("decision", std::string("?")) << ": " << d.dump(2);
}

}  // namespace kqual::test
