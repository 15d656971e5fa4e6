#pragma once
// Timed inputs that a kernel cannot enumerate: the inputs of every timed launch are
// generated on the device from a seed no other launch has (worker::BenchRequest::fresh_inputs),
// and the outputs are verified against the contract's reference of that seed: every launch's, by
// hash, where the contract has a bit-exact device reference; otherwise a share of launches the
// coordinator picks where the kernel cannot see the choice, their outputs compared on the host.
// Nothing of this is made on the CPU before timing starts (CPU-made datasets of the largest timing
// shapes, 2^28 elements, would cost more than the timing itself).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kqual/contract/contract.hpp"
#include "kqual/worker/protocol.hpp"
#include "kqual/worker/session.hpp"

namespace kqual::check {

struct FreshInputs {
  contract::CaseSpec spec;             // the generated spec (family "counter"); its seed is replaced per launch
  std::vector<worker::Buffer> buffers; // generated inputs; outputs hashed per chunk
  std::string generator_module;
  bool every_launch_verified = false;  // a bit-exact device reference checks every launch's hash
};

// The fresh timed inputs of `spec`'s dtype and dims, or nullopt when the contract's inputs cannot be
// generated (Contract::inputs_generatable) or no device is present.
std::optional<FreshInputs> fresh_timing_inputs(worker::Session& s, const contract::Contract& c, const contract::CaseSpec& spec);

// The device reference's output hashes (combine_chunk_hashes) per seed, computed in the session's
// reference worker (one request for all seeds not seen before; kept for the process).
std::map<std::uint64_t, std::map<std::string, std::string>> fresh_reference_hashes(worker::Session& s, const contract::Contract& c,
                                                                                   const FreshInputs& f,
                                                                                   const std::vector<std::uint64_t>& seeds);

// A saved output of the launch with `seed` compared with the contract's reference on the same
// generated inputs (made on the CPU; the reference kept for the last few seeds): "" when right,
// else the detail, with *code set.
std::string verify_fresh_output(worker::Session& s, const contract::Contract& c, const FreshInputs& f, std::uint64_t seed,
                                const std::string& output, const std::filesystem::path& file, std::string* code);

}  // namespace kqual::check
