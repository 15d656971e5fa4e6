// kqual replay, step 2: the candidate and the contract the run used, found where the run found them
// (refused when they moved or changed since), and copied into the reproducer with the manifest's
// paths rewritten to the copies.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/core/toml_read.hpp"
#include "replay_internal.hpp"

namespace kqual::pipeline::replay_detail {
namespace {

std::string short_hash(const std::string& h) { return h.substr(0, 16); }

// An existing file, or Error(input) saying that what the run recorded moved.
fs::path recorded_file(const fs::path& p, const std::string& what) {
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec).lexically_normal();
  if (!fs::is_regular_file(abs, ec))
    throw_error(ErrorKind::input,
                fmt::format("{} '{}', as the run recorded it, is not there (looked for {}): the candidate folder moved or was "
                            "removed since the run{}",
                            what, p.string(), abs.string(),
                            p.is_relative() ? "; a relative path is read from the working directory: run kqual replay where the "
                                              "recorded run was started"
                                            : ""));
  return abs;
}

void copy_one(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// The source and the files it includes with quotes (#include "x.cuh"), found beside the including
// file and copied to the same place beside its copy. An include that leaves the folder ("../x") is
// not copied: noted.
void copy_source_tree(const fs::path& source, const fs::path& dir, std::vector<std::string>& written,
                      std::vector<std::string>& notes) {
  static const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  const fs::path root = source.parent_path();
  std::vector<fs::path> todo = {source.filename()};
  std::set<fs::path> seen;
  while (!todo.empty()) {
    const fs::path rel = todo.back();
    todo.pop_back();
    if (!seen.insert(rel).second) continue;
    copy_one(root / rel, dir / rel);
    written.push_back((dir.filename() / rel).string());
    std::istringstream in(read_text_file(root / rel));
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const fs::path inc = (rel.parent_path() / m[1].str()).lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(root / inc, ec)) continue;  // a system or toolkit header: found where it was
      if (inc.empty() || *inc.begin() == "..") {
        notes.push_back(fmt::format("{}: #include \"{}\" lies outside the source's folder and was not copied", rel.string(), m[1].str()));
        continue;
      }
      todo.push_back(inc);
    }
  }
}

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// The byte offset of a 1-based column counted in UTF-8 code points (toml++'s columns).
std::size_t byte_of_column(const std::string& line, std::size_t column) {
  std::size_t at = 0;
  for (std::size_t c = 1; c < column && at < line.size(); ++c) {
    ++at;
    while (at < line.size() && (static_cast<unsigned char>(line[at]) & 0xC0) == 0x80) ++at;
  }
  return at;
}

// The end of the TOML string literal starting at `at` (one past its closing quote).
std::size_t end_of_string(const std::string& line, std::size_t at, const fs::path& file, std::size_t line_no) {
  const char q = at < line.size() ? line[at] : '\0';
  if (q != '"' && q != '\'')
    throw_error(ErrorKind::input, fmt::format("{}:{}: expected a string value here", file.string(), line_no));
  for (std::size_t i = at + 1; i < line.size(); ++i) {
    if (q == '"' && line[i] == '\\') {
      ++i;
      continue;
    }
    if (line[i] == q) return i + 1;
  }
  throw_error(ErrorKind::input, fmt::format("{}:{}: a string value spread over lines is not rewritten", file.string(), line_no));
}

}  // namespace

build::Manifest load_side(const RecordedSide& s, const contract::ContractLookup& contracts) {
  const std::string what = s.label == "candidate" ? std::string("the candidate's manifest") : s.label + "'s manifest";
  const fs::path manifest = recorded_file(s.manifest, what);
  if (s.artifact) (void)recorded_file(s.image_input, s.label + "'s image");
  build::Manifest m =
      build::load_manifest(manifest, contracts, s.artifact ? build::ManifestUse::launch_plan : build::ManifestUse::candidate);
  if (!s.artifact && !s.source_sha256.empty() && !m.source.empty()) {
    const std::string now = sha256_hex(read_text_file(m.source));
    if (now != s.source_sha256)
      throw_error(ErrorKind::input, fmt::format("{}'s source {} changed since the run (SHA-256 {}... recorded, {}... now): the "
                                                "reproducer would not hold the kernel that failed",
                                                s.label, m.source.string(), short_hash(s.source_sha256), short_hash(now)));
  }
  return m;
}

contract::ContractLookup recorded_contract_lookup(const Recorded& r, const ReplayOptions& o) {
  contract::ContractSources src = o.sources;
  std::error_code ec;
  if (!r.contract_file.empty() && (r.contract_origin == "user" || r.contract_origin == "project")) {
    // <root>/<name>/contract.toml or <root>/<name>.toml: the root the run looked the name up in.
    const fs::path f = fs::absolute(r.contract_file, ec);
    const fs::path root = f.filename() == "contract.toml" ? f.parent_path().parent_path() : f.parent_path();
    if (fs::is_directory(root, ec)) src.user_dirs.push_back(root);
  }
  if (r.contract_origin == "candidate") src.allow_candidate_contract = true;  // the run was allowed it; its hash is checked
  return contract::ContractLookup(src);
}

void require_recorded_contract(const contract::Contract& c, const Recorded& r, const contract::ContractLookup& contracts) {
  if (c.name() != r.contract_name)
    throw_error(ErrorKind::input, fmt::format("the candidate's manifest names contract {} now; the run was judged by {}", c.name(),
                                              r.contract_name));
  if (r.contract_sha256.empty()) return;
  const contract::ContractProvenance p = contracts.provenance(c);
  if (p.sha256 != r.contract_sha256)
    throw_error(ErrorKind::input,
                fmt::format("contract {}: {} is not the file the run was judged by ({}, SHA-256 {}... recorded, {}... now): inputs "
                            "and references regenerated from it would not be the ones that failed",
                            c.name(), p.file.empty() ? std::string("the built-in contract") : p.file.string(),
                            r.contract_file.string(), short_hash(r.contract_sha256), short_hash(p.sha256)));
}

std::string rewrite_manifest(const std::string& text, const fs::path& file,
                             const std::vector<std::pair<std::string, std::string>>& values, bool source_to_image) {
  toml::table root = parse_toml(text, file);
  toml::table* cand = root["candidate"].as_table();
  if (!cand) throw_error(ErrorKind::input, fmt::format("{}: no [candidate] table", file.string()));
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::vector<std::string> inserted;
  for (const auto& [key, value] : values) {
    const std::string in_file = key == "image" && source_to_image && cand->contains("source") ? "source" : key;
    toml::node* n = cand->get(in_file);
    if (!n) {
      inserted.push_back(key + " = " + toml_string(value));
      continue;
    }
    const std::size_t line_no = n->source().begin.line;
    if (line_no == 0 || line_no > lines.size())
      throw_error(ErrorKind::internal, fmt::format("{}: no source position for candidate.{}", file.string(), in_file));
    std::string& line = lines[line_no - 1];
    const std::size_t b = byte_of_column(line, n->source().begin.column);
    const std::size_t e = end_of_string(line, b, file, line_no);
    std::string prefix = line.substr(0, b);
    if (in_file != key) {
      const std::size_t k = prefix.rfind(in_file);
      if (k == std::string::npos) throw_error(ErrorKind::input, fmt::format("{}:{}: cannot rename {} here", file.string(), line_no, in_file));
      prefix.replace(k, in_file.size(), key);
    }
    line = prefix + toml_string(value) + line.substr(e);
  }
  if (!inserted.empty()) {
    const std::size_t header = cand->source().begin.line;  // the [candidate] line
    if (header == 0 || header > lines.size())
      throw_error(ErrorKind::internal, fmt::format("{}: no source position for [candidate]", file.string()));
    lines.insert(lines.begin() + std::ptrdiff_t(header), inserted.begin(), inserted.end());
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::vector<std::string> copy_side(const build::Manifest& m, const RecordedSide& s, const fs::path& dir, std::vector<std::string>& notes) {
  fs::create_directories(dir);
  std::vector<std::string> written;
  std::vector<std::pair<std::string, std::string>> values;
  bool source_to_image = false;
  if (s.artifact) {
    const fs::path image = fs::absolute(s.image_input);
    copy_one(image, dir / image.filename());
    written.push_back((dir.filename() / image.filename()).string());
    values.emplace_back("image", image.filename().string());
    source_to_image = true;
  } else if (!m.source.empty()) {
    copy_source_tree(m.source, dir, written, notes);
    values.emplace_back("source", m.source.filename().string());
  } else if (!m.image.empty()) {
    copy_one(m.image, dir / m.image.filename());
    written.push_back((dir.filename() / m.image.filename()).string());
    values.emplace_back("image", m.image.filename().string());
  }
  // A contract named by path: named by its name in the copy, found in the reproducer's contracts/.
  if (contract::contract_value_is_path(build::manifest_contract_value(m.file))) values.emplace_back("contract", m.resolved_contract().name());
  write_file_atomic(dir / "kqual.toml", rewrite_manifest(read_text_file(m.file), m.file, values, source_to_image));
  written.push_back((dir.filename() / "kqual.toml").string());
  return written;
}

bool copy_contract(const contract::Contract& c, const fs::path& dir) {
  const fs::path file = contract::declared_file(c);
  if (file.empty()) return false;  // built in: kqual itself holds it
  const fs::path to = dir / c.name();
  fs::create_directories(to);
  copy_one(file, to / "contract.toml");
  // The files a contract names (its reference.py, reference.cu) lie beside it; other contracts'
  // files (*.toml) and folders do not come along.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(file.parent_path(), ec)) {
    if (!e.is_regular_file() || e.path() == file || e.path().extension() == ".toml") continue;
    if (e.file_size() > (std::uintmax_t(64) << 20)) continue;
    copy_one(e.path(), to / e.path().filename());
  }
  if (ec) throw_error(ErrorKind::input, fmt::format("contract {}: cannot list {}: {}", c.name(), file.parent_path().string(), ec.message()));
  return true;
}

}  // namespace kqual::pipeline::replay_detail
