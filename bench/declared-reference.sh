#!/usr/bin/env bash
# Issue 22, item 7: a declared contract's reference on a 2^24-element case, on this machine (target:
# <= 2 s on the 2-core CPU machine, vectorised NumPy in its own process). Prints, per declared
# contract, the input generation and the reference time; results recorded in docs/declared-contracts.md.
# Usage: bash bench/declared-reference.sh [ELEMENTS]   (default 16777216 = 2^24)
set -euo pipefail
cd "$(dirname "$0")/.."
exe="${KQUAL_EXE:-build/tools/kqual/kqual}"
n="${1:-16777216}"
echo "declared-reference: $exe contracts --time-reference $n on $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
"$exe" contracts --time-reference "$n"
