// The KernelBench capture as the translation reads it (import_common.hpp): every field checked for
// the type tools/torch/kernelbench_capture.py writes, before import_kernelbench.cpp reads it
// unchecked. A capture is a file a user may pass (--capture) or edit; a field of another type is an
// input error naming the file and the key, never a json exception (kqual's own error, exit 4).
#include <fmt/format.h>

#include <set>

#include "import_common.hpp"
#include "kqual/core/error.hpp"

namespace kqual::contract::detail {

namespace {

// One dim: {"value", "fixed", "why"} or {"value", "const", "a", "b"}.
void check_dim(const JsonIn& in, const json& d, const std::string& key) {
  in.object(d, key);
  if (in.integer(*in.member(d, key, "value", true), key + ".value") < 1)
    in.fail(key + ".value", fmt::format("{}: a tensor with no elements along an axis (kqual's axes are at least 1)", d["value"].dump()));
  (void)in.boolean_or(d, key, "fixed", false);
  if (in.member(d, key, "const", false)) {
    (void)in.string(d["const"], key + ".const", "a string (a module-level constant's name)");
    for (const char* k : {"a", "b"}) (void)in.integer(*in.member(d, key, k, true), JsonIn::at(key, k));
  }
}

// One entry of "tensors", checked for the types the capture script writes.
void check_tensor(const JsonIn& in, const json& t, const std::string& key) {
  in.object(t, key);
  const std::string group = in.string(*in.member(t, key, "group", true), key + ".group");
  if (!std::set<std::string>{"input", "parameter", "buffer", "output"}.count(group))
    in.fail(key + ".group", fmt::format("\"{}\": expected input, parameter, buffer or output", group));
  (void)in.string(*in.member(t, key, "name", true), key + ".name");
  const std::string dtype = in.string(*in.member(t, key, "dtype", true), key + ".dtype");
  const json& shape = in.array(*in.member(t, key, "shape", true), key + ".shape");
  for (std::size_t i = 0; i < shape.size(); ++i) (void)in.integer(shape[i], fmt::format("{}.shape[{}]", key, i));
  if (const json* p = in.member(t, key, "param_name", false); p && !p->is_null())
    (void)in.string(*p, key + ".param_name", "a string or null (forward's parameter name)");
  if (group == "buffer") return;
  if (group == "input" && dtype == "scalar") {
    (void)in.number(*in.member(t, key, "value", true), key + ".value");
    return;
  }
  const json& dims = in.array(*in.member(t, key, "dims", true), key + ".dims");
  for (std::size_t i = 0; i < dims.size(); ++i) check_dim(in, dims[i], fmt::format("{}.dims[{}]", key, i));
  if (const json* v = in.member(t, key, "values", false); v && !v->is_null()) {
    in.object(*v, key + ".values");
    if (v->contains("min"))
      for (const char* k : {"min", "max", "mean", "std"}) (void)in.number(*in.member(*v, key + ".values", k, true), key + ".values." + k);
    if (const json* n = in.member(*v, key + ".values", "n", false)) (void)in.integer(*n, key + ".values.n");
  }
}

}  // namespace

std::vector<std::string> check_capture(const json& cap, const std::string& problem, const std::string& capture_file) {
  const JsonIn in(capture_file.empty() ? problem + " (its capture)" : capture_file);
  in.object(cap, "");
  if (!in.boolean_or(cap, "", "ok", false))
    throw_error(ErrorKind::input, fmt::format("{}: capture failed ({}): {}", problem, in.string_or(cap, "", "code", "?"),
                                              in.string_or(cap, "", "error", "no capture")));
  for (const char* k : {"tensors", "axis_constants", "constants"})
    if (!cap.contains(k)) in.fail(k, "missing from the capture (not written by tools/torch/kernelbench_capture.py?)");
  const json& tensors = in.array(cap["tensors"], "tensors");
  for (std::size_t i = 0; i < tensors.size(); ++i) check_tensor(in, tensors[i], fmt::format("tensors[{}]", i));
  in.object(cap["constants"], "constants");
  for (const auto& [c, a] : in.object(cap["axis_constants"], "axis_constants").items()) {
    const std::string key = "axis_constants." + c;
    in.object(a, key);
    (void)in.integer(*in.member(a, key, "value", true), key + ".value");
    if (const json* m = in.member(a, key, "min", false)) (void)in.integer(*m, key + ".min");
  }
  if (const json* s = in.member(cap, "", "sampled_at", false); s && !s->is_null())
    for (const auto& [c, v] : in.object(*s, "sampled_at").items()) (void)in.number(v, "sampled_at." + c);
  if (const json* n = in.member(cap, "", "not_axes", false))
    for (const auto& [c, why] : in.object(*n, "not_axes").items()) (void)in.string(why, "not_axes." + c);
  if (const json* n = in.member(cap, "", "notes", false))
    for (std::size_t i = 0; i < in.array(*n, "notes").size(); ++i) (void)in.string((*n)[i], fmt::format("notes[{}]", i));
  if (const json* n = in.member(cap, "", "ops", false))
    for (std::size_t i = 0; i < in.array(*n, "ops").size(); ++i) (void)in.string((*n)[i], fmt::format("ops[{}]", i));
  for (const char* k : {"torch", "file"}) (void)in.string_or(cap, "", k, "");

  // random_forward: true, false, or null when forward was not run on the CPU (no tensor could be
  // scaled below the sample cap, so no value was sampled either).
  std::vector<std::string> notes;
  const json* random = in.member(cap, "", "random_forward", false);
  if (!random || random->is_null()) {
    notes.push_back("forward was not run on the CPU by the capture (no tensor could be scaled down to the sample cap): whether it "
                    "is random is not known; a random forward (dropout in training mode, torch.rand in forward) would fail every "
                    "case, whatever the kernel");
  } else if (in.boolean(*random, "random_forward")) {
    throw_error(ErrorKind::input,
                fmt::format("{}: forward: is random: two calls on the same inputs and model state with different torch seeds differ "
                            "(dropout in training mode, torch.rand in forward, ...); a kernel cannot be checked against a reference "
                            "that is not a function of its inputs",
                            problem));
  }
  return notes;
}

}  // namespace kqual::contract::detail
