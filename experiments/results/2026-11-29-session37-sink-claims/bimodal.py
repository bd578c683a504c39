#!/usr/bin/env python3
"""Why single full-rate runs on the 2-core VM come out at ~20 or ~11 M tuples/s.
  python3 bimodal.py RUNS [k=v ...]     (from the repository root)
Runs the demo pipeline (128 B tuples in 32 KiB events, 3 s) RUNS times and
prints per run: tuples/s, the CPU the four processes used (of 2 cores),
each process's CPU per event (CPE_p), and each stage's share of its CPU."""
import sys, json, subprocess
R = int(sys.argv[1]); sets = sys.argv[2:]
names = ["loadgen", "node-a", "node-b", "sink"]
for r in range(R):
    cmd = ["build/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--json", "--run-dir", "/tmp/bim/run",
           "--set", "duration_s=3", "--set", "progress_s=0", "--set", "base_port=26900"]
    for s in sets: cmd += ["--set", s]
    p = subprocess.run(["flock", "/tmp/cpu.lock"] + cmd, capture_output=True, text=True)
    j = json.loads(p.stdout)
    row = [f"{j['tuples_per_s']/1e6:5.1f} M/s"]
    busy = 0.0
    per = []
    for n in names:
        q = json.load(open(f"/tmp/bim/run/{n}.json"))
        cpu = q["user_s"] + q["sys_s"]
        busy += cpu / q["wall_s"]
        st = " ".join(f"{s['name'].split('/')[0][:4]}{(s['user_s']+s['sys_s'])/q['wall_s']:.2f}" for s in q["stages"])
        per.append(f"{n} {q['cpe_p']:6.0f} ({st})")
    row.append(f"cpu {busy:.2f}")
    print("  ".join(row + per), flush=True)
