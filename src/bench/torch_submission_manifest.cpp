// A PyTorch submission's manifest ([candidate] kind = "torch_module"; torch_submission.hpp).
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "kqual/bench/torch_submission.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/toml_read.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

fs::path manifest_file(const fs::path& path) { return fs::is_directory(path) ? path / "kqual.toml" : path; }

toml::table parse(const fs::path& file) { return parse_toml(read_text_file(file), file); }

[[noreturn]] void bad(const fs::path& file, const std::string& key, const std::string& why) {
  throw_error(ErrorKind::input, fmt::format("{}: {}: {}", file.string(), key, why));
}

void only_keys(const fs::path& file, const toml::table& t, const std::string& table, const std::set<std::string>& keys) {
  for (const auto& [k, v] : t)
    if (!keys.count(std::string(k.str())))
      bad(file, table + "." + std::string(k.str()),
          fmt::format("unknown key (a torch_module manifest takes {})", fmt::join(keys, ", ")));
}

std::string text(const fs::path& file, const toml::table& t, const std::string& table, const std::string& key, bool required,
                 const std::string& fallback = "") {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) bad(file, table + "." + key, "missing");
    return fallback;
  }
  const auto* s = n->as_string();
  if (!s) bad(file, table + "." + key, "expected a string");
  return s->get();
}

std::vector<std::string> strings(const fs::path& file, const toml::table& t, const std::string& table, const std::string& key) {
  std::vector<std::string> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  const auto* arr = n->as_array();
  if (!arr) bad(file, table + "." + key, "expected an array of strings");
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const auto* s = arr->get(i)->as_string();
    if (!s) bad(file, fmt::format("{}.{}[{}]", table, key, i), "expected a string");
    out.push_back(s->get());
  }
  return out;
}

}  // namespace

bool is_torch_submission_manifest(const fs::path& path) {
  const fs::path file = manifest_file(path);
  if (!fs::is_regular_file(file) || file.extension() != ".toml") return false;
  toml::table t;
  try {
    t = parse(file);
  } catch (const Error&) {
    return false;  // not TOML: the kernel manifest's reader says where (FILE:LINE:COLUMN), for every command alike
  }
  const auto* cand = t["candidate"].as_table();
  return cand && (*cand)["kind"].value_or(std::string()) == "torch_module";
}

TorchSubmissionManifest read_torch_submission_manifest(const fs::path& path) {
  const fs::path file = manifest_file(path);
  if (!fs::is_regular_file(file)) throw_error(ErrorKind::input, fmt::format("{}: no such manifest", file.string()));
  const toml::table t = parse(file);
  only_keys(file, t, "", {"candidate", "expect"});
  const auto* cand = t["candidate"].as_table();
  if (!cand) bad(file, "candidate", "missing table");
  // allow_kernels is the judge's, not the submission's: the user names it (--allow-kernel) or the problem does.
  if (cand->contains("allow_kernels"))
    bad(file, "candidate.allow_kernels",
        "a submission cannot allow library kernels for itself: the allow list is the judge's (give --allow-kernel REGEX on the "
        "command line, or the problem's contract names them)");
  only_keys(file, *cand, "candidate", {"name", "description", "kind", "module", "class", "contract", "dtypes"});
  TorchSubmissionManifest m;
  m.file = file;
  if (text(file, *cand, "candidate", "kind", true) != "torch_module")
    bad(file, "candidate.kind", "not \"torch_module\" (a kernel candidate's manifest is read by the build phase)");
  m.name = text(file, *cand, "candidate", "name", true);
  m.description = text(file, *cand, "candidate", "description", false);
  m.contract = text(file, *cand, "candidate", "contract", true);
  m.submission.file = file.parent_path() / text(file, *cand, "candidate", "module", true);
  if (!fs::is_regular_file(m.submission.file))
    bad(file, "candidate.module", fmt::format("{}: no such file", m.submission.file.string()));
  m.submission.class_name = text(file, *cand, "candidate", "class", false, "ModelNew");
  // The dtypes the submission claims (default: every dtype of its contract, as a kernel candidate's
  // [supports] dtypes): a submission written for float32 alone is judged at float32 alone.
  for (const auto& d : strings(file, *cand, "candidate", "dtypes")) {
    const auto dt = parse_dtype(d);
    if (!dt) bad(file, "candidate.dtypes", fmt::format("unknown dtype \"{}\" (f32, bf16, f16, ...: kqual's dtype names)", d));
    m.submission.dtypes.push_back(*dt);
  }
  if (const auto* ex = t["expect"].as_table()) {
    only_keys(file, *ex, "expect", {"rejected_for", "or_rejected_for", "timed_failure"});
    // A timing cheat states the class qualify names while timing it; a broken submission, what check rejects.
    static const std::vector<std::string> timed = {"timer_patched", "timed_output_wrong", "late_result", "harness_tampered"};
    m.expect_timed_failure = text(file, *ex, "expect", "timed_failure", false);
    if (!m.expect_timed_failure.empty() && std::find(timed.begin(), timed.end(), m.expect_timed_failure) == timed.end())
      bad(file, "expect.timed_failure", fmt::format("unknown class {} (one of {})", m.expect_timed_failure, fmt::join(timed, ", ")));
    m.expect_rejected_for = text(file, *ex, "expect", "rejected_for", m.expect_timed_failure.empty());
    m.expect_or = strings(file, *ex, "expect", "or_rejected_for");
    for (const auto& code : m.expect_or)
      if (!kSubmissionFailureNames.parse(code)) bad(file, "expect.or_rejected_for", "unknown failure class " + code);
    if (m.expect_timed_failure.empty() && (!kSubmissionFailureNames.parse(m.expect_rejected_for) || m.expect_rejected_for == "none"))
      bad(file, "expect.rejected_for",
          fmt::format("unknown failure class {} (one of {})", m.expect_rejected_for, kSubmissionFailureNames.choices()));
  }
  return m;
}

}  // namespace kqual::bench
