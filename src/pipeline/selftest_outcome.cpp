// selftest's rule for one folder and one seed (selftest_outcome.hpp).
#include "selftest_outcome.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kqual/core/error.hpp"

namespace kqual::pipeline {

SelftestExpectation selftest_expectation(const build::Manifest& m, bool broken) {
  SelftestExpectation x;
  x.broken = broken;
  if (broken && !m.expect_rejected_for)
    throw_error(ErrorKind::input, fmt::format("{}: a known-broken candidate must state [expect] rejected_for",
                                              m.file.string()));
  if (broken) {
    x.codes.push_back(*m.expect_rejected_for);
    for (const auto& c : m.expect_also_rejected_for) x.codes.push_back(c);
  }
  x.text = broken ? "rejected: " + fmt::format("{}", fmt::join(x.codes, " or ")) : std::string("accepted");
  x.timed_class = std::any_of(x.codes.begin(), x.codes.end(), [](const std::string& e) {
    return e == "timed_output_wrong" || e == "harness_memory_written";
  });
  return x;
}

SeedOutcome seed_outcome(const SelftestExpectation& x, const std::string& load_error, const CorrectnessSummary& sum,
                         const std::map<std::string, int>& codes, const std::string& timed_code, const std::string& timed_detail) {
  SeedOutcome o;
  o.rejected = !sum.accepted || !timed_detail.empty();
  if (!load_error.empty()) {
    o.got = "load failed: " + load_error;
  } else if (sum.incomplete && timed_detail.empty()) {
    // kqual's own failure stopped the cases with none failed: no verdict on the folder, and never an empty
    // "rejected: " (the expectation is not met, the row says why).
    o.got = "incomplete: kqual's own failure: " + sum.harness_failure;
    o.rejected = false;
  } else if (x.broken) {
    o.ok = o.rejected && std::any_of(x.codes.begin(), x.codes.end(), [&](const std::string& e) { return codes.count(e) > 0; });
    o.got = o.rejected ? "rejected: " + (!sum.accepted ? sum.primary_code : timed_code) : "accepted";
  } else {
    o.ok = sum.accepted;
    o.got = sum.accepted ? "accepted" : "rejected: " + sum.primary_code;
  }
  return o;
}

}  // namespace kqual::pipeline
