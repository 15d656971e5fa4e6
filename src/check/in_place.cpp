// The in-place check (in_place.hpp): which outputs go on which inputs, the in-place request made from
// a case's separate-buffer one, and its outputs judged against the reference and the separate run.
#include "kqual/check/in_place.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>

#include "kqual/check/labels.hpp"
#include "kqual/contract/compare.hpp"
#include "kqual/core/files.hpp"
#include "internal.hpp"

namespace kqual::check {
namespace fs = std::filesystem;

InPlacePlan plan_in_place(const contract::Contract& c, const contract::Supports& cand) {
  InPlacePlan p;
  const contract::Domain& d = c.domain();
  if (!d.in_place) {
    p.not_exercised = fmt::format("the {} contract has no in-place form{}", c.name(),
                                  d.no_in_place_reason.empty() ? "" : " (" + d.no_in_place_reason + ")");
    return p;
  }
  if (!cand.in_place) {
    p.not_exercised = fmt::format("not claimed: {} may not alias {} (such requests are refused, aliasing_not_claimed)",
                                  d.in_place->output, d.in_place->input);
    return p;
  }
  p.pairs.push_back({d.in_place->output, d.in_place->input});
  return p;
}

std::vector<AliasPair> case_pairs(const InPlacePlan& plan, const std::vector<contract::Tensor>& inputs,
                                  const std::vector<contract::Tensor>& expected) {
  auto find = [](const std::vector<contract::Tensor>& ts, const std::string& name) -> const contract::Tensor* {
    auto it = std::find_if(ts.begin(), ts.end(), [&](const contract::Tensor& t) { return t.name == name; });
    return it == ts.end() ? nullptr : &*it;
  };
  std::vector<AliasPair> out;
  for (const auto& p : plan.pairs) {
    const contract::Tensor* o = find(expected, p.output);
    const contract::Tensor* i = find(inputs, p.input);
    if (o && i && o->bytes.size() == i->bytes.size() && o->dtype == i->dtype && o->row_stride == 0 && i->row_stride == 0)
      out.push_back(p);
  }
  return out;
}

std::string describe_pairs(const std::vector<AliasPair>& pairs) {
  std::vector<std::string> words;
  for (const auto& p : pairs) words.push_back(fmt::format("{} on {}", p.output, p.input));
  return fmt::format("{}", fmt::join(words, ", "));
}

worker::RunRequest in_place_request(const worker::RunRequest& separate, const std::vector<AliasPair>& pairs, const fs::path& dir) {
  worker::RunRequest r = separate;
  r.placements.assign(r.poison.size(), "guarded");
  r.trap_only.clear();
  for (auto& b : r.buffers) {
    if (b.kind != worker::BufferKind::output) continue;
    auto p = std::find_if(pairs.begin(), pairs.end(), [&](const AliasPair& x) { return x.output == b.name; });
    if (p != pairs.end()) b.aliases = p->input;
    std::vector<std::string>& files = r.out_files[b.name];
    files.clear();
    for (std::size_t k = 0; k < r.poison.size(); ++k) files.push_back((dir / fmt::format("{}.inplace{}", b.name, k)).string());
  }
  return r;
}

namespace {

// Whether element i of a holds the byte b in every byte.
bool holds(const std::uint8_t* a, std::size_t es, std::size_t i, std::uint8_t b) {
  for (std::size_t j = 0; j < es; ++j)
    if (a[i * es + j] != b) return false;
  return true;
}

// A byte no element of an in-place output holds repeated: the comparison's "poison", so that every
// element is judged by its value (an element the kernel left alone holds its input's value, not a
// poison pattern).
std::uint8_t absent_pattern(const contract::Tensor& t, const std::uint8_t* data) {
  const std::size_t es = dtype_size(t.dtype), n = std::size_t(t.elements);
  std::array<bool, 256> seen{};
  for (std::size_t i = 0; i < n; ++i)
    if (holds(data, es, i, data[i * es])) seen[data[i * es]] = true;
  for (int b = 0; b < 256; ++b)
    if (!seen[std::size_t(b)]) return std::uint8_t(b);
  return 0xFF;  // every pattern occurs (one-byte outputs): the contract's comparison still names the element
}

// The first element whose bytes differ between the in-place and the separate output; nullopt when none.
std::optional<std::size_t> first_difference(const contract::Tensor& t, const std::uint8_t* a, const std::uint8_t* b) {
  const std::size_t es = dtype_size(t.dtype), n = std::size_t(t.elements);
  for (std::size_t i = 0; i < n; ++i)
    if (!std::equal(a + i * es, a + (i + 1) * es, b + i * es)) return i;
  return std::nullopt;
}

// One wrong element of an in-place output, as a reproducer lists it.
json element_json(const contract::Tensor& t, const std::string& pair, std::size_t run, std::size_t i, const std::string& actual,
                  const std::string& expected, const char* against) {
  json e{{"output", t.name}, {"run", run + 1}, {"index", i}, {"expected", expected}, {"actual", actual},
         {"in_place", pair}, {"expected_from", against}};
  if (i < t.ref.size() && i < t.bound.size()) {
    e["reference"] = t.ref[i];
    e["bound"] = t.bound[i];
  }
  return e;
}

// One output of one in-place run: right, or res set to aliasing_wrong naming the first element.
bool judge_output(const contract::Contract& c, const RunToRunPolicy& policy, const contract::Tensor& t, bool aliased,
                  const std::string& pair, std::size_t k, const worker::RunRequest& in_place, const worker::RunRequest& separate,
                  CaseResult& res) {
  const std::vector<std::string>& sep_files = separate.out_files.at(t.name);
  const MappedFile got = MappedFile::open_read(in_place.out_files.at(t.name).at(k));
  const MappedFile sep = MappedFile::open_read(sep_files.at(std::min(k, sep_files.size() - 1)));
  if (got.size() != t.bytes.size() || sep.size() != t.bytes.size()) {
    res.code = "harness_error";
    res.detail = fmt::format("in-place output '{}' came back with {} bytes, expected {}", t.name, got.size(), t.bytes.size());
    return false;
  }
  const std::string where = aliased ? fmt::format("{} in place ({})", t.name, pair) : fmt::format("{} (beside {} in place)", t.name, pair);
  const std::uint8_t poison = aliased ? absent_pattern(t, got.data()) : in_place.poison.at(k);
  const contract::Comparison cmp = c.compare(t, got.data(), poison);
  if (!cmp.ok) {
    const std::size_t i = cmp.examples.empty() ? 0 : std::size_t(cmp.examples.front());
    res.code = "aliasing_wrong";
    res.detail = fmt::format("{}, run {}: element {} is {} where the reference gives {} (with separate buffers it was {}; "
                             "{} element(s) wrong: {})",
                             where, k + 1, i, contract::format_element(t.dtype, got.data(), i),
                             contract::format_element(t.dtype, t.bytes.data(), i), contract::format_element(t.dtype, sep.data(), i),
                             cmp.mismatches, cmp.detail);
    res.failing_elements = json::array();
    for (const std::int64_t e : cmp.examples)
      if (e >= 0 && e < t.elements)
        res.failing_elements.push_back(element_json(t, pair, k, std::size_t(e), contract::format_element(t.dtype, got.data(), std::size_t(e)),
                                                    contract::format_element(t.dtype, t.bytes.data(), std::size_t(e)), "reference"));
    return false;
  }
  if (!policy.required) return true;  // within the reference's bound; the bytes may differ from run to run
  // The same bytes as one of the separate runs (their two placements may take two paths, each
  // reproducible: host_case.cpp's same_placement_repeats admits that).
  for (const auto& f : sep_files) {
    const MappedFile other = MappedFile::open_read(f);
    if (other.size() == t.bytes.size() && !first_difference(t, got.data(), other.data())) return true;
  }
  const std::optional<std::size_t> d = first_difference(t, got.data(), sep.data());
  if (!d) return true;
  res.code = "aliasing_wrong";
  res.detail = fmt::format("{}, run {}: element {} is {} where the separate-buffer run gave {} (both within the reference's "
                           "bound, but the contract requires the same bytes on the same inputs: {})",
                           where, k + 1, *d, contract::format_element(t.dtype, got.data(), *d),
                           contract::format_element(t.dtype, sep.data(), *d), policy.reason);
  res.failing_elements = json::array({element_json(t, pair, k, *d, contract::format_element(t.dtype, got.data(), *d),
                                                   contract::format_element(t.dtype, sep.data(), *d), "separate_run")});
  return false;
}

}  // namespace

bool judge_in_place(const contract::Contract& c, const RunToRunPolicy& policy, const worker::Answer<worker::RunReply>& r,
                    const worker::RunRequest& aliased, const worker::RunRequest& separate, const std::vector<AliasPair>& pairs,
                    const std::vector<contract::Tensor>& expected, CaseResult& res) {
  const std::string pair = describe_pairs(pairs);
  if (!r.ok()) {
    res.code = fault_code(r.raw);
    res.detail = fmt::format("in the in-place run ({}): {}", pair, fault_detail(r.raw));
    res.debug = fault_debug(r.raw);
    return false;
  }
  for (const auto& run : r.reply->runs) {
    if (!run.guard_violations.empty()) {
      res.code = "out_of_bounds_write";
      res.detail = fmt::format("in the in-place run ({}): {}", pair, worker::describe(run.guard_violations.front()));
      return false;
    }
    for (const auto& in : run.inputs)
      if (in.first_changed_byte >= 0) {
        res.code = "input_mutated";
        res.detail = fmt::format("in the in-place run ({}): input '{}' changed during the launch (hash {} -> {}), first at byte {}",
                                 pair, in.name, in.hash_before, in.hash_after, in.first_changed_byte);
        return false;
      }
  }
  for (std::size_t k = 0; k < aliased.poison.size(); ++k)
    for (const auto& t : expected) {
      const bool on_input = std::any_of(pairs.begin(), pairs.end(), [&](const AliasPair& p) { return p.output == t.name; });
      if (!judge_output(c, policy, t, on_input, pair, k, aliased, separate, res)) return false;
    }
  return true;
}

}  // namespace kqual::check
