// JSON form of artifacts, selections and diffs (schema: docs/artifact.md).
#include <fmt/format.h>

#include "kqual/artifact/artifact.hpp"

namespace kqual::artifact {

namespace {
json kernel_json(const KernelInfo& k) {
  return json{{"name", k.name},
              {"registers", k.registers < 0 ? json(nullptr) : json(k.registers)},
              {"static_shared_bytes", k.static_shared_bytes},
              {"shared_section_bytes", k.shared_section_bytes},
              {"local_bytes", k.local_bytes},
              {"max_stack_bytes", k.max_stack_bytes},
              {"max_threads", k.max_threads == 0 ? json(nullptr) : json(k.max_threads)},
              {"param_bytes", k.param_bytes < 0 ? json(nullptr) : json(k.param_bytes)},
              {"code_bytes", k.code_bytes},
              {"code_sha256", k.code_sha256}};
}
}  // namespace

json to_json(const Artifact& a) {
  json entries = json::array();
  for (const auto& e : a.entries) {
    json j{{"index", e.index},
           {"container", e.container},
           {"kind", to_string(e.kind)},
           {"arch", e.arch.str()},
           {"ptx_isa", e.kind == EntryKind::ptx ? json(fmt::format("{}.{}", e.ptx_isa_major, e.ptx_isa_minor)) : json(nullptr)},
           {"compression", to_string(e.compression)},
           {"offset", e.offset},
           {"stored_bytes", e.stored_bytes},
           {"image_bytes", e.image_bytes},
           {"flags", fmt::format("{:#x}", e.flags)},
           {"sha256", e.sha256}};
    if (e.kind == EntryKind::ptx) {
      j["jit_options"] = e.jit_options;
      j["ptx_entries"] = e.ptx_entries;
    }
    if (e.kind == EntryKind::sass) {
      if (e.compiler)
        j["compiler"] = json{{"tool", e.compiler->tool},
                             {"version", e.compiler->version},
                             {"build", e.compiler->build},
                             {"options", e.compiler->options},
                             {"cuda_api_version", e.compiler->cuda_api_version}};
      else
        j["compiler"] = nullptr;
      json ks = json::array();
      for (const auto& k : e.kernels) ks.push_back(kernel_json(k));
      j["kernels"] = std::move(ks);
    }
    entries.push_back(std::move(j));
  }
  return json{{"name", a.name},
              {"container", to_string(a.container)},
              {"file_bytes", a.file_bytes},
              {"sha256", a.sha256},
              {"entries", std::move(entries)}};
}

json to_json(const Selection& s, const Artifact& a) {
  json j{{"target", s.target.str()},
         {"path", to_string(s.path)},
         {"entry", s.entry ? json(*s.entry) : json(nullptr)},
         {"entry_arch", nullptr},
         {"reason", s.reason}};
  if (s.entry && *s.entry < a.entries.size()) j["entry_arch"] = a.entries[*s.entry].arch.str();
  json mods = json::array();
  for (const auto& m : s.modules)
    mods.push_back(json{{"container", m.container},
                        {"path", to_string(m.path)},
                        {"entry", m.entry ? json(*m.entry) : json(nullptr)},
                        {"reason", m.reason}});
  j["modules"] = std::move(mods);
  return j;
}

json to_json(const ArtifactDiff& d) {
  auto sel = [](const Selection& s) {
    return json{{"path", to_string(s.path)}, {"entry", s.entry ? json(*s.entry) : json(nullptr)}, {"reason", s.reason}};
  };
  json ks = json::array();
  for (const auto& c : d.kernels) {
    json j{{"name", c.name}, {"status", c.status}};
    j["old"] = c.old_kernel ? kernel_json(*c.old_kernel) : json(nullptr);
    j["new"] = c.new_kernel ? kernel_json(*c.new_kernel) : json(nullptr);
    ks.push_back(std::move(j));
  }
  json arches = json::array();
  for (const auto& a : d.per_arch)
    arches.push_back({{"arch", a.arch}, {"entries", {{"old", a.old_entries}, {"new", a.new_entries}}},
                      {"stored_bytes", {{"old", a.old_bytes}, {"new", a.new_bytes}}}, {"added", a.added}, {"removed", a.removed},
                      {"changed", a.changed}, {"identical", a.identical}});
  json loading = json::array();
  for (const auto& g : d.loading)
    loading.push_back({{"gpu", g.gpu},
                       {"old", {{"native_sass", g.old_sass}, {"ptx_jit", g.old_jit}, {"incompatible", g.old_none}}},
                       {"new", {{"native_sass", g.new_sass}, {"ptx_jit", g.new_jit}, {"incompatible", g.new_none}}}});
  return json{{"target", d.old_selection.target.str()},
              {"old", sel(d.old_selection)},
              {"new", sel(d.new_selection)},
              {"loading_path_worse", d.loading_path_worse},
              {"entries_added", d.entries_added},
              {"entries_removed", d.entries_removed},
              {"kernels", std::move(ks)},
              {"per_arch", std::move(arches)},
              {"loading", std::move(loading)}};
}

}  // namespace kqual::artifact
