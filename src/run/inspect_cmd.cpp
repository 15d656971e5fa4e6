// `kqual inspect ART [--arch sm_XX]` and `kqual inspect --diff OLD NEW`: artifact identity, no GPU
// needed. The only driver use is optional: asking the live device for its arch when
// --arch is not given. Rule and JSON schema: docs/artifact.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <vector>

#include "kqual/report/provenance.hpp"
#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/json.hpp"
#include "kqual/cuda/driver.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"
#include "command_util.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/version.hpp"

namespace kqual::run {

namespace {

namespace art = kqual::artifact;

struct InspectOptions {
  std::vector<std::string> paths;
  std::string arch;
  bool diff = false;
  std::string kernel;  // the verdict is about the module(s) holding this kernel
  bool full = false;   // every entry and kernel, however many (a library has thousands)
};

// Past this many entries (or kernels of one entry, or kernels of a diff) the listing is summarised
// unless --full asks for every line.
constexpr std::size_t kListed = 32;

// The exit code's reason for one artifact. A multi-module host binary (a library built for many
// architectures) passes when some module loads: modules with no image for the target are normal
// there and fail only when used. With --kernel, the module holding that kernel decides.
struct Verdict {
  bool loads = false;
  std::string reason;
};

Verdict verdict_for(const art::Artifact& a, const art::Selection& s, const std::string& kernel) {
  Verdict v;
  if (!kernel.empty()) {
    std::vector<const art::ModuleSelection*> holding;
    for (const auto& m : s.modules)
      if (art::find_kernel_symbol(art::kernel_symbols(a, m.container), kernel).symbol) holding.push_back(&m);
    if (holding.empty())
      throw_error(ErrorKind::input, fmt::format("{}: kernel '{}' is in none of its {} module(s) (give the C++ name, e.g. "
                                                "add_relu<float>, or the mangled symbol)",
                                                a.name, kernel.substr(0, 200), s.modules.size()));
    const art::ModuleSelection* best = holding.front();
    for (const auto* m : holding)
      if (m->path < best->path) best = m;
    v.loads = best->path != art::LoadPath::incompatible;
    v.reason = fmt::format("kernel {}: module {} loads by {}: {}", kernel, best->container, art::to_string(best->path),
                           best->reason);
    return v;
  }
  if (a.container == art::ContainerKind::host_binary && s.modules.size() > 1) {
    std::size_t loadable = 0;
    for (const auto& m : s.modules) loadable += m.path != art::LoadPath::incompatible;
    v.loads = loadable > 0;
    v.reason = loadable == s.modules.size()
                   ? fmt::format("every one of its {} modules loads on {}", s.modules.size(), s.target.str())
                   : fmt::format("{} of {} modules load on {}; the other {} have no image for it, which is normal for a "
                                 "library built for many architectures and fails only if their kernels are used (ask "
                                 "about one with --kernel NAME)",
                                 loadable, s.modules.size(), s.target.str(), s.modules.size() - loadable);
    return v;
  }
  v.loads = s.path != art::LoadPath::incompatible;
  v.reason = s.reason;
  return v;
}

struct Target {
  art::Arch arch;
  std::string source;  // "--arch", "device 0 (NVIDIA H200)", "assumed (no device: ...)"
};

Target resolve_target(const std::string& requested) {
  if (!requested.empty()) return {art::Arch::parse(requested), "--arch"};
  const std::string why = cuda::driver_unavailable_reason();
  if (why.empty()) {
    // Two attribute queries: no context is created.
    CUdevice dev{};
    int major = 0, minor = 0;
    char name[256] = {};
    KQUAL_CU(cuDeviceGet, &dev, 0);
    KQUAL_CU(cuDeviceGetAttribute, &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    KQUAL_CU(cuDeviceGetAttribute, &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    KQUAL_CU(cuDeviceGetName, name, static_cast<int>(sizeof(name) - 1), dev);
    return {art::Arch{major, minor, 0, false}, fmt::format("device 0 ({})", name)};
  }
  return {art::Arch::parse(KQUAL_DEFAULT_ARCH),
          fmt::format("assumed {} (no device: {}); pass --arch to choose", KQUAL_DEFAULT_ARCH, why)};
}

std::string short_hash(const std::string& h) { return h.substr(0, 12); }
std::string dash_or(long long v, long long none) { return v == none ? "-" : std::to_string(v); }

// A library's entries in a few lines: how many of each kind per architecture.
void print_entry_summary(const art::Artifact& a) {
  std::map<std::string, int> count;
  for (const auto& e : a.entries) ++count[fmt::format("{} {}", to_string(e.kind), e.arch.str())];
  std::vector<std::string> parts;
  for (const auto& [what, n] : count) parts.push_back(fmt::format("{} x{}", what, n));
  fmt::print("  {} entries in {} module(s): {}\n", a.entries.size(), std::max<std::size_t>(a.containers.size(), 1), fmt::join(parts, ", "));
}

void print_artifact(const art::Artifact& a, const art::Selection* sel, bool full) {
  fmt::print("{}  {}  {} B  sha256 {}\n", a.name, to_string(a.container), a.file_bytes, short_hash(a.sha256));
  const bool summary = !full && a.entries.size() > kListed;
  if (summary) {
    print_entry_summary(a);
    fmt::print("  listed: the entry the driver loads for the target{}; --full lists all {} entries and their kernels\n",
               sel && sel->entry ? "" : " (none)", a.entries.size());
  }
  if (!summary || (sel && sel->entry))
    fmt::print("  {:>2}  {:<5} {:<12} {:<4} {:<5} {:>9} {:>9}  {:<12} {}\n", "#", "kind", "arch", "isa", "comp",
               "stored", "image", "sha256", "");
  for (const auto& e : a.entries) {
    const bool chosen = sel && sel->entry && *sel->entry == e.index;
    if (summary && !chosen) continue;
    fmt::print("  {:>2}  {:<5} {:<12} {:<4} {:<5} {:>9} {:>9}  {:<12} {}\n", e.index, to_string(e.kind), e.arch.str(),
               e.kind == art::EntryKind::ptx ? fmt::format("{}.{}", e.ptx_isa_major, e.ptx_isa_minor) : "-",
               to_string(e.compression), e.stored_bytes, e.image_bytes, short_hash(e.sha256),
               chosen ? "<- loaded" : "");
  }
  for (const auto& e : a.entries) {
    if (e.kind != art::EntryKind::sass) continue;
    if (summary && !(sel && sel->entry && *sel->entry == e.index)) continue;
    fmt::print("\n  entry {} {}", e.index, e.arch.str());
    if (e.compiler) fmt::print(": {} {} [{}]", e.compiler->tool, e.compiler->version, e.compiler->options);
    fmt::print("\n    {:<32} {:>5} {:>8} {:>7} {:>7} {:>6} {:>7}  {}\n", "kernel", "regs", "shared", "local", "maxthr",
               "params", "code", "code sha256");
    std::size_t shown = 0;
    for (const auto& k : e.kernels) {
      if (!full && ++shown > kListed) {
        fmt::print("    ... {} more kernel(s); --full lists them\n", e.kernels.size() - kListed);
        break;
      }
      fmt::print("    {:<32} {:>5} {:>8} {:>7} {:>7} {:>6} {:>7}  {}\n", k.name, dash_or(k.registers, -1),
                 k.static_shared_bytes, k.local_bytes, dash_or(k.max_threads, 0), dash_or(k.param_bytes, -1),
                 k.code_bytes, short_hash(k.code_sha256));
    }
  }
  for (const auto& e : a.entries)
    if (e.kind == art::EntryKind::ptx && !e.jit_options.empty() && (!summary || (sel && sel->entry && *sel->entry == e.index)))
      fmt::print("\n  entry {} JIT options: {}\n", e.index, e.jit_options);
}

// Progress lines only for artifacts large enough to take seconds (a library such as libcublasLt,
// hundreds of MB, takes 2-5 s); a kernel's cubin stays silent.
constexpr std::uintmax_t kProgressBytes = std::uintmax_t(64) << 20;  // [bytes]

art::Artifact parse_with_progress(const std::string& path, const Progress& p) {
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  const bool large = !ec && bytes >= kProgressBytes;
  if (large) p.say(fmt::format("parse {} ({:.0f} MB): entries, kernels, SHA-256", path, double(bytes) / 1e6));
  art::Artifact a = art::parse_artifact(path);
  if (large) p.say(fmt::format("parsed: {} entries in {} module(s)", a.entries.size(), a.containers.size()));
  return a;
}

art::ArtifactPairDiff diff_with_progress(const std::string& old_path, const std::string& new_path, const art::Arch& target,
                                         const art::ParseOptions& how, const Progress& p) {
  std::error_code eo, en;
  const std::uintmax_t bytes = std::filesystem::file_size(old_path, eo) + std::filesystem::file_size(new_path, en);
  const bool large = !eo && !en && bytes >= kProgressBytes;
  if (large) p.say(fmt::format("parse {} and {} ({:.0f} MB): entries, kernels, SHA-256; NEW's entries stored as in OLD are "
                               "taken from OLD's parse", old_path, new_path, double(bytes) / 1e6));
  auto pair = art::diff_artifact_files(old_path, new_path, target, how);
  if (large) p.say(fmt::format("parsed and compared: {} and {} entries", pair.old_art.entries.size(), pair.new_art.entries.size()));
  return pair;
}

std::string megabytes(std::uint64_t b) { return fmt::format("{:.1f} MB", double(b) / 1e6); }

// Per architecture: kernels added, removed, changed (machine code or PTX image), identical, and the bytes stored;
// then the GPUs on which a side needs the PTX JIT or has modules with no image at all.
void print_per_arch(const art::ArtifactDiff& d) {
  fmt::print("\n  per architecture (kernels by name, machine code compared; bytes as stored in the file):\n");
  fmt::print("  {:<13} {:>11} {:>23} {:>7} {:>8} {:>8} {:>10}\n", "arch", "entries", "bytes", "added", "removed", "changed",
             "identical");
  for (const auto& a : d.per_arch)
    fmt::print("  {:<13} {:>11} {:>23} {:>7} {:>8} {:>8} {:>10}\n", a.arch, fmt::format("{}->{}", a.old_entries, a.new_entries),
               fmt::format("{}->{}", megabytes(a.old_bytes), megabytes(a.new_bytes)), a.added, a.removed, a.changed, a.identical);
  for (const auto& g : d.loading) {
    if (g.old_jit + g.new_jit + g.old_none + g.new_none == 0) continue;
    const std::size_t old_n = g.old_sass + g.old_jit + g.old_none, new_n = g.new_sass + g.new_jit + g.new_none;
    fmt::print("  on {}: modules through the PTX JIT {} -> {}, with no image {} -> {} (of {} -> {})\n", g.gpu, g.old_jit, g.new_jit,
               g.old_none, g.new_none, old_n, new_n);
  }
}

// `inspect --diff` in words: the loading paths, the entries, and each kernel's code and resources.
void print_diff(const art::ArtifactDiff& d, const art::Artifact& old_a, const art::Artifact& new_a, const Target& t, bool full) {
  fmt::print("target {} ({})\n", d.old_selection.target.str(), t.source);
  fmt::print("  old {}: {} — {}\n", old_a.name, to_string(d.old_selection.path), d.old_selection.reason);
  fmt::print("  new {}: {} — {}\n", new_a.name, to_string(d.new_selection.path), d.new_selection.reason);
  if (d.loading_path_worse)
    fmt::print("  REGRESSION: loading path gets worse ({} -> {}){}\n", to_string(d.old_selection.path),
               to_string(d.new_selection.path),
               d.new_selection.path == art::LoadPath::ptx_jit
                   ? ": predicted first-request (cold start) slowdown from load-time PTX JIT"
                   : ": the new artifact does not load on this target");
  const auto capped = [&](const std::vector<std::string>& v, const char* what) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!full && i == kListed) {
        fmt::print("  ... {} more {}; --full lists them\n", v.size() - kListed, what);
        break;
      }
      fmt::print("  {} {}\n", what, v[i]);
    }
  };
  capped(d.entries_removed, "entry removed:");
  capped(d.entries_added, "entry added:  ");
  std::map<std::string, int> by_status;
  for (const auto& c : d.kernels) ++by_status[c.status];
  if (!full && d.kernels.size() > kListed) {
    std::vector<std::string> parts;
    for (const auto& [st, n] : by_status) parts.push_back(fmt::format("{} {}", n, st));
    fmt::print("  {} kernels: {}; listed: those not identical, {} at most (--full lists every kernel)\n", d.kernels.size(),
               fmt::join(parts, ", "), kListed);
  }
  fmt::print("  {:<32} {:<10} {:>11} {:>13} {:>11}\n", "kernel", "code", "regs", "shared", "local");
  std::size_t shown = 0;
  for (const auto& c : d.kernels) {
    if (!full && d.kernels.size() > kListed && (c.status == "identical" || ++shown > kListed)) continue;
    auto pair = [&](auto get) {
      const std::string a = c.old_kernel ? std::to_string(get(*c.old_kernel)) : "-";
      const std::string b = c.new_kernel ? std::to_string(get(*c.new_kernel)) : "-";
      return a == b ? a : a + "->" + b;
    };
    fmt::print("  {:<32} {:<10} {:>11} {:>13} {:>11}\n", c.name, c.status,
               pair([](const art::KernelInfo& k) { return k.registers; }),
               pair([](const art::KernelInfo& k) { return k.static_shared_bytes; }),
               pair([](const art::KernelInfo& k) { return k.local_bytes; }));
  }
  bool all_same = !d.kernels.empty();
  for (const auto& c : d.kernels) all_same = all_same && c.status == "identical";
  if (all_same) fmt::print("  all kernels identical: any warm-time difference between these artifacts is noise\n");
  print_per_arch(d);
}

int run_inspect(const InspectOptions& o, const GlobalOptions& g) {
  if (o.diff && o.paths.size() != 2) throw_error(ErrorKind::usage, "inspect --diff takes exactly two artifacts: OLD NEW");
  if (!o.diff && o.paths.size() != 1) throw_error(ErrorKind::usage, "inspect takes one artifact (or --diff OLD NEW)");
  const Target t = resolve_target(o.arch);
  const json prov = report::provenance(g.command_line, json());  // no device: inspect reads files only
  const Progress progress = progress_for(g, "inspect");

  if (!o.diff) {
    const art::Artifact a = parse_with_progress(o.paths[0], progress);
    const art::Selection s = art::select_for_arch(a, t.arch);
    const Verdict v = verdict_for(a, s, o.kernel);
    const auto fields = [&] {  // a library's JSON takes a while: made only for --json
      json sj = art::to_json(s, a);
      sj["target_source"] = t.source;
      sj["verdict"] = {{"loads", v.loads}, {"reason", v.reason}, {"kernel", o.kernel.empty() ? json() : json(o.kernel)}};
      return json{{"artifact", art::to_json(a)}, {"selection", std::move(sj)}, {"provenance", prov}};
    };
    print_outcome(g, "inspect", fields, [&] {
      // A summarised library states its verdict first: the reader sees what loads before any entry.
      const bool summary = !o.full && a.entries.size() > kListed;
      auto target_lines = [&] {
        // Where the verdict says more than the loading path (a library of many modules), it comes first: the
        // path is then the worst module's.
        const bool more = v.reason != s.reason;
        if (more) fmt::print("verdict: {} — {}\n", v.loads ? "loads" : "does not load", v.reason);
        fmt::print("target {} ({}): {}{}\n  {}\n", s.target.str(), t.source, more && a.containers.size() > 1 ? "the worst module: " : "",
                   to_string(s.path), s.reason);
      };
      if (summary) target_lines();
      print_artifact(a, &s, o.full);
      if (!summary) {
        fmt::print("\n");
        target_lines();
      }
    });
    return v.loads ? kExitPass : kExitFail;
  }

  // OLD, then NEW with OLD's entries at hand: an entry stored byte for byte as in OLD is not decoded again
  // (each parse spreads its entries over every core, up to 16; docs/artifact.md has the timings). The diff in
  // words shows no hash: neither file's nor a SASS image's is computed, and the code of an entry stored byte for
  // byte in both files is hashed only where a kernel of its name lies in another entry too (--json has them all).
  const art::ParseOptions how{.file_hash = g.json, .sass_image_hashes = g.json, .twin_code_hashes = g.json};
  const auto [old_a, new_a, d] = diff_with_progress(o.paths[0], o.paths[1], t.arch, how, progress);
  const auto fields = [&] {
    json dj = art::to_json(d);
    dj["target_source"] = t.source;
    return json{{"old", art::to_json(old_a)}, {"new", art::to_json(new_a)}, {"diff", std::move(dj)}, {"provenance", prov}};
  };
  print_outcome(g, "inspect-diff", fields, [&] { print_diff(d, old_a, new_a, t, o.full); });
  return d.loading_path_worse ? kExitFail : kExitPass;
}

}  // namespace

void add_inspect_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Artifact identity without a GPU: fatbin/cubin/PTX/host-binary entries, per-kernel resources, compiler, "
      "hashes, and which entry the driver loads on --arch. Exit 1 if nothing loads: for a multi-module host binary "
      "(a library), only when no module loads; with --kernel, when that kernel's module does not load (or, with "
      "--diff, if the loading path gets worse).");
  input_path(cmd->add_option("artifact", opts->paths, "ART, or OLD NEW with --diff")->required()->expected(1, 2), PathRole::file,
             "a cubin, fatbin, PTX file or a host executable/library");
  arch_option(cmd->add_option("--arch", opts->arch,
                  "Target GPU, e.g. sm_90 (default: device 0 if a driver is present, else " KQUAL_DEFAULT_ARCH ")"), ArchUse::device);
  add_quiet_flag(cmd, g);
  cmd->add_flag("--diff", opts->diff, "Compare OLD and NEW: entries, loading path, per-kernel code and resources");
  cmd->add_flag("--full", opts->full,
                "List every entry and kernel (without it, an artifact of more than 32 entries or kernels, such as a library, is "
                "summarised: entries counted per kind and architecture, the loaded entry listed, a diff's changed kernels only)");
  cmd->add_option("--kernel", opts->kernel,
                  "Decide on the module holding this kernel (C++ name as a manifest writes it, or the mangled symbol)");
  cmd->callback([opts, &g, exit_code] { *exit_code = run_inspect(*opts, g); });
}

}  // namespace kqual::run
