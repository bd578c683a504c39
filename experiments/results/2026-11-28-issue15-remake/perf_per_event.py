#!/usr/bin/env python3
"""Where one process's CPU goes per event, variant by variant: runs the demo
pipeline (128 B tuples in 32 KiB events, full rate) once per variant, samples
PROCESS (loadgen, node = node-a, sink) with `perf record -e cpu-clock` for 3 s
of it, and prints microseconds per event of the symbols that differ most.

  python3 perf_per_event.py [--build build] [--proc loadgen] [--rounds 1] \
      "acks=off" "acks=on" "acks=on loadgen_backup=slots"

Run from the repository root; needs perf (software clock only: no hardware
counters on a VM). Events are the sink's tuples over 255 a event, for the
3 s sampled (the run's mean rate).
"""
import argparse, os, re, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--proc", default="loadgen")
ap.add_argument("--rounds", type=int, default=1)
ap.add_argument("--top", type=int, default=12)
ap.add_argument("variants", nargs="+")
a = ap.parse_args()

tmp = tempfile.mkdtemp(prefix="perf_per_event.")
per = {v: {} for v in a.variants}   # variant -> symbol -> us/event (summed over rounds)
tot = {v: 0.0 for v in a.variants}
for r in range(a.rounds):
    for i, v in enumerate(a.variants if r % 2 == 0 else a.variants[::-1]):
        cmd = [f"{a.build}/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--set", "duration_s=8",
               "--set", "tuple_bytes=128", "--set", "event_bytes=32768", "--set", "base_port=31400",
               "--set", "progress_s=0"]
        for kv in v.split():
            cmd += ["--set", kv]
        run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(3)
        pid = subprocess.run(["pgrep", "-f", f"sluice-{a.proc}"], capture_output=True, text=True).stdout.split()
        if not pid:
            sys.exit(f"no sluice-{a.proc} running for {v!r}")
        data = os.path.join(tmp, f"{r}.{i}.data")
        subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "2000", "-p", pid[0], "-o", data,
                        "--", "sleep", "3"], capture_output=True)
        out, _ = run.communicate()
        m = re.search(r"pipeline: \d+ tuples, (\d+) tuples/s", out)
        if not m:
            sys.exit(f"run {v!r} gave no summary: {out[-400:]}")
        events = float(m.group(1)) / 255 * 3
        rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym", "--stdio", "-n"],
                             capture_output=True, text=True).stdout
        for line in rep.splitlines():
            mm = re.match(r"\s+[\d.]+%\s+(\d+)\s+(.*)", line)
            if mm:
                us = int(mm.group(1)) * 500 / events  # a sample is 500 us at 2 kHz
                per[v][mm.group(2).strip()] = per[v].get(mm.group(2).strip(), 0) + us / a.rounds
                tot[v] += us / a.rounds
        print(f"round {r + 1} [{v}]: {float(m.group(1)) / 1e6:.2f} M tuples/s", flush=True)

base = a.variants[0]
syms = set().union(*[set(d) for d in per.values()])
spread = lambda s: max(per[v].get(s, 0) for v in a.variants) - min(per[v].get(s, 0) for v in a.variants)
print(f"\nus per event of sluice-{a.proc}, by symbol (columns: {' | '.join(a.variants)})")
print("total: " + " | ".join(f"{tot[v]:.2f}" for v in a.variants))
for s in sorted(syms, key=lambda s: -spread(s))[:a.top]:
    print(" | ".join(f"{per[v].get(s, 0):6.3f}" for v in a.variants) + f"  {s[:70]}")
