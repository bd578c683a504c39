#!/usr/bin/env python3
"""Before and after: two builds of sluice, measured in one script on one machine.

For a change to the data path the question is "did anything get slower?",
and this machine drifts 10-20% between runs, so the two builds run
interleaved (before, after, before, after, ... for --repeat rounds), every
row of the sweep that matters with both presets, and the plain-socket
baseline in every round. It reports medians and the after/before ratios.

  python3 experiments/before_after.py --before /path/to/old/build --after build \\
      [--repeat 3] [--duration 3] [--extra deploy/examples/union.yaml ...]

Each build directory holds deploy/sluice-deploy (and, for the baseline,
experiments/sluice-plainrelay; the after build's is used). The deployment
file is the after tree's deploy/examples/pipeline.yaml (a chain, which both
builds read). --extra runs other deployment files with the after build only
and reports their tuples/s. Output: a Markdown table on stdout, and
results.csv, results.md and one raw JSON per run under
runs/before-after-<timestamp>/ (ignored by git). Standard library only; it
reuses experiments/sweep.py.
"""

import argparse
import csv
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sweep  # noqa: E402

ROWS = [  # (tuple bytes, event bytes): 0 = one tuple per event
    (12, 0), (128, 0), (128, 32768), (4096, 32768)]
PRESETS = ["tcp-opt", "original"]
NODES = ["loadgen", "node-a", "node-b", "sink"]


def run_one(deploy, pipeline, sets, duration, logdir, tag):
    cmd = [str(deploy), "run", str(pipeline), "--json", "--run-dir", str(logdir / tag),
           "--set", f"duration_s={duration:g}", "--set", "progress_s=0", "--set", "congestion=reno"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration * 3 + 60)
    (logdir / f"{tag}.json").write_text(out.stdout)
    try:
        rep = sweep.parse_report(out.stdout)
    except ValueError as e:
        return {"ok": False, "error": f"{e}; stderr: {out.stderr[-300:]}"}
    bad = rep.get("lost") or rep.get("duplicated") or rep.get("corrupt")
    row = {"ok": bool(rep.get("ok")) and not bad, "error": rep.get("error", ""),
           "tuples_per_s": rep.get("tuples_per_s", 0), "gbps": rep.get("gbps", 0)}
    for p in rep.get("processes") or []:
        row[f"cpe_p:{p['name']}"] = p.get("cpe_p", 0)
    return row


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="build directory of the starting point")
    ap.add_argument("--after", required=True, help="build directory of the change")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--extra", action="append", default=[], metavar="FILE.yaml",
                    help="another deployment file to run with the after build")
    ap.add_argument("--out", help="where its files go (default: runs/before-after-<timestamp>)")
    args = ap.parse_args()

    builds = {"before": Path(args.before), "after": Path(args.after)}
    for name, b in builds.items():
        if not (b / "deploy/sluice-deploy").is_file():
            sys.exit(f"before_after.py: {b}/deploy/sluice-deploy not found ({name} build)")
    relay = sweep.find_binary(args.after, "experiments", "sluice-plainrelay")
    pipeline = sweep.REPO / "deploy/examples/pipeline.yaml"
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else sweep.REPO / f"runs/before-after-{stamp}"
    out.mkdir(parents=True, exist_ok=True)

    results = {}  # (build, preset, tuple, event) -> [rows]
    baseline = []
    extra = {}
    for r in range(args.repeat):
        sweep.log(f"round {r + 1}/{args.repeat}")
        b = sweep.run_baseline(relay, args.duration, "reno", sweep.BASELINE_CHUNK, out, f"baseline-r{r}")
        baseline.append(float(b["gbps"]) if b.get("ok") == "true" else None)
        for tb, eb in ROWS:
            for preset in PRESETS:
                for name, build in builds.items():
                    tag = f"{name}-{preset}-t{tb}-e{eb}-r{r}"
                    row = run_one(build / "deploy/sluice-deploy", pipeline,
                                  [f"preset={preset}", f"tuple_bytes={tb}", f"event_bytes={eb}"],
                                  args.duration, out, tag)
                    if not row["ok"]:
                        sweep.log(f"  {tag}: FAILED: {row['error']}")
                    results.setdefault((name, preset, tb, eb), []).append(row)
        for f in args.extra:
            row = run_one(builds["after"] / "deploy/sluice-deploy", f, [], args.duration, out,
                          f"extra-{Path(f).stem}-r{r}")
            extra.setdefault(f, []).append(row)

    base_gbps = med(baseline)
    lines = [f"# Before / after, {stamp}", "",
             f"{args.repeat} rounds of {args.duration:g} s, builds interleaved; medians. "
             f"Plain sockets (4 processes, 32 KiB chunks, reno): "
             f"{base_gbps:.2f} Gb/s." if base_gbps else "Plain sockets: failed.", "",
             "| preset | tuple | event | tuples/s before | after | after/before | Gb/s after | "
             + " | ".join(f"{n} CPE_p before -> after" for n in NODES) + " |",
             "|---" * (7 + len(NODES)) + "|"]
    csv_rows = []
    for tb, eb in ROWS:
        for preset in PRESETS:
            b = results[("before", preset, tb, eb)]
            a = results[("after", preset, tb, eb)]
            tb_ = med([x["tuples_per_s"] for x in b if x["ok"]])
            ta_ = med([x["tuples_per_s"] for x in a if x["ok"]])
            ga_ = med([x["gbps"] for x in a if x["ok"]])
            cpe = []
            for n in NODES:
                cb = med([x.get(f"cpe_p:{n}") for x in b if x["ok"]])
                ca = med([x.get(f"cpe_p:{n}") for x in a if x["ok"]])
                cpe.append(f"{cb:.0f} -> {ca:.0f} ({ca / cb:.2f})" if cb and ca else "failed")
                csv_rows.append({"preset": preset, "tuple_bytes": tb, "event_bytes": eb,
                                 "process": n, "cpe_p_before": cb, "cpe_p_after": ca})
            ratio = f"{ta_ / tb_:.2f}" if ta_ and tb_ else "-"
            frac = ""
            if preset == "tcp-opt" and eb == 32768 and tb == 128 and ga_ and base_gbps:
                frac = f" ({ga_ / base_gbps:.2f} of plain sockets)"
            lines.append(f"| {preset} | {tb} B | {'1 tuple' if eb == 0 else f'{eb // 1024} KiB'} | "
                         f"{tb_ or 0:,.0f} | {ta_ or 0:,.0f} | {ratio} | {ga_ or 0:.2f}{frac} | "
                         + " | ".join(cpe) + " |")
            csv_rows.append({"preset": preset, "tuple_bytes": tb, "event_bytes": eb,
                             "process": "pipeline", "tuples_per_s_before": tb_,
                             "tuples_per_s_after": ta_, "gbps_after": ga_})
    for f, rows in extra.items():
        t = med([x["tuples_per_s"] for x in rows if x["ok"]])
        g = med([x["gbps"] for x in rows if x["ok"]])
        ok = all(x["ok"] for x in rows)
        lines.append("")
        lines.append(f"{f}: {t or 0:,.0f} tuples/s, {g or 0:.2f} Gb/s (after build; "
                     f"{'every run clean' if ok else 'A RUN FAILED'})")
    text = "\n".join(lines) + "\n"
    print(text)
    (out / "results.md").write_text(text)
    keys = sorted({k for r in csv_rows for k in r})
    with open(out / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(csv_rows)
    sweep.log(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
