#!/usr/bin/env bash
# How long a default `kqual compare` takes on a residual_add_relu-sized kernel (target: <= 60 s on
# the H200), and where the time goes: every progress line is stamped with the seconds since start.
#   bash bench/compare-speed.sh [OUT_DIR]
# Pair: the bundled candidate as native SASS (OLD) vs PTX only (NEW), both deployment profiles,
# every other option at its default. Results: docs/gpu-runs.md.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/kqual-out/compare-speed}"
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
mkdir -p "$out"
cmd=("$kqual" compare "$root/candidates/residual_add_relu/good" --old-mode sass --new-mode ptx
     --profile "$root/profiles/long-lived-server.toml" --profile "$root/profiles/cold-start-heavy.toml" --out "$out/compare")
echo "command: ${cmd[*]}"
t0=$(date +%s.%N)
"${cmd[@]}" 2> >(while IFS= read -r line; do
  printf '%7.1f s  %s\n' "$(awk "BEGIN{print $(date +%s.%N) - $t0}")" "$line"
done | tee "$out/progress.txt" >&2) > "$out/stdout.txt"
rc=$?
sleep 0.2
t1=$(date +%s.%N)
cat "$out/stdout.txt"
printf 'compare-speed: exit %s, %.1f s wall (target 60 s)\n' "$rc" "$(awk "BEGIN{print $t1 - $t0}")" | tee "$out/result.txt"
python3 - "$out/compare/results.json" <<'PY' | tee -a "$out/result.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no results.json: {e}"); sys.exit()
st = r.get("startup", {})
print(f"startup runs per side per mode: {st.get('runs_per_side_per_mode')} (extensions: {st.get('extensions')})")
for m in st.get("modes", []):
    res = m.get("resolution") or {}
    d = m.get("first_request_delta_ms") or {}
    print(f"  {m['cache']}: first-request delta {d.get('estimate')} ms CI {d.get('ci')} detectable ±{res.get('detectable_difference_ms')} ms, needed {res.get('runs_per_side_needed_for_target')} per side")
for c in ("old", "new"):
    rep = r.get("correctness", {}).get(c)
    if rep: print(f"  correctness {c}: {rep.get('verdict')} {rep.get('passed')}/{rep.get('cases')} wall {rep.get('wall_ms')} ms")
print("verdict:", r["verdict"]["decision"], "-", r["verdict"]["summary"])
PY
