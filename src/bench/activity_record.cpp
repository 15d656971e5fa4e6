// The activity record's reader, its channel, and where each launch's work comes from (activity_record.hpp).
#include "kqual/bench/activity_record.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "kqual/bench/record_mac.hpp"
#include "kqual/core/error.hpp"
#include "kqual/core/self.hpp"

namespace kqual::bench {
namespace fs = std::filesystem;

namespace {

// The fields of s between `sep`s; "-" (the recorder's "none") and "" give none where empty_is_none.
std::vector<std::string> split(const std::string& s, char sep, bool empty_is_none = false) {
  std::vector<std::string> out;
  if (empty_is_none && (s == "-" || s.empty())) return out;
  std::size_t at = 0;
  while (true) {
    const std::size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  return out;
}

std::uint64_t num(const std::string& s) {
  std::size_t used = 0;
  const unsigned long long v = std::stoull(s, &used, 10);
  if (used != s.size()) throw std::invalid_argument(s);
  return v;
}

// How many fields each kind of line has (sequence number and kind included, the code not).
int fields_of(char kind) {
  switch (kind) {
    case 'H': return 6;
    case 'C': return 4;
    case 'L': return 9;
    case 'K': return 14;
    case 'M': return 9;
    case 'S': return 8;
    case 'O': return 7;
    case 'X': return 7;
    case 'F': return 4;
    case 'R': return 8;
    case 'E': return 3;
    case 'D': return 5;
    case 'U': return 8;
    default: return -1;
  }
}

}  // namespace

RecordReader::RecordReader(const std::uint64_t key[2]) {
  key_[0] = key[0];
  key_[1] = key[1];
}

void RecordReader::feed(const std::string& line) {
  if (!rec_.broken.empty()) return;  // nothing after a break is the recorder's
  const std::size_t tab = line.rfind('\t');
  const std::string body = tab == std::string::npos ? line : line.substr(0, tab);
  const std::string code = tab == std::string::npos ? "" : line.substr(tab + 1);
  const std::uint64_t want = kqual_record::chained_mac(key_, prev_, body.data(), body.size());
  if (code != fmt::format("{:016x}", want)) {
    rec_.broken = fmt::format("line {} of the record does not carry the recorder's code (written by someone else, or altered): {}",
                              seq_ + 1, body.substr(0, 160));
    return;
  }
  prev_ = want;
  const std::vector<std::string> f = split(body, '\t');
  try {
    const std::uint64_t seq = num(f.at(0));
    if (seq != seq_ + 1) {
      rec_.broken = fmt::format("the record skips from line {} to line {}", seq_, seq);
      return;
    }
    seq_ = seq;
    const char kind = f.at(1).size() == 1 ? f[1][0] : '?';
    if (int(f.size()) != fields_of(kind)) {
      rec_.broken = fmt::format("line {} of the record is malformed: {}", seq, body.substr(0, 160));
      return;
    }
    switch (kind) {
      case 'H':
        rec_.started = true;
        rec_.cupti = f[4];
        break;
      case 'C':
        rec_.legacy_stream = std::uint32_t(num(f[3]));
        break;
      case 'L': {
        RecordLaunch l;
        l.corr = std::uint32_t(num(f[2]));
        l.tid = long(num(f[3]));
        l.status = std::stoi(f[4]);
        l.api = f[5];
        l.origin = f[7];
        l.python = f[8];
        rec_.launches[l.corr] = std::move(l);
        break;
      }
      case 'K': {
        RecordActivity a;
        a.kind = 'K';
        a.corr = std::uint32_t(num(f[2]));
        a.stream = std::uint32_t(num(f[3]));
        a.start = num(f[4]);
        a.end = num(f[5]);
        for (int i = 0; i < 3; ++i) {
          a.grid[i] = std::stoi(f[6 + i]);
          a.block[i] = std::stoi(f[9 + i]);
        }
        a.graph = std::uint32_t(num(f[12]));
        a.name = f[13];
        rec_.activities.push_back(std::move(a));
        break;
      }
      case 'M':
      case 'S': {
        RecordActivity a;
        a.kind = kind;
        a.corr = std::uint32_t(num(f[2]));
        std::size_t k = 3;
        if (kind == 'M') a.copy_kind = int(num(f[k++]));
        a.bytes = num(f[k++]);
        a.stream = std::uint32_t(num(f[k++]));
        a.start = num(f[k++]);
        a.end = num(f[k++]);
        a.graph = std::uint32_t(num(f[k++]));
        rec_.activities.push_back(std::move(a));
        break;
      }
      case 'O': {
        RecordModule m;
        m.id = std::uint32_t(num(f[2]));
        m.bytes = num(f[3]);
        m.origin = f[4];
        m.python = f[5];
        m.functions = split(f[6], ';', true);
        modules_.push_back(std::move(m));
        break;
      }
      case 'X': {
        RecordMark m;
        m.label = f[2];
        m.last_corr = std::uint32_t(num(f[3]));
        m.tid = long(num(f[4]));
        m.stream = std::uint32_t(num(f[5]));
        m.time = num(f[6]);
        rec_.marks.push_back(std::move(m));
        break;
      }
      case 'R': {
        RecordRead rd;
        rd.label = f[2];
        rd.ptr = std::stoull(f[3], nullptr, 16);
        rd.bytes = num(f[4]);
        rd.mac = std::stoull(f[5], nullptr, 16);
        rd.status = std::stoi(f[6]);
        rd.last_corr = std::uint32_t(num(f[7]));
        rec_.reads.push_back(std::move(rd));
        break;
      }
      case 'U': {
        RecordUpload u;
        u.label = f[2];
        u.ptr = std::stoull(f[3], nullptr, 16);
        u.bytes = num(f[4]);
        u.mac = std::stoull(f[5], nullptr, 16);
        u.status = std::stoi(f[6]);
        if (f[7] != "-")
          for (const auto& c : split(f[7], ',', false)) u.copies.push_back(std::uint32_t(num(c)));
        rec_.uploads.push_back(std::move(u));
        break;
      }
      case 'D': {
        RecordDraw d;
        d.label = f[2];
        d.value = std::stoull(f[3], nullptr, 16);
        d.last_corr = std::uint32_t(num(f[4]));
        d.marks_before = rec_.marks.size();
        rec_.draws.push_back(std::move(d));
        break;
      }
      case 'F':
        rec_.flushes.push_back(f[2]);
        rec_.dropped += num(f[3]);
        break;
      case 'E':
        rec_.errors.push_back(f[2]);
        break;
      default:
        rec_.broken = fmt::format("line {} of the record has an unknown kind: {}", seq, body.substr(0, 160));
    }
  } catch (const std::exception&) {
    rec_.broken = fmt::format("line {} of the record is malformed: {}", seq_, body.substr(0, 160));
  }
}

ActivityRecord RecordReader::take() {
  ActivityRecord out = std::move(rec_);
  rec_ = ActivityRecord{};
  rec_.started = out.started;
  rec_.cupti = out.cupti;
  rec_.legacy_stream = out.legacy_stream;
  rec_.broken = out.broken;  // a break stays: every later read is judged by it
  return out;
}

std::uint64_t draw_value(const std::uint64_t key[2], const std::string& label) {
  const std::string what = "draw\t" + label;
  kqual_record::ContentMac mac(key);
  mac.update(what.data(), what.size());
  return mac.final();
}

std::uint64_t file_content_mac(const std::uint64_t key[2], const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw_error(ErrorKind::internal, fmt::format("cannot read {} to check it against the record", file.string()));
  kqual_record::ContentMac mac(key);
  std::vector<char> buf(std::size_t(8) << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    if (in.gcount() > 0) mac.update(buf.data(), std::size_t(in.gcount()));
  }
  return mac.final();
}

namespace {

// The one successful read of `label`, or nullptr with *why set.
const RecordRead* the_read(const ActivityRecord& r, const std::string& label, std::string* why) {
  const RecordRead* found = nullptr;
  int count = 0;
  for (const auto& rd : r.reads)
    if (rd.label == label) {
      found = &rd;
      ++count;
    }
  if (count != 1) {
    *why = fmt::format("the recorder read '{}' {} times, not once: the worker's reads of the device memory were skipped or repeated",
                       label, count);
    return nullptr;
  }
  if (found->status != 0) {
    *why = fmt::format("the recorder could not read '{}' ({} bytes at {:#x}): the driver returned {}", label, found->bytes, found->ptr,
                       found->status);
    return nullptr;
  }
  return found;
}

}  // namespace

std::string check_read_bytes(const ActivityRecord& r, const std::uint64_t key[2], const std::string& label,
                             const std::vector<std::uint8_t>& bytes) {
  std::string why;
  const RecordRead* found = the_read(r, label, &why);
  if (!found) return why;
  kqual_record::ContentMac mac(key);
  mac.update(bytes.data(), bytes.size());
  if (found->bytes != bytes.size() || mac.final() != found->mac)
    return fmt::format("'{}' in the GPU's memory when the call began ({} bytes, read by the recorder) is not the input kqual gave "
                       "({} bytes): the call ran on other values",
                       label, found->bytes, bytes.size());
  return "";
}

std::string check_reads(const ActivityRecord& r, const std::uint64_t key[2], const std::vector<std::pair<std::string, fs::path>>& files) {
  for (const auto& [label, file] : files) {
    std::string why;
    const RecordRead* found = the_read(r, label, &why);
    if (!found) return why;
    std::error_code ec;
    const std::uint64_t size = fs::file_size(file, ec);
    if (ec || size != found->bytes || file_content_mac(key, file) != found->mac)
      return fmt::format("the bytes the worker wrote for '{}' ({}) are not the {} bytes the recorder read from the GPU's memory of that "
                         "output: the values were changed between the device and kqual",
                         label, ec ? "unreadable" : fmt::format("{} bytes", size), found->bytes);
  }
  return "";
}

std::string upload_label(int dataset, const std::string& input) { return fmt::format("up{}:{}", dataset, input); }

std::uint64_t bytes_content_mac(const std::uint64_t key[2], const std::uint8_t* data, std::size_t size) {
  kqual_record::ContentMac mac(key);
  mac.update(data, size);
  return mac.final();
}

std::string check_uploads(const ActivityRecord& r, const std::map<std::string, std::uint64_t>& expected, std::set<std::uint32_t>* own) {
  for (const auto& u : r.uploads) {
    const auto it = expected.find(u.label);
    if (it == expected.end())
      return fmt::format("the recorder uploaded {} bytes under '{}', a label kqual gave no dataset for: the worker had it upload "
                         "values of its own",
                         u.bytes, u.label);
    if (u.status != 0) continue;  // the worker stops there (kqual's failure); its copies are not the recorder's
    if (u.mac != it->second)
      return fmt::format("the recorder uploaded {} bytes for '{}' that are not kqual's dataset: the worker named another file",
                         u.bytes, u.label);
    own->insert(u.copies.begin(), u.copies.end());
  }
  return "";
}

const char* to_string(WorkOrigin o) {
  switch (o) {
    case WorkOrigin::own: return "own";
    case WorkOrigin::aten: return "ATen";
    case WorkOrigin::cublas: return "cuBLAS";
    case WorkOrigin::cudnn: return "cuDNN";
    case WorkOrigin::inductor: return "Inductor (torch.compile)";
    case WorkOrigin::other_library: return "another CUDA library";
    case WorkOrigin::unknown: return "unknown";
  }
  return "?";
}

namespace {

bool has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

bool inductor_frames(const std::string& python) { return has(python, "_inductor/") || has(python, "torchinductor_"); }

std::string base_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

WorkOrigin classify_origin(const RecordLaunch& launch, const std::string& kernel, const std::vector<RecordModule>& modules) {
  if (inductor_frames(launch.python)) return WorkOrigin::inductor;
  // The module the kernel was loaded from: Inductor's kernels are loaded by its runtime, whatever
  // launches them later and whatever they are called.
  for (const auto& m : modules)
    if (std::find(m.functions.begin(), m.functions.end(), kernel) != m.functions.end() && inductor_frames(m.python))
      return WorkOrigin::inductor;
  const std::string b = base_name(launch.origin);
  if (launch.origin == "?" || launch.origin.empty() || launch.origin == "-") return WorkOrigin::unknown;
  if (b.rfind("libcublas", 0) == 0) return WorkOrigin::cublas;
  if (b.rfind("libcudnn", 0) == 0) return WorkOrigin::cudnn;
  for (const char* lib : {"libcufft", "libcurand", "libcusparse", "libcusolver", "libnccl", "libnvrtc", "libcutlass"})
    if (b.rfind(lib, 0) == 0) return WorkOrigin::other_library;
  if (b.rfind("libtorch", 0) == 0 || b.rfind("libc10", 0) == 0 || b.rfind("libATen", 0) == 0 || b.rfind("libflash", 0) == 0)
    return WorkOrigin::aten;
  return WorkOrigin::own;  // the submission's extension, its Triton kernels (the Triton launcher), its own ctypes loads
}

// ---------------------------------------------------------------------------------------------------
// The channel.

struct RecordChannel::Impl {
  fs::path fifo, key_file;
  int fd = -1;
  std::uint64_t key[2] = {0, 0};
  std::unique_ptr<RecordReader> reader;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;

  void run() {
    std::string pending;
    std::array<char, 1 << 16> buf{};
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop) return;
      }
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, 100);
      if (r <= 0) continue;
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n <= 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // no writer yet, or it closed: a new one may open
        continue;
      }
      pending.append(buf.data(), std::size_t(n));
      std::size_t at = 0, nl;
      std::lock_guard<std::mutex> lock(mu);
      while ((nl = pending.find('\n', at)) != std::string::npos) {
        reader->feed(pending.substr(at, nl - at));
        at = nl + 1;
      }
      pending.erase(0, at);
      cv.notify_all();
    }
  }
};

RecordChannel::RecordChannel(const fs::path& dir) : impl_(std::make_unique<Impl>()) {
  fs::create_directories(dir);
  impl_->fifo = dir / "record.fifo";
  impl_->key_file = dir / "record.key";
  fs::remove(impl_->fifo);
  if (::mkfifo(impl_->fifo.c_str(), 0600) != 0)
    throw_error(ErrorKind::internal, fmt::format("cannot make the record's FIFO {}: {}", impl_->fifo.string(), std::strerror(errno)));
  // O_RDWR: the read end stays open across writers, and the open never waits for one.
  impl_->fd = ::open(impl_->fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (impl_->fd < 0) throw_error(ErrorKind::internal, fmt::format("cannot open the record's FIFO {}: {}", impl_->fifo.string(), std::strerror(errno)));
  std::random_device rd;
  std::array<unsigned char, 16> k{};
  for (auto& b : k) b = static_cast<unsigned char>(rd());
  impl_->key[0] = kqual_record::load_le(k.data(), 8);
  impl_->key[1] = kqual_record::load_le(k.data() + 8, 8);
  {
    const int kfd = ::open(impl_->key_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (kfd < 0 || ::write(kfd, k.data(), k.size()) != ssize_t(k.size()))
      throw_error(ErrorKind::internal, fmt::format("cannot write the record's key {}", impl_->key_file.string()));
    ::close(kfd);
  }
  impl_->reader = std::make_unique<RecordReader>(impl_->key);
  impl_->thread = std::thread([this] { impl_->run(); });
}

RecordChannel::~RecordChannel() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  if (impl_->fd >= 0) ::close(impl_->fd);
  std::error_code ec;
  fs::remove(impl_->fifo, ec);
  fs::remove(impl_->key_file, ec);
}

std::vector<std::pair<std::string, std::string>> RecordChannel::env(const fs::path& library) const {
  return {{"CUDA_INJECTION64_PATH", fs::absolute(library).string()},
          {"KQUAL_RECORD_FIFO", impl_->fifo.string()},
          {"KQUAL_RECORD_KEY", impl_->key_file.string()},
          {"KQUAL_RECORD_LIB", fs::absolute(library).string()}};
}

bool RecordChannel::wait_flush(const std::string& token, double timeout_s, ActivityRecord* out) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  const bool got = impl_->cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
    const auto& f = impl_->reader->current().flushes;
    return std::find(f.begin(), f.end(), token) != f.end() || !impl_->reader->current().broken.empty();
  });
  if (out) *out = impl_->reader->take();
  return got && impl_->reader->current().broken.empty();
}

ActivityRecord RecordChannel::take_now() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->reader->take();
}

std::vector<RecordModule> RecordChannel::modules() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->reader->modules();
}

const std::uint64_t* RecordChannel::key() const { return impl_->key; }

std::string RecordChannel::check_reads(const ActivityRecord& r, const std::vector<std::pair<std::string, fs::path>>& files) const {
  return bench::check_reads(r, impl_->key, files);
}

fs::path record_library() {
  if (const char* e = std::getenv("KQUAL_RECORD_LIB"); e && *e && fs::exists(e)) return e;
  if (const auto exe = self_executable()) {
    if (const fs::path p = exe->parent_path() / "libkqual_record.so"; fs::exists(p)) return fs::weakly_canonical(p);
    // From a test suite (build/tests/<module>/, build/tests/pipeline/screen/, devbuild/tests/device/): the
    // build's tools/kqual, beside the tests/ folder the suite sits in.
    for (fs::path d = exe->parent_path(); !d.empty() && d != d.parent_path(); d = d.parent_path())
      if (d.filename() == "tests") {
        if (const fs::path p = d.parent_path() / "tools/kqual/libkqual_record.so"; fs::exists(p)) return fs::weakly_canonical(p);
        break;
      }
  }
  return {};
}

}  // namespace kqual::bench
