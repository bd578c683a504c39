"""Running the plan: each Spec as `sluice-deploy run FILE --json --set ...`,
one at a time under flock(/tmp/cpu.lock), each a row of OUT/runs.csv with
the foreign load seen while it ran."""

import csv
import datetime
import fcntl
import json
import os
import resource
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from repro.common import LOCK, REPO, log
from sweep import find_binary, kill_group, parse_report, run_baseline, tail

CSV_FIELDS = [
    "rid", "group", "setup", "preset", "carrier", "tuple_bytes", "event_bytes", "instances",
    "wait", "repeat", "duration_s", "commit", "host", "host_cores", "cpu_model", "kernel", "clock_ghz",
    "foreign_cores", "loadavg_1m", "started_utc", "wall_s", "ok", "error",
    "tuples", "tuples_per_s", "gbps", "events", "tuples_per_event",
    "node_cpe_p", "node_cpe_u", "node_cpe_s", "node_cpe_i", "node_cpb_p", "node_cores",
    "total_cycles_per_event", "cpu_util", "latency_p50_us", "latency_p99_us",
    "burst_ms", "burst_events", "bursts", "burst_processing_p50_us", "burst_processing_max_us",
    "burst_head_p50_us", "burst_tail_p50_us", "threads",
    "file", "sets", "procs", "raw",
    "imported_from",   # another machine's row (--other-machine): its file and run id there
]




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
    """HEAD (-dirty where tracked files changed), or SLUICE_COMMIT where set: a
    copy of the tree without git (experiments/device_check.sh sets it to the
    commit its bundle's programs were built at)."""
    if os.environ.get("SLUICE_COMMIT"):
        return os.environ["SLUICE_COMMIT"]
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


class Measured:
    """One run under the CPU lock: when it started, how long it took, and the
    foreign load (cores busy with work that was not this run's) meanwhile."""

    def __init__(self, row):
        self.row = row

    def __enter__(self):
        self.lock = CpuLock().__enter__()
        self.row["started_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        self.busy0, self.ours0, self.t0 = machine_busy_s(), children_cpu_s(), time.monotonic()
        return self

    def __exit__(self, *exc):
        wall = time.monotonic() - self.t0
        busy, ours = machine_busy_s() - self.busy0, children_cpu_s() - self.ours0
        self.row["loadavg_1m"] = f"{os.getloadavg()[0]:.2f}"
        self.lock.__exit__(*exc)
        self.row["wall_s"] = f"{wall:.2f}"
        self.row["foreign_cores"] = f"{max(0.0, busy - ours) / wall:.3f}" if wall > 0 else ""
        self.row["cpu_util"] = f"{ours / (wall * os.cpu_count()):.3f}" if wall > 0 else ""


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def new_row(s, args, commit):
    row = {f: "" for f in CSV_FIELDS}
    row.update(rid=s.rid, group=s.group, setup=s.setup, commit=commit,
               host=socket.gethostname(), host_cores=os.cpu_count(), ok="false",
               cpu_model=cpu_model(), kernel=os.uname().release,
               duration_s=f"{s.params.get('duration') or args.duration:g}")
    for k in ("preset", "carrier", "tuple_bytes", "event_bytes", "instances", "wait", "repeat",
              "burst_ms", "burst_events", "threads"):
        row[k] = s.params.get(k, "")
    return row


def run_baseline_one(s, args, out, commit):
    """Four sluice-plainrelay processes relaying 32 KiB chunks (sweep.py's
    baseline), congestion control reno as the demo file's links."""
    row = new_row(s, args, commit)
    relay = find_binary(args.build, "experiments", "sluice-plainrelay")
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    with Measured(row):
        res = run_baseline(relay, args.duration, "reno", 32768, raw, s.rid)
    row.update(ok=res.get("ok") or "false", error=res.get("error", ""), gbps=res.get("gbps", ""),
               raw=res.get("raw", ""))
    return row


def run_one(s, deploy, args, out, commit):
    if s.group == "baseline":
        return run_baseline_one(s, args, out, commit)
    row = new_row(s, args, commit)
    # guarantee: none, as the study had (no acks, no restarts), except the
    # demo, which runs as the README's first command does: with the defaults.
    sets = dict(s.sets) if s.group == "demo" else {"guarantee": "none", **s.sets}
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
    with Measured(row):   # no other pipeline beside this one
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
    (raw / f"{s.rid}.json").write_text(stdout)
    row["raw"] = f"raw/{s.rid}.json"
    # The table run printed (sluice-deploy keeps it as report.txt), for the
    # demo's section.
    if (rundir / "report.txt").is_file():
        shutil.copyfile(rundir / "report.txt", raw / f"{s.rid}.txt")
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
            what = (f"plain sockets {float(row['gbps']):.3g} Gb/s"
                    if row["ok"] == "true" and s.group == "baseline" else
                    f"{float(row['tuples_per_s']) / 1e6:.3g} M tuples/s "
                    f"{float(row['gbps']):.3g} Gb/s node CPE_p {row['node_cpe_p']}"
                    if row["ok"] == "true" else f"FAILED: {row['error'][:200]}")
            log(f"[{i}/{len(specs)}] {s.rid} {s.label()}: {what} "
                f"(foreign {row['foreign_cores']} cores, {row['wall_s']} s, "
                f"elapsed {el / 60:.1f} min, eta {eta / 60:.1f} min)")
    return rows


