#!/usr/bin/env python3
"""Kill a process at the very end of a run (acks: on, restart: on-failure):
when TRIGGER (a process name) exits, wait DELAY ms, SIGKILL VICTIM.
  python3 endkill.py --victim node-a --trigger loadgen --delays 0,2,5,10,20 [--set k=v]"""
import argparse, json, os, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from procs import pids_of
ap = argparse.ArgumentParser()
ap.add_argument("--victim", default="node-a")
ap.add_argument("--trigger", default="loadgen")
ap.add_argument("--delays", default="0,2,5,10,20")
ap.add_argument("--set", action="append", default=[])
ap.add_argument("--port", type=int, default=12000)
ap.add_argument("--build", default="build")
a = ap.parse_args()
port = a.port
for d in [float(x) for x in a.delays.split(",")]:
    run_dir = tempfile.mkdtemp(prefix="endkill-")
    cmd = [f"{a.build}/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--json",
           "--run-dir", f"{run_dir}/run", "--timeout", "60", "--set", "duration_s=1.5", "--set", f"base_port={port}",
           "--set", "acks=on", "--set", "restart=on-failure", "--set", "restart_backoff_ms=100", "--set", "progress_s=0"]
    for s in a.set: cmd += ["--set", s]
    port += 100
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    trig = []
    while not trig and p.poll() is None:
        trig = pids_of(f"{run_dir}/run", a.trigger)
        time.sleep(0.005)
    victims = []
    while not victims and p.poll() is None:
        victims = pids_of(f"{run_dir}/run", a.victim); time.sleep(0.005)
    # wait for the trigger to exit
    def running(t):
        try: return open(f"/proc/{t}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError: return False
    while p.poll() is None and any(running(t) for t in trig):
        time.sleep(0.0005)
    t_exit = time.time()
    time.sleep(d / 1e3)
    killed = False
    for v in victims:
        try: os.kill(v, signal.SIGKILL); killed = True
        except ProcessLookupError: pass
    out, _ = p.communicate()
    j = json.loads(out)
    print(f"delay {d:5.1f} ms killed={killed} ok={j['ok']} tuples={j['tuples']} lost={j['lost']} dup={j['duplicated']} "
          f"replayed={j['replayed']} restarts={j['restarts']} {'' if j['ok'] else j['error'][:300]}"
          + "".join(f" [{q['name']}: {q['settled']}]" for q in j["processes"] if q.get("settled")) + f"  dir={run_dir}", flush=True)
