#!/usr/bin/env bash
# Screening throughput: `kqual screen` over N copies of the residual_add_relu good candidate (each
# under its own folder and manifest name), measured as candidates per GPU-hour (wall time of the
# run, all of which holds the GPU).
#   bash bench/screen.sh [N] [OUT_DIR] [-- extra kqual screen options]
# Defaults: N = 20, OUT_DIR = kqual-out/screen-bench; a fresh journal every time (--restart).
# Without a GPU the run is incomplete (exit 3) and the rate measures compiles only.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n="${1:-20}"
out="${2:-$root/kqual-out/screen-bench}"
shift $(( $# >= 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
case "$n" in ''|*[!0-9]*) echo "screen.sh: N must be a positive integer, got '$n'" >&2; exit 2;; esac
work="$(mktemp -d "${TMPDIR:-/tmp}/kqual-screen-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# KQUAL_SCREEN_POPULATION=all: the copies cycle through every bundled candidate of
# KQUAL_SCREEN_CONTRACT (default residual_add_relu), good and broken, a realistic screening mix
# (issue 21); "submissions": every bundled PyTorch submission, good and broken, of every problem;
# default "good": copies of the good candidate only. Extra options after "--", e.g. -- --timing.
population="${KQUAL_SCREEN_POPULATION:-good}"
contract="${KQUAL_SCREEN_CONTRACT:-residual_add_relu}"
if [ "$population" = all ]; then
  mapfile -t sources < <(ls -d "$root/candidates/$contract/good" "$root/candidates/$contract/broken/"*/ | sed 's:/*$::')
elif [ "$population" = submissions ]; then
  # PyTorch submissions (issue 38): every bundled one, good and known-broken, of every problem under
  # examples/torch_submissions/ (their module paths made absolute in the copies).
  mapfile -t sources < <(ls -d "$root"/examples/torch_submissions/*/good/*/ "$root"/examples/torch_submissions/*/broken/*/ | sed 's:/*$::')
  contract="(examples/torch_submissions)"
else
  sources=("$root/candidates/$contract/good")
fi
echo "population: $population (${#sources[@]} distinct candidates of $contract), $n copies"
for i in $(seq 1 "$n"); do
  src="${sources[$(( (i - 1) % ${#sources[@]} ))]}"
  d="$work/cands/copy$(printf '%04d' "$i")"
  mkdir -p "$d"
  cp -r "$src/"* "$d/"
  # What the copy must be judged (its [expect] rejected_for, else accepted), checked after the run.
  # (with the classes its or_rejected_for admits as well, comma-separated)
  want=$(sed -n 's/^rejected_for *= *"\(.*\)"/\1/p' "$src/kqual.toml")
  also=$(sed -n 's/^or_rejected_for *= *\[\(.*\)\]/\1/p' "$src/kqual.toml" | tr -d ' "')
  # A candidate that selftest hands kqual's hash-slot address (given_hash_slots) is rejected for
  # writing there only when it has it; screen does not hand it, and its skipped launches are then
  # caught as timed_output_wrong (its manifest says so).
  grep -q '^given_hash_slots *= *true' "$src/kqual.toml" && want=timed_output_wrong
  printf '%s\t%s\n' "$d" "${want:-accepted}${also:+,$also}" >> "$work/expected.tsv"
  # Each copy under its own manifest name (the journal keys verdicts by candidate).
  sed -i "0,/^name = \"\([^\"]*\)\"/s//name = \"\1_copy$i\"/" "$d/kqual.toml"
  # A submission's module, or a kernel source shared with another folder (a known-broken candidate
  # that is the good source plus a define: source = "../../good/kernel.cu"), named relative to its
  # own folder: absolute in the copy.
  for key in module source; do
    rel=$(sed -n "s/^$key *= *\"\(.*\)\"/\1/p" "$d/kqual.toml")
    if [ -n "$rel" ] && [ "${rel#/}" = "$rel" ] && [ ! -e "$d/$rel" ]; then
      sed -i "s|^$key *= *\".*\"|$key = \"$(cd "$src" && realpath "$rel")\"|" "$d/kqual.toml"
    fi
  done
done
mkdir -p "$out"
cmd=("$kqual" screen "$work/cands" --restart --out "$out" "$@")
echo "command: ${cmd[*]}"
t0=$(date +%s.%N)
"${cmd[@]}"
rc=$?
t1=$(date +%s.%N)
python3 - "$out/results.json" "$rc" "$t0" "$t1" "$work/expected.tsv" "$*" <<'PY'
import json, sys
rc, t0, t1 = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
expected = dict(line.rstrip("\n").split("\t") for line in open(sys.argv[5]))
timing = "--timing" in sys.argv[6].split()
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"screen.sh: no results.json ({e}); exit {rc}"); sys.exit(1)
wall = t1 - t0
ran = r["run"]
gpu = "GPU" if r["device_present"] else "no GPU: compile-only"
print(f"screen.sh: {r['candidates']} candidates, exit {rc}, counts {r['counts']}")
print(f"screen.sh: {ran} run in {wall:.1f} s wall (kqual's own: {r['wall_s']:.1f} s, {gpu})")
# Every verdict against what its candidate must get: accepted, or rejected for its stated class.
# A timing-only defect (timed_output_wrong) is caught only with --timing; a screen without it accepts.
as_stated, wrong = 0, []
for v in r["verdicts"]:
    want = expected.get(v["candidate"], "?").split(",")
    if want[0] == "timed_output_wrong" and not timing:
        want[0] = "accepted"
    ok = (v["verdict"] == "accepted" and "accepted" in want) or (
        v["verdict"] == "rejected" and any(w in v.get("codes", {}) for w in want))
    want = " or ".join(want)
    if ok:
        as_stated += 1
    else:
        wrong.append(f"{v['name']}: {v['verdict']} ({v.get('reason', '')}), expected {want}")
print(f"screen.sh: {as_stated} of {len(r['verdicts'])} verdicts as stated"
      + ("" if r["device_present"] else " (no GPU: nothing was judged)"))
for w in wrong[:12]:
    print(f"screen.sh:   {w}")
if ran and wall > 0:
    print(f"screen.sh: {ran / (wall / 3600):.0f} candidates per GPU-hour (process wall time; "
          f"kqual reports {r['candidates_per_hour']:.0f}/h from its own clock)")
PY
