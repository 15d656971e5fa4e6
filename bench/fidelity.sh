#!/usr/bin/env bash
# Timing fidelity (issue 13): kqual's median against Nsight Compute's gpu__time_duration and against
# triton.testing.do_bench, for three kernels, side by side in one run on one GPU:
#   bw    residual_add_relu, n = 2^28 f32 (bandwidth-bound, ~0.8 ms)
#   tiny  residual_add_relu, n = 2^20 f32 (~5 us: launch-bound)
#   gemm  gemm 128x128 tiles, m = n = k = 4096 f32 (~4 ms, compute-bound)
# For each: kqual bench with the event timer and each L2 policy (write, clean), with the CUPTI timer
# (the kernels' own GPU start/end; the event interval of the same samples beside it), the graph
# timer for the tiny kernel (warm L2); ncu on the same kqual process (--cache-control all
# --clock-control none, the candidate's kernel only); do_bench on an nvcc build of the same source
# (bench/fidelity-dobench.py; do_bench zeroes 256 MB before each call: a write flush).
#   bash bench/fidelity.sh [OUT_DIR]      KQUAL_FIDELITY_KERNELS="bw tiny gemm" (default all)
# Needs a GPU; ncu, nvcc, PyTorch and Triton for the references (each missing one is reported).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/kqual-out/fidelity}"
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
kernels="${KQUAL_FIDELITY_KERNELS:-bw tiny gemm}"
mkdir -p "$out"
: > "$out/table.tsv"
t_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t_start )) s] $*"; }
# results.json → "median event_median sm_clock_median discarded" of the candidate's first shape
read_kqual() {
  python3 - "$1" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))["timing"]["shapes"][0]["series"][0]
    clk = s.get("clocks", {})
    print(s["summary_ms"]["median"], s.get("event_median_ms", "nan"), clk.get("sm_mhz_median", "nan"), clk.get("discarded_samples", 0))
except Exception as e:
    print("nan nan nan 0")
PY
}
ncu_median() {
  python3 - "$1" <<'PY'
import csv, statistics, sys
vals = []
for row in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')):
    if len(row) > 3 and row[-3] == "gpu__time_duration.sum":
        v = float(row[-1].replace(",", "")); u = row[-2]
        vals.append(v / 1e6 if u in ("ns", "nsecond") else v / 1e3 if u in ("us", "usecond") else v)
print(f"{statistics.median(vals)} {len(vals)}" if vals else "nan 0")
PY
}
row() { printf '%s\t%s\t%s\t%s\n' "$@" >> "$out/table.tsv"; }
for k in $kernels; do
  case $k in
    bw) cand=candidates/residual_add_relu/good; shape=(--sizes 268435456); regex=add_relu_vec; db=(add_relu 268435456) ;;
    tiny) cand=candidates/residual_add_relu/good; shape=(--sizes 1048576); regex=add_relu_vec; db=(add_relu 1048576) ;;
    gemm) cand=candidates/gemm/good; shape=(--shape m=4096,n=4096,k=4096); regex=gemm_128x128; db=(gemm 4096 4096 4096) ;;
    *) echo "unknown kernel '$k'"; continue ;;
  esac
  stamp "== $k: $cand ${shape[*]}"
  runs=("events write" "events clean" "cupti clean")
  [ "$k" = tiny ] && runs+=("graph none" "events none")
  [ "$k" = bw ] && runs+=("cupti write" "cupti none" "events invalidate" "cupti invalidate")
  [ "$k" = gemm ] && runs+=("events invalidate")
  [ "$k" = tiny ] && runs+=("events invalidate")
  for r in "${runs[@]}"; do
    set -- $r
    cmd=("$kqual" bench "$root/$cand" "${shape[@]}" --timer "$1" --l2-flush "$2" --rounds 2 --samples 15 --quiet --out "$out/$k-$1-$2")
    stamp "command: ${cmd[*]}"
    "${cmd[@]}" > "$out/$k-$1-$2.txt" 2>&1 || echo "  (exit $?; see $k-$1-$2.txt)"
    read -r med ev clk disc < <(read_kqual "$out/$k-$1-$2/results.json")
    echo "  kqual --timer $1 --l2-flush $2: median $med ms (events of the same samples: $ev ms), SM clock median $clk MHz, $disc discarded"
    row "$k" "kqual $1 $2" "$med" "events=$ev clock=$clk discarded=$disc"
  done
  if command -v ncu > /dev/null; then
    # --cache-control all (the reference) and none (ncu leaves the caches as kqual's flush left them:
    # isolates what ncu's own flush-and-invalidate does to the kernel's time).
    for cc in ${KQUAL_FIDELITY_NCU_CACHE:-all none}; do
      name=ncu; [ "$cc" = all ] || name="ncu --cache-control $cc"
      cmd=(ncu --target-processes all --clock-control none --cache-control "$cc" --metrics gpu__time_duration.sum
           -k "regex:$regex" -c 15 --csv "$kqual" bench "$root/$cand" "${shape[@]}" --l2-flush clean --rounds 1 --samples 5 --quiet --out "$out/$k-ncu-$cc-run")
      stamp "command: ${cmd[*]}"
      "${cmd[@]}" > "$out/$k-ncu-$cc.csv" 2> "$out/$k-ncu-$cc.err"
      read -r nmed ncount < <(ncu_median "$out/$k-ncu-$cc.csv")
      echo "  ncu --cache-control $cc gpu__time_duration.sum: median $nmed ms over $ncount launches"
      row "$k" "$name" "$nmed" "launches=$ncount"
    done
  else
    echo "  ncu not found: no reference"
  fi
  if python3 -c "import torch, triton" 2> /dev/null && command -v nvcc > /dev/null; then
    stamp "command: python3 bench/fidelity-dobench.py ${db[*]}"
    line=$(python3 "$root/bench/fidelity-dobench.py" "${db[@]}" 2> "$out/$k-dobench.err" | tail -1)
    echo "  do_bench: $line"
    dmed=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["do_bench_median_ms"])' "$line" 2> /dev/null || echo nan)
    row "$k" "triton do_bench (write flush)" "$dmed" "nvcc build of the same source"
  else
    echo "  PyTorch/Triton or nvcc missing: no do_bench reference"
  fi
done
stamp "== summary (ratios to ncu)"
python3 - "$out/table.tsv" <<'PY' | tee "$out/result.txt"
import csv, math, sys
rows = list(csv.reader(open(sys.argv[1]), delimiter="\t"))
by = {}
for k, what, v, note in rows:
    by.setdefault(k, []).append((what, float(v) if v not in ("", "nan") else math.nan, note))
for k, items in by.items():
    ncu = next((v for w, v, _ in items if w == "ncu"), math.nan)
    print(f"{k}:")
    for w, v, note in items:
        ratio = f"{(v / ncu - 1) * 100:+.2f} % vs ncu" if not (math.isnan(v) or math.isnan(ncu)) and w != "ncu" else ""
        print(f"  {w:34s} {v:10.5f} ms  {ratio:16s} {note}")
PY
