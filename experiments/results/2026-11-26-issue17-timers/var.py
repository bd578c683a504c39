# var.py ROUNDS "label:sets" ...: sluice 4-process at 2,000 one-tuple events/s, sink p50/p99, alternated; "plain" = plain relays
import json, subprocess, statistics, sys
from pathlib import Path
REPO = str(Path(__file__).resolve().parents[3])
rate = 2000; dur = 5
RELAY = REPO + "/build/experiments/sluice-plainrelay"; DEP = REPO + "/build/deploy/sluice-deploy"
def sluice(sets, yaml=REPO + "/deploy/examples/pipeline.yaml"):
    cmd = [DEP, "run", yaml, "--json", "--run-dir", "/tmp/var", "--set", "event_bytes=0", "--set", f"rate={rate}",
           "--set", f"duration_s={dur}", "--set", "progress_s=0", "--set", "base_port=36000"]
    for e in sets.split(): cmd += ["--set", e]
    p = subprocess.run(["flock", "/tmp/cpu.lock"] + cmd, capture_output=True, text=True)
    j = json.loads(p.stdout)
    assert j.get("ok"), (sets, j.get("error"))
    return j["latency_us"]["p50"], j["latency_us"]["p99"]
def plain(n_relays=2):
    ports = [37100 + i for i in range(n_relays + 1)]
    common = "--message-bytes 208 --congestion reno"
    sh = f"{RELAY} sink --listen {ports[-1]} --json {common} > /tmp/plain.json & sleep 0.05; "
    for i in range(n_relays - 1, -1, -1):
        sh += f"{RELAY} relay --listen {ports[i]} --connect 127.0.0.1:{ports[i+1]} {common} & sleep 0.05; "
    sh += f"{RELAY} source --connect 127.0.0.1:{ports[0]} --duration {dur} --rate {rate} {common}; wait"
    subprocess.run(["flock", "/tmp/cpu.lock", "bash", "-c", sh], capture_output=True)
    j = json.loads(open("/tmp/plain.json").read().strip().splitlines()[-1])
    return j["latency_us"]["p50"], j["latency_us"]["p99"]
if __name__ == "__main__":
    R = int(sys.argv[1])
    specs = [a.partition(":") for a in sys.argv[2:]]
    res = {l: [] for l, _, _ in specs}
    for r in range(R):
        for l, _, s in specs: res[l].append(plain() if s == "plain" else sluice(s))
    base = statistics.median(x[0] for x in res[specs[0][0]])
    for l, v in res.items():
        m50 = statistics.median(x[0] for x in v); m99 = statistics.median(x[1] for x in v)
        print(f"{l:12s} p50 {m50:6.1f} ({m50/base:.2f}) p99 {m99:6.1f}  " + " ".join(f"{a:.0f}/{b:.0f}" for a, b in v))
