#!/usr/bin/env python3
"""Does the DOM Chromium built from a report page hold the charts the results call for?

  dom_check.py RESULTS.json DOM.html

DOM.html is `chromium --headless --dump-dom` of the page. Expected counts come from the results
document itself (not from the renderer): one bar and one interval line per (shape, baseline) in the
speed-up chart of a qualify document, per shape (NEW against OLD) in a compare document, one bar per
cache mode with a first-request delta in the startup chart, one bar per timed implementation and
shape in the roofline chart. No element may come from text in the document: no <script>, <img>,
<iframe> anywhere.
"""
import json
import sys
from html.parser import HTMLParser


class Counter(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg_ids = []
        self.current_svg = None
        self.count = {}  # (svg id, element, first class) -> n
        self.tags = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "svg":
            self.current_svg = a.get("id", "")
            self.svg_ids.append(self.current_svg)
        elif self.current_svg is not None and tag in ("rect", "line"):
            cls = (a.get("class") or "").split()
            key = (self.current_svg, tag, cls[0] if cls else "")
            self.count[key] = self.count.get(key, 0) + 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "svg":
            self.current_svg = None


REFS = {}  # chart id -> reference lines expected, where not one


def expected(doc):
    schema = doc.get("schema", "")
    charts = {}
    if schema.startswith("kqual.compare/"):
        warm = doc.get("warm") or {}
        n = sum(1 for s in warm.get("shapes", []) if s.get("comparison"))
        if n:
            charts["speedup-chart"] = (n, n)
        st = doc.get("startup") or {}
        n = sum(1 for m in st.get("modes", []) if m.get("first_request_delta_ms"))
        if n:
            charts["startup-chart"] = (n, n)
        # The service view: first-request and all-request latency curves per profile (no bars).
        for i, d in enumerate(doc.get("decisions") or []):
            if (d.get("service") or {}).get("computed"):
                for pop in ("first_request", "all"):
                    charts[f"service-{i}-{pop}"] = (0, 0)
                    # One dashed line per objective on that population instead of one reference line.
                    REFS[f"service-{i}-{pop}"] = sum(
                        1 for o in d["service"].get("objectives", []) if (o.get("old") or {}).get("population") == pop)
    else:
        shapes = (doc.get("timing") or {}).get("shapes", [])
        n = sum(len(s.get("candidate_vs_baselines") or []) for s in shapes)
        if n:
            charts["speedup-chart"] = (n, n)
        if any(s.get("device_copy") for s in shapes):
            n = sum(1 for s in shapes for x in s.get("series", []) if x.get("summary_ms") and x.get("bytes_per_s", 0) > 0)
            if n:
                charts["roofline-chart"] = (n, 0)
    return charts


def main(argv):
    with open(argv[1]) as f:
        doc = json.load(f)
    with open(argv[2], encoding="utf-8") as f:
        dom = f.read()
    c = Counter()
    c.feed(dom)
    want = expected(doc)
    ok = True

    def check(cond, msg):
        nonlocal ok
        print(("ok   " if cond else "FAIL ") + msg)
        ok = ok and cond

    check(sorted(c.svg_ids) == sorted(want), f"<svg> charts {sorted(c.svg_ids)}, expected {sorted(want)}")
    for chart, (bars, cis) in want.items():
        got_bars = c.count.get((chart, "rect", "bar"), 0)
        got_cis = c.count.get((chart, "line", "ci"), 0)
        check(got_bars == bars, f"{chart}: {got_bars} <rect class=bar>, expected {bars}")
        check(got_cis == cis, f"{chart}: {got_cis} <line class=ci>, expected {cis}")
        refs = REFS.get(chart, 1)
        check(c.count.get((chart, "line", "ref"), 0) == refs, f"{chart}: {refs} reference <line class=ref>")
    for tag in ("script", "img", "iframe", "object", "embed"):
        check(c.tags.get(tag, 0) == 0, f"no <{tag}> in the DOM (found {c.tags.get(tag, 0)})")
    check(c.tags.get("section", 0) >= 6, f"{c.tags.get('section', 0)} <section>s (verdict, speed-up, startup, roofline, "
                                         "correctness, phases, provenance)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
