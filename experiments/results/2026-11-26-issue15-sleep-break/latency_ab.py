import sys, statistics
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-26-issue17-timers"))
import var
R = int(sys.argv[1]); sets = sys.argv[2]; builds = sys.argv[3:]
res = {b: [] for b in builds}
for r in range(R):
    for b in builds:
        var.DEP = b + "/deploy/sluice-deploy"; res[b].append(var.sluice(sets))
for b, v in res.items():
    print(f"{b:18s} p50 {statistics.median(x[0] for x in v):6.1f} p99 {statistics.median(x[1] for x in v):6.1f}  " + " ".join(f"{a:.0f}/{c:.0f}" for a, c in v), flush=True)
