#pragma once
// A synthetic Triton cache for the import tests (CPU only): cubins compiled here with nvcc for
// sm_90a (what Triton 3.x emits for capability 9.0), with the parameter list Triton kernels have —
// the kernel's own arguments, then the global and profile scratch pointers — and metadata JSON in
// the shape Triton 3.x writes (python/triton/compiler/compiler.py: the options, "name", "shared",
// "target", the scratch sizes; runtime/cache.py: __grp__<name>.json = {"child_paths": {...}}).
#include <filesystem>
#include <string>

#include "kqual/build/toolchain.hpp"
#include "kqual/core/files.hpp"
#include "kqual/core/json.hpp"
#include "test_util.hpp"

namespace kqual::test {

// add_kernel(x, y, out, n) as Triton lowers it: three pointers, an i32, then the two scratch pointers.
inline constexpr const char* kTritonLikeSource = R"(
extern "C" __global__ void add_kernel(const float* x, const float* y, float* out, int n, void* global_scratch,
                                      void* profile_scratch) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) { float v = x[i] + y[i]; out[i] = v > 0.0f ? v : (v != v ? v : 0.0f); }
}
extern "C" __global__ void scale_kernel(float* x, long long n, void* global_scratch, void* profile_scratch) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
)";

// Compiles kTritonLikeSource for `arch` (e.g. sm_90a) into `dir`/k.cubin once per arch; returns it.
inline std::filesystem::path triton_like_cubin(const std::filesystem::path& work, const std::string& arch) {
  const auto cubin = work / ("k_" + arch + ".cubin");
  if (std::filesystem::exists(cubin)) return cubin;
  write_file_atomic(work / "k.cu", kTritonLikeSource);
  const auto nvcc = build::resolve_tool("nvcc", "default", nullptr);
  auto r = run("cd " + quote(work) + " && " + quote(nvcc) + " -cubin -arch=" + arch + " -o " + quote(cubin) + " k.cu");
  if (r.exit_code != 0 || !std::filesystem::exists(cubin)) throw std::runtime_error("nvcc failed: " + r.output);
  return cubin;
}

inline json triton_metadata(const std::string& name, int num_warps, int shared, int arch = 90) {
  return json{{"hash", "5f1c0e6d2b8a4f7c9e3d1a0b6c8e2f4a7d9b1c3e5f7a9b0c2d4e6f8a1b3c5d7e9"},
              {"target", {{"backend", "cuda"}, {"arch", arch}, {"warp_size", 32}}},
              {"num_warps", num_warps},
              {"num_ctas", 1},
              {"num_stages", 3},
              {"cluster_dims", {1, 1, 1}},
              {"ptx_version", nullptr},
              {"enable_fp_fusion", true},
              {"launch_cooperative_grid", false},
              {"launch_pdl", false},
              {"debug", false},
              {"backend_name", "cuda"},
              {"arch", "sm" + std::to_string(arch)},
              {"shared", shared},
              {"tmem_size", 0},
              {"global_scratch_size", 0},
              {"global_scratch_align", 1},
              {"profile_scratch_size", 0},
              {"profile_scratch_align", 1},
              {"name", name}};
}

// One cache entry: <cache>/<folder>/{name.cubin, name.json, __grp__name.json} (+ a .ptx named in
// the group, as Triton writes every stage).
inline std::filesystem::path add_triton_entry(const std::filesystem::path& cache, const std::string& folder,
                                              const std::string& name, const std::filesystem::path& cubin,
                                              const json& metadata) {
  const auto dir = cache / folder;
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(cubin, dir / (name + ".cubin"), std::filesystem::copy_options::overwrite_existing);
  write_file_atomic(dir / (name + ".ptx"), "// ptx stand-in\n");
  write_file_atomic(dir / (name + ".json"), metadata.dump());
  json paths;
  for (const char* ext : {".ptx", ".cubin", ".json"})
    paths[name + ext] = "/root/.triton/cache/" + folder + "/" + name + ext;  // the GPU machine's paths
  write_file_atomic(dir / ("__grp__" + name + ".json"), json{{"child_paths", paths}}.dump());
  return dir;
}

}  // namespace kqual::test
