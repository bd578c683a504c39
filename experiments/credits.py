#!/usr/bin/env python3
"""Credits sized to the link: the demo pipeline
(loadgen -> node-a -> node-b -> sink, tcp-opt) with `credits: fixed` and
`credits: adaptive`, alternated in one run so both see the same machine.
Per row and mode: median tuples/s, the ratio adaptive/fixed, mean node CPE_p,
and the window each receiving end settled on (credit_window, of `slots`) with
the credit round trip it measured.

  python3 experiments/credits.py [--build build] [--repeats 3] [--duration 5]
                                 [--rows 128x32768,12x0] [--set k=v ...] [--out DIR]

A row is TUPLE_BYTESxEVENT_BYTES (0: one tuple per event). --out writes
credits.md and runs.csv there. Standard library only.
"""
import argparse
import csv
import datetime
import json
import statistics
import subprocess
import sys
from pathlib import Path

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--duration", type=float, default=5)
ap.add_argument("--rows", default="128x32768,12x0", help="TUPLExEVENT bytes, comma separated")
ap.add_argument("--set", action="append", default=[], help="more deployment keys, k=v (both modes)")
ap.add_argument("--out", default="", help="folder for credits.md and runs.csv")
a = ap.parse_args()

MODES = ("fixed", "adaptive")


def run(tuple_bytes, event_bytes, mode):
    cmd = [f"{a.build}/deploy/sluice-deploy", "run", "deploy/examples/pipeline.yaml", "--json",
           "--set", f"credits={mode}", "--set", f"duration_s={a.duration:g}", "--set", "base_port=31300",
           "--set", f"tuple_bytes={tuple_bytes}", "--set", f"event_bytes={event_bytes}",
           "--set", "progress_s=0"]
    for s in a.set:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.duration * 3 + 60)
    try:
        j = json.loads(p.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{mode} {tuple_bytes}x{event_bytes}: no report; stderr: {p.stderr[-400:]}")
    if not j.get("ok") or j.get("lost"):
        sys.exit(f"{mode} {tuple_bytes}x{event_bytes} failed: {j.get('error')} (lost {j.get('lost')})")
    nodes = [q for q in j["processes"] if q["role"] == "node"]
    windows = []
    for q in j["processes"]:
        for link in q.get("links", []):
            if link["direction"] == "in":
                windows.append(f"{q['name']} {link.get('credit_window', '?')}"
                               f" ({link.get('credit_rtt_us', 0)} us)")
    return {"tuples_per_s": j["tuples_per_s"], "gbps": j.get("gbps", 0),
            "cpe_p": statistics.mean(q["cpe_p"] for q in nodes), "windows": "; ".join(windows)}


rows = []
for r in a.rows.split(","):
    t, e = r.split("x")
    rows.append((int(t), int(e)))
results = {}
runs = []
for i in range(a.repeats):
    for t, e in rows:
        for mode in MODES if i % 2 == 0 else reversed(MODES):
            res = run(t, e, mode)
            results.setdefault((t, e, mode), []).append(res)
            runs.append({"round": i + 1, "tuple_bytes": t, "event_bytes": e, "credits": mode, **res})
            print(f"round {i + 1}/{a.repeats} {t} B x {e or 'one tuple'} credits={mode}: "
                  f"{res['tuples_per_s']:,.0f} tuples/s, node CPE_p {res['cpe_p']:,.0f}; "
                  f"windows {res['windows']}", flush=True)

lines = [f"# Credits: fixed against adaptive, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}",
         "",
         f"`python3 experiments/credits.py --build {a.build} --repeats {a.repeats} --duration {a.duration:g} "
         f"--rows {a.rows}" + "".join(f" --set {s}" for s in a.set) + "`",
         "",
         f"Medians of {a.repeats} alternated runs of {a.duration:g} s, deploy/examples/pipeline.yaml (tcp-opt, "
         "64 slots, credit batch 16). Windows: the last run's credit_window per receiving end "
         "(credits the sender may hold, frames on their way included) and the credit round trip it measured.",
         "",
         "| tuple B | event B | credits | tuples/s | x fixed | node CPE_p | windows (last run) |",
         "|---|---|---|---|---|---|---|"]
for t, e in rows:
    base = statistics.median(r["tuples_per_s"] for r in results[(t, e, "fixed")])
    for mode in MODES:
        rs = results[(t, e, mode)]
        tps = statistics.median(r["tuples_per_s"] for r in rs)
        cpe = statistics.median(r["cpe_p"] for r in rs)
        lines.append(f"| {t} | {e or 'one tuple'} | {mode} | {tps:,.0f} | {tps / base:.3f} | {cpe:,.0f} | "
                     f"{rs[-1]['windows']} |")
text = "\n".join(lines) + "\n"
print()
print(text)
if a.out:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "credits.md").write_text(text)
    with open(out / "runs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(runs[0].keys()))
        w.writeheader()
        w.writerows(runs)
