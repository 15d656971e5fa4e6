// kqual compare OLD NEW (compare.hpp): options refused up front, both sides built or adopted and
// diffed, the GPU phases (compare_measure.cpp) and the verdict (compare_judge.cpp), results written.
#include "kqual/pipeline/compare.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "compare_internal.hpp"
#include "kqual/contract/declared/declared.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/decision/profile.hpp"
#include "kqual/pipeline/phases.hpp"
#include "kqual/pipeline/qualify.hpp"
#include "kqual/report/memo.hpp"
#include "kqual/report/provenance.hpp"
#include "kqual/report/results.hpp"

namespace kqual::compare {
namespace fs = std::filesystem;

namespace {

bool looks_like_candidate(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec) || p.extension() == ".toml";
}

void classify(Side& s, const contract::ContractLookup& contracts) {
  std::error_code ec;
  fs::path p = s.spec.input;
  const char* who = s.label == "old" ? "OLD" : "NEW";
  if (!fs::exists(p, ec)) throw_error(ErrorKind::input, fmt::format("{} input '{}' does not exist", who, p.string()));
  s.input = fs::weakly_canonical(fs::absolute(p), ec);
  s.is_candidate = looks_like_candidate(p);
  const std::string name = p.filename().string();
  if (name.rfind("libcublasLt.so", 0) == 0)
    throw_error(ErrorKind::usage, fmt::format("{} '{}' is cuBLASLt: name the libcublas.so beside it (kqual loads that "
                                              "directory's libcublasLt with it and calls cublasGemmEx)",
                                              who, p.string()));
  s.is_library = !s.is_candidate && is_cublas_library(p);
  if (s.is_library && !fs::is_regular_file(s.input, ec))
    throw_error(ErrorKind::input, fmt::format("{} '{}' is not a file", who, p.string()));
  if (s.is_candidate) {
    s.manifest = build::load_manifest(p, contracts);
    s.manifest_from = "the candidate's manifest";
  } else if (s.spec.recipe_given) {
    throw_error(ErrorKind::usage,
                fmt::format("--{}-mode/--{}-ptxas/--{}-nvcc (and --ptxas/--nvcc) build a candidate from source; {} '{}' is "
                            "a prebuilt artifact",
                            s.label, s.label, s.label, s.label == "old" ? "OLD" : "NEW", p.string()));
  }
}

// The contract both sides are judged by, and where it came from: qualify's contract.source.
json compare_contract_record(const contract::Contract& c, const contract::ContractLookup& contracts) {
  const contract::ContractProvenance p = contracts.provenance(c);
  json source = {{"origin", contract::to_string(p.origin)}, {"supplied_with_candidate", p.origin == contract::ContractOrigin::candidate}};
  if (!p.file.empty()) {
    source["file"] = p.file.string();
    source["sha256"] = p.sha256;
  }
  return json{{"name", c.name()}, {"source", source}};
}

// The two sides from the options: each classified (a candidate's manifest read), and what can be
// refused before anything is built.
void resolve_sides(const CompareOptions& o, Side (&sides)[2]) {
  if (o.old_side.input.empty()) throw_error(ErrorKind::usage, "OLD is required");
  const contract::ContractLookup contracts(o.sources);  // what either side's manifest names
  sides[0].label = "old";
  sides[0].spec = o.old_side;
  sides[1].label = "new";
  sides[1].spec = o.new_side;
  if (sides[1].spec.input.empty()) sides[1].spec.input = o.old_side.input;
  sides[0].library_api = o.old_api;
  sides[1].library_api = o.new_api;
  for (auto& s : sides) {
    classify(s, contracts);
    if (s.library_api != "cublas" && s.library_api != "cublaslt")
      throw_error(ErrorKind::usage, fmt::format("--{}-api: '{}' is not cublas or cublaslt", s.label, s.library_api));
    if (!s.is_library && s.library_api != "cublas")
      throw_error(ErrorKind::usage, fmt::format("--{}-api is for library sides (libcublas.so); {} is not one", s.label,
                                                s.input.string()));
  }
  if (sides[0].input == sides[1].input && sides[0].spec.recipe == sides[1].spec.recipe &&
      sides[0].library_api == sides[1].library_api)
    throw_error(ErrorKind::usage,
                fmt::format("OLD and NEW are the same build ({} with {}): give another NEW, or different --old-*/--new-* build "
                            "options (docs/compare.md)",
                            sides[0].input.string(), sides[0].spec.recipe.describe()));
}

// The measurement options refused up front.
void check_measure_options(const CompareOptions& o) {
  if (o.startup_runs < 2) throw_error(ErrorKind::usage, "--startup-runs must be at least 2 (two blocks per side)");
  if (!(o.resolve_ms > 0)) throw_error(ErrorKind::usage, "--resolve-ms must be positive");
  if (o.processes < 1 || o.samples < 1 || o.warmup < 0) throw_error(ErrorKind::usage, "--processes/--samples must be >= 1");
  if (o.cache_modes.empty() || o.loading_modes.empty()) throw_error(ErrorKind::usage, "no cache or loading mode selected");
}

// The launch plan of two library sides: --manifest, else the bundled cuBLAS gemm baseline (kqual's
// own cublasSgemm_v2 / cublasGemmEx call, baselines/gemm/cublas).
build::Manifest library_launch_plan(const CompareOptions& o) {
  if (!o.manifest.empty()) return build::load_manifest(o.manifest, contract::ContractLookup(o.sources));
  const auto root = pipeline::find_bundled("baselines", fs::current_path());
  if (!root || !fs::exists(*root / "gemm" / "cublas" / "kqual.toml"))
    throw_error(ErrorKind::input, "comparing two libraries needs the gemm call's launch plan, baselines/gemm/cublas, which "
                                  "was not found (set KQUAL_HOME to the kqual checkout, or give --manifest)");
  return build::load_manifest(*root / "gemm" / "cublas", contract::ContractLookup(o.sources));
}

// The launch plan of an artifact side: --manifest, else the other side's candidate manifest. Both
// sides must implement one contract.
void share_launch_plan(const CompareOptions& o, Side (&sides)[2]) {
  if (sides[0].is_library != sides[1].is_library)
    throw_error(ErrorKind::usage, fmt::format("{} is a library build and {} is not: compare two libcublas.so files, or two "
                                              "kernels",
                                              sides[0].is_library ? "OLD" : "NEW", sides[0].is_library ? "NEW" : "OLD"));
  if (sides[0].is_library) {
    const build::Manifest m = library_launch_plan(o);
    if (m.library_names(m.supports.dtypes.at(0)).empty())
      throw_error(ErrorKind::usage, fmt::format("--manifest {}: comparing libraries needs a launch plan that calls a library "
                                                "routine ([[launch]] library = \"cublas.gemm<{{T}}>\")",
                                                m.file.string()));
    for (auto& s : sides) {
      s.manifest = m;
      s.manifest_from = o.manifest.empty() ? "the bundled cuBLAS gemm call (baselines/gemm/cublas)" : "--manifest " + o.manifest;
      if (s.library_api == "cublaslt") {
        // The same operation through cuBLASLt's matmul: every cublas.gemm launch becomes cublaslt.gemm.
        for (auto& l : s.manifest->launches)
          if (l.library.rfind("cublas.gemm", 0) == 0) l.library = "cublaslt" + l.library.substr(std::string("cublas").size());
        s.manifest->name += "-lt";
        s.manifest_from += ", called through cuBLASLt (cublasLtMatmul)";
      }
    }
    return;
  }
  std::optional<build::Manifest> shared_manifest;
  if (!o.manifest.empty()) {
    // A launch plan for prebuilt sides: no source needed (the image's symbols name the kernels).
    shared_manifest = build::load_manifest(o.manifest, contract::ContractLookup(o.sources), build::ManifestUse::launch_plan);
  } else {
    for (const auto& s : sides)
      if (s.manifest && !shared_manifest) shared_manifest = s.manifest;
  }
  for (auto& s : sides) {
    if (s.is_candidate || !shared_manifest) continue;
    s.manifest = shared_manifest;
    s.manifest_from = o.manifest.empty() ? "the other side's candidate manifest" : "--manifest " + o.manifest;
  }
  if (sides[0].manifest && sides[1].manifest && sides[0].manifest->contract != sides[1].manifest->contract)
    throw_error(ErrorKind::input, fmt::format("OLD implements {} but NEW implements {}: nothing to compare",
                                              sides[0].manifest->contract, sides[1].manifest->contract));
}

// The shapes timed warm (--shapes, else the contract's benchmark shapes) and the one that decides.
struct CompareShapes {
  std::vector<contract::Dims> shapes;
  std::size_t decision_index = 0;
};

CompareShapes compare_shapes(const CompareOptions& o, const contract::Contract* contract) {
  CompareShapes out;
  if (contract) {
    for (const auto& t : o.shapes) out.shapes.push_back(contract::parse_shape(*contract, t));
    if (out.shapes.empty()) out.shapes = contract->benchmark_shapes();
  } else if (!o.shapes.empty()) {
    throw_error(ErrorKind::usage, "--shapes needs a launch plan: compare candidates, or give --manifest");
  }
  out.decision_index = out.shapes.empty() ? 0 : out.shapes.size() - 1;
  if (!o.decision_shape.empty()) {
    if (!contract) throw_error(ErrorKind::usage, "--decision-shape needs a launch plan (a candidate or --manifest)");
    contract::Dims d = contract::parse_shape(*contract, o.decision_shape);
    auto it = std::find(out.shapes.begin(), out.shapes.end(), d);
    if (it == out.shapes.end())
      throw_error(ErrorKind::usage, fmt::format("--decision-shape {} is not among the measured shapes", o.decision_shape));
    out.decision_index = std::size_t(it - out.shapes.begin());
  }
  return out;
}

// One side built from its recipe, or adopted as prebuilt (a host binary: the module holding the
// manifest's kernels), into `dir`; its artifact parsed, the entry the driver loads on `arch`, and
// the kernel the startup probes look up.
void build_side(const CompareOptions& o, Side& s, const std::string& arch, const fs::path& dir) {
  fs::create_directories(dir);
  if (s.is_library) {
    // Nothing to build: the side is the file the workers and probes load; its kernels are read as a
    // host binary's for the artifact diff.
    s.image = s.input;
    s.built = build::build_candidate(*s.manifest, arch, dir);
    s.prov.recipe = fmt::format("library {} (through {})", s.input.string(), s.library_api);
    s.prov.image_kind = "shared library";
  } else if (s.is_candidate) {
    say(o, fmt::format("building {}: {}", s.label, s.spec.recipe.describe()));
    s.built = build::build_with_recipe(*s.manifest, s.spec.recipe, arch, dir, &s.prov);
    s.image = s.built->image_path;
  } else {
    s.image = s.input;
    const artifact::Artifact whole = artifact::parse_artifact(s.input.string());
    if (whole.container == artifact::ContainerKind::host_binary) {
      // A host executable or shared library: the driver registers each embedded fatbin as its own
      // module; the one holding the manifest's kernels is the side.
      if (!s.manifest)
        throw_error(ErrorKind::usage,
                    fmt::format("{} is a host binary with {} device module(s): give --manifest DIR so the module holding "
                                "the kernel can be picked",
                                s.input.string(), whole.containers.size()));
      build::ModulePick pick = build::pick_module(*s.manifest, s.input, arch, dir);
      s.image = pick.module_path;
      s.module_pick = pick.reason;
      s.prov.notes.push_back(pick.reason);
      say(o, fmt::format("{}: {}", s.label, pick.reason));
    }
    s.prov.recipe = "prebuilt " + std::string(artifact::to_string(whole.container)) + " " + s.input.string();
    if (s.manifest) s.built = build::adopt_prebuilt(*s.manifest, s.image, arch, &s.prov);
  }
  s.art = artifact::parse_artifact(s.image.string());
  s.image_sha256 = s.art.sha256;
  if (s.prov.image_kind.empty()) s.prov.image_kind = artifact::to_string(s.art.container);
  s.sel = artifact::select_for_arch(s.art, artifact::Arch::parse(arch));
  // The kernel the startup probes look up.
  if (s.is_library) {
    s.startup_kernel_from = "none: the probes call the library (" + s.built->libraries.at(0) + ")";
  } else if (s.built && s.manifest) {
    const auto names = s.manifest->kernel_names(s.manifest->supports.dtypes.at(0));
    s.startup_kernel = s.built->lowered.at(names.at(0));
    s.startup_kernel_from = "the manifest's first launch (" + names.at(0) + ")";
  } else if (s.sel.entry) {
    const auto& e = s.art.entries.at(*s.sel.entry);
    if (!e.kernels.empty()) s.startup_kernel = e.kernels.front().name;
    if (!e.ptx_entries.empty()) s.startup_kernel = e.ptx_entries.front();
    s.startup_kernel_from = "the first kernel of the entry the driver loads";
  }
}

// results.json's "sides": each side's input, build, image, loading path and (built) candidate, as
// loaded when it was.
json sides_record(const Side (&sides)[2]) {
  json side_json = json::object();
  for (const auto& s : sides) {
    json j{{"input", s.input.string()},
           {"kind", s.is_library ? "library" : s.is_candidate ? "candidate" : "artifact"},
           {"build", s.prov.to_json()},
           {"image", {{"path", s.image.string()}, {"sha256", s.image_sha256}, {"kind", s.prov.image_kind}}},
           {"loading_path", s.is_library ? "per module" : artifact::to_string(s.sel.path)},
           {"loading_reason", s.sel.reason},
           {"manifest", s.manifest ? json(s.manifest->file.string()) : json()},
           {"manifest_from", s.manifest_from},
           {"startup_kernel", s.startup_kernel},
           {"module", s.module_pick.empty() ? json() : json(s.module_pick)}};
    if (s.built) j["candidate"] = s.built->to_json(), j["candidate"]["image"]["kind"] = s.prov.image_kind;
    if (s.is_library) j["library"] = s.library_identity.is_null() ? json::object() : s.library_identity;
    side_json[s.label] = j;
  }
  return side_json;
}

// The static part of the results: both sides, their artifact diff, the build and diff phases.
void record_static_phases(report::CompareResult& r, const Side (&sides)[2], const std::string& arch) {
  if (sides[0].image_sha256 == sides[1].image_sha256 && sides[0].is_library && sides[0].library_api != sides[1].library_api) {
    r.notes.push_back(fmt::format("one build of cuBLAS on both sides: OLD calls it through {}, NEW through {}; the "
                                  "artifact diff is empty by construction",
                                  sides[0].library_api, sides[1].library_api));
  } else if (sides[0].image_sha256 == sides[1].image_sha256) {
    if (!sides[0].is_candidate && !sides[1].is_candidate)
      throw_error(ErrorKind::usage, fmt::format("OLD and NEW are byte-identical ({}): nothing to compare",
                                                sides[0].image_sha256.substr(0, 16)));
    r.notes.push_back("both builds produced byte-identical images: any measured difference is noise");
  }
  const artifact::ArtifactDiff diff = artifact::diff_artifacts(sides[0].art, sides[1].art, artifact::Arch::parse(arch));
  r.sides = sides_record(sides);
  r.artifact_diff = artifact::to_json(diff);
  r.phases.set("build", fmt::format("old: {}; new: {}", sides[0].prov.recipe, sides[1].prov.recipe));
  if (sides[0].is_library) {
    // A library's modules load one by one (lazily): per side, how many load natively on the target.
    for (const auto& g : diff.loading)
      if (g.gpu == arch)
        r.phases.set("artifact_diff",
                     fmt::format("modules on {}: old {} native, {} by PTX JIT, {} not loadable; new {} native, {} by PTX "
                                 "JIT, {} not loadable; {} kernel(s) compared",
                                 arch, g.old_sass, g.old_jit, g.old_none, g.new_sass, g.new_jit, g.new_none,
                                 diff.kernels.size()));
    return;
  }
  r.phases.set("artifact_diff", fmt::format("old loads by {}, new by {} on {}; {} kernel(s) compared",
                                            artifact::to_string(sides[0].sel.path), artifact::to_string(sides[1].sel.path), arch,
                                            diff.kernels.size()));
}

// Without a GPU: the static phases are the whole result, incomplete.
void record_no_gpu(report::CompareResult& r, const Side (&sides)[2], const std::string& arch, const std::string& why_no_gpu) {
  // The reason once, in the summary; each phase says only that it needs a GPU.
  for (const char* ph : {"correctness", "startup", "warm_timing", "decision"}) {
    r.phases.set(ph, "not run: needs a GPU (see the verdict)");
    r.not_run.push_back(std::string(ph) + ": needs a GPU");
  }
  report::CompareVerdict& verdict = r.verdict;
  verdict.reasons.push_back("static phases done: both sides built/parsed for " + arch + ", artifact diff computed");
  if (sides[1].sel.path == artifact::LoadPath::ptx_jit && !sides[0].art.entries.empty() &&
      sides[0].sel.path == artifact::LoadPath::native_sass)
    verdict.reasons.push_back("NEW is JIT-compiled from PTX on " + arch +
                              " while OLD loads native SASS: expect a first-request cost with a cold JIT cache");
  verdict.decision = decision::ShipVerdict::incomplete;
  verdict.exit_code = kExitIncomplete;
  verdict.summary = "No GPU: only the static phases ran. " + why_no_gpu;
}

// Library sides: the shapes the startup probes call (the decision shape first: its first call is the
// first request), and the modes measured when --modes / --loading were not given: the profiles' JIT
// cache modes (each library probe costs a second or more) and lazy then eager module loading.
CompareOptions library_defaults(const CompareOptions& o, Side (&sides)[2], const CompareShapes& plan,
                                const std::vector<decision::DeploymentProfile>& profiles) {
  CompareOptions mo = o;
  if (!sides[0].is_library) return mo;
  if (plan.shapes.empty()) throw_error(ErrorKind::usage, "comparing libraries needs at least one shape (--shapes)");
  std::vector<std::string> order;
  auto text = [](const contract::Dims& d) {
    auto at = [&](const char* k) {
      auto it = d.find(k);
      if (it == d.end())
        throw_error(ErrorKind::usage, fmt::format("library shape {} has no {}: the gemm call takes m, n and k",
                                                  contract::format_dims(d), k));
      return it->second;
    };
    return fmt::format("{},{},{}", at("m"), at("n"), at("k"));
  };
  order.push_back(text(plan.shapes.at(plan.decision_index)));
  for (std::size_t i = 0; i < plan.shapes.size(); ++i)
    if (i != plan.decision_index) order.push_back(text(plan.shapes[i]));
  for (auto& s : sides) s.library_shapes = order;
  if (!o.modes_given) {
    mo.cache_modes.clear();
    for (const auto& p : profiles)
      if (std::find(mo.cache_modes.begin(), mo.cache_modes.end(), p.jit_cache) == mo.cache_modes.end())
        mo.cache_modes.push_back(p.jit_cache);
  }
  if (!o.loading_given) mo.loading_modes = {startup::LoadingMode::lazy, startup::LoadingMode::eager};
  return mo;
}

// What judge() weighs the evidence with, from the options.
JudgeOptions compare_judge_options(const CompareOptions& o, std::vector<decision::DeploymentProfile> profiles,
                                   const CompareShapes& plan, bool new_jit, const std::string& arch) {
  JudgeOptions jo;
  jo.profiles = std::move(profiles);
  jo.decision_index = plan.decision_index;
  jo.new_uses_ptx_jit = new_jit;
  jo.arch = arch;
  jo.cold_noise_floor_ms = o.cold_noise_floor_ms;
  jo.warm_margin = o.warm_margin;
  jo.resolve_ms = o.resolve_ms;
  jo.startup_max_runs = std::max(o.startup_max_runs, o.startup_runs);
  jo.startup_runs_requested = o.startup_runs;
  jo.service.requests = 50000;  // the real run: longer simulations, more replicates (a few seconds of CPU)
  jo.service.bootstrap = 200;
  jo.service.seed = o.seed;
  return jo;
}

// Phase "write": results.json and memo.md of the result.
CompareOutcome write_compare(const CompareOptions& o, report::CompareResult result, int code) {
  CompareOutcome out;
  out.results = report::to_json(result);
  out.memo = report::render_compare_memo(result);
  out.result = std::move(result);
  out.exit_code = code;
  const pipeline::Written w = pipeline::write_results(o.out_dir, out.results, {{"memo.md", out.memo}});
  out.results_path = w.results;
  out.memo_path = w.files.at(0);
  return out;
}

}  // namespace

bool is_cublas_library(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.rfind("libcublas.so", 0) == 0;
}

CompareOutcome run_compare(const CompareOptions& o) {
  // ---- 1. Everything that can be refused without building or touching a GPU ----
  Side sides[2];
  resolve_sides(o, sides);
  check_measure_options(o);
  auto dtype = parse_dtype(o.dtype);
  if (!dtype) throw_error(ErrorKind::usage, fmt::format("--dtype: unknown dtype '{}'", o.dtype));
  share_launch_plan(o, sides);
  // Profiles load here, before any build: a bad profile is refused up front.
  std::vector<decision::DeploymentProfile> profiles = decision::load_profiles_or_default(o.profiles);
  const std::vector<decision::DeploymentProfile> profiles_for_modes = profiles;
  const contract::Contract* contract = sides[1].manifest ? &sides[1].manifest->resolved_contract() : nullptr;
  const CompareShapes plan = compare_shapes(o, contract);

  // ---- 2. Device (through a worker; never CUDA in this process) and target ----
  pipeline::Target tg = pipeline::open_target({o.use_gpu, o.watchdog_seconds, o.arch});
  report::CompareResult r;
  r.provenance = report::provenance(o.command_line, tg.device_json());
  r.target = {tg.arch, tg.arch_source};
  if (contract) r.contract = compare_contract_record(*contract, contract::ContractLookup(o.sources));

  // ---- 3. Build (or adopt) both sides: static, no GPU ----
  for (auto& s : sides) build_side(o, s, tg.arch, tg.session->scratch() / s.label);
  record_static_phases(r, sides, tg.arch);
  if (!tg.gpu()) {
    record_no_gpu(r, sides, tg.arch, tg.why_no_gpu);
    return write_compare(o, std::move(r), kExitIncomplete);
  }

  // ---- 4. Measure: correctness of both, warm timing, startup ----
  const CompareOptions mo = library_defaults(o, sides, plan, profiles_for_modes);
  Evidence ev = measure(mo, sides, *tg.session, contract, plan.shapes, *dtype);
  if (ev.can_launch) r.sides = sides_record(sides);  // the candidates as loaded: what the device says of each

  // ---- 5. Judge and write ----
  const bool new_jit = sides[1].sel.path == artifact::LoadPath::ptx_jit;
  Judgement j = judge(r, ev, compare_judge_options(o, std::move(profiles), plan, new_jit, tg.arch));
  return write_compare(o, std::move(j.result), j.exit_code);
}

}  // namespace kqual::compare
