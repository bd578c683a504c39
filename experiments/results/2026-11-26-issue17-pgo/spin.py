import sys, subprocess, statistics, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-26-issue17-timers"))
import var
res = {k: [] for k in ("plain", "plain+spin", "sluice", "sluice+spin")}
for r in range(3):
    for k in res:
        spin = []
        if k.endswith("+spin"):
            spin = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"]) for _ in range(2)]
            time.sleep(0.2)
        try:
            res[k].append(var.plain() if k.startswith("plain") else var.sluice("threads=adaptive"))
        finally:
            for p in spin: p.kill()
for k, v in res.items():
    print(f"{k:12s} p50 {statistics.median(x[0] for x in v):6.1f} p99 {statistics.median(x[1] for x in v):6.1f}  " + " ".join(f"{a:.0f}/{b:.0f}" for a, b in v), flush=True)
