#!/usr/bin/env bash
# Benchmark: each contract's bundled good candidate against its baselines (eager, and the library
# where one has the op: CUB, cuBLAS) at the contract's benchmark shapes (the last is the large one),
# and as a fraction of the roofline ceiling that bounds it: the device-to-device copy measured in
# the same run for memory-bound ops, the measured f32 FMA rate for gemm.
# Usage: bash bench/contracts.sh [OUT_DIR] [CONTRACT...]   (needs a GPU)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/kqual-out/bench-contracts}"
shift || true
contracts=("$@")
[ ${#contracts[@]} -eq 0 ] && contracts=(exclusive_scan reduce_sum softmax transpose gemm)
kq="$root/build/tools/kqual/kqual"
mkdir -p "$out"
"$kq" --json model roofline --measure --flops 1 --bytes 1 > "$out/ceilings.json" 2> "$out/ceilings.err" || true
for c in "${contracts[@]}"; do
  timeout 300 "$kq" bench "$root/candidates/$c/good" --rounds 3 --samples 10 --out "$out/$c" > "$out/$c.log" 2>&1
  echo "$c: kqual bench exit $?"
done
python3 - "$out" "${contracts[@]}" <<'PY'
import json, os, sys
out, contracts = sys.argv[1], sys.argv[2:]
fma = None
try:
    fma = json.load(open(os.path.join(out, "ceilings.json")))["measurement"]["fp32_fma_flops_per_s"]
except Exception as e:
    print(f"(no measured FMA ceiling: {e})")
def t(ms): return f"{ms*1e3:.2f} us" if ms < 1 else f"{ms:.3f} ms"
for c in contracts:
    p = os.path.join(out, c, "results.json")
    if not os.path.exists(p):
        print(f"{c}: no results"); continue
    r = json.load(open(p))
    gpu = r["provenance"].get("gpu", {}).get("name", "?")
    for sh in r.get("timing", {}).get("shapes", []):
        ser = sh["series"]
        cand = ser[0]
        if "summary_ms" not in cand:
            print(f"{c} {sh['shape']}: candidate not timed: {cand.get('error','')}"); continue
        cm = cand["summary_ms"]["median"]
        parts = []
        for b in ser[1:]:
            if "summary_ms" in b: parts.append(f"{b['label']} {t(b['summary_ms']['median'])} ({b['summary_ms']['median']/cm:.2f}x)")
            else: parts.append(f"{b['label']} n/a ({b.get('error','')[:60]})")
        roof = ""
        if c == "gemm" and fma:
            roof = f"{cand['flops_per_s']/1e12:.1f} TFLOP/s = {100*cand['flops_per_s']/fma:.0f} % of measured f32 FMA {fma/1e12:.1f}"
        elif "device_copy" in sh:
            cp = sh["device_copy"]["bytes_per_s"]
            roof = f"{cand['bytes_per_s']/1e12:.2f} TB/s = {100*cand['bytes_per_s']/cp:.0f} % of copy {cp/1e12:.2f} TB/s"
        else:
            roof = f"{cand['bytes_per_s']/1e12:.2f} TB/s"
        ok = "" if cand.get("verified", True) else " TIMED OUTPUT WRONG"
        print(f"{c:15s} {sh['shape']:28s} candidate {t(cm)}; {'; '.join(parts)}; {roof}{ok}  [{gpu}]")
PY
