#!/usr/bin/env python3
"""Latency against the plain-socket floor.

In one run, for each tuple size (12 B, 128 B) and rate (1,000 / 10,000 /
100,000 events/s and full rate), one-tuple events through:

  plain     four sluice-plainrelay processes in latency mode (source -> relay
            -> relay -> sink on loopback, blocking sockets, TCP_NODELAY), each
            message as many bytes as sluice puts on the wire for a one-tuple
            event: 16 (frame header) + 64 (event header) + the tuple; one
            message per read and per write (the baseline)
  plain-batch  the same with --batch: the source writes all messages due in
            one write, relays copy what is there, the sink reads what is
            there (plain sockets batching when messages queue up, as sluice
            does; the one-message relays saturate below 100,000/s here)
  plain-epoll  (with --plain plain-epoll) the relays and the sink wait for each
            read in epoll_wait and then read without blocking, as sluice's
            receive stage waits: what a wake-up through epoll costs
  MODE      deploy/examples/pipeline.yaml (loadgen -> node -> node -> sink)
            with event_bytes=0, for each threading mode given (--set threads=MODE)

It reports the sink's p50 / p99 / max latency, tuples/s at the sink, CPU % of
one core per process, and the ratio of each sluice row's p50 and p99 to the
plain relays' at the same tuple size and rate. Rounds are interleaved (every
cell once per round, the systems' order rotating) and each figure is the
median over rounds; every run holds /tmp/cpu.lock alone.

Then, per round:
  idle      each system at --idle-rate events/s (10): CPU % per process, what
            an almost idle pipeline costs
  batched   each mode at full rate with 128 B tuples in 32 KiB events: tuples/s
            against the first mode's

A mode the binary rejects (sluice-deploy check ... --set threads=MODE fails,
in a build older than the `threads` key) is skipped with a row that says why. If
it rejects every mode because it has no `threads` key, the script runs the
pipeline as it is instead, as mode `default` (no threads key): sluice today.

With --before DIR (another build, say of the commit before a change), every
mode also runs with that build as system MODE@before, in the same rounds: a
change's effect on latency as a ratio measured in one run.

  python3 experiments/latency.py [--build build] [--rounds 2] [--duration 3]
      [--modes dedicated,shared,adaptive] [--rates 1000,10000,100000,0]
      [--tuple-bytes 12,128] [--set KEY=VALUE ...] [--quick] [--out DIR]

Writes DIR/latency.md (the tables), DIR/runs.csv (one row per run),
DIR/latency.png (the plot) and DIR/raw/ (each run's JSON). See
experiments/README.md.
"""

import argparse
import csv
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from repro.run import CpuLock, find_deploy, git_commit  # noqa: E402
from sweep import find_binary, free_ports, kill_group, reap, tail  # noqa: E402

PIPELINE = REPO / "deploy/examples/pipeline.yaml"
FRAME_HEADER = 16   # tcp carrier frame header (transport/event.h FrameHeader)
EVENT_HEADER = 64   # event header (transport/event.h EventHeader)
PLAIN = "plain"
PLAIN_BATCH = "plain-batch"
PLAINS = {PLAIN: [], PLAIN_BATCH: ["--batch"], "plain-epoll": ["--epoll"]}
# Columns of the per-process CPU: the plain relays' process and sluice's in the same place.
HOPS = ["source", "hop1", "hop2", "sink"]
PLAIN_NAMES = ["source", "relay1", "relay2", "sink"]
SLUICE_NAMES = ["loadgen", "node-a", "node-b", "sink"]

CSV_FIELDS = (["round", "kind", "system", "tuple_bytes", "event_bytes", "message_bytes", "rate",
               "duration_s", "ok", "error", "tuples", "tuples_per_s", "p50_us", "p99_us", "max_us"]
              + [f"cpu_pct_{h}" for h in HOPS] + ["inline_pct_nodes", "threads_seen",
                                                  "started_utc", "wall_s", "loadavg_1m", "raw"])


def log(msg):
    print(msg, flush=True)


def rate_name(r):
    return "full" if r == 0 else f"{r:,}"


# ---------------------------------------------------------------- plain relays

def run_plain(relay, variant, tuple_bytes, rate, duration, raw, tag):
    """Four sluice-plainrelay processes in latency mode; a row dict."""
    mb = FRAME_HEADER + EVENT_HEADER + tuple_bytes
    row = {"system": variant, "message_bytes": mb}
    if relay is None:
        row["error"] = "sluice-plainrelay not built (ninja -C BUILD sluice-plainrelay)"
        return row
    p1, p2, p3 = free_ports(3)
    common = ["--message-bytes", str(mb), "--congestion", "reno"] + PLAINS[variant]  # reno: pipeline.yaml's
    cmds = [
        ("sink", [str(relay), "sink", "--listen", str(p3), "--json"] + common),
        ("relay2", [str(relay), "relay", "--listen", str(p2), "--connect", f"127.0.0.1:{p3}"] + common),
        ("relay1", [str(relay), "relay", "--listen", str(p1), "--connect", f"127.0.0.1:{p2}"] + common),
        ("source", [str(relay), "source", "--connect", f"127.0.0.1:{p1}", "--duration", f"{duration:g}",
                    "--rate", f"{rate:g}"] + common),
    ]
    errlog = raw / f"{tag}.stderr"
    procs, usage, codes = {}, {}, {}
    with open(errlog, "w") as err:
        try:
            for name, cmd in cmds:
                err.write("$ " + " ".join(cmd) + "\n")
                err.flush()
                procs[name] = subprocess.Popen(cmd, stdout=subprocess.PIPE if name == "sink" else subprocess.DEVNULL,
                                               stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
                if name != "source":
                    time.sleep(0.05)  # listening before its upstream connects (connect retries anyway)
            # Reaped with wait4 for each one's CPU time (rusage of its whole life:
            # set-up is a few syscalls, the rest is moving messages).
            codes, usage = reap(procs, time.monotonic() + duration + 30)
            sink_out = procs["sink"].stdout.read().decode() if "sink" in codes else ""
        finally:
            for p in procs.values():
                if p.returncode is None:
                    kill_group(p)
    bad = {n: c for n, c in codes.items() if c != 0}
    if len(codes) < len(procs) and not bad:
        row["error"] = f"plain relays did not finish within {duration + 30:.0f} s"
        return row
    if bad:
        row["error"] = f"plain relay exit codes {bad}: {tail(errlog)}"
        return row
    try:
        res = json.loads(sink_out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        row["error"] = f"plain sink printed no JSON: {sink_out!r}"
        return row
    res["cpu_s"] = {n: usage[n].ru_utime + usage[n].ru_stime if n in usage else None for n in PLAIN_NAMES}
    (raw / f"{tag}.json").write_text(json.dumps(res, sort_keys=True) + "\n")
    secs = res.get("seconds") or 0
    lat = res.get("latency_us") or {}
    row.update(ok="true", tuples=res.get("messages", 0), tuples_per_s=res.get("messages_per_s", 0),
               p50_us=lat.get("p50"), p99_us=lat.get("p99"), max_us=lat.get("max"), raw=f"raw/{tag}.json")
    # CPU over the sink's measured interval (first message to end of stream),
    # the interval sluice's processes measure theirs over.
    for h, n in zip(HOPS, PLAIN_NAMES):
        row[f"cpu_pct_{h}"] = f"{100 * res['cpu_s'][n] / secs:.2f}" if secs > 0 else ""
    if res.get("out_of_order"):
        row.update(ok="false", error=f"{res['out_of_order']} messages out of order")
    return row


# ---------------------------------------------------------------- sluice

def mode_sets(mode):
    """`adaptive`, or `adaptive+credit_batch=32+...`: the threads key and keys of that system only."""
    threads, *keys = mode.split("+")
    return ([] if threads == "default" else [f"threads={threads}"]) + keys


def check_mode(deploy, yaml, mode, extra):
    """'' if sluice-deploy accepts the mode, else its error."""
    cmd = [str(deploy), "check", str(yaml)]
    for s in mode_sets(mode) + extra:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if p.returncode == 0:
        return ""
    return (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]


def port_base():
    """A base_port whose links' ports (base + 100, 200, 300) are free now."""
    for base in range(34200, 60000, 1000):
        try:
            for i in (1, 2, 3):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind(("0.0.0.0", base + 100 * i))
                finally:
                    s.close()
            return base
        except OSError:
            continue
    return 34200


def run_sluice(deploy, yaml, mode, tuple_bytes, event_bytes, rate, duration, extra, raw, tag):
    row = {"system": mode}
    rundir = Path(tempfile.mkdtemp(prefix=f"sluice-latency-{tag}-"))
    sets = [f"tuple_bytes={tuple_bytes}", f"event_bytes={event_bytes}", f"rate={rate:g}",
            f"duration_s={duration:g}", "progress_s=0", f"base_port={port_base()}"] + mode_sets(mode) + extra
    cmd = [str(deploy), "run", str(yaml), "--json", "--run-dir", str(rundir), "--timeout", f"{duration * 4 + 30:g}"]
    for s in sets:
        cmd += ["--set", s]
    errlog = raw / f"{tag}.stderr"
    with open(errlog, "w") as err:
        err.write("$ " + " ".join(cmd) + "\n")
        err.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, text=True, cwd=REPO)
        try:
            out, _ = proc.communicate(timeout=duration * 4 + 60)
        except subprocess.TimeoutExpired:
            out = ""
            row["error"] = "timed out"
        finally:
            kill_group(proc)
    (raw / f"{tag}.json").write_text(out)
    row["raw"] = f"raw/{tag}.json"
    if row.get("error"):
        return row
    try:
        rep = json.loads(out)
    except ValueError:
        row["error"] = f"sluice-deploy exited {proc.returncode} without a report: {tail(errlog)}"
        return row
    if not rep.get("ok"):
        row["error"] = f"{rep.get('error') or 'failed'} (run dir kept: {rundir})"
        return row
    if any(rep.get(k) for k in ("lost", "duplicated", "corrupt")):
        row["error"] = f"lost {rep.get('lost')}, duplicated {rep.get('duplicated')}, corrupt {rep.get('corrupt')}"
        return row
    lat = rep.get("latency_us") or {}
    row.update(ok="true", tuples=rep.get("tuples", 0), tuples_per_s=f"{rep.get('tuples_per_s', 0):.1f}",
               p50_us=lat.get("p50"), p99_us=lat.get("p99"), max_us=lat.get("max"))
    # CPU % of one core: user + system seconds over the process's measured
    # interval (first event to end of stream), all instances together.
    by_name = {p.get("name"): p for p in rep.get("processes") or []}
    for h, n in zip(HOPS, SLUICE_NAMES):
        p = by_name.get(n) or {}
        wall = p.get("wall_s") or 0
        row[f"cpu_pct_{h}"] = f"{100 * ((p.get('user_s') or 0) + (p.get('sys_s') or 0)) / wall:.2f}" if wall else ""
    # What the nodes say they ran as (processes report `threads` once the key
    # exists) and the share of events their receiving thread took through
    # process and send itself (inline_events: adaptive, shared).
    nodes = [p for p in rep.get("processes") or [] if p.get("role") == "node"]
    seen = sorted({p["threads"] for p in nodes if p.get("threads")})
    row["threads_seen"] = ",".join(seen)
    if "inline_events" in (nodes[0] if nodes else {}):
        ev = sum(p.get("events_in") or 0 for p in nodes)
        row["inline_pct_nodes"] = f"{100 * sum(p.get('inline_events') or 0 for p in nodes) / ev:.1f}" if ev else ""
    threads = mode.split("+")[0]
    if threads != "default" and seen and seen != [threads]:
        row.update(ok="false", error=f"asked for threads={threads}, the nodes report {','.join(seen)}")
    shutil.rmtree(rundir, ignore_errors=True)
    return row


# ---------------------------------------------------------------- tables and plot

def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def med(rows, key):
    vals = [num(r.get(key)) for r in rows if r.get("ok") == "true"]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt(v, digits=1):
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def fmt_ratio(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}" if v >= 0.01 else f"{v:.1g}"


def ratio(a, b):
    return a / b if a is not None and b else None


def cell_rows(rows, **want):
    return [r for r in rows if all(str(r.get(k)) == str(v) for k, v in want.items())]


def errors_of(rows):
    errs = sorted({r["error"] for r in rows if r.get("ok") != "true" and r.get("error")})
    return "; ".join(e[:160] for e in errs)


def cpu_cells(rs):
    return " / ".join(fmt(med(rs, f"cpu_pct_{h}"), 1) for h in HOPS)


def saturated(rs, rate):
    """The sink saw under 90% of the rate asked for: its latency is queueing."""
    tps = med(rs, "tuples_per_s")
    return bool(rate) and tps is not None and tps < 0.9 * float(rate)


def write_report(out, rows, args, systems, header):
    md = [f"# Latency against the plain-socket floor\n", header, ""]
    okrows = [r for r in rows if r.get("ok") == "true"]
    rounds = max((int(r["round"]) for r in rows if r["kind"] != "skipped"), default=0)
    md.append(f"Medians of {rounds} round(s); each run {args.duration:g} s. p50 / p99 x plain: the row's "
              "median against the plain relays' at the same tuple size and rate (below 1: faster than "
              "they are). CPU %: user + system time over the measured interval (first message to end), "
              "% of one core, per process: source or loadgen / relay1 or node-a / relay2 or node-b / "
              "sink. Saturated: the sink saw under 90% of the rate asked for (then latency is queueing; "
              "`sat.`: no ratio against a saturated baseline). Inline %: the share of the nodes' events "
              "their receiving thread ran through process and send itself, no hand-off (`inline_events`). "
              f"1-minute load average over the runs: median {fmt(med(rows, 'loadavg_1m'), 2)}, max "
              f"{fmt(max((num(r.get('loadavg_1m')) or 0 for r in rows), default=None), 2)} "
              "(other work on the machine: the runs hold the CPU lock, builds do not).\n")
    skipped = [r for r in rows if r["kind"] == "skipped"]
    for r in skipped:
        md.append(f"- mode `{r['system']}` skipped: {r['error']}")
    if skipped:
        md.append("")
    rows = [r for r in rows if r["kind"] != "skipped"]
    refs = [p for p in PLAINS if p in systems]
    md.append("| tuple B | rate (events/s) | system | tuples/s | p50 us | p99 us | max us | "
              + "".join(f"p50 x {p} | p99 x {p} | " for p in refs) + "CPU % per process | inline % | runs ok | note |")
    md.append("|---|---|---|---|---|---|---|" + "---|---|" * len(refs) + "---|---|---|---|")
    for tb in args.tuple_bytes:
        for rate in args.rates:
            base = {p: cell_rows(rows, kind="latency", system=p, tuple_bytes=tb, rate=rate) for p in refs}
            for sysname in systems:
                rs = cell_rows(rows, kind="latency", system=sysname, tuple_bytes=tb, rate=rate)
                if not rs:
                    continue
                p50, p99, tps = med(rs, "p50_us"), med(rs, "p99_us"), med(rs, "tuples_per_s")
                nok = sum(r.get("ok") == "true" for r in rs)
                ratios = "".join(
                    "| | " if p == sysname else
                    "sat. | sat. | " if saturated(base[p], rate) else
                    f"{fmt_ratio(ratio(p50, med(base[p], 'p50_us')))} | {fmt_ratio(ratio(p99, med(base[p], 'p99_us')))} | "
                    for p in refs)
                note = errors_of(rs)
                if not note and saturated(rs, rate):
                    note = f"saturated: {tps / float(rate):.0%} of the rate"
                md.append(f"| {tb} | {rate_name(rate)} | {sysname} | {fmt(tps, 0)} | "
                          f"{fmt(p50)} | {fmt(p99)} | {fmt(med(rs, 'max_us'))} | {ratios}{cpu_cells(rs)} | "
                          f"{fmt(med(rs, 'inline_pct_nodes'), 0)} | {nok}/{len(rs)} | {note} |")
    idle = [r for r in rows if r["kind"] == "idle"]
    if idle:
        md.append(f"\n## Idle: {args.idle_rate:g} events/s ({args.tuple_bytes[-1]} B tuples), CPU % of one core "
                  "per process\n")
        md.append("| system | source/loadgen | hop 1 | hop 2 | sink | max | runs ok | error |")
        md.append("|---|---|---|---|---|---|---|---|")
        for sysname in systems:
            rs = cell_rows(idle, system=sysname)
            if not rs:
                continue
            cells = [med(rs, f"cpu_pct_{h}") for h in HOPS]
            mx = max((c for c in cells if c is not None), default=None)
            md.append(f"| {sysname} | " + " | ".join(fmt(c, 2) for c in cells) +
                      f" | {fmt(mx, 2)} | {sum(r.get('ok') == 'true' for r in rs)}/{len(rs)} | {errors_of(rs)} |")
    batched = [r for r in rows if r["kind"] == "batched"]
    if batched:
        modes = [s for s in systems if s not in PLAINS]
        ref = med(cell_rows(batched, system=modes[0]), "tuples_per_s") if modes else None
        md.append(f"\n## Batched: 128 B tuples in 32 KiB events, full rate (tuples/s against `{modes[0]}`)\n")
        md.append(f"| mode | tuples/s | x {modes[0]} | x {modes[0]}, same round (median, range) | p50 us | "
                  "p99 us | CPU % per process | inline % | runs ok | error |")
        md.append("|---|---|---|---|---|---|---|---|---|---|")
        for m in modes:
            rs = cell_rows(batched, system=m)
            if not rs:
                continue
            t = med(rs, "tuples_per_s")
            # Runs of one round ran next to each other: their ratio leaves out
            # what the machine did between rounds.
            first = {r["round"]: num(r.get("tuples_per_s")) for r in cell_rows(batched, system=modes[0])
                     if r.get("ok") == "true"}
            paired = sorted(num(r.get("tuples_per_s")) / first[r["round"]] for r in rs
                            if r.get("ok") == "true" and first.get(r["round"]))
            pr = (f"{statistics.median(paired):.3f} ({paired[0]:.2f}-{paired[-1]:.2f})" if paired else "-")
            md.append(f"| {m} | {fmt(t, 0)} | {fmt(ratio(t, ref), 3)} | {pr} | {fmt(med(rs, 'p50_us'))} | "
                      f"{fmt(med(rs, 'p99_us'))} | {cpu_cells(rs)} | {fmt(med(rs, 'inline_pct_nodes'), 0)} | "
                      f"{sum(r.get('ok') == 'true' for r in rs)}/{len(rs)} | {errors_of(rs)} |")
    if args.rates and (out / "latency.png").exists():  # plot() ran first; no matplotlib, no plot
        md.append("\n![p50, p99 and CPU by rate](latency.png)\n")
    else:
        md.append("")
    md.append(f"One row per run: [runs.csv](runs.csv); each run's JSON and log: raw/ where it ran "
              "(not committed). "
              f"{len(okrows)} of {len(rows)} runs ok.")
    (out / "latency.md").write_text("\n".join(md) + "\n")


def plot(out, rows, args, systems):
    (out / "latency.png").unlink(missing_ok=True)  # none from an earlier report left to link
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        log(f"no plot: matplotlib is missing ({e}); run with /usr/bin/python3 (python3-matplotlib)")
        return
    if not args.rates:
        return  # no latency cells (only idle or batched runs): nothing by rate to draw
    tbs = args.tuple_bytes
    fig, axes = plt.subplots(len(tbs), 3, figsize=(15, 4 * len(tbs)), squeeze=False)
    xs = list(range(len(args.rates)))
    for i, tb in enumerate(tbs):
        for j, sysname in enumerate(systems):
            plain = sysname in PLAINS
            style = dict(marker="o", color=("k" if sysname == PLAIN else "0.5") if plain else f"C{j}",
                         linestyle="--" if plain else "-", label=sysname)
            for k, key in enumerate(("p50_us", "p99_us")):
                pts = [(x, med(cell_rows(rows, kind="latency", system=sysname, tuple_bytes=tb, rate=r), key))
                       for x, r in zip(xs, args.rates)]
                pts = [(x, y) for x, y in pts if y]
                if pts:
                    axes[i][k].plot(*zip(*pts), **style)
            pts = []
            for x, r in zip(xs, args.rates):
                rs = cell_rows(rows, kind="latency", system=sysname, tuple_bytes=tb, rate=r)
                cpu = [med(rs, f"cpu_pct_{h}") for h in HOPS[1:3]]  # the two middle hops
                cpu = [c for c in cpu if c is not None]
                if cpu:
                    pts.append((x, statistics.mean(cpu)))
            if pts:
                axes[i][2].plot(*zip(*pts), **style)
        for k, (title, ylabel) in enumerate((("p50", "latency us (log)"), ("p99", "latency us (log)"),
                                             ("CPU of the middle hops", "% of one core, mean of 2"))):
            a = axes[i][k]
            a.set_xticks(xs)
            a.set_xticklabels([rate_name(r) for r in args.rates])
            a.set(xlabel="events/s (one tuple each)", ylabel=ylabel, title=f"{title}, {tb} B tuples")
            if k < 2:
                a.set_yscale("log")
            a.grid(alpha=0.3)
            a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=90)
    plt.close(fig)


# ---------------------------------------------------------------- main

def csv_list(kind):
    return lambda s: [kind(x) for x in s.split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--before", metavar="DIR",
                    help="another build (e.g. of the commit before a change): each mode runs with it "
                    "too, as system MODE@before, interleaved with this build's in every round")
    ap.add_argument("--deployment", default=str(PIPELINE), help="the sluice pipeline (default: pipeline.yaml)")
    ap.add_argument("--modes", type=csv_list(str), default=["dedicated", "shared", "adaptive"],
                    help="threading modes, comma-separated (`default`: no threads key); a mode may carry keys of "
                    "its own, MODE+KEY=VALUE[+...] (adaptive+credit_batch=32): variants side by side in one run")
    ap.add_argument("--rates", type=csv_list(float), default=[1000, 10000, 100000, 0],
                    help="events/s, comma-separated; 0: full rate")
    ap.add_argument("--tuple-bytes", type=csv_list(int), default=[12, 128])
    ap.add_argument("--plain", type=csv_list(str), default=[PLAIN, PLAIN_BATCH],
                    help=f"plain-relay baselines, comma-separated ({PLAIN}: one message per read and write; "
                    f"{PLAIN_BATCH}: what is there; plain-epoll: one message per read, each read after an epoll_wait, "
                    "as sluice's receive stage waits)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=float, default=3, help="seconds each run sends")
    ap.add_argument("--idle-rate", type=float, default=10, help="events/s of the idle runs (0: none)")
    ap.add_argument("--no-batched", action="store_true", help="skip the 32 KiB-event throughput runs")
    ap.add_argument("--set", action="append", default=[], help="more keys for the sluice runs, KEY=VALUE")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run of about a minute: 128 B tuples, 1 round of 1 s runs")
    ap.add_argument("--out", help="default: runs/latency-<date>")
    ap.add_argument("--report-only", action="store_true",
                    help="no runs: redraw OUT/latency.md and latency.png from OUT/runs.csv and OUT/meta.json")
    args = ap.parse_args()
    if args.report_only:
        if not args.out:
            sys.exit("latency.py: --report-only needs --out DIR")
        out = Path(args.out)
        meta = json.loads((out / "meta.json").read_text())
        rows = list(csv.DictReader(open(out / "runs.csv")))
        for k in ("duration", "idle_rate", "tuple_bytes", "rates"):
            setattr(args, k, meta[k])
        plot(out, [r for r in rows if r["kind"] != "skipped"], args, meta["systems"])
        write_report(out, rows, args, meta["systems"], meta["header"])
        print(open(out / "latency.md").read())
        return 0
    if args.quick:
        args.tuple_bytes, args.rounds, args.duration = [128], 1, 1
    args.rates = [int(r) if r == int(r) else r for r in args.rates]
    if args.idle_rate == int(args.idle_rate):
        args.idle_rate = int(args.idle_rate)

    deploy = find_deploy(args.build)
    if deploy is None:
        sys.exit(f"latency.py: no sluice-deploy under {args.build} (ninja -C {args.build} sluice-deploy "
                 "sluice-loadgen sluice-node sluice-sink)")
    relay = find_binary(args.build, "experiments", "sluice-plainrelay")
    out = Path(args.out or REPO / "runs" / ("latency-" + datetime.date.today().isoformat()))
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)

    modes, skipped = [], {}
    for m in args.modes:
        why = check_mode(deploy, args.deployment, m, args.set)
        if why:
            skipped[m] = why
            log(f"mode {m}: skipped, sluice-deploy rejects it: {why}")
        else:
            modes.append(m)
    if not modes and skipped and all("threads" in w for w in skipped.values()) and "default" not in args.modes:
        log("no threading mode is accepted (no `threads` key in this build): running the pipeline as it is, "
            "as mode `default`")
        modes = ["default"]
    bad = [p for p in args.plain if p not in PLAINS]
    if bad:
        sys.exit(f"latency.py: --plain {','.join(bad)}: the baselines are {', '.join(PLAINS)}")
    deploy_before = None
    if args.before:
        deploy_before = find_deploy(args.before)
        if deploy_before is None:
            sys.exit(f"latency.py: --before {args.before}: no sluice-deploy there")
        for m in list(modes):
            why = check_mode(deploy_before, args.deployment, m, args.set)
            if why:
                skipped[f"{m}@before"] = why
                log(f"mode {m}@before: skipped, the --before build rejects it: {why}")
            else:
                modes.append(f"{m}@before")
    systems = args.plain + modes

    cells = [("latency", tb, 0, r) for tb in args.tuple_bytes for r in args.rates]
    if args.idle_rate > 0:
        cells.append(("idle", args.tuple_bytes[-1], 0, args.idle_rate))
    if not args.no_batched and modes:
        cells.append(("batched", 128, 32768, 0))
    total = args.rounds * sum(len(modes if kind == "batched" else systems) for kind, *_ in cells)
    header = (f"`{' '.join(['python3 experiments/latency.py'] + sys.argv[1:])}`, "
              f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}, commit {git_commit()}, "
              f"{socket.gethostname()}, {os.cpu_count()} cores; deployment "
              f"{os.path.relpath(args.deployment, REPO)} with event_bytes=0 (one tuple per event)"
              + (f", --set {' '.join(args.set)}" if args.set else "") +
              f". Plain relays: sluice-plainrelay latency mode, messages of {FRAME_HEADER} + {EVENT_HEADER} + "
              "tuple bytes (what tcp-opt puts on the wire for a one-tuple event).")
    log(f"{total} runs of {args.duration:g} s: systems {', '.join(systems)}; out {out}")
    (out / "meta.json").write_text(json.dumps(
        {"header": header, "systems": systems, "duration": args.duration, "idle_rate": args.idle_rate,
         "tuple_bytes": args.tuple_bytes, "rates": args.rates}, indent=1) + "\n")

    rows, n, t_start = [], 0, time.monotonic()
    csv_path = out / "runs.csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, restval="", extrasaction="ignore")
        w.writeheader()
        for m, why in skipped.items():  # a row each, so the CSV says what was left out
            rows.append({"round": 0, "kind": "skipped", "system": m, "ok": "false", "error": why})
            w.writerow(rows[-1])
        for rnd in range(1, args.rounds + 1):
            for kind, tb, eb, rate in cells:
                order = systems if kind != "batched" else modes
                k = (rnd - 1) % len(order)
                for sysname in order[k:] + order[:k]:  # rotate: no system always goes first
                    n += 1
                    tag = f"r{rnd}-{kind}-{sysname}-{tb}B-{eb}-{rate_name(rate).replace(',', '')}"
                    with CpuLock():
                        started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                        t0 = time.monotonic()
                        if sysname in PLAINS:
                            row = run_plain(relay, sysname, tb, rate, args.duration, raw, tag)
                        else:
                            mode, _, which = sysname.partition("@")
                            row = run_sluice(deploy_before if which else deploy, args.deployment, mode,
                                             tb, eb, rate, args.duration, args.set, raw, tag)
                            row["system"] = sysname
                        wall = time.monotonic() - t0
                        row["loadavg_1m"] = f"{os.getloadavg()[0]:.2f}"
                    row.update({"round": rnd, "kind": kind, "tuple_bytes": tb, "event_bytes": eb,
                                "rate": rate, "duration_s": f"{args.duration:g}", "started_utc": started,
                                "wall_s": f"{wall:.2f}"})
                    row.setdefault("ok", "false")
                    rows.append(row)
                    w.writerow(row)
                    f.flush()
                    what = (f"p50 {fmt(num(row.get('p50_us')))} us, p99 {fmt(num(row.get('p99_us')))} us, "
                            f"{fmt(num(row.get('tuples_per_s')), 0)} tuples/s, CPU "
                            + " / ".join(str(row.get(f'cpu_pct_{h}', '')) for h in HOPS)
                            if row["ok"] == "true" else f"FAILED: {row.get('error', '')[:200]}")
                    log(f"[{n}/{total} {time.monotonic() - t_start:.0f} s] round {rnd} {kind} {sysname} "
                        f"{tb} B at {rate_name(rate)}: {what}")
    plot(out, [r for r in rows if r["kind"] != "skipped"], args, systems)
    write_report(out, rows, args, systems, header)
    print(open(out / "latency.md").read())
    rows = [r for r in rows if r["kind"] != "skipped"]
    failed = sum(r["ok"] != "true" for r in rows)
    if failed:
        log(f"{failed} of {len(rows)} runs failed (error column of {csv_path})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
