#!/usr/bin/env python3
"""Regenerates the Borealis study's figures (seed 002) from sluice runs.

  python3 experiments/reproduce.py --quick      # a few minutes: every figure, fewer cells; CI
  python3 experiments/reproduce.py              # the full set (at most ~45 min on 2 cores)
  python3 experiments/reproduce.py --report-only --out DIR   # redraw from DIR/runs.csv
  python3 experiments/reproduce.py --check-only --out DIR    # only re-check DIR's report

1. Plans the runs each figure needs (presets x tuple sizes x event sizes x
   instances, spin against block waits, one node per operator, a pass-through
   chain, the cost model's calibration and test set-ups).
2. Runs each as `sluice-deploy run FILE --json --set ...`, one at a time, each
   under flock(/tmp/cpu.lock) so no other pipeline or benchmark on this machine
   runs beside it, and prints one progress line per run.
3. Keeps every run as a row of OUT/runs.csv: the commit, the machine's cores
   and clock, the foreign load seen during the run (cores busy with work that
   was not this run's), what it measured, and every process's counters (for
   the cost model).
4. Draws one plot per figure (matplotlib, Agg) into OUT/plots and writes the
   report (experiments/REPORT.md; with --quick, OUT/REPORT.md): per figure the
   plot and a table of what the study saw, what sluice shows here, the ratio.
   Every sluice number in a table names its source: `COL=VALUE <- median rA rB`,
   the CSV column and the run ids it is the median of.
5. Checks the report against the CSV (check_report): every figure has a plot
   and a table, no series is empty, every source's value is the median of its
   runs. Exits 1 if a run failed or a check did not hold.

The study's equations are in model.py; the numbers it reports are in STUDY
below, each with where the study says it.
"""

import argparse
import csv
import datetime
import fcntl
import json
import os
import re
import resource
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
import model  # noqa: E402
from sweep import kill_group, parse_report, tail  # noqa: E402

LOCK = "/tmp/cpu.lock"
PIPELINE = REPO / "deploy/examples/pipeline.yaml"
EVENT_HEADER = 64      # bytes of an event's header (pipeline.yaml: 64 + 255 x 128 = 32704)
SLOT_OVERHEAD = 80     # what a slot holds beyond the event (sweep.py)
DEFAULT_SLOT = 65536
PRESETS = ["original", "tcp-opt", "fabric-opt", "ucx-opt"]
USER_LEVEL = ["fabric-opt", "ucx-opt"]  # the study's mx-opt: the carriers that are not sockets
WATTS_PER_CORE = 25.0   # section 5.2.2: "a per-core power consumption of 25 Watts"
ZB_YEARS = [(2010, 1.8), (2015, 8.0), (2020, 35.0)]
SRC_ARROW = "<-"

# What the study reports, with where. Ratios are "x of the baseline".
STUDY = {
    "tcp_vs_orig_small": (1.5, "5.1: tcp-opt up to 50% over original at 128 B tuples"),
    "tcp_vs_orig_large": (3.0, "5.1: up to 200% at 4096 B tuples"),
    "ul_vs_tcp_small": (1.30, "5.1: mx-opt up to 30% over tcp-opt for small tuples"),
    "ul_vs_tcp_large": (1.34, "5.1: up to 34% for large tuples"),
    "max_gbps_opt": (8.0, "5.2.1: optimized stacks reach 8 Gb/s on Setup-B"),
    "max_gbps_orig": (4.0, "5.2.1: original about 4 Gb/s on Setup-B"),
    "block_vs_spin_8": (1.44, "5.1, Fig 6: 44% more with spin loops removed, 8 instances"),
    "cpe_u_tcp_vs_orig": (0.63, "5.2.1: CPE_u reduced by up to 37%"),
    "cpe_s_ul_vs_tcp": (0.16, "5.2.1: mx-opt reduces CPE_s by up to 84%"),
    "kwh_2020_orig_small": (30.0, "5.2.2: original, small tuples, 2020: about 30 billion kWh"),
    "energy_tcp_saving_large": (0.6118, "5.2.2: tcp-opt saves up to 61.18% for large events"),
    "energy_ul_saving_large": (0.03, "5.2.2: mx-opt 3% below tcp-opt for large events"),
    "energy_ul_saving_small": (0.20, "5.2.2, Fig 9: mx-opt 20% below tcp-opt for one-tuple events"),
    "energy_tcp_saving_small": (0.0, "5.2.2, Fig 9: tcp-opt does not improve on original for small events"),
    "cores_tcp_saving_min": (0.12, "5.2.3: tcp-opt saves from 12% ..."),
    "cores_tcp_saving_max": (0.40, "5.2.3: ... to 40% of servers"),
    "cores_small_vs_large": (10.0, "5.2.3: small tuples need an order of magnitude more servers"),
    "union_vs_filter": (1.0, "5.2.4: filter and union have the same CPE_p"),
    "aggregate_vs_filter_servers": (2.19, "5.2.4: aggregate needs up to 119% more servers than filter"),
    "tbps_1024_orig": (1.0, "5.3: up to 1 Tb/s per server with 1024 cores, large tuples"),
    "tbps_1024_opt": (2.0, "5.3: optimized stacks twice that, 2 Tb/s"),
    "gbps_per_core_opt": (2.0, "1, 5.3: the optimized stack needs up to 2 Gb/s per core"),
    "filter_overhead": (0.30, "5.4: the filter costs up to 30% against a pass-through operator"),
    # Seed 004 (Rachou, Siddhi): 50 bursts of 1000 events, Table 4.1 and 4.2.
    "burst_1000_far": (32.31, "004 Table 4.1: 1000 events every 1000 ms, mean burst ms"),
    "burst_1000_100": (62.27, "004 Table 4.1: 1000 events every 100 ms, mean burst ms"),
    "burst_constant": (29.73, "004 Table 4.1: a constant stream, ms per 1000 events"),
    "burst_head_tail": (5.77, "004 Table 4.2: first 100 events over last 100, 1000 ms apart"),
}

CSV_FIELDS = [
    "rid", "group", "setup", "preset", "carrier", "tuple_bytes", "event_bytes", "instances",
    "wait", "repeat", "duration_s", "commit", "host", "host_cores", "clock_ghz",
    "foreign_cores", "loadavg_1m", "started_utc", "wall_s", "ok", "error",
    "tuples", "tuples_per_s", "gbps", "events", "tuples_per_event",
    "node_cpe_p", "node_cpe_u", "node_cpe_s", "node_cpe_i", "node_cpb_p", "node_cores",
    "total_cycles_per_event", "cpu_util", "latency_p50_us", "latency_p99_us",
    "burst_ms", "burst_events", "bursts", "burst_processing_p50_us", "burst_processing_max_us",
    "burst_head_p50_us", "burst_tail_p50_us", "threads",
    "file", "sets", "procs", "raw",
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ the plan

class Spec:
    """One run: a deployment file, its --set overrides, and what to record."""

    def __init__(self, group, setup, yaml, sets, **params):
        self.group, self.setup, self.yaml, self.sets = group, setup, yaml, dict(sets)
        self.params = params
        self.rid = ""

    def label(self):
        p = self.params
        bits = [self.group, self.setup, p.get("preset", "")]
        if p.get("carrier"):
            bits[-1] += "/" + p["carrier"]
        if p.get("tuple_bytes") != "":
            bits.append(f"t{p.get('tuple_bytes')}")
        if p.get("event_bytes") != "":
            bits.append(f"e{p.get('event_bytes')}")
        bits.append(f"i{p.get('instances', 1)}")
        if p.get("wait"):
            bits.append(p["wait"])
        if p.get("threads"):
            bits.append(f"threads={p['threads']}")
        return " ".join(b for b in bits if b)


def sets_for(preset, tuple_bytes, event_bytes, instances=1, wait="", carrier="", extra=None):
    s = {"preset": preset, "tuple_bytes": tuple_bytes, "event_bytes": event_bytes,
         "instances": instances}
    if carrier:
        s["fabric_provider" if preset == "fabric-opt" else "ucx_tls"] = carrier
    elif preset == "ucx-opt":
        # The study's user-level carrier over a network: UCX over tcp, as
        # ucx-opt was before ucx_tls: auto made one host shared memory (the
        # calibration's "ucx-opt"; "ucx-opt/sm" is a carrier of its own).
        s["ucx_tls"] = "tcp"
    if wait:
        s["wait"] = wait
    if event_bytes + SLOT_OVERHEAD > DEFAULT_SLOT:
        s["slot_bytes"] = event_bytes + SLOT_OVERHEAD
    s.update(extra or {})
    return s


def spec(group, setup, preset, t, e, inst=1, wait="", carrier="", yaml=None, extra=None):
    return Spec(group, setup, yaml or str(PIPELINE),
                sets_for(preset, t, e, inst, wait, carrier, extra),
                preset=preset, carrier=carrier, tuple_bytes=t, event_bytes=e,
                instances=inst, wait=wait)


# The bursts run in both: dedicated is how a node ran before issue 17's
# threading modes, adaptive the default since.
BURST_THREADS = ("dedicated", "adaptive")


def fits(t, e):
    return e == 0 or e >= t + EVENT_HEADER


class Sizes:
    """Which cells each mode runs."""

    def __init__(self, quick):
        self.quick = quick
        if quick:
            self.tuples = [128, 1024, 4096]
            self.events = [0, 32768]
            self.instances = [1]
            self.extra_instances = [2]        # tcp-opt at 128 B / 32 KiB only
            self.spin_instances = [1, 2]
            self.op_tuples = 12
            self.bursts = [(1000, 20), (1000, 200), (500, 100), (2000, 100)]
        else:
            self.tuples = [12, 128, 1024, 4096]
            self.events = [0, 4096, 32768, 65536]
            self.instances = [1, 2, 4]
            self.extra_instances = []
            self.spin_instances = [1, 2, 4, 8]
            self.op_tuples = 12
            self.bursts = [(1000, 10), (1000, 100), (1000, 300), (1000, 1000),
                           (500, 100), (2000, 100)]


def operator_yamls(tmp):
    """The study's operator comparison (5.2.4), 12-byte tuples, one node between
    loadgen(s) and a sink (as experiments/operators.sh), and the group-by-having
    query of seed 001 (deploy/examples/esper.yaml's node-b)."""
    files = {}
    bodies = {
        "pass": "processes:\n  - {name: loadgen, role: loadgen}\n  - {name: node, role: node}\n"
                "  - {name: sink, role: sink}\n",
        "filter": "processes:\n  - {name: loadgen, role: loadgen}\n"
                  "  - {name: node, role: node, operators: [{filter: {where: \"key < 512\"}}]}\n"
                  "  - {name: sink, role: sink}\n",
        "union": "processes:\n  - {name: gen-1, role: loadgen}\n  - {name: gen-2, role: loadgen}\n"
                 "  - {name: node, role: node}\n  - {name: sink, role: sink}\n"
                 "links:\n  - {from: gen-1, to: node}\n  - {from: gen-2, to: node}\n"
                 "  - {from: node, to: sink}\n",
        "aggregate": "processes:\n  - {name: loadgen, role: loadgen}\n"
                     "  - {name: node, role: node, operators: [{groupby: {group_by: key, "
                     "aggregates: count, window: count, size: 1000, max_groups: 1024}}]}\n"
                     "  - {name: sink, role: sink}\n",
        "groupby-having": "processes:\n  - {name: loadgen, role: loadgen}\n"
                          "  - {name: node, role: node, operators: [{groupby: {group_by: key, "
                          "aggregates: \"sum(key)\", window: count, size: 100000, "
                          "having: \"sum(key) >= 1000000\", max_groups: 1024}}]}\n"
                          "  - {name: sink, role: sink}\n",
    }
    for name, body in bodies.items():
        path = Path(tmp) / f"op-{name}.yaml"
        path.write_text("preset: tcp-opt\ncongestion: reno\nprogress_s: 0\n" + body)
        files[name] = str(path)
    return files


def plan(args, tmp):
    sz = Sizes(args.quick)
    specs = []
    reps = range(args.repeat)
    # Figures 1, 3-6: presets x tuple sizes x event sizes x instances.
    for r in reps:
        first = len(specs)
        for inst in sz.instances:
            for t in sz.tuples:
                for e in sz.events:
                    if not fits(t, e):
                        continue
                    for p in PRESETS:
                        specs.append(spec("throughput", "chain", p, t, e, inst))
        for inst in sz.extra_instances:
            specs.append(spec("throughput", "chain", "tcp-opt", 128, 32768, inst))
        # Figure 2: spin against block waits, tcp-opt, 128 B tuples, 32 KiB events.
        for inst in sz.spin_instances:
            for w in ("block", "spin"):
                specs.append(spec("spin", "chain", "tcp-opt", 128, 32768, inst, wait=w))
        # Figure 5 (Fig 11): one node per operator.
        ops = operator_yamls(tmp)
        for name, path in ops.items():
            specs.append(spec("operators", name, "tcp-opt", sz.op_tuples, 32768, 1, yaml=path))
        # Section 5.4: the demo chain with its two filters replaced by nothing.
        for p in ("original", "tcp-opt"):
            for t in (128, 4096) if not args.quick else (128,):
                specs.append(spec("passthrough", "chain-pass", p, t, 32768, 1,
                                  extra={"processes.1.operators": "[]",
                                         "processes.2.operators": "[]"}))
        # Seed 004: bursts of one-tuple events (Rachou's events are single
        # tuples) every burst_ms; the sink times each burst and its head.
        # Each twice: threads dedicated (the node before the latency work
        # of issue 17) and adaptive (the default since), so the figure shows
        # before and after in one run.
        for n, period in sz.bursts:
            for th in BURST_THREADS:
                sp = spec("bursts", "chain", "tcp-opt", 128, 0, 1,
                          extra={"burst_events": n, "burst_ms": period, "threads": th})
                sp.params.update(burst_events=n, burst_ms=period, threads=th,
                                 duration=max(args.duration, 4 * period / 1000 + 0.5))
                specs.append(sp)
        # The cost model's graphs beyond chains, predicted by plan --predict:
        # a key split to two sinks and a union of two loadgens.
        # split_key calibrates the split's cost per tuple; split_key-8k (8 KiB
        # events) and the union are predicted.
        for setup, name, extra in (("split_key", "split_key", {}),
                                   ("split_key-8k", "split_key", {"event_bytes": 8192}),
                                   ("union", "union", {})):
            sp = Spec("model", setup, str(REPO / f"deploy/examples/{name}.yaml"),
                      dict({"preset": "tcp-opt"}, **extra), preset="tcp-opt", carrier="",
                      tuple_bytes="", event_bytes="", instances=1, wait="")
            specs.append(sp)
        for s in specs[first:]:
            s.params["repeat"] = r
    if args.only:
        specs = [s for s in specs if s.group in args.only]
    return specs


# ------------------------------------------------------------------ running

def machine_busy_s():
    """Seconds of CPU the whole machine has spent busy (all CPUs, /proc/stat)."""
    with open("/proc/stat") as f:
        parts = f.readline().split()
    v = [int(x) for x in parts[1:9]]  # user nice system idle iowait irq softirq steal
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return busy / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def ancestors():
    """This process's pid and its ancestors' (from /proc)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def lock_held_by_ancestor():
    """True if an ancestor (`flock /tmp/cpu.lock ctest ...`) holds the CPU lock:
    then every run is already under it, and taking it again would wait forever."""
    try:
        ino = os.stat(LOCK).st_ino
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    mine = ancestors()
    for l in lines:
        parts = l.split()
        if len(parts) >= 6 and parts[1] == "FLOCK":
            try:
                pid, inode = int(parts[4]), int(parts[5].split(":")[2])
            except (ValueError, IndexError):
                continue
            if inode == ino and pid in mine:
                return True
    return False


class CpuLock:
    """flock(LOCK) around one run, unless an ancestor already holds it."""

    def __enter__(self):
        self.f = open(LOCK, "a")
        if not lock_held_by_ancestor():
            fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        self.f.close()  # closing releases the lock


def git_commit():
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "-uno"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def find_deploy(build):
    for cand in (Path(build) / "deploy/sluice-deploy", Path(build) / "sluice-deploy"):
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def proc_summary(p):
    keys = ["name", "role", "instances", "events_in", "events_out", "tuples_in", "tuples_out",
            "bytes_in", "bytes_out", "wall_s", "user_s", "sys_s", "cores", "clock_ghz",
            "cpe_p", "cpe_u", "cpe_s", "cpe_i", "cpb_p"]
    d = {k: p.get(k) for k in keys}
    d["operators"] = [o.get("name", "").split(":", 1)[-1] for o in p.get("operators") or []]
    d["links_out"] = sum(1 for l in p.get("links") or [] if l.get("direction") == "out")
    d["links_in"] = sum(1 for l in p.get("links") or [] if l.get("direction") == "in")
    return d


def mean(vals):
    vals = [v for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None


def fill_row(row, rep):
    row["ok"] = "true" if rep.get("ok") else "false"
    row["error"] = rep.get("error") or ""
    for k in ("tuples", "tuples_per_s", "gbps"):
        row[k] = rep.get(k, "")
    lat = rep.get("latency_us") or {}
    row["latency_p50_us"] = lat.get("p50", "")
    row["latency_p99_us"] = lat.get("p99", "")
    procs = rep.get("processes") or []
    nodes = [p for p in procs if p.get("role") == "node"]
    sinks = [p for p in procs if p.get("role") == "sink"]
    for k in ("cpe_p", "cpe_u", "cpe_s", "cpe_i", "cpb_p", "cores"):
        v = mean([p.get(k) for p in nodes])
        row[f"node_{k}"] = "" if v is None else f"{v:.6g}"
    burst = next((p["burst"] for p in sinks if p.get("burst")), None)
    if burst:
        row["bursts"] = burst.get("bursts", "")
        row["burst_processing_p50_us"] = (burst.get("processing_us") or {}).get("p50", "")
        row["burst_processing_max_us"] = (burst.get("processing_us") or {}).get("max", "")
        row["burst_head_p50_us"] = (burst.get("head_us") or {}).get("p50", "")
        row["burst_tail_p50_us"] = (burst.get("tail_us") or {}).get("p50", "")
    events = sum(p.get("events_in") or 0 for p in sinks)
    tuples_in = sum(p.get("tuples_in") or 0 for p in sinks)
    row["events"] = events
    row["tuples_per_event"] = f"{tuples_in / events:.6g}" if events else ""
    if procs:
        row["clock_ghz"] = procs[0].get("clock_ghz", "")
        ghz = float(procs[0].get("clock_ghz") or 0)
        cyc = sum((p.get("user_s") or 0) + (p.get("sys_s") or 0) for p in procs) * ghz * 1e9
        if events:
            row["total_cycles_per_event"] = f"{cyc / events:.6g}"
    row["procs"] = json.dumps([proc_summary(p) for p in procs], separators=(",", ":"))
    if row["ok"] == "true" and any(rep.get(k) for k in ("lost", "duplicated", "corrupt")):
        row["ok"] = "false"
        row["error"] = row["error"] or "lost, duplicated or corrupt tuples"
    if row["ok"] == "true" and not nodes:
        row["ok"] = "false"
        row["error"] = "no node in the report"


def run_one(s, deploy, args, out, commit):
    row = {f: "" for f in CSV_FIELDS}
    row.update(rid=s.rid, group=s.group, setup=s.setup, commit=commit,
               host=socket.gethostname(), host_cores=os.cpu_count(), ok="false",
               duration_s=f"{s.params.get('duration') or args.duration:g}")
    for k in ("preset", "carrier", "tuple_bytes", "event_bytes", "instances", "wait", "repeat",
              "burst_ms", "burst_events", "threads"):
        row[k] = s.params.get(k, "")
    sets = dict(s.sets)
    duration = s.params.get("duration") or args.duration
    sets["duration_s"] = f"{duration:g}"
    row["sets"] = " ".join(f"{k}={v}" for k, v in sets.items())
    row["file"] = os.path.relpath(s.yaml, REPO) if s.yaml.startswith(str(REPO)) else s.yaml
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rundir = Path(tempfile.mkdtemp(prefix=f"sluice-repro-{s.rid}-"))
    cmd = [str(deploy), "run", s.yaml, "--json", "--run-dir", str(rundir),
           "--timeout", f"{duration * 4 + 30:g}"]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    errlog = raw / f"{s.rid}.stderr"
    with CpuLock():   # no other pipeline beside this one
        row["started_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        busy0, ours0, t0 = machine_busy_s(), children_cpu_s(), time.monotonic()
        with open(errlog, "w") as err:
            err.write("$ " + " ".join(cmd) + "\n")
            err.flush()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    text=True, cwd=REPO)
            try:
                stdout, _ = proc.communicate(timeout=duration * 4 + 60)
            except subprocess.TimeoutExpired:
                stdout = ""
                row["error"] = "timed out"
            finally:
                kill_group(proc)
        wall = time.monotonic() - t0
        busy, ours = machine_busy_s() - busy0, children_cpu_s() - ours0
        row["loadavg_1m"] = f"{os.getloadavg()[0]:.2f}"
    row["wall_s"] = f"{wall:.2f}"
    row["foreign_cores"] = f"{max(0.0, busy - ours) / wall:.3f}" if wall > 0 else ""
    row["cpu_util"] = f"{ours / (wall * os.cpu_count()):.3f}" if wall > 0 else ""
    (raw / f"{s.rid}.json").write_text(stdout)
    row["raw"] = f"raw/{s.rid}.json"
    if not row["error"]:
        try:
            fill_row(row, parse_report(stdout))
            if proc.returncode != 0 and row["ok"] == "true":
                row["ok"], row["error"] = "false", f"sluice-deploy exited {proc.returncode}"
        except ValueError as e:
            row["error"] = f"exit {proc.returncode}: {e}; {tail(errlog)}"
    if row["ok"] == "true":
        shutil.rmtree(rundir, ignore_errors=True)
    else:
        row["error"] += f" (run dir kept: {rundir})"
    return row


def run_all(specs, deploy, args, out, earlier=()):
    """Runs specs, writing earlier rows (--append) and then each new row to the CSV."""
    commit = git_commit()
    csv_path = out / "runs.csv"
    rows = list(earlier)
    t_start = time.monotonic()
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, restval="", extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
        for i, s in enumerate(specs, 1):
            row = run_one(s, deploy, args, out, commit)
            rows.append(row)
            w.writerow(row)
            f.flush()
            el = time.monotonic() - t_start
            eta = el / i * (len(specs) - i)
            what = (f"{float(row['tuples_per_s']) / 1e6:.3g} M tuples/s "
                    f"{float(row['gbps']):.3g} Gb/s node CPE_p {row['node_cpe_p']}"
                    if row["ok"] == "true" else f"FAILED: {row['error'][:200]}")
            log(f"[{i}/{len(specs)}] {s.rid} {s.label()}: {what} "
                f"(foreign {row['foreign_cores']} cores, {row['wall_s']} s, "
                f"elapsed {el / 60:.1f} min, eta {eta / 60:.1f} min)")
    return rows


# ------------------------------------------------------------------ selecting

def fnum(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def select(rows, **kw):
    """The rows that passed and match every keyword (compared as text)."""
    out = []
    for r in rows:
        if r["ok"] != "true":
            continue
        if all(str(r.get(k, "")) == str(v) for k, v in kw.items()):
            out.append(r)
    return out


class Val:
    """A median of one CSV column over some runs, which knows its source."""

    def __init__(self, rows, col):
        vals = [fnum(r[col]) for r in rows if fnum(r[col]) is not None]
        self.col, self.rids = col, [r["rid"] for r in rows if fnum(r[col]) is not None]
        self.v = statistics.median(vals) if vals else None

    def __bool__(self):
        return self.v is not None

    def src(self):
        if self.v is None:
            return f"{self.col}: no runs"
        return f"{self.col}={self.v:.6g} {SRC_ARROW} median {' '.join(self.rids)}"


def srcs(*vals):
    return "; ".join(v.src() for v in vals)


def fmt(v, spec=".3g"):
    return "—" if v is None else format(v, spec)


def si(v):
    if v is None:
        return "—"
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g} {suffix}"
    return f"{v:.3g}"


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def event_label(e):
    e = int(e)
    return "1 tuple" if e == 0 else f"{e // 1024} KiB" if e % 1024 == 0 else f"{e} B"


CLAIMS_SEEN = []  # (key, sluice value, figure) in report order, for the closing note


def claim_row(key, sluice, sources, spec=".3g"):
    study, where = STUDY[key]
    CLAIMS_SEEN.append((key, sluice))
    r = ratio(sluice, study) if study else None
    return [where, fmt(study, spec), fmt(sluice, spec), fmt(r, ".2f") if r is not None else "n/a",
            sources]


CLAIM_HEAD = ["claim (study section)", "study", "sluice", "sluice/study", "source"]


def table(head, lines):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for l in lines:
        out.append("| " + " | ".join(str(c) for c in l) + " |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ figures

class Report:
    def __init__(self, rows, out, report_path, args):
        self.rows, self.out, self.path, self.args = rows, out, report_path, args
        self.plots = out / "plots"
        self.plots.mkdir(parents=True, exist_ok=True)
        self.sections = []
        self.problems = []
        self.summary = {}

    def figure(self, title, plot, text, tables):
        rel = os.path.relpath(self.plots / plot, self.path.parent) if plot else None
        body = [f"## {title}\n"]
        if rel:
            body.append(f"![{title}]({rel})\n")
        body.append(text.strip() + "\n")
        body += tables
        self.sections.append("\n".join(body))

    def save(self, fig, name, series):
        """Saves a matplotlib figure; every named series must have points."""
        for label, n in series.items():
            if n == 0:
                self.problems.append(f"{name}: series '{label}' is empty")
        if not series:
            self.problems.append(f"{name}: no series")
        fig.tight_layout()
        fig.savefig(self.plots / name, dpi=90)
        import matplotlib.pyplot as plt
        plt.close(fig)


def plt_module():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def fig_throughput(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput"]
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    events = sorted({int(r["event_bytes"]) for r in rows})
    insts = sorted({int(r["instances"]) for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    series = {}
    colour = {p: f"C{j}" for j, p in enumerate(PRESETS)}
    dash = {1: "-", 2: "--", 4: ":", 8: "-."}
    for p in PRESETS:
        for i in insts:
            xs, ys = [], []
            for t in tuples:
                v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768, instances=i),
                        "tuples_per_s")
                if v:
                    xs.append(t)
                    ys.append(v.v)
            if i == 1 or xs:
                series[f"{p} x{i} tuples/s"] = len(xs)
            if xs:
                axes[0].plot(xs, ys, marker="o", label=f"{i}x {p}", color=colour[p],
                             linestyle=dash.get(i, "-"))
            xs, ys = [], []
            for t in tuples:
                v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768, instances=i),
                        "gbps")
                if v:
                    xs.append(t)
                    ys.append(v.v)
            if xs:
                axes[1].plot(xs, ys, marker="o", label=f"{i}x {p}", color=colour[p],
                             linestyle=dash.get(i, "-"))
        xs, ys = [], []
        for e in events:
            v = Val(select(rows, preset=p, tuple_bytes=128, event_bytes=e, instances=1), "gbps")
            if v:
                xs.append(e if e else 128 + EVENT_HEADER)
                ys.append(v.v)
        series[f"{p} Gb/s by event size"] = len(xs)
        axes[2].plot(xs, ys, marker="o", label=p, color=colour[p])
    axes[0].set(xscale="log", yscale="log", xlabel="tuple bytes (32 KiB events)",
                ylabel="tuples/s at the sink", title="tuples/s by tuple size")
    axes[1].set(xscale="log", xlabel="tuple bytes (32 KiB events)", ylabel="Gb/s",
                title="Gb/s by tuple size")
    axes[2].set(xscale="log", xlabel="event bytes (128 B tuples; left: one tuple)",
                ylabel="Gb/s", title="Gb/s by event size, 1 instance")
    for a in axes:
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    rep.save(fig, "fig1_throughput.png", series)

    # Claims: the best ratio over the cells, at each tuple size.
    def best_ratio(num_presets, den, t):
        best = None
        for e in events:
            for i in insts:
                d = Val(select(rows, preset=den, tuple_bytes=t, event_bytes=e, instances=i),
                        "tuples_per_s")
                for p in num_presets:
                    n = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e, instances=i),
                            "tuples_per_s")
                    r = ratio(n.v, d.v)
                    if r is not None and (best is None or r > best[0]):
                        best = (r, srcs(n, d), p, e, i)
        return best

    claims = []
    small, large = min(tuples, key=lambda t: abs(t - 128)), max(tuples)
    for key, nums, den, t in (("tcp_vs_orig_small", ["tcp-opt"], "original", small),
                              ("tcp_vs_orig_large", ["tcp-opt"], "original", large),
                              ("ul_vs_tcp_small", USER_LEVEL, "tcp-opt", small),
                              ("ul_vs_tcp_large", USER_LEVEL, "tcp-opt", large)):
        b = best_ratio(nums, den, t)
        if b:
            claims.append(claim_row(key, b[0], f"{b[2]}, {event_label(b[3])}, {b[4]}x: {b[1]}"))
        else:
            claims.append(claim_row(key, None, "no runs"))
    for key, presets in (("max_gbps_opt", ["tcp-opt"] + USER_LEVEL), ("max_gbps_orig", ["original"])):
        best = None
        for p in presets:
            for t in tuples:
                for e in events:
                    for i in insts:
                        v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e, instances=i),
                                "gbps")
                        if v and (best is None or v.v > best.v):
                            best = v
        claims.append(claim_row(key, best.v if best else None, best.src() if best else "no runs"))

    cells = []
    for t in tuples:
        for e in events:
            vals = [Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e, instances=1),
                        "tuples_per_s") for p in PRESETS]
            if not any(vals):
                continue
            gb = [Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e, instances=1), "gbps")
                  for p in PRESETS]
            cells.append([t, event_label(e)] + [si(v.v) for v in vals] +
                         [fmt(ratio(vals[1].v, vals[0].v), ".2f")] + [fmt(g.v) for g in gb] +
                         [srcs(*vals)])
    rep.figure(
        "Figure 1: throughput by tuple size and event size (study Figs 4, 5)",
        "fig1_throughput.png",
        "The demo chain (loadgen -> node-a -> node-b -> sink, a pass-everything filter on "
        "each node) on this one machine, every preset (fabric-opt and ucx-opt with their "
        "default providers) and each instance count. The study's servers were four "
        "machines over 10 GbE; here every process shares two cores, so absolute rates "
        "compare to the study's only as orders of magnitude, and ratios between presets "
        "are what carries over.",
        [table(CLAIM_HEAD, claims),
         "Every cell with one instance (sluice tuples/s per preset, tcp-opt/original, Gb/s):\n\n" +
         table(["tuple B", "event"] + [f"sluice {p} tuples/s" for p in PRESETS] +
               ["tcp-opt/original"] + [f"{p} Gb/s" for p in PRESETS] + ["source"], cells)])


def fig_spin(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "spin"]
    insts = sorted({int(r["instances"]) for r in rows})
    fig, ax = plt.subplots(figsize=(6, 4))
    series, lines, last = {}, [], None
    for w in ("block", "spin"):
        xs, ys = [], []
        for i in insts:
            v = Val(select(rows, wait=w, instances=i), "tuples_per_s")
            if v:
                xs.append(i)
                ys.append(v.v)
        series[w] = len(xs)
        ax.plot(xs, ys, marker="o", label=f"wait={w}")
    ax.set(xlabel="instances", ylabel="tuples/s", title="tcp-opt, 128 B tuples, 32 KiB events")
    ax.grid(alpha=0.3)
    ax.legend()
    rep.save(fig, "fig2_spin.png", series)
    for i in insts:
        b = Val(select(rows, wait="block", instances=i), "tuples_per_s")
        s = Val(select(rows, wait="spin", instances=i), "tuples_per_s")
        lines.append([i, si(b.v), si(s.v), fmt(ratio(b.v, s.v), ".2f"), srcs(b, s)])
        if b and s:
            last = (i, ratio(b.v, s.v), srcs(b, s))
    claims = [claim_row("block_vs_spin_8", last[1] if last else None,
                        f"at {last[0]} instances: {last[2]}" if last else "no runs")]
    rep.figure(
        "Figure 2: spinning against blocking waits (study Fig 6)", "fig2_spin.png",
        "tcp-opt with every stage waiting on its rings by spinning (`wait=spin`) or by "
        "blocking (`wait=block`), 1 to 8 instances of the chain. The study removed "
        "Borealis's spin loops; sluice's spin is a choice, so the comparison is the same "
        "data path with and without it. On two cores, spinning threads take cycles the "
        "others need as soon as there are more threads than cores.",
        [table(CLAIM_HEAD, claims),
         table(["instances", "sluice block tuples/s", "sluice spin tuples/s", "block/spin",
                "source"], lines)])


def fig_cpe(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    t = 1024
    events = sorted({int(r["event_bytes"]) for r in select(rows, tuple_bytes=t)})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series, lines = {}, []
    for p in PRESETS:
        for col, ax in (("node_cpe_u", axes[0]), ("node_cpe_s", axes[1])):
            xs, ys = [], []
            for e in events:
                v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), col)
                if v:
                    xs.append(e if e else t + EVENT_HEADER)
                    ys.append(v.v)
            series[f"{p} {col}"] = len(xs)
            ax.plot(xs, ys, marker="o", label=p)
        for e in events:
            u = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), "node_cpe_u")
            s = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), "node_cpe_s")
            lines.append([p, event_label(e), fmt(u.v, ".4g"), fmt(s.v, ".4g"), srcs(u, s)])
    for ax, what in ((axes[0], "CPE_u (user cycles per event)"),
                     (axes[1], "CPE_s (system cycles per event)")):
        ax.set(xscale="log", yscale="log", xlabel="event bytes (1 KiB tuples)", ylabel=what)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    rep.save(fig, "fig3_cpe.png", series)

    def best(col, nums, den):
        b = None
        for e in events:
            d = Val(select(rows, preset=den, tuple_bytes=t, event_bytes=e), col)
            for p in nums:
                n = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), col)
                r = ratio(n.v, d.v)
                if r is not None and (b is None or r < b[0]):
                    b = (r, f"{p}, {event_label(e)}: {srcs(n, d)}")
        return b or (None, "no runs")

    claims = [claim_row("cpe_u_tcp_vs_orig", *best("node_cpe_u", ["tcp-opt"], "original")),
              claim_row("cpe_s_ul_vs_tcp", *best("node_cpe_s", USER_LEVEL, "tcp-opt"))]
    rep.figure(
        "Figure 3: CPE_u and CPE_s at 1 KiB tuples (study Fig 7)", "fig3_cpe.png",
        "User and system cycles per event (in and out counted, as the study counts them) "
        "of the two nodes (their mean), one instance. The study's mx-opt is Myrinet MX, "
        "a user-level network; sluice's nearest are fabric-opt and ucx-opt, which over "
        "loopback move bytes through shared memory or the kernel's TCP depending on "
        "the provider; the claim row takes whichever is lower.",
        [table(CLAIM_HEAD, claims),
         table(["preset", "event", "sluice CPE_u", "sluice CPE_s", "source"], lines)])


def epe_of(rows):
    """Joules per event of the node at 25 W per core (the study's energy
    figures), from its CPE_p and CPE_i, with the runs it came from."""
    p, i = Val(rows, "node_cpe_p"), Val(rows, "node_cpe_i")
    if not (p and i):
        return None, srcs(p, i)
    ghz = fnum(rows[0]["clock_ghz"]) or 1.0
    return model.epe_joules(p.v, i.v, WATTS_PER_CORE, 1, ghz * 1e9), srcs(p, i)


def fig_energy(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    small, large = min(tuples, key=lambda t: abs(t - 128)), max(tuples)
    lines32, lines1 = [], []
    kwh = {}
    for p in PRESETS:
        for t in (small, large):
            epe, src = epe_of(select(rows, preset=p, tuple_bytes=t, event_bytes=32768))
            k = [model.kwh_for_bytes(zb * model.ZETTABYTE, 32768, epe) / 1e9 if epe else None
                 for _, zb in ZB_YEARS]
            kwh[(p, t, 32768)] = (k, src)
            lines32.append([p, t, fmt(epe, ".4g")] + [fmt(x, ".3g") for x in k] + [src])
        for t in tuples:
            epe, src = epe_of(select(rows, preset=p, tuple_bytes=t, event_bytes=0))
            k = [model.kwh_for_bytes(zb * model.ZETTABYTE, t, epe) / 1e9 if epe else None
                 for _, zb in ZB_YEARS]
            kwh[(p, t, 0)] = (k, src)
            lines1.append([p, t, fmt(epe, ".4g"), fmt(k[0], ".3g"), fmt(k[2], ".3g"), src])
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    series = {}
    width = 0.2
    for ax, t, e, title in ((axes[0], small, 32768, f"{small} B tuples, 32 KiB events"),
                            (axes[1], large, 32768, f"{large} B tuples, 32 KiB events"),
                            (axes[2], small, 0, f"{small} B tuples, one-tuple events")):
        for j, p in enumerate(PRESETS):
            k = kwh[(p, t, e)][0]
            ys = [x if x is not None else 0 for x in k]
            series[f"{p} {title}"] = sum(1 for x in k if x is not None)
            ax.bar([i + j * width for i in range(len(ZB_YEARS))], ys, width, label=p)
        ax.set_xticks([i + 1.5 * width for i in range(len(ZB_YEARS))],
                      [f"{y}: {zb} ZB" for y, zb in ZB_YEARS])
        ax.set(ylabel="billion kWh", title=title, yscale="log")
        ax.legend(fontsize=8)
    rep.save(fig, "fig4_energy.png", series)

    def saving(p_opt, p_base, t, e):
        a, b = kwh[(p_opt, t, e)], kwh[(p_base, t, e)]
        if a[0][2] is None or b[0][2] is None:
            return None, "no runs"
        return model.saving(a[0][2], b[0][2]), f"{p_opt}: {a[1]}; {p_base}: {b[1]}"

    def best_saving(opts, base, e, ts):
        best = (None, "no runs")
        for t in ts:
            for p in opts:
                s = saving(p, base, t, e)
                if s[0] is not None and (best[0] is None or s[0] > best[0]):
                    best = (s[0], f"{t} B: " + s[1])
        return best

    orig = kwh[("original", small, 32768)]
    claims = [claim_row("kwh_2020_orig_small", orig[0][2], orig[1]),
              claim_row("energy_tcp_saving_large", *best_saving(["tcp-opt"], "original", 32768,
                                                                (small, large))),
              claim_row("energy_ul_saving_large", *best_saving(USER_LEVEL, "tcp-opt", 32768,
                                                               (small, large))),
              claim_row("energy_ul_saving_small", *best_saving(USER_LEVEL, "tcp-opt", 0, tuples)),
              claim_row("energy_tcp_saving_small", *best_saving(["tcp-opt"], "original", 0,
                                                                tuples))]
    rep.figure(
        "Figure 4: energy to stream the world's data (study Figs 8, 9)", "fig4_energy.png",
        "Equation 3 (model.py: EPE = P (CPE_p + 0.7 CPE_i) / (N F)) with the node's CPE_p "
        "and CPE_i at 25 W per core (section 5.2.2), times the events that carry 1.8, 8 and "
        "35 ZB (2010, 2015, 2020): 32 KiB events, or one tuple per event. Billions of kWh. "
        "CPE_i is the idle cycles per event of the node's share of this machine's cores; on "
        "two cores shared by four processes it is large, and it weighs 0.7 of CPE_p.",
        [table(CLAIM_HEAD, claims),
         "32 KiB events:\n\n" +
         table(["preset", "tuple B", "sluice EPE J"] +
               [f"sluice {y} ({zb} ZB) G kWh" for y, zb in ZB_YEARS] + ["source"], lines32),
         "One tuple per event (Fig 9):\n\n" +
         table(["preset", "tuple B", "sluice EPE J", "sluice 2010 G kWh", "sluice 2020 G kWh",
                "source"], lines1)])


def fig_infra(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    ops = [r for r in rep.rows if r["group"] == "operators"]
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    ghz = fnum(rows[0]["clock_ghz"]) if rows else 2.6
    F = (ghz or 2.6) * 1e9
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    series, lines, cores = {}, [], {}
    for e, ax in ((32768, axes[0]), (0, axes[1])):
        for p in PRESETS:
            xs, ys = [], []
            for t in tuples:
                v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), "node_cpe_p")
                if v:
                    c = model.cores_for_rate(1e10, v.v, F)
                    cores[(p, t, e)] = (c, v)
                    xs.append(t)
                    ys.append(c / 1e6)
                    lines.append([p, t, event_label(e), fmt(c / 1e6, ".4g"), v.src()])
            series[f"{p} {event_label(e)}"] = len(xs)
            ax.plot(xs, ys, marker="o", label=p)
        ax.set(xscale="log", yscale="log", xlabel="tuple bytes",
               ylabel="million cores for 1e10 events/s",
               title=f"{'32 KiB events' if e else 'one tuple per event'}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    op_names = ["pass", "filter", "union", "aggregate", "groupby-having"]
    op_lines, servers, opv = [], [], {}
    for name in op_names:
        v = Val(select(ops, setup=name), "node_cpe_p")
        opv[name] = v
        n = model.servers_for_rate(1e6, v.v, F) if v else None
        servers.append(n or 0)
        op_lines.append([name, fmt(v.v, ".4g"), fmt(n, "d") if n else "—", v.src()])
    series["servers per operator"] = sum(1 for s in servers if s)
    axes[2].bar(op_names, servers)
    axes[2].set(ylabel="4-core servers for 1e6 events/s", title="per operator, 12 B tuples")
    axes[2].tick_params(axis="x", labelsize=8)
    rep.save(fig, "fig5_infrastructure.png", series)

    savings = []
    for t in tuples:
        a, b = cores.get(("tcp-opt", t, 32768)), cores.get(("original", t, 32768))
        if a and b:
            savings.append((model.saving(a[0], b[0]), f"{t} B: {srcs(a[1], b[1])}"))
    lo = min(savings) if savings else (None, "no runs")
    hi = max(savings) if savings else (None, "no runs")
    sm = cores.get(("tcp-opt", min(tuples), 32768))
    lg = cores.get(("tcp-opt", max(tuples), 32768))
    sl = (ratio(sm[0], lg[0]), f"tcp-opt {min(tuples)} B / {max(tuples)} B: {srcs(sm[1], lg[1])}") \
        if sm and lg else (None, "no runs")
    fs = model.servers_for_rate(1e6, opv["filter"].v, F) if opv["filter"] else None
    ag = model.servers_for_rate(1e6, opv["aggregate"].v, F) if opv["aggregate"] else None
    claims = [claim_row("cores_tcp_saving_min", *lo), claim_row("cores_tcp_saving_max", *hi),
              claim_row("cores_small_vs_large", *sl),
              claim_row("union_vs_filter", ratio(opv["union"].v, opv["filter"].v),
                        srcs(opv["union"], opv["filter"])),
              claim_row("aggregate_vs_filter_servers", ratio(ag, fs),
                        srcs(opv["aggregate"], opv["filter"]))]
    rep.figure(
        "Figure 5: cores and servers (study Figs 10, 11)", "fig5_infrastructure.png",
        f"Equation 2 solved for cores (model.cores_for_rate, alpha = 1, F = this machine's "
        f"{ghz} GHz): millions of cores to stream 1e10 events/s at the node's CPE_p, per "
        "preset and tuple size; and 4-core servers for one million events/s through one "
        "node running each operator (12 B tuples, 32 KiB events, tcp-opt; `filter` keeps "
        "about half, `aggregate` is a count per key over windows of 1000 tuples, "
        "`groupby-having` a sum per key over windows of 100 000 with a HAVING, seed 001's "
        "query shape). The study's aggregate is a 4-tuple pattern with a timing check; "
        "sluice's grouped aggregate is the nearest operator it has.",
        [table(CLAIM_HEAD, claims),
         table(["preset", "tuple B", "event", "sluice M cores for 1e10 ev/s", "source"], lines),
         table(["operator", "sluice node CPE_p", "sluice servers for 1e6 ev/s", "source"],
               op_lines)])


def fig_projection(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    small, large = min(tuples, key=lambda t: abs(t - 128)), max(tuples)
    ghz = fnum(rows[0]["clock_ghz"]) if rows else 2.6
    F = (ghz or 2.6) * 1e9
    core_counts = [128, 256, 1024]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series, lines, tb = {}, [], {}
    for ax, t in ((axes[0], small), (axes[1], large)):
        for p in PRESETS:
            v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768), "node_cpb_p")
            ys = [model.gbits_per_s(v.v, n, F) / 1e3 for n in core_counts] if v else []
            tb[(p, t)] = (ys, v)
            series[f"{p} {t} B"] = len(ys)
            if ys:
                ax.plot(core_counts, ys, marker="o", label=p)
                lines.append([p, t, fmt(v.v, ".4g"), fmt(model.gbits_per_s(v.v, 1, F), ".3g")] +
                             [fmt(y, ".3g") for y in ys] + [v.src()])
        ax.set(xscale="log", yscale="log", xlabel="cores per server", ylabel="Tb/s",
               title=f"{t} B tuples, 32 KiB events")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    rep.save(fig, "fig6_projection.png", series)
    opt = max(((tb[(p, large)][0][-1], tb[(p, large)][1]) for p in ["tcp-opt"] + USER_LEVEL
               if tb[(p, large)][0]), default=None, key=lambda x: x[0])
    orig = tb[("original", large)]
    per_core = max(((model.gbits_per_s(tb[(p, t)][1].v, 1, F), tb[(p, t)][1])
                    for p in ["tcp-opt"] + USER_LEVEL for t in (small, large)
                    if tb[(p, t)][1]), default=None, key=lambda x: x[0])
    claims = [claim_row("tbps_1024_orig", orig[0][-1] if orig[0] else None, orig[1].src()),
              claim_row("tbps_1024_opt", opt[0] if opt else None, opt[1].src() if opt else "—"),
              claim_row("gbps_per_core_opt", per_core[0] if per_core else None,
                        per_core[1].src() if per_core else "—")]

    # Section 5.4: pass-through against the filter, the same chain.
    pas = [r for r in rep.rows if r["group"] == "passthrough"]
    pl, worst = [], None
    for p in ("original", "tcp-opt"):
        for t in sorted({int(r["tuple_bytes"]) for r in pas}):
            a = Val(select(pas, preset=p, tuple_bytes=t), "node_cpe_p")
            b = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768), "node_cpe_p")
            ta = Val(select(pas, preset=p, tuple_bytes=t), "tuples_per_s")
            tf = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768), "tuples_per_s")
            ov = ratio(b.v, a.v)
            pl.append([p, t, fmt(a.v, ".4g"), fmt(b.v, ".4g"),
                       fmt(ov - 1 if ov else None, ".2f"), fmt(ratio(ta.v, tf.v), ".2f"),
                       srcs(a, b, ta, tf)])
            if ov and (worst is None or ov > worst[0]):
                worst = (ov, srcs(a, b))
    claims.append(claim_row("filter_overhead", worst[0] - 1 if worst else None,
                            worst[1] if worst else "no runs"))
    if not pl:
        rep.problems.append("passthrough: no runs")
    rep.figure(
        "Figure 6: network per server in the many-core era, and the operator's share "
        "(study Fig 12, section 5.4)", "fig6_projection.png",
        f"Equation 1 (model.gbits_per_s, alpha = 1, F = {ghz} GHz) with the node's CPB_p "
        "(cycles per byte in and out): the Tb/s one server of 128, 256 or 1024 such cores "
        "would need to keep busy. Then the chain with both nodes running no operator "
        "against the same chain with its pass-everything filters: the filter's share of "
        "a node's cycles.",
        [table(CLAIM_HEAD, claims),
         table(["preset", "tuple B", "sluice node CPB_p", "sluice Gb/s per core"] +
               [f"sluice Tb/s at {n} cores" for n in core_counts] + ["source"], lines),
         "Pass-through against filter (node CPE_p; overhead = filter/pass - 1; tuples/s "
         "pass/filter):\n\n" +
         table(["preset", "tuple B", "sluice pass CPE_p", "sluice filter CPE_p",
                "sluice filter overhead", "sluice tuples/s pass/filter", "source"], pl)])


def fig_bursts(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "bursts"]
    present = {r.get("threads", "") for r in rows}
    # dedicated: before issue 17's threading modes; adaptive: the default
    # since. A CSV from before the threads column has one unnamed set.
    modes = [t for t in BURST_THREADS if t in present] or sorted(present)
    after = "adaptive" if "adaptive" in modes else modes[-1]
    cells = sorted({(int(r["burst_events"]), int(r["burst_ms"])) for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series, lines = {}, []
    for n in sorted({c[0] for c in cells}):
        for th in modes:
            xs, ys = [], []
            for m in sorted(c[1] for c in cells if c[0] == n):
                v = Val(select(rows, burst_events=n, burst_ms=m, threads=th),
                        "burst_processing_p50_us")
                if v:
                    xs.append(m)
                    ys.append(v.v / 1e3)
            name = f"bursts of {n}" + (f", {th}" if th else "")
            series[name] = len(xs)
            axes[0].plot(xs, ys, marker="o", label=name,
                         linestyle="-" if th == after else "--")
    labels, heads, tails = [], [], []
    for n, m in cells:
        for th in modes:
            sel = select(rows, burst_events=n, burst_ms=m, threads=th)
            pr, h, t = (Val(sel, "burst_processing_p50_us"), Val(sel, "burst_head_p50_us"),
                        Val(sel, "burst_tail_p50_us"))
            b = Val(sel, "bursts")
            lines.append([n, m, th or "—", fmt(b.v, ".0f"),
                          fmt(pr.v / 1e3 if pr else None, ".3g"),
                          fmt(h.v, ".4g"), fmt(t.v, ".4g"), fmt(ratio(h.v, t.v), ".2f"),
                          srcs(b, pr, h, t)])
            if h and t and th == after:
                labels.append(f"{n}/{m}ms")
                heads.append(h.v)
                tails.append(t.v)
    series["head and tail"] = len(labels)
    xs = list(range(len(labels)))
    axes[1].bar([x - 0.2 for x in xs], heads, 0.4, label="head (first tenth) p50")
    axes[1].bar([x + 0.2 for x in xs], tails, 0.4, label="tail p50")
    axes[1].set_xticks(xs, labels, rotation=30, fontsize=8)
    axes[1].set(ylabel="latency us (sent to received)", yscale="log",
                title="head against tail of a burst" + (f" ({after})" if after else ""))
    axes[0].set(xscale="log", xlabel="burst period ms", ylabel="burst processing ms (p50)",
                title="first tuple sent to last received")
    for a in axes:
        a.legend(fontsize=7)
        a.grid(alpha=0.3)
    rep.save(fig, "fig8_bursts.png", series)

    # Before and after the latency work, cell by cell.
    before = "dedicated" if "dedicated" in modes and after != "dedicated" else None
    ba = []
    if before:
        for n, m in cells:
            sb = select(rows, burst_events=n, burst_ms=m, threads=before)
            sa = select(rows, burst_events=n, burst_ms=m, threads=after)
            pb, pa = Val(sb, "burst_processing_p50_us"), Val(sa, "burst_processing_p50_us")
            hb, ha = Val(sb, "burst_head_p50_us"), Val(sa, "burst_head_p50_us")
            ba.append([n, m, fmt(pb.v / 1e3 if pb else None, ".3g"),
                       fmt(pa.v / 1e3 if pa else None, ".3g"),
                       fmt(ratio(pa.v, pb.v), ".2f"), fmt(hb.v, ".4g"), fmt(ha.v, ".4g"),
                       fmt(ratio(ha.v, hb.v), ".2f"), srcs(pb, pa, hb, ha)])

    def at(n, m, col):
        return Val(select(rows, burst_events=n, burst_ms=m, threads=after), col)

    far = max((m for n, m in cells if n == 1000), default=None)
    claims = []
    if far is not None:
        v = at(1000, far, "burst_processing_p50_us")
        claims.append(claim_row("burst_1000_far", v.v / 1e3 if v else None,
                                f"every {far} ms: " + v.src()))
        h, t = at(1000, far, "burst_head_p50_us"), at(1000, far, "burst_tail_p50_us")
        claims.append(claim_row("burst_head_tail", ratio(h.v, t.v), srcs(h, t)))
    near = min((m for n, m in cells if n == 1000 and m >= 100), default=None)
    if near is not None:
        v = at(1000, near, "burst_processing_p50_us")
        claims.append(claim_row("burst_1000_100", v.v / 1e3 if v else None,
                                f"every {near} ms: " + v.src()))
    steady = Val(select(rep.rows, group="throughput", preset="tcp-opt", tuple_bytes=128,
                        event_bytes=0, instances=1), "tuples_per_s")
    claims.append(claim_row("burst_constant", 1000 / steady.v * 1e3 if steady else None,
                            "1000 / " + steady.src()))
    tables = [table(CLAIM_HEAD, claims),
              table(["burst tuples", "every ms", "threads", "sluice bursts",
                     "sluice burst ms p50", "sluice head us p50", "sluice tail us p50",
                     "head/tail", "source"], lines)]
    if ba:
        tables.append(
            f"Before and after the latency work (issue 17): `threads: {before}` (how a "
            f"node ran before it) against `threads: {after}` (the default since), same "
            "cells, same run:\n\n" +
            table(["burst tuples", "every ms", f"sluice burst ms p50 {before}",
                   f"sluice burst ms p50 {after}", f"{after}/{before}",
                   f"sluice head us p50 {before}", f"sluice head us p50 {after}",
                   f"head {after}/{before}", "source"], ba))
    rep.figure(
        "Figure 8: bursts (seed 004)", "fig8_bursts.png",
        "The demo chain (tcp-opt, 128 B tuples, one tuple per event, as Rachou's events) "
        "fed bursts of 500, 1000 or 2000 tuples, one burst every `burst_ms`, once with "
        "each node's stages on dedicated threads (before issue 17) and once adaptive (the "
        "default: an idle node's receiving thread runs a batch to completion). The sink "
        "reports each burst's processing time (its first tuple sent to its last received) "
        "and the latency of a burst's first tenth (the head) against the rest (the tail). "
        "Rachou measured Siddhi, one JVM process, from injection to the end of processing; "
        "sluice's times cross four processes and three loopback links, so the head carries "
        "every wake-up on the path: a stage blocked on an empty ring or socket is woken by "
        "the first tuple of a burst, and the kernel's wake-up and a cold cache are paid "
        "once per process per burst. The claims use the adaptive runs. The constant "
        "stream row (distance 0) is the same chain's steady one-tuple throughput.",
        tables)


# The cost model's calibration: these cells of the throughput grid (one
# instance, every preset) and the pass-through chains; every other chain run
# is predicted before its measurement is looked at.
CAL_CELLS = [(128, 0), (4096, 0), (128, 32768), (4096, 32768)]


def is_calibration(r):
    if r["group"] == "passthrough" or (r["group"] == "model" and r["setup"] == "split_key"):
        return True
    return (r["group"] == "throughput" and str(r["instances"]) == "1"
            and (int(r["tuple_bytes"]), int(r["event_bytes"])) in CAL_CELLS)


def is_model_test(r):
    """Chains the model describes: the throughput grid, block waits, and the
    one-node pass-through (another chain length and 12 B tuples)."""
    if r["ok"] != "true" or is_calibration(r):
        return False
    return (r["group"] == "throughput" or (r["group"] == "spin" and r["wait"] == "block")
            or (r["group"] == "operators" and r["setup"] == "pass"))


def plan_predict(deploy, row, cal_path):
    """`sluice-deploy plan FILE --predict` for a run's file and overrides: its
    tuples/s and its nodes' mean CPE_p, or the error it printed."""
    cmd = [str(deploy), "plan", str(REPO / row["file"]), "--predict", "--calibration",
           str(cal_path)]
    for kv in row["sets"].split():
        cmd += ["--set", kv]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if res.returncode != 0:
        return (res.stderr or res.stdout).strip()[-300:]
    m = re.search(r"^predicted: ([0-9.e+]+) tuples/s", res.stdout, re.M)
    nodes = [float(l.split()[3]) for l in res.stdout.splitlines()
             if len(l.split()) == 4 and l.split()[1] == "node"]
    if not m or not nodes:
        return "no prediction in: " + res.stdout[-300:]
    return {"tuples_per_s": float(m.group(1)), "node_cpe_p": sum(nodes) / len(nodes)}


def fig_costmodel(rep):
    import costmodel
    plt = plt_module()
    cal_rows = [r for r in rep.rows if r["ok"] == "true" and is_calibration(r)]
    cal = costmodel.fit(cal_rows)
    cal_path = rep.args.calibration or (rep.out / "calibration.json")
    Path(cal_path).write_text(json.dumps(cal, indent=1, sort_keys=True) + "\n")
    # One prediction per configuration, against the median of its runs
    # (its repeats): the model predicts a configuration, not one run's noise.
    configs = {}
    for r in rep.rows:
        if is_model_test(r) or (r["group"] == "model" and r["ok"] == "true"
                                and not is_calibration(r)):
            configs.setdefault((r["group"], r["setup"], r["sets"]), []).append(r)
    lines, errs_t, errs_c, pts, spread_t, spread_c = [], [], [], [], [], []
    deploy = find_deploy(rep.args.build)
    for (group, setup, sets), runs in configs.items():
        r = runs[0]
        if group == "model":
            if deploy is None:
                rep.problems.append(f"cost model: no sluice-deploy under {rep.args.build} to "
                                    f"predict {setup}")
                continue
            p = plan_predict(deploy, r, cal_path)
            if isinstance(p, str):
                rep.problems.append(f"cost model: {r['rid']} {setup}: {p}")
                continue
            pt, pc = p["tuples_per_s"], p["node_cpe_p"]
            what = f"{r['file'].rsplit('/', 1)[-1]}"
            extra = [kv for kv in sets.split() if not kv.startswith(("duration_s=", "preset="))]
            what += (" " + " ".join(extra) if extra else "") + " (plan --predict)"
        else:
            try:
                p = costmodel.predict(cal, costmodel.roles_ops_of(r), costmodel.carrier_of(r),
                                      int(r["tuple_bytes"]), int(r["event_bytes"]))
            except KeyError as e:
                rep.problems.append(f"cost model: {r['rid']}: {e}")
                continue
            pt = p["tuples_per_s"]
            pc = mean([cpe for role, cpe, _ in p["processes"] if role == "node"])
            what = f"{costmodel.carrier_of(r)} {r['tuple_bytes']} B {event_label(r['event_bytes'])}"
            if group == "operators":
                what += ", one node"
            if str(r["instances"]) != "1":
                what += f", {r['instances']} instances"
        t, c = Val(runs, "tuples_per_s"), Val(runs, "node_cpe_p")
        et, ec = pt / t.v - 1, pc / c.v - 1
        errs_t.append(abs(et))
        errs_c.append(abs(ec))
        pts.append((t.v, pt, c.v, pc))
        if len(runs) >= 2:
            a, b = fnum(runs[0]["tuples_per_s"]), fnum(runs[1]["tuples_per_s"])
            spread_t.append(abs(a / b - 1))
            a, b = fnum(runs[0]["node_cpe_p"]), fnum(runs[1]["node_cpe_p"])
            spread_c.append(abs(a / b - 1))
        lines.append([what, si(pt), si(t.v), f"{et:+.0%}", fmt(pc, ".4g"), fmt(c.v, ".4g"),
                      f"{ec:+.0%}", srcs(t, c)])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, i, j, what in ((axes[0], 0, 1, "tuples/s"), (axes[1], 2, 3, "node CPE_p")):
        xs, ys = [p[i] for p in pts], [p[j] for p in pts]
        ax.scatter(xs, ys)
        if xs:
            lo, hi = min(xs + ys) * 0.7, max(xs + ys) * 1.4
            ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
            ax.fill_between([lo, hi], [lo * 0.85, hi * 0.85], [lo * 1.15, hi * 1.15], alpha=0.1)
        ax.set(xscale="log", yscale="log", xlabel=f"measured {what}",
               ylabel=f"predicted {what}", title=f"{what}: prediction against measurement")
        ax.grid(alpha=0.3)
    rep.save(fig, "fig7_costmodel.png", {"predictions": len(pts)})
    med_t = statistics.median(errs_t) if errs_t else None
    med_c = statistics.median(errs_c) if errs_c else None
    med = statistics.median(errs_t + errs_c) if errs_t else None
    coef_lines = [[k, f"{v:.4g}"] for k, v in sorted(cal["coefficients"].items())]
    alpha_lines = [[k, f"{v:.3f}"] for k, v in sorted(cal["alpha"].items())]
    cal_src = Val(cal_rows, "tuples_per_s")
    rep.figure(
        "Figure 7: the cost model (seed 003), predicted before measured", "fig7_costmodel.png",
        f"Calibrated on {len(cal_rows)} runs (one instance, every preset, (tuple, event) "
        f"cells {', '.join(f'{t} B/{event_label(e)}' for t, e in CAL_CELLS)}, and the "
        "pass-through chains); then every other chain run (other tuple and event sizes, "
        "more instances, a one-node chain of 12 B tuples) is predicted from its "
        "configuration alone and compared with what it measured. A key split's cost per "
        "tuple (hashing and repacking) is calibrated on deploy/examples/split_key.yaml "
        "as it is; the same split with 8 KiB events and the union (union.yaml) are "
        "predicted by `sluice-deploy plan --predict` itself, from the coefficients "
        "written here. The model "
        "(experiments/costmodel.py) is seed 003's sum of operator and hand-off costs per "
        "tuple, with per-carrier costs per event, byte and tuple, and the study's "
        "Equation 2 for the rate. Coefficients in "
        f"`{os.path.relpath(cal_path, rep.path.parent)}`; `sluice-deploy plan --predict` "
        "reads the same file.\n\n"
        f"**median prediction error: {med * 100:.0f}%** (tuples/s and node CPE_p of "
        f"{len(errs_t)} configurations not used to calibrate, each against the median of "
        f"its runs; tuples/s alone {med_t * 100:.0f}%, node CPE_p alone {med_c * 100:.0f}%). "
        + (f"For scale, two runs of the same configuration here differ by a median "
           f"{statistics.median(spread_t) * 100:.0f}% in tuples/s and "
           f"{statistics.median(spread_c) * 100:.0f}% in node CPE_p (first two runs of "
           f"each of {len(spread_t)} configurations above): the machine's own noise, "
           "shared with other work, bounds how close any prediction can come."
           if spread_t else "") if med is not None else
        "median prediction error: n/a (no runs to predict)",
        [table(["configuration", "predicted tuples/s", "sluice tuples/s", "error",
                "predicted node CPE_p", "sluice node CPE_p", "error", "source"], lines),
         "Calibration runs (" + cal_src.src() + "):\n\n" +
         table(["coefficient (cycles per unit)", "value"], coef_lines) + "\n" +
         table(["carrier", "alpha (share of N F the pipeline got)"], alpha_lines)])
    if med is not None:
        rep.summary["median_prediction_error"] = med


FIGURES = [fig_throughput, fig_spin, fig_cpe, fig_energy, fig_infra, fig_projection,
           fig_costmodel, fig_bursts]


def machine_line(rows):
    ok = [r for r in rows if r["ok"] == "true"]
    fc = [fnum(r["foreign_cores"]) for r in ok if fnum(r["foreign_cores"]) is not None]
    commits = sorted({r["commit"] for r in rows})
    return (f"{len(rows)} runs ({len(ok)} passed) on {rows[0]['host']}, "
            f"{rows[0]['host_cores']} cores at {rows[0]['clock_ghz']} GHz, commit "
            f"{', '.join(commits)}, {rows[0]['started_utc']} to {rows[-1]['started_utc']}; "
            f"foreign load (cores busy with other work during a run): median "
            f"{statistics.median(fc) if fc else 0:.2f}, max {max(fc) if fc else 0:.2f}.")


def write_report(rows, out, path, args):
    CLAIMS_SEEN.clear()
    rep = Report(rows, out, path, args)
    for f in FIGURES:
        try:
            f(rep)
        except Exception as e:  # one broken figure must not hide the others
            import traceback
            traceback.print_exc()
            rep.problems.append(f"{f.__name__}: {type(e).__name__}: {e}")
    csv_rel = os.path.relpath(out / "runs.csv", path.parent)
    mode = "--quick" if args.quick else "full"
    head = [
        "# The Borealis study, regenerated from sluice runs\n",
        f"Generated by `python3 experiments/reproduce.py{' --quick' if args.quick else ''}` "
        f"({mode} mode, {args.duration:g} s per run, {args.repeat} repeat(s)); every run is a row of "
        f"[{csv_rel}]({csv_rel}). {machine_line(rows)}\n",
        "The study (seed 002: Akram, Marazakis, Bilas, DEBS 2012) ran Borealis on four "
        "4-core Xeon servers over 10 GbE; sluice here runs every process of a pipeline on "
        "one 2-core virtual machine over loopback. Each table compares what the study "
        "reports with what sluice shows and gives their ratio; the `source` column names "
        "the CSV column and the runs (`rid`) each sluice number is the median of. "
        "Figures 4-6 feed the measured CPE and CPB into the study's own equations "
        "(experiments/model.py, unit-tested against the study's examples).\n",
    ]
    text = "\n".join(head) + "\n" + "\n\n".join(rep.sections) + "\n"
    text += closing_note(rep.summary.get("median_prediction_error"))
    path.write_text(text)
    return rep.problems


# How to read each claim for the closing note. "effect": the study reports
# the size of an effect against a null (1 for a ratio, 0 for a saving); sluice
# reproduces it when its effect is at least two thirds of the study's in the
# same direction. "higher"/"lower": an absolute figure where that is better;
# sluice beats it when better by more than 1.5x. WHY says what lies behind a
# difference on this machine.
CLAIM_KIND = {
    "tcp_vs_orig_small": ("effect", 1), "tcp_vs_orig_large": ("effect", 1),
    "ul_vs_tcp_small": ("effect", 1), "ul_vs_tcp_large": ("effect", 1),
    "max_gbps_opt": ("higher", None), "max_gbps_orig": ("higher", None),
    "block_vs_spin_8": ("effect", 1),
    "cpe_u_tcp_vs_orig": ("effect", 1), "cpe_s_ul_vs_tcp": ("effect", 1),
    "kwh_2020_orig_small": ("lower", None),
    "energy_tcp_saving_large": ("effect", 0), "energy_ul_saving_large": ("effect", 0),
    "energy_ul_saving_small": ("effect", 0), "energy_tcp_saving_small": ("effect", 0),
    "cores_tcp_saving_min": ("effect", 0), "cores_tcp_saving_max": ("effect", 0),
    "cores_small_vs_large": ("effect", 1),
    "union_vs_filter": ("effect", 1), "aggregate_vs_filter_servers": ("effect", 1),
    "tbps_1024_orig": ("higher", None), "tbps_1024_opt": ("higher", None),
    "gbps_per_core_opt": ("higher", None),
    "filter_overhead": ("lower", None),
    "burst_1000_far": ("lower", None), "burst_1000_100": ("lower", None),
    "burst_constant": ("lower", None), "burst_head_tail": ("effect", 1),
}

WHY = {
    "tcp_vs_orig_small": "sluice's original preset pays Cap'n Proto encoding, a copy per hand-off, "
        "an asynchronous send queue and a select() loop per event; with one-tuple events that "
        "per-event cost is the whole cost, so tcp-opt's gain is far larger than Borealis's",
    "tcp_vs_orig_large": "the same per-event costs, amortised over fewer tuples per event",
    "ul_vs_tcp_small": "the study's mx-opt was Myrinet MX on its own NIC; here fabric-opt and "
        "ucx-opt run over loopback on the same two cores (libfabric's and UCX's tcp by "
        "default), so they add a user-level layer over the same kernel TCP rather than "
        "removing the kernel",
    "ul_vs_tcp_large": "no user-level NIC on this machine: over loopback fabric-opt and ucx-opt "
        "gain only where their batching beats tcp-opt's per-event sends (one-tuple events), "
        "not where bytes dominate",
    "cpe_s_ul_vs_tcp": "MX removed the kernel from the data path; over loopback libfabric's "
        "and UCX's default transports still go through the kernel's sockets, so system "
        "cycles do not fall",
    "cpe_u_tcp_vs_orig": "sluice's tcp-opt does almost no user-level work per tuple (no "
        "serialization, no copies), so its CPE_u is a small fraction of original's",
    "max_gbps_opt": "loopback inside one VM, no 10 GbE wire between the processes",
    "max_gbps_orig": "original here is CPU-bound on its per-event encoding and copies, "
        "sharing two cores among four processes",
    "block_vs_spin_8": "two cores for 4 x 3 stage threads per instance: a spinning stage "
        "takes a core another stage needs, far worse than on the study's 8-core servers",
    "kwh_2020_orig_small": "sluice's original preset costs tens of thousands of cycles per "
        "32 KiB event against the ~10 million Borealis spent",
    "energy_ul_saving_large": "the user-level carriers cost more cycles per event than "
        "tcp-opt over loopback (see Figure 3)",
    "energy_ul_saving_small": "no user-level NIC to take work off the CPU; what the "
        "user-level carriers save here, they save by sending one-tuple events in batches",
    "energy_tcp_saving_small": "the study's tcp-opt sent more bytes per event than original; "
        "sluice's tcp-opt sends the same bytes with far fewer cycles, so it saves energy for "
        "one-tuple events too",
    "cores_tcp_saving_min": "sluice's original is slower than Borealis-original relative to "
        "its tcp-opt (Figure 1)",
    "cores_tcp_saving_max": "as above",
    "cores_small_vs_large": "a sluice node does not touch tuples it passes on; its cost "
        "per 32 KiB event depends on the bytes, not on how many tuples they hold",
    "union_vs_filter": "sluice's union node runs no operator; the filter node evaluates a "
        "predicate on every tuple and drops half, repacking events",
    "aggregate_vs_filter_servers": "sluice's aggregate is a grouped count over windows that "
        "emits a row per group per window, a heavier operator than the study's 4-tuple pattern",
    "tbps_1024_orig": "Equation 1 with sluice's CPB_p: fewer cycles per byte than Borealis "
        "means more bytes per core, so a 1024-core server would need more network",
    "tbps_1024_opt": "as above",
    "gbps_per_core_opt": "as above",
    "filter_overhead": "the pass-everything filter is one compare per tuple in a tight loop; "
        "moving events between processes dominates even more than in Borealis",
    "burst_1000_far": "a 1000-tuple burst through sluice takes about a millisecond: no JIT, "
        "no garbage collector, events handed on as descriptors",
    "burst_1000_100": "as above",
    "burst_constant": "as above",
    "burst_head_tail": "no JIT warm-up, garbage collection or frequency scaling in the path "
        "(the causes Rachou isolates); what is left, a blocked stage's wake-up per burst, "
        "is a small share of a burst's time here",
}


def classify(key, sluice):
    study = STUDY[key][0]
    kind, null = CLAIM_KIND.get(key, ("higher", None))
    if sluice is None:
        return "no data"
    if kind == "effect":
        if abs(study - null) < 1e-9:  # the study saw no effect
            if abs(sluice - null) <= 0.15 * max(1.0, abs(null)):
                return "reproduces"
            return "differs"
        e = (sluice - null) / (study - null)
        if e >= 1.5:
            return "reproduces, stronger"
        if e >= 2 / 3:
            return "reproduces"
        if e >= 1 / 3:
            return "weaker"
        return "does not reproduce"
    r = sluice / study if study else None
    if r is None:
        return "no data"
    better = r if kind == "higher" else 1 / r if r > 0 else float("inf")
    if better > 1.5:
        return "beats"
    if better >= 2 / 3:
        return "reproduces"
    return "does not reproduce"


def closing_note(prediction_error=None):
    groups = {}
    for key, sluice in CLAIMS_SEEN:
        groups.setdefault(classify(key, sluice), []).append((key, sluice))
    out = ["## Closing note: which claims reproduce here\n",
           "Each claim of the tables above, sorted by what sluice shows on this machine "
           "(an effect reproduces when sluice's is at least two thirds of the study's in "
           "the same direction, is weaker from one third, and does not reproduce below; an "
           "absolute figure is beaten when sluice's is better by more than 1.5x; the numbers "
           "are those of the figures' tables, with their sources):\n"]
    order = ["reproduces", "reproduces, stronger", "beats", "weaker", "differs",
             "does not reproduce", "no data"]
    for g in order:
        if g not in groups:
            continue
        out.append(f"**{g}** ({len(groups[g])}):\n")
        for key, sluice in groups[g]:
            study, where = STUDY[key]
            why = "" if g == "reproduces" else f" — {WHY.get(key, '')}"
            out.append(f"- {where}: study {study:.3g}, sluice {sluice:.3g}{why}")
        out.append("")
    if prediction_error is not None:
        out.append(f"The cost model predicts the runs it was not calibrated on with a median "
                   f"error of {prediction_error * 100:.0f}% (Figure 7).\n")
    out.append(
        "What this machine cannot show: the study's four servers and 10 GbE switch (here one "
        "2-core VM, every process on the same cores, loopback instead of a wire), Myrinet MX "
        "(no user-level NIC: libfabric and UCX run their tcp or shared-memory transports), "
        "measured power (energy is the study's Equation 3 on measured cycles), and "
        "1024-core servers (Figure 6 is the study's Equation 1 on measured CPB). Other "
        "work shares the two cores; the `foreign_cores` column of the CSV says how much "
        "during each run.\n")
    return "\n".join(out)


# ------------------------------------------------------------------ checking

SRC_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=([-+0-9.eE]+) " + re.escape(SRC_ARROW) +
                    r" median((?: r\d+)+)")


def check_report(path, csv_path):
    """Re-reads the report and the CSV it names and returns what does not hold:
    every figure has a plot file and a table with rows; every table row has a
    source; every source's value is the median of its column over its runs,
    and those runs passed; no sluice cell is empty."""
    problems = []
    text = Path(path).read_text()
    rows = {r["rid"]: r for r in csv.DictReader(open(csv_path))}
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    if not sections:
        problems.append("the report has no figures")
    for sec in sections:
        title = sec.splitlines()[0]
        if title.startswith("Closing note"):
            continue
        for img in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", sec):
            f = Path(path).parent / img
            if not f.is_file() or f.stat().st_size < 1000:
                problems.append(f"{title}: plot {img} missing or empty")
        all_lines = sec.splitlines()
        lines = [l for l in all_lines if l.startswith("|")]
        if len(lines) < 3:
            problems.append(f"{title}: no table rows")
        head = None
        for n, l in enumerate(all_lines):
            if not l.startswith("|"):
                continue
            cells = [c.strip() for c in l.strip().strip("|").split("|")]
            if set("".join(cells)) <= set("-"):
                continue
            nxt = all_lines[n + 1] if n + 1 < len(all_lines) else ""
            if nxt.startswith("|") and set(nxt.replace("|", "").strip()) <= set("-"):
                head = cells   # a table's header: the line above its |---|
                continue
            if len(cells) != len(head):
                problems.append(f"{title}: row has {len(cells)} cells, header {len(head)}: {l}")
                continue
            if head[-1] != "source":
                continue
            for h, c in zip(head, cells):
                if (h.startswith("sluice") or h == "sluice") and c in ("", "—"):
                    problems.append(f"{title}: empty sluice cell '{h}' in: {l[:160]}")
            found = SRC_RE.findall(cells[-1])
            if not found:
                problems.append(f"{title}: row without a traceable source: {l[:160]}")
            for col, val, rids in found:
                rids = rids.split()
                vals = []
                for rid in rids:
                    r = rows.get(rid)
                    if r is None:
                        problems.append(f"{title}: source names {rid}, not in the CSV")
                    elif r["ok"] != "true":
                        problems.append(f"{title}: source names {rid}, which failed")
                    elif fnum(r.get(col)) is None:
                        problems.append(f"{title}: {rid} has no {col}")
                    else:
                        vals.append(fnum(r[col]))
                if vals:
                    m = statistics.median(vals)
                    if abs(m - float(val)) > 1e-4 * max(abs(m), 1e-9):
                        problems.append(f"{title}: {col}={val} but the median of {rids} is {m}")
    return problems


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer cells and 1 s runs: every figure in a few minutes (CI)")
    ap.add_argument("--build", default="build", help="the build folder (default: build)")
    ap.add_argument("--out", help="where runs.csv, raw/ and plots/ go (default: "
                    "experiments/report, or experiments/results/<time>-quick with --quick)")
    ap.add_argument("--report", help="the report's path (default: experiments/REPORT.md, or "
                    "OUT/REPORT.md with --quick)")
    ap.add_argument("--duration", type=float, help="seconds per run (default 1, full: 2)")
    ap.add_argument("--repeat", type=int, help="runs per cell (default 1, full: 2)")
    ap.add_argument("--calibration", help="where the cost model's coefficients go (default: "
                    "experiments/calibration.json, or OUT/calibration.json with --quick)")
    ap.add_argument("--only", type=lambda v: set(v.split(",")),
                    help="run only these groups (comma-separated: throughput, spin, operators, "
                    "passthrough, bursts)")
    ap.add_argument("--append", action="store_true",
                    help="keep OUT/runs.csv's rows and add the new runs after them")
    ap.add_argument("--report-only", action="store_true",
                    help="no runs: redraw the report from OUT/runs.csv")
    ap.add_argument("--check-only", action="store_true",
                    help="no runs, no drawing: check the report against OUT/runs.csv")
    args = ap.parse_args()
    if args.duration is None:
        args.duration = 1.0 if args.quick else 2.0
    if args.repeat is None:
        args.repeat = 1 if args.quick else 2
    if args.duration <= 0 or args.repeat < 1:
        ap.error("--duration must be > 0 and --repeat >= 1")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    out = Path(args.out) if args.out else (
        HERE / "results" / f"{stamp}-quick" if args.quick else HERE / "report")
    report = Path(args.report) if args.report else (
        out / "REPORT.md" if args.quick else HERE / "REPORT.md")
    if args.calibration is None and not args.quick:
        args.calibration = str(HERE / "calibration.json")
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "runs.csv"

    if not args.check_only:
        try:
            plt_module()
        except ImportError as e:
            sys.exit(f"reproduce.py: matplotlib is missing ({e}): install Debian's "
                     "python3-matplotlib (scripts/setup.sh does) and run with /usr/bin/python3")

    failed = 0
    if args.check_only or args.report_only:
        if not csv_path.is_file():
            sys.exit(f"reproduce.py: {csv_path} does not exist; run without --report-only first")
        rows = list(csv.DictReader(open(csv_path)))
    else:
        deploy = find_deploy(args.build)
        if deploy is None:
            sys.exit(f"reproduce.py: no sluice-deploy under {args.build}/deploy "
                     "(build the targets sluice-deploy sluice-node sluice-loadgen sluice-sink)")
        with tempfile.TemporaryDirectory(prefix="sluice-repro-") as tmp:
            earlier = []
            if args.append and csv_path.is_file():
                earlier = list(csv.DictReader(open(csv_path)))
            first = 1 + max((int(r["rid"][1:]) for r in earlier), default=0)
            specs = plan(args, tmp)
            if not specs:
                sys.exit(f"reproduce.py: --only {','.join(args.only)} selects no runs")
            for i, s in enumerate(specs, first):
                s.rid = f"r{i}"
            log(f"reproduce.py: {len(specs)} runs of {args.duration:g} s, results in {out}"
                + (f" (after {len(earlier)} earlier runs)" if earlier else ""))
            rows = run_all(specs, deploy, args, out, earlier)
        failed = sum(1 for r in rows if r["ok"] != "true")
    problems = []
    if not args.check_only:
        problems += write_report(rows, out, report, args)
        log(f"wrote {report} and {csv_path}")
    problems += check_report(report, csv_path)
    for p in problems:
        log(f"CHECK FAILED: {p}")
    if failed:
        log(f"{failed} of {len(rows)} runs failed (see the error column of {csv_path})")
    if problems or failed:
        return 1
    log(f"check passed: every figure has a plot and a table, every sluice number traces "
        f"to the median of its runs in {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
