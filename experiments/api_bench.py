#!/usr/bin/env python3
"""The client library against the built-in ends and against pyzmq, on the
demo chain.

Ways to move 128-byte tuples in 32 KiB events through two relaying
processes, alternated round after round in one script on one machine (it
drifts 10-20% between runs, and on 2 cores a run may land at half speed,
so only a ratio within a run, over several rounds, means anything):

  loadgen        deploy/examples/pipeline.yaml: loadgen -> node-a -> node-b -> sink
  cpp            deploy/examples/app.yaml: a C++ publisher -> node-a -> node-b ->
                 a C++ subscriber (experiments/api_ends.cc on libsluice.so),
                 doing the built-in ends' work: claim() room for an event in
                 a slot, write each tuple's key (the library writes its seq, as
                 the generator writes seq and key), commit(); a subscriber
                 that counts the tuples of each event (the library checks its
                 checksum and seqs, as the sink does). Both started by this
                 script once sluice-deploy run has written the run
                 directory's apps/*.json
  cpp-batch      the same ends doing the Python ends' work (offer() of one
                 fixed batch after one pass over a field: one copy per event)
  cpp-example    the same with the C++ examples (examples/): the publisher
                 writes three fields of every tuple, the subscriber reads two
                 of every tuple into a running sum: an application's work on
                 top of the library's
  python         the same with experiments/api_ends.py (import sluice): one
                 numpy batch of an event's 255 tuples, filled once, one in-place
                 vectorised op and Publisher.send per batch; Subscriber.poll
                 (256 events a call) counting the tuples
  pyzmq          api_ends.py's pyzmq ends, four processes: PUSH -> relay -> relay
                 -> PULL over tcp loopback, the same batches, one message each
  python-1tuple  python, one tuple per event (per send; its update a store
                 through a memoryview, not a ufunc call on one element)
  pyzmq-1tuple   pyzmq, one tuple per message (the same)

The sluice rows take the same links, preset and operators (a filter on key
in each node); their figure is the report's tuples/s (`sluice-deploy run
--json`: tuples over the sink's or the subscriber's first-to-last
arrival), lost and duplicated tuples and each process's peak RSS. pyzmq's
are its subscriber's (first-to-last arrival; a gap or a repeat in seq),
the publisher's count against it, and each process's own peak RSS. Every
row also has the CPU time (user + system) of all its processes per tuple
delivered: on a machine the row saturates, what bounds its tuples/s, and
steadier than tuples/s from run to run. The table gives the median over
the rounds, each / loadgen (of the medians, and paired: the median of
each round's ratio, so that a round that landed at half speed for both
rows counts as one pair), and the ratios the client library is held to
(cpp / loadgen, python / cpp, python / pyzmq, and the same one tuple per
event).

  flock -x /tmp/cpu.lock python3 experiments/api_bench.py [--build build]
      [--rounds 3] [--duration 5] [--acks] [--rows loadgen,cpp,...] [--json]

--json prints a list of rows instead of the table, each with name,
tuples_per_s, lost, duplicated, peak_rss_mib (the largest of the row's
processes) and rss_mib (each process's), cpu_ns_per_tuple, ratio and
paired_ratio (to loadgen's), the rounds' figures, and for
api_ends' publishers thread_cpu_us_per_event (the sending thread's CPU
time per event) and fill_us_per_event (of it, the per-batch update's,
python only):
python's minus cpp-batch's, less the update, is the module's own cost. Rows
need what they run: the Python module in the build (python rows), pyzmq
and numpy for the interpreter (pyzmq rows, else skipped, saying so).
Standard library only in this script.
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
    # CPU time of every process of the row (user + system), per tuple
    # delivered: on a machine the row saturates, what bounds its tuples/s,
    # and steadier from run to run than tuples/s.
    procs = rep.get("processes") or []
    cpu_s = sum(p.get("user_s", 0) + p.get("sys_s", 0) for p in procs)
    tuples = rep.get("tuples", 0)
    cpu_ns = cpu_s / tuples * 1e9 if tuples and procs and all("user_s" in p for p in procs) else 0
    return {"name": name, "ok": ok, "error": err or rep.get("error", ""),
            "tuples_per_s": rep.get("tuples_per_s", 0), "tuples": tuples, "cpu_ns_per_tuple": cpu_ns,
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


def run_cpp_example(args, tmp, tag):
    ex = args.build / "examples"
    # As many tuples as the duration allows: the publisher stops at it.
    return run_app(args, tmp, tag, "cpp-example", [str(ex / "sluice-example-publisher"), "{run}", str(10**12),
                                                   f"{args.duration:g}"],
                   [str(ex / "sluice-example-subscriber"), "{run}"])


def api_ends_cpp(name, how):
    # experiments/api_ends.cc: claim: the built-in ends' work (a key written
    # per tuple in a claimed slot); offer: the Python ends' (one in-place
    # pass over a fixed batch, then one copy). A subscriber that counts.
    def run(args, tmp, tag):
        ends = str(args.build / "experiments/sluice-api-ends")
        return run_app(args, tmp, tag, name, [ends, "pub", "{run}", f"{args.duration:g}", str(BATCH), how],
                       [ends, "sub", "{run}"])
    return run


def python_ends(per_event):
    # experiments/api_ends.py: a fixed numpy batch, one in-place op per batch.
    py = [sys.executable, str(ROOT / "experiments/api_ends.py")]

    def run(args, tmp, tag):
        name = "python" if per_event > 1 else "python-1tuple"
        return run_app(args, tmp, tag, name, py + ["sluice-pub", "{run}", f"{args.duration:g}", str(per_event)],
                       py + ["sluice-sub", "{run}"])
    return run


def pyzmq_ends(per_event):
    def run(args, tmp, tag):
        return run_pyzmq(args, "pyzmq" if per_event > 1 else "pyzmq-1tuple", per_event)
    return run


def run_pyzmq(args, name, per_event):
    """Four processes, started last to first: subscriber, relay, relay,
    publisher; each prints its figures as a JSON line."""
    py = [sys.executable, str(ROOT / "experiments/api_ends.py")]
    addr = [f"tcp://127.0.0.1:{args.base_port + 90 + i}" for i in range(3)]  # publisher -> relay -> relay -> sub
    cmds = [("subscriber", py + ["zmq-sub", addr[2]]), ("relay-b", py + ["zmq-relay", addr[1], addr[2]]),
            ("relay-a", py + ["zmq-relay", addr[0], addr[1]]),
            ("publisher", py + ["zmq-pub", addr[0], f"{args.duration:g}", str(per_event)])]
    procs = [(n, subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)) for n, c in cmds]
    out, err = {}, ""
    for n, p in reversed(procs):  # the publisher ends first, then its END runs down the chain
        try:
            o, e = p.communicate(timeout=args.duration * 3 + 60)
        except subprocess.TimeoutExpired:
            for _, q in procs:
                q.kill()
            o, e = p.communicate()
            err = err or f"{n} did not end within {args.duration * 3 + 60:.0f} s"
        if p.returncode != 0:
            err = err or f"{n} exited {p.returncode}: {e[-400:]}"
        try:
            out[n] = json.loads(o.strip().splitlines()[-1])
        except (ValueError, IndexError):
            err = err or f"{n} printed no figures: {e[-400:]}"
    sub, pub = out.get("subscriber", {}), out.get("publisher", {})
    lost = sub.get("lost", 0) + max(0, pub.get("tuples", 0) - sub.get("tuples", 0) - sub.get("duplicated", 0))
    rep = {"ok": not err, "tuples_per_s": sub.get("tuples_per_s", 0), "tuples": sub.get("tuples", 0),
           "lost": lost, "duplicated": sub.get("duplicated", 0),
           "processes": [{"name": n, "rss_max_bytes": out.get(n, {}).get("peak_rss_mib", 0) * 1048576.0,
                          "user_s": out.get(n, {}).get("user_s", 0), "sys_s": out.get(n, {}).get("sys_s", 0)}
                         for n, _ in reversed(cmds)]}
    return row_of(name, rep, err)


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
    sub = subprocess.Popen([a.format(run=run) for a in subscriber],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # As many tuples as the duration allows: the publisher stops at it.
    pub = subprocess.run([a.format(run=run) for a in publisher],
                         capture_output=True, text=True, timeout=args.duration * 3 + 60)
    try:
        sub.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        sub.kill()
    row = finish(name, deploy, 60)
    try:  # api_ends' publishers: their sending thread's CPU time per event
        row["publisher"] = json.loads(pub.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        row["publisher"] = {}
    if pub.returncode != 0 and not row["error"]:
        row["ok"], row["error"] = False, f"the publisher exited {pub.returncode}: {pub.stderr[-400:]}"
    return row


# One 32 KiB event's tuples: (32768 - the 64-byte event header) // 128.
BATCH = 255
VARIANTS = {"loadgen": run_loadgen, "cpp": api_ends_cpp("cpp", "claim"), "cpp-batch": api_ends_cpp("cpp-batch", "offer"),
            "cpp-example": run_cpp_example, "python": python_ends(BATCH),
            "pyzmq": pyzmq_ends(BATCH), "python-1tuple": python_ends(1), "pyzmq-1tuple": pyzmq_ends(1)}


def skip(names, why):
    names = [n for n in names if n in VARIANTS]
    for n in names:
        del VARIANTS[n]
    if names:
        print(f"api_bench.py: {why}: the rows {', '.join(names)} are skipped", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, default=ROOT / "build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5, help="seconds each run sends")
    ap.add_argument("--acks", action="store_true", help="acks=on on every link")
    ap.add_argument("--base-port", type=int, default=33400)
    ap.add_argument("--json", action="store_true", help="the rows as JSON instead of the table")
    ap.add_argument("--rows", default=",".join(VARIANTS),
                    help="which rows, comma-separated (loadgen first: the others' ratio is to it)")
    args = ap.parse_args()
    args.build = args.build.resolve()
    for name in set(VARIANTS) - set(args.rows.split(",")):
        del VARIANTS[name]
    # The Python module (python/), where this build has it.
    if list((args.build / "python").glob("sluice*.so")):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.build / "python"),
                                                                  os.environ.get("PYTHONPATH")]))
    else:
        skip(["python", "python-1tuple"], f"no Python module in {args.build / 'python'}")
    # pyzmq is only this script's baseline (scripts/setup.sh installs it).
    if subprocess.run([sys.executable, "-c", "import zmq, numpy"], capture_output=True).returncode != 0:
        skip(["pyzmq", "pyzmq-1tuple"], f"pyzmq (or numpy) is not importable by {sys.executable} "
                                        "(python3 -m pip install pyzmq, as scripts/setup.sh does)")
    if not VARIANTS:
        sys.exit("api_bench.py: no rows to run")
    for need in ("deploy/sluice-deploy", "examples/sluice-example-publisher", "examples/sluice-example-subscriber",
                 "experiments/sluice-api-ends"):
        if not (args.build / need).is_file():
            sys.exit(f"api_bench.py: {args.build / need} not found (build it: /work/wt/build.sh or cmake --build)")

    runs = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="sluice-api-bench-") as t:
        tmp = Path(t)
        for r in range(args.rounds):
            for name, fn in VARIANTS.items():
                row = fn(args, tmp, f"{name}-{r}")
                runs[name].append(row)
                print(f"round {r + 1}/{args.rounds} {name}: {row['tuples_per_s']:.0f} tuples/s, "
                      f"{row['cpu_ns_per_tuple']:.1f} CPU ns per tuple, lost {row['lost']}, "
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
        cpu = [x["cpu_ns_per_tuple"] for x in good if x["cpu_ns_per_tuple"]]
        rows[-1]["cpu_ns_per_tuple"] = round(statistics.median(cpu), 2) if cpu else 0
        for k in ("thread_cpu_us_per_event", "fill_us_per_event"):
            got = [x["publisher"][k] for x in rs if k in x.get("publisher", {})]
            if got:
                rows[-1][k] = statistics.median(got)
    by = {row["name"]: row["tuples_per_s"] for row in rows}
    base = by.get("loadgen", 0)
    cpu_base = next((row["cpu_ns_per_tuple"] for row in rows if row["name"] == "loadgen"), 0)

    def paired(a, b):
        """The median over rounds of a's tuples/s over b's in the same round:
        a round that landed at half speed for both counts as one pair."""
        pairs = [x["tuples_per_s"] / y["tuples_per_s"] for x, y in zip(runs[a], runs[b])
                 if x["ok"] and y["ok"] and y["tuples_per_s"]]
        return round(statistics.median(pairs), 3) if pairs else 0

    for row in rows:
        row["ratio"] = row["tuples_per_s"] / base if base else 0
        if base:
            row["paired_ratio"] = paired(row["name"], "loadgen")
        if cpu_base and row["cpu_ns_per_tuple"]:
            row["cpu_ratio"] = round(row["cpu_ns_per_tuple"] / cpu_base, 3)
    targets = []
    for a, b, need in (("cpp", "loadgen", 0.95), ("cpp-batch", "loadgen", None), ("cpp-example", "loadgen", None),
                       ("python", "cpp", 0.8),
                       ("python", "cpp-batch", 0.8), ("python", "pyzmq", 3.0), ("python-1tuple", "pyzmq-1tuple", None)):
        if by.get(a) and by.get(b):
            targets.append({"ratio": f"{a} / {b}", "value": round(by[a] / by[b], 3), "paired": paired(a, b),
                            "target": need})
    if args.json:
        print(json.dumps(rows, indent=1))
        for t in targets:
            print(f"{t['ratio']}: {t['value']:.3f} (paired {t['paired']:.3f})", file=sys.stderr)
    else:
        print(f"128 B tuples, 32 KiB events, node -> node, acks {'on' if args.acks else 'off'}, "
              f"median of {args.rounds} alternated rounds of {args.duration:g} s\n")
        print("| ends | tuples/s | / loadgen | / loadgen, paired | CPU ns per tuple, all processes | / loadgen "
              "| lost | duplicated | peak RSS MiB (each process) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for row in rows:
            each = ", ".join(f"{p} {m}" for p, m in row["rss_mib"].items())
            cpu = f"{row['cpu_ns_per_tuple']:.1f}" if row["cpu_ns_per_tuple"] else "-"
            print(f"| {row['name']} | {row['tuples_per_s']:,.0f} | {row['ratio']:.3f} | "
                  f"{row.get('paired_ratio', 0):.3f} | {cpu} | {row.get('cpu_ratio', 0):.3f} | {row['lost']} | "
                  f"{row['duplicated']} | {row['peak_rss_mib']} ({each}) |")
        cpu = [r for r in rows if "thread_cpu_us_per_event" in r]
        if cpu:
            print("\n| ends | publisher's sending thread, CPU us per event | of it, the update |\n|---|---:|---:|")
            for r in cpu:
                fill = f"{r['fill_us_per_event']:.2f}" if "fill_us_per_event" in r else "-"
                print(f"| {r['name']} | {r['thread_cpu_us_per_event']:.2f} | {fill} |")
        if targets:
            print("\n| ratio | of the medians | paired, median of the rounds' | target |\n|---|---:|---:|---:|")
            for t in targets:
                need = f">= {t['target']:g}" if t["target"] else "stated"
                print(f"| {t['ratio']} | {t['value']:.3f} | {t['paired']:.3f} | {need} |")
    return 0 if all(not row["failed"] and not row["lost"] and not row["duplicated"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
