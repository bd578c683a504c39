#!/usr/bin/env python3
"""A paced run (2,000 events/s of 255 tuples, acks, the sink's snapshots every
50 ms, restart: on-failure) without a fault and with the sink SIGKILLed after
KILL_AT seconds: the report's tuples/s should be the same, the paced rate.
  python3 sinkkill.py [--port P] [--kill-at 1.5] [--build build]"""
import argparse, json, os, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from procs import pids_of
ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, default=17000)
ap.add_argument("--kill-at", type=float, default=1.5)
ap.add_argument("--build", default="build")
a = ap.parse_args()
port = a.port
for kill_at in [None, a.kill_at]:
    run_dir = tempfile.mkdtemp(prefix="sinkkill-")
    cmd = [f"{a.build}/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--json",
           "--run-dir", f"{run_dir}/run", "--timeout", "60", "--set", "duration_s=3", "--set", f"base_port={port}",
           "--set", "acks=on", "--set", "checkpoint_interval_ms=50", "--set", "restart=on-failure",
           "--set", "restart_backoff_ms=100", "--set", "progress_s=0", "--set", "rate=2000"]
    port += 100
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if kill_at:
        time.sleep(kill_at)
        for v in pids_of(f"{run_dir}/run", "sink"):
            os.kill(v, signal.SIGKILL)
    j = json.loads(p.communicate()[0])
    print(f"sink killed at {kill_at or '-'} s: ok={j['ok']} tuples={j['tuples']} "
          f"tuples/s={j['tuples_per_s']:.0f} ({j['tuples_per_s'] / (2000 * 255):.3f} of the paced rate) "
          f"lost={j['lost']} duplicated={j['duplicated']} restarts={j['restarts']}", flush=True)
