// The KernelBench importer's reading of a capture (import_kernelbench.cpp writes the contract from it):
// which dims are axes (a module-level constant), derived axes (a * constant + b) or constant, the
// contract's tensors and scalars, and the sizes of the benchmark shape and of the small cases' base.
// Internal to the importers (import_kernelbench_shapes.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kqual/import/import_kernelbench.hpp"
#include "kqual/core/json.hpp"

namespace kqual::contract::kb {

struct Dim {
  std::string axis;  // the axis this dim is
  std::int64_t value = 0;
};

struct AxisInfo {
  std::string name, constant;
  std::int64_t value = 0, min = 1;
  std::int64_t base = 0, large = 0;
};

struct TensorInfo {
  std::string group, source_name, name, dtype;  // dtype: kqual's
  std::vector<Dim> dims;
  const json* j = nullptr;
};



struct KbDerived {
  std::string constant;
  std::int64_t a = 1, b = 0;
};

// What the capture's tensors become: axes (by the constant they move with), derived and fixed axes,
// the contract's tensors and scalars.
struct KbShapes {
  std::map<std::string, AxisInfo> axes;             // by constant
  std::map<std::string, KbDerived> derived;         // "@name" → a * constant + b
  std::map<std::string, std::int64_t> fixed;        // constant axis name → value
  std::set<std::string> tensor_names;
  std::vector<TensorInfo> tensors;
  std::vector<std::pair<std::string, json>> scalars;
  std::map<std::string, std::string> axis_name;     // "@const" or "@derived" → final name
  std::vector<std::string> zero_d;                  // 0-d inputs and parameters: one element along c1

  std::string final_axis(const std::string& a) const { return a[0] == '@' ? axis_name.at(a) : a; }

  // The largest tensor (elements, name) when each axis constant has the size given.
  std::pair<std::int64_t, std::string> largest(const std::map<std::string, std::int64_t>& size) const {
    std::int64_t worst = 0;
    std::string who;
    for (const auto& t : tensors) {
      std::int64_t n = 1;
      for (const auto& d : t.dims) {
        std::int64_t v = d.value;
        if (d.axis[0] == '@') {
          if (axes.count(d.axis.substr(1))) {
            v = size.at(d.axis.substr(1));
          } else {
            const KbDerived& e = derived.at(d.axis);
            v = e.a * size.at(e.constant) + e.b;
          }
        }
        n *= v;
      }
      if (n > worst) worst = n, who = t.name;
    }
    return std::pair{worst, who};
  }

  // The module's sizes, the largest axis halved until every tensor is within limit elements (or no
  // axis can shrink further).
  std::map<std::string, std::int64_t> shrink_to(std::int64_t limit) const {
    std::map<std::string, std::int64_t> size;
    for (const auto& [c, ax] : axes) size[c] = ax.value;
    while (largest(size).first > limit) {
      std::string pick;
      for (const auto& [c, ax] : axes)
        if (size[c] / 2 >= ax.min && size[c] > 1 && (pick.empty() || size[c] > size[pick])) pick = c;
      if (pick.empty()) break;
      size[pick] /= 2;
    }
    return size;
  }
};

// The benchmark shape (cut to max_elements) and the base of the small cases.
struct KbSizes {
  std::map<std::string, std::int64_t> bench, base;
  std::vector<std::string> scaled;  // "axis value → benchmark value" where cut
  std::int64_t bench_elements = 0;
};

// A name kqual's files take: letters, digits and _, not starting with a digit.
std::string sanitize(std::string s);
// Throws Error(input) "<file>: <what>: <why>".
[[noreturn]] void kb_refuse(const std::string& file, const std::string& what, const std::string& why);
// The capture's tensors: buffers become notes, forward's numbers scalars, the rest tensors with their
// dims classified; then the axes are named, and each axis's minimum raised so no derived dim empties.
KbShapes kb_collect_tensors(const json& cap, const KernelBenchImportOptions& o, const std::string& file, std::vector<std::string>& notes);
// The benchmark shape (KernelBench's fixed shape cut to max_elements) and the base of the small cases;
// sets each axis's large and base.
KbSizes kb_plan_sizes(const json& cap, const KernelBenchImportOptions& o, const std::string& file, KbShapes& s, KernelBenchImport& r);

}  // namespace kqual::contract::kb
