#pragma once
// The activity record of a PyTorch worker: what tools/record/kqual_record.cpp (injected into the worker
// through CUDA_INJECTION64_PATH, loaded before any of the submission's code) wrote about every kernel,
// copy and memset the process caused, every launch's origin, and the worker's marks around each call.
// The evidence kqual judges a submission by (docs/torch-submissions.md, "The record"): read here line by
// line, numbered and chained with a keyed code, so a record that stops, skips, or was written by anyone
// but the recorder is itself a finding.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kqual::bench {

// One kernel ('K'), memcpy ('M') or memset ('S') as the GPU ran it. [ns] on CUPTI's clock.
struct RecordActivity {
  char kind = 'K';
  std::uint32_t corr = 0, stream = 0, graph = 0;
  std::uint64_t start = 0, end = 0, bytes = 0;
  int copy_kind = 0;  // memcpy: CUPTI's CUpti_ActivityMemcpyKind (1 host to device, 2 device to host, 8 device to device)
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  std::string name;  // kernel: as compiled (mangled)
};

// One API call that launched or copied: which thread, its status, the object and Python frames it came from.
struct RecordLaunch {
  std::uint32_t corr = 0;
  long tid = 0;
  int status = 0;
  std::string api, origin, python;
};

// A module (cubin) loaded into the process: which object loaded it, from which Python frames, and the
// global functions it defines.
struct RecordModule {
  std::uint32_t id = 0;
  std::uint64_t bytes = 0;
  std::string origin, python;
  std::vector<std::string> functions;
};

// A mark the worker set: every API call numbered up to last_corr came before it.
struct RecordMark {
  std::string label;
  std::uint32_t last_corr = 0;
  long tid = 0;
  std::uint32_t stream = 0;  // the CUPTI id of the stream the worker calls on
  std::uint64_t time = 0;
};

// Device memory the recorder read itself ('R'): the worker named it (label, address, size), the recorder
// copied it to the host and wrote its keyed code (kqual_record::ContentMac). status: the driver's result.
struct RecordRead {
  std::string label;
  std::uint64_t ptr = 0, bytes = 0, mac = 0;
  int status = 0;
  std::uint32_t last_corr = 0;  // every API call numbered up to here came before the read
};

// The recorder's own upload of one of kqual's dataset files to device memory ('U'): the keyed code of the
// bytes it copied, and the correlation ids of its copies (every copy from the host outside the calls must be
// one of these).
struct RecordUpload {
  std::string label;
  std::uint64_t ptr = 0, bytes = 0, mac = 0;
  int status = 0;
  std::vector<std::uint32_t> copies;
};

// A number the worker asked the recorder for ('D'): the keyed code of its label (draw_value), so the
// submission cannot know it before it is asked. marks_before: how many marks of this record came before it.
struct RecordDraw {
  std::string label;
  std::uint64_t value = 0;
  std::uint32_t last_corr = 0;
  std::size_t marks_before = 0;
};

struct ActivityRecord {
  bool started = false;  // the recorder's hello line was read
  std::string cupti;     // which libcupti the recorder runs on
  std::optional<std::uint32_t> legacy_stream;  // the CUPTI id of the legacy default stream
  std::vector<RecordActivity> activities;
  std::map<std::uint32_t, RecordLaunch> launches;
  std::vector<RecordMark> marks;
  std::vector<RecordRead> reads;
  std::vector<RecordDraw> draws;
  std::vector<RecordUpload> uploads;
  std::vector<std::string> flushes;  // tokens, in order
  std::uint64_t dropped = 0;         // records CUPTI dropped (its buffers full)
  std::vector<std::string> errors;   // what the recorder said it could not do
  std::string broken;                // the first line that broke the record (chain, numbering, format): "" while intact
};

// Reads the record's lines, checking each one's number and chained code. Modules and the legacy stream
// are kept across take(); the rest is handed over and cleared.
class RecordReader {
 public:
  explicit RecordReader(const std::uint64_t key[2]);
  void feed(const std::string& line);
  const ActivityRecord& current() const { return rec_; }
  ActivityRecord take();
  const std::vector<RecordModule>& modules() const { return modules_; }

 private:
  std::uint64_t key_[2];
  std::uint64_t prev_ = 0, seq_ = 0;
  ActivityRecord rec_;
  std::vector<RecordModule> modules_;
};

// The keyed code of a file's bytes, as the recorder codes device memory it read (kqual_record::ContentMac).
// Throws Error(internal) where the file cannot be read.
std::uint64_t file_content_mac(const std::uint64_t key[2], const std::filesystem::path& file);

// The value the recorder draws for `label` (kqual_record_draw): the keyed code of "draw\t" + label.
std::uint64_t draw_value(const std::uint64_t key[2], const std::string& label);

// The files a worker wrote checked against what the recorder read itself: for each (label, file), exactly
// one read of that label, which succeeded, of the file's size and with the file's code. "" when all hold;
// else what did not (the worker skipped the read, or wrote other bytes than the GPU held).
std::string check_reads(const ActivityRecord& r, const std::uint64_t key[2],
                        const std::vector<std::pair<std::string, std::filesystem::path>>& files);

// Device memory the recorder read, checked against the bytes kqual gave (an input of a call): "" when the
// record holds exactly one successful read of `label` with these bytes' code; else what did not hold.
std::string check_read_bytes(const ActivityRecord& r, const std::uint64_t key[2], const std::string& label,
                             const std::vector<std::uint8_t>& bytes);

// CUPTI's copy kinds in the record's M lines.
constexpr int kMemcpyHostToDevice = 1, kMemcpyDeviceToHost = 2, kMemcpyDeviceToDevice = 8;

// The label the worker's upload of dataset d (0: A, 1: B, 2: C, 3: D) of input `input` carries ('U' lines).
std::string upload_label(int dataset, const std::string& input);
// The keyed code of bytes, as the recorder codes what it read or uploaded.
std::uint64_t bytes_content_mac(const std::uint64_t key[2], const std::uint8_t* data, std::size_t size);

// Every upload in the record against kqual's datasets: `expected` maps each label kqual allows (upload_label)
// to the code of the bytes kqual wrote for it. "" when every upload was under a label kqual gave and each that
// succeeded carried its dataset's code; *own then holds the correlation ids of the successful uploads' copies
// (any other copy from the host outside the calls is not the harness's; a failed upload stops the worker). Else what did not hold: the worker had the recorder upload
// another file, or under a label kqual did not give.
std::string check_uploads(const ActivityRecord& r, const std::map<std::string, std::uint64_t>& expected, std::set<std::uint32_t>* own);

// Where a launch's work comes from, by the object that launched it, the module its kernel was loaded
// from and the Python frames at launch and load.
enum class WorkOrigin { own, aten, cublas, cudnn, inductor, other_library, unknown };
const char* to_string(WorkOrigin o);
WorkOrigin classify_origin(const RecordLaunch& launch, const std::string& kernel, const std::vector<RecordModule>& modules);

// The FIFO the recorder writes to and the key file it reads once: made before the worker starts, read
// on a thread of its own while the worker runs. Throws Error(internal) where the FIFO cannot be made.
class RecordChannel {
 public:
  RecordChannel(const std::filesystem::path& dir);
  ~RecordChannel();
  RecordChannel(const RecordChannel&) = delete;
  RecordChannel& operator=(const RecordChannel&) = delete;
  // The worker's environment entries: the injection path (library), the FIFO, the key file.
  std::vector<std::pair<std::string, std::string>> env(const std::filesystem::path& library) const;
  // Waits until the record holds flush `token` (true) or timeout_s passed (false); then take()s.
  bool wait_flush(const std::string& token, double timeout_s, ActivityRecord* out);
  // The record so far (no flush needed): what a worker that died or hung left.
  ActivityRecord take_now();
  std::vector<RecordModule> modules();
  // The record's key (the recorder's codes are keyed with it).
  const std::uint64_t* key() const;
  // check_reads() under this channel's key.
  std::string check_reads(const ActivityRecord& r, const std::vector<std::pair<std::string, std::filesystem::path>>& files) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// libkqual_record.so beside the kqual executable (or $KQUAL_RECORD_LIB); empty where there is none.
std::filesystem::path record_library();

}  // namespace kqual::bench
