# hops.py ROUNDS: one-tuple events at 2,000/s: sluice 2 and 4 processes, plain 2 and 4, alternated
import json, subprocess, statistics, sys
from pathlib import Path
REPO = str(Path(__file__).resolve().parents[3]), time, os, signal
R = int(sys.argv[1]); rate = 2000; dur = 5
RELAY = REPO + "/build/experiments/sluice-plainrelay"; DEP = REPO + "/build/deploy/sluice-deploy"
MB = str(16 + 64 + 128)
def sluice(yaml, extra=()):
    cmd = [DEP, "run", yaml, "--json", "--run-dir", "/tmp/hops", "--set", "event_bytes=0", "--set", f"rate={rate}",
           "--set", f"duration_s={dur}", "--set", "progress_s=0", "--set", "base_port=36000", "--set", "threads=adaptive"]
    for e in extra: cmd += ["--set", e]
    j = json.loads(subprocess.run(["flock", "/tmp/cpu.lock"] + cmd, capture_output=True, text=True).stdout)
    sink = [p for p in j["processes"] if p["role"] == "sink"][0]
    return sink["latency_us"]["p50"], sink["latency_us"]["p99"]
def plain(n_relays):
    ports = [37100 + i for i in range(n_relays + 1)]
    common = ["--message-bytes", MB, "--congestion", "reno"]
    sh = f"{RELAY} sink --listen {ports[-1]} --json {' '.join(common)} > /tmp/plain.json & sleep 0.05; "
    for i in range(n_relays - 1, -1, -1):
        sh += f"{RELAY} relay --listen {ports[i]} --connect 127.0.0.1:{ports[i+1]} {' '.join(common)} & sleep 0.05; "
    sh += f"{RELAY} source --connect 127.0.0.1:{ports[0]} --duration {dur} --rate {rate} {' '.join(common)}; wait"
    subprocess.run(["flock", "/tmp/cpu.lock", "bash", "-c", sh], capture_output=True)
    j = json.loads(open("/tmp/plain.json").read().strip().splitlines()[-1])
    return j["latency_us"]["p50"], j["latency_us"]["p99"]
cases = {"sluice-2": lambda: sluice(str(Path(__file__).resolve().parent / "two.yaml")), "plain-2": lambda: plain(0),
         "sluice-4": lambda: sluice(REPO + "/deploy/examples/pipeline.yaml"), "plain-4": lambda: plain(2)}
res = {k: [] for k in cases}
for r in range(R):
    for k, f in cases.items(): res[k].append(f())
for k, v in res.items():
    print(k, "p50", statistics.median(x[0] for x in v), "p99", statistics.median(x[1] for x in v), v)
