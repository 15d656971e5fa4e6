#!/usr/bin/env bash
# kqual inspect on the CUDA toolkit's largest shared libraries: wall time and peak memory (CPU only;
# the target for the largest is <= 2 s and <= 1 GB on the 2-core build machine).
#   bash bench/inspect-scale.sh [N]     (the N largest libraries under $CUDA_HOME/lib64, default 3)
# KQUAL_BASELINE_EXE=OLD_KQUAL (e.g. a build of the commit before a parser change) also checks that
# OLD and this kqual print the same for each library: the table byte for byte, and the JSON byte for
# byte once "provenance" (timestamp, git revision, command line) is dropped. Exit 1 if they differ.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
baseline="${KQUAL_BASELINE_EXE:-}"
lib="${CUDA_HOME:-/usr/local/cuda}/lib64"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); kqual: $kqual"
printf '%-36s %6s %12s %10s %12s %10s %s\n' library MB "text wall s" "text RSS MB" "json wall s" "json RSS MB" exit
status=0
for f in $(ls -S "$lib"/*.so.* 2>/dev/null | head -n "${1:-3}"); do
  t=$( { /usr/bin/time -f '%e %M' "$kqual" inspect --quiet --arch sm_90 "$f" > /dev/null; } 2>&1 | tail -1)
  j=$( { /usr/bin/time -f '%e %M' "$kqual" --json inspect --quiet --arch sm_90 "$f" > /dev/null; } 2>&1 | tail -1)
  "$kqual" inspect --quiet --arch sm_90 "$f" > /dev/null 2>&1
  rc=$?
  read -r tw tm <<<"$t"
  read -r jw jm <<<"$j"
  printf '%-36s %6s %12s %10s %12s %10s %s\n' "$(basename "$f")" "$(($(stat -c %s "$f") / 1000000))" "$tw" "$((tm / 1024))" \
    "$jw" "$((jm / 1024))" "$rc"
  if [ -n "$baseline" ]; then
    tmp=$(mktemp -d)
    "$kqual" inspect --quiet --arch sm_90 "$f" > "$tmp/new.txt" 2>/dev/null
    "$baseline" inspect --quiet --arch sm_90 "$f" > "$tmp/old.txt" 2>/dev/null
    "$kqual" --json inspect --quiet --arch sm_90 "$f" 2>/dev/null | jq 'del(.provenance)' > "$tmp/new.json"
    "$baseline" --json inspect --quiet --arch sm_90 "$f" 2>/dev/null | jq 'del(.provenance)' > "$tmp/old.json"
    for k in txt json; do
      if cmp -s "$tmp/old.$k" "$tmp/new.$k"; then
        echo "  same $k output as $baseline ($(wc -c < "$tmp/new.$k") bytes)"
      else
        echo "  DIFFERENT $k output from $baseline:"; diff "$tmp/old.$k" "$tmp/new.$k" | head -5; status=1
      fi
    done
    rm -rf "$tmp"
  fi
done
exit $status
