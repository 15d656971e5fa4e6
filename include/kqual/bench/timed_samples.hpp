#pragma once
// A PyTorch submission's timed calls on fresh values, and the ones whose outputs are read back: what the
// activity record must show for one block of timed calls, checked here, and what kqual then verifies.
//
// The worker (tools/torch/submission_worker.py, Timed) shifts each floating-point input of every timed
// call by a number the recorder draws just before it ("p<id>:<input>": element i takes element (i + s)
// mod n of the dataset), so no two timed calls see the same values; after the call a second draw
// ("s<id>") decides whether it is one of the block's `verify` calls whose inputs and outputs the recorder
// reads back: selection sampling, r calls still to pick among m samples left picks this one when the
// draw mod m < r. The draws are the keyed codes of their labels (kqual_record_draw): the submission
// cannot know them before they are asked, kqual recomputes them, and the record says when each was asked.
// Pure: no process, no GPU.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kqual/bench/activity_record.hpp"
#include "kqual/bench/timing.hpp"
#include "kqual/contract/contract.hpp"

namespace kqual::bench {

struct FreshBlockRules {
  int samples = 0;                            // kept samples the block asked for
  int verify = 0;                             // calls read back in it (fewer only where the clock guard discarded samples)
  std::map<std::string, std::int64_t> rolled;  // input name -> its elements: the inputs shifted every call
  std::vector<std::string> inputs, outputs;   // every input and output (each one read back in a verified call)
};

// One timed call read back: its sample id, the dataset it was given (the worker alternates A and B:
// (id - 1) mod 2) and each rolled input's shift.
struct VerifiedCall {
  int id = 0;
  int dataset = 0;
  std::map<std::string, std::int64_t> shift;
};

struct FreshBlock {
  std::string tampered;  // "" while the record holds; else what did not (harness_tampered)
  int calls = 0;         // timed calls marked in the block (kept or not)
  std::vector<VerifiedCall> verified;
};

// The block's draws and read-backs checked: every timed call t<id> has its input draws between the end of
// the call before it and its own start, one "s<id>" draw after its end (before the next call), each with the
// value kqual computes; the calls read back are exactly those the draws pick, each with one read of every
// input and output, and no other call is read. kept: the ids of the samples the worker kept (its reply).
FreshBlock fresh_block(const ActivityRecord& r, const std::uint64_t key[2], const std::vector<int>& kept, const FreshBlockRules& rules);

// A read-back call verified: each input as the recorder read it after the call against `dataset` shifted as
// drawn, each output file (dir/s<id>.<name>.out, written by the worker) against the recorder's read of it,
// then the outputs against the contract's reference of those inputs. "" when right; else the detail, with
// *code "harness_tampered" (the record and the files disagree) or the comparison's code (wrong values).
std::string verify_read_back(const contract::Contract& c, contract::ReferenceHost& host, const contract::CaseData& dataset,
                             const VerifiedCall& v, const ActivityRecord& r, const std::uint64_t key[2], const std::filesystem::path& dir,
                             std::string* code);

// The file a read-back call's output is written to under the block's folder.
std::filesystem::path read_back_file(const std::filesystem::path& dir, int id, const std::string& output);

// The report's statement of what was read back (TimingReport::verification) for a submission: calls read
// back and compared over all shapes, the chance that gives of catching one wrong timed call in ten, and
// why it is short of `target` where it is.
json submission_verification(const TimingReport& rep, int target);

// Element i of the result is element (i + shift) mod n of `bytes` (elements of `element_size` bytes).
std::vector<std::uint8_t> rolled_bytes(const std::vector<std::uint8_t>& bytes, std::size_t element_size, std::int64_t shift);

}  // namespace kqual::bench
