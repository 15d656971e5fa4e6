// Kernel symbols ↔ the C++ names a manifest uses. nvcc and NVRTC mangle device functions with the
// Itanium C++ ABI, as the host compiler does, so the host's demangler reads them.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "kqual/artifact/artifact.hpp"

namespace kqual::artifact {
namespace {

std::string without_spaces(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ') out += c;
  return out;
}

}  // namespace

std::string demangle(const std::string& symbol) {
  if (symbol.rfind("_Z", 0) != 0) return symbol;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : symbol;
}

std::string kernel_display_name(const std::string& symbol) {
  std::string d = demangle(symbol);
  if (d == symbol) return symbol;
  // Drop the parameter list: the '(' matching the final ')'.
  if (!d.empty() && d.back() == ')') {
    int depth = 0;
    for (std::size_t i = d.size(); i-- > 0;) {
      if (d[i] == ')') ++depth;
      if (d[i] == '(' && --depth == 0) {
        d.resize(i);
        break;
      }
    }
  }
  // Template functions carry their return type first; kernels return void.
  if (d.rfind("void ", 0) == 0) d = d.substr(5);
  return without_spaces(d);
}

KernelMatch find_kernel_symbol(const std::vector<std::string>& symbols, const std::string& cxx_name) {
  KernelMatch m;
  const std::string want = without_spaces(cxx_name);
  for (const auto& s : symbols) {
    if (s == cxx_name) {  // the mangled symbol (or an extern "C" name) itself
      m.candidates = {s};
      m.symbol = s;
      return m;
    }
  }
  for (const auto& s : symbols)
    if (kernel_display_name(s) == want) m.candidates.push_back(s);
  if (m.candidates.size() == 1) m.symbol = m.candidates.front();
  return m;
}

}  // namespace kqual::artifact
