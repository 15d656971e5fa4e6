#!/usr/bin/env bash
# `kqual inspect --diff OLD NEW` against `sha256sum OLD NEW` on the same files (issue 56 item 4: the diff
# within 1.2x of hashing both files). Runs interleaved (sha256sum, kqual text, kqual --json, repeated),
# prints each wall time, the medians and the ratios, and the machine (cores, CPU) they ran on.
#   bash bench/inspect-diff.sh [RUNS]          (default 5 runs per pair)
# Environment:
#   KQUAL_EXE         kqual binary (default build/tools/kqual/kqual)
#   KQUAL_DIFF_PAIRS  "OLD:NEW OLD:NEW ..." (default: the toolkit's libcublas.so.13 and libcublasLt.so.13 each
#                     against a copy of itself, and libcublas against libcublasLt: every entry differs)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
runs="${1:-5}"
lib="${CUDA_HOME:-/usr/local/cuda}/lib64"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${KQUAL_DIFF_PAIRS:-}" ]; then
  # A copy, not the same path: two files as an upgrade gives them (the page cache holds both).
  cp "$lib/libcublas.so.13" "$tmp/libcublas-copy.so.13" && cp "$lib/libcublasLt.so.13" "$tmp/libcublasLt-copy.so.13"
  KQUAL_DIFF_PAIRS="$lib/libcublas.so.13:$tmp/libcublas-copy.so.13 $lib/libcublasLt.so.13:$tmp/libcublasLt-copy.so.13 $lib/libcublas.so.13:$lib/libcublasLt.so.13"
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); kqual: $kqual; runs: $runs"
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# Wall seconds to the millisecond (GNU time's %e has 10 ms steps: a tenth of a 0.1 s diff on the device).
wall() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'; }
printf '%-56s %10s %10s %10s %8s %8s\n' "pair (OLD : NEW)" "sha256sum" "diff" "diff json" "ratio" "json"
for pair in $KQUAL_DIFF_PAIRS; do
  old="${pair%%:*}" new="${pair#*:}"
  [ -f "$old" ] && [ -f "$new" ] || { echo "skipped $pair: a file is missing"; continue; }
  cat "$old" "$new" > /dev/null  # both in the page cache before the first timing
  : > "$tmp/s"; : > "$tmp/d"; : > "$tmp/j"
  for _ in $(seq "$runs"); do
    wall sha256sum "$old" "$new" >> "$tmp/s"
    wall "$kqual" inspect --diff --quiet --arch sm_90 "$old" "$new" >> "$tmp/d"
    wall "$kqual" --json inspect --diff --quiet --arch sm_90 "$old" "$new" >> "$tmp/j"
  done
  s=$(median < "$tmp/s") d=$(median < "$tmp/d") j=$(median < "$tmp/j")
  printf '%-56s %10s %10s %10s %8s %8s\n' "$(basename "$old") : $(basename "$new") ($((($(stat -L -c %s "$old") + $(stat -L -c %s "$new")) / 1000000)) MB)" \
    "$s" "$d" "$j" "$(awk -v a="$d" -v b="$s" 'BEGIN {printf "%.2fx", a / b}')" "$(awk -v a="$j" -v b="$s" 'BEGIN {printf "%.2fx", a / b}')"
  echo "  each run [s]: sha256sum $(tr '\n' ' ' < "$tmp/s")| diff $(tr '\n' ' ' < "$tmp/d")| json $(tr '\n' ' ' < "$tmp/j")"
done
