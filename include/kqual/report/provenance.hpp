#pragma once
#include <string>

#include "kqual/core/json.hpp"
#include "kqual/core/version.hpp"

namespace kqual::report {

// Where and how a result was produced: host, OS, toolkit, kqual revision, command line, time.
// The GPU block (device, driver) comes from the worker, since this process never touches CUDA.
json provenance(const std::string& command_line, const json& device /* null when absent */);

}  // namespace kqual::report
