// Triton cache → candidate folder (include/kqual/build/triton.hpp; docs/manifest.md "Triton kernels").
//
// What Triton 3.x writes per compiled kernel (python/triton/compiler/compiler.py and
// runtime/cache.py): a folder named by the compile key holding <name>.{ttir,ttgir,llir,ptx,cubin},
// <name>.json (the metadata: the compile options — num_warps, num_ctas, num_stages, ... — plus
// "name" from the PTX .entry, "shared", "target" {backend, arch, warp_size}, and in newer versions
// global/profile scratch sizes), and __grp__<name>.json = {"child_paths": {file name: path}}.
// The launcher passes num_warps * warp_size threads per block, "shared" bytes of dynamic shared
// memory, the kernel's non-constexpr arguments, then (when the metadata has the keys) a global
// scratch and a profile scratch pointer — null when their size is 0.
#include "kqual/build/triton.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "kqual/build/manifest.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"

namespace kqual::build {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_input(const fs::path& file, const std::string& what) {
  throw_error(ErrorKind::input, fmt::format("{}: {}", file.string(), what));
}

json read_json_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail_input(file, "cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::parse_error& e) {
    fail_input(file, fmt::format("malformed JSON (not Triton metadata as written by Triton 3.x): {}", e.what()));
  }
}

const json& need(const fs::path& file, const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) fail_input(file, fmt::format("missing key \"{}\" (Triton 3.x metadata has it)", key));
  return j.at(key);
}

std::int64_t need_int(const fs::path& file, const json& j, const char* key, std::int64_t lo, std::int64_t hi) {
  const json& v = need(file, j, key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
    fail_input(file, fmt::format("\"{}\" is {}, expected an integer in [{}, {}]", key, v.dump(), lo, hi));
  return v.get<std::int64_t>();
}

std::optional<std::uint64_t> opt_size(const fs::path& file, const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
    fail_input(file, fmt::format("\"{}\" is {}, expected a size in bytes", key, v.dump()));
  return v.get<std::uint64_t>();
}

bool opt_bool(const fs::path& file, const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return false;
  if (!j.at(key).is_boolean()) fail_input(file, fmt::format("\"{}\" is {}, expected true or false", key, j.at(key).dump()));
  return j.at(key).get<bool>();
}

std::string list_labels(const std::vector<TritonCacheEntry>& v) {
  std::string s;
  for (const auto& e : v) s += "\n  " + e.label();
  return s;
}

// A TOML basic string (the values we write come from file names and JSON).
std::string toml_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The kernel's arguments as Triton's IR declares them (<stem>.source in Triton 3.6, else
// <stem>.ttir): "tt.func public @NAME(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc(...),
// ...)". constexpr arguments are not in it, so it lines up with the cubin's parameters. Each item:
// "x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}" (the loc() dropped). Empty when not found.
std::vector<std::string> triton_ir_arguments(const TritonCacheEntry& e, const std::string& name) {
  for (const char* ext : {".source", ".ttir"}) {
    std::ifstream in(e.dir / (e.stem + ext), std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string t = ss.str();
    const std::string head = "tt.func public @" + name + "(";
    const auto at = t.find(head);
    if (at == std::string::npos) continue;
    std::vector<std::string> args;
    std::string cur;
    int depth = 0;
    bool quoted = false;
    for (std::size_t i = at + head.size(); i < t.size(); ++i) {
      const char c = t[i];
      if (c == '"') quoted = !quoted;
      if (!quoted && (c == '(' || c == '<' || c == '{' || c == '[')) ++depth;
      if (!quoted && (c == ')' || c == '>' || c == '}' || c == ']')) {
        if (depth == 0 && c == ')') {
          if (!cur.empty()) args.push_back(cur);
          break;
        }
        --depth;
      }
      if (!quoted && depth == 0 && c == ',') {
        args.push_back(cur);
        cur.clear();
        continue;
      }
      cur += c;
    }
    for (auto& a : args) {
      if (const auto l = a.find(" loc("); l != std::string::npos) a.resize(l);
      const auto b = a.find_first_not_of(" \n\t%");
      a = b == std::string::npos ? std::string() : a.substr(b);
      for (auto& ch : a)
        if (ch == '\n' || ch == '\t') ch = ' ';
    }
    return args;
  }
  return {};
}

}  // namespace

std::string TritonCacheEntry::label() const { return dir.filename().string() + "/" + stem; }

std::vector<TritonCacheEntry> find_triton_kernels(const fs::path& cache_dir) {
  std::error_code ec;
  if (!fs::is_directory(cache_dir, ec))
    throw_error(ErrorKind::input, fmt::format("{}: not a folder (give a Triton cache, e.g. ~/.triton/cache, or one "
                                              "of its entries)", cache_dir.string()));
  // The root itself (one entry given) and its sub-folders (the cache root given).
  std::vector<fs::path> dirs{cache_dir};
  for (const auto& d : fs::directory_iterator(cache_dir, ec))
    if (d.is_directory()) dirs.push_back(d.path());
  std::vector<TritonCacheEntry> out;
  for (const auto& dir : dirs) {
    std::set<std::string> stems;
    for (const auto& f : fs::directory_iterator(dir, ec)) {
      if (!f.is_regular_file()) continue;
      const std::string n = f.path().filename().string();
      if (f.path().extension() == ".cubin") stems.insert(f.path().stem().string());
      if (n.starts_with("__grp__") && n.ends_with(".json") && n.size() > 12) stems.insert(n.substr(7, n.size() - 12));
    }
    for (const auto& s : stems) {
      TritonCacheEntry e;
      e.dir = dir;
      e.stem = s;
      auto present = [&](const std::string& name) { return fs::is_regular_file(dir / name, ec) ? dir / name : fs::path(); };
      e.cubin = present(s + ".cubin");
      e.metadata = present(s + ".json");
      e.group = present("__grp__" + s + ".json");
      out.push_back(std::move(e));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.label() < b.label(); });
  if (out.empty())
    throw_error(ErrorKind::input, fmt::format("{}: no Triton kernel here (no <name>.cubin or __grp__<name>.json in it or "
                                              "its sub-folders)", cache_dir.string()));
  return out;
}

TritonMetadata read_triton_metadata(const TritonCacheEntry& e) {
  if (e.metadata.empty())
    fail_input(e.dir / (e.stem + ".json"),
               fmt::format("missing: the Triton metadata of {} (kernel name, num_warps, shared memory) is not in the cache "
                           "entry", e.label()));
  if (!e.group.empty()) {
    // The group names the files of one compile; its paths are where Triton wrote them (another
    // machine's, for a copied cache), so only the file names are checked.
    const json g = read_json_file(e.group);
    if (!g.is_object() || !g.contains("child_paths") || !(g["child_paths"].is_object() || g["child_paths"].is_array()))
      fail_input(e.group, "malformed Triton group file: expected {\"child_paths\": {file: path}}");
  }
  const fs::path& f = e.metadata;
  const json j = read_json_file(f);
  if (!j.is_object()) fail_input(f, "malformed Triton metadata: expected a JSON object");
  TritonMetadata m;
  const json& name = need(f, j, "name");
  if (!name.is_string() || name.get<std::string>().empty()) fail_input(f, "\"name\" must be the kernel's name (a string)");
  m.name = name.get<std::string>();
  const json& target = need(f, j, "target");
  if (!target.is_object()) fail_input(f, fmt::format("\"target\" is {}, expected {{\"backend\", \"arch\", \"warp_size\"}}", target.dump()));
  const json& backend = need(f, target, "backend");
  if (!backend.is_string()) fail_input(f, "\"target.backend\" must be a string");
  m.backend = backend.get<std::string>();
  if (m.backend != "cuda")
    fail_input(f, fmt::format("target backend \"{}\" (arch {}): not a CUDA kernel; kqual runs CUDA cubins", m.backend,
                              need(f, target, "arch").dump()));
  m.arch = static_cast<int>(need_int(f, target, "arch", 10, 1299));
  m.warp_size = static_cast<int>(need_int(f, target, "warp_size", 1, 64));
  m.num_warps = static_cast<int>(need_int(f, j, "num_warps", 1, 64));
  m.shared = static_cast<std::uint64_t>(need_int(f, j, "shared", 0, std::int64_t(1) << 32));
  if (j.contains("num_ctas")) m.num_ctas = static_cast<int>(need_int(f, j, "num_ctas", 1, 64));
  if (j.contains("num_stages")) m.num_stages = static_cast<int>(need_int(f, j, "num_stages", 0, 1024));
  if (j.contains("cluster_dims") && !j["cluster_dims"].is_null()) {
    const json& c = j["cluster_dims"];
    if (!c.is_array() || c.size() > 3) fail_input(f, fmt::format("\"cluster_dims\" is {}, expected [x, y, z]", c.dump()));
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (!c[i].is_number_integer() || c[i].get<int>() < 1) fail_input(f, fmt::format("\"cluster_dims\" is {}", c.dump()));
      m.cluster_dims[i] = c[i].get<int>();
    }
  }
  m.cooperative = opt_bool(f, j, "launch_cooperative_grid");
  m.pdl = opt_bool(f, j, "launch_pdl");
  m.global_scratch_size = opt_size(f, j, "global_scratch_size");
  m.profile_scratch_size = opt_size(f, j, "profile_scratch_size");
  m.global_scratch_align = opt_size(f, j, "global_scratch_align").value_or(1);
  m.profile_scratch_align = opt_size(f, j, "profile_scratch_align").value_or(1);
  if (j.contains("hash") && j["hash"].is_string()) m.hash = j["hash"].get<std::string>();
  if (j.contains("triton_version") && j["triton_version"].is_string()) m.triton_version = j["triton_version"].get<std::string>();
  return m;
}

std::string triton_manifest_text(const TritonCacheEntry& e, const TritonMetadata& m, const artifact::Arch& cubin_arch,
                                 const std::vector<artifact::ParamInfo>& params, std::vector<std::string>* placeholders) {
  std::vector<std::string> todo;
  const int block = m.num_warps * m.warp_size;
  // The trailing scratch pointers, named when the metadata says the kernel takes them.
  struct Trailing { std::string name, what; std::optional<std::uint64_t> size; std::uint64_t align; };
  std::vector<Trailing> trailing;
  if (m.global_scratch_size) trailing.push_back({"triton_global_scratch", "Triton's global scratch pointer", m.global_scratch_size, m.global_scratch_align});
  if (m.profile_scratch_size) trailing.push_back({"triton_profile_scratch", "Triton's profile scratch pointer", m.profile_scratch_size, m.profile_scratch_align});
  std::size_t n_trailing = std::min(trailing.size(), params.size());
  for (std::size_t i = 0; i < n_trailing; ++i)
    if (params[params.size() - n_trailing + i].size != 8) n_trailing = 0;  // not pointers: leave all to the user
  const std::size_t n_user = params.size() - n_trailing;
  std::vector<std::string> ir_args = triton_ir_arguments(e, m.name);
  if (ir_args.size() != n_user) ir_args.clear();  // does not line up: show sizes only

  std::string t;
  t += fmt::format("# Generated by `kqual import-triton` from the Triton cache entry {}\n", e.dir.string());
  t += fmt::format("#   {}.json (metadata) and {}.cubin (copied here).\n", e.stem, e.stem);
  t += fmt::format("# Triton compiled kernel `{}` for cuda:{} ({} SASS in the cubin): num_warps {} x warp size {} = "
                   "{} threads per block, {} B of dynamic shared memory{}.\n",
                   m.name, m.arch, cubin_arch.str(), m.num_warps, m.warp_size, block, m.shared,
                   m.num_stages ? fmt::format(", num_stages {}", m.num_stages) : "");
  if (!m.hash.empty())
    t += fmt::format("# Triton {}compile key: {}\n", m.triton_version.empty() ? "" : m.triton_version + ", ", m.hash);
  if (m.pdl) t += "# launch_pdl is set: Triton launches it with programmatic dependent launch; kqual launches it plainly.\n";
  t += "#\n# kqual refuses this manifest (kqual check names each key) until every \"TODO:\" value below is replaced.\n";
  t += "#\n# The kernel's parameters, as its cubin records them (.nv.info: sizes and offsets, no types).\n";
  t += "# Triton drops constexpr parameters (and, in some versions, integers specialized to 1) from the\n";
  t += "# signature: map exactly these, in this order. 8 B: a pointer (a contract tensor or a [[scratch]]\n";
  t += "# buffer) or a 64-bit dim (\"n:i64\"); 4 B: a 32-bit dim (\"n:i32\"). Float scalars cannot be mapped.\n";
  if (!ir_args.empty()) {
    t += fmt::format("# Their Triton names and types are from {}.source / .ttir. A tt.divisibility = 16 on an integer\n", e.stem);
    t += "# means this compile assumed the value divisible by 16: claim only such sizes ([supports]), or\n";
    t += "# kqual's cases (1, primes, tile + 1, ...) will show what it does with the others.\n";
  }
  t += "#   #   offset  size  what\n";
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    std::string what = i < n_user ? (p.size == 8 ? "pointer or 64-bit integer" : p.size == 4 ? "32-bit integer (or f32)"
                                                                                               : fmt::format("{}-byte value", p.size))
                                  : trailing[i - n_user].what + " (mapped below)";
    if (i < ir_args.size()) what = "Triton: " + ir_args[i];
    t += fmt::format("#   {:<3} {:>6} {:>5}  {}\n", p.ordinal, p.offset, p.size, what);
  }
  if (params.empty()) t += "#   (the cubin records none: the kernel takes no parameters)\n";

  t += "\n[candidate]\n";
  t += fmt::format("name        = {}\n", toml_str(m.name));
  t += fmt::format("description = {}\n", toml_str("Triton kernel " + m.name + " imported from " + e.label()));
  t += fmt::format("contract    = {}\n", toml_str(std::string(kPlaceholderPrefix) +
                                                 " the contract this kernel implements (kqual qualify lists them)"));
  todo.push_back("candidate.contract");
  t += fmt::format("image       = {}\n", toml_str(e.stem + ".cubin"));

  t += "\n[supports]\n";
  t += "# Triton specializes pointers divisible by 16 (tt.divisibility): keep 16 unless it was compiled otherwise.\n";
  t += "min_alignment_bytes = 16\n";
  t += fmt::format("dtypes = [{}]\n", toml_str(std::string(kPlaceholderPrefix) + " the dtype(s) this compile handles, e.g. f32"));
  todo.push_back("supports.dtypes[0]");

  for (std::size_t i = 0; i < n_trailing; ++i) {
    const auto& tr = trailing[i];
    t += fmt::format("\n[[scratch]]   # {}: {} B per program, aligned to {} B\n", tr.what, *tr.size, tr.align);
    t += fmt::format("name  = {}\n", toml_str(tr.name));
    if (*tr.size == 0) {
      t += "bytes = 256   # unused by the kernel (Triton passes a null pointer); guarded, so a stray write is seen\n";
    } else {
      t += fmt::format("bytes = {}\n", toml_str(fmt::format("{} {} x the number of programs in the grid (e.g. \"{} * "
                                                            "cdiv(n, 1024)\")",
                                                            kPlaceholderPrefix, *tr.size, *tr.size)));
      todo.push_back(fmt::format("scratch[{}].bytes", i));
    }
  }

  t += "\n[[launch]]\n";
  t += fmt::format("kernel = {}\n", toml_str(m.name));
  t += fmt::format("grid   = {}\n", toml_str(std::string(kPlaceholderPrefix) +
                                             " Triton's grid over the contract's dims, e.g. cdiv(n, 1024) or [x, y, z]"));
  todo.push_back("launch[0].grid");
  t += fmt::format("block  = {}          # num_warps {} x warp size {}\n", block, m.num_warps, m.warp_size);
  t += fmt::format("shared = {}          # [B] dynamic shared memory (Triton's metadata \"shared\")\n", m.shared);
  t += "args   = [";
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (i) t += ", ";
    if (i < n_user) {
      t += toml_str(i < ir_args.size() ? fmt::format("{} parameter {} ({} B): {}", kPlaceholderPrefix, params[i].ordinal,
                                                     params[i].size, ir_args[i].substr(0, ir_args[i].find(':')))
                                       : fmt::format("{} parameter {} ({} B)", kPlaceholderPrefix, params[i].ordinal,
                                                     params[i].size));
      todo.push_back(fmt::format("launch[0].args[{}]", i));
    } else {
      t += toml_str(trailing[i - n_user].name);
    }
  }
  t += "]\n";
  if (placeholders) *placeholders = std::move(todo);
  return t;
}

TritonImport import_triton_kernel(const TritonImportOptions& o) {
  if (o.out.empty()) throw_error(ErrorKind::usage, "import-triton: --out DIR (the candidate folder to create) is required");
  const std::vector<TritonCacheEntry> all = find_triton_kernels(o.cache_dir);
  std::vector<TritonCacheEntry> picked;
  if (o.kernel.empty()) {
    picked = all;
  } else {
    for (const auto& e : all)
      if (e.stem == o.kernel || e.label() == o.kernel || e.dir.filename().string() == o.kernel) picked.push_back(e);
    if (picked.empty()) {  // the metadata's name may differ from the file name
      for (const auto& e : all) {
        if (e.metadata.empty()) continue;
        try {
          if (read_triton_metadata(e).name == o.kernel) picked.push_back(e);
        } catch (const Error&) {
          // unreadable entries cannot match by metadata name; a file-name match reports them
        }
      }
    }
    if (picked.empty())
      throw_error(ErrorKind::usage, fmt::format("{}: no Triton kernel '{}'; the cache holds:{}", o.cache_dir.string(),
                                                o.kernel, list_labels(all)));
  }
  if (picked.size() > 1)
    throw_error(ErrorKind::usage,
                fmt::format("{}: {} Triton kernels{}; pick one with --kernel NAME or FOLDER/NAME:{}", o.cache_dir.string(),
                            picked.size(), o.kernel.empty() ? "" : " named '" + o.kernel + "'", list_labels(picked)));
  TritonImport r;
  r.entry = picked.front();
  const TritonCacheEntry& e = r.entry;
  r.meta = read_triton_metadata(e);
  const TritonMetadata& m = r.meta;
  if (e.cubin.empty())
    fail_input(e.dir / (e.stem + ".cubin"), "missing: the cache entry has metadata but no cubin (was it compiled for CUDA?)");
  if (m.num_ctas > 1 || m.cluster_dims[0] * m.cluster_dims[1] * m.cluster_dims[2] > 1)
    fail_input(e.metadata, fmt::format("num_ctas {} / cluster_dims [{}, {}, {}]: a thread-block-cluster launch, which "
                                       "kqual's launch plans do not make; refused rather than run without its cluster",
                                       m.num_ctas, m.cluster_dims[0], m.cluster_dims[1], m.cluster_dims[2]));
  if (m.cooperative)
    fail_input(e.metadata, "launch_cooperative_grid is set: the kernel needs a cooperative launch, which kqual's launch "
                           "plans do not make; refused rather than run it non-cooperatively");

  const artifact::Artifact a = artifact::parse_artifact(e.cubin.string());
  if (a.container != artifact::ContainerKind::cubin || a.entries.size() != 1)
    fail_input(e.cubin, fmt::format("is a {}, not a cubin (Triton writes one ELF cubin per kernel)", to_string(a.container)));
  const artifact::Entry& img = a.entries.front();
  r.cubin_arch = img.arch;
  if (img.arch.number() != m.arch)
    fail_input(e.cubin, fmt::format("holds {} SASS, but its metadata {} says Triton compiled it for cuda:{} (sm_{}): the "
                                    "cache entry is not one compile; recompile it",
                                    img.arch.str(), e.metadata.filename().string(), m.arch, m.arch));
  if (!o.arch.empty()) {
    const artifact::Selection s = artifact::select_for_arch(a, artifact::Arch::parse(o.arch));
    if (s.path == artifact::LoadPath::incompatible)
      fail_input(e.cubin, fmt::format("holds {} SASS, compiled for another GPU than the target {}: {}", img.arch.str(),
                                      s.target.str(), s.reason));
  }
  const auto k = std::find_if(img.kernels.begin(), img.kernels.end(), [&](const auto& x) { return x.name == m.name; });
  if (k == img.kernels.end()) {
    std::string names;
    for (const auto& x : img.kernels) names += (names.empty() ? "" : ", ") + x.name;
    fail_input(e.cubin, fmt::format("has no kernel '{}' (the name in {}); it holds: {}", m.name,
                                    e.metadata.filename().string(), names.empty() ? "none" : names));
  }
  r.params = k->params;
  r.manifest = triton_manifest_text(e, m, img.arch, r.params, &r.placeholders);

  // Written whole or not at all: a temporary sibling folder renamed into place.
  std::error_code ec;
  if (fs::exists(o.out, ec))
    throw_error(ErrorKind::usage, fmt::format("{}: already exists; import-triton creates a new candidate folder", o.out.string()));
  const fs::path parent = fs::absolute(o.out).parent_path();
  if (!fs::is_directory(parent, ec)) throw_error(ErrorKind::usage, fmt::format("{}: no such folder", parent.string()));
  const fs::path tmp = parent / fmt::format(".{}.tmp-{:x}", o.out.filename().string(), std::random_device{}());
  try {
    fs::create_directory(tmp);
    fs::copy_file(e.cubin, tmp / (e.stem + ".cubin"));
    write_file_atomic(tmp / "kqual.toml", r.manifest);
    fs::rename(tmp, o.out);
  } catch (const fs::filesystem_error& err) {
    fs::remove_all(tmp, ec);
    throw_error(ErrorKind::io, fmt::format("{}: cannot write the candidate folder: {}", o.out.string(), err.what()));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  r.out = o.out;
  return r;
}

}  // namespace kqual::build
