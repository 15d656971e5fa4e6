// How the candidate's timed launches are verified when every launch gets fresh inputs generated on
// the device and no bit-exact device reference hashes every one (tolerance contracts): a number of
// timed launches per call, picked at run time where the kernel cannot see the choice, are read back
// and compared with the contract's reference; under a contract that requires reproducible results,
// every launch's output hash is also compared with the same kernel launched again untimed on the
// same inputs. The detection power of the sample is stated (TimingReport::verification).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kqual/bench/timing.hpp"
#include "kqual/check/timed_inputs.hpp"
#include "kqual/worker/protocol.hpp"

namespace kqual::bench::detail {

using Fail = std::function<void(std::string detail, const char* code)>;

// Timed launches of the candidate compared with the reference per call, for each shape (elements
// of its tensors; < 0: not sampled, every launch verified otherwise): one per call on every sampled
// shape, then more on the cheapest shapes first (each costs a reference computed on the host) until
// the run reaches o.verify_launches, a call's samples are all taken, or the elements compared reach
// o.verify_element_budget. The detection power that gives is stated, not assumed.
std::vector<int> saved_launches_per_call(const TimingOptions& o, const std::vector<std::int64_t>& elements);

// `count` distinct timed-launch positions of a call (warm-up launches first, then samples), `first`
// among them and last (the one the baselines of the round share, so its reference is the most
// recently computed when they need it).
std::vector<std::size_t> pick_saved_launches(std::size_t first, int warmup, int samples, int count, std::random_device& entropy);

// A bench call with fresh inputs checked against the reference of each launch's own seed: every
// launch's hash (bit-exact device reference), or each saved launch's output read back (the rest).
// Returns the number of the implementation's launches compared with the reference.
std::size_t verify_fresh_call(worker::Session& s, const contract::Contract& c, const check::FreshInputs& f,
                              const worker::BenchReply& r, const worker::BenchRequest& req, int round, const Fail& fail);

// Every launch of the call launched again untimed on its own seed (in an order the kernel cannot
// predict) and its output hash compared with the timed launch's: for contracts that require
// reproducible results. Returns the number of launches compared; a failed re-run sets *error (the
// series' error, as a failed timing call).
std::size_t verify_rerun_matches(worker::Session& s, const worker::BenchRequest& req, const worker::BenchReply& r, int round,
                                 std::random_device& entropy, const Fail& fail, std::string* error);

// The probability that a kernel wrong on one launch in ten (at random) shows a wrong launch among
// `compared` launches compared with the reference: 1 - 0.9^compared.
double detection_one_in_ten(std::size_t compared);

// The report's verification summary over its shapes (the candidate's series). `target`: the launches
// aimed at (--verify-launches; 0: none sampled); `budget_elements`: the output elements the host may
// read for the comparisons (0: no limit). A shortfall is explained by the limit that bound it.
json verification_summary(const TimingReport& rep, int target, std::int64_t budget_elements);

}  // namespace kqual::bench::detail
