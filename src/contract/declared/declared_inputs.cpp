// A declared contract's case inputs and the reference's non-triviality check (declared_contract.hpp):
// inputs drawn as their `values` declare, those a [generator] makes run in the reference process
// (declared_generated.cpp); the check that a kernel writing a constant, or ignoring an input,
// cannot pass the contract's reference.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "declared_contract.hpp"
#include "declared_generated.hpp"
#include "declared_spec.hpp"
#include "kqual/contract/reference_host.hpp"
#include "kqual/core/error.hpp"
#include "python_reference.hpp"

namespace kqual::contract::declared {

CaseData DeclaredContract::make_case(const CaseSpec& spec) const {
  if (s_.generator) {
    ReferenceHost own;  // a process for this call only: a run passes its own host instead
    return make_case_in(spec, own);
  }
  CaseData d;
  d.spec = spec;
  d.dims = s_.complete(spec.dims);
  d.inputs = generate_inputs(s_, spec, d.dims, row(spec.dtype));
  return d;
}

CaseData DeclaredContract::make_case_in(const CaseSpec& spec, ReferenceHost& host) const {
  if (!s_.generator) return make_case(spec);
  CaseData d;
  d.spec = spec;
  d.dims = s_.complete(spec.dims);
  const auto dt = row(spec.dtype);
  d.inputs = generate_inputs(s_, spec, d.dims, dt);
  PythonReference& py = host.python(s_);
  std::call_once(generator_once_, [&] { check_generator_deterministic(s_, py, spec, d.dims, dt); });
  fill_generated(s_, py, spec, d.dims, dt, generator_seed(spec.seed), d.inputs);
  return d;
}

namespace {

bool same(const RefOutput& x, const RefOutput& y) {
  if (x.i != y.i) return false;
  if (x.f.size() != y.f.size()) return false;
  for (std::size_t i = 0; i < x.f.size(); ++i)
    if (!(x.f[i] == y.f[i] || (std::isnan(x.f[i]) && std::isnan(y.f[i])))) return false;
  return true;
}

// The base shape with every variable axis below 2 raised to 2 where its range, step and the
// constraints allow: an axis held at 1 can make any reference constant (a softmax or a norm over
// one element, one class, one channel) without the operation being so.
Dims grown_base(const Spec& s, const Dims& base) {
  Dims g = base;
  for (const auto& a : s.axes) {
    if (a.kind != Axis::variable || a.base >= 2 || a.max < 2) continue;
    std::int64_t v = std::max<std::int64_t>(2, a.multiple_of);
    if (v > a.max || v < a.min) continue;
    g[a.name] = v;
    if (!s.violated(s.complete(g)).empty()) g[a.name] = a.base;
  }
  return g;
}

}  // namespace

void DeclaredContract::check_nontrivial(ReferenceHost& host) const {
  // On the base shape of the first row: an output of several elements must vary across them, one of
  // a single element (a loss, a norm) must change when the inputs are redrawn, and every input must
  // move some output — else a kernel that writes a constant, or ignores an input, would pass — except
  // an input declared unread, which must then move none. Where the base shape holds an axis at 1 and
  // that alone makes the reference constant, the check is made again with those axes at 2; the
  // contract passes when that shape discriminates (and its numerical policy says so).
  Dims base;
  for (const auto& a : s_.axes)
    if (a.kind == Axis::variable) base[a.name] = a.base;
  const DType key = s_.rows.front().first;
  auto spec_at = [&](const Dims& dims) {
    CaseSpec cs;
    cs.dtype = key;
    cs.dims = s_.complete(dims);
    cs.family = "base";
    cs.seed = 0x6b7175616cull;
    cs.id = fmt::format("{}/{}/base (non-triviality check)", to_string(key), format_dims(cs.dims));
    return cs;
  };
  const CaseSpec cs = spec_at(base);
  std::vector<std::string> ignored;
  // The inputs that moved no output where the contract allows it (ignored_inputs), said in the policy.
  auto note_ignored = [&](const CaseSpec& where) {
    if (ignored.empty()) return;
    std::lock_guard<std::mutex> lock(reference_note_mu_);
    nontrivial_note_ += fmt::format("{}Inputs that move no output of the reference on {}: {} ({}); a kernel may leave them unread.",
                                    nontrivial_note_.empty() ? "" : " ", format_dims(where.dims), fmt::join(ignored, ", "),
                                    s_.ignored_inputs);
  };
  const std::string gap = discrimination_gap(host, cs, true, &ignored);
  if (gap.empty()) return note_ignored(cs);
  auto fail = [&](const std::string& why) {
    throw_error(ErrorKind::input, fmt::format("contract {}: the reference {}:{} {}: a zero, constant or input-ignoring kernel could "
                                              "pass it (non-triviality check on {})",
                                              s_.file.string(), s_.reference.file.filename().string(), s_.reference.function, why, cs.id));
  };
  const Dims grown = grown_base(s_, base);
  if (grown == base) fail(gap);
  const CaseSpec gs = spec_at(grown);
  ignored.clear();
  const std::string grown_gap = discrimination_gap(host, gs, false, &ignored);
  if (!grown_gap.empty()) fail(fmt::format("{} (and, with the axes held at 1 raised to 2, {} on {})", gap, grown_gap, gs.id));
  {
    std::lock_guard<std::mutex> lock(reference_note_mu_);
    nontrivial_note_ = fmt::format("Non-triviality: at the base shape ({}) the reference {} (an axis held at 1); with {} it "
                                   "discriminates, and the check was made there.",
                                   format_dims(cs.dims), gap, format_dims(gs.dims));
  }
  note_ignored(gs);
}

std::string DeclaredContract::discrimination_gap(ReferenceHost& host, const CaseSpec& cs, bool check_sampling,
                                                 std::vector<std::string>* ignored) const {
  const auto dt = row(cs.dtype);
  PythonReference& py = host.python(s_);
  // The inputs with `only` drawn from another seed (`other`), the generator's made with seed g.
  auto inputs_for = [&](const CaseSpec& c, const std::string& only, std::uint64_t other, std::uint32_t g) {
    std::vector<Tensor> in = generate_inputs(s_, c, c.dims, dt, only, other);
    if (s_.generator) fill_generated(s_, py, c, c.dims, dt, g, in);
    return dense_inputs(in, c.dims, s_);
  };
  const std::uint32_t gseed = generator_seed(cs.seed);
  const std::vector<Tensor> inputs = inputs_for(cs, "", 0, gseed);
  auto eval = [&](const std::vector<Tensor>& in, std::uint64_t rng_seed = 0) {
    return py.evaluate(s_, in, cs.dims, false, cs.id, dt, rng_seed).values;
  };
  const auto a = eval(inputs);
  // The same inputs under another seed of the global generators: a reference that samples (top-k /
  // top-p sampling, dropout) cannot be compared element by element, and no statistical judge exists.
  if (check_sampling) {
    const auto resampled = eval(inputs, 0x9e3779b9);
    for (const auto& [name, o] : a)
      if (!same(o, resampled.at(name)))
        throw_error(ErrorKind::input, fmt::format("contract {}: the reference {}:{} is a statistical operation: two calls on the same inputs "
                                                  "with another random seed gave different '{}' — it draws random numbers, and an "
                                                  "element-by-element comparison cannot judge a sample (no statistical judge is declared; "
                                                  "refused on {})",
                                                  s_.file.string(), s_.reference.file.filename().string(), s_.reference.function, name, cs.id));
  }
  std::vector<std::string> single;  // one-element outputs: judged by redrawing the inputs instead
  for (const auto& [name, o] : a) {
    const std::size_t n = o.f.empty() ? o.i.size() : o.f.size();
    bool constant = true;
    for (std::size_t i = 1; i < n && constant; ++i)
      constant = o.f.empty() ? o.i[i] == o.i[0] : (o.f[i] == o.f[0] || (std::isnan(o.f[i]) && std::isnan(o.f[0])));
    if (n == 1) single.push_back(name);
    else if (constant) return fmt::format("gives output '{}' the same value at every element", name);
  }
  if (!single.empty()) {
    CaseSpec other = cs;
    other.seed = cs.seed ^ 0x5eedull;
    const auto b = eval(inputs_for(other, "", 0, generator_seed(other.seed)));
    for (const auto& name : single)
      if (same(a.at(name), b.at(name))) return fmt::format("gives the one-element output '{}' the same value when every input is redrawn", name);
  }
  // Every input redrawn alone: the base inputs go to the reference process once, each alternative
  // after them, and the process answers which ones moved an output.
  std::vector<Tensor> alternatives;
  for (const auto& td : s_.tensors) {
    if (td.role != Role::input || td.values.generated) continue;
    for (Tensor& t : inputs_for(cs, td.name, 0x5eed, gseed))
      if (t.name == td.name) alternatives.push_back(std::move(t));
  }
  const std::map<std::string, bool> moved_by = py.moves(s_, inputs, alternatives, cs.dims, cs.id, dt);
  // ignored_inputs lets some inputs move nothing, never all: an output made of none of them is constant
  // for any data a kernel is given.
  if (!s_.ignored_inputs.empty() && !moved_by.empty() &&
      std::none_of(moved_by.begin(), moved_by.end(), [&](const auto& m) { return m.second && s_.tensor(m.first)->unread.empty(); }))
    return "does not change any output when any of its inputs changes";
  for (const auto& td : s_.tensors) {
    if (td.role != Role::input || td.values.generated) continue;
    const bool moved = moved_by.at(td.name);
    if (!moved && td.unread.empty() && !s_.ignored_inputs.empty()) {
      if (ignored) ignored->push_back(td.name);
      continue;
    }
    if (!moved && td.unread.empty()) return fmt::format("does not change any output when input '{}' changes", td.name);
    if (moved && !td.unread.empty())  // the declaration is checked too: a kernel must read what the reference reads
      throw_error(ErrorKind::input, fmt::format("contract {}: tensors.{}.unread says the reference never reads it ({}), but the reference "
                                                "{}:{} changes an output when it changes (checked on {})",
                                                s_.file.string(), td.name, td.unread, s_.reference.file.filename().string(),
                                                s_.reference.function, cs.id));
  }
  if (!s_.generator) return "";
  // The generator's inputs, made under another seed; a generator that gives the same values for any
  // seed (a fixed structure: arange, a full mask) leaves nothing to compare.
  const std::vector<Tensor> regen = inputs_for(cs, "", 0, gseed ^ 0x5eedu);
  std::vector<std::string> changed;
  for (std::size_t i = 0; i < regen.size(); ++i)
    if (s_.tensor(regen[i].name)->values.generated && regen[i].bytes != inputs[i].bytes) changed.push_back(regen[i].name);
  if (changed.empty()) return "";
  const auto b = eval(regen);
  bool moved = false;
  for (const auto& [name, o] : a) moved |= !same(o, b.at(name));
  if (!moved) return fmt::format("does not change any output when the generated input(s) {} change", fmt::join(changed, ", "));
  return "";
}

}  // namespace kqual::contract::declared
