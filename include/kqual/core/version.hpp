#pragma once
// kqual's version (CMake's project version, one source) and the git revision it was built from.
namespace kqual {

inline constexpr const char* kVersion = KQUAL_VERSION;  // "0.1.0"
// The revision of the build: "<hash>" or "<hash>-dirty"; generated at build time (cmake/gitrev.cmake).
const char* git_revision();

}  // namespace kqual
