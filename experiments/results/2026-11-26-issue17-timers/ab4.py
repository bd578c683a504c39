# ab4.py N "A" "B" ...: each arg "[@build] sets"; one-tuple events, preset original, operators off
import json, subprocess, statistics, sys
from pathlib import Path
REPO = str(Path(__file__).resolve().parents[3])
def run(spec):
    build = REPO + "/build"; sets = spec
    if spec.startswith("@"):
        build, _, sets = spec[1:].partition(" ")
    cmd = [f"{build}/deploy/sluice-deploy", "run", f"{build}/../deploy/examples/pipeline.yaml", "--json",
           "--set", "duration_s=3", "--set", "base_port=31400", "--set", "progress_s=0",
           "--set", "tuple_bytes=128", "--set", "event_bytes=0", "--set", "processes.1.operators=[]",
           "--set", "processes.2.operators=[]"] + sum([["--set", s] for s in sets.split()], [])
    p = subprocess.run(["flock", "/tmp/cpu.lock"] + cmd, capture_output=True, text=True)
    j = json.loads(p.stdout)
    assert j["ok"], j.get("error")
    return j["tuples_per_s"] / 1e6
n = int(sys.argv[1]); specs = sys.argv[2:]
res = {s: [] for s in specs}
for _ in range(n):
    for s in specs: res[s].append(run(s))
base = statistics.median(res[specs[0]])
for s in specs:
    m = statistics.median(res[s])
    print(f"{m:.3f} Mt/s  x{m/base:.3f}  [{' '.join(f'{x:.3f}' for x in res[s])}]  {s}")
