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

// Issue 25: the service view's keys and the latency objectives.
TEST(Profile, ServiceTableAndObjectives) {
  const DeploymentProfile p = parse_profile(R"(
name = "svc"
[service]
arrival_rate = 120
burstiness = 0.5
replicas = 4
first_k = 20
timeout_ms = 5000
other_startup_ms = 1500
driver_upgrade = true
preload = true
[[objective]]
population = "first_request"
percentile = 99
max_ms = 400
[[objective]]
population = "all"
percentile = 99.9
max_ms = 50
)", "svc.toml");
  EXPECT_EQ(*p.service.arrival_rate_per_s, 120);
  EXPECT_EQ(p.service.burstiness, 0.5);
  EXPECT_EQ(*p.service.replicas, 4);
  EXPECT_EQ(p.service.first_k, 20);
  EXPECT_EQ(*p.service.timeout_ms, 5000);
  EXPECT_EQ(p.service.other_startup_ms, 1500);
  EXPECT_TRUE(p.service.driver_upgrade);
  EXPECT_TRUE(p.service.preload);
  ASSERT_EQ(p.objectives.size(), 2u);
  EXPECT_EQ(p.objectives[0].population, kqual::model::service::Population::first_request);
  EXPECT_DOUBLE_EQ(p.objectives[1].percentile, 99.9);
  EXPECT_DOUBLE_EQ(p.objectives[1].max_s, 0.050);
  const kqual::json j = to_json(p);
  EXPECT_EQ(j["objectives"][0]["text"], "p99 of first_request <= 400 ms");
  EXPECT_EQ(j["service"]["replicas"], 4);
  // The bundled profiles state objectives.
  EXPECT_FALSE(load_profile(std::string(KQUAL_SOURCE_DIR) + "/profiles/cold-start-heavy.toml").objectives.empty());
}

TEST(Profile, ServiceAndObjectiveErrorsNameTheKey) {
  EXPECT_TRUE(contains(error_of("[service]\nreplicas = 0\n"), "service.replicas"));
  EXPECT_TRUE(contains(error_of("[service]\nreplicas = 2.5\n"), "whole number"));
  EXPECT_TRUE(contains(error_of("[service]\nspeed = 1\n"), "unknown key"));
  EXPECT_TRUE(contains(error_of("[service]\npreload = 1\n"), "true or false"));
  EXPECT_TRUE(contains(error_of("[[objective]]\npopulation = \"some\"\npercentile = 99\nmax_ms = 1\n"), "objective[0].population"));
  EXPECT_TRUE(contains(error_of("[[objective]]\npopulation = \"all\"\npercentile = 100\nmax_ms = 1\n"), "(0, 100)"));
  EXPECT_TRUE(contains(error_of("[[objective]]\npopulation = \"all\"\npercentile = 99\n"), "needs population, percentile and max_ms"));
  EXPECT_TRUE(contains(error_of("objective = 3\n"), "array of tables"));
}
