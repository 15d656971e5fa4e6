#include "kqual/core/error.hpp"

#include <fmt/format.h>

namespace kqual {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return "usage";
    case ErrorKind::input: return "input";
    case ErrorKind::unsupported: return "unsupported";
    case ErrorKind::cuda: return "cuda";
    case ErrorKind::nvrtc: return "nvrtc";
    case ErrorKind::worker: return "worker";
    case ErrorKind::io: return "io";
    case ErrorKind::internal: return "internal";
  }
  return "unknown";
}

Error::Error(ErrorKind kind, std::string message) : std::runtime_error(std::move(message)), kind_(kind) {}

void throw_error(ErrorKind kind, std::string message) { throw Error(kind, std::move(message)); }

void throw_call_error(ErrorKind kind, const char* file, int line, const char* call, const std::string& name,
                      const std::string& description) {
  throw Error(kind, fmt::format("{}:{}: {} failed: {} ({})", file, line, call, name, description));
}

}  // namespace kqual
