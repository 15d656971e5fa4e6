// A declared tensor's layout keys (docs/declared-contracts.md, "Strided tensors"): contiguous,
// row_major, or strided — rows of the tensor's inner axis one every `stride` elements, the stride an
// axis of its own that requests give and kernels receive by name ("stride_x:i64").
#include <fmt/format.h>

#include <algorithm>

#include "declared_spec_read.hpp"

namespace kqual::contract::declared::read {

void read_layout(const TomlContext& cx, const toml::table& t, const std::string& where, TensorDef& td, Spec& s, std::set<std::string>& known) {
  td.layout = str(cx, t, where, "layout", false, td.shape.size() == 2 ? "row_major" : "contiguous");
  if (td.layout != "contiguous" && td.layout != "row_major" && td.layout != "strided")
    cx.fail(where + ".layout", fmt::format("\"{}\": expected \"contiguous\", \"row_major\" or \"strided\"", td.layout));
  if (td.layout == "row_major" && td.shape.size() != 2) cx.fail(where + ".layout", "row_major is for 2-D tensors");
  if (td.layout != "strided") {
    for (const char* k : {"stride", "stride_multiple_of"})
      if (t.get(k)) cx.fail(where + "." + k, fmt::format("only a tensor with layout = \"strided\" takes it (this one is {})", td.layout));
    return;
  }
  if (td.shape.size() != 2)
    cx.fail(where + ".layout", fmt::format("strided is for 2-D tensors (rows of the inner axis, one every stride elements); this one "
                                           "has {} axes", td.shape.size()));
  td.stride_axis = str(cx, t, where, "stride", false, "stride_" + td.name);
  const std::string& name = td.stride_axis;
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char ch) { return std::isalnum((unsigned char)ch) || ch == '_'; }) ||
      std::isdigit((unsigned char)name.front()))
    cx.fail(where + ".stride", fmt::format("\"{}\": an axis name (letters, digits and _)", name));
  const std::int64_t m = integer(cx, t, where, "stride_multiple_of", 1);
  if (m < 1) cx.fail(where + ".stride_multiple_of", fmt::format("{} is below 1", m));
  for (const auto& sc : s.scalars)
    if (sc.name == name) cx.fail(where + ".stride", fmt::format("'{}' is already a scalar", name));
  for (const auto& other : s.tensors)
    if (other.name == name) cx.fail(where + ".stride", fmt::format("'{}' is already a tensor", name));
  if (const Axis* a = s.axis(name)) {
    // Tensors naming the same stride share it (an in-place output and its input, x and y of one
    // buffer layout): the same row length and the same claim.
    if (a->kind != Axis::stride) cx.fail(where + ".stride", fmt::format("'{}' is already an axis that is not a row stride", name));
    if (a->of != td.shape[1] || a->multiple_of != m)
      cx.fail(where + ".stride", fmt::format("'{}' is the row stride of another tensor with rows of {} and stride_multiple_of = {}; "
                                             "this one has rows of {} and {}", name, a->of, a->multiple_of, td.shape[1], m));
    return;
  }
  Axis a;
  a.kind = Axis::stride;
  a.name = name;
  a.of = td.shape[1];
  a.multiple_of = m;
  s.axes.push_back(a);
  known.insert(name);
}

void check_layouts(const TomlContext& cx, const Spec& s) {
  for (const auto& t : s.tensors) {
    if (t.aliases.empty()) continue;
    const TensorDef* in = s.tensor(t.aliases);
    if (in->layout == "strided" || t.layout == "strided")
      if (in->layout != t.layout || in->stride_axis != t.stride_axis)
        cx.fail("tensors." + t.name + ".aliases",
                fmt::format("\"{}\" is {}{} where \"{}\" is {}{}: an output written in place shares its input's layout and row stride",
                            in->name, in->layout, in->stride_axis.empty() ? "" : " (stride " + in->stride_axis + ")", t.name, t.layout,
                            t.stride_axis.empty() ? "" : " (stride " + t.stride_axis + ")"));
  }
  if (!s.independent_axis.empty())
    for (const auto& t : s.tensors)
      if (t.layout == "strided")
        cx.fail("index_cases.axis", fmt::format("tensor '{}' is strided: cases past 2^31 elements (generated on the device, checked in "
                                                "windows) are not made for strided layouts", t.name));
}

}  // namespace kqual::contract::declared::read
