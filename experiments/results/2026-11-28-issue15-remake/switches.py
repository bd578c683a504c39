#!/usr/bin/env python3
"""Context switches per event, by process and thread, acks off against on:
runs the demo pipeline (128 B tuples in 32 KiB events, full rate) per
variant, reads each thread's voluntary_ctxt_switches from /proc 3 s into
the run and again 3 s later, and divides by the events of those 3 s.

  python3 switches.py [--build build] "acks=off" "acks=on"
"""
import argparse, glob, re, subprocess, sys, time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("variants", nargs="+")
a = ap.parse_args()


def sample():
    out = {}
    for proc in ("loadgen", "node", "sink"):
        for pid in subprocess.run(["pgrep", "-f", f"sluice-{proc}"], capture_output=True, text=True).stdout.split():
            for st in glob.glob(f"/proc/{pid}/task/*/status"):
                try:
                    txt = open(st).read()
                except OSError:
                    continue
                name = re.search(r"Name:\s+(\S+)", txt).group(1)
                n = int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", txt).group(1))
                out[(proc, pid, st.split("/")[4], name)] = n
    return out


for v in a.variants:
    cmd = [f"{a.build}/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--set", "duration_s=8",
           "--set", "tuple_bytes=128", "--set", "event_bytes=32768", "--set", "base_port=31400",
           "--set", "progress_s=0"] + [x for kv in v.split() for x in ("--set", kv)]
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(3)
    s0 = sample()
    time.sleep(3)
    s1 = sample()
    out, _ = run.communicate()
    m = re.search(r"pipeline: \d+ tuples, (\d+) tuples/s", out)
    if not m:
        sys.exit(f"{v!r}: no summary: {out[-300:]}")
    events = float(m.group(1)) / 255 * 3
    print(f"[{v}] {float(m.group(1)) / 1e6:.2f} M tuples/s; voluntary switches per event:")
    by = {}
    for k in s1:
        if k in s0:
            proc, pid, _, name = k
            by.setdefault((proc, pid), []).append((name, (s1[k] - s0[k]) / events))
    for (proc, pid), ts in sorted(by.items(), key=lambda kv: (["loadgen", "node", "sink"].index(kv[0][0]), int(kv[0][1]))):
        busy = [(n, x) for n, x in ts if x >= 0.005]
        print(f"  {proc} {pid}: total {sum(x for _, x in ts):.2f}  " + ", ".join(f"{n} {x:.2f}" for n, x in busy))
