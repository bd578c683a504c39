#!/usr/bin/env python3
"""A node against a plain relay, and parallel queries, side by side in one run.

Every figure is a ratio against a baseline run in the same script, the runs
alternated round by round (the order rotating); each round holds
/tmp/cpu.lock, its runs back to back. Parts (--parts, default all but fabric):

  hop       per tuple size (--tuple-bytes, default 128 and 4096 B) in
            --event-bytes events (32 KiB): the plain socket relays
            (sluice-plainrelay: source -> relay -> relay -> sink, blocking
            reads and writes of 32 KiB) against deploy/examples/pipeline.yaml
            on tcp-opt (loadgen -> node-a -> node-b -> sink), and each
            --variant beside it. Per hop (a relay, a node; the two averaged):
            cycles per tuple, user + system seconds x clock_ghz over the tuples
            it moved (a relay's tuples: its bytes over the bytes per tuple the
            pipeline carried), and per event (a relay's events likewise) the
            context switches, and with perf (--counts, on where `perf stat`
            can count tracepoints): system calls, each by name, wake-ups it
            issued (sched:sched_wakeup) and migrations. tuples/s: the sink's.
  parallel  deploy/examples/pipeline.yaml with parallelism 1 and --parallelism
            (4): tuples/s of each and their ratio.
  esper     deploy/examples/esper_parallel.yaml (the esper group-by, split by
            key over parallel instances, fed by parallel load generators) with
            parallelism --parallelism and 1: input tuples/s of each, their
            ratio, and whether the rows (the groups of every window) are the
            same.
  fabric    fabric-opt over shm against tcp-opt, tuples/s, at each tuple size
            with one tuple per event and in --event-bytes events; with
            --before, fabric shm run by that build too (fabric-shm@before).

  python3 experiments/scaling.py [--build build] [--rounds 3] [--duration 3]
      [--parts hop,parallel,esper] [--tuple-bytes 128,4096] [--event-bytes 32768]
      [--variant NAME:k=v,k=v ...] [--before OLD_BUILD] [--parallelism 4]
      [--counts on|off|auto] [--out DIR] [--json]

--variant NAME:k=v,... adds a sluice system with those keys (e.g.
`--variant none:guarantee=none`); --before DIR adds the same pipeline run by
another build (`tcp-opt@before`; the pipeline.yaml of DIR/.. where there is
one, else this tree's), so a change's effect is a ratio measured in
one run. --json prints the figures as one JSON document on stdout (the tables
then go to stderr). Raw reports and perf counts go to --out (default
runs/scaling-TIME). Python 3 standard library only; perf is optional.
"""

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from sweep import find_binary, free_ports, kill_group, reap, tail  # noqa: E402
from repro.run import CpuLock  # noqa: E402  (one run under /tmp/cpu.lock)

PIPELINE = REPO / "deploy/examples/pipeline.yaml"
ESPER = REPO / "deploy/examples/esper_parallel.yaml"
CHUNK = 32768          # the relays' reads and writes
HOPS_SLUICE = ["node-a", "node-b"]
HOPS_PLAIN = ["relay1", "relay2"]
# What perf counts per hop process, where the kernel has the tracepoint.
PERF_TOTALS = ["raw_syscalls:sys_enter", "context-switches", "cpu-migrations", "sched:sched_wakeup"]
PERF_CALLS = ["read", "write", "recvfrom", "sendto", "recvmsg", "sendmsg", "readv", "writev", "futex",
              "epoll_wait", "epoll_pwait", "poll", "ppoll", "getrusage", "clock_gettime", "nanosleep",
              "clock_nanosleep", "sched_yield"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- perf

class Perf:
    """`perf stat` attached to a process for its whole life (its threads made
    later included), counting the tracepoints this kernel has."""

    def __init__(self, mode):
        self.events = []
        if mode == "off" or not shutil.which("perf"):
            if mode == "on":
                sys.exit("--counts on: no perf on PATH")
            return
        for ev in PERF_TOTALS + [f"syscalls:sys_enter_{c}" for c in PERF_CALLS]:
            p = subprocess.run(["perf", "stat", "-x,", "-e", ev, "--", "true"], capture_output=True, text=True)
            if p.returncode == 0 and "<not supported>" not in p.stderr and "not counted" not in p.stderr:
                self.events.append(ev)
        if mode == "on" and "raw_syscalls:sys_enter" not in self.events:
            sys.exit("--counts on: perf cannot count raw_syscalls:sys_enter here "
                     "(perf_event_paranoid, or no tracefs)")

    def attach(self, pid, out):
        if not self.events:
            return None
        return subprocess.Popen(["perf", "stat", "-x,", "-o", str(out), "-e", ",".join(self.events),
                                 "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    @staticmethod
    def read(path):
        """{event: count} from perf stat -x, output."""
        out = {}
        try:
            lines = Path(path).read_text().splitlines()
        except OSError:
            return out
        for line in lines:
            f = line.split(",")
            if len(f) < 3 or line.startswith("#"):
                continue
            try:
                out[f[2]] = int(float(f[0]))
            except ValueError:
                continue
        return out


def perf_finish(procs, timeout=10):
    for p in procs:
        if p is None:
            continue
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(p)


def pids_of(run_dir, name):
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cl = open(f"/proc/{pid}/cmdline").read().replace("\0", " ")
        except OSError:
            continue
        if f"{run_dir}/" in cl and f"--process {name} " in cl:
            out.append(int(pid))
    return out


# ---------------------------------------------------------------- runs

def run_plain(relay, duration, raw, tag, perf):
    """The four plain relays; {"ok", "bytes", "seconds", "hops": {name: {cpu_s, ctx_v, ctx_i, perf}}}."""
    res = {"system": "plain", "ok": False}
    if relay is None:
        res["error"] = "sluice-plainrelay not built"
        return res
    p1, p2, p3 = free_ports(3)
    common = ["--chunk", str(CHUNK), "--congestion", "reno"]  # reno: pipeline.yaml's
    cmds = [
        ("sink", [str(relay), "sink", "--listen", str(p3), "--json"] + common),
        ("relay2", [str(relay), "relay", "--listen", str(p2), "--connect", f"127.0.0.1:{p3}"] + common),
        ("relay1", [str(relay), "relay", "--listen", str(p1), "--connect", f"127.0.0.1:{p2}"] + common),
        ("source", [str(relay), "source", "--connect", f"127.0.0.1:{p1}", "--duration", f"{duration:g}"] + common),
    ]
    procs, usage, codes, perfs = {}, {}, {}, {}  # usage: rusage by name (reap)
    errlog = raw / f"{tag}.stderr"
    with open(errlog, "w") as err:
        try:
            for name, cmd in cmds:
                err.write("$ " + " ".join(cmd) + "\n")
                err.flush()
                procs[name] = subprocess.Popen(cmd, stdout=subprocess.PIPE if name == "sink" else subprocess.DEVNULL,
                                               stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
                if name in HOPS_PLAIN:
                    perfs[name] = perf.attach(procs[name].pid, raw / f"{tag}.{name}.perf")
                if name != "source":
                    time.sleep(0.05)
            codes, usage = reap(procs, time.monotonic() + duration + 30)
            out = procs["sink"].stdout.read().decode() if "sink" in codes else ""
        finally:
            for p in procs.values():
                if p.returncode is None:
                    kill_group(p)
            perf_finish(perfs.values())
    bad = {n: c for n, c in codes.items() if c != 0}
    if bad or len(codes) < len(procs):
        res["error"] = f"plain relays: exit codes {bad or codes}: {tail(errlog)}"
        return res
    try:
        sink = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res["error"] = f"plain sink printed no JSON: {out!r}"
        return res
    res.update(ok=True, bytes=sink["bytes"], seconds=sink["seconds"], hops={})
    for name in HOPS_PLAIN:
        ru = usage[name]
        res["hops"][name] = {"cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
                             "ctx_voluntary": ru.ru_nvcsw, "ctx_involuntary": ru.ru_nivcsw,
                             "perf": Perf.read(raw / f"{tag}.{name}.perf")}
    (raw / f"{tag}.json").write_text(json.dumps(res, sort_keys=True) + "\n")
    return res


def port_base():
    """A base_port whose processes' ports (base + 100 * i, i < 40) are free now."""
    import socket
    for base in range(34000, 56000, 4000):
        try:
            for i in range(1, 40):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind(("0.0.0.0", base + 100 * i))
                finally:
                    s.close()
            return base
        except OSError:
            continue
    return 34000


def run_sluice(deploy, yaml, sets, duration, raw, tag, perf, hops=(), keep_run=False):
    """One sluice-deploy run; its report, with "perf": {process: counts} for `hops`."""
    rundir = Path(tempfile.mkdtemp(prefix=f"sluice-scaling-{tag}-"))
    sets = [f"duration_s={duration:g}", "progress_s=0", f"base_port={port_base()}"] + list(sets)
    cmd = [str(deploy), "run", str(yaml), "--json", "--run-dir", str(rundir),
           "--timeout", f"{duration * 4 + 60:g}"]
    for s in sets:
        cmd += ["--set", s]
    errlog = raw / f"{tag}.stderr"
    perfs = {}
    with open(errlog, "w") as err:
        err.write("$ " + " ".join(cmd) + "\n")
        err.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, text=True, cwd=REPO)
        try:
            # Each hop's counter attached as soon as its process is up: before
            # the load generator, started last, sends anything.
            deadline = time.monotonic() + 20
            want = set(hops) if perf.events else set()
            while want and time.monotonic() < deadline and proc.poll() is None:
                for name in sorted(want):
                    for pid in pids_of(rundir, name):
                        perfs[f"{name}:{pid}"] = perf.attach(pid, raw / f"{tag}.{name}.{pid}.perf")
                        want.discard(name)
                time.sleep(0.005)
            out, _ = proc.communicate(timeout=duration * 4 + 90)
        except subprocess.TimeoutExpired:
            out = ""
        finally:
            kill_group(proc)
            perf_finish(perfs.values())
    (raw / f"{tag}.json").write_text(out)
    try:
        rep = json.loads(out)
    except ValueError:
        return {"ok": False, "error": f"sluice-deploy exited {proc.returncode} without a report: {tail(errlog)}"}
    rep["perf"] = {}
    for key in perfs:
        name, pid = key.split(":")
        counts = Perf.read(raw / f"{tag}.{name}.{pid}.perf")
        agg = rep["perf"].setdefault(name, {})
        for k, v in counts.items():
            agg[k] = agg.get(k, 0) + v
    if rep.get("ok") and any(rep.get(k) for k in ("lost", "duplicated", "corrupt")):
        rep["ok"] = False
        rep["error"] = f"lost {rep.get('lost')}, duplicated {rep.get('duplicated')}, corrupt {rep.get('corrupt')}"
    if not rep.get("ok"):
        rep["error"] = f"{rep.get('error') or 'failed'} (run dir kept: {rundir})"
        return rep
    rep["run_dir"] = str(rundir)
    if not keep_run:
        shutil.rmtree(rundir, ignore_errors=True)
    return rep


# ---------------------------------------------------------------- figures

def per_hop_sluice(rep):
    """{"tuples", "bytes", "events", "cycles_per_tuple", "per_event": {...}} averaged over the nodes."""
    procs = {p["name"]: p for p in rep.get("processes") or []}
    hops = [procs[n] for n in HOPS_SLUICE if n in procs]
    if not hops:
        return None
    ghz = float(hops[0].get("clock_ghz") or 2.6)
    out = {"cycles_per_tuple": [], "per_event": [], "clock_ghz": ghz}
    for h in hops:
        tuples, events = h.get("tuples_in") or 0, h.get("events_in") or 0
        if not tuples or not events:
            return None
        cpu = (h.get("user_s") or 0) + (h.get("sys_s") or 0)
        out["cycles_per_tuple"].append(cpu * ghz * 1e9 / tuples)
        pe = {"ctx_switches": ((h.get("ctx_voluntary") or 0) + (h.get("ctx_involuntary") or 0)) / events,
              "ctx_voluntary": (h.get("ctx_voluntary") or 0) / events,
              "user_cycles": (h.get("user_s") or 0) * ghz * 1e9 / events,
              "sys_cycles": (h.get("sys_s") or 0) * ghz * 1e9 / events}
        for k, v in (rep.get("perf") or {}).get(h["name"], {}).items():
            pe[k] = v / events
        out["per_event"].append(pe)
    out["bytes_per_tuple"] = hops[0]["bytes_in"] / hops[0]["tuples_in"]
    out["bytes_per_event"] = hops[0]["bytes_in"] / hops[0]["events_in"]
    out["cycles_per_tuple"] = statistics.mean(out["cycles_per_tuple"])
    out["per_event"] = mean_dicts(out["per_event"])
    out["tuples_per_s"] = rep.get("tuples_per_s")
    return out


def per_hop_plain(res, bytes_per_tuple, bytes_per_event, ghz):
    """The relays' figures with tuples and events as the pipeline carried them."""
    if not res.get("ok"):
        return None
    moved = res["bytes"]
    tuples, events = moved / bytes_per_tuple, moved / bytes_per_event
    cpt, pes = [], []
    for name in HOPS_PLAIN:
        h = res["hops"][name]
        cpt.append(h["cpu_s"] * ghz * 1e9 / tuples)
        pe = {"ctx_switches": (h["ctx_voluntary"] + h["ctx_involuntary"]) / events,
              "ctx_voluntary": h["ctx_voluntary"] / events,
              "user_cycles": h["user_s"] * ghz * 1e9 / events, "sys_cycles": h["sys_s"] * ghz * 1e9 / events}
        for k, v in h["perf"].items():
            pe[k] = v / events
        pes.append(pe)
    return {"cycles_per_tuple": statistics.mean(cpt), "per_event": mean_dicts(pes),
            "tuples_per_s": tuples / res["seconds"] if res["seconds"] else None}


def mean_dicts(ds):
    keys = sorted({k for d in ds for k in d})
    return {k: statistics.mean(d.get(k, 0) for d in ds) for k in keys}


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def spread(vals):
    vals = [v for v in vals if v is not None]
    return (min(vals), max(vals)) if vals else (None, None)


def f3(v):
    return "-" if v is None else f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def short(ev):
    return ev.replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "syscalls").replace(
        "sched:sched_wakeup", "wakeups")


# ---------------------------------------------------------------- parts

def part_hop(args, deploy, before, relay, perf, raw, out):
    """Per round and tuple size, each system once without perf (cycles,
    tuples/s, context switches: getrusage's, which cost nothing to read)
    and, with perf, once more with its counters attached (system calls,
    wake-ups): tracepoints put every system call of a counted process on the
    kernel's slow path, which a relay, making more of them, pays more for."""
    systems = [("tcp-opt", deploy, PIPELINE, [])] + [(n, deploy, PIPELINE, s) for n, s in args.variants]
    if before:
        systems.append(("tcp-opt@before", before[0], before[1], []))
    names = ["plain"] + [n for n, _, _, _ in systems]
    cells = {t: {n: [] for n in names} for t in args.tuple_bytes}
    counted = {t: {n: [] for n in names} for t in args.tuple_bytes}
    no_perf = Perf("off")
    for r in range(args.rounds):
        with CpuLock():  # a round at a time: its runs back to back, none beside them
            for t in args.tuple_bytes:
                order = [("plain", None, None, None)] + systems
                k = r % len(order)
                order = order[k:] + order[:k]
                for counting in ([False, True] if perf.events else [False]):
                    got = {}
                    for name, dep, yaml, sets in order:
                        tag = f"hop-t{t}-r{r}-{name.replace('@', '-')}" + ("-perf" if counting else "")
                        pf = perf if counting else no_perf
                        if name == "plain":
                            got[name] = run_plain(relay, args.duration, raw, tag, pf)
                        else:
                            got[name] = run_sluice(dep, yaml,
                                                   [f"tuple_bytes={t}", f"event_bytes={args.event_bytes}"]
                                                   + sets + args.set, args.duration, raw, tag, pf, HOPS_SLUICE)
                        if not got[name].get("ok"):
                            log(f"  {tag}: FAILED: {got[name].get('error')}")
                    ref = per_hop_sluice(got["tcp-opt"]) if got["tcp-opt"].get("ok") else None
                    if ref is None:
                        continue
                    into = counted if counting else cells
                    into[t]["plain"].append(per_hop_plain(got["plain"], ref["bytes_per_tuple"], ref["bytes_per_event"],
                                                          ref["clock_ghz"]))
                    for name, _, _, _ in systems:
                        into[t][name].append(per_hop_sluice(got[name]) if got[name].get("ok") else None)
                    if counting:
                        continue
                    line = [f"round {r + 1} {t} B:"]
                    p = cells[t]["plain"][-1]
                    for name in names:
                        v = cells[t][name][-1]
                        if v:
                            line.append(f"{name} {v['cycles_per_tuple']:.1f} c/t {(v['tuples_per_s'] or 0) / 1e6:.2f} Mt/s"
                                        + (f" ({v['cycles_per_tuple'] / p['cycles_per_tuple']:.3f}x)"
                                           if p and name != "plain" else ""))
                    log("  " + "; ".join(line))
    # The figures: per cell and system, medians over rounds of the value and
    # of its ratio to the same round's relays.
    res = {}
    for t in args.tuple_bytes:
        rows = cells[t]
        plain = rows["plain"]
        res[t] = {}
        for name in names:
            vals = rows[name]
            ok = [(v, p) for v, p in zip(vals, plain) if v and p]
            res[t][name] = {
                "rounds": len(ok),
                "cycles_per_tuple": med([v["cycles_per_tuple"] for v, _ in ok]),
                "cycles_ratio": med([v["cycles_per_tuple"] / p["cycles_per_tuple"] for v, p in ok]),
                "cycles_ratio_range": spread([v["cycles_per_tuple"] / p["cycles_per_tuple"] for v, p in ok]),
                "tuples_per_s": med([v["tuples_per_s"] for v, _ in ok]),
                "tuples_ratio": med([v["tuples_per_s"] / p["tuples_per_s"] for v, p in ok if p["tuples_per_s"]]),
                "tuples_ratio_range": spread([v["tuples_per_s"] / p["tuples_per_s"] for v, p in ok
                                              if p["tuples_per_s"]]),
                "per_event": {k: med([v["per_event"].get(k) for v, _ in ok])
                              for k in sorted({k for v, _ in ok for k in v["per_event"]})},
            }
            # The counted runs' counts (perf), beside the timed runs' own.
            cv = [v for v in counted[t][name] if v]
            for k in sorted({k for v in cv for k in v["per_event"]}):
                if k in PERF_TOTALS or k.startswith("syscalls:"):
                    res[t][name]["per_event"][k] = med([v["per_event"].get(k) for v in cv])
    out["hop"] = {str(t): v for t, v in res.items()}
    # Tables.
    txt = [f"## A hop: node against plain relay, tuples in {args.event_bytes} B events "
           f"(medians of {args.rounds} rounds; ratios per round against that round's relays)", ""]
    txt.append("| tuple | system | cycles/tuple per hop | x relay (range) | tuples/s | x relay (range) |")
    txt.append("|---|---|---|---|---|---|")
    for t in args.tuple_bytes:
        for n in names:
            v = res[t][n]
            cr, tr = v["cycles_ratio_range"], v["tuples_ratio_range"]
            txt.append(f"| {t} B | {n} | {f3(v['cycles_per_tuple'])} | "
                       + ("1" if n == "plain" else f"{f3(v['cycles_ratio'])} ({f3(cr[0])}-{f3(cr[1])})")
                       + f" | {f3((v['tuples_per_s'] or 0) / 1e6)} M | "
                       + ("1" if n == "plain" else f"{f3(v['tuples_ratio'])} ({f3(tr[0])}-{f3(tr[1])})") + " |")
    txt.append("")
    for t in args.tuple_bytes:
        keys = sorted({k for n in names for k in res[t][n]["per_event"]},
                      key=lambda k: (k not in ("user_cycles", "sys_cycles", "ctx_switches", "ctx_voluntary",
                                               "raw_syscalls:sys_enter", "sched:sched_wakeup",
                                               "context-switches", "cpu-migrations"), k))
        txt.append(f"Per event and hop, {t} B tuples (relay events: its bytes over the pipeline's bytes per "
                   "event; system calls, wake-ups issued and migrations from the runs perf counted, the "
                   "rest from the timed runs):")
        txt.append("")
        txt.append("| count | " + " | ".join(names) + " |")
        txt.append("|---|" + "---|" * len(names))
        for k in keys:
            vals = [res[t][n]["per_event"].get(k) for n in names]
            if all(not v for v in vals):
                continue
            txt.append(f"| {short(k)} | " + " | ".join(f3(v) for v in vals) + " |")
        txt.append("")
    return "\n".join(txt)


def input_rate(rep):
    """Tuples/s the load generators made: each one's tuples over its measured interval, summed."""
    tot = 0.0
    for p in rep.get("processes") or []:
        if p.get("role") == "loadgen" and p.get("wall_s"):
            tot += (p.get("tuples_out") or 0) / p["wall_s"]
    return tot


def rows_of(rep, name):
    """The sink's result rows without their seq (the derived streams' own numbering), sorted."""
    path = Path(rep["run_dir"]) / name
    try:
        lines = path.read_text().splitlines()[1:]
    except OSError:
        return None
    return sorted(line.split(",", 1)[1] for line in lines)


def part_parallel(args, deploy, raw, out):
    """The demo pipeline as one process per role against each role as
    --parallelism processes (the sink too: P paths side by side)."""
    P = args.parallelism
    systems = [("1", []), (str(P), [f"parallelism={P}", f"processes.3.parallelism={P}"])]
    if args.pin:
        systems.append((f"{P}+pin", [f"parallelism={P}", f"processes.3.parallelism={P}", "pin=spread"]))
    got = {n: [] for n, _ in systems}
    for r in range(args.rounds):
        with CpuLock():  # a round at a time: its runs back to back, none beside them
            k = r % len(systems)
            for name, sets in systems[k:] + systems[:k]:
                tag = f"par-{name.replace('+', '-')}-r{r}"
                rep = run_sluice(deploy, PIPELINE, [f"event_bytes={args.event_bytes}"] + sets + args.set,
                                 args.duration, raw, tag, Perf("off"))
                if not rep.get("ok"):
                    log(f"  {tag}: FAILED: {rep.get('error')}")
                got[name].append(rep.get("tuples_per_s") if rep.get("ok") else None)
            log(f"  round {r + 1} parallelism: " + "; ".join(
                f"{n} {(got[n][-1] or 0) / 1e6:.2f} Mt/s" for n, _ in systems))
    base = got["1"]
    res = {}
    for name, _ in systems:
        ratios = [v / b for v, b in zip(got[name], base) if v and b]
        res[name] = {"tuples_per_s": med(got[name]), "ratio": med(ratios), "ratio_range": spread(ratios),
                     "rounds": len(ratios)}
    out["parallel"] = res
    txt = [f"## The demo pipeline, parallelism 1 against {P} (each role, the sink too: {P} paths; "
           f"medians of {args.rounds} rounds)", "",
           "| parallelism | tuples/s | x parallelism 1 (range) |", "|---|---|---|"]
    for name, _ in systems:
        v = res[name]
        rr = v["ratio_range"]
        txt.append(f"| {name} | {f3((v['tuples_per_s'] or 0) / 1e6)} M | {f3(v['ratio'])} ({f3(rr[0])}-{f3(rr[1])}) |")
    return "\n".join(txt) + "\n"


def part_esper(args, deploy, raw, out):
    """esper_parallel.yaml: input tuples/s with every role at --parallelism
    against every role at 1, alternated; then the rows of one counted input
    (--esper-tuples per load generator) with the group-by as P processes
    and as one, compared."""
    P = args.parallelism
    res = {"parallelism": P}
    systems = [("1", ["parallelism=1"]), (str(P), [f"parallelism={P}"])]
    if args.pin:
        systems.append((f"{P}+pin", [f"parallelism={P}", "pin=spread"]))
    got = {n: [] for n, _ in systems}
    for r in range(args.rounds):
        with CpuLock():  # a round at a time: its runs back to back, none beside them
            k = r % len(systems)
            for name, sets in systems[k:] + systems[:k]:
                tag = f"esper-{name.replace('+', '-')}-r{r}"
                rep = run_sluice(deploy, ESPER, sets + args.set, args.duration, raw, tag, Perf("off"))
                if not rep.get("ok"):
                    log(f"  {tag}: FAILED: {rep.get('error')}")
                got[name].append(input_rate(rep) if rep.get("ok") else None)
            log(f"  round {r + 1} esper input: " + "; ".join(
                f"{n} {(got[n][-1] or 0) / 1e6:.2f} Mt/s" for n, _ in systems))
    for name, _ in systems:
        ratios = [v / b for v, b in zip(got[name], got["1"]) if v and b]
        res[name] = {"input_tuples_per_s": med(got[name]), "ratio": med(ratios), "ratio_range": spread(ratios)}
    # The rows: the same input (P load generators, --esper-tuples each), the
    # group-by as P processes and as one.
    rows = {}
    with CpuLock():
        for name, sets in ((str(P), []), ("1", ["processes.2.parallelism=1"])):
            rep = run_sluice(deploy, ESPER, [f"parallelism={P}", f"tuples={args.esper_tuples}"] + sets + args.set,
                             args.duration, raw, f"esper-rows-{name}", Perf("off"), keep_run=True)
            rows[name] = rows_of(rep, "esper-parallel-results.csv") if rep.get("ok") else None
            if not rep.get("ok"):
                log(f"  esper rows, group-by x {name}: FAILED: {rep.get('error')}")
            else:
                shutil.rmtree(rep["run_dir"], ignore_errors=True)
    a, b = rows[str(P)], rows["1"]
    res["rows"] = {"group_by_x_p": len(a) if a is not None else None, "group_by_x_1": len(b) if b is not None else None,
                   "equal": a is not None and a == b, "tuples_per_loadgen": args.esper_tuples}
    out["esper"] = res
    txt = [f"## The esper query (deploy/examples/esper_parallel.yaml): input tuples/s, parallelism 1 against "
           f"{P} (medians of {args.rounds} rounds)", "",
           "| parallelism | input tuples/s | x parallelism 1 (range) |", "|---|---|---|"]
    for name, _ in systems:
        v = res[name]
        rr = v["ratio_range"]
        txt.append(f"| {name} | {f3((v['input_tuples_per_s'] or 0) / 1e6)} M | {f3(v['ratio'])} "
                   f"({f3(rr[0])}-{f3(rr[1])}) |")
    rw = res["rows"]
    txt += ["", f"Rows of {P} load generators x {args.esper_tuples:,} tuples: group-by as {P} processes "
                f"{rw['group_by_x_p']} rows, as one {rw['group_by_x_1']} rows: "
                + ("the same rows" if rw["equal"] else "DIFFERENT")]
    return "\n".join(txt) + "\n"


def part_fabric(args, deploy, before, raw, out):
    """fabric-opt over shm against tcp-opt: tuples/s at each tuple size, one
    tuple per event and in --event-bytes events (and fabric shm by the
    --before build)."""
    shm = ["preset=fabric-opt", "fabric_provider=shm"]
    # (name, sets, sluice-deploy, deployment file)
    systems = [("tcp-opt", ["preset=tcp-opt"], deploy, PIPELINE), ("fabric-shm", shm, deploy, PIPELINE),
               ("fabric-shm/adaptive", shm + ["threads=adaptive"], deploy, PIPELINE),
               ("fabric-shm/rma", shm + ["rma=on"], deploy, PIPELINE)]
    if before:
        systems.append(("fabric-shm@before", shm, before[0], before[1]))
    cells = [(t, e) for t in args.tuple_bytes for e in (0, args.event_bytes)]
    got = {(c, n): [] for c in cells for n, *_ in systems}
    for r in range(args.rounds):
        with CpuLock():  # a round at a time: its runs back to back, none beside them
            for t, e in cells:
                k = r % len(systems)
                for name, sets, prog, yaml in systems[k:] + systems[:k]:
                    tag = f"fabric-{name.replace('/', '-').replace('@', '-')}-t{t}-e{e}-r{r}"
                    rep = run_sluice(prog, yaml, sets + [f"tuple_bytes={t}", f"event_bytes={e}"] + args.set,
                                     args.duration, raw, tag, Perf("off"))
                    if not rep.get("ok"):
                        log(f"  {tag}: FAILED: {rep.get('error')}")
                    got[((t, e), name)].append(rep.get("tuples_per_s") if rep.get("ok") else None)
                log(f"  round {r + 1} {t} B x {e or 'one tuple'}: " + "; ".join(
                    f"{n} {(got[((t, e), n)][-1] or 0) / 1e6:.2f} Mt/s" for n, *_ in systems))
    res = {}
    others = [n for n, *_ in systems[1:]]
    txt = [f"## fabric shm against tcp-opt, tuples/s (medians of {args.rounds} rounds; fabric shm runs "
           "its processes' stages on one thread each (threads: auto), /adaptive on three; /rma writes "
           "each frame into the receiver's slot; @before: the --before build's)", "",
           "| tuple | event | tcp-opt | " + " | ".join(f"{n} | x tcp-opt (range)" for n in others) + " |",
           "|---|---|---|" + "---|---|" * len(others)]
    for t, e in cells:
        a = got[((t, e), "tcp-opt")]
        key = f"{t}x{e}"
        res[key] = {"tcp_opt": med(a)}
        line = f"| {t} B | {e or 'one tuple'} | {f3((med(a) or 0) / 1e6)} M"
        for name in others:
            b = got[((t, e), name)]
            ratios = [y / x for x, y in zip(a, b) if x and y]
            rr = spread(ratios)
            res[key][name] = {"tuples_per_s": med(b), "ratio": med(ratios), "ratio_range": rr}
            line += f" | {f3((med(b) or 0) / 1e6)} M | {f3(med(ratios))} ({f3(rr[0])}-{f3(rr[1])})"
        txt.append(line + " |")
    out["fabric"] = res
    return "\n".join(txt) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--before", help="another build: the pipeline again with its programs (tcp-opt@before; "
                    "the fabric part: fabric-shm@before)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--parts", default="hop,parallel,esper")
    ap.add_argument("--tuple-bytes", default="128,4096")
    ap.add_argument("--event-bytes", type=int, default=32768)
    ap.add_argument("--parallelism", type=int, default=4)
    ap.add_argument("--pin", action="store_true", help="parallel and esper parts: also with pin=spread")
    ap.add_argument("--esper-tuples", type=int, default=2000000,
                    help="esper part: tuples per load generator of the runs whose rows are compared")
    ap.add_argument("--variant", action="append", default=[], help="NAME:k=v,k=v (a sluice system of its own)")
    ap.add_argument("--set", action="append", default=[], help="k=v for every sluice run")
    ap.add_argument("--counts", choices=["on", "off", "auto"], default="auto")
    ap.add_argument("--out")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    args = ap.parse_args()
    args.tuple_bytes = [int(x) for x in args.tuple_bytes.split(",") if x]
    args.variants = []
    for v in args.variant:
        name, _, keys = v.partition(":")
        sets = [k for k in keys.split(",") if k]
        if not name or name in ("plain", "tcp-opt") or any("=" not in k for k in sets):
            sys.exit(f"--variant {v!r}: NAME:k=v,k=v with a name of its own")
        args.variants.append((name, sets))
    parts = [p for p in args.parts.split(",") if p]
    for p in parts:
        if p not in ("hop", "parallel", "esper", "fabric"):
            sys.exit(f"--parts: unknown part {p!r} (hop, parallel, esper, fabric)")
    build = Path(args.build)
    deploy = build / "deploy/sluice-deploy"
    if not deploy.exists():
        sys.exit(f"no {deploy}: build first")
    before = None
    if args.before:
        before = Path(args.before) / "deploy/sluice-deploy"
        if not before.exists():
            sys.exit(f"--before: no {before}")
        # The deployment file of the tree that build came from, where there
        # is one: an older sluice-deploy refuses keys added since.
        yaml = Path(args.before).resolve().parent / PIPELINE.relative_to(REPO)
        before = (before, yaml if yaml.exists() else PIPELINE)
    relay = find_binary(build, "experiments", "sluice-plainrelay")
    out_dir = Path(args.out or REPO / "runs" / f"scaling-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    raw = out_dir / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    perf = Perf(args.counts)
    log(f"scaling.py: {os.cpu_count()} cpus, parts {','.join(parts)}, {args.rounds} rounds of {args.duration:g} s, "
        f"perf counts: {'on' if perf.events else 'off'}; raw in {raw}")
    out = {"cpus": os.cpu_count(), "rounds": args.rounds, "duration_s": args.duration,
           "event_bytes": args.event_bytes, "perf": bool(perf.events)}
    text = []
    if "hop" in parts:
        text.append(part_hop(args, deploy, before, relay, perf, raw, out))
    if "parallel" in parts:
        text.append(part_parallel(args, deploy, raw, out))
    if "esper" in parts:
        text.append(part_esper(args, deploy, raw, out))
    if "fabric" in parts:
        text.append(part_fabric(args, deploy, before, raw, out))
    report = "\n".join(text)
    (out_dir / "scaling.md").write_text(report + "\n")
    (out_dir / "scaling.json").write_text(json.dumps(out, indent=1) + "\n")
    if args.json:
        log(report)
        print(json.dumps(out, indent=1))
    else:
        print(report)


if __name__ == "__main__":
    main()
