#pragma once
// Exit codes of every kqual command (README "Exit codes"; one source: this header).
namespace kqual {
inline constexpr int kExitPass = 0;        // qualified / accepted / command did what was asked
inline constexpr int kExitFail = 1;        // evidence says no: rejected, slower, regression predicted
inline constexpr int kExitInputError = 2;  // bad command line or bad input file (named in the message)
inline constexpr int kExitIncomplete = 3;  // only the phases that need no GPU ran (no device present)
inline constexpr int kExitInternal = 4;    // kqual itself failed (bug, I/O, worker protocol)
}  // namespace kqual
