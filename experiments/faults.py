#!/usr/bin/env python3
"""Faults x carriers on the demo pipeline with acks: on and restart: on-failure:
SIGKILL a node mid-run, let the supervisor start it again, and tabulate what
the run reports (tuples, lost, duplicated, replayed, deduplicated, restarts,
reconnect time from the upstream's log, peak RSS per process).

  python3 experiments/faults.py [--build build] [--duration 5] [--out experiments/results/faults.md]
"""
import argparse, glob, json, os, re, signal, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--duration", type=float, default=5)
ap.add_argument("--out", default="experiments/results/faults.md")
a = ap.parse_args()

CARRIERS = {
    "tcp-opt": [],
    "fabric shm": ["transport=fabric", "fabric_provider=shm"],
    "ucx sm": ["transport=ucx", "ucx_tls=sm"],
}
rows = []
for carrier, sets in CARRIERS.items():
    for victim in ("node-a", "node-b"):
        run_dir = tempfile.mkdtemp(prefix="sluice-faults-")
        cmd = [f"{a.build}/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--json",
               "--run-dir", f"{run_dir}/run", "--timeout", str(int(a.duration * 4 + 10)),
               "--set", f"duration_s={a.duration}", "--set", "base_port=32200", "--set", "acks=on",
               "--set", "restart=on-failure", "--set", "restart_backoff_ms=100", "--set", "progress_s=0"]
        for s in sets:
            cmd += ["--set", s]
        print(f"{carrier}: SIGKILL {victim} at 2 s ...", flush=True)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(2)
        killed = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cl = open(f"/proc/{pid}/cmdline").read().replace("\0", " ")
            except OSError:
                continue
            if f"{run_dir}/run/" in cl and f"--process {victim} " in cl:
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
        out, _ = p.communicate()
        j = json.loads(out)
        reconnect = []
        for log in glob.glob(f"{run_dir}/run/*.log"):
            reconnect += [int(m) for m in re.findall(r"connected again after (\d+) ms", open(log).read())]
        rss = max(q.get("rss_max_bytes", 0) for q in j["processes"]) / 2**20
        rows.append((carrier, victim, j["ok"], j["tuples"], j["lost"], j["duplicated"], j["replayed"],
                     j["deduplicated"], j["restarts"], max(reconnect) if reconnect else "-", f"{rss:.0f}",
                     "" if j["ok"] else j["error"][:80]))
        print("  ", rows[-1], flush=True)

head = ("carrier", "killed", "ok", "tuples", "lost", "duplicated", "replayed events", "deduplicated tuples",
        "restarts", "reconnect ms (upstream)", "peak RSS MiB (max process)", "error")
with open(a.out, "w") as f:
    f.write("# Faults x carriers (acks: on, restart: on-failure)\n\n")
    f.write(f"`python3 experiments/faults.py --duration {a.duration:g}`: the demo pipeline, 128 B tuples in "
            "32 KiB events at full rate, one SIGKILL 2 s into the run.\n\n")
    f.write("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
    for r in rows:
        f.write("| " + " | ".join(str(x) for x in r) + " |\n")
print(open(a.out).read())
