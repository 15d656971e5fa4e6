#!/usr/bin/env bash
# kqual inspect on the CUDA toolkit's largest shared libraries: wall time and peak memory (CPU only;
# the target for the largest is <= 2 s and <= 1 GB on the 2-core build machine).
#   bash bench/inspect-scale.sh [N]     (the N largest libraries under $CUDA_HOME/lib64, default 3)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
lib="${CUDA_HOME:-/usr/local/cuda}/lib64"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); kqual: $kqual"
printf '%-36s %6s %12s %10s %12s %10s %s\n' library MB "text wall s" "text RSS MB" "json wall s" "json RSS MB" exit
for f in $(ls -S "$lib"/*.so.* 2>/dev/null | head -n "${1:-3}"); do
  t=$( { /usr/bin/time -f '%e %M' "$kqual" inspect "$f" > /dev/null; } 2>&1 | tail -1)
  j=$( { /usr/bin/time -f '%e %M' "$kqual" --json inspect "$f" > /dev/null; } 2>&1 | tail -1)
  "$kqual" inspect "$f" > /dev/null 2>&1
  rc=$?
  read -r tw tm <<<"$t"
  read -r jw jm <<<"$j"
  printf '%-36s %6s %12s %10s %12s %10s %s\n' "$(basename "$f")" "$(($(stat -c %s "$f") / 1000000))" "$tw" "$((tm / 1024))" \
    "$jw" "$((jm / 1024))" "$rc"
done
