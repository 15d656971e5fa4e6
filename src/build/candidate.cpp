// A source candidate compiled with NVRTC to native SASS, or a library-only candidate.
#include "kqual/build/candidate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "kqual/artifact/artifact.hpp"
#include "kqual/build/toolchain.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/library.hpp"
#include "kqual/cuda/nvrtc.hpp"

namespace kqual::build {
namespace fs = std::filesystem;

json BuiltCandidate::to_json() const {
  json low = json::object();
  for (const auto& [k, v] : lowered) low[k] = v;
  return json{{"name", manifest.name},
              {"manifest", manifest.file.string()},
              {"contract", manifest.contract},
              {"source", manifest.source.string()},
              {"source_sha256", source_sha256},
              {"compiler", compiler},
              {"options", options},
              {"compile_ms", compile_ms},
              {"arch", arch},
              {"image", image_json()},
              {"kernels_lowered", low},
              {"kernels", kernels},
              {"libraries", libraries},
              {"library_versions", library_versions},
              {"notes", notes}};
}

json BuiltCandidate::image_json() const {
  json j{{"kind", image_kind}, {"sha256", image_sha256}, {"bytes", image_bytes}};
  if (!image_file.empty()) {
    j["file"] = image_file.string();
    j["file_sha256"] = image_file_sha256;
  }
  if (!load_path.empty()) {
    j["load_path"] = load_path;
    j["load_entry"] = load_entry;
  }
  return j;
}

namespace {

// Library launches: the artifact identity is the library and its version (CUB's is fixed at build
// time; cuBLAS's is read in the worker by load_and_describe). Returns true when every launch is a
// library call, so there is no source to compile.
bool build_library_calls(const Manifest& m, BuiltCandidate& b) {
  std::set<std::string> libs;
  for (DType t : m.supports.dtypes)
    for (const auto& name : m.library_names(t)) {
      if (std::find(b.libraries.begin(), b.libraries.end(), name) == b.libraries.end()) b.libraries.push_back(name);
      libs.insert(std::string(cuda::find_library_routine(cuda::split_library_name(name).routine)->library));
    }
  if (libs.count("CUB")) b.library_versions["CUB"] = cuda::cub_version();
  if (libs.count("cuBLAS")) b.library_versions["cuBLAS"] = "loaded at run time (version read in the worker)";
  if (libs.count("cuBLASLt")) b.library_versions["cuBLASLt"] = "loaded at run time (version read in the worker)";
  if (m.has_kernels()) return false;
  b.compiler = fmt::format("library: {}", fmt::join(b.libraries, ", "));
  std::string identity;
  for (const auto& l : b.libraries) identity += l + "\n";
  for (const auto& [k, v] : b.library_versions.items()) identity += k + "=" + v.get<std::string>() + "\n";
  b.image_sha256 = sha256_hex(identity);  // of the routine list and versions: no image of our own
  return true;
}

// What kind of file a prebuilt image is, as the candidate's `compiler` and image kind say it.
std::string container_words(artifact::ContainerKind k) {
  switch (k) {
    case artifact::ContainerKind::cubin: return "cubin";
    case artifact::ContainerKind::fatbin: return "fatbin";
    case artifact::ContainerKind::ptx: return "PTX";
    case artifact::ContainerKind::host_binary: return "host binary";
  }
  return "image";
}

// `image = "..."`: the prebuilt file adopted as is. The loaded bytes are copied into out_dir, so
// what the worker loads is exactly what was hashed here.
BuiltCandidate adopt_image(const Manifest& m, const std::string& arch, const fs::path& out_dir) {
  const std::string where = fmt::format("{}: candidate.image {}", m.file.string(), m.image.string());
  artifact::Artifact whole;
  try {
    whole = artifact::parse_artifact(m.image.string());
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("{}: {}", where, e.what()));
  }
  const std::string file = m.image.filename().string();
  std::string kind = container_words(whole.container);
  fs::path loadable = m.image;
  std::vector<std::string> notes;
  // The driver loads one fatbin container as one module: a host binary (or a fatbin of several
  // containers) contributes the module that holds every kernel of the plan.
  if (whole.container == artifact::ContainerKind::host_binary ||
      (whole.container == artifact::ContainerKind::fatbin && whole.containers.size() > 1)) {
    ModulePick pick = pick_module(m, m.image, arch, out_dir);
    loadable = pick.module_path;
    kind = fmt::format("module extracted from {} {}", kind, file);
    notes.push_back(pick.reason);
  }
  BuildProvenance pv;
  BuiltCandidate b = adopt_prebuilt(m, loadable, arch, &pv);
  for (auto& n : pv.notes) notes.push_back(n);

  const artifact::Artifact loaded = loadable == m.image ? whole : artifact::parse_artifact(loadable.string());
  const artifact::Selection sel = artifact::select_for_arch(loaded, artifact::Arch::parse(arch));
  if (sel.path == artifact::LoadPath::incompatible) {
    std::vector<std::string> held;
    for (const auto& e : loaded.entries)
      held.push_back(fmt::format("{} {}", e.kind == artifact::EntryKind::ptx ? "PTX" : e.kind == artifact::EntryKind::sass ? "SASS" : artifact::to_string(e.kind), e.arch.str()));
    throw_error(ErrorKind::input, fmt::format("{}: nothing in it can be loaded on {}: the image holds {} ({})", where, arch,
                                              held.empty() ? std::string("no loadable entries") : fmt::format("{}", fmt::join(held, ", ")),
                                              sel.reason));
  }
  if (sel.entry) {
    const artifact::Entry& e = loaded.entries.at(*sel.entry);
    if (sel.path == artifact::LoadPath::ptx_jit)
      notes.push_back(fmt::format("PTX {} is JIT-compiled by the driver for {} when the module loads: every process's first "
                                  "load pays that compile unless the JIT cache holds it (kqual startup measures it)",
                                  e.arch.str(), arch));
    if (e.compiler)
      notes.push_back(fmt::format("the loaded SASS was built by {} ({}), options '{}'", e.compiler->tool, e.compiler->version,
                                  e.compiler->options));
  }

  const std::string bytes = read_text_file(loadable);
  b.image_sha256 = sha256_hex(bytes);
  b.image_bytes = bytes.size();
  fs::create_directories(out_dir);
  b.image_path = out_dir / fmt::format("{}-prebuilt-{}{}", m.name, b.image_sha256.substr(0, 16), loadable.extension().string());
  write_file(b.image_path, bytes.data(), bytes.size());
  b.image_file = m.image;
  b.image_file_sha256 = whole.sha256;
  b.compiler = "prebuilt " + kind;
  b.image_kind = fmt::format("prebuilt {}, {}", kind,
                             sel.path == artifact::LoadPath::ptx_jit ? "PTX (JIT at load)" : "native SASS");
  b.load_path = artifact::to_string(sel.path);
  b.load_entry = sel.reason;
  b.notes = std::move(notes);
  return b;
}

// The kernels a source declares __global__ (best effort, by pattern: for a message, not a decision).
std::vector<std::string> global_kernels(const std::string& source) {
  static const std::regex bounds(R"(__launch_bounds__\s*\([^)]*\))");
  static const std::regex global(R"(__global__[^;{(]*?\b(\w+)\s*\()");
  const std::string text = std::regex_replace(source, bounds, "");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), global); it != std::sregex_iterator(); ++it)
    if (std::find(names.begin(), names.end(), (*it)[1].str()) == names.end()) names.push_back((*it)[1].str());
  return names;
}

// NVRTC looks the manifest's kernel names up in a file of its own, one line per name
// (`__nv_name_map(2): error: identifier "swish" is undefined`, then `#pragma nv_mangled_name swish<float>`):
// said in the manifest's words instead, naming the launch, the name as written and the kernels the
// source declares. Empty when the log holds other errors too (the source itself does not compile).
std::string kernel_name_problem(const Manifest& m, const std::string& source, const std::string& log) {
  std::vector<std::pair<std::string, std::string>> bad;  // name expression, NVRTC's first error about it
  std::istringstream lines(log);
  std::string error;
  for (std::string line; std::getline(lines, line);) {
    const std::size_t at = line.find(": error: ");
    if (at != std::string::npos) {
      if (line.rfind("__nv_name_map", 0) != 0) return {};
      error = line.substr(at + 9);
      continue;
    }
    const std::size_t pragma = line.find("#pragma nv_mangled_name ");
    if (pragma == std::string::npos || error.empty()) continue;
    const std::string expr = line.substr(pragma + 24);
    if (std::none_of(bad.begin(), bad.end(), [&](const auto& b) { return b.first == expr; })) bad.emplace_back(expr, error);
    error.clear();
  }
  if (bad.empty()) return {};
  std::vector<std::string> said;
  std::set<std::size_t> launches_said;  // one entry per launch, from its first name NVRTC refused
  for (const auto& [expr, first_error] : bad)
    for (std::size_t i = 0; i < m.launches.size(); ++i)
      for (DType t : m.supports.dtypes) {
        std::string k = m.launches[i].kernel;
        for (std::size_t p; (p = k.find("{T}")) != std::string::npos;) k.replace(p, 3, cxx_type(t));
        if (k.empty() || k != expr || !launches_said.insert(i).second) continue;
        const std::string as = k == m.launches[i].kernel ? "" : fmt::format(" (for {}: {})", to_string(t), k);
        said.push_back(fmt::format("launch[{}].kernel: '{}'{} is not a kernel of {} as written (NVRTC: {})", i,
                                   m.launches[i].kernel, as, m.source.filename().string(), first_error));
      }
  if (said.empty()) return {};
  const std::vector<std::string> kernels = global_kernels(source);
  return fmt::format("{}: {}; {}", m.file.string(), fmt::join(said, "; "),
                     kernels.empty() ? fmt::format("{} declares no __global__ function", m.source.filename().string())
                                     : fmt::format("the __global__ functions {} declares: {}", m.source.filename().string(),
                                                   fmt::join(kernels, ", ")));
}

}  // namespace

void record_nvrtc(BuiltCandidate& b, const Manifest& m, const cuda::NvrtcResult& r) {
  for (const auto& [e, mangled] : r.lowered) b.lowered[e] = mangled;
  b.source_sha256 = sha256_hex(read_text_file(m.source));
  b.compiler = fmt::format("NVRTC {}.{}", r.nvrtc_major, r.nvrtc_minor);
  b.options = r.options_used;
  b.log = r.log;
  b.compile_ms = r.compile_ms;
}

cuda::NvrtcResult compile_with_nvrtc(const Manifest& m, const std::string& arch) {
  cuda::NvrtcRequest req;
  req.source = read_text_file(m.source);
  req.source_name = m.source.filename().string();
  req.arch = arch;
  req.options = m.nvrtc_options;
  req.include_dirs = {m.dir.string()};
  for (DType t : m.supports.dtypes)
    for (const auto& k : m.kernel_names(t))
      if (std::find(req.name_expressions.begin(), req.name_expressions.end(), k) == req.name_expressions.end())
        req.name_expressions.push_back(k);
  try {
    return cuda::nvrtc_compile(req);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::usage) throw;  // a target NVRTC does not take: the message names --arch's forms
    const std::string what = e.what();
    const std::size_t log_at = what.find("--- NVRTC log ---\n");
    if (log_at != std::string::npos)
      if (std::string names = kernel_name_problem(m, req.source, what.substr(log_at + 18)); !names.empty())
        throw Error(ErrorKind::input, std::move(names));
    throw Error(ErrorKind::nvrtc, fmt::format("{}: compiling {} for {} failed: {}", m.file.string(), m.source.string(), arch,
                                              what));
  }
}

BuiltCandidate build_candidate(const Manifest& m, const std::string& arch, const fs::path& out_dir) {
  BuiltCandidate b;
  b.manifest = m;
  b.arch = arch;
  if (build_library_calls(m, b)) return b;  // library-only: nothing to compile
  if (!m.image.empty() || m.compiler == Compiler::nvcc) {
    BuiltCandidate k;
    if (!m.image.empty()) {
      k = adopt_image(m, arch, out_dir);
    } else {
      // nvcc -cubin on the source (device code only), through the toolchain compare uses.
      BuildProvenance pv;
      k = build_with_recipe(m, BuildRecipe{ImageMode::sass, "", "default"}, arch, out_dir, &pv);
      k.notes = pv.notes;
    }
    k.libraries = b.libraries;
    k.library_versions = b.library_versions;
    return k;
  }
  const cuda::NvrtcResult r = compile_with_nvrtc(m, arch);
  record_nvrtc(b, m, r);
  if (std::string bad = launch_argument_problem(m, b.lowered, std::span<const std::uint8_t>(r.image.data(), r.image.size())); !bad.empty())
    throw Error(ErrorKind::input, std::move(bad));
  b.image_sha256 = sha256_hex(r.image.data(), r.image.size());
  b.image_bytes = r.image.size();
  fs::create_directories(out_dir);  // every path builds into a folder it makes (the screen's timer names one per baseline)
  b.image_path = out_dir / fmt::format("{}-{}.cubin", m.name, b.image_sha256.substr(0, 16));
  write_file(b.image_path, r.image.data(), r.image.size());
  return b;
}

}  // namespace kqual::build
