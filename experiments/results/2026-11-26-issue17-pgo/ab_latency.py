import sys, statistics
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-26-issue17-timers"))
import var
R = int(sys.argv[1]); builds = sys.argv[2:]
res = {"plain": []}
for b in builds: res[b] = []
for r in range(R):
    res["plain"].append(var.plain())
    for b in builds:
        var.DEP = b + "/deploy/sluice-deploy"
        res[b].append(var.sluice("threads=adaptive"))
base = statistics.median(x[0] for x in res["plain"]); b99 = statistics.median(x[1] for x in res["plain"])
for l, v in res.items():
    m50 = statistics.median(x[0] for x in v); m99 = statistics.median(x[1] for x in v)
    print(f"{l:18s} p50 {m50:6.1f} ({m50/base:.2f}) p99 {m99:6.1f} ({m99/b99:.2f})  " + " ".join(f"{a:.0f}/{b:.0f}" for a, b in v), flush=True)
