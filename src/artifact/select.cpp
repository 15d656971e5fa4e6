// Which entry the CUDA driver loads on a device, and what changes between two artifacts.
// The rule and the source of each part of it: docs/artifact.md "Which entry the driver loads".
#include <algorithm>
#include <future>
#include <map>
#include <span>
#include <string_view>
#include <unordered_map>
#include <tuple>
#include <vector>

#include "kqual/artifact/artifact.hpp"
#include "kqual/core/enum_names.hpp"
#include "reader.hpp"
#include "reuse.hpp"

namespace kqual::artifact {

namespace {
constexpr EnumNames<LoadPath, 3> kLoadPathNames{
    {{{LoadPath::native_sass, "native_sass"}, {LoadPath::ptx_jit, "ptx_jit"}, {LoadPath::incompatible, "incompatible"}}}};
}  // namespace

const char* to_string(LoadPath p) { return kLoadPathNames.name(p); }

namespace {

// SASS for sm_X.y runs on devices of CC X.z, z >= y (same major); arch-specific 'a' SASS only on
// exactly X.y; family-specific 'f' SASS on the same family with z >= y.
bool sass_runs_on(const Arch& e, const Arch& dev) {
  if (e.major != dev.major || e.minor > dev.minor) return false;
  return e.suffix != 'a' || e.minor == dev.minor;
}
// PTX for compute_XY JIT-compiles for any CC >= XY; 'a' PTX only for exactly XY; 'f' PTX for the
// same family (same major) with minor >= y.
bool ptx_jits_for(const Arch& e, const Arch& dev) {
  if (e.suffix == 'a') return e.number() == dev.number();
  if (e.suffix == 'f') return e.major == dev.major && e.minor <= dev.minor;
  return e.number() <= dev.number();
}
int specificity(const Arch& a) { return a.suffix == 'a' ? 2 : a.suffix == 'f' ? 1 : 0; }

// The archs of one module's entries of one kind, each once ("sm_75, sm_80, sm_120"): a reason
// names what this module holds, not the whole library's thousands of entries.
std::string list_archs(std::span<const Entry* const> module, EntryKind k) {
  std::vector<std::string> seen;
  for (const Entry* e : module)
    if (e->kind == k && std::find(seen.begin(), seen.end(), e->arch.str()) == seen.end()) seen.push_back(e->arch.str());
  std::string s;
  for (const auto& x : seen) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

// The modules (fatbin containers) in the order their first entry appears, each with its entries in file
// order: one pass over the entries, so that a library of thousands of modules and tens of thousands of
// entries is not scanned once per module (select_for_arch runs ~18 times for one `inspect --diff`).
struct Module {
  std::size_t container = 0;
  std::vector<const Entry*> entries;
};
std::vector<Module> modules_of(const Artifact& art) {
  std::vector<Module> out;
  std::unordered_map<std::size_t, std::size_t> slot;
  for (const auto& e : art.entries) {
    const auto [it, fresh] = slot.try_emplace(e.container, out.size());
    if (fresh) out.push_back(Module{e.container, {}});
    out[it->second].entries.push_back(&e);
  }
  if (out.empty()) out.push_back(Module{});  // no entries: one empty module that loads nothing
  return out;
}

std::string entry_key(const Entry& e) { return std::string(to_string(e.kind)) + " " + e.arch.str(); }

// Two kernels' code (PTX: two images) the same: by their hashes where both have one; else (a pair parsed
// without twins' hashes: ParseOptions::twin_code_hashes) the same when both lie in entries equal byte for byte,
// and undecided where a side left unhashed as a twin meets an entry of other bytes: that side's entry is
// appended to `undecided` (when given) and the pair counts as changed. An empty hash equals nothing.
using Undecided = std::vector<const Entry*>;
bool same_code(std::string_view old_hash, const Entry& old_e, std::string_view new_hash, const Entry& new_e, Undecided* undecided) {
  if (!old_hash.empty() && !new_hash.empty()) return old_hash == new_hash;
  if (old_e.twin != 0 && old_e.twin == new_e.twin) return true;
  if (undecided) {
    if (old_hash.empty() && old_e.twin) undecided->push_back(&old_e);
    if (new_hash.empty() && new_e.twin) undecided->push_back(&new_e);
  }
  return false;
}

}  // namespace

namespace {

ModuleSelection select_module(const Module& module, const Arch& dev) {
  ModuleSelection sel;
  sel.container = module.container;
  const Entry* best = nullptr;
  for (const Entry* ep : module.entries) {
    const Entry& e = *ep;
    if (e.kind != EntryKind::sass || !sass_runs_on(e.arch, dev)) continue;
    if (!best || e.arch.minor > best->arch.minor ||
        (e.arch.minor == best->arch.minor && specificity(e.arch) > specificity(best->arch)))
      best = &e;
  }
  if (best) {
    sel.path = LoadPath::native_sass;
    sel.entry = best->index;
    sel.reason = fmt::format("{} SASS (entry {}) runs natively on {}: no compilation at load", best->arch.str(),
                             best->index, dev.str());
    return sel;
  }
  for (const Entry* ep : module.entries) {
    const Entry& e = *ep;
    if (e.kind != EntryKind::ptx || !ptx_jits_for(e.arch, dev)) continue;
    auto key = [](const Entry& x) {
      return std::tuple(x.arch.number(), specificity(x.arch), x.ptx_isa_major * 10 + x.ptx_isa_minor);
    };
    if (!best || key(e) > key(*best)) best = &e;
  }
  if (best) {
    sel.path = LoadPath::ptx_jit;
    sel.entry = best->index;
    sel.reason = fmt::format(
        "no SASS runs on {} (SASS present: {}); the driver JIT-compiles {} PTX (entry {}, PTX ISA {}.{}) when the "
        "module loads, in every process whose JIT cache does not hold it yet (cold start: tens to hundreds of ms per "
        "module); the driver must support PTX ISA {}.{}",
        dev.str(), list_archs(module.entries, EntryKind::sass), best->arch.str(), best->index, best->ptx_isa_major,
        best->ptx_isa_minor, best->ptx_isa_major, best->ptx_isa_minor);
    return sel;
  }
  sel.path = LoadPath::incompatible;
  sel.reason = fmt::format(
      "nothing loads on {}: no SASS sm_{}y with y <= {} (SASS present: {}) and no PTX for {} or lower "
      "(PTX present: {}); loading fails with CUDA_ERROR_NO_BINARY_FOR_GPU",
      dev.str(), dev.major, dev.minor, list_archs(module.entries, EntryKind::sass), Arch{dev.major, dev.minor, 0, true}.str(),
      list_archs(module.entries, EntryKind::ptx));
  return sel;
}

}  // namespace

Selection select_for_arch(const Artifact& art, const Arch& target) {
  Selection sel;
  sel.target = target;
  sel.target.virtual_ = false;
  sel.target.suffix = 0;  // a device has a compute capability; 'a'/'f' are properties of code
  const ModuleSelection* worst = nullptr;
  for (const Module& m : modules_of(art)) sel.modules.push_back(select_module(m, sel.target));
  for (const auto& m : sel.modules)
    if (!worst || m.path > worst->path) worst = &m;
  sel.path = worst->path;
  sel.entry = worst->entry;
  if (sel.modules.size() == 1) {
    sel.reason = worst->reason;
    return sel;
  }
  // A library: how many modules load which way, which ones have no image, and the worst one's reason.
  std::size_t native = 0, jit = 0;
  std::vector<std::size_t> none;
  for (const auto& m : sel.modules) {
    if (m.path == LoadPath::native_sass) ++native;
    else if (m.path == LoadPath::ptx_jit) ++jit;
    else none.push_back(m.container);
  }
  std::string listed;
  for (std::size_t i = 0; i < none.size() && i < 8; ++i) listed += (i ? ", " : "") + std::to_string(none[i]);
  if (none.size() > 8) listed += fmt::format(", … ({} in all)", none.size());
  sel.reason = fmt::format("{} modules (fatbin containers): {} native SASS, {} PTX JIT, {} with no image for {}{}; the worst: "
                           "module {}: {}",
                           sel.modules.size(), native, jit, none.size(), sel.target.str(),
                           none.empty() ? "" : " (modules " + listed + ")", worst->container, worst->reason);
  return sel;
}

namespace {

// Per architecture: SASS kernels by name (machine code compared), PTX entries by name (the image compared).
// Names and hashes are views into the two artifacts (tens of thousands of kernels a library: no copies);
// each architecture on a thread of its own (they share nothing), so a library's dozen take the time of its
// largest.
std::vector<ArchDiff> per_arch_diff(const Artifact& o, const Artifact& n, Undecided* undecided) {
  using Entries = std::vector<const Entry*>;
  std::map<std::tuple<int, int, std::string>, Entries[2]> arches;  // (0 SASS / 1 PTX, number, arch) -> old, new
  const Artifact* sides[2] = {&o, &n};
  for (int s = 0; s < 2; ++s)
    for (const auto& e : sides[s]->entries)
      if (e.kind == EntryKind::sass || e.kind == EntryKind::ptx)
        arches[{e.kind == EntryKind::sass ? 0 : 1, e.arch.number(), e.arch.str()}][s].push_back(&e);
  auto one_arch = [](const std::string& arch, const Entries (&entries)[2], Undecided* unjudged) {
    ArchDiff a;
    a.arch = arch;
    // kernel -> code hash (PTX: the image's) and its entry
    std::unordered_map<std::string_view, std::pair<std::string_view, const Entry*>> code[2];
    for (int s = 0; s < 2; ++s)
      for (const Entry* e : entries[s]) {
        (s == 0 ? a.old_bytes : a.new_bytes) += e->stored_bytes;
        if (e->kind == EntryKind::sass)
          for (const auto& k : e->kernels) code[s].insert_or_assign(k.name, std::pair{std::string_view(k.code_sha256), e});
        else
          for (const auto& k : e->ptx_entries) code[s].insert_or_assign(k, std::pair{std::string_view(e->sha256), e});
      }
    a.old_entries = entries[0].size();
    a.new_entries = entries[1].size();
    for (const auto& [name, old_code] : code[0]) {
      const auto it = code[1].find(name);
      if (it == code[1].end()) ++a.removed;
      else if (same_code(old_code.first, *old_code.second, it->second.first, *it->second.second, unjudged)) ++a.identical;
      else ++a.changed;
    }
    for (const auto& [name, hash] : code[1]) a.added += !code[0].count(name);
    return a;
  };
  std::vector<std::future<ArchDiff>> running;
  std::vector<Undecided> undecided_per_arch(arches.size());  // one per thread
  std::size_t i = 0;
  for (const auto& [key, entries] : arches)
    running.push_back(std::async(std::launch::async, one_arch, std::cref(std::get<2>(key)), std::cref(entries),
                                 undecided ? &undecided_per_arch[i++] : nullptr));
  std::vector<ArchDiff> out;
  for (auto& r : running) out.push_back(r.get());
  if (undecided)
    for (const auto& u : undecided_per_arch) undecided->insert(undecided->end(), u.begin(), u.end());
  return out;
}

GpuLoading gpu_loading(const Artifact& o, const Artifact& n, const Arch& gpu) {
  GpuLoading g;
  g.gpu = gpu.str();
  for (const auto& m : select_for_arch(o, gpu).modules)
    ++(m.path == LoadPath::native_sass ? g.old_sass : m.path == LoadPath::ptx_jit ? g.old_jit : g.old_none);
  for (const auto& m : select_for_arch(n, gpu).modules)
    ++(m.path == LoadPath::native_sass ? g.new_sass : m.path == LoadPath::ptx_jit ? g.new_jit : g.new_none);
  return g;
}

}  // namespace

ArtifactDiff diff_artifacts(const Artifact& o, const Artifact& n, const Arch& target) { return detail::diff_artifacts(o, n, target, nullptr); }

ArtifactDiff detail::diff_artifacts(const Artifact& o, const Artifact& n, const Arch& target, Undecided* undecided) {
  ArtifactDiff d;
  // The per-architecture counts read every entry of both sides and nothing else computed here: beside the rest.
  Undecided per_arch_undecided;
  auto per_arch =
      std::async(std::launch::async, per_arch_diff, std::cref(o), std::cref(n), undecided ? &per_arch_undecided : nullptr);
  auto loading = std::async(std::launch::async, [&] {  // the common GPUs and the target: each side's modules
    std::vector<GpuLoading> out;
    for (const char* gpu : {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"})
      out.push_back(gpu_loading(o, n, Arch::parse(gpu)));
    if (std::none_of(out.begin(), out.end(), [&](const GpuLoading& g) { return g.gpu == target.str(); }))
      out.push_back(gpu_loading(o, n, target));
    return out;
  });
  d.old_selection = select_for_arch(o, target);
  d.new_selection = select_for_arch(n, target);
  d.loading_path_worse = d.new_selection.path > d.old_selection.path;

  std::map<std::string, int> count;
  for (const auto& e : o.entries) --count[entry_key(e)];
  for (const auto& e : n.entries) ++count[entry_key(e)];
  for (const auto& [k, c] : count) {
    for (int i = 0; i < c; ++i) d.entries_added.push_back(k);
    for (int i = 0; i < -c; ++i) d.entries_removed.push_back(k);
  }

  // Kernels of the entries each side would load (every module); a module that loads nothing
  // contributes its first SASS entry so resource changes are still visible. A name's first module wins.
  struct Loaded {
    const Entry* entry;
    const KernelInfo* sass;  // null for a PTX entry's kernel
  };
  using Side = std::unordered_map<std::string_view, Loaded>;
  auto collect = [](const Artifact& a, const Selection& s) {
    Side side;
    const std::vector<Module> modules = modules_of(a);  // in the order select_for_arch made s.modules
    for (std::size_t i = 0; i < s.modules.size(); ++i) {
      const ModuleSelection& m = s.modules[i];
      const Entry* e = nullptr;
      if (m.entry && *m.entry < a.entries.size()) e = &a.entries[*m.entry];
      for (std::size_t j = 0; !e && i < modules.size() && j < modules[i].entries.size(); ++j)
        if (modules[i].entries[j]->kind == EntryKind::sass) e = modules[i].entries[j];
      if (!e) continue;
      if (e->kind == EntryKind::sass)
        for (const auto& k : e->kernels) side.try_emplace(k.name, Loaded{e, &k});
      else
        for (const auto& k : e->ptx_entries) side.try_emplace(k, Loaded{e, nullptr});
    }
    return side;
  };
  const Side so = collect(o, d.old_selection), sn = collect(n, d.new_selection);
  std::vector<std::string_view> names;  // every kernel either side loads, sorted by name
  names.reserve(so.size() + sn.size());
  for (const auto& [nm, v] : so) names.push_back(nm);
  for (const auto& [nm, v] : sn)
    if (!so.count(nm)) names.push_back(nm);
  std::sort(names.begin(), names.end());
  d.kernels.reserve(names.size());
  for (const std::string_view nm : names) {
    const auto io = so.find(nm), in = sn.find(nm);
    KernelChange c;
    c.name = std::string(nm);
    if (io != so.end() && io->second.sass) c.old_kernel = *io->second.sass;
    if (in != sn.end() && in->second.sass) c.new_kernel = *in->second.sass;
    if (in == sn.end()) c.status = "removed";
    else if (io == so.end()) c.status = "added";
    else {
      const Entry* eo = io->second.entry;
      const Entry* en = in->second.entry;
      bool same;
      if (c.old_kernel && c.new_kernel)  // SASS on both sides: compare the machine code itself
        same = eo->arch == en->arch && same_code(c.old_kernel->code_sha256, *eo, c.new_kernel->code_sha256, *en, undecided);
      else  // PTX on at least one side: identical only if the same image is loaded
        same = eo->kind == en->kind && same_code(eo->sha256, *eo, en->sha256, *en, undecided);
      c.status = same ? "identical" : "changed";
    }
    d.kernels.push_back(std::move(c));
  }
  d.loading = loading.get();
  d.per_arch = per_arch.get();
  if (undecided) undecided->insert(undecided->end(), per_arch_undecided.begin(), per_arch_undecided.end());
  return d;
}

}  // namespace kqual::artifact
