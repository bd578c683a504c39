# ab.py "A sets" "B sets" [repeats]: the demo pipeline alternated, medians
import json, subprocess, statistics, sys
def run(sets):
    build = "build"
    if sets.startswith("@"):
        build, _, sets = sets[1:].partition(" ")
    cmd = [f"{build}/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--json",
           "--set", "duration_s=4", "--set", "base_port=31200", "--set", "progress_s=0",
           "--set", "tuple_bytes=128", "--set", "event_bytes=32768"] + sum([["--set", s] for s in sets.split()], [])
    j = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)
    assert j["ok"], j.get("error")
    return [j["tuples_per_s"] / 1e6] + [p["cpe_p"] / 1e3 for p in j["processes"]]
A, B = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 3
ra, rb = [], []
for _ in range(n):
    ra.append(run(A)); rb.append(run(B))
ma = [statistics.median(c) for c in zip(*ra)]; mb = [statistics.median(c) for c in zip(*rb)]
print("cols: Mtuples/s, cpe_p k: loadgen node-a node-b sink")
print("A", A, " ".join(f"{x:.2f}" for x in ma), " runs:", " ".join(f"{r[0]:.2f}" for r in ra))
print("B", B, " ".join(f"{x:.2f}" for x in mb), " runs:", " ".join(f"{r[0]:.2f}" for r in rb))
print("B/A tuples/s", round(mb[0] / ma[0], 3))
