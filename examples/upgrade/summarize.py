#!/usr/bin/env python3
"""One pair's section of the upgrade example's summary, from kqual compare's results.json."""
import json
import sys


def fmt_ci(c, unit="", sign="+"):
    if not c:
        return "—"
    lo, hi = c["ci"]
    f = "{:" + sign + ".3f}"
    return f"{f.format(c['estimate'])} [{f.format(lo)}, {f.format(hi)}]{unit} ({c['verdict']})"


def main():
    name, path, rc, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    print(f"\n## {name}\n")
    try:
        r = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"No results ({e}); kqual exit {rc}.")
        return
    s = r["sides"]
    print(f"kqual exit {rc}, {secs:.1f} s. OLD `{s['old']['input'].split('/')[-1]}` loads by {s['old']['loading_path']}; "
          f"NEW `{s['new']['input'].split('/')[-1]}` loads by {s['new']['loading_path']}.")
    for side in ("old", "new"):
        if s[side].get("module"):
            print(f"- {side}: {s[side]['module']}")
    v = r["verdict"]
    print(f"\n**Gate verdict: {v['decision'].replace('_', ' ')}** — {v['summary']}\n")
    if r.get("correctness_relation"):
        print(f"Correctness: {r['correctness_relation']['explanation']}\n")
    st = r.get("startup", {})
    if st.get("modes"):
        print("| JIT cache | first request old / new [ms] | first-request delta [ms] (95 % CI) | detectable [ms] |")
        print("|---|---|---|---|")
        for m in st["modes"]:
            med = lambda side: (m[side].get("first_request_summary_ms") or {}).get("median")
            o, n = med("old"), med("new")
            res = m.get("resolution") or {}
            det = res.get("detectable_difference_ms")
            print(f"| {m['cache']} | {o if o is None else round(o, 1)} / {n if n is None else round(n, 1)} | "
                  f"{fmt_ci(m.get('first_request_delta_ms'))} | {'—' if det is None else f'±{det:.2f}'} |")
        print()
    w = r.get("warm", {})
    for sh in w.get("shapes", []):
        if sh.get("decision_shape"):
            print(f"Warm at {sh['shape']} (new/old ratio of per-process medians): {fmt_ci(sh.get('comparison'), sign='')}\n")
    for d in r.get("decisions", []):
        dd = d["decision"]
        be = dd.get("breakeven_calls")
        rev = dd.get("would_reverse") or []
        be = "never (no warm saving)" if be is None else f"{be:.4g} calls/process"
        print(f"- **{d['profile']['name']}**: {dd['verdict']} — break-even {be}; "
              f"would reverse: {rev[0] if rev else '—'}")
    if not r.get("decisions"):
        print("- no decision: " + "; ".join(r.get("not_run", [])))


main()
