#!/usr/bin/env python3
"""CPU of each process while the sink is SIGSTOPped (a stalled downstream):
the demo pipeline at 100 events/s, the sink stopped 1.5 s in for 3 s (the
first 0.5 s of it let the backpressure reach the load generator).
  python3 stall.py [--set K=V ...] [--port P] [--build DIR] [--stop-s S]"""
import argparse, os, signal, subprocess, sys, tempfile, time, json
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
from procs import cpu_s, pids_of
ap = argparse.ArgumentParser()
ap.add_argument("--set", action="append", default=[])
ap.add_argument("--port", type=int, default=19500)
ap.add_argument("--stop-s", type=float, default=3.0)
ap.add_argument("--victim", default="sink")
ap.add_argument("--build", default=None)
a = ap.parse_args()
run_dir = tempfile.mkdtemp(prefix="stall-")
build = os.path.abspath(a.build) if a.build else os.path.join(ROOT, "build")
cmd = [f"{build}/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--json", "--run-dir", f"{run_dir}/run",
       "--timeout", "40", "--set", "duration_s=6", "--set", f"base_port={a.port}", "--set", "progress_s=0", "--set", "rate=100"]
for kv in a.set: cmd += ["--set", kv]
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
time.sleep(1.5)
names = ["loadgen", "node-a", "node-b", "sink"]
pids = {n: pids_of(f"{run_dir}/run", n) for n in names}
for v in pids[a.victim]: os.kill(v, signal.SIGSTOP)
time.sleep(0.5)  # let the backpressure reach the loadgen
c0 = {n: cpu_s(pids[n]) for n in names}
time.sleep(a.stop_s)
c1 = {n: cpu_s(pids[n]) for n in names}
for v in pids[a.victim]: os.kill(v, signal.SIGCONT)
j = json.loads(p.communicate()[0])
print(os.path.basename(build.rstrip("/")), " ".join(a.set) or "tcp", "| % of a core while", a.victim, "stopped:",
      " ".join(f"{n} {100*(c1[n]-c0[n])/a.stop_s:.1f}" for n in names), f"| ok={j['ok']} lost={j['lost']}", flush=True)
