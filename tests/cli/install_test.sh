#!/usr/bin/env bash
# cmake --install puts the binary where it finds its folders (issue 54): installed under a temporary prefix
# and run from elsewhere, kqual lists the project's declared contracts; the same binary copied alone says
# it found none.
set -euo pipefail
build="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
cd "$tmp"
declared=$(env -u KQUAL_HOME "$tmp/prefix/bin/kqual" contracts 2> "$tmp/err" | grep -c " declared " || true)
[ "$declared" -ge 10 ] || { echo "installed kqual lists $declared declared contracts"; cat "$tmp/err"; exit 1; }
[ -f "$tmp/prefix/bin/libkqual_record.so" ] || { echo "no recorder beside the installed binary"; exit 1; }
[ -f "$tmp/prefix/share/kqual/tools/torch/submission_worker.py" ] || { echo "no PyTorch worker installed"; exit 1; }
cp "$tmp/prefix/bin/kqual" "$tmp/alone"
env -u KQUAL_HOME "$tmp/alone" contracts > "$tmp/out" 2> "$tmp/err"
grep -q "no contracts/ folder found" "$tmp/err" || { echo "a lone binary did not say it found no contracts"; cat "$tmp/err"; exit 1; }
echo "installed: $declared declared contracts found; a lone binary says it found none"
