#!/usr/bin/env python3
"""Faults x carriers with acks: on and restart: on-failure: SIGKILL a node
(or the load generator) mid-run and let the supervisor start it again, SIGSTOP one for 5 s and
continue it, kill node-a then node-b three times over in one run, kill the
group-by node of deploy/examples/esper.yaml, the grace join and the
correlate node of deploy/examples/correlate.yaml with operator snapshots on
(checkpoint_interval_ms) and compare the sink's results with a run of the
same carrier without the fault, and kill the key split of
deploy/examples/split_key.yaml (two sinks). Tabulates what each run reports (tuples, lost,
duplicated, replayed, deduplicated, restarts, reconnect time from the
upstream's log, recovery time, peak RSS per process, checkpoints).

Recovery time is each restart's `recovery_s` from the report: from the
death the supervisor saw to the first tuple at the sink after the restart.
Beside it, the sink's largest tuple latency: the tuples the dead node held
were sent before the kill and reach the sink only once replayed, so it is
the time from the kill (or a little before) to the last of them arriving.

  python3 experiments/faults.py [--build build] [--duration 5] [--only esper]
                                [--out runs/faults.md]
"""
import argparse, glob, json, os, re, signal, subprocess, sys, tempfile, time

from procs import pids_of

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--duration", type=float, default=5)
ap.add_argument("--only", default="", help="run only the faults whose name contains this")
ap.add_argument("--carriers", default="", help="comma-separated subset of: tcp-opt, fabric shm, ucx sm")
ap.add_argument("--out", default="runs/faults.md")
a = ap.parse_args()

CARRIERS = {
    "tcp-opt": [],
    "fabric shm": ["transport=fabric", "fabric_provider=shm"],
    "ucx sm": ["transport=ucx", "ucx_tls=sm"],
}
if a.carriers:
    CARRIERS = {k: v for k, v in CARRIERS.items() if k in a.carriers.split(",")}
PIPELINE, ESPER = "deploy/examples/pipeline.yaml", "deploy/examples/esper.yaml"
CORRELATE, SPLIT_KEY = "deploy/examples/correlate.yaml", "deploy/examples/split_key.yaml"
# The examples whose sink writes results, compared with a run without the fault.
RESULTS = {ESPER: "esper-results.csv", CORRELATE: "correlate-results.csv"}
# name -> (example, [(seconds into the run, victim, signal)], extra sets)
three = [(2 + 1.5 * i, v, signal.SIGKILL) for i, v in enumerate(["node-a", "node-b"] * 3)]
FAULTS = {
    "SIGKILL node-a": (PIPELINE, [(2, "node-a", signal.SIGKILL)], []),
    "SIGKILL node-b": (PIPELINE, [(2, "node-b", signal.SIGKILL)], []),
    "SIGSTOP 5 s node-a": (PIPELINE, [(2, "node-a", signal.SIGSTOP)], []),
    "SIGKILL node-a, node-b, x3": (PIPELINE, three, ["restart_limit=3"]),
    "SIGKILL sink (snapshots on)": (PIPELINE, [(2, "sink", signal.SIGKILL)], ["checkpoint_interval_ms=50"]),
    # Restarted, it resumes from its position file (what was acknowledged).
    "SIGKILL loadgen": (PIPELINE, [(2, "loadgen", signal.SIGKILL)], []),
    # node-b groups by p0 over count windows; 2000 events/s makes the 2 M
    # tuples last about 4 s, so the kill lands mid-run.
    "esper: SIGKILL group-by node-b": (ESPER, [(1.5, "node-b", signal.SIGKILL)],
                                       ["checkpoint_interval_ms=50", "rate=2000"]),
    "correlate: SIGKILL grace join node-a": (CORRELATE, [(1.5, "node-a", signal.SIGKILL)],
                                             ["checkpoint_interval_ms=50", "rate=2000"]),
    "correlate: SIGKILL correlate node-b": (CORRELATE, [(1.5, "node-b", signal.SIGKILL)],
                                            ["checkpoint_interval_ms=50", "rate=2000"]),
    "split key: SIGKILL node-a": (SPLIT_KEY, [(2, "node-a", signal.SIGKILL)], ["checkpoint_interval_ms=50"]),
}
if a.only:
    FAULTS = {k: v for k, v in FAULTS.items() if a.only in k}


def run(example, schedule, sets, carrier_sets, duration, port):
    run_dir = tempfile.mkdtemp(prefix="sluice-faults-")
    last = max([t for t, _, _ in schedule], default=0)
    cmd = [f"{a.build}/deploy/sluice-deploy", "run", example, "--json",
           "--run-dir", f"{run_dir}/run", "--timeout", str(int(max(duration, last + 2) * 4 + 20)),
           "--set", f"duration_s={max(duration, last + 3)}", "--set", f"base_port={port}", "--set", "acks=on",
           "--set", "restart=on-failure", "--set", "restart_backoff_ms=100", "--set", "progress_s=0"]
    for s in sets + carrier_sets:
        cmd += ["--set", s]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    t0 = time.time()
    for at, victim, sig in schedule:
        time.sleep(max(0, t0 + at - time.time()))
        for pid in pids_of(f"{run_dir}/run", victim):
            try:
                os.kill(pid, sig)
                if sig == signal.SIGSTOP:
                    time.sleep(5)
                    os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:  # it died meanwhile (the run failed): the report says why
                pass
    out, _ = p.communicate()
    return json.loads(out), run_dir


rows = []
# Every run its own ports, all below Linux's ephemeral range (32768-60999):
# a listener restarted on a port that an outgoing connection of another
# process happens to hold as its local port cannot bind it (seen here with
# base ports from 32200 up: "cannot listen ... Address already in use").
# 700 apart (a run listens up to +300, its reference run at +350 up to +650),
# 30 runs from 8000 end below 29,000.
port = 8000 - 700
for carrier, csets in CARRIERS.items():
    for name, (example, schedule, sets) in FAULTS.items():
        print(f"{carrier}: {name} ...", flush=True)
        port += 700
        j, run_dir = run(example, schedule, sets, csets, a.duration, port)
        same = ""
        if example in RESULTS:
            ref, ref_dir = run(example, [], sets, csets, a.duration, port + 350)
            got = open(f"{run_dir}/run/{RESULTS[example]}").read() if j["ok"] else ""
            want = open(f"{ref_dir}/run/{RESULTS[example]}").read() if ref["ok"] else None
            same = "yes" if got == want else f"NO ({got.count(chr(10))} vs {(want or '').count(chr(10))} lines)"
        reconnect = []
        for log in glob.glob(f"{run_dir}/run/*.log"):
            reconnect += [int(m) for m in re.findall(r"connected again after (\d+) ms", open(log).read())]
        rss = max(q.get("rss_max_bytes", 0) for q in j["processes"]) / 2**20
        sink = [q for q in j["processes"] if q.get("role") == "sink"]
        recovery = sink[0].get("latency_us", {}).get("max", 0) / 1e3 if sink else 0
        each = [r for q in j["processes"] for r in q.get("recovery_s", [])]
        recoveries = ", ".join("?" if r is None else f"{r * 1e3:.0f}" for r in each) or "-"
        ck = sum(q.get("checkpoints", 0) for q in j["processes"])
        restored = max((q.get("restored_checkpoint", 0) for q in j["processes"]), default=0)
        rows.append((carrier, name, j["ok"], j["tuples"], j["lost"], j["duplicated"], j["replayed"],
                     j["deduplicated"], j["restarts"], max(reconnect) if reconnect else "-", recoveries, f"{recovery:.0f}",
                     f"{rss:.0f}", f"{ck} / {restored}" if ck or restored else "-", same,
                     "" if j["ok"] else j["error"][:80]))
        print("  ", rows[-1], flush=True)

head = ("carrier", "fault", "ok", "tuples", "lost", "duplicated", "replayed events", "deduplicated",
        "restarts", "reconnect ms (upstream)", "recovery ms (each restart)",
        "sink's max latency ms", "peak RSS MiB (max process)",
        "snapshots written / restored from", "results equal a run without the fault", "error")
os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
with open(a.out, "w") as f:
    f.write("# Faults x carriers (acks: on, restart: on-failure)\n\n")
    f.write(f"`python3 experiments/faults.py --duration {a.duration:g}`: the demo pipeline, 128 B tuples in "
            "32 KiB events at full rate, faults from 2 s into the run (x3: node-a, node-b, node-a, ... every "
            "1.5 s); esper: deploy/examples/esper.yaml at 2,000 events/s with checkpoint_interval_ms=50, node-b "
            "killed at 1.5 s; correlate: deploy/examples/correlate.yaml the same, node-a (grace join) or node-b "
            "(correlate) killed at 1.5 s; split key: deploy/examples/split_key.yaml with checkpoint_interval_ms=50, "
            "node-a killed at 2 s. Recovery: each restart's recovery_s, from the death to the first tuple at the "
            "sink after the restart; the sink's largest latency is that of a tuple the dead node held, sent "
            "before the fault, delivered once replayed.\n\n")
    f.write("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
    for r in rows:
        f.write("| " + " | ".join(str(x) for x in r) + " |\n")
print(open(a.out).read())
