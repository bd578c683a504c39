#!/usr/bin/env python3
"""Throughput A/B, alternated per round, 128 B tuples in 32 KiB events (the demo pipeline).
  python3 ab_env.py ROUNDS VARIANT...   (from the repository root)
A variant is "k=v ..." keys for --set; a token whose key is upper case (NAME=1) goes to the environment.
EXAMPLE=FILE (in the script's own environment) runs that deployment file instead of the demo pipeline.
BUILD=DIR in a variant runs that build's sluice-deploy (default: build), so two builds alternate in one run."""
import sys, json, subprocess, statistics, os
R = int(sys.argv[1]); variants = sys.argv[2:]
res = {v: [] for v in variants}
for r in range(R):
    order = variants[r % len(variants):] + variants[:r % len(variants)]
    for v in order:
        env = dict(os.environ); sets = []; build = "build"
        for t in v.split():
            k = t.split("=")[0]
            if k == "BUILD": build = t.split("=",1)[1]
            elif k.isupper(): env[k] = t.split("=",1)[1]
            else: sets.append(t)
        cmd = [f"{build}/deploy/sluice-deploy", "run", os.environ.get("EXAMPLE", "deploy/examples/pipeline.yaml"), "--json", "--run-dir", "/tmp/abtp",
               "--set", "duration_s=3", "--set", "progress_s=0", "--set", "base_port=26700",
               "--set", "event_bytes=32768", "--set", "tuple_bytes=128"]
        for s in sets: cmd += ["--set", s]
        p = subprocess.run(["flock", "/tmp/cpu.lock"] + cmd, capture_output=True, text=True, env=env)
        j = json.loads(p.stdout); assert j["ok"], j.get("error")
        res[v].append((j["tuples_per_s"], j["cpe_p_nodes"], j["cpe_p_endpoints"]))
base = statistics.median(a[0] for a in res[variants[0]])
for v in variants:
    x = res[v]; m = statistics.median(a[0] for a in x)
    print(f"{v:40s} {m/1e6:6.2f} M/s ({m/base:.3f})  node cpe_p {statistics.median(a[1] for a in x):7.0f}  ends {statistics.median(a[2] for a in x):7.0f}   " + " ".join(f"{a[0]/1e6:.1f}" for a in x), flush=True)
