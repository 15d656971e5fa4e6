// A built candidate loaded in the worker, and its launch plan resolved for one problem.
#include "kqual/check/plan.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstdint>

#include "kqual/core/error.hpp"

namespace kqual::check {
using build::BuiltCandidate;
using build::Launch;
using build::LaunchArg;
using build::ScalarType;
using build::scalar_size;
using worker::DeviceFacts;
using worker::Session;
using worker::WorkerReply;

std::string load_and_describe(Session& s, BuiltCandidate& b) {
  if (!b.libraries.empty()) {
    // The worker loads the libraries and reports their versions (cuBLAS: the .so dlopen finds).
    auto lr = worker::call(s.worker(), worker::LibraryInfoRequest{b.libraries});
    if (!lr.ok()) return fmt::format("loading the libraries failed: {}", lr.raw.reason);
    for (const auto& [k, v] : lr.reply->versions) b.library_versions[k] = v;
  }
  b.kernels = json::object();
  if (b.lowered.empty()) return "";  // library-only
  worker::LoadRequest load{b.image_path.string(), {}};
  for (const auto& [e, mangled] : b.lowered) load.kernels.push_back(mangled);
  auto r = worker::call(s.worker(), load);
  if (!r.ok()) return fmt::format("loading the module failed: {}", r.raw.reason);
  for (const auto& [e, mangled] : b.lowered) {
    if (!r.reply->kernels.contains(mangled)) return fmt::format("the worker did not describe kernel {}", mangled);
    json k = r.reply->kernels.at(mangled);
    k["symbol"] = mangled;
    b.kernels[e] = k;
  }
  // The manifest's argument list must match the kernel's parameter sizes (driver's view).
  for (DType t : b.manifest.supports.dtypes) {
    for (std::size_t li = 0; li < b.manifest.launches.size(); ++li) {
      const auto& l = b.manifest.launches[li];
      if (!l.library.empty()) continue;  // library routines: arity checked at parse time
      std::string k = b.manifest.kernel_names(t).at(0);
      for (std::string kk = l.kernel; ; ) {
        for (std::size_t p; (p = kk.find("{T}")) != std::string::npos;) kk.replace(p, 3, cxx_type(t));
        k = kk;
        break;
      }
      const json& params = b.kernels.at(k).at("params");
      if (params.empty()) continue;  // driver without cuFuncGetParamInfo
      if (params.size() != l.args.size())
        return fmt::format("{}: launch[{}]: kernel {} takes {} parameters but args lists {}", b.manifest.file.string(), li, k,
                           params.size(), l.args.size());
      for (std::size_t j = 0; j < l.args.size(); ++j) {
        const bool by_value = l.args[j].kind == LaunchArg::dim || l.args[j].kind == LaunchArg::constant;
        std::size_t want = by_value ? scalar_size(l.args[j].type) : sizeof(void*);
        std::size_t got = params[j].at("size");
        if (want != got)
          return fmt::format("{}: launch[{}].args[{}] = \"{}\" passes {} bytes but parameter {} of {} is {} bytes",
                             b.manifest.file.string(), li, j, l.args[j].text, want, j, k, got);
      }
    }
  }
  return "";
}

namespace {

// A library routine ("cub.exclusive_sum<float>") with its buffers and dim scalars.
worker::Launch resolve_library_launch(const Launch& l, DType t, const std::map<std::string, std::int64_t>& dims,
                                      std::string* refusal) {
  std::string name = l.library;
  for (std::size_t q; (q = name.find("{T}")) != std::string::npos;) name.replace(q, 3, cxx_type(t));
  worker::Launch out;
  out.library = name;
  for (const auto& a : l.args) {
    if (a.kind == LaunchArg::constant) {
      out.args.push_back(worker::Arg::value(a.bits, int(scalar_size(a.type))));
      continue;
    }
    if (a.kind != LaunchArg::dim) {
      out.args.push_back(worker::Arg::pointer(a.name));
      continue;
    }
    std::int64_t v = dims.at(a.name);
    bool fits = a.type == ScalarType::i32 ? v >= INT32_MIN && v <= INT32_MAX
              : a.type == ScalarType::u32 ? v >= 0 && v <= std::int64_t(UINT32_MAX)
              : a.type == ScalarType::u64 ? v >= 0 : true;
    if (!fits) {
      *refusal = fmt::format("{} = {} does not fit the type {} takes ('{}')", a.name, v, name, a.text);
      return {};
    }
    out.args.push_back(worker::Arg::value(v, int(scalar_size(a.type))));
  }
  return out;
}

}  // namespace

ResolvedPlan resolve_plan(const BuiltCandidate& b, DType t, const std::map<std::string, std::int64_t>& dims,
                          const DeviceFacts& dev) {
  ResolvedPlan p;
  std::map<std::string, std::int64_t> vars = dims;
  vars["sms"] = dev.sms;
  vars["esize"] = std::int64_t(dtype_size(t));
  vars["l2_bytes"] = dev.l2_bytes;
  vars["max_threads"] = dev.max_threads;
  try {
    for (const auto& sc : b.manifest.scratch) {
      std::int64_t bytes = sc.bytes.eval(vars);
      if (bytes < 0) {
        p.refusal = fmt::format("scratch '{}' evaluates to {} bytes", sc.name, bytes);
        return p;
      }
      p.scratch.push_back({sc.name, worker::BufferKind::scratch, std::size_t(bytes), 0, ""});
    }
    for (std::size_t li = 0; li < b.manifest.launches.size(); ++li) {
      const auto& l = b.manifest.launches[li];
      if (!l.library.empty()) {
        p.launches.push_back(resolve_library_launch(l, t, dims, &p.refusal));
        if (!p.refusal.empty()) return p;
        continue;
      }
      std::string kname = l.kernel;
      for (std::size_t q; (q = kname.find("{T}")) != std::string::npos;) kname.replace(q, 3, cxx_type(t));
      auto it = b.lowered.find(kname);
      if (it == b.lowered.end()) throw_error(ErrorKind::internal, "kernel not lowered: " + kname);
      worker::Launch wl;
      wl.kernel = it->second;
      const std::int64_t grid_max[3] = {2147483647, 65535, 65535}, block_max[3] = {1024, 1024, 64};
      std::int64_t threads = 1;
      for (int i = 0; i < 3; ++i) {
        std::int64_t g = l.grid[std::size_t(i)].eval(vars), bl = l.block[std::size_t(i)].eval(vars);
        if (g < 1 || g > grid_max[i]) {
          p.refusal = fmt::format("launch[{}].grid[{}] = '{}' evaluates to {} (allowed 1..{})", li, i,
                                  l.grid[std::size_t(i)].text(), g, grid_max[i]);
          return p;
        }
        if (bl < 1 || bl > block_max[i]) {
          p.refusal = fmt::format("launch[{}].block[{}] = '{}' evaluates to {} (allowed 1..{})", li, i,
                                  l.block[std::size_t(i)].text(), bl, block_max[i]);
          return p;
        }
        threads *= bl;
        wl.grid[std::size_t(i)] = g;
        wl.block[std::size_t(i)] = bl;
      }
      if (threads > dev.max_threads) {
        p.refusal = fmt::format("launch[{}]: {} threads per block exceed the device's {}", li, threads, dev.max_threads);
        return p;
      }
      std::int64_t shared = l.shared.eval(vars);
      if (shared < 0 || shared > dev.max_shared_optin) {
        p.refusal = fmt::format("launch[{}].shared = {} bytes (device allows 0..{})", li, shared, dev.max_shared_optin);
        return p;
      }
      wl.shared = shared;
      for (const auto& a : l.args) {
        if (a.kind == LaunchArg::constant) {
          wl.args.push_back(worker::Arg::value(a.bits, int(scalar_size(a.type))));
        } else if (a.kind == LaunchArg::dim) {
          std::int64_t v = dims.at(a.name);
          bool fits = true;
          switch (a.type) {
            case ScalarType::i32: fits = v >= INT32_MIN && v <= INT32_MAX; break;
            case ScalarType::u32: fits = v >= 0 && v <= std::int64_t(UINT32_MAX); break;
            case ScalarType::u64: fits = v >= 0; break;
            case ScalarType::i64: case ScalarType::f32: case ScalarType::f64: break;
          }
          if (!fits) {
            p.refusal = fmt::format("{} = {} does not fit the kernel's parameter type ('{}')", a.name, v, a.text);
            return p;
          }
          wl.args.push_back(worker::Arg::value(v, int(scalar_size(a.type))));
        } else {
          wl.args.push_back(worker::Arg::pointer(a.name));
        }
      }
      p.launches.push_back(std::move(wl));
    }
  } catch (const Error& e) {
    p.refusal = e.what();
  }
  return p;
}

}  // namespace kqual::check
