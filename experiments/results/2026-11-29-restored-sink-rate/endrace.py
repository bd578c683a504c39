#!/usr/bin/env python3
"""A death after END went past a node and before its acknowledgement came
back: the run (100 events/s, 2 s, acks, restart: on-failure) has the sink
SIGSTOPped 0.8 s before the load generators end (END goes on into the
sink's window, unacknowledged), VICTIM SIGKILLed 1 s after the end (a load
generator waits then for END's acknowledgement), and the sink continued
1.5 s later. Nothing may hang, be lost or come twice.
  python3 endrace.py --victim gen-1 --example deploy/examples/union.yaml [--port P] [--set K=V]"""
import argparse, json, os, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from procs import pids_of
ap = argparse.ArgumentParser()
ap.add_argument("--victim", default="loadgen")
ap.add_argument("--example", default="deploy/examples/pipeline.yaml")
ap.add_argument("--port", type=int, default=18000)
ap.add_argument("--build", default="build")
ap.add_argument("--set", action="append", default=[], help="KEY=VALUE for the deployment (a carrier)")
a = ap.parse_args()
dur = 2.0
run_dir = tempfile.mkdtemp(prefix="endrace-")
cmd = [f"{a.build}/deploy/sluice-deploy", "run", a.example, "--json", "--run-dir", f"{run_dir}/run",
       "--timeout", "40", "--set", f"duration_s={dur}", "--set", f"base_port={a.port}", "--set", "acks=on",
       "--set", "restart=on-failure", "--set", "restart_backoff_ms=100", "--set", "progress_s=0",
       "--set", "rate=100"]
for kv in a.set: cmd += ["--set", kv]
t0 = time.time()
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
def at(t): time.sleep(max(0, t0 + t - time.time()))
at(dur - 0.8 + 0.3)  # the processes take about 0.3 s to start
sinks = pids_of(f"{run_dir}/run", "sink")
for v in sinks: os.kill(v, signal.SIGSTOP)
at(dur + 1.0)
victims = pids_of(f"{run_dir}/run", a.victim)
for v in victims: os.kill(v, signal.SIGKILL)
at(dur + 2.5)
for v in sinks: os.kill(v, signal.SIGCONT)
j = json.loads(p.communicate()[0])
print(f"{a.example} {' '.join(a.set)} {a.victim} killed={bool(victims)}: ok={j['ok']} tuples={j['tuples']} lost={j['lost']} "
      f"duplicated={j['duplicated']} replayed={j['replayed']} restarts={j['restarts']} "
      f"took {time.time() - t0:.1f} s {j['error'][:200]}"
      + "".join(f" [{q['name']}: {q['settled']}]" for q in j["processes"] if q.get("settled")), flush=True)
