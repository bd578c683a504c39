#!/usr/bin/env python3
"""Issue 18's bars from a sweep's results.csv: python3 bars.py DIR/results.csv ...

Per tuple size: ucx-opt's and fabric-opt's Gb/s against tcp-opt's (bar: the
best at least 1.5x), the best one's node CPE_p against tcp-opt's, per node
(bar: at most 0.4x), and tcp-opt against the plain-socket baselines of the
same sweep (bar: at least 0.9). Medians over the runs that passed."""
import csv, statistics, sys

for path in sys.argv[1:]:
    rows = list(csv.DictReader(open(path)))
    base = {r["phase"]: float(r["gbps"]) for r in rows if r["kind"] == "baseline" and r["ok"] == "true"}
    print(path)
    runs = [r for r in rows if r["kind"] != "baseline" and r["ok"] == "true"]
    for tb in sorted({int(r["tuple_bytes"]) for r in runs}):
        med = lambda p, k: statistics.median(float(r[k]) for r in runs if r["preset"] == p and int(r["tuple_bytes"]) == tb)
        tcp = med("tcp-opt", "gbps")
        best = max(("ucx-opt", "fabric-opt"), key=lambda p: med(p, "gbps"))
        nodes = [med(best, f"cpe_p_{n}") / med("tcp-opt", f"cpe_p_{n}") for n in ("node-a", "node-b")]
        plain = ", ".join(f"{tcp / base[k]:.2f}" for k in ("baseline-start", "baseline-end") if k in base)
        print(f"  {tb:5d} B: {best} {med(best, 'gbps') / tcp:.2f}x tcp-opt Gb/s (bar 1.5); node CPE_p "
              f"{nodes[0]:.3f}, {nodes[1]:.3f} x tcp-opt (bar 0.4); tcp-opt / plain (start, end) {plain} (bar 0.9)")
