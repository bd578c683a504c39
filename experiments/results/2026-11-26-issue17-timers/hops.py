# hops.py ROUNDS: one-tuple events at 2,000/s: sluice 2 and 4 processes, plain 2 and 4, alternated
# (the runs themselves are var.py's)
import statistics, sys
from pathlib import Path
from var import plain, sluice
HERE = Path(__file__).resolve().parent
R = int(sys.argv[1])
cases = {"sluice-2": lambda: sluice("threads=adaptive", str(HERE / "two.yaml")), "plain-2": lambda: plain(0),
         "sluice-4": lambda: sluice("threads=adaptive"), "plain-4": lambda: plain(2)}
res = {k: [] for k in cases}
for r in range(R):
    for k, f in cases.items(): res[k].append(f())
for k, v in res.items():
    print(k, "p50", statistics.median(x[0] for x in v), "p99", statistics.median(x[1] for x in v), v)
