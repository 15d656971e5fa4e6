// A submission's case judged from its activity record (record_judge.hpp). Order: the record's own
// integrity (harness_tampered), the streams (wrong_stream, unjoined_stream), work after the call
// returned (late_result), data moved to the host (host_compute), who did the work (reference_called).
#include "kqual/bench/record_judge.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <regex>
#include <set>

namespace kqual::bench {

std::string armed_mark(int k) { return fmt::format("armed{}", k); }
std::string call_mark(int k) { return fmt::format("call{}", k); }
std::string returned_mark(int k) { return fmt::format("returned{}", k); }
std::string fenced_mark(int k) { return fmt::format("fenced{}", k); }

std::string demangled(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out = d;
  std::free(d);
  return out;
}

namespace {

// Filling or copying memory: how outputs are allocated and made contiguous; allowed unless the
// problem's own reference launches the same kernel (a transpose is a copy).
const std::regex& allocation_kernels() {
  static const std::regex re("FillFunctor|copy_kernel|direct_copy_kernel|CatArrayBatchedCopy|Memset|Memcpy|fill_kernel");
  return re;
}

struct Regions {
  struct Call {
    std::uint32_t armed = 0, begin = 0, returned = 0, fenced = 0;
  };
  std::vector<Call> calls;
  std::optional<std::pair<std::uint32_t, std::uint32_t>> ref;
  long harness_tid = 0;
  std::uint32_t caller_stream = 0;
  std::string missing;  // the first mark not found, in order

  // 1-based call whose window holds corr, 0 for none; fence: the part after it returned, up to its fence.
  int call_of(std::uint32_t corr, bool* fence) const {
    for (std::size_t k = 0; k < calls.size(); ++k) {
      if (corr > calls[k].begin && corr <= calls[k].returned) {
        *fence = false;
        return int(k + 1);
      }
      if (corr > calls[k].returned && corr <= calls[k].fenced) {
        *fence = true;
        return int(k + 1);
      }
    }
    return 0;
  }
  bool in_ref(std::uint32_t corr) const { return ref && corr > ref->first && corr <= ref->second; }
  std::uint32_t last_read = 0;  // the recorder's last read of an output: work after it changes no value judged
  // Between the first call's spin and the recorder's last read of an output, outside every call, fence and
  // spin region.
  bool between_calls(std::uint32_t corr) const {
    if (calls.empty() || corr <= calls.front().armed || corr > last_read || in_ref(corr)) return false;
    for (const auto& c : calls)
      if (corr > c.armed && corr <= c.fenced) return false;
    return true;
  }
};

Regions regions_of(const ActivityRecord& r, int calls) {
  Regions g;
  auto find = [&](const std::string& label) -> const RecordMark* {
    for (const auto& m : r.marks)
      if (m.label == label) return &m;
    return nullptr;
  };
  std::uint32_t last = 0;
  std::set<std::string> seen;
  for (const auto& m : r.marks)
    if (!seen.insert(m.label).second && g.missing.empty()) g.missing = fmt::format("the mark '{}' is in the record twice", m.label);
  for (int k = 1; k <= calls && g.missing.empty(); ++k) {
    const RecordMark *a = find(armed_mark(k)), *b = find(call_mark(k)), *e = find(returned_mark(k)), *f = find(fenced_mark(k));
    for (const auto& [m, label] : {std::pair{a, armed_mark(k)}, std::pair{b, call_mark(k)}, std::pair{e, returned_mark(k)},
                                   std::pair{f, fenced_mark(k)}}) {
      if (!m) {
        g.missing = fmt::format("the mark '{}' is not in the record", label);
        break;
      }
      if (m->last_corr < last) {
        g.missing = fmt::format("the mark '{}' is out of order", label);
        break;
      }
      last = m->last_corr;
    }
    if (!g.missing.empty()) break;
    if (k == 1) {
      g.harness_tid = b->tid;
      g.caller_stream = b->stream;
    }
    g.calls.push_back({a->last_corr, b->last_corr, e->last_corr, f->last_corr});
  }
  for (const auto& rd : r.reads)
    if (rd.label.rfind("out", 0) == 0) g.last_read = std::max(g.last_read, rd.last_corr);
  const RecordMark *rb = find("ref"), *re = find("ref-done");
  if (rb && re) g.ref = std::pair{rb->last_corr, re->last_corr};
  return g;
}

// Launches that succeeded and were not captured into a graph, without the kernel they launched.
std::vector<const RecordLaunch*> launches_without_kernels(const ActivityRecord& r) {
  std::set<std::uint32_t> ran;
  for (const auto& a : r.activities) ran.insert(a.corr);
  // Captures by thread: a launch between a capture's begin and end (on its thread) runs only when the
  // graph does, under the graph launch's number.
  std::map<long, std::vector<std::pair<std::uint32_t, std::uint32_t>>> captures;
  std::map<long, std::uint32_t> open;
  for (const auto& [corr, l] : r.launches) {
    if (l.api.find("BeginCapture") != std::string::npos) open[l.tid] = corr;
    if (l.api.find("EndCapture") != std::string::npos) {
      const auto it = open.find(l.tid);
      captures[l.tid].push_back({it == open.end() ? 0 : it->second, corr});
      if (it != open.end()) open.erase(it);
    }
  }
  for (const auto& [tid, begin] : open) captures[tid].push_back({begin, std::numeric_limits<std::uint32_t>::max()});
  std::vector<const RecordLaunch*> out;
  for (const auto& [corr, l] : r.launches) {
    const bool launch = l.api.find("Launch") != std::string::npos && l.api.find("Graph") == std::string::npos &&
                        l.api.find("HostFunc") == std::string::npos;
    if (!launch || l.status != 0 || ran.count(corr)) continue;
    bool captured = false;
    for (const auto& [b, e] : captures[l.tid]) captured = captured || (corr > b && corr < e);
    if (!captured) out.push_back(&l);
  }
  return out;
}

std::string us(double ns) { return fmt::format("{:.1f} us", ns / 1e3); }


// The harness's own work between the calls, up to the recorder's last read of an output
// (tools/torch/submission_worker.py): the spins it puts on the side streams before a call (ATen's sleep
// kernel), reading to the host, the recorder's own uploads of datasets B and A (`own`: their copies), and
// dataset B copied into A's tensors (D2D, an input's size, 1 per input). Anything else there (a kernel, a
// memset, a copy from the host the recorder did not make, a device copy of another size or more of them)
// changed values after a call: "" when the work is the harness's, else what was not.
std::string not_the_harness(const ActivityRecord& r, const std::vector<RecordModule>& modules, const Regions& g, const RecordRules& rules,
                            const std::set<std::uint32_t>& own) {
  if (rules.input_bytes.empty()) return "";
  std::size_t device_copies = 0;
  for (const auto& a : r.activities) {
    if (!g.between_calls(a.corr)) continue;
    const auto l = r.launches.find(a.corr);
    if (l != r.launches.end() && l->second.tid != g.harness_tid) continue;  // another thread's: late_result
    bool ok = false;
    if (a.kind == 'K')
      ok = l != r.launches.end() && classify_origin(l->second, a.name, modules) == WorkOrigin::aten &&
           std::regex_search(demangled(a.name), std::regex("spin_kernel|at::cuda::sleep"));
    else if (a.kind == 'M' && a.copy_kind == kMemcpyDeviceToHost)
      ok = true;
    else if (a.kind == 'M' && a.copy_kind == kMemcpyHostToDevice)
      ok = own.count(a.corr) > 0;
    else if (a.kind == 'M' && a.copy_kind == kMemcpyDeviceToDevice) {
      const bool sized = std::find(rules.input_bytes.begin(), rules.input_bytes.end(), a.bytes) != rules.input_bytes.end();
      ok = sized && ++device_copies <= rules.input_bytes.size();
    }
    if (!ok)
      return fmt::format("{} ran between the calls, outside every call and the reference ({}): kqual's worker does no such work "
                         "there; the worker was changed to make or change values after a call",
                         what_ran(a),
                         a.kind == 'M' && a.copy_kind == kMemcpyHostToDevice ? std::string("a copy from the host that kqual's recorder did not make")
                         : a.kind == 'M'                                      ? fmt::format("copy kind {}", a.copy_kind)
                                                                              : std::string("not the harness's"));
  }
  return "";
}

std::optional<RecordJudgement> integrity(const ActivityRecord& r, const Regions& g, int calls) {
  RecordJudgement j;
  if (!r.broken.empty()) {
    j.failure = SubmissionFailure::harness_tampered;
    j.detail = "the activity record was tampered with: " + r.broken;
    return j;
  }
  if (!r.started) {
    j.failure = SubmissionFailure::harness_error;
    j.detail = "kqual's activity recorder did not start in the worker" + (r.errors.empty() ? std::string() : ": " + r.errors.front());
    return j;
  }
  if (!r.errors.empty()) {
    j.failure = SubmissionFailure::harness_error;
    j.detail = "kqual's activity recorder failed: " + r.errors.front();
    return j;
  }
  if (r.dropped > 0) {
    j.failure = SubmissionFailure::harness_error;
    j.detail = fmt::format("CUPTI dropped {} activity records (its buffers were full): the record is incomplete", r.dropped);
    return j;
  }
  if (calls > 0 && !g.missing.empty()) {
    j.failure = SubmissionFailure::harness_tampered;
    j.detail = "the worker's marks do not add up: " + g.missing + " (the worker's calls into the recorder were changed or skipped)";
    return j;
  }
  // The harness's own regions around each call hold one kernel each on the caller's stream (the spin
  // before, the fence after): marks moved by anyone else leave the call's work in one of them.
  for (std::size_t k = 0; k < g.calls.size(); ++k) {
    int spin = 0, fence = 0, other = 0;
    for (const auto& a : r.activities) {
      const auto l = r.launches.find(a.corr);
      if (l != r.launches.end() && l->second.tid != g.harness_tid) continue;  // another thread's: judged as late work
      const bool in_spin = a.corr > g.calls[k].armed && a.corr <= g.calls[k].begin;
      const bool in_fence = a.corr > g.calls[k].returned && a.corr <= g.calls[k].fenced;
      if (!in_spin && !in_fence) continue;
      if (a.kind != 'K' || a.stream != g.caller_stream) ++other;
      else ++(in_spin ? spin : fence);
    }
    if (spin != 1 || fence != 1 || other != 0) {
      j.failure = SubmissionFailure::harness_tampered;
      j.detail = fmt::format("call {}: the harness's spin and fence regions hold {} and {} kernel(s) and {} other activit(ies), "
                             "not one kernel each: the worker's marks were moved",
                             k + 1, spin, fence, other);
      return j;
    }
  }
  if (const auto lost = launches_without_kernels(r); !lost.empty()) {
    j.failure = SubmissionFailure::harness_tampered;
    j.detail = fmt::format("{} launch(es) that succeeded have no kernel in the record (the first: {} from {}): activity recording was "
                           "switched off or records were removed",
                           lost.size(), lost.front()->api, lost.front()->origin);
    return j;
  }
  return std::nullopt;
}

// What crossed to the host in each call: a copy of half the outputs to the host, or as much uploaded, is the
// work done on the host (host_compute). ref_from_host: what the problem's own reference uploaded in its run
// (a model that moves a CPU tensor to the GPU in forward, as KernelBench's RNNs move h0), where it ran.
void host_findings(const std::vector<std::uint64_t>& to_host, const std::vector<std::uint64_t>& from_host, std::uint64_t output_bytes,
                   std::optional<std::uint64_t> ref_from_host, std::vector<std::pair<SubmissionFailure, std::string>>& found) {
  const std::uint64_t floor = std::max<std::uint64_t>(64, output_bytes / 2);
  for (std::size_t c = 0; c < to_host.size(); ++c)
    if (to_host[c] >= floor)
      found.push_back({SubmissionFailure::host_compute,
                       fmt::format("call {} copied {} bytes from the GPU to the host (and {} back): the work was done on the host, not "
                                   "by a kernel",
                                   c + 1, to_host[c], from_host[c])});
  // A result computed on the host from the inputs read elsewhere (kqual's dataset files, say) needs no copy to
  // the host, only one back: on one call (every result made at once) or on each. Where the reference ran, a call
  // that uploads as much, beyond what the reference uploads, is that; where it did not, only uploads on every
  // call are (a tensor made on the CPU and moved once, a first call's constants, is not a result).
  // At least 64 KiB: a library's or compiler's own small uploads on a first call (torch.compile uploads ~70
  // bytes) are not a result; a result computed on the host is caught on the larger cases.
  const std::uint64_t up_floor = std::max<std::uint64_t>(std::uint64_t(64) << 10, output_bytes / 2);
  if (ref_from_host) {
    for (std::size_t c = 0; c < from_host.size(); ++c)
      if (from_host[c] >= up_floor && from_host[c] > *ref_from_host) {
        found.push_back({SubmissionFailure::host_compute,
                         fmt::format("call {} copied {} bytes from the host to the GPU (half the outputs' {} bytes is {}; the problem's "
                                     "reference, {}): a result computed on the host and uploaded, not made by a kernel (a tensor made "
                                     "on the CPU, as torch.zeros(n).cuda() makes one, counts too: make it on the GPU, device=x.device)",
                                     c + 1, from_host[c], output_bytes, up_floor, *ref_from_host)});
        return;
      }
  } else if (!from_host.empty() && std::all_of(from_host.begin(), from_host.end(), [&](std::uint64_t b) { return b >= up_floor; }))
    found.push_back({SubmissionFailure::host_compute,
                     fmt::format("every call copied at least {} bytes from the host to the GPU (half the outputs' {} bytes; call 1: {}): "
                                 "the result was computed on the host and uploaded, not made by a kernel (a tensor made on the CPU "
                                 "each call, as torch.zeros(n).cuda() makes one, counts too: make it on the GPU, device=x.device)",
                                 up_floor, output_bytes, from_host.front())});
}

// The most telling finding first: the record, streams, late work, the host, then the library.
void most_telling(const std::vector<std::pair<SubmissionFailure, std::string>>& found, RecordJudgement& j) {
  const SubmissionFailure order[] = {SubmissionFailure::harness_tampered, SubmissionFailure::wrong_stream, SubmissionFailure::unjoined_stream,
                                     SubmissionFailure::late_result, SubmissionFailure::host_compute, SubmissionFailure::reference_called};
  for (SubmissionFailure f : order)
    for (const auto& [ff, d] : found)
      if (ff == f) {
        j.failure = ff;
        j.detail = d;
        return;
      }
}

}  // namespace

RecordJudgement judge_case_record(const ActivityRecord& r, const std::vector<RecordModule>& modules, int calls, const RecordRules& rules) {
  const Regions g = regions_of(r, calls);
  if (auto bad = integrity(r, g, calls)) return *bad;
  RecordJudgement j;
  std::set<std::uint32_t> own;
  if (std::string bad = check_uploads(r, rules.uploads, &own); !bad.empty()) {
    j.failure = SubmissionFailure::harness_tampered;
    j.detail = bad;
    return j;
  }
  if (std::string other = not_the_harness(r, modules, g, rules, own); !other.empty()) {
    j.failure = SubmissionFailure::harness_tampered;
    j.detail = other;
    return j;
  }
  std::vector<std::regex> allow;
  for (const auto& a : rules.allow) allow.emplace_back(a);
  // The reference's kernels, on the same values: one of those in a call is the reference's work.
  std::set<std::string> reference;
  for (const auto& a : r.activities)
    if (a.kind == 'K' && g.in_ref(a.corr)) reference.insert(demangled(a.name));
  j.reference_kernels.assign(reference.begin(), reference.end());
  // The fence of each call: where the caller's stream had finished everything the call put on it.
  std::vector<std::uint64_t> fence_start(g.calls.size(), 0);
  for (const auto& a : r.activities) {
    bool fence = false;
    const int k = g.call_of(a.corr, &fence);
    if (k > 0 && fence && a.stream == g.caller_stream && (fence_start[k - 1] == 0 || a.start < fence_start[k - 1])) fence_start[k - 1] = a.start;
  }
  for (std::size_t k = 0; k < fence_start.size(); ++k)
    if (fence_start[k] == 0) {
      j.failure = SubmissionFailure::harness_tampered;
      j.detail = fmt::format("the fence after call {} is not in the record", k + 1);
      return j;
    }
  std::map<std::string, std::size_t> kernel_at;
  j.call_work.assign(g.calls.size(), 0);
  std::vector<std::uint64_t> to_host(g.calls.size(), 0), from_host(g.calls.size(), 0);
  std::vector<std::pair<SubmissionFailure, std::string>> found;
  for (const auto& a : r.activities) {
    bool fence = false;
    const int k = g.call_of(a.corr, &fence);
    const auto lit = r.launches.find(a.corr);
    const RecordLaunch* l = lit == r.launches.end() ? nullptr : &lit->second;
    const bool harness_thread = !l || l->tid == g.harness_tid;
    if (k == 0 || fence) {
      // Outside the call: the harness's own work (reading outputs, the fence, the next inputs), on its thread.
      if (!harness_thread && !g.in_ref(a.corr))
        found.push_back({SubmissionFailure::late_result,
                         fmt::format("{} was enqueued by thread {} after call {} returned (the harness's thread is {}): work the call "
                                     "left running",
                                     what_ran(a), l->tid, std::max(k, 1), g.harness_tid)});
      continue;
    }
    const std::size_t c = std::size_t(k - 1);
    ++j.call_work[c];
    if (r.legacy_stream && a.stream == *r.legacy_stream && a.stream != g.caller_stream)
      found.push_back({SubmissionFailure::wrong_stream,
                       fmt::format("call {}: {} ran on the legacy default stream, which is not ordered with the stream the caller "
                                   "called on: launch on the current stream (C++: at::cuda::getCurrentCUDAStream(), e.g. "
                                   "kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>; Python: torch.cuda.current_stream())",
                                   k, what_ran(a))});
    else if (a.stream != g.caller_stream && a.end > fence_start[c])
      found.push_back({SubmissionFailure::unjoined_stream,
                       fmt::format("call {}: {} on a side stream ended {} after the caller's stream had finished the call: the call "
                                   "did not make the caller's stream wait for it (caller.wait_stream(side) / cudaStreamWaitEvent)",
                                   k, what_ran(a), us(double(a.end - fence_start[c])))});
    if (a.kind == 'M' && a.copy_kind == kMemcpyDeviceToHost) to_host[c] += a.bytes;
    if (a.kind == 'M' && a.copy_kind == kMemcpyHostToDevice) from_host[c] += a.bytes;
    const double ns = double(a.end > a.start ? a.end - a.start : 0);
    if (a.kind != 'K') {
      j.gpu_ns_by_origin["copies and memsets"] += ns;
      continue;
    }
    if (!l) {
      if (rules.require_origin)
        found.push_back({SubmissionFailure::harness_tampered,
                         fmt::format("call {}: {} ran without a launch in the record", k, what_ran(a))});
      continue;
    }
    const std::string name = demangled(a.name);
    const WorkOrigin o = classify_origin(*l, a.name, modules);
    j.gpu_ns_by_origin[to_string(o)] += ns;
    auto [it, fresh] = kernel_at.emplace(name, j.kernels.size());
    if (fresh) {
      RecordKernel rk;
      rk.name = name;
      rk.origin = o;
      rk.object = l->origin;
      rk.reference = reference.count(name) && !std::regex_search(name, std::regex("FillFunctor|Memset|fill_kernel"));
      rk.allowed = std::any_of(allow.begin(), allow.end(), [&](const std::regex& re) { return std::regex_search(name, re); }) ||
                   (!rk.reference && std::regex_search(name, allocation_kernels()));
      j.kernels.push_back(rk);
    }
    j.kernels[it->second].ns += ns;
  }
  std::optional<std::uint64_t> ref_from_host;
  if (g.ref) {
    ref_from_host = 0;
    for (const auto& a : r.activities)
      if (g.in_ref(a.corr) && a.kind == 'M' && a.copy_kind == kMemcpyHostToDevice) *ref_from_host += a.bytes;
  }
  host_findings(to_host, from_host, rules.output_bytes, ref_from_host, found);
  std::vector<std::string> handed;
  double handed_ns = 0, all_ns = 0;
  for (const auto& k : j.kernels) {
    all_ns += k.ns;
    if (k.allowed) continue;
    if (k.reference || k.origin != WorkOrigin::own) {
      if (k.origin == WorkOrigin::unknown) continue;
      handed.push_back(fmt::format("{} ({}{})", k.name.substr(0, 120), k.reference ? "the problem's reference" : to_string(k.origin),
                                   k.object.empty() || k.object == "-" ? "" : ", from " + k.object.substr(k.object.rfind('/') + 1)));
      handed_ns += k.ns;
    }
  }
  // Partial replacement (an imported problem): the library may keep the operators the solution left alone,
  // where its own kernels do part of the work and not every kernel the reference launches ran.
  double own_ns = 0;
  std::set<std::string> ran;
  for (const auto& k : j.kernels) {
    ran.insert(k.name);
    if (k.origin == WorkOrigin::own && !k.reference && !k.allowed) own_ns += k.ns;
  }
  const bool replaced_some = std::any_of(j.reference_kernels.begin(), j.reference_kernels.end(), [&](const std::string& n) {
    return !ran.count(n) && !std::regex_search(n, std::regex("FillFunctor|Memset|fill_kernel"));
  });
  if (!handed.empty() && rules.partial_replacement && own_ns > 0 && replaced_some) {
    j.kept_library = handed;
    handed.clear();
  }
  if (!handed.empty()) {
    std::string list;
    for (std::size_t i = 0; i < handed.size() && i < 3; ++i) list += (i ? ", " : "") + handed[i];
    if (handed.size() > 3) list += fmt::format(" and {} more", handed.size() - 3);
    found.push_back({SubmissionFailure::reference_called,
                     fmt::format("the work was handed to a library or the reference: {} ({:.0f} % of the calls' kernel time){}; allow a "
                                 "kernel by name with --allow-kernel if the problem permits it",
                                 list, all_ns > 0 ? 100 * handed_ns / all_ns : 0.0,
                                 !rules.partial_replacement ? ""
                                 : own_ns <= 0             ? " (the problem allows keeping some of its operators, but the "
                                                             "submission's own kernels did none of the work)"
                                                           : " (the problem allows keeping some of its operators, but every kernel "
                                                             "its reference launches ran in the call: nothing was replaced)")});
  }
  most_telling(found, j);
  return j;
}

std::string what_ran(const RecordActivity& a) {
  if (a.kind == 'K') return fmt::format("kernel {}", demangled(a.name).substr(0, 160));
  if (a.kind == 'S') return fmt::format("a memset of {} bytes", a.bytes);
  return fmt::format("a copy of {} bytes", a.bytes);
}

}  // namespace kqual::bench
