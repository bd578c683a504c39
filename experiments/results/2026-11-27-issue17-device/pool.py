"""Each round's sluice/plain ratio of p50 and p99 (the two ran in the same
round, one after the other), pooled over the runs given; the median and
range per system and rate.

  python3 experiments/results/2026-11-27-issue17-device/pool.py DIR/runs.csv ...
"""
import csv
import statistics
import sys

cells = {}
for path in sys.argv[1:]:
    by = {}
    for r in csv.DictReader(open(path)):
        if r["kind"] != "latency" or r["ok"] != "true":
            continue
        by.setdefault((r["rate"], r["round"]), {})[r["system"]] = (float(r["p50_us"]), float(r["p99_us"]))
    for (rate, _), v in by.items():
        if "plain" not in v:
            continue
        for s, (p50, p99) in v.items():
            if s != "plain":
                c = cells.setdefault((int(float(rate)), s), ([], []))
                c[0].append(p50 / v["plain"][0])
                c[1].append(p99 / v["plain"][1])
print("| rate | system | rounds | p50 x plain, median (range) | p99 x plain, median (range) |")
print("|---|---|---|---|---|")
for (rate, s), (a, b) in sorted(cells.items()):
    print(f"| {rate:,} | {s} | {len(a)} | {statistics.median(a):.3f} ({min(a):.2f}-{max(a):.2f}) | "
          f"{statistics.median(b):.3f} ({min(b):.2f}-{max(b):.2f}) |")
