// A PyTorch submission's timed calls on fresh values, checked against its activity record (timed_samples.hpp).
#include "kqual/bench/timed_samples.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "kqual/bench/record_mac.hpp"
#include "kqual/check/evaluate.hpp"
#include "kqual/core/dtype.hpp"
#include "timed_verify.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

// Where the marks of timed call `id` sit among the record's marks.
struct CallMarks {
  int id = 0;
  std::size_t open = 0, close = 0;
};

std::optional<int> sample_id(const std::string& label, char prefix) {
  if (label.size() < 2 || label[0] != prefix) return std::nullopt;
  int v = 0;
  for (std::size_t i = 1; i < label.size(); ++i) {
    if (label[i] < '0' || label[i] > '9' || v > 100000000) return std::nullopt;
    v = v * 10 + (label[i] - '0');
  }
  return v;
}

// The timed calls of the block in mark order, or "" with *why set where their marks do not pair up.
std::vector<CallMarks> timed_calls(const ActivityRecord& r, std::string* why) {
  std::vector<CallMarks> calls;
  std::map<int, std::size_t> open;
  for (std::size_t i = 0; i < r.marks.size(); ++i) {
    const std::string& l = r.marks[i].label;
    if (const auto id = sample_id(l, 't')) {
      if (open.count(*id) || std::any_of(calls.begin(), calls.end(), [&](const CallMarks& c) { return c.id == *id; })) {
        *why = fmt::format("timed call {} is marked twice", *id);
        return {};
      }
      open[*id] = i;
    } else if (l.size() > 2 && l[0] == '/' && l[1] == 't') {
      const auto closed = sample_id(l.substr(1), 't');
      if (!closed || !open.count(*closed)) {
        *why = fmt::format("the mark '{}' closes no timed call", l);
        return {};
      }
      calls.push_back({*closed, open[*closed], i});
      open.erase(*closed);
    }
  }
  if (!open.empty()) *why = fmt::format("timed call {} was opened and never closed", open.begin()->first);
  return calls;
}

}  // namespace

std::vector<std::uint8_t> rolled_bytes(const std::vector<std::uint8_t>& bytes, std::size_t element_size, std::int64_t shift) {
  const std::size_t n = element_size ? bytes.size() / element_size : 0;
  if (n == 0) return bytes;
  const std::size_t s = std::size_t(((shift % std::int64_t(n)) + std::int64_t(n)) % std::int64_t(n)) * element_size;
  std::vector<std::uint8_t> out(bytes.size());
  std::copy(bytes.begin() + std::ptrdiff_t(s), bytes.end(), out.begin());
  std::copy(bytes.begin(), bytes.begin() + std::ptrdiff_t(s), out.end() - std::ptrdiff_t(s));
  return out;
}

FreshBlock fresh_block(const ActivityRecord& r, const std::uint64_t key[2], const std::vector<int>& kept, const FreshBlockRules& rules) {
  FreshBlock b;
  const std::vector<CallMarks> calls = timed_calls(r, &b.tampered);
  if (!b.tampered.empty()) return b;
  b.calls = int(calls.size());
  // Every draw once, with the value kqual computes.
  std::map<std::string, const RecordDraw*> draws;
  for (const auto& d : r.draws) {
    if (!draws.emplace(d.label, &d).second) {
      b.tampered = fmt::format("the recorder was asked for '{}' twice: a draw is asked once, by kqual's worker", d.label);
      return b;
    }
    if (d.value != draw_value(key, d.label)) {
      b.tampered = fmt::format("the draw '{}' in the record is not the recorder's value", d.label);
      return b;
    }
  }
  std::map<std::string, int> reads;
  for (const auto& rd : r.reads)
    if (rd.label.size() > 1 && rd.label[0] == 's' && rd.label[1] >= '0' && rd.label[1] <= '9') ++reads[rd.label];
  std::size_t used_draws = 0, used_reads = 0;
  int chosen = 0;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const CallMarks& c = calls[k];
    // Its inputs' shifts: asked after the call before it ended, before this one began.
    const std::size_t after = k == 0 ? 0 : calls[k - 1].close + 1;
    VerifiedCall v;
    v.id = c.id;
    v.dataset = (c.id - 1) % 2;
    for (const auto& [name, elements] : rules.rolled) {
      const std::string label = fmt::format("p{}:{}", c.id, name);
      const auto it = draws.find(label);
      if (it == draws.end() || it->second->marks_before < after || it->second->marks_before > c.open) {
        b.tampered = fmt::format("timed call {}: {}", c.id,
                                 it == draws.end() ? fmt::format("input '{}' was not given fresh values (no draw '{}')", name, label)
                                                   : fmt::format("the draw '{}' of its input's shift was asked outside its place (before "
                                                                 "the call, after the one before it)",
                                                                 label));
        return b;
      }
      ++used_draws;
      v.shift[name] = elements > 0 ? std::int64_t(it->second->value % std::uint64_t(elements)) : 0;
    }
    // Whether it is read back: asked after the call ended, before the next began.
    const std::string label = fmt::format("s{}", c.id);
    const auto it = draws.find(label);
    const std::size_t before = k + 1 < calls.size() ? calls[k + 1].open : r.marks.size();
    if (it == draws.end() || it->second->marks_before <= c.close || it->second->marks_before > before) {
      b.tampered = fmt::format("timed call {}: {}", c.id,
                               it == draws.end() ? "the draw that decides whether it is read back is missing"
                                                 : "the draw that decides whether it is read back was asked before the call ended");
      return b;
    }
    ++used_draws;
    const int kept_before = int(std::count_if(kept.begin(), kept.end(), [&](int id) { return id < c.id; }));
    const std::uint64_t left = std::uint64_t(std::max(rules.samples - kept_before, 1));
    const int want = rules.verify - chosen;
    const bool pick = want > 0 && it->second->value % left < std::uint64_t(want);
    const auto times_read = [&](const std::string& l) {
      const auto r_it = reads.find(l);
      return r_it == reads.end() ? 0 : r_it->second;
    };
    int found = 0;
    for (const auto& n : rules.inputs) found += times_read(fmt::format("s{}:in:{}", c.id, n));
    for (const auto& n : rules.outputs) found += times_read(fmt::format("s{}:out:{}", c.id, n));
    const int expected = pick ? int(rules.inputs.size() + rules.outputs.size()) : 0;
    if (found != expected) {
      b.tampered = pick ? fmt::format("timed call {} was drawn to be read back, and the record holds {} of its {} reads", c.id, found, expected)
                        : fmt::format("timed call {} was read back although the draw did not pick it", c.id);
      return b;
    }
    used_reads += std::size_t(found);
    if (pick) {
      ++chosen;
      b.verified.push_back(std::move(v));
    }
  }
  if (used_draws != r.draws.size()) {
    b.tampered = fmt::format("the record holds {} draw(s) that no timed call of kqual's worker asked for", r.draws.size() - used_draws);
    return b;
  }
  std::size_t sample_reads = 0;
  for (const auto& [l, n] : reads) sample_reads += std::size_t(n);
  if (sample_reads != used_reads) {
    b.tampered = fmt::format("the record holds {} read(s) of timed calls' memory that kqual's worker does not make", sample_reads - used_reads);
    b.verified.clear();
  }
  return b;
}

json submission_verification(const TimingReport& rep, int target) {
  std::size_t compared = 0, calls = 0;
  json shapes = json::array();
  for (const auto& sh : rep.shapes) {
    if (sh.series.empty()) continue;
    const Series& c = sh.series[0];
    compared += c.reference_compared;
    calls += c.launches;
    shapes.push_back({{"shape", sh.shape}, {"timed_calls", c.launches}, {"compared_with_reference", c.reference_compared}});
  }
  const double p = detail::detection_one_in_ten(compared);
  std::string said = fmt::format(
      "{} of the submission's {} timed calls were read back by kqual's recorder after the call and compared with the contract's "
      "reference on their own values (every timed call's floating-point inputs rotated by a number drawn just before it), picked by a "
      "draw made after each call that the submission cannot know: a submission wrong on one timed call in ten, at random, is caught "
      "with probability {:.2f} %.",
      compared, calls, 100 * p);
  if (target > 0 && compared < std::size_t(target))
    said += fmt::format(" That is fewer than the {} aimed at ({:.2f} %): each comparison costs a reference computed on the host, within "
                        "an element budget; more rounds or samples (--rounds, --samples), or --verify-launches N, give more.",
                        target, 100 * detail::detection_one_in_ten(std::size_t(target)));
  return json{{"timed_calls", calls}, {"compared_with_reference", compared}, {"target_compared_with_reference", target},
              {"detection_one_in_ten", p}, {"statement", said}, {"shapes", shapes}};
}

fs::path read_back_file(const fs::path& dir, int id, const std::string& output) { return dir / fmt::format("s{}.{}.out", id, output); }

std::string verify_read_back(const contract::Contract& c, contract::ReferenceHost& host, const contract::CaseData& dataset,
                             const VerifiedCall& v, const ActivityRecord& r, const std::uint64_t key[2], const fs::path& dir,
                             std::string* code) {
  contract::CaseData given = dataset;
  for (auto& t : given.inputs)
    if (const auto it = v.shift.find(t.name); it != v.shift.end()) t.bytes = rolled_bytes(t.bytes, dtype_size(t.dtype), it->second);
  *code = "harness_tampered";
  for (const auto& t : given.inputs) {
    const std::string label = fmt::format("s{}:in:{}", v.id, t.name);
    const auto rd = std::find_if(r.reads.begin(), r.reads.end(), [&](const RecordRead& x) { return x.label == label; });
    kqual_record::ContentMac mac(key);
    mac.update(t.bytes.data(), t.bytes.size());
    if (rd == r.reads.end() || rd->status != 0 || rd->bytes != t.bytes.size() || rd->mac != mac.final())
      return fmt::format("timed call {}: input '{}' in the GPU's memory after the call (read by the recorder) is not the values kqual "
                         "gave it (dataset {} shifted by {} elements): the call wrote into its input, or the worker's copy was changed",
                         v.id, t.name, v.dataset == 0 ? "A" : "B", v.shift.count(t.name) ? v.shift.at(t.name) : 0);
  }
  const std::vector<contract::Tensor> expected = c.reference(given, host);
  std::vector<std::pair<std::string, fs::path>> files;
  for (const auto& t : expected) files.push_back({fmt::format("s{}:out:{}", v.id, t.name), read_back_file(dir, v.id, t.name)});
  if (std::string bad = check_reads(r, key, files); !bad.empty()) return fmt::format("timed call {}: {}", v.id, bad);
  for (const auto& t : expected) {
    std::string why;
    const std::string det = check::verify_output_file(c, t, read_back_file(dir, v.id, t.name), 0xFF, &why);
    if (!det.empty()) {
      *code = why.empty() ? "wrong_result" : why;
      return fmt::format("timed call {} (fresh values: dataset {}{}; its output read back by the recorder after the call): output '{}' "
                         "({}): {}",
                         v.id, v.dataset == 0 ? "A" : "B", v.shift.empty() ? "" : " shifted as drawn", t.name, *code, det);
    }
  }
  code->clear();
  return "";
}

}  // namespace kqual::bench
