// `kqual report RESULTS.json [--html OUT.html] [--md OUT.md]`: the page and the memo, rendered again
// from a results document written by qualify/check/bench or compare (docs/report.md). Nothing is
// measured here. Every output is rendered before any is written, and written atomically, so a bad
// document leaves no file behind.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "command_util.hpp"
#include "kqual/pipeline/compare.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "kqual/report/html.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {
namespace {
// The command, as `kqual --help` lists it.
constexpr CommandDoc kReportCommand{"report",
                             "Render a results.json (from qualify, check, bench or compare) again: --html OUT.html writes one self-contained "
                             "page (inline SVG charts and CSS, no script, nothing fetched); --md OUT.md the memo; with neither, the memo goes "
                             "to stdout. Exit 2 for a file that is not such a results document (nothing is written). docs/report.md"};

namespace fs = std::filesystem;

struct ReportArgs {
  std::string input;
  std::string html;  // "" → no page
  std::string md;    // "" → no memo file (the memo goes to stdout when neither output is asked for)
};

void write_output(const std::string& path, const std::string& text) {
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  write_file_atomic(p, text);
}

int run_report(const ReportArgs& a, const json& doc, const GlobalOptions& g) {
  // Everything is rendered before anything is written; the renderers read the document as
  // qualify/compare write it, and a document shaped otherwise is named as the input's fault.
  std::string html, memo;
  naming_results_file(a.input, doc, [&] {
    const report::ResultsKind kind = report::results_kind(doc);
    if (!a.html.empty()) html = report::render_html(doc);
    if (!a.md.empty() || a.html.empty())
      memo = kind == report::ResultsKind::compare ? report::render_compare_memo(doc) : report::render_qualify_memo(doc);
  });
  json wrote = json::array();
  if (!a.html.empty()) {
    write_output(a.html, html);
    wrote.push_back(a.html);
  }
  if (!a.md.empty()) {
    write_output(a.md, memo);
    wrote.push_back(a.md);
  }
  const std::string schema = doc.at("schema").get<std::string>();
  const bool memo_to_stdout = a.html.empty() && a.md.empty();
  json fields{{"input", a.input}, {"input_schema", schema}, {"wrote", wrote}};
  if (memo_to_stdout) fields["memo"] = memo;
  print_outcome(g, "report", fields, [&] {
    if (memo_to_stdout) return fmt::print("{}", memo);
    std::string decision = "?";
    if (doc.contains("verdict") && doc.at("verdict").is_object()) decision = doc.at("verdict").value("decision", std::string("?"));
    fmt::print("kqual report: {} ({}, verdict {}) → {}\n", a.input, schema, decision,
               fmt::join(wrote.get<std::vector<std::string>>(), ", "));
  });
  return kExitPass;
}

}  // namespace

void add_report_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto [cmd, a] = add_results_command<ReportArgs>(app, g, exit_code, kReportCommand, run_report);
  output_path(cmd->add_option("--html", a->html, "Write the HTML page here (written atomically)"), PathRole::file);
  output_path(cmd->add_option("--md", a->md, "Write the Markdown memo here (written atomically)"), PathRole::file);
}

}  // namespace kqual::run
