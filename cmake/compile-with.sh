#!/bin/sh
# A compiler launcher (CMake's CXX_COMPILER_LAUNCHER) that compiles with another compiler:
#   compile-with.sh COMPILER ORIGINAL_COMPILER ARGS...   ->   COMPILER ARGS...
# Used for the CPU test suites' own code (tests/CMakeLists.txt, KQUAL_CLANG_TESTS).
compiler=$1
shift 2
exec "$compiler" "$@"
