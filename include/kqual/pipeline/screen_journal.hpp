#pragma once
// Pieces of kqual screen shared by its source files (screen.cpp, screen_shard.cpp): the journal's
// line writer, the options that decide a verdict, and small text helpers.
#include <filesystem>
#include <string>

#include "kqual/core/json.hpp"
#include "kqual/core/text.hpp"  // first_line
#include "kqual/pipeline/screen.hpp"

namespace kqual::pipeline {

inline constexpr const char* kScreenJournalName = "kqual.screen-journal/1";

std::string utc_now();  // "2026-05-01T12:00:00Z"

// One journal line: the whole line in one write() on an O_APPEND descriptor, then fsync, so a kill
// at any moment leaves either the whole line or a torn tail that the next run drops.
void append_journal_line(int fd, const std::filesystem::path& file, const std::string& line);

// The options that decide a verdict (the journal header's and results.json's "options"); a journal
// is resumed, and shards are merged, only under the same ones. `shard` ("I/N") only when sharded.
json screen_verdict_options(const ScreenOptions& o, const std::string& arch, const std::string& shard);

// "--seed: journal 1, this run 2; ..." (with `was`/`now` naming the two sides); "" when they agree.
std::string option_differences(const json& was, const json& now, const std::string& was_name = "journal",
                               const std::string& now_name = "this run");

std::string display_name(const std::filesystem::path& dir);     // the folder's name

}  // namespace kqual::pipeline
