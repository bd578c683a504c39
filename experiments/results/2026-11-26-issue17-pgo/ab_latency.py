# ab_latency.py ROUNDS BUILD...: the plain relays, then each build's demo pipeline
# (threads: adaptive) at 2,000 one-tuple events/s, alternated round by round;
# sink p50/p99 medians, as ratios to the relays'.
import sys, statistics
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-26-issue17-timers"))
import var


def alternate(rounds, builds, sets="threads=adaptive", with_plain=True):
    res = ({"plain": []} if with_plain else {}) | {b: [] for b in builds}
    for _ in range(rounds):
        if with_plain:
            res["plain"].append(var.plain())
        for b in builds:
            var.DEP = b + "/deploy/sluice-deploy"
            res[b].append(var.sluice(sets))
    first = next(iter(res.values()))
    base = statistics.median(x[0] for x in first); b99 = statistics.median(x[1] for x in first)
    for l, v in res.items():
        m50 = statistics.median(x[0] for x in v); m99 = statistics.median(x[1] for x in v)
        print(f"{l:18s} p50 {m50:6.1f} ({m50/base:.2f}) p99 {m99:6.1f} ({m99/b99:.2f})  "
              + " ".join(f"{a:.0f}/{b:.0f}" for a, b in v), flush=True)


if __name__ == "__main__":
    alternate(int(sys.argv[1]), sys.argv[2:])
