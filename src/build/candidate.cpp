// A source candidate compiled with NVRTC to native SASS, or a library-only candidate.
#include "kqual/build/candidate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

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
              {"image", {{"kind", "cubin (native SASS)"}, {"sha256", image_sha256}, {"bytes", image_bytes}}},
              {"kernels_lowered", low},
              {"kernels", kernels},
              {"libraries", libraries},
              {"library_versions", library_versions}};
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
  if (m.has_kernels()) return false;
  b.compiler = fmt::format("library: {}", fmt::join(b.libraries, ", "));
  std::string identity;
  for (const auto& l : b.libraries) identity += l + "\n";
  for (const auto& [k, v] : b.library_versions.items()) identity += k + "=" + v.get<std::string>() + "\n";
  b.image_sha256 = sha256_hex(identity);  // of the routine list and versions: no image of our own
  return true;
}

}  // namespace

BuiltCandidate build_candidate(const Manifest& m, const std::string& arch, const fs::path& out_dir) {
  BuiltCandidate b;
  b.manifest = m;
  b.arch = arch;
  if (build_library_calls(m, b)) return b;  // library-only: nothing to compile
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
  cuda::NvrtcResult r;
  try {
    r = cuda::nvrtc_compile(req);
  } catch (const Error& e) {
    throw Error(ErrorKind::nvrtc, fmt::format("{}: compiling {} failed: {}", m.file.string(), m.source.string(), e.what()));
  }
  for (const auto& [e, mangled] : r.lowered) b.lowered[e] = mangled;
  b.source_sha256 = sha256_hex(req.source);
  b.compiler = fmt::format("NVRTC {}.{}", r.nvrtc_major, r.nvrtc_minor);
  b.options = r.options_used;
  b.log = r.log;
  b.compile_ms = r.compile_ms;
  b.image_sha256 = sha256_hex(r.image.data(), r.image.size());
  b.image_bytes = r.image.size();
  b.image_path = out_dir / fmt::format("{}-{}.cubin", m.name, b.image_sha256.substr(0, 16));
  write_file(b.image_path, r.image.data(), r.image.size());
  return b;
}

}  // namespace kqual::build
