#!/usr/bin/env bash
# Timing fidelity (issue 13): kqual's median against Nsight Compute's gpu__time_duration for the same
# kernel, side by side in one run, with both L2 flush modes:
#   write — a memset of 2x the L2 before each sample (kqual's default): the memset leaves the L2 full
#           of dirty lines, and the timed kernel may pay for writing them back;
#   clean — the memset, then a read pass over the same buffer: the write-backs happen before the
#           timed window (ncu --cache-control all flushes and invalidates instead).
#   bash bench/fidelity.sh [OUT_DIR]        (needs a GPU, and ncu on PATH for the reference)
# Kernel: the bundled residual_add_relu candidate at n = 2^28 f32 (bandwidth-bound, ~0.8 ms).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/kqual-out/fidelity}"
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
cand="$root/candidates/residual_add_relu/good"
n="${KQUAL_FIDELITY_N:-268435456}"
mkdir -p "$out"
median_of() {  # results.json → the candidate's median [ms] at the first shape
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); s=r["timing"]["shapes"][0]["series"][0]; print(s["summary_ms"]["median"])' "$1"
}
declare -A med
for mode in write clean; do
  cmd=("$kqual" bench "$cand" --sizes "$n" --l2-flush "$mode" --rounds 3 --samples 10 --out "$out/kqual-$mode")
  echo "command: ${cmd[*]}"
  "${cmd[@]}" > "$out/kqual-$mode.txt" 2>&1
  med[$mode]=$(median_of "$out/kqual-$mode/results.json" 2>/dev/null || echo nan)
  echo "kqual --l2-flush $mode: median ${med[$mode]} ms"
done
ncu_ms=nan
if command -v ncu > /dev/null; then
  # ncu profiles the worker process (a child); only the candidate's kernel, 15 launches.
  cmd=(ncu --target-processes all --clock-control none --cache-control all --metrics gpu__time_duration.sum
       -k regex:add_relu_vec -c 15 --csv "$kqual" bench "$cand" --sizes "$n" --rounds 1 --samples 5 --out "$out/ncu-run")
  echo "command: ${cmd[*]}"
  "${cmd[@]}" > "$out/ncu.csv" 2> "$out/ncu.err"
  ncu_ms=$(python3 - "$out/ncu.csv" <<'PY'
import csv, statistics, sys
vals = []
for row in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(row) > 14 and row[-3] == "gpu__time_duration.sum":
        v = float(row[-1].replace(",", ""))
        unit = row[-2]
        vals.append(v / 1e6 if unit in ("ns", "nsecond") else v / 1e3 if unit in ("us", "usecond") else v)
print(statistics.median(vals) if vals else "nan")
PY
)
  echo "ncu gpu__time_duration.sum (--cache-control all --clock-control none, 15 launches): median $ncu_ms ms"
else
  echo "ncu not found: no reference measurement"
fi
python3 - "${med[write]}" "${med[clean]}" "$ncu_ms" <<'PY' | tee "$out/result.txt"
import math, sys
w, c, n = (float(x) for x in sys.argv[1:4])
for name, v in (("write", w), ("clean", c)):
    if math.isnan(v) or math.isnan(n):
        print(f"kqual ({name}) vs ncu: not measured")
    else:
        print(f"kqual ({name}) / ncu = {v / n:.4f}  ({(v / n - 1) * 100:+.2f} %)")
PY
