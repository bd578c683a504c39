#!/usr/bin/env python3
"""in_place on against off, rounds alternated (issue 18, item 2).

  python3 ab.py ROUNDS [--set KEY=VALUE ...]

The demo pipeline (loadgen -> node-a -> node-b -> sink) on ucx-opt as it
chooses on one host (shared memory, rma, one thread per process), node-b's
operator replaced by an emitting one (moving_avg over `key` by default: one
24-byte row per 128-byte tuple, written by node-b into its own pool or, with
in_place: on, straight into the sink's slot). Prints, per setting, the
median over rounds of the sink's tuples/s, node-b's cycles per event
(cpe_p, cpe_u, cpe_s) and the frames node-b sent in place, and the on/off
ratios. Each run holds /tmp/cpu.lock.
"""
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DEPLOY = str(REPO / "build/deploy/sluice-deploy")
PIPELINE = str(REPO / "deploy/examples/pipeline.yaml")


def run(in_place, extra, duration):
    cmd = [DEPLOY, "run", PIPELINE, "--json", "--run-dir", "/tmp/inplace-ab", "--set", "preset=ucx-opt",
           "--set", f"duration_s={duration}", "--set", "progress_s=0", "--set", "base_port=36500",
           "--set", "processes.2.operators=[{moving_avg: {field: key, window: 1000}}]",
           "--set", f"in_place={in_place}"]
    for e in extra:
        cmd += ["--set", e]
    p = subprocess.run(["flock", "/tmp/cpu.lock"] + cmd, capture_output=True, text=True)
    j = json.loads(p.stdout)
    assert j.get("ok") and j["lost"] == 0 and j["corrupt"] == 0, (in_place, j.get("error"))
    nb = next(x for x in j["processes"] if x["name"] == "node-b")
    placed = sum(l.get("in_place_frames", 0) for l in nb["links"] if l["direction"] == "out")
    return {"tuples_per_s": j["tuples_per_s"], "cpe_p": nb["cpe_p"], "cpe_u": nb["cpe_u"],
            "cpe_s": nb["cpe_s"], "in_place_frames": placed}


def main():
    rounds = int(sys.argv[1])
    extra = [a.split("=", 1)[1] if a.startswith("--set=") else a for a in sys.argv[2:] if a != "--set"]
    res = {"on": [], "off": []}
    for r in range(rounds):
        for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
            res[mode].append(run(mode, extra, 4))
            print(mode, json.dumps(res[mode][-1]), flush=True)
    med = {m: {k: statistics.median(x[k] for x in v) for k in v[0]} for m, v in res.items()}
    for m in ("on", "off"):
        d = med[m]
        print(f"{m:3s}  tuples/s {d['tuples_per_s']:12.0f}  node-b cpe_p {d['cpe_p']:9.0f} "
              f"(u {d['cpe_u']:.0f}, s {d['cpe_s']:.0f})  in-place frames {d['in_place_frames']:.0f}")
    print(f"on/off: tuples/s {med['on']['tuples_per_s'] / med['off']['tuples_per_s']:.3f}, "
          f"node-b cpe_p {med['on']['cpe_p'] / med['off']['cpe_p']:.3f}")
    for m in ("on", "off"):
        print(m, "tuples/s per round:", " ".join(f"{x['tuples_per_s'] / 1e6:.2f}M" for x in res[m]))


if __name__ == "__main__":
    main()
