#!/usr/bin/env bash
# Benchmark: the bundled good residual_add_relu candidate at 2^28 f32 elements against the
# device-to-device copy measured in the same run, and against the eager baseline.
# Targets: >= 90 % of copy bandwidth (bytes read + written), >= 1.4x eager.
# Usage: bash bench/residual_add_relu.sh [OUT_DIR]   (needs a GPU; prints PASS/FAIL lines)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/kqual-out/bench-residual_add_relu}"
kq="$root/build/tools/kqual/kqual"
mkdir -p "$out"
set +e
"$kq" bench "$root/candidates/residual_add_relu/good" --sizes 268435456 --rounds 3 --samples 10 --out "$out"
rc=$?
set -e
[ -f "$out/results.json" ] || { echo "bench: no results (exit $rc)"; exit 1; }
python3 - "$out/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sh = r["timing"]["shapes"][0]
ser = {s["label"]: s for s in sh["series"]}
cand = [s for s in sh["series"] if s["role"] == "candidate"][0]
copy = sh["device_copy"]["bytes_per_s"]
frac = cand["bytes_per_s"] / copy
eager = ser["eager"]["summary_ms"]["median"] / cand["summary_ms"]["median"]
fused = ser["fused"]["summary_ms"]["median"] / cand["summary_ms"]["median"]
gpu = r["provenance"]["gpu"]["name"]
print(f"device: {gpu}; {sh['shape']} {sh['dtype']}")
print(f"copy bandwidth (read+write): {copy/1e12:.3f} TB/s, median of {len(sh['device_copy']['samples_ms'])} samples")
print(f"candidate: median {cand['summary_ms']['median']:.4f} ms, {cand['bytes_per_s']/1e12:.3f} TB/s = {100*frac:.1f} % of copy "
      f"-> {'PASS' if frac >= 0.90 else 'FAIL'} (target >= 90 %)")
print(f"eager: median {ser['eager']['summary_ms']['median']:.4f} ms -> candidate speed-up {eager:.2f}x "
      f"-> {'PASS' if eager >= 1.4 else 'FAIL'} (target >= 1.4x)")
print(f"fused (plain): median {ser['fused']['summary_ms']['median']:.4f} ms -> candidate speed-up {fused:.2f}x")
PY
