#!/usr/bin/env python3
"""The client library against the built-in ends, on the demo chain.

Two ways to move 128-byte tuples in 32 KiB events through node -> node,
alternated round after round in one script on one machine (it drifts
10-20% between runs, so only a ratio within a run means anything):

  loadgen   deploy/examples/pipeline.yaml: loadgen -> node-a -> node-b -> sink
  cpp       deploy/examples/app.yaml: the C++ example publisher -> node-a ->
            node-b -> the C++ example subscriber (examples/, linked against
            libsluice.so), both started by this script once sluice-deploy
            run has written the run directory's apps/*.json
  python    the same with examples/publisher.py and subscriber.py (import
            sluice, numpy batches of one event's tuples), where the build
            has the Python module

Both take the same links, preset and operators (a filter on key in each
node); the figure of each is the report's tuples/s (`sluice-deploy run
--json`: tuples over the sink's or the subscriber's first-to-last arrival),
its lost and duplicated tuples and each process's peak RSS. The table gives
the median over the rounds and each / loadgen.

  flock -x /tmp/cpu.lock python3 experiments/api_bench.py [--build build]
      [--rounds 3] [--duration 5] [--acks] [--json]

--json prints a list of rows instead of the table, each with name,
tuples_per_s, lost, duplicated, peak_rss_mib (the largest process's) and
rss_mib (each process's), and the rounds' figures. Standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sweep  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SIZES = ["tuple_bytes=128", "event_bytes=32768", "progress_s=0", "congestion=reno"]


def deploy_cmd(args, yaml, run_dir, sets):
    cmd = [str(args.build / "deploy/sluice-deploy"), "run", str(yaml), "--json", "--run-dir", str(run_dir)]
    for s in SIZES + [f"base_port={args.base_port}"] + (["acks=on"] if args.acks else []) + sets:
        cmd += ["--set", s]
    return cmd


def row_of(name, rep, err=""):
    rss = {p["name"]: round(p.get("rss_max_bytes", 0) / 1048576.0, 1) for p in rep.get("processes") or []}
    ok = bool(rep.get("ok")) and not err
    return {"name": name, "ok": ok, "error": err or rep.get("error", ""),
            "tuples_per_s": rep.get("tuples_per_s", 0), "tuples": rep.get("tuples", 0),
            "lost": rep.get("lost", 0), "duplicated": rep.get("duplicated", 0),
            "corrupt": rep.get("corrupt", 0),
            "peak_rss_mib": max(rss.values()) if rss else 0, "rss_mib": rss}


def finish(name, proc, timeout):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return row_of(name, {}, f"sluice-deploy run did not end within {timeout:.0f} s")
    try:
        rep = sweep.parse_report(out)
    except ValueError as e:
        return row_of(name, {}, f"{e}; stderr: {err[-400:]}")
    return row_of(name, rep, "" if proc.returncode == 0 else f"sluice-deploy exited {proc.returncode}: {err[-400:]}")


def run_loadgen(args, tmp, tag):
    cmd = deploy_cmd(args, ROOT / "deploy/examples/pipeline.yaml", tmp / tag, [f"duration_s={args.duration:g}"])
    return finish("loadgen", subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
                  args.duration * 3 + 60)


def run_cpp(args, tmp, tag):
    ex = args.build / "examples"
    return run_app(args, tmp, tag, "cpp", [str(ex / "sluice-example-publisher")],
                   [str(ex / "sluice-example-subscriber")])


def run_python(args, tmp, tag):
    # examples/publisher.py: numpy batches of max_tuples (255) tuples, one
    # event each, sent with Publisher.send; subscriber.py polls views.
    py = [sys.executable, "-X", "faulthandler"]
    return run_app(args, tmp, tag, "python", py + [str(ROOT / "examples/publisher.py")],
                   py + [str(ROOT / "examples/subscriber.py")])


def run_app(args, tmp, tag, name, publisher, subscriber):
    run = tmp / tag
    cmd = deploy_cmd(args, ROOT / "deploy/examples/app.yaml", run, ["app_wait_s=30"])
    deploy = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not all((run / "apps" / f"{n}.json").exists() for n in ("publisher", "subscriber")):
        if deploy.poll() is not None or time.time() > deadline:
            deploy.kill()
            _, err = deploy.communicate()
            return row_of(name, {}, f"no {run}/apps/*.json: {err[-400:]}")
        time.sleep(0.05)
    sub = subprocess.Popen(subscriber + [str(run)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # As many tuples as the duration allows: the publisher stops at it.
    pub = subprocess.run(publisher + [str(run), str(10**12), f"{args.duration:g}"],
                         capture_output=True, text=True, timeout=args.duration * 3 + 60)
    try:
        sub.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        sub.kill()
    row = finish(name, deploy, 60)
    if pub.returncode != 0 and not row["error"]:
        row["ok"], row["error"] = False, f"the publisher exited {pub.returncode}: {pub.stderr[-400:]}"
    return row


VARIANTS = {"loadgen": run_loadgen, "cpp": run_cpp, "python": run_python}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, default=ROOT / "build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5, help="seconds each run sends")
    ap.add_argument("--acks", action="store_true", help="acks=on on every link")
    ap.add_argument("--base-port", type=int, default=33400)
    ap.add_argument("--json", action="store_true", help="the rows as JSON instead of the table")
    args = ap.parse_args()
    args.build = args.build.resolve()
    # The Python module (python/), where this build has it.
    if list((args.build / "python").glob("sluice*.so")):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.build / "python"),
                                                                  os.environ.get("PYTHONPATH")]))
    else:
        del VARIANTS["python"]
        print(f"api_bench.py: no Python module in {args.build / 'python'}: no python row", file=sys.stderr)
    for need in ("deploy/sluice-deploy", "examples/sluice-example-publisher", "examples/sluice-example-subscriber"):
        if not (args.build / need).is_file():
            sys.exit(f"api_bench.py: {args.build / need} not found (build it: /work/wt/build.sh or cmake --build)")

    runs = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="sluice-api-bench-") as t:
        tmp = Path(t)
        for r in range(args.rounds):
            for name, fn in VARIANTS.items():
                row = fn(args, tmp, f"{name}-{r}")
                runs[name].append(row)
                print(f"round {r + 1}/{args.rounds} {name}: {row['tuples_per_s']:.0f} tuples/s, lost {row['lost']}, "
                      f"duplicated {row['duplicated']}, peak RSS {row['peak_rss_mib']} MiB"
                      + ("" if row["ok"] else f"  FAILED: {row['error']}"), file=sys.stderr)

    rows = []
    for name, rs in runs.items():
        good = [x for x in rs if x["ok"]]
        rows.append({
            "name": name,
            "tuples_per_s": statistics.median(x["tuples_per_s"] for x in good) if good else 0,
            "lost": sum(x["lost"] for x in rs), "duplicated": sum(x["duplicated"] for x in rs),
            "peak_rss_mib": max((x["peak_rss_mib"] for x in rs), default=0),
            "rss_mib": {p: max(x["rss_mib"].get(p, 0) for x in rs) for x in rs for p in x["rss_mib"]},
            "rounds": [x["tuples_per_s"] for x in rs], "failed": [x["error"] for x in rs if not x["ok"]]})
    base = rows[0]["tuples_per_s"]
    for row in rows:
        row["ratio"] = row["tuples_per_s"] / base if base else 0
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"128 B tuples, 32 KiB events, node -> node, acks {'on' if args.acks else 'off'}, "
              f"median of {args.rounds} alternated rounds of {args.duration:g} s\n")
        print("| ends | tuples/s | / loadgen | lost | duplicated | peak RSS MiB (each process) |")
        print("|---|---:|---:|---:|---:|---|")
        for row in rows:
            each = ", ".join(f"{p} {m}" for p, m in row["rss_mib"].items())
            print(f"| {row['name']} | {row['tuples_per_s']:,.0f} | {row['ratio']:.3f} | {row['lost']} | "
                  f"{row['duplicated']} | {row['peak_rss_mib']} ({each}) |")
    return 0 if all(not row["failed"] and not row["lost"] and not row["duplicated"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
