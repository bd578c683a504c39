#!/usr/bin/env python3
"""What acknowledgements and upstream backup cost: the demo pipeline
(loadgen -> node-a -> node-b -> sink, tcp-opt, 128 B tuples in 32 KiB events)
with acks off and on, alternated in one run so both see the same machine.
Prints tuples/s and node CPE_p per run, and the medians' ratio on/off.

  python3 experiments/acks_cost.py [--build build] [--repeats 3] [--duration 5] [--set k=v ...]
                                   [--on-set k=v ...]   # keys for the acks-on runs only
                                   [--example deploy/examples/esper.yaml]

With --on-set checkpoint_interval_ms=50 the on runs take snapshots too (the
sink's verifier; with esper.yaml, node-b's group-by as well).
"""
import argparse, json, statistics, subprocess, sys

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--duration", type=float, default=5)
ap.add_argument("--set", action="append", default=[], help="more deployment keys, k=v")
ap.add_argument("--example", default="deploy/examples/pipeline.yaml")
ap.add_argument("--on-set", action="append", default=[],
                help="deployment keys for the acks-on runs only, k=v (e.g. slots=192)")
a = ap.parse_args()

def run(acks):
    cmd = [f"{a.build}/deploy/sluice-deploy", "run", a.example, "--json",
           "--set", f"acks={acks}", "--set", f"duration_s={a.duration}", "--set", "base_port=31200",
           "--set", "progress_s=0"]
    if a.example.endswith("pipeline.yaml"):
        cmd += ["--set", "tuple_bytes=128", "--set", "event_bytes=32768"]
    for s in a.set + (a.on_set if acks == "on" else []):
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    j = json.loads(p.stdout)
    if not j["ok"]:
        sys.exit(f"run with acks={acks} failed: {j['error']}")
    nodes = [q for q in j["processes"] if q["role"] == "node"]
    cpe = statistics.mean(q["cpe_p"] for q in nodes)
    # Snapshots, where they were taken: how many, and the time they cost.
    ck = [q for q in j["processes"] if q.get("checkpoints")]
    ck_note = "".join(f", {q['name']} {q['checkpoints']} snapshots (write {q['checkpoint_write_s']:.3f} s, "
                      f"wait {q['checkpoint_wait_s']:.3f} s)" for q in ck)
    # Frames each credit message answered, per receiving link in pipeline
    # order: with acks, every message also carries the acknowledgement.
    per = [l["frames"] / l["credit_msgs"] for q in j["processes"] for l in q.get("links") or []
           if l["direction"] == "in" and l.get("credit_msgs")]
    if per:
        ck_note += ", frames per credit message " + " / ".join(f"{x:.1f}" for x in per)
    return j["tuples_per_s"], cpe, j["lost"], ck_note

res = {"off": [], "on": []}
for i in range(a.repeats):
    # Each pair in turn starts with off, then with on: neither always runs
    # first after the other's load.
    for acks in (("off", "on") if i % 2 == 0 else ("on", "off")):
        tps, cpe, lost, ck_note = run(acks)
        res[acks].append((tps, cpe))
        print(f"run {i + 1}/{a.repeats} acks={acks}: {tps:,.0f} tuples/s, node CPE_p {cpe:,.0f}, lost {lost}"
              f"{ck_note}", flush=True)
med = {k: (statistics.median(t for t, _ in v), statistics.median(c for _, c in v)) for k, v in res.items()}
print(f"median tuples/s: off {med['off'][0]:,.0f}, on {med['on'][0]:,.0f}, on/off {med['on'][0] / med['off'][0]:.3f}")
# Each pair ran back to back, on a machine whose speed drifts between
# pairs (a shared one moved 23-38 M tuples/s): the median of the pairs'
# own ratios follows the drift less than the ratio of the medians.
pairs = sorted(on[0] / off[0] for off, on in zip(res["off"], res["on"]))
print(f"pairs' on/off: median {statistics.median(pairs):.3f}, range {pairs[0]:.3f}-{pairs[-1]:.3f}")
print(f"median node CPE_p: off {med['off'][1]:,.0f}, on {med['on'][1]:,.0f}, on/off {med['on'][1] / med['off'][1]:.3f}")
