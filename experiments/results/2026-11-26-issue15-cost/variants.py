import json, subprocess, statistics, sys
cfgs = {k: v.split() if v else [] for k, v in [a.split(':',1) for a in sys.argv[2:]]}
reps = int(sys.argv[1])
res = {k: [] for k in cfgs}
for i in range(reps):
    for k, sets in cfgs.items():
        cmd = ["./build/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--json", "--set", "duration_s=4",
               "--set", "base_port=31200", "--set", "progress_s=0", "--set", "event_bytes=32768", "--set", "tuple_bytes=128"]
        for s in sets: cmd += ["--set", s]
        j = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)
        res[k].append(j["tuples_per_s"])
        print(i, k, f"{j['tuples_per_s']:,.0f}", flush=True)
base = statistics.median(res[list(cfgs)[0]])
for k in cfgs:
    m = statistics.median(res[k]); print(f"{k}: median {m:,.0f} ratio {m/base:.3f}")
