#!/usr/bin/env bash
# Verdict speed (issue 21): start-to-verdict wall time of a default `kqual check` for every bundled
# known-broken candidate (each must be rejected for the reason its manifest states), then a correct
# kernel's `kqual check` (with the large cases) and `kqual qualify`. Prints one line per run and a
# summary (median and max over the broken ones); the numbers go to docs/gpu-runs.md.
#   bash bench/verdict-speed.sh [OUT_DIR] [CONTRACT...]     (default: every contract)
# KQUAL_VERDICT_TIMEOUT caps each run [s] (default 120): a run that reaches it is reported as such.
# KQUAL_VERDICT_SKIP names broken candidates to leave out (said in the output).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/kqual-out/verdict-speed}"
shift $(( $# >= 1 ? 1 : 0 ))
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
limit="${KQUAL_VERDICT_TIMEOUT:-120}"
contracts="$*"
[ -z "$contracts" ] && contracts=$(ls "$root/candidates" | grep -v prebuilt)
mkdir -p "$out"
rows="$out/rows.tsv"
: > "$rows"
echo "kqual: $kqual ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')), per-run limit ${limit} s"
run() {  # run KIND NAME EXPECTED -- ARGS...
  local kind="$1" name="$2" expected="$3"; shift 4
  local dir="$out/$kind-$(echo "$name" | tr / -)"
  rm -rf "$dir"
  local t0 t1 rc
  t0=$(date +%s.%N)
  # Progress lines (elapsed seconds per phase) are kept in every run's log: the slowest runs'
  # phases are printed at the end (where a verdict's seconds go).
  timeout "$limit" "$kqual" "$@" --out "$dir" > "$dir.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  python3 - "$dir/results.json" "$kind" "$name" "$expected" "$rc" "$t0" "$t1" "$rows" <<'PY'
import json, sys
path, kind, name, expected, rc, t0, t1, rows = sys.argv[1:9]
wall = float(t1) - float(t0)
try:
    r = json.load(open(path)); c = r.get("correctness") or {}
except Exception:
    r, c = {}, {}
codes = set((c.get("failure_codes") or {}).keys())
for sh in ((r.get("timing") or {}).get("shapes") or []):  # timing cheats show in the timed outputs
    s0 = (sh.get("series") or [{}])[0]
    if s0.get("verified") is False: codes.add(s0.get("verify_code") or "timed_output_wrong")
codes = sorted(codes)
verdict = c.get("verdict", "none")
# A correct kernel: accepted by the correctness phase; qualify's exit 1 with verdict inconclusive
# (no reliable difference at a shape) is a verdict, not a failure of the run.
decision = (r.get("verdict") or {}).get("decision", "")
ok = any(e in codes for e in expected.split("|")) if kind == "broken" else (verdict == "accepted" and (rc == "0" or decision == "inconclusive"))
if rc == "124": ok = False
line = (f"{kind:7s} {name:45s} exit {rc:>3s}  {wall:7.1f} s  {verdict:8s} codes {','.join(codes) or '-':28s} "
        f"expected {expected:22s} {'OK' if ok else 'UNEXPECTED'}  cases run {c.get('cases', '?')}, "
        f"not run (settled) {len(c.get('settled_not_run') or [])}, sanitizer {(c.get('sanitizer') or {}).get('status', '-')}")
print(line, flush=True)
open(rows, "a").write(f"{kind}\t{name}\t{wall:.2f}\t{rc}\t{'ok' if ok else 'unexpected'}\n")
PY
}
for c in $contracts; do
  for d in "$root"/candidates/"$c"/broken/*/; do
    [ -f "$d/kqual.toml" ] || continue
    # KQUAL_VERDICT_SKIP="a b": leave these candidates out (a re-run of what a change did not touch).
    [[ " ${KQUAL_VERDICT_SKIP:-} " == *" $(basename "$d") "* ]] && { echo "skipped  $c/$(basename "$d") (KQUAL_VERDICT_SKIP)"; continue; }
    # The stated reason, and the alternatives the manifest allows (or_rejected_for = ["a", "b"]): a|b|c.
    expected=$(sed -n 's/^rejected_for *= *"\([^"]*\)".*/\1/p' "$d/kqual.toml" | head -1)
    alt=$(sed -n 's/^or_rejected_for *= *\[\(.*\)\].*/\1/p' "$d/kqual.toml" | tr -d '" ' | tr ',' '|' | head -1)
    [ -n "$alt" ] && expected="${expected:+$expected|}$alt"
    if [[ "$expected" == timed_output_wrong* ]]; then  # shows only when timed: qualify at one small shape
      run broken "$c/$(basename "$d")" "$expected" -- qualify "$d" --no-large-cases --no-sanitizer-pass --rounds 2 --samples 10
    else
      run broken "$c/$(basename "$d")" "${expected:-?}" -- check "$d"
    fi
  done
done
good="$root/candidates/residual_add_relu/good"
run good "residual_add_relu/good check" accepted -- check "$good"
run good "residual_add_relu/good qualify" accepted -- qualify "$good"
grep -h "^kqual" "$out/good-residual_add_relu-good qualify.log" 2>/dev/null | tail -25
python3 - "$rows" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
b = [float(r[2]) for r in rows if r[0] == "broken"]
bad = [r[1] for r in rows if r[4] != "ok"]
if b:
    print(f"broken: {len(b)} candidates, median {statistics.median(b):.1f} s, max {max(b):.1f} s (targets: median <= 3 s, max <= 30 s)")
for r in rows:
    if r[0] == "good": print(f"{r[1]}: {float(r[2]):.1f} s, exit {r[3]}")
print("unexpected:", ", ".join(bad) if bad else "none")
PY
# Where the seconds of the three slowest broken runs went (their progress lines).
sort -t$'\t' -k3 -g -r "$rows" | awk -F'\t' '$1 == "broken"' | head -3 | while IFS=$'\t' read -r kind name wall rc ok; do
  echo "-- $name ($wall s):"
  grep -h "^kqual" "$out/broken-$(echo "$name" | tr / -).log" 2>/dev/null | cut -c1-160 | tail -14
done
