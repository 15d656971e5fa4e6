// The timers' words and their registrations (kqual/worker/timer.hpp, src/worker/timers/): every kind
// has one word, parsed back exactly, and one registration that states what a sample is.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kqual/worker/timer.hpp"

namespace kqual::worker {
namespace {

TEST(Timer, EveryKindHasOneWordParsedBackExactly) {
  std::set<std::string> words;
  for (const auto& [kind, word] : kTimerKindNames.entries) {
    EXPECT_TRUE(words.insert(word).second) << word;
    EXPECT_EQ(to_string(kind), std::string(word));
    EXPECT_EQ(parse_timer_kind(word), kind) << word;
  }
  EXPECT_EQ(words, (std::set<std::string>{"events", "cupti", "graph"}));  // the wire's and results.json's words
  EXPECT_EQ(parse_timer_kind("Events"), std::nullopt);
  EXPECT_EQ(parse_timer_kind("wallclock"), std::nullopt);
  EXPECT_EQ(parse_timer_kind(""), std::nullopt);
  EXPECT_EQ(kTimerKindNames.choices(), "events, cupti or graph");
}

TEST(Timer, EveryKindIsRegisteredAndSaysWhatASampleIs) {
  std::set<std::string> sentences;
  for (const auto& [kind, word] : kTimerKindNames.entries) {
    const char* sample = nullptr;
    ASSERT_NO_THROW(sample = what_a_sample_is(kind)) << word << " has no registration in src/worker/timers/registry.cpp";
    ASSERT_NE(sample, nullptr) << word;
    EXPECT_GT(std::string(sample).size(), 20u) << word;
    EXPECT_TRUE(sentences.insert(sample).second) << word << " states another timer's sample";
  }
  EXPECT_NE(std::string(what_a_sample_is(TimerKind::cupti)).find("CUPTI"), std::string::npos);
  EXPECT_NE(std::string(what_a_sample_is(TimerKind::graph)).find("divided by N"), std::string::npos);
}

}  // namespace
}  // namespace kqual::worker
