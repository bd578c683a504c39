# Interleaved A/B of builds: python3 ab_throughput.py ROUNDS "k=v ..." BUILD...
# The builds' order turns round by round (reversed every other round): run
# in one fixed order, two builds' ratio was 0.88-0.90 one way round and 0.95
# the other on the 2-core VM (2026-11-29-fabric-wakes); turning the order
# puts whatever the position costs on both builds alike.
import sys, json, subprocess, statistics
from pathlib import Path
R = int(sys.argv[1]); sets = sys.argv[2].split(); builds = sys.argv[3:]
res = {b: [] for b in builds}
for r in range(R):
    for b in (builds if r % 2 == 0 else builds[::-1]):
        cmd = [b + "/deploy/sluice-deploy", "run", str(Path(__file__).resolve().parents[3] / "deploy/examples/pipeline.yaml"), "--json", "--run-dir", "/tmp/abt",
               "--set", "duration_s=4", "--set", "progress_s=0", "--set", "base_port=26500"]
        for s in sets: cmd += ["--set", s]
        p = subprocess.run(["flock", "/tmp/cpu.lock"] + cmd, capture_output=True, text=True)
        j = json.loads(p.stdout); assert j["ok"], j.get("error")
        res[b].append((j["tuples_per_s"], j["cpe_p_nodes"]))
base = statistics.median(x[0] for x in res[builds[0]])
for b, v in res.items():
    m = statistics.median(x[0] for x in v); c = statistics.median(x[1] for x in v)
    print(f"{b:20s} {m/1e6:7.2f} M tuples/s ({m/base:.3f})  node cpe_p {c:8.0f}  " + " ".join(f"{x[0]/1e6:.1f}" for x in v), flush=True)
