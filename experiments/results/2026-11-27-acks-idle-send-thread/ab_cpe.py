#!/usr/bin/env python3
# abcpe.py ROUNDS "SETS" OLD NEW : alternate builds, print per-process CPE_p and latency medians
import json, subprocess, sys, statistics
rounds, sets, builds = int(sys.argv[1]), sys.argv[2].split(), sys.argv[3:]
res = {b: [] for b in builds}
for r in range(rounds):
    for b in (builds if r % 2 == 0 else builds[::-1]):
        args = [f"{b}/deploy/sluice-deploy", "run", "/work/main/deploy/examples/pipeline.yaml", "--json", "--set", "duration_s=4", "--set", "progress_s=0"]
        for kv in sets: args += ["--set", kv]
        j = json.loads(subprocess.run(args, capture_output=True, text=True).stdout)
        row = [p["cpe_p"] for p in j["processes"]] + [j["latency_us"]["p50"], j["latency_us"]["p99"], j["tuples_per_s"] / 1e6]
        res[b].append(row)
        print(b, " ".join(f"{x:.0f}" if x > 100 else f"{x:.2f}" for x in row), "lost", j["lost"], flush=True)
print("median: loadgen node-a node-b sink CPE_p, p50 us, p99 us, M tuples/s")
for b in builds:
    m = [statistics.median(c) for c in zip(*res[b])]
    print(b, " ".join(f"{x:.0f}" if x > 100 else f"{x:.2f}" for x in m))
