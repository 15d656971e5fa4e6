#include "kqual/worker/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "kqual/core/enum_names.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/files.hpp"

namespace kqual::worker {
namespace {

constexpr EnumNames<BufferKind, 3> kBufferKindNames{{{
    {BufferKind::input, "input"}, {BufferKind::output, "output"}, {BufferKind::scratch, "scratch"}}}};

// A map keyed by name as a JSON object (an empty one when the map is).
template <class Map>
json object_json(const Map& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

// A field of a message, or Error(worker) naming the op and the field.
const json& field(const json& j, const char* op, const char* name) {
  if (!j.is_object() || !j.contains(name))
    throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' message without '{}': {}", op, name, j.dump().substr(0, 200)));
  return j.at(name);
}

template <class T>
T get(const json& j, const char* op, const char* name) {
  try {
    return field(j, op, name).get<T>();
  } catch (const json::exception& e) {
    throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' field '{}': {}", op, name, e.what()));
  }
}

template <class T>
T get_or(const json& j, const char* op, const char* name, T dflt) {
  if (!j.is_object() || !j.contains(name)) return dflt;
  return get<T>(j, op, name);
}

// BenchRequest's settings (every field but the module, buffers, launches and the file maps) by their
// wire names, in the order to_json writes them: fn(name, field) for each. to_json writes them all;
// bench_request_from_json reads each one given and keeps BenchRequest's default for one absent.
template <class Request, class Fn>
void for_each_bench_setting(Request& r, Fn&& fn) {
  fn("out_hashes", r.out_hashes);
  fn("flush", r.flush);
  fn("flush_mode", r.flush_mode);
  fn("warmup", r.warmup);
  fn("min_samples", r.min_samples);
  fn("max_samples", r.max_samples);
  fn("max_seconds", r.max_seconds);
  fn("target_rel_noise", r.target_rel_noise);
  fn("guard_bytes", r.guard_bytes);
  fn("check_samples", r.check_samples);
  fn("timer", r.timer);
  fn("graph_launches", r.graph_launches);
  fn("clock_guard", r.clock_guard);
  fn("clock_share", r.clock_share);
  fn("max_discards", r.max_discards);
  fn("backoff_ms", r.backoff_ms);
  fn("fresh_inputs", r.fresh_inputs);
  fn("fresh_base", r.fresh_base);
  fn("generator_module", r.generator_module);
  fn("save_launches", r.save_launches);
  fn("give_hash_slots", r.give_hash_slots);
}

// The timer a message names (absent: events), or Error(worker) naming the word and the choices.
TimerKind timer_from(const json& j, const char* op) {
  const std::string word = get_or<std::string>(j, op, "timer", "events");
  const std::optional<TimerKind> kind = parse_timer_kind(word);
  if (!kind) throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' timer '{}' ({})", op, word, kTimerKindNames.choices()));
  return *kind;
}

json buffers_json(const std::vector<Buffer>& bs) {
  json a = json::array();
  for (const auto& b : bs) {
    json x{{"name", b.name}, {"kind", to_string(b.kind)}, {"bytes", b.bytes}};
    if (b.offset) x["offset"] = b.offset;
    if (!b.file.empty()) x["file"] = b.file;
    if (!b.alt_file.empty()) x["alt_file"] = b.alt_file;
    if (b.align) x["align"] = b.align;
    if (b.generated()) x["generate"] = {{"stream", b.gen_stream}, {"seed", b.gen_seed}, {"dtype", b.gen_dtype}};
    if (b.elem_bytes) x["elem_bytes"] = b.elem_bytes;
    if (!b.windows.empty()) x["windows"] = b.windows;
    if (b.chunk_elements) x["chunk_elements"] = b.chunk_elements;
    if (!b.aliases.empty()) x["aliases"] = b.aliases;
    a.push_back(std::move(x));
  }
  return a;
}

// An output that aliases an input (Buffer::aliases) names an input of the same request with its bytes
// and offset, and is read back whole (no windows, no chunk hashes).
void check_aliases(const std::vector<Buffer>& bs, const char* op) {
  for (const auto& b : bs) {
    if (b.aliases.empty()) continue;
    auto fail = [&](const std::string& why) {
      throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' buffer '{}' aliases '{}': {}", op, b.name, b.aliases, why));
    };
    if (b.kind != BufferKind::output) fail("only an output may alias an input");
    if (!b.windows.empty() || b.chunk_elements) fail("an aliased output is read back whole (no windows, no chunk hashes)");
    auto in = std::find_if(bs.begin(), bs.end(), [&](const Buffer& x) { return x.name == b.aliases; });
    if (in == bs.end() || in->kind != BufferKind::input) fail("no input buffer has that name");
    if (in->bytes != b.bytes || in->offset != b.offset)
      fail(fmt::format("the input has {} bytes at offset {}, the output {} at {}", in->bytes, in->offset, b.bytes, b.offset));
  }
}

std::vector<Buffer> buffers_from(const json& j, const char* op) {
  std::vector<Buffer> out;
  for (const auto& x : field(j, op, "buffers")) {
    Buffer b;
    b.name = get<std::string>(x, op, "name");
    const std::string kind = get<std::string>(x, op, "kind");
    const std::optional<BufferKind> parsed = kBufferKindNames.parse(kind);
    if (!parsed) throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' buffer '{}' has kind '{}'", op, b.name, kind));
    b.kind = *parsed;
    b.bytes = get<std::size_t>(x, op, "bytes");
    b.offset = get_or<std::size_t>(x, op, "offset", 0);
    b.file = get_or<std::string>(x, op, "file", "");
    b.alt_file = get_or<std::string>(x, op, "alt_file", "");
    b.align = get_or<std::size_t>(x, op, "align", 0);
    if (x.contains("generate")) {
      const json& g = x.at("generate");
      b.gen_stream = get<int>(g, op, "stream");
      b.gen_seed = get<std::uint64_t>(g, op, "seed");
      b.gen_dtype = get<int>(g, op, "dtype");
      if (b.gen_stream < 0 || generated_element_bytes(b.gen_dtype) == 0)
        throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' buffer '{}': bad generate stream/dtype", op, b.name));
    }
    b.elem_bytes = get_or<std::size_t>(x, op, "elem_bytes", 0);
    b.windows = get_or<std::vector<std::pair<std::uint64_t, std::uint64_t>>>(x, op, "windows", {});
    b.chunk_elements = get_or<std::uint64_t>(x, op, "chunk_elements", 0);
    if (b.chunk_elements && (b.elem_bytes == 0 || b.kind != BufferKind::output || !b.windows.empty()))
      throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' buffer '{}': chunk_elements needs an output with "
                                                 "elem_bytes and no windows", op, b.name));
    if (!b.windows.empty() && b.elem_bytes == 0)
      throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' buffer '{}' has windows but no elem_bytes", op, b.name));
    for (const auto& [w0, wn] : b.windows)
      if (b.elem_bytes && (w0 + wn) * b.elem_bytes > b.bytes)
        throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' buffer '{}': window past its end", op, b.name));
    if (b.kind == BufferKind::input && b.file.empty() && !b.generated())
      throw_error(ErrorKind::worker, fmt::format("worker protocol: '{}' input buffer '{}' without 'file'", op, b.name));
    b.aliases = get_or<std::string>(x, op, "aliases", "");
    out.push_back(std::move(b));
  }
  check_aliases(out, op);
  return out;
}

json launches_json(const std::vector<Launch>& ls) {
  json a = json::array();
  for (const auto& l : ls) {
    json args = json::array();
    for (const auto& x : l.args) {
      if (!x.buffer.empty()) args.push_back({{"buffer", x.buffer}});
      else args.push_back({{"scalar", x.scalar}, {"size", x.size}});
    }
    if (!l.library.empty()) {
      a.push_back({{"library", l.library}, {"args", args}});
      continue;
    }
    a.push_back({{"kernel", l.kernel}, {"grid", l.grid}, {"block", l.block}, {"shared", l.shared}, {"args", args}});
  }
  return a;
}

std::vector<Launch> launches_from(const json& j, const char* op) {
  std::vector<Launch> out;
  for (const auto& x : field(j, op, "launches")) {
    Launch l;
    l.library = get_or<std::string>(x, op, "library", "");
    if (l.library.empty()) {
      l.kernel = get<std::string>(x, op, "kernel");
      l.grid = get<std::array<std::int64_t, 3>>(x, op, "grid");
      l.block = get<std::array<std::int64_t, 3>>(x, op, "block");
      l.shared = get_or<std::int64_t>(x, op, "shared", 0);
    }
    for (const auto& a : field(x, op, "args")) {
      if (a.contains("buffer")) l.args.push_back(Arg::pointer(get<std::string>(a, op, "buffer")));
      else l.args.push_back(Arg::value(get<std::int64_t>(a, op, "scalar"), get<int>(a, op, "size")));
    }
    out.push_back(std::move(l));
  }
  return out;
}

json guards_json(const std::vector<GuardViolation>& gs) {
  json a = json::array();
  for (const auto& g : gs)
    a.push_back({{"buffer", g.buffer}, {"side", g.side}, {"bytes_changed", g.bytes_changed}, {"first_byte_offset", g.first_byte_offset}});
  return a;
}

std::vector<GuardViolation> guards_from(const json& j, const char* op) {
  std::vector<GuardViolation> out;
  for (const auto& x : field(j, op, "guard_violations"))
    out.push_back({get<std::string>(x, op, "buffer"), get<std::string>(x, op, "side"), get<std::int64_t>(x, op, "bytes_changed"),
                   get<std::int64_t>(x, op, "first_byte_offset")});
  return out;
}

template <class Reply, class Request, class Parse>
Answer<Reply> typed_call(WorkerClient& w, const Request& r, double timeout_s, Parse parse) {
  Answer<Reply> a;
  a.raw = w.call(to_json(r), timeout_s);
  if (a.raw.status != WorkerReply::Status::ok) return a;
  try {
    a.reply = parse(a.raw.body);
  } catch (const Error& e) {
    a.raw.status = WorkerReply::Status::protocol_error;
    a.raw.reason = e.what();
  }
  return a;
}

}  // namespace

std::uint64_t fresh_seed(std::uint64_t base, std::uint64_t index) {
  std::uint64_t z = base + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string combine_chunk_hashes(const std::vector<std::uint64_t>& chunks) {
  return fmt::format("{:016x}", fast_hash64(chunks.data(), chunks.size() * sizeof(std::uint64_t)));
}

const char* to_string(BufferKind k) { return kBufferKindNames.name(k, "?"); }

json to_json(const HelloRequest&) { return json{{"op", "hello"}}; }
json to_json(const LoadRequest& r) { return json{{"op", "load"}, {"module", r.module}, {"kernels", r.kernels}}; }
json to_json(const LibraryInfoRequest& r) { return json{{"op", "library_info"}, {"libraries", r.libraries}}; }
json to_json(const RunRequest& r) {
  return json{{"op", "run"},          {"module", r.module},   {"buffers", buffers_json(r.buffers)},
              {"launches", launches_json(r.launches)}, {"poison", r.poison}, {"out_files", object_json(r.out_files)},
              {"guard_bytes", r.guard_bytes}, {"placements", r.placements}, {"trap_only", r.trap_only},
              {"scribble", r.scribble}, {"generator_module", r.generator_module}, {"gen_seeds", r.gen_seeds}};
}
json to_json(const BenchRequest& r) {
  json j{{"op", "bench"}, {"module", r.module}, {"buffers", buffers_json(r.buffers)}, {"launches", launches_json(r.launches)}};
  for_each_bench_setting(r, [&](const char* name, const auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, TimerKind>) j[name] = to_string(value);
    else j[name] = value;
  });
  if (!r.save_files.empty()) j["save_files"] = object_json(r.save_files);
  if (!r.out_files.empty()) j["out_files"] = object_json(r.out_files);
  if (!r.alt_out_files.empty()) j["alt_out_files"] = object_json(r.alt_out_files);
  return j;
}
json to_json(const CopyBenchRequest& r) { return json{{"op", "copy_bench"}, {"bytes", r.bytes}, {"samples", r.samples}}; }

LoadRequest load_request_from_json(const json& j) {
  return {get<std::string>(j, "load", "module"), get<std::vector<std::string>>(j, "load", "kernels")};
}
LibraryInfoRequest library_info_request_from_json(const json& j) {
  return {get<std::vector<std::string>>(j, "library_info", "libraries")};
}
RunRequest run_request_from_json(const json& j) {
  RunRequest r;
  r.module = get_or<std::string>(j, "run", "module", "");
  r.buffers = buffers_from(j, "run");
  r.launches = launches_from(j, "run");
  r.poison = get<std::vector<std::uint8_t>>(j, "run", "poison");
  r.out_files = get_or<std::map<std::string, std::vector<std::string>>>(j, "run", "out_files", {});
  r.guard_bytes = get_or<std::size_t>(j, "run", "guard_bytes", 4096);
  r.placements = get_or<std::vector<std::string>>(j, "run", "placements", {});
  r.trap_only = get_or<std::vector<std::string>>(j, "run", "trap_only", {});
  r.scribble = get_or<std::vector<int>>(j, "run", "scribble", {});
  r.generator_module = get_or<std::string>(j, "run", "generator_module", "");
  r.gen_seeds = get_or<std::vector<std::uint64_t>>(j, "run", "gen_seeds", {});
  if (!r.gen_seeds.empty() && r.gen_seeds.size() != r.poison.size())
    throw_error(ErrorKind::worker, "worker protocol: 'run' needs one gen_seeds entry per poison pattern");
  for (const auto& b : r.buffers)
    if (b.generated() && r.generator_module.empty())
      throw_error(ErrorKind::worker, fmt::format("worker protocol: 'run' input '{}' is generated but no generator_module is given", b.name));
  for (const auto& p : r.placements)
    if (p != "guarded" && p != "trap_after" && p != "trap_before")
      throw_error(ErrorKind::worker, fmt::format("worker protocol: 'run' placement '{}' (guarded, trap_after or trap_before)", p));
  if (!r.placements.empty() && r.placements.size() != r.poison.size())
    throw_error(ErrorKind::worker, "worker protocol: 'run' needs one placement per poison pattern");
  if (!r.scribble.empty() && r.scribble.size() != r.poison.size())
    throw_error(ErrorKind::worker, "worker protocol: 'run' needs one scribble pattern per poison pattern");
  for (const auto& b : r.buffers)
    if (b.kind == BufferKind::output && !b.chunk_elements &&  // hashed on the device: nothing comes back as a file
        (!r.out_files.count(b.name) || r.out_files.at(b.name).size() != r.poison.size()))
      throw_error(ErrorKind::worker, fmt::format("worker protocol: 'run' output '{}' needs one out_files path per poison pattern", b.name));
  return r;
}
BenchRequest bench_request_from_json(const json& j) {
  BenchRequest r;
  r.module = get_or<std::string>(j, "bench", "module", "");
  r.buffers = buffers_from(j, "bench");
  r.launches = launches_from(j, "bench");
  r.out_files = get_or<std::map<std::string, std::string>>(j, "bench", "out_files", {});
  r.alt_out_files = get_or<std::map<std::string, std::string>>(j, "bench", "alt_out_files", {});
  r.save_files = get_or<std::map<std::string, std::vector<std::string>>>(j, "bench", "save_files", {});
  for_each_bench_setting(r, [&](const char* name, auto& value) {  // absent: BenchRequest's default
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, TimerKind>) value = timer_from(j, "bench");
    else value = get_or<T>(j, "bench", name, value);
  });
  if (r.flush_mode != "write" && r.flush_mode != "clean" && r.flush_mode != "invalidate")
    throw_error(ErrorKind::worker, fmt::format("worker protocol: 'bench' flush_mode '{}' (write, clean or invalidate)", r.flush_mode));
  if (r.graph_launches < 0 || r.graph_launches > 10000)
    throw_error(ErrorKind::worker, fmt::format("worker protocol: 'bench' graph_launches {} (0 to 10000)", r.graph_launches));
  if (r.timer == TimerKind::graph && r.flush)
    throw_error(ErrorKind::worker, "worker protocol: 'bench' timer 'graph' replays launches back to back with a warm L2: flush must be false");
  if (!(r.clock_share >= 0 && r.clock_share <= 1))
    throw_error(ErrorKind::worker, fmt::format("worker protocol: 'bench' clock_share {} (0 to 1)", r.clock_share));
  bool generated = false;
  for (const auto& b : r.buffers) generated = generated || (b.kind == BufferKind::input && b.generated());
  if (generated && r.generator_module.empty())
    throw_error(ErrorKind::worker, "worker protocol: 'bench' has generated inputs but no generator_module");
  if (r.fresh_inputs && !generated)
    throw_error(ErrorKind::worker, "worker protocol: 'bench' fresh_inputs needs at least one generated input");
  for (const auto& b : r.buffers)
    if (b.kind == BufferKind::output)
      if (auto it = r.save_files.find(b.name); !r.save_launches.empty() && (it == r.save_files.end() || it->second.size() != r.save_launches.size()))
        throw_error(ErrorKind::worker, fmt::format("worker protocol: 'bench' output '{}' needs one save_files path per save_launches entry", b.name));
  return r;
}
CopyBenchRequest copy_bench_request_from_json(const json& j) {
  return {get<std::size_t>(j, "copy_bench", "bytes"), get_or<int>(j, "copy_bench", "samples", 30)};
}

json to_json(const RunReply& r) {
  json runs = json::array();
  for (const auto& x : r.runs) {
    json inputs = json::array();
    for (const auto& in : x.inputs)
      inputs.push_back({{"name", in.name}, {"hash_before", in.hash_before}, {"hash_after", in.hash_after},
                        {"first_changed_byte", in.first_changed_byte}});
    json scans = json::array();
    for (const auto& p : x.poison_scans) scans.push_back({{"name", p.name}, {"poisoned", p.poisoned}, {"first", p.first}});
    runs.push_back({{"poison", x.poison}, {"kernel_ms", x.kernel_ms}, {"guard_violations", guards_json(x.guard_violations)},
                    {"inputs", inputs}, {"poison_scans", scans}});
    if (!x.chunk_hashes.empty()) runs.back()["chunk_hashes"] = x.chunk_hashes;
  }
  return json{{"ok", true}, {"runs", runs}};
}
json to_json(const BenchReply& r) {
  return json{{"ok", true},          {"samples_ms", r.samples_ms}, {"warmup_ms", r.warmup_ms},
              {"flush_bytes", r.flush_bytes}, {"stop_reason", r.stop_reason}, {"guard_violations", guards_json(r.guard_violations)},
              {"out_hashes", object_json(r.out_hashes)}, {"alt_out_hashes", object_json(r.alt_out_hashes)},
              {"sample_hashes", object_json(r.sample_hashes)}, {"sample_datasets", r.sample_datasets},
              {"final_hashes", object_json(r.final_hashes)}, {"timer", to_string(r.timer)}, {"event_ms", r.event_ms},
              {"kernels_per_sample", r.kernels_per_sample}, {"graph_launches", r.graph_launches},
              {"sm_clock_mhz", r.sm_clock_mhz}, {"mem_clock_mhz", r.mem_clock_mhz},
              {"reference_sm_mhz", r.reference_sm_mhz}, {"max_temperature_c", r.max_temperature_c},
              {"clocks_note", r.clocks_note}, {"discarded", r.discarded}, {"clock_events", r.clock_events},
              {"clock_guard_exhausted", r.clock_guard_exhausted}, {"launch_seeds", r.launch_seeds},
              {"hash_what", r.hash_what}, {"graph_note", r.graph_note}, {"harness_memory_written", r.harness_memory_written}};
}
json to_json(const CopyBenchReply& r) { return json{{"ok", true}, {"samples_ms", r.samples_ms}, {"bytes", r.bytes}}; }
json to_json(const LoadReply& r) { return json{{"ok", true}, {"kernels", r.kernels}}; }
json to_json(const LibraryInfoReply& r) {
  return json{{"ok", true}, {"versions", object_json(r.versions)}};
}
json to_json(const HelloReply& r) { return json{{"ok", true}, {"device", r.device}}; }

RunReply run_reply_from_json(const json& j) {
  RunReply r;
  for (const auto& x : field(j, "run reply", "runs")) {
    RunResult rr;
    rr.poison = get<std::uint8_t>(x, "run reply", "poison");
    rr.kernel_ms = get_or<double>(x, "run reply", "kernel_ms", 0.0);
    rr.guard_violations = guards_from(x, "run reply");
    for (const auto& in : field(x, "run reply", "inputs"))
      rr.inputs.push_back({get<std::string>(in, "run reply", "name"), get<std::string>(in, "run reply", "hash_before"),
                           get<std::string>(in, "run reply", "hash_after"), get<std::int64_t>(in, "run reply", "first_changed_byte")});
    if (x.contains("poison_scans"))
      for (const auto& p : x.at("poison_scans"))
        rr.poison_scans.push_back({get<std::string>(p, "run reply", "name"), get<std::uint64_t>(p, "run reply", "poisoned"),
                                   get<std::int64_t>(p, "run reply", "first")});
    rr.chunk_hashes = get_or<std::map<std::string, std::vector<std::uint64_t>>>(x, "run reply", "chunk_hashes", {});
    r.runs.push_back(std::move(rr));
  }
  return r;
}
BenchReply bench_reply_from_json(const json& j) {
  BenchReply r;
  r.samples_ms = get<std::vector<double>>(j, "bench reply", "samples_ms");
  r.warmup_ms = get_or<std::vector<double>>(j, "bench reply", "warmup_ms", {});
  r.flush_bytes = get_or<std::size_t>(j, "bench reply", "flush_bytes", 0);
  r.stop_reason = get_or<std::string>(j, "bench reply", "stop_reason", "");
  r.guard_violations = guards_from(j, "bench reply");
  r.out_hashes = get_or<std::map<std::string, std::string>>(j, "bench reply", "out_hashes", {});
  r.alt_out_hashes = get_or<std::map<std::string, std::string>>(j, "bench reply", "alt_out_hashes", {});
  r.sample_hashes = get_or<std::map<std::string, std::vector<std::string>>>(j, "bench reply", "sample_hashes", {});
  r.sample_datasets = get_or<std::vector<int>>(j, "bench reply", "sample_datasets", {});
  r.final_hashes = get_or<std::map<std::string, std::vector<std::string>>>(j, "bench reply", "final_hashes", {});
  r.timer = timer_from(j, "bench reply");
  r.event_ms = get_or<std::vector<double>>(j, "bench reply", "event_ms", {});
  r.kernels_per_sample = get_or<std::vector<int>>(j, "bench reply", "kernels_per_sample", {});
  r.graph_launches = get_or<int>(j, "bench reply", "graph_launches", 0);
  r.sm_clock_mhz = get_or<std::vector<double>>(j, "bench reply", "sm_clock_mhz", {});
  r.mem_clock_mhz = get_or<std::vector<double>>(j, "bench reply", "mem_clock_mhz", {});
  r.reference_sm_mhz = get_or<unsigned>(j, "bench reply", "reference_sm_mhz", 0);
  r.max_temperature_c = get_or<unsigned>(j, "bench reply", "max_temperature_c", 0);
  r.clocks_note = get_or<std::string>(j, "bench reply", "clocks_note", "");
  r.discarded = get_or<int>(j, "bench reply", "discarded", 0);
  r.clock_events = get_or<std::vector<std::string>>(j, "bench reply", "clock_events", {});
  r.clock_guard_exhausted = get_or<bool>(j, "bench reply", "clock_guard_exhausted", false);
  r.launch_seeds = get_or<std::vector<std::uint64_t>>(j, "bench reply", "launch_seeds", {});
  r.hash_what = get_or<std::vector<std::string>>(j, "bench reply", "hash_what", {});
  r.graph_note = get_or<std::string>(j, "bench reply", "graph_note", "");
  r.harness_memory_written = get_or<std::string>(j, "bench reply", "harness_memory_written", "");
  return r;
}
CopyBenchReply copy_bench_reply_from_json(const json& j) {
  return {get<std::vector<double>>(j, "copy_bench reply", "samples_ms"), get<std::size_t>(j, "copy_bench reply", "bytes")};
}
LoadReply load_reply_from_json(const json& j) { return {field(j, "load reply", "kernels")}; }
LibraryInfoReply library_info_reply_from_json(const json& j) {
  return {get<std::map<std::string, std::string>>(j, "library_info reply", "versions")};
}

std::string describe(const GuardViolation& v) {
  return fmt::format("buffer '{}' was written {} its bounds: {} guard byte(s) changed, first at byte offset {} from the view start",
                     v.buffer, v.side, v.bytes_changed, v.first_byte_offset);
}

Answer<RunReply> call(WorkerClient& w, const RunRequest& r, double t) { return typed_call<RunReply>(w, r, t, run_reply_from_json); }
Answer<BenchReply> call(WorkerClient& w, const BenchRequest& r, double t) {
  return typed_call<BenchReply>(w, r, t, bench_reply_from_json);
}
Answer<CopyBenchReply> call(WorkerClient& w, const CopyBenchRequest& r, double t) {
  return typed_call<CopyBenchReply>(w, r, t, copy_bench_reply_from_json);
}
Answer<LoadReply> call(WorkerClient& w, const LoadRequest& r, double t) { return typed_call<LoadReply>(w, r, t, load_reply_from_json); }
Answer<LibraryInfoReply> call(WorkerClient& w, const LibraryInfoRequest& r, double t) {
  return typed_call<LibraryInfoReply>(w, r, t, library_info_reply_from_json);
}

}  // namespace kqual::worker
