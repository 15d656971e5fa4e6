// The key of a screen verdict (screen_key.hpp): everything that decides it, hashed.
#include "kqual/pipeline/screen_key.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>

#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/build/toolchain.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/core/version.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/pipeline/screen_shard.hpp"

namespace kqual::pipeline {
namespace fs = std::filesystem;

namespace {

bool lies_inside(const fs::path& file, const fs::path& dir) {
  const fs::path rel = fs::weakly_canonical(file).lexically_relative(fs::weakly_canonical(dir));
  return !rel.empty() && *rel.begin() != "..";
}

// path -> SHA-256 ("absent" when it is not a readable file: creating it later changes the key too).
// NVRTC's version, once per process ("unavailable: <why>" when the library cannot be read).
const std::string& nvrtc_part() {
  static const std::string v = [] {
    try {
      return build::nvrtc_version_text();
    } catch (const std::exception& e) {
      return std::string("unavailable: ") + e.what();
    }
  }();
  return v;
}

json key_file_hash(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return "absent";
  try {
    return sha256_file_hex(file.string());
  } catch (const std::exception&) {
    return "unreadable";
  }
}

// The string values of a TOML table that name files beside `base` (a manifest's source and image, a
// contract's [reference] python file), absolute.
std::vector<fs::path> toml_named_files(const toml::table* t, const fs::path& base) {
  std::vector<fs::path> out;
  if (!t) return out;
  for (const auto& [k, v] : *t)
    if (auto s = v.value<std::string>(); s && !s->empty() && s->find('\n') == std::string::npos) {
      const fs::path p = fs::path(*s).is_absolute() ? fs::path(*s) : base / *s;
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) out.push_back(fs::weakly_canonical(p));
    }
  return out;
}

}  // namespace

VerdictKeys::VerdictKeys(json options, std::string contract, contract::ContractLookup contracts)
    : options_(std::move(options)), contract_(std::move(contract)), lookup_(std::move(contracts)) {}

json VerdictKeys::contract_part(const std::string& value, const fs::path& near) {
  if (value.empty()) return json{{"unresolved", "the manifest names no contract"}};
  const bool path = value.find('/') != std::string::npos || value.ends_with(".toml");
  const std::string cache_key = path ? (near / value).string() : value;
  if (auto it = contracts_.find(cache_key); it != contracts_.end()) return it->second;
  json part;
  try {
    const contract::Contract& c = lookup_.resolve(value, near);
    const fs::path file = contract::declared_file(c);
    if (file.empty()) {
      // A built-in contract is kqual's code: kqual's version and revision (in the key) stand for it.
      part = json{{"built_in", c.name()}};
    } else {
      // A declared contract: its file, its folder when it has one of its own (contract.toml beside
      // reference.py and whatever the reference imports), and the files its [reference] names.
      json files = json::object();
      files[file.string()] = key_file_hash(file);
      if (file.filename() == "contract.toml") files["folder:" + file.parent_path().string()] = candidate_content_sha256(file.parent_path());
      try {
        const toml::table t = toml::parse_file(file.string());
        for (const auto& f : toml_named_files(t["reference"].as_table(), file.parent_path())) files[f.string()] = key_file_hash(f);
      } catch (const std::exception&) {
        // the file's bytes (hashed above) stand for it
      }
      part = json{{"declared", c.name()}, {"files", files}};
    }
  } catch (const std::exception& e) {
    part = json{{"unresolved", e.what()}};  // the candidate is refused; that refusal is keyed too
  }
  contracts_[cache_key] = part;
  return part;
}

json VerdictKeys::parts(const fs::path& dir) {
  json p{{"kqual", fmt::format("{} {}", kVersion, git_revision())}, {"options", options_}};
  p["candidate"] = candidate_content_sha256(dir);
  // Files the manifest names outside the folder (a shared kernel.cu): their bytes decide it too.
  json outside = json::object();
  std::string contract = contract_;
  try {
    const toml::table t = toml::parse_file((dir / "kqual.toml").string());
    for (const auto& f : toml_named_files(t["candidate"].as_table(), dir))
      if (!lies_inside(f, dir)) outside[f.string()] = key_file_hash(f);
    if (contract.empty()) contract = t["candidate"]["contract"].value_or(std::string());
  } catch (const std::exception&) {
    // not TOML: the manifest's bytes (in "candidate") decide its refusal
  }
  p["outside"] = outside;
  p["contract"] = contract_part(contract, dir);
  // The compiler that builds it: libnvrtc is linked dynamically, so a toolkit update changes it
  // without changing kqual.
  p["nvrtc"] = nvrtc_part();
  if (timed_) {
    const json& c = p["contract"];
    const std::string name = c.contains("built_in") ? c["built_in"].get<std::string>()
                             : c.contains("declared") ? c["declared"].get<std::string>() : std::string();
    auto [it, fresh] = baselines_.try_emplace(name);
    if (fresh) {
      json b = json::object();
      if (!name.empty())
        for (const auto& d : find_baselines(name, baseline_roots(baseline_dirs_))) b[d.string()] = candidate_content_sha256(d);
      it->second = b;
    }
    p["baselines"] = it->second;
    p["profile"] = profile_.empty() ? json("") : key_file_hash(profile_);
  }
  return p;
}

void VerdictKeys::time_against(std::vector<fs::path> baseline_dirs, fs::path profile) {
  timed_ = true;
  baseline_dirs_ = std::move(baseline_dirs);
  profile_ = std::move(profile);
  baselines_.clear();
}

std::string VerdictKeys::key(const fs::path& dir) {
  try {
    return sha256_hex(parts(dir).dump());
  } catch (const Error&) {
    return "";
  }
}

}  // namespace kqual::pipeline
