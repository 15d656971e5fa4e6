#!/usr/bin/env bash
# The upgrade question, reproduced: one kernel built several ways with what the machine has, each
# pair judged by `kqual compare` for a long-lived server and a cold-start-heavy service.
#
#   bash examples/upgrade/run.sh [OUT_DIR]        (default kqual-out/upgrade)
#
# Builds (nvcc from the CUDA toolkit; Triton's ptxas when a Triton wheel is installed):
#   sass.fatbin      native sm_90 SASS only                      (what a toolkit build for Hopper ships)
#   ptx.fatbin       compute_90 PTX only                         (the driver JIT-compiles it at first load)
#   legacy-app       host executable with sm_80 SASS + compute_80 PTX only: an older build that did not
#                    target Hopper, so the driver JITs the PTX (the fatbin is read out of the executable)
#   maxrreg24.fatbin sm_90 SASS with -maxrregcount=24 (32 → 24 registers, 48 B of spills): a register-allocation change
#   triton ptxas     the candidate built by kqual with NVRTC → PTX → Triton's ptxas (--new-ptxas triton)
# Pairs: sass→ptx, legacy-app→sass, sass→maxrreg24, toolkit ptxas→Triton ptxas.
# Without a GPU every compare runs its static phases only (exit 3) and the table says so.
# Extra kqual compare options: KQUAL_COMPARE_ARGS (e.g. "--processes 8"; compare refuses fewer than 6).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/kqual-out/upgrade}"
kqual="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
[ -x "$kqual" ] || { echo "run.sh: no kqual at $kqual (build first: bash scripts/setup)" >&2; exit 2; }
[ -x "$nvcc" ] || { echo "run.sh: no nvcc at $nvcc (set NVCC)" >&2; exit 2; }
mkdir -p "$out/build"
b="$out/build"
src="$here/candidate/kernel.cu"
plan="$here/plan"
profiles=(--profile "$root/profiles/long-lived-server.toml" --profile "$root/profiles/cold-start-heavy.toml")

echo "== building with $("$nvcc" --version | tail -1)"
set -e
"$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 -o "$b/sass.fatbin" "$src"
"$nvcc" -fatbin -gencode arch=compute_90,code=compute_90 -o "$b/ptx.fatbin" "$src"
"$nvcc" -fatbin -gencode arch=compute_90,code=sm_90 -maxrregcount=24 -o "$b/maxrreg24.fatbin" "$src"
"$nvcc" -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80 -o "$b/legacy-app" "$src" \
  "$here/host.cpp"
set +e
echo "built: $(cd "$b" && ls)"

summary="$out/summary.md"
{
  echo "# Upgrade example: verdicts per pair and profile"
  echo
  echo "kqual: \`$kqual\`; nvcc: $("$nvcc" --version | tail -1); $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
} > "$summary"

# run_pair NAME OLD NEW [extra args...]
run_pair() {
  local name="$1" old="$2" new="$3"
  shift 3
  echo "== $name"
  local t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$kqual" compare "$old" "$new" "$@" "${profiles[@]}" ${KQUAL_COMPARE_ARGS:-} --out "$out/$name" \
    > "$out/$name.log" 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  tail -n 6 "$out/$name.log"
  printf 'exit %s after %.1f s\n' "$rc" "$(awk "BEGIN{print $t1 - $t0}")"
  python3 "$here/summarize.py" "$name" "$out/$name/results.json" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" >> "$summary"
}

run_pair sass-to-ptx "$b/sass.fatbin" "$b/ptx.fatbin" --manifest "$plan"
run_pair legacy-app-to-sass "$b/legacy-app" "$b/sass.fatbin" --manifest "$plan"
run_pair sass-to-maxrreg24 "$b/sass.fatbin" "$b/maxrreg24.fatbin" --manifest "$plan"
if triton_ptxas=$(python3 -c 'import triton, os; p = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas"); print(p) if os.access(p, os.X_OK) else exit(1)' 2>/dev/null); then
  run_pair toolkit-ptxas-to-triton-ptxas "$here/candidate" "$here/candidate" --old-ptxas default --new-ptxas "$triton_ptxas"
else
  echo "== toolkit-ptxas-to-triton-ptxas: skipped (no Triton wheel with a bundled ptxas here)"
  printf '\n## toolkit-ptxas-to-triton-ptxas\n\nNot run: no Triton wheel with a bundled ptxas on this machine.\n' >> "$summary"
fi
echo
echo "summary: $summary"
cat "$summary"
