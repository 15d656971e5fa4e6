#!/usr/bin/env bash
# `kqual report --html` pages in a real browser: headless Chromium renders each fixture document
# (tests/report/fixtures.hpp) to a PNG, which must not be blank (png_check.py), and dumps its DOM,
# which must hold the SVG charts the results call for and nothing the document's text smuggled in
# (dom_check.py). Exit 77 (CTest: Skipped) when Chromium or python3 is missing; never a silent pass.
#   browser_check.sh KQUAL KQUAL_REPORT_FIXTURES
set -euo pipefail
kqual=$1
writer=$2
here=$(cd "$(dirname "$0")" && pwd)

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
if [ -z "$browser" ]; then
  echo "SKIPPED: no headless Chromium on PATH (apt-get install chromium; scripts/setup installs it)"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIPPED: python3 is needed for the PNG and DOM checks"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kqual-browser-check-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$writer" "$work"

# The PNG check has teeth: an all-white image is refused.
python3 "$here/png_check.py" --make-blank "$work/blank.png" 320 200
if python3 "$here/png_check.py" "$work/blank.png" >/dev/null; then
  echo "FAIL: png_check.py accepted a blank image"
  exit 1
fi

# --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start.
chrome() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-extensions --hide-scrollbars --user-data-dir="$work/profile" "$@" 2>>"$work/chromium.log"
}

fail=0
for doc in qualify compare qualify-rejected qualify-nogpu compare-nogpu qualify-hostile; do
  echo "== $doc"
  "$kqual" --quiet report "$work/$doc.json" --html "$work/$doc.html"
  # One launch renders the page to a PNG and prints its DOM.
  chrome --window-size=1000,1800 --screenshot="$work/$doc.png" --dump-dom "file://$work/$doc.html" >"$work/$doc.dom.html"
  if [ ! -s "$work/$doc.png" ]; then
    echo "FAIL: Chromium wrote no screenshot for $doc; its log ends:"
    tail -5 "$work/chromium.log"
    fail=1
    continue
  fi
  python3 "$here/png_check.py" "$work/$doc.png" || fail=1
  python3 "$here/dom_check.py" "$work/$doc.json" "$work/$doc.dom.html" || fail=1
done
# What a script in the hostile document would have done, had it run.
if grep -q "<title>pwned</title>" "$work/qualify-hostile.dom.html"; then
  echo "FAIL: a script from the results document ran"
  fail=1
fi
if [ -n "${KQUAL_KEEP_REPORT_PAGES:-}" ]; then
  mkdir -p "$KQUAL_KEEP_REPORT_PAGES"
  cp "$work"/*.html "$work"/*.png "$KQUAL_KEEP_REPORT_PAGES"/
  echo "pages and screenshots kept in $KQUAL_KEEP_REPORT_PAGES"
fi
exit $fail
