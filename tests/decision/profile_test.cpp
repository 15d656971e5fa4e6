#include "kqual/decision/profile.hpp"

#include <gtest/gtest.h>

#include <string>

#include "kqual/core/error.hpp"

using namespace kqual::decision;

namespace {

// The error message, or "" when parsing succeeded.
std::string error_of(const std::string& text) {
  try {
    parse_profile(text, "bad.toml");
  } catch (const kqual::Error& e) {
    EXPECT_EQ(e.kind(), kqual::ErrorKind::input);
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Profile, DefaultsAreDocumented) {
  const DeploymentProfile p = parse_profile("", "empty.toml");
  EXPECT_EQ(p.name, "default");
  EXPECT_EQ(p.process_starts_per_day, 1);
  EXPECT_EQ(p.calls_per_process, 1e6);
  EXPECT_FALSE(p.first_request_budget_ms.has_value());
  EXPECT_EQ(p.kernel_share, 1.0);
  EXPECT_EQ(p.jit_cache, CacheMode::cold);
}

TEST(Profile, ParsesEveryKeyIntegersAsNumbers) {
  const DeploymentProfile p = parse_profile(R"(
name = "svc"
description = "d"
process_starts_per_day = 24
calls_per_process = 1.5e3
first_request_budget_ms = 250
kernel_share = 0.3
jit_cache = "warm"
)", "x.toml");
  EXPECT_EQ(p.name, "svc");
  EXPECT_EQ(p.process_starts_per_day, 24);
  EXPECT_EQ(p.calls_per_process, 1500);
  EXPECT_EQ(*p.first_request_budget_ms, 250);
  EXPECT_EQ(p.kernel_share, 0.3);
  EXPECT_EQ(p.jit_cache, CacheMode::warm);
  EXPECT_EQ(p.source, "x.toml");
  EXPECT_EQ(to_json(p)["jit_cache"], "warm");
}

TEST(Profile, BundledExamplesParse) {
  const auto server = load_profile(std::string(KQUAL_SOURCE_DIR) + "/profiles/long-lived-server.toml");
  const auto burst = load_profile(std::string(KQUAL_SOURCE_DIR) + "/profiles/cold-start-heavy.toml");
  EXPECT_GT(server.calls_per_process, burst.calls_per_process);
  EXPECT_LT(server.process_starts_per_day, burst.process_starts_per_day);
}

TEST(Profile, WrongTypeNamesFileKeyAndValue) {
  const std::string e = error_of("calls_per_process = \"many\"");
  EXPECT_TRUE(contains(e, "bad.toml")) << e;
  EXPECT_TRUE(contains(e, "calls_per_process")) << e;
  EXPECT_TRUE(contains(e, "\"many\"")) << e;
  EXPECT_TRUE(contains(e, "must be a number")) << e;
  EXPECT_TRUE(contains(error_of("name = 3"), "must be a string")) << error_of("name = 3");
}

TEST(Profile, NegativeIsRefused) {
  const std::string e = error_of("process_starts_per_day = -5");
  EXPECT_TRUE(contains(e, "process_starts_per_day")) << e;
  EXPECT_TRUE(contains(e, "-5")) << e;
  EXPECT_TRUE(contains(e, "negative")) << e;
  EXPECT_TRUE(contains(error_of("calls_per_process = nan"), "finite"));
  EXPECT_TRUE(contains(error_of("first_request_budget_ms = 0"), "positive"));
}

TEST(Profile, ShareAboveOneIsRefused) {
  const std::string e = error_of("kernel_share = 1.5");
  EXPECT_TRUE(contains(e, "kernel_share")) << e;
  EXPECT_TRUE(contains(e, "1.5")) << e;
  EXPECT_TRUE(contains(e, "[0, 1]")) << e;
  EXPECT_EQ(error_of("kernel_share = 1"), "");
  EXPECT_EQ(error_of("kernel_share = 0"), "");
}

TEST(Profile, UnknownKeyIsRefused) {
  const std::string e = error_of("calls_per_proces = 10");  // typo
  EXPECT_TRUE(contains(e, "calls_per_proces")) << e;
  EXPECT_TRUE(contains(e, "unknown key")) << e;
  EXPECT_TRUE(contains(error_of("[server]\ncalls_per_process = 1"), "unknown key"));
}

TEST(Profile, UnknownCacheModeAndSyntaxError) {
  EXPECT_TRUE(contains(error_of("jit_cache = \"hot\""), "\"hot\""));
  const std::string e = error_of("calls_per_process = = 3");
  EXPECT_TRUE(contains(e, "bad.toml:1:")) << e;
}

TEST(Profile, MissingFileIsNamed) {
  try {
    load_profile("/nonexistent/profile.toml");
    FAIL() << "expected an error";
  } catch (const kqual::Error& e) {
    EXPECT_EQ(e.kind(), kqual::ErrorKind::input);
    EXPECT_TRUE(contains(e.what(), "/nonexistent/profile.toml")) << e.what();
    EXPECT_TRUE(contains(e.what(), "No such file")) << e.what();
  }
}
