// `kqual import-triton CACHE_DIR [--kernel NAME] --out CANDIDATE_DIR`: a Triton-compiled kernel
// (cubin + metadata from Triton's cache) as a candidate folder whose kqual.toml the user completes.
// No GPU needed. Library: include/kqual/build/triton.hpp; docs/manifest.md "Triton kernels".
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "command_util.hpp"
#include "kqual/build/triton.hpp"
#include "kqual/core/exit_codes.hpp"
#include "kqual/core/json.hpp"
#include "kqual/run/cli.hpp"
#include "kqual/run/user_paths.hpp"

namespace kqual::run {

namespace {

// The command, as `kqual --help` lists it.
constexpr CommandDoc kImportTritonCommand{"import-triton",
                             "Make a candidate folder from a kernel in a Triton cache (~/.triton/cache or one of its entries): the cubin, and a "
                             "kqual.toml with the kernel name, block (num_warps x 32), dynamic shared memory and the kernel's parameter sizes, "
                             "plus TODO placeholders (contract, argument mapping, grid) that kqual refuses until completed. No GPU needed."};

struct ImportTritonOptions {
  build::TritonImportOptions o;
  std::string cache_dir, out;
  bool list = false;
};

int run_import_triton(ImportTritonOptions& opts, const GlobalOptions& g) {
  opts.o.cache_dir = opts.cache_dir;
  opts.o.out = opts.out;
  if (opts.list) {
    const auto all = build::find_triton_kernels(opts.o.cache_dir);
    json ks = json::array();
    for (const auto& e : all)
      ks.push_back(json{{"label", e.label()}, {"name", e.stem}, {"cubin", !e.cubin.empty()}, {"metadata", !e.metadata.empty()}});
    print_outcome(g, "import-triton", json{{"kernels", std::move(ks)}}, [&] {
      for (const auto& e : all)
        fmt::print("{}{}{}\n", e.label(), e.cubin.empty() ? "  (no cubin)" : "", e.metadata.empty() ? "  (no metadata)" : "");
    });
    return kExitPass;
  }
  const build::TritonImport r = build::import_triton_kernel(opts.o);
  json params = json::array();
  for (const auto& p : r.params) params.push_back(json{{"ordinal", p.ordinal}, {"offset", p.offset}, {"size", p.size}});
  const json fields{{"kernel", r.meta.name},
                    {"source", r.entry.dir.string()},
                    {"out", r.out.string()},
                    {"cubin_arch", r.cubin_arch.str()},
                    {"block", r.meta.num_warps * r.meta.warp_size},
                    {"shared_bytes", r.meta.shared},
                    {"params", std::move(params)},
                    {"placeholders", r.placeholders}};
  print_outcome(g, "import-triton", fields, [&] {
    fmt::print("imported Triton kernel {} ({} SASS, {} threads per block, {} B dynamic shared memory, {} parameters)\n"
               "  from {}\n  into {}: kqual.toml + {}.cubin\n",
               r.meta.name, r.cubin_arch.str(), r.meta.num_warps * r.meta.warp_size, r.meta.shared, r.params.size(),
               r.entry.dir.string(), r.out.string(), r.entry.stem);
    fmt::print("complete these placeholders in {}/kqual.toml (kqual check refuses it until then): {}\n", r.out.string(),
               fmt::format("{}", fmt::join(r.placeholders, ", ")));
  });
  return kExitPass;
}

}  // namespace

void add_import_triton_command(CLI::App& app, GlobalOptions& g, int* exit_code) {
  auto [cmd, opts] = add_command<ImportTritonOptions>(app, g, exit_code, kImportTritonCommand, run_import_triton);
  input_path(cmd->add_option("cache_dir", opts->cache_dir, "Triton cache folder, or one entry of it")->required(),
             PathRole::folder, "a Triton cache, e.g. ~/.triton/cache, or one of its entries");
  cmd->add_option("--kernel", opts->o.kernel,
                  "Which kernel (its name, or FOLDER/NAME when several compiles share a name); required when the cache "
                  "holds more than one");
  output_path(cmd->add_option("--out", opts->out, "The candidate folder to create (must not exist)"), PathRole::folder);
  arch_option(cmd->add_option("--arch", opts->o.arch, "Also require that the cubin loads on this GPU, e.g. sm_90"),
              ArchUse::device);
  cmd->add_flag("--list", opts->list, "List the cache's kernels and exit");
}

}  // namespace kqual::run
