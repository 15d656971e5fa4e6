#include "kqual/build/toolchain.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "kqual/artifact/artifact.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/sha256.hpp"
#include "kqual/cuda/nvrtc.hpp"
#include "kqual/core/process.hpp"

namespace kqual::build {
namespace fs = std::filesystem;

namespace {

constexpr double kToolTimeoutS = 600;  // [s] a ptxas/nvcc run; generous, but never forever

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// "sm_90" → "compute_90", "sm_90a" → "compute_90a".
std::string virtual_arch(const std::string& arch) {
  if (arch.rfind("sm_", 0) == 0) return "compute_" + arch.substr(3);
  if (arch.rfind("compute_", 0) == 0) return arch;
  throw_error(ErrorKind::usage, fmt::format("target '{}' is not sm_XX", arch));
}

std::string toolkit_bin() {
  if (const char* h = std::getenv("CUDA_HOME"); h && *h) return std::string(h) + "/bin";
  if (const char* h = std::getenv("CUDA_PATH"); h && *h) return std::string(h) + "/bin";
  return "/usr/local/cuda/bin";
}

ProcessResult run_tool(const fs::path& tool, const std::vector<std::string>& args) {
  return run_process(tool.string(), args, {}, {}, kToolTimeoutS);
}

std::string describe_failure(const ProcessResult& r) {
  if (r.timed_out) return fmt::format("killed after {:.0f} s", kToolTimeoutS);
  if (!r.exited) return "terminated by " + signal_name(r.signal);
  if (r.exit_code == 127) return "could not be executed (exit 127)";
  return fmt::format("exit {}", r.exit_code);
}

// Kernel name expressions of every claimed dtype, de-duplicated, in order.
std::vector<std::string> name_expressions(const Manifest& m) {
  std::vector<std::string> out;
  for (DType t : m.supports.dtypes)
    for (const auto& k : m.kernel_names(t))
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

cuda::NvrtcResult nvrtc_for(const Manifest& m, const std::string& arch) { return compile_with_nvrtc(m, arch); }

BuiltCandidate from_nvrtc(const Manifest& m, const cuda::NvrtcResult& r, const std::string& arch) {
  BuiltCandidate b;
  b.manifest = m;
  b.arch = arch;
  record_nvrtc(b, m, r);
  return b;
}

void store_image(BuiltCandidate& b, const std::string& bytes, const fs::path& out_dir, const std::string& tag,
                 const std::string& ext) {
  b.image_sha256 = sha256_hex(bytes);
  b.image_bytes = bytes.size();
  fs::create_directories(out_dir);
  b.image_path = out_dir / fmt::format("{}-{}-{}.{}", b.manifest.name, tag, b.image_sha256.substr(0, 16), ext);
  write_file(b.image_path, bytes.data(), bytes.size());
}

// NVRTC options that mean the same to nvcc; the rest are dropped with a note.
bool nvcc_understands(const std::string& o) {
  static const char* prefixes[] = {"-D", "-U", "-I", "-std=", "--std=", "-O", "--use_fast_math", "-use_fast_math",
                                   "--fmad", "-fmad", "--ftz", "-ftz", "--prec-div", "-prec-div", "--prec-sqrt",
                                   "-prec-sqrt", "-lineinfo", "--generate-line-info", "-maxrregcount",
                                   "--maxrregcount", "--extra-device-vectorization", "-extra-device-vectorization"};
  for (const char* p : prefixes)
    if (o.rfind(p, 0) == 0) return true;
  return false;
}

// Symbols (mangled kernel names) in a parsed image.
std::vector<std::string> image_symbols(const artifact::Artifact& a) {
  std::vector<std::string> out;
  for (const auto& e : a.entries) {
    for (const auto& k : e.kernels) out.push_back(k.name);
    for (const auto& k : e.ptx_entries) out.push_back(k);
  }
  return out;
}

void require_symbols(const BuiltCandidate& b, const fs::path& image, const std::string& what) {
  artifact::Artifact a = artifact::parse_artifact(image.string());
  std::vector<std::string> have = image_symbols(a);
  for (const auto& [expr, mangled] : b.lowered)
    if (std::find(have.begin(), have.end(), mangled) == have.end())
      throw_error(ErrorKind::input,
                  fmt::format("{}: kernel {} (symbol {}) is not in {} ({} holds: {})", b.manifest.file.string(), expr,
                              mangled, image.string(), what, have.empty() ? std::string("no kernels") : join(have)));
}

}  // namespace

const char* to_string(ImageMode m) { return m == ImageMode::sass ? "sass" : "ptx"; }

std::optional<ImageMode> image_mode_from_string(const std::string& s) {
  if (s == "sass" || s == "cubin") return ImageMode::sass;
  if (s == "ptx") return ImageMode::ptx;
  return std::nullopt;
}

std::string BuildRecipe::describe() const {
  if (!nvcc.empty()) return fmt::format("nvcc ({}) → {}", nvcc, mode == ImageMode::sass ? "cubin" : "PTX only");
  if (!ptxas.empty()) return fmt::format("NVRTC → PTX → ptxas ({}) → cubin", ptxas);
  return mode == ImageMode::sass ? "NVRTC → cubin (native SASS)" : "NVRTC → PTX only (driver JIT at load)";
}

json BuildProvenance::to_json() const {
  json j{{"recipe", recipe}, {"image_kind", image_kind}, {"tools", tools}, {"notes", notes}};
  j["ptx_version_rewrite"] = ptx_version_rewrite ? json(*ptx_version_rewrite) : json();
  return j;
}

std::string tool_version(const fs::path& tool) {
  auto r = run_tool(tool, {"--version"});
  if (!r.exited || r.exit_code != 0)
    throw_error(ErrorKind::input, fmt::format("{} --version failed ({}): {}", tool.string(), describe_failure(r),
                                              trim(r.err.empty() ? r.out : r.err)));
  return trim(r.out);
}

std::string release_line(const std::string& text) {
  std::smatch m;
  static const std::regex re(R"(release\s+[0-9.]+,\s*V[0-9.]+)");
  if (std::regex_search(text, m, re)) return m.str();
  return "";
}

std::optional<std::string> ptxas_max_ptx_version(const std::string& log) {
  std::smatch m;
  static const std::regex re(R"(Unsupported \.version [0-9]+\.[0-9]+; current version is '([0-9]+\.[0-9]+)')");
  if (std::regex_search(log, m, re)) return m[1].str();
  return std::nullopt;
}

std::string rewrite_ptx_version(const std::string& ptx, const std::string& version) {
  static const std::regex re(R"((^|\n)([ \t]*)\.version[ \t]+[0-9]+\.[0-9]+)");
  std::smatch m;
  if (!std::regex_search(ptx, m, re)) throw_error(ErrorKind::input, "PTX has no .version directive");
  std::string out = ptx;
  out.replace(std::size_t(m.position(0)), std::size_t(m.length(0)), m[1].str() + m[2].str() + ".version " + version);
  return out;
}

std::optional<fs::path> find_triton_ptxas(std::vector<std::string>* tried) {
  auto note = [&](const std::string& s) {
    if (tried) tried->push_back(s);
  };
  const fs::path rel = "triton/backends/nvidia/bin/ptxas";
  if (const char* e = std::getenv("KQUAL_TRITON_PTXAS"); e && *e) {
    note(std::string("$KQUAL_TRITON_PTXAS=") + e);
    if (is_executable_file(e)) return fs::path(e);
  }
  std::vector<fs::path> dirs;
  // Ask python3 where its packages live (no import of triton: that would be slow and may pull in CUDA).
  for (const char* py : {"/usr/bin/python3", "/usr/local/bin/python3"}) {
    if (!is_executable_file(py)) continue;
    auto r = run_process(
        py,
        {"-c",
         "import site,sysconfig\n"
         "p=[sysconfig.get_paths().get(k) for k in ('purelib','platlib')]\n"
         "p+=getattr(site,'getsitepackages',lambda:[])()\n"
         "p.append(getattr(site,'getusersitepackages',lambda:'')())\n"
         "print('\\n'.join(x for x in p if x))"},
        {}, {}, 30);
    if (r.exited && r.exit_code == 0) {
      std::istringstream in(r.out);
      for (std::string line; std::getline(in, line);)
        if (!trim(line).empty()) dirs.emplace_back(trim(line));
    }
  }
  if (const char* v = std::getenv("VIRTUAL_ENV"); v && *v) dirs.emplace_back(fs::path(v) / "lib");
  for (const char* root : {"/usr/lib", "/usr/local/lib", "/opt", "/opt/conda/lib"}) dirs.emplace_back(root);
  // Expand roots one level into python3.*/{site,dist}-packages.
  std::vector<fs::path> expanded;
  for (const auto& d : dirs) {
    expanded.push_back(d);
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      std::string n = e.path().filename().string();
      if (n.rfind("python3", 0) != 0) continue;
      expanded.push_back(e.path() / "site-packages");
      expanded.push_back(e.path() / "dist-packages");
    }
  }
  for (const auto& d : expanded) {
    fs::path p = d / rel;
    note(p.string());
    if (is_executable_file(p)) return p;
  }
  return std::nullopt;
}

fs::path resolve_tool(const std::string& tool, const std::string& spec, std::vector<std::string>* notes) {
  if (spec.empty()) throw_error(ErrorKind::usage, fmt::format("no {} given", tool));
  if (spec == "default") {
    fs::path p = fs::path(toolkit_bin()) / tool;
    if (!is_executable_file(p))
      throw_error(ErrorKind::input, fmt::format("the toolkit's {} was not found at {} (set CUDA_HOME or give a path)", tool,
                                                p.string()));
    return p;
  }
  if (spec == "triton") {
    if (tool != "ptxas") throw_error(ErrorKind::usage, fmt::format("'triton' names a ptxas, not an {}", tool));
    std::vector<std::string> tried;
    auto p = find_triton_ptxas(&tried);
    if (!p)
      throw_error(ErrorKind::input,
                  fmt::format("no ptxas inside a Triton installation was found; looked at: {}. Give the path instead, e.g. "
                              "find / -path '*triton/backends/nvidia/bin/ptxas' 2>/dev/null",
                              join(tried)));
    if (notes) notes->push_back("ptxas discovered in the Triton package: " + p->string());
    return *p;
  }
  if (spec.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    std::istringstream in(path ? path : "");
    for (std::string dir; std::getline(in, dir, ':');)
      if (!dir.empty() && is_executable_file(fs::path(dir) / spec)) return fs::path(dir) / spec;
    throw_error(ErrorKind::input, fmt::format("{} '{}' not found in PATH", tool, spec));
  }
  fs::path p = spec;
  std::error_code ec;
  if (!fs::exists(p, ec)) throw_error(ErrorKind::input, fmt::format("{} '{}' does not exist", tool, spec));
  if (!is_executable_file(p)) throw_error(ErrorKind::input, fmt::format("{} '{}' is not an executable file", tool, spec));
  return fs::absolute(p);
}

namespace {

// C++ kernel name → symbol in `symbols`: through NVRTC's lowering when the manifest has a source
// (exact), else by demangling the image's own symbols. Error(input) naming what is missing.
std::map<std::string, std::string> match_kernels(const Manifest& m, const std::map<std::string, std::string>& lowered,
                                                 const std::vector<std::string>& symbols, const std::string& where) {
  std::map<std::string, std::string> out;
  auto holds = [&] {
    std::vector<std::string> names;
    for (const auto& sym : symbols) names.push_back(artifact::kernel_display_name(sym));
    std::string list;
    for (std::size_t i = 0; i < names.size() && i < 12; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 12) list += fmt::format(", … ({} in all)", names.size());
    return names.empty() ? std::string("no kernels") : list;
  };
  for (const auto& expr : name_expressions(m)) {
    auto it = lowered.find(expr);
    const std::string want = it != lowered.end() ? it->second : expr;
    artifact::KernelMatch km = artifact::find_kernel_symbol(symbols, want);
    if (km.symbol) {
      out[expr] = *km.symbol;
      continue;
    }
    if (km.candidates.size() > 1)
      throw_error(ErrorKind::input,
                  fmt::format("{}: kernel {} matches {} symbols in {} (overloads: {}); write the mangled symbol as the "
                              "launch's kernel",
                              m.file.string(), expr, km.candidates.size(), where, join(km.candidates)));
    throw_error(ErrorKind::input, fmt::format("{}: kernel {}{} is not in {} (it holds: {})", m.file.string(), expr,
                                              want == expr ? "" : " (symbol " + want + ")", where, holds()));
  }
  return out;
}

std::map<std::string, std::string> lower_if_source(const Manifest& m, const std::string& arch, BuildProvenance& pv,
                                                   BuiltCandidate& b) {
  if (m.source.empty()) {
    b.manifest = m;
    b.arch = arch;
    pv.notes.push_back("no source in the manifest: kernel names matched to the image's symbols by demangling");
    return {};
  }
  cuda::NvrtcResult lowered = nvrtc_for(m, virtual_arch(arch));
  b = from_nvrtc(m, lowered, arch);
  pv.notes.push_back(fmt::format("kernel names lowered with NVRTC {}.{} from {}", lowered.nvrtc_major, lowered.nvrtc_minor,
                                 m.source.string()));
  return b.lowered;
}

// nvcc on a generated wrapper: the candidate source plus host-side references to every kernel
// instantiation the manifest names (nvcc, unlike NVRTC, has no name expressions).
BuiltCandidate build_with_nvcc(const Manifest& m, const BuildRecipe& r, const std::string& arch, const fs::path& out_dir,
                               BuildProvenance& pv) {
  fs::path nvcc = resolve_tool("nvcc", r.nvcc, &pv.notes);
  std::string version = tool_version(nvcc);
  // A candidate with compiler = "nvcc" is never given to NVRTC (nvcc accepts source NVRTC rejects,
  // e.g. INFINITY without <math.h>): its kernel names are matched to nvcc's output by demangling,
  // and its nvcc_options go to nvcc as written. For compare's nvcc recipe on an NVRTC candidate,
  // names are lowered by NVRTC (Itanium C++ ABI, as nvcc) and checked against nvcc's output below.
  const bool own = m.compiler == Compiler::nvcc;
  BuiltCandidate b;
  if (own) {
    b.manifest = m;
    b.arch = arch;
    b.source_sha256 = sha256_hex(read_text_file(m.source));
  } else {
    b = from_nvrtc(m, nvrtc_for(m, virtual_arch(arch)), arch);
  }
  fs::create_directories(out_dir);
  std::string wrapper = fmt::format("// generated by kqual: {} + kernel instantiations\n#include \"{}\"\n", m.source.string(),
                                    m.source.string());
  int i = 0;
  for (const auto& e : name_expressions(m))
    wrapper += fmt::format("[[maybe_unused]] static void* const kqual_keep_{} = (void*)&{};\n", i++, e);
  fs::path wrapper_path = out_dir / fmt::format("{}-nvcc-wrapper.cu", m.name);
  write_file_atomic(wrapper_path, wrapper);
  const bool cubin = r.mode == ImageMode::sass;
  fs::path out = out_dir / fmt::format("{}-nvcc.{}", m.name, cubin ? "cubin" : "ptx");
  std::vector<std::string> args{cubin ? "-cubin" : "-ptx", "-arch=" + (cubin ? arch : virtual_arch(arch)), "-o",
                                out.string(), "-I" + m.dir.string(), "-diag-suppress=177"};
  if (own) {
    args.push_back("-std=c++17");  // as NVRTC gets it (cuda/nvrtc.cpp)
    for (const auto& o : m.nvcc_options) args.push_back(o);
  } else {
    for (const auto& o : m.nvrtc_options) {
      if (nvcc_understands(o))
        args.push_back(o);
      else
        pv.notes.push_back(fmt::format("NVRTC option '{}' from the manifest is not passed to nvcc", o));
    }
  }
  args.push_back(wrapper_path.string());
  auto t0 = std::chrono::steady_clock::now();
  auto res = run_tool(nvcc, args);
  b.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  pv.tools.push_back({{"tool", "nvcc"}, {"path", nvcc.string()}, {"version", version},
                      {"release", release_line(version)}, {"command", nvcc.string() + " " + join(args)}});
  if (!res.exited || res.exit_code != 0)
    throw_error(ErrorKind::nvrtc, fmt::format("{}: nvcc ({}) failed ({}): {}", m.file.string(), nvcc.string(),
                                              describe_failure(res), trim(res.err + res.out)));
  std::string bytes = read_text_file(out);
  b.compiler = fmt::format("nvcc {} ({})", release_line(version).empty() ? version : release_line(version), nvcc.string());
  b.options = args;
  b.log = trim(res.err + res.out);
  store_image(b, bytes, out_dir, cubin ? "nvcc-sass" : "nvcc-ptx", cubin ? "cubin" : "ptx");
  if (own) {
    b.lowered = match_kernels(m, {}, artifact::kernel_symbols(artifact::parse_artifact(b.image_path.string())),
                              "nvcc's output " + b.image_path.string());
    pv.notes.push_back(fmt::format("nvcc command: {} {}", nvcc.string(), join(args)));
    pv.notes.push_back("kernel names matched to nvcc's output by demangling (the source is not given to NVRTC)");
  }
  require_symbols(b, b.image_path, "nvcc's output");
  pv.image_kind = cubin ? "cubin (native SASS)" : "PTX (JIT at load)";
  b.image_kind = pv.image_kind;
  return b;
}

// NVRTC's PTX assembled by the recipe's ptxas.
BuiltCandidate build_with_ptxas(const Manifest& m, const BuildRecipe& r, const std::string& arch, const fs::path& out_dir,
                                BuildProvenance& pv) {
  fs::path ptxas = resolve_tool("ptxas", r.ptxas, &pv.notes);
  std::string version = tool_version(ptxas);
  cuda::NvrtcResult pr = nvrtc_for(m, virtual_arch(arch));
  BuiltCandidate b = from_nvrtc(m, pr, arch);
  fs::create_directories(out_dir);
  std::string ptx = pr.ptx.empty() ? std::string(pr.image.begin(), pr.image.end()) : pr.ptx;
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  const std::string base = fmt::format("{}-ptxas-{}", m.name, sha256_hex(ptxas.string()).substr(0, 8));
  fs::path ptx_path = out_dir / (base + ".ptx");
  fs::path out = out_dir / (base + ".cubin");
  std::vector<std::string> args{"-arch=" + arch, "-o", out.string(), ptx_path.string()};
  write_file_atomic(ptx_path, ptx);
  auto t0 = std::chrono::steady_clock::now();
  auto res = run_tool(ptxas, args);
  // An older ptxas refuses the newer PTX ISA NVRTC emits ("Unsupported .version 9.0; current
  // version is '8.7'"). PTX ISA versions are backward compatible, and ptxas checks every
  // instruction against the declared version, so lowering the directive to what this ptxas
  // accepts either assembles the same program or fails naming the instruction that needs the
  // newer ISA. NVRTC 13.0 has no option to choose the PTX ISA version (docs/compare.md).
  if (res.exited && res.exit_code != 0) {
    if (auto maxv = ptxas_max_ptx_version(res.err + res.out)) {
      std::string from;
      std::smatch sm;
      static const std::regex vre(R"(\.version[ \t]+([0-9]+\.[0-9]+))");
      if (std::regex_search(ptx, sm, vre)) from = sm[1].str();
      ptx = rewrite_ptx_version(ptx, *maxv);
      write_file_atomic(ptx_path, ptx);
      pv.ptx_version_rewrite = fmt::format("{} -> {} ({} accepts at most PTX ISA {})", from, *maxv, ptxas.string(), *maxv);
      res = run_tool(ptxas, args);
      if (res.exited && res.exit_code != 0)
        throw_error(ErrorKind::nvrtc,
                    fmt::format("{}: {} ({}) cannot assemble {}'s PTX even with .version lowered from {} to {}: the kernel "
                                "uses PTX ISA features this ptxas does not know. ptxas said: {}",
                                m.file.string(), ptxas.string(), release_line(version), b.compiler, from, *maxv,
                                trim(res.err + res.out)));
    }
  }
  b.compile_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  pv.tools.push_back({{"tool", "nvrtc"}, {"version", b.compiler}, {"options", pr.options_used}});
  pv.tools.push_back({{"tool", "ptxas"}, {"path", ptxas.string()}, {"version", version},
                      {"release", release_line(version)}, {"command", ptxas.string() + " " + join(args)}});
  if (!res.exited || res.exit_code != 0)
    throw_error(ErrorKind::nvrtc, fmt::format("{}: ptxas ({}) failed ({}): {}", m.file.string(), ptxas.string(),
                                              describe_failure(res), trim(res.err + res.out)));
  b.compiler = fmt::format("{} + ptxas {}", b.compiler, release_line(version).empty() ? version : release_line(version));
  b.options.push_back("ptxas " + join(args));
  b.log = trim(pr.log + "\n" + res.err + res.out);
  store_image(b, read_text_file(out), out_dir, "ptxas", "cubin");
  require_symbols(b, b.image_path, "ptxas's output");
  pv.image_kind = "cubin (native SASS)";
  return b;
}

}  // namespace

BuiltCandidate build_with_recipe(const Manifest& m, const BuildRecipe& recipe, const std::string& arch,
                                 const fs::path& out_dir, BuildProvenance* prov) {
  BuildProvenance local;
  BuildProvenance& pv = prov ? *prov : local;
  pv = BuildProvenance{};
  BuildRecipe r = recipe;
  // The plain recipe builds a candidate as its manifest says: nvcc for compiler = "nvcc", the
  // prebuilt file for `image`.
  const bool plain = r.nvcc.empty() && r.ptxas.empty() && r.mode == ImageMode::sass;
  if (plain && m.compiler == Compiler::nvcc) r.nvcc = "default";
  if (!m.image.empty()) {
    if (!plain)
      throw_error(ErrorKind::usage, fmt::format("{} names a prebuilt image ({}): it cannot be rebuilt as {}", m.file.string(),
                                                m.image.string(), r.describe()));
    BuiltCandidate b = build_candidate(m, arch, out_dir);
    pv.recipe = "prebuilt image " + m.image.string();
    pv.image_kind = b.image_kind;
    pv.notes = b.notes;
    return b;
  }
  pv.recipe = r.describe();
  fs::create_directories(out_dir);
  if (!r.ptxas.empty() && !r.nvcc.empty())
    throw_error(ErrorKind::usage, "give either a ptxas or an nvcc for one build, not both");
  if (!r.ptxas.empty() && r.mode == ImageMode::ptx)
    throw_error(ErrorKind::usage, "a ptxas build produces a cubin: it cannot be combined with mode ptx");

  if (!r.nvcc.empty()) return build_with_nvcc(m, r, arch, out_dir, pv);
  if (!r.ptxas.empty()) return build_with_ptxas(m, r, arch, out_dir, pv);

  pv.tools.push_back({{"tool", "nvrtc"}, {"version", nvrtc_version_text()}});
  if (r.mode == ImageMode::sass) {
    BuiltCandidate b = build_candidate(m, arch, out_dir);
    pv.image_kind = "cubin (native SASS)";
    return b;
  }
  cuda::NvrtcResult pr = nvrtc_for(m, virtual_arch(arch));
  BuiltCandidate b = from_nvrtc(m, pr, arch);
  std::string ptx(pr.image.begin(), pr.image.end());
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  store_image(b, ptx, out_dir, "ptx", "ptx");
  pv.image_kind = "PTX (JIT at load)";
  b.image_kind = pv.image_kind;
  return b;
}

BuiltCandidate adopt_prebuilt(const Manifest& m, const fs::path& image, const std::string& arch, BuildProvenance* prov) {
  BuildProvenance local;
  BuildProvenance& pv = prov ? *prov : local;
  const std::string recipe = pv.recipe.empty() ? "prebuilt image " + image.string() : pv.recipe;
  std::vector<std::string> keep_notes = pv.notes;
  pv = BuildProvenance{};
  pv.recipe = recipe;
  pv.notes = keep_notes;
  std::error_code ec;
  if (!fs::is_regular_file(image, ec)) throw_error(ErrorKind::input, fmt::format("artifact '{}' does not exist", image.string()));
  artifact::Artifact a = artifact::parse_artifact(image.string());
  if (a.container == artifact::ContainerKind::host_binary)
    throw_error(ErrorKind::input, fmt::format("{} is a host binary: pick its module first (build::pick_module)", image.string()));
  BuiltCandidate b;
  const auto lowered = lower_if_source(m, arch, pv, b);
  b.lowered = match_kernels(m, lowered, artifact::kernel_symbols(a), image.string());
  b.compiler = "prebuilt";
  b.options = {};
  b.compile_ms = 0;
  std::string bytes = read_text_file(image);
  b.image_path = fs::absolute(image);
  b.image_sha256 = sha256_hex(bytes);
  b.image_bytes = bytes.size();
  pv.image_kind = artifact::to_string(a.container);
  return b;
}

ModulePick pick_module(const Manifest& m, const fs::path& binary, const std::string& arch, const fs::path& out_dir) {
  artifact::Artifact a = artifact::parse_artifact(binary.string());
  ModulePick pick;
  pick.modules = a.containers.size();
  if (a.container != artifact::ContainerKind::host_binary && a.container != artifact::ContainerKind::fatbin)
    throw_error(ErrorKind::input, fmt::format("{} is a {}, not a host binary or fatbin with modules", binary.string(),
                                              artifact::to_string(a.container)));
  BuildProvenance scratch_pv;
  BuiltCandidate scratch_b;
  const auto lowered = lower_if_source(m, arch, scratch_pv, scratch_b);
  const artifact::Selection sel = artifact::select_for_arch(a, artifact::Arch::parse(arch));
  std::optional<std::size_t> best;
  artifact::LoadPath best_path = artifact::LoadPath::incompatible;
  std::vector<std::size_t> holding;
  std::string first_error;
  for (const auto& c : a.containers) {
    try {
      match_kernels(m, lowered, artifact::kernel_symbols(a, c.index), "module");
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.what();
      continue;
    }
    holding.push_back(c.index);
    artifact::LoadPath path = artifact::LoadPath::incompatible;
    for (const auto& ms : sel.modules)
      if (ms.container == c.index) path = ms.path;
    if (!best || path < best_path) best = c.index, best_path = path;
  }
  if (!best) {
    const auto names = name_expressions(m);
    std::string held;
    for (const auto& c : a.containers) {
      std::string list;
      std::size_t n = 0;
      for (const auto& sym : artifact::kernel_symbols(a, c.index))
        if (n++ < 12) list += (list.empty() ? "" : ", ") + artifact::kernel_display_name(sym);
      if (n > 12) list += fmt::format(", … ({} in all)", n);
      held += fmt::format("{}module {}: {}", held.empty() ? "" : "; ", c.index, n ? list : std::string("no kernels"));
    }
    throw_error(ErrorKind::input,
                fmt::format("{}: no module of {} ({} fatbin module(s)) holds every kernel of the plan ({}); the modules "
                            "hold: {}",
                            m.file.string(), binary.string(), a.containers.size(), join(names), held) +
                    // An ambiguous (overloaded) name is the one mismatch the lists do not explain.
                    (first_error.find("overloads") != std::string::npos ? "; " + first_error.substr(0, 400) : std::string()));
  }
  pick.container = *best;
  const artifact::ContainerSpan& span = a.containers[*best];
  const std::vector<std::uint8_t> bytes = artifact::extract_container(a, binary.string(), *best);
  fs::create_directories(out_dir);
  pick.module_path = out_dir / fmt::format("{}-module{}.fatbin", binary.filename().string(), *best);
  write_file(pick.module_path, bytes.data(), bytes.size());
  pick.reason = fmt::format("module {} of {} in {} (fatbin container at offset {}, {} bytes) holds the manifest's kernels{}; "
                            "it loads by {} on {}",
                            *best, a.containers.size(), binary.filename().string(), span.offset, span.bytes,
                            holding.size() > 1 ? fmt::format(" (as do {} other module(s); the one with the best loading "
                                                             "path was taken)",
                                                             holding.size() - 1)
                                               : "",
                            artifact::to_string(best_path), arch);
  return pick;
}

std::string nvrtc_version_text() { return "NVRTC " + cuda::nvrtc_version(); }

}  // namespace kqual::build
