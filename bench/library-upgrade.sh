#!/usr/bin/env bash
# Issue 56 on the device: which builds of the CUDA libraries are present (the toolkit's and the copies
# PyTorch's wheels carry, with versions and hashes), then `kqual compare OLD NEW` on the two cuBLAS
# builds, per dtype, for both bundled profiles. Usage:
#   bash bench/library-upgrade.sh OUT_DIR
# Environment (each printed before it is used):
#   KQUAL_EXE            kqual binary (default build/tools/kqual/kqual)
#   KQUAL_LIB_DTYPES     dtypes to compare (default "f32 bf16 f16")
#   KQUAL_LIB_ARGS       extra compare options (default: 6 startup runs per side and mode, at most 12)
#   KQUAL_LIB_TIMEOUT    seconds per compare (default 240)
#   KQUAL_LIB_PAIR       "OLD NEW" to compare instead of the pair found
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: bench/library-upgrade.sh OUT_DIR}"
mkdir -p "$out"
exe="${KQUAL_EXE:-$root/build/tools/kqual/kqual}"
dtypes="${KQUAL_LIB_DTYPES:-f32 bf16 f16}"
args="${KQUAL_LIB_ARGS:---startup-runs 6 --startup-max-runs 12}"
limit="${KQUAL_LIB_TIMEOUT:-240}"
echo "kqual: $exe; dtypes: $dtypes; compare options: $args; limit per compare: ${limit} s"

# ---- 1. The builds present ----
py_sites=$(python3 -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
dirs="/usr/local/cuda/lib64 $(ls -d /usr/local/cuda-*/lib64 2>/dev/null | tr '\n' ' ')"
for s in $py_sites; do dirs="$dirs $(ls -d "$s"/nvidia/*/lib "$s"/torch/lib 2>/dev/null | tr '\n' ' ')"; done
inv="$out/inventory.tsv"
printf 'library\tfile\tbytes\tsha256\n' > "$inv"
for d in $dirs; do
  for f in "$d"/lib{cublas,cublasLt,cudnn,cudart,nvrtc,cusparse,cufft,nccl,nvJitLink}.so*; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    printf '%s\t%s\t%s\t%s\n' "$(basename "$f" | sed 's/\.so.*//')" "$(readlink -f "$f")" "$(stat -c %s "$f")" \
      "$(sha256sum "$f" | cut -c1-16)" >> "$inv"
  done
done
{ head -1 "$inv"; tail -n +2 "$inv" | sort -u; } > "$inv.sorted" && mv "$inv.sorted" "$inv"
echo "== builds present ($(($(wc -l < "$inv") - 1)) files; full list in inventory.tsv)"
grep -E '^library|cublas|cudnn|cudart' "$inv" | head -40
echo "== versions"
grep -o '"libcublas"[^}]*}' /usr/local/cuda/version.json 2>/dev/null | tr -d '\n'; echo "  (toolkit /usr/local/cuda/version.json)"
python3 - <<'EOF' 2>&1
import importlib.metadata as m
for d in sorted(m.distributions(), key=lambda d: d.metadata["Name"].lower()):
    n = d.metadata["Name"]
    if n.lower().startswith(("nvidia-", "torch", "triton")):
        print(f"{n}=={d.version}")
EOF

# ---- 2. The pair: the toolkit's cuBLAS against the wheel's (older version first) ----
if [ -n "${KQUAL_LIB_PAIR:-}" ]; then
  read -r old new <<< "$KQUAL_LIB_PAIR"
else
  toolkit=$(readlink -f /usr/local/cuda/lib64/libcublas.so.13 2>/dev/null)
  wheel=""
  for s in $py_sites; do
    for f in "$s"/nvidia/*/lib/libcublas.so.13; do [ -f "$f" ] && wheel=$(readlink -f "$f") && break 2; done
  done
  one=""
  if [ -z "$toolkit" ] || [ -z "$wheel" ]; then
    echo "ONE BUILD ONLY: toolkit '${toolkit:-none}', wheel '${wheel:-none}' — no pair of cuBLAS builds to compare"
    one=${toolkit:-$wheel}
  elif cmp -s "$toolkit" "$wheel"; then
    echo "THE SAME BUILD: $toolkit and $wheel are byte-identical — no pair of cuBLAS builds to compare"
    one=$toolkit
  fi
  if [ -n "$one" ]; then
    # The fallback issue 56 names: lazy against eager loading, and cuBLAS against cuBLASLt, on the one build.
    echo "FALLBACK on the one build $one: lazy against eager module loading (kqual startup), and cuBLAS against cuBLASLt (kqual compare --new-api cublaslt)"
    scmd=("$exe" startup "$one" --modes cold --loading lazy,eager --runs "${KQUAL_LIB_STARTUP_RUNS:-6}"
          --library-shapes "4096,4096,4096;1024,1024,1024" --library-dtype bf16 --out "$out/startup-lazy-eager.json")
    echo "== ${scmd[*]}"
    t0=$(date +%s)
    timeout -k 10 120 "${scmd[@]}" 2>&1 | tail -30
    echo "exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
    old=$one new=$one
    args="--new-api cublaslt $args"
  fi
fi
if [ -z "${one:-}" ] && [ -z "${KQUAL_LIB_PAIR:-}" ]; then
  tv=$(grep -o '"libcublas"[^}]*"version" *: *"[^"]*"' /usr/local/cuda/version.json | sed 's/.*"\([^"]*\)"$/\1/')
  wv=$(python3 -c 'import importlib.metadata as m
for n in ("nvidia-cublas", "nvidia-cublas-cu13"):
    try: print(m.version(n)); break
    except Exception: pass' 2>/dev/null)
  echo "toolkit cuBLAS ${tv:-?} at $toolkit; wheel cuBLAS ${wv:-?} at $wheel"
  if [ "$(printf '%s\n%s\n' "${tv:-0}" "${wv:-0}" | sort -V | head -1)" = "${tv:-0}" ]; then
    old=$toolkit new=$wheel
  else
    old=$wheel new=$toolkit
  fi
fi
echo "OLD: $old"
echo "NEW: $new"

# ---- 3. kqual compare per dtype, both profiles ----
for dt in $dtypes; do
  dir="$out/compare-$dt"
  cmd=("$exe" compare "$old" "$new" --dtype "$dt" --profile "$root/profiles/long-lived-server.toml"
       --profile "$root/profiles/cold-start-heavy.toml" --out "$dir" $args)
  echo "== compare $dt: ${cmd[*]}"
  t0=$(date +%s)
  timeout -k 10 "$limit" "${cmd[@]}" > "$out/compare-$dt.log" 2>&1
  rc=$?
  echo "exit $rc in $(( $(date +%s) - t0 )) s"
  grep -v "^kqual compare \[" "$out/compare-$dt.log" | tail -12; grep "^kqual compare \[" "$out/compare-$dt.log" | tail -4
  [ -f "$dir/results.json" ] && python3 - "$dir/results.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for m in (r.get("startup") or {}).get("modes", []):
    o, n = m["old"], m["new"]
    med = lambda s: "—" if not s else f"{s['median']:.1f}"
    lp = lambda side, ph: med((side.get("library_phases_summary_ms") or {}).get(ph))
    print(f"startup {m['cache']}/{m['loading']}: first request old {med(o['first_request_summary_ms'])} ms, new "
          f"{med(n['first_request_summary_ms'])} ms; library_load {lp(o,'library_load')} / {lp(n,'library_load')}, handle "
          f"{lp(o,'handle')} / {lp(n,'handle')}, first_call {lp(o,'first_call')} / {lp(n,'first_call')}; delta "
          f"{json.dumps(m.get('first_request_delta_ms'))[:160]}")
for s in (r.get("warm") or {}).get("shapes", []):
    c = s.get("comparison") or {}
    print(f"warm {s['shape']}: old {s['old'].get('summary_of_process_medians_ms', {}).get('median')} ms, new "
          f"{s['new'].get('summary_of_process_medians_ms', {}).get('median')} ms, ratio {c.get('estimate')} {c.get('ci')} {c.get('verdict')}")
for d in r.get("decisions") or []:
    print(f"profile {d['profile']['name']}: {d['decision']['verdict']} (break-even {d['decision'].get('breakeven_calls')})")
print("correctness:", r.get("correctness_relation"), "| verdict:", r["verdict"]["decision"], "—", r["verdict"]["summary"][:300])
for side in ("old", "new"):
    print(side, "library:", json.dumps(r["sides"][side].get("library"))[:400])
EOF
done
