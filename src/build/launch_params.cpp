// The manifest's launch arguments against the compiled kernel's parameters (candidate.hpp): the cubin
// records each kernel's parameter sizes (EIATTR_KPARAM_INFO); a launch that passes another number of
// arguments, or an argument of another size (an i64 dim where the kernel takes an int), would read
// garbage on the GPU. Said in the static phase, naming the launch, the kernel and both lists.
#include <fmt/format.h>

#include <span>
#include <string>
#include <vector>

#include "kqual/artifact/artifact.hpp"
#include "kqual/build/candidate.hpp"
#include "kqual/core/dtype.hpp"
#include "kqual/core/error.hpp"

namespace kqual::build {

namespace {

std::size_t arg_bytes(const LaunchArg& a) {
  return a.kind == LaunchArg::tensor || a.kind == LaunchArg::scratch ? 8 : scalar_size(a.type);
}

}  // namespace

std::string launch_argument_problem(const Manifest& m, const std::map<std::string, std::string>& lowered,
                                    std::span<const std::uint8_t> cubin) {
  const artifact::Artifact art = artifact::parse_artifact_bytes(cubin, m.name);
  for (DType t : m.supports.dtypes)
    for (std::size_t li = 0; li < m.launches.size(); ++li) {
      const Launch& l = m.launches[li];
      if (l.kernel.empty()) continue;
      std::string expr = l.kernel;
      for (std::size_t p; (p = expr.find("{T}")) != std::string::npos;) expr.replace(p, 3, cxx_type(t));
      const auto mangled = lowered.find(expr);
      const std::string symbol = mangled == lowered.end() ? expr : mangled->second;
      for (const auto& e : art.entries)
        for (const auto& k : e.kernels) {
          if (k.name != symbol || k.params.empty()) continue;  // no records: nothing to compare
          std::vector<std::string> want, have;
          bool same = k.params.size() == l.args.size();
          for (std::size_t i = 0; i < l.args.size(); ++i) {
            want.push_back(fmt::format("{} ({} B)", l.args[i].text.empty() ? l.args[i].name : l.args[i].text, arg_bytes(l.args[i])));
            if (i < k.params.size() && k.params[i].size != arg_bytes(l.args[i])) same = false;
          }
          for (const auto& p : k.params) have.push_back(fmt::format("{} B", p.size));
          if (!same)
            return fmt::format("{}: launch {} ({} at {}): the manifest passes {} argument(s) [{}], the compiled kernel takes {} "
                               "parameter(s) of [{}] bytes: a pointer is 8 bytes, a dim or constant the size of its type (write "
                               "n:i32 for an int, n:i64 for a long long)",
                               m.file.string(), li + 1, expr, to_string(t), l.args.size(), fmt::join(want, ", "), k.params.size(),
                               fmt::join(have, ", "));
        }
    }
  return "";
}

}  // namespace kqual::build
