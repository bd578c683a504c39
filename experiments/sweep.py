#!/usr/bin/env python3
"""The sweep: sluice's presets against each other and against plain sockets.

1. Runs the plain-socket baseline (four sluice-plainrelay processes on
   loopback: source -> relay -> relay -> sink, 32 KiB chunks).
2. Runs `sluice-deploy run <file> --json --set ...` for every preset x tuple
   size x event size (x --repeat), one at a time.
3. Runs the baseline again, so the two baselines show how much the machine
   itself drifted during the sweep.
4. Writes results.csv (one row per run, failures included), a raw JSON and log
   per run, and results.md (the tables, also printed).

`--idle SECONDS` instead runs each preset with one event at the start and
then nothing for SECONDS, and reports each process's CPU (user + system, % of
one core): what an idle link costs (a link that spins shows here).

`--congestion-compare` instead runs tcp-opt 128 B tuples / 32 KiB events and
the baseline with each of reno, bbr and cubic.

Python 3 standard library only. See experiments/README.md.
"""

import argparse
import csv
import datetime
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PRESETS = ["original", "tcp-opt"]
TUPLE_SIZES = [12, 128, 1024, 4096]
QUICK_TUPLE_SIZES = [128, 4096]
EVENT_SIZES = [0, 32768]  # 0: one tuple per event
DEFAULT_SLOT_BYTES = 65536
EVENT_OVERHEAD = 80  # event header and framing a slot must hold beyond the event
BASELINE_CHUNK = 32768
COMPARE_CONGESTIONS = ["reno", "bbr", "cubic"]
NODE_NAMES = ["loadgen", "node-a", "node-b", "sink"]

CSV_FIELDS = (
    ["kind", "phase", "repeat", "preset", "tuple_bytes", "event_bytes", "congestion",
     "duration_s", "ok", "error", "tuples", "tuples_per_s", "gbps"]
    + [f"cpe_p_{n}" for n in NODE_NAMES]
    + [f"cpe_u_{n}" for n in NODE_NAMES]
    + [f"cpe_s_{n}" for n in NODE_NAMES]
    + [f"cpu_pct_{n}" for n in NODE_NAMES]
    + ["cpe_p_other", "lost", "duplicated", "corrupt", "filtered",
       "latency_p50_us", "latency_p99_us", "latency_max_us", "wall_s", "raw"]
)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- processes

def kill_group(proc):
    """Ends a process we started and everything it started (its own session)."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=3)
            return
        except subprocess.TimeoutExpired:
            continue


def reap(procs, deadline):
    """Waits for the processes of procs ({name: Popen}) with wait4, for the
    rusage of each one's whole life, until all have exited, one failed, or
    time.monotonic() passes deadline: ({name: exit code}, {name: rusage}) of
    those that exited (their returncode set, so kill_group leaves them)."""
    codes, usage = {}, {}
    while len(codes) < len(procs):
        for name, p in procs.items():
            if name in codes:
                continue
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                codes[name] = os.waitstatus_to_exitcode(status)
                p.returncode = codes[name]
                usage[name] = ru
        if any(c != 0 for c in codes.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return codes, usage


def free_ports(n):
    """n distinct ports the kernel says are free right now."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


# ---------------------------------------------------------------- baseline

def find_binary(build, rel, name):
    for cand in (Path(build) / rel / name, Path(build) / name):
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def run_baseline(plainrelay, duration, congestion, chunk, logdir, tag):
    """Four sluice-plainrelay processes on loopback; returns a result row dict."""
    row = base_row("baseline", tag, preset="plain-sockets", tuple_bytes="",
                   event_bytes=chunk, congestion=congestion, duration=duration)
    if plainrelay is None:
        row["error"] = "sluice-plainrelay not built (target sluice-plainrelay)"
        return row
    common = ["--chunk", str(chunk)]
    if congestion and congestion != "default":
        common += ["--congestion", congestion]
    p1, p2, p3 = free_ports(3)
    cmds = [
        ("sink", [str(plainrelay), "sink", "--listen", str(p3), "--json"] + common),
        ("relay2", [str(plainrelay), "relay", "--listen", str(p2), "--connect", f"127.0.0.1:{p3}"] + common),
        ("relay1", [str(plainrelay), "relay", "--listen", str(p1), "--connect", f"127.0.0.1:{p2}"] + common),
        ("source", [str(plainrelay), "source", "--connect", f"127.0.0.1:{p1}",
                    "--duration", f"{duration:g}"] + common),
    ]
    procs = []
    errlog = logdir / f"{tag}.stderr"
    t0 = time.monotonic()
    with open(errlog, "w") as err:
        try:
            for name, cmd in cmds:
                err.write(f"$ {' '.join(cmd)}\n")
                err.flush()
                procs.append((name, subprocess.Popen(
                    cmd, stdout=subprocess.PIPE if name == "sink" else subprocess.DEVNULL,
                    stderr=err, stdin=subprocess.DEVNULL, start_new_session=True, text=True)))
            # Poll them all: one that fails early (port in use, unknown
            # congestion control) would leave the others waiting for it.
            deadline = time.monotonic() + duration + 30
            while any(p.poll() is None for _, p in procs):
                if any(p.returncode not in (None, 0) for _, p in procs):
                    break
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired("baseline", duration + 30)
                time.sleep(0.05)
            sink = procs[0][1]
            sink_out = sink.stdout.read() if sink.poll() is not None else ""
            codes = {name: p.poll() for name, p in procs}
        except subprocess.TimeoutExpired:
            row["error"] = f"baseline did not finish within {duration + 30:.0f} s"
            return row
        finally:
            for _, p in procs:
                kill_group(p)
    row["wall_s"] = f"{time.monotonic() - t0:.2f}"
    bad = {n: c for n, c in codes.items() if c != 0}
    if bad:
        row["error"] = f"baseline process exit codes {bad}; see {errlog}: " + tail(errlog)
        return row
    try:
        res = json.loads(sink_out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        row["error"] = f"baseline sink printed no JSON: {sink_out!r}"
        return row
    raw = logdir / f"{tag}.json"
    raw.write_text(json.dumps(res, sort_keys=True) + "\n")
    row.update(ok="true", gbps=res.get("gbps", ""), raw=str(raw.relative_to(logdir.parent)))
    return row


def tail(path, lines=3):
    """The log's error lines, or else its last lines, for the error column."""
    try:
        text = Path(path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    errors = [l for l in text if "error" in l.lower() and not l.startswith("$ ")]
    return " | ".join((errors or text)[-lines:])


# ---------------------------------------------------------------- sluice runs

def base_row(kind, phase, preset, tuple_bytes, event_bytes, congestion, duration, repeat=""):
    row = {f: "" for f in CSV_FIELDS}
    row.update(kind=kind, phase=phase, repeat=repeat, preset=preset, tuple_bytes=tuple_bytes,
               event_bytes=event_bytes, congestion=congestion, duration_s=f"{duration:g}", ok="false")
    return row


def deploy_command(deploy, pipeline, preset, tuple_bytes, event_bytes, duration, congestion, extra_sets):
    # "fabric-opt/shm": the preset, with its carrier's provider (fabric) or
    # transports (ucx) for every link.
    # "ucx-opt/sm+rma": the same with rma: on (frames written into the
    # receiver's slots, msg.h item 6).
    name, _, variant = preset.partition("/")
    variant, _, mode = variant.partition("+")
    # guarantee: none: the study had no acks and no restarts.
    sets = [f"preset={name}", "guarantee=none", f"tuple_bytes={tuple_bytes}", f"event_bytes={event_bytes}",
            f"duration_s={duration:g}"]
    if variant:
        sets.append(f"{'fabric_provider' if name == 'fabric-opt' else 'ucx_tls'}={variant}")
    if mode in ("rma", "msg"):
        # "+msg": rma off, each frame a message (rma: auto is on over ucx sm)
        sets.append(f"rma={'on' if mode == 'rma' else 'off'}")
    elif mode:
        raise SystemExit(f"preset {preset}: unknown mode '+{mode}' (known: +rma, +msg)")
    if congestion and congestion != "default":
        sets.append(f"congestion={congestion}")
    # A slot holds one whole event plus its header; the default is enough for
    # the sweep's sizes, larger events need larger slots.
    if event_bytes + EVENT_OVERHEAD > DEFAULT_SLOT_BYTES:
        sets.append(f"slot_bytes={event_bytes + EVENT_OVERHEAD}")
    sets += extra_sets
    cmd = [str(deploy), "run", str(pipeline), "--json"]
    for s in sets:
        cmd += ["--set", s]
    return cmd


def parse_report(text):
    """The JSON object sluice-deploy --json printed: the whole stdout, or else
    its last line that parses as an object (in case something logged before)."""
    text = text.strip()
    if not text:
        raise ValueError("no output on stdout")
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            return obj
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    raise ValueError("no JSON object on stdout: " + text[-200:])


def fill_from_report(row, rep):
    """Copies the report's numbers into a CSV row."""
    row["ok"] = "true" if rep.get("ok") else "false"
    row["error"] = rep.get("error") or ""
    for k in ("tuples", "tuples_per_s", "gbps", "lost", "duplicated", "corrupt", "filtered"):
        v = rep.get(k)
        row[k] = "" if v is None else v
    lat = rep.get("latency_us") or {}
    row["latency_p50_us"] = lat.get("p50", "")
    row["latency_p99_us"] = lat.get("p99", "")
    row["latency_max_us"] = lat.get("max", "")
    other = []
    for p in rep.get("processes") or []:
        name = p.get("name", "?")
        if name in NODE_NAMES:
            row[f"cpe_p_{name}"] = p.get("cpe_p", "")
            row[f"cpe_u_{name}"] = p.get("cpe_u", "")
            row[f"cpe_s_{name}"] = p.get("cpe_s", "")
            wall = num(p.get("wall_s"))
            if wall > 0:
                row[f"cpu_pct_{name}"] = f"{100 * (num(p.get('user_s')) + num(p.get('sys_s'))) / wall:.2f}"
        else:
            other.append(f"{name}={p.get('cpe_p', '')}")
    row["cpe_p_other"] = ";".join(other)
    # A run with lost, duplicated or corrupt tuples is a failed run whatever it says.
    if row["ok"] == "true" and any(num(row[k]) for k in ("lost", "duplicated", "corrupt")):
        row["ok"] = "false"
        row["error"] = row["error"] or "lost/duplicated/corrupt tuples"


def run_sluice(deploy, pipeline, preset, tuple_bytes, event_bytes, duration, congestion,
               repeat, logdir, extra_sets, phase="sweep"):
    row = base_row("sluice", phase, preset, tuple_bytes, event_bytes, congestion, duration, repeat)
    tag = f"{phase}-{preset.replace('/', '_')}-t{tuple_bytes}-e{event_bytes}-{congestion or 'default'}-r{repeat}"
    if deploy is None:
        row["error"] = "sluice-deploy not found (build target sluice-deploy, or pass --deploy)"
        return row
    cmd = deploy_command(deploy, pipeline, preset, tuple_bytes, event_bytes, duration, congestion,
                         extra_sets)
    errlog = logdir / f"{tag}.stderr"
    limit = duration * 3 + 60
    t0 = time.monotonic()
    with open(errlog, "w") as err:
        err.write(f"$ {' '.join(cmd)}\n")
        err.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, text=True, cwd=REPO)
        try:
            out, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            row["error"] = f"timed out after {limit:.0f} s; see {errlog}"
            return row
        finally:
            kill_group(proc)  # anything it left behind in its session
    row["wall_s"] = f"{time.monotonic() - t0:.2f}"
    (logdir / f"{tag}.json").write_text(out)
    try:
        rep = parse_report(out)
    except ValueError as e:
        row["error"] = f"exit {proc.returncode}: {e}; see {errlog}: {tail(errlog)}"
        return row
    fill_from_report(row, rep)
    if proc.returncode != 0:
        row["ok"] = "false"
        row["error"] = row["error"] or f"sluice-deploy exited {proc.returncode}; see {errlog}"
    row["raw"] = str((logdir / f"{tag}.json").relative_to(logdir.parent))
    return row


# ---------------------------------------------------------------- tables

def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def median_of(rows, key):
    vals = [num(r[key]) for r in rows if r["ok"] == "true" and r[key] not in ("", None)]
    return statistics.median(vals) if vals else None


def si(v, unit=""):
    if v is None:
        return "—"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}{unit}"
    return f"{v:.3g}{unit}"


def fmt(v, spec=".3g"):
    return "—" if v is None else format(v, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def event_label(e):
    return "1 tuple" if int(e) == 0 else f"{int(e) // 1024} KiB" if int(e) % 1024 == 0 else f"{e} B"


def sweep_tables(rows, baselines, args):
    out = []
    sl = [r for r in rows if r["kind"] == "sluice"]
    cells = sorted({(int(r["tuple_bytes"]), int(r["event_bytes"])) for r in sl},
                   key=lambda c: (c[1], c[0]))
    presets = [p for p in PRESETS if any(r["preset"] == p for r in sl)] + sorted(
        {r["preset"] for r in sl} - set(PRESETS))

    out.append(f"Duration {args.duration:g} s per run, congestion control "
               f"{args.congestion}, repeats {args.repeat} (medians of the runs that passed).\n")
    out.append("## Baseline: plain sockets, 4 processes on loopback, "
               f"{BASELINE_CHUNK // 1024} KiB chunks\n")
    out.append("| when | Gb/s | error |")
    out.append("|---|---|---|")
    for b in baselines:
        out.append(f"| {b['phase']} | {fmt(num(b['gbps']) if b['ok'] == 'true' else None)} | "
                   f"{b['error']} |")
    good_base = [num(b["gbps"]) for b in baselines if b["ok"] == "true"]
    out.append("")

    if not sl:
        return "\n".join(out + failure_lines(rows))
    both = "original" in presets and "tcp-opt" in presets
    out.append("## Throughput\n")
    head = ["tuple B", "event"] + [f"{p} tuples/s" for p in presets]
    if both:
        head.append("tcp-opt/original tuples/s")
    head += [f"{p} Gb/s" for p in presets] + ["failed runs"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for t, e in cells:
        rs = {p: [r for r in sl if r["preset"] == p and int(r["tuple_bytes"]) == t
                  and int(r["event_bytes"]) == e] for p in presets}
        tps = {p: median_of(rs[p], "tuples_per_s") for p in presets}
        line = [str(t), event_label(e)] + [si(tps[p]) for p in presets]
        if both:
            line.append(fmt(ratio(tps["tcp-opt"], tps["original"]), ".2f"))
        line += [fmt(median_of(rs[p], "gbps")) for p in presets]
        line.append(str(sum(1 for p in presets for r in rs[p] if r["ok"] != "true")))
        out.append("| " + " | ".join(line) + " |")
    out.append("")

    out.append("## CPE_p: user + system cycles per event, per process\n")
    head = ["tuple B", "event", "preset"] + NODE_NAMES
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for t, e in cells:
        for p in presets:
            rs = [r for r in sl if r["preset"] == p and int(r["tuple_bytes"]) == t
                  and int(r["event_bytes"]) == e]
            out.append("| " + " | ".join([str(t), event_label(e), p] + [
                si(median_of(rs, f"cpe_p_{n}")) for n in NODE_NAMES]) + " |")
    out.append("")

    if "tcp-opt" in presets and len(presets) > 1:
        out.append("## Each preset against tcp-opt in the same sweep\n")
        out.append("Gb/s and tuples/s as a ratio of tcp-opt's in the same cell; node CPE_s "
                   "(node-a, node-b: system cycles per event) as a change from tcp-opt's.\n")
        others = [p for p in presets if p != "tcp-opt"]
        head = ["tuple B", "event"] + [f"{p} x Gb/s" for p in others] + [
            f"{p} node CPE_s" for p in others]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for t, e in cells:
            def cell(p):
                return [r for r in sl if r["preset"] == p and int(r["tuple_bytes"]) == t
                        and int(r["event_bytes"]) == e]
            base = cell("tcp-opt")
            g0 = median_of(base, "gbps")
            s0 = (median_of(base, "cpe_s_node-a") or 0) + (median_of(base, "cpe_s_node-b") or 0)
            line = [str(t), event_label(e)]
            line += [fmt(ratio(median_of(cell(p), "gbps"), g0), ".2f") for p in others]
            for p in others:
                s1 = (median_of(cell(p), "cpe_s_node-a") or 0) + (median_of(cell(p), "cpe_s_node-b") or 0)
                line.append(f"{100 * (s1 - s0) / s0:+.0f}%" if s0 and s1 else "")
            out.append("| " + " | ".join(line) + " |")
        out.append("")

    out.append("## CPE_u / CPE_s per process (user / system cycles per event)\n")
    head = ["tuple B", "event", "preset"] + NODE_NAMES
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for t, e in cells:
        for p in presets:
            rs = [r for r in sl if r["preset"] == p and int(r["tuple_bytes"]) == t
                  and int(r["event_bytes"]) == e]
            out.append("| " + " | ".join([str(t), event_label(e), p] + [
                f"{si(median_of(rs, f'cpe_u_{n}'))} / {si(median_of(rs, f'cpe_s_{n}'))}"
                for n in NODE_NAMES]) + " |")
    out.append("")

    big = [c for c in cells if c[1] == BASELINE_CHUNK]
    if big and good_base:
        out.append(f"## tcp-opt against the baseline ({BASELINE_CHUNK // 1024} KiB events)\n")
        out.append("| tuple B | tcp-opt Gb/s | fraction of baseline (start) | "
                   "fraction of baseline (end) |")
        out.append("|---|---|---|---|")
        start = next((num(b["gbps"]) for b in baselines if b["phase"] == "baseline-start"
                      and b["ok"] == "true"), None)
        end = next((num(b["gbps"]) for b in baselines if b["phase"] == "baseline-end"
                    and b["ok"] == "true"), None)
        for t, e in big:
            g = median_of([r for r in sl if r["preset"] == "tcp-opt" and int(r["tuple_bytes"]) == t
                           and int(r["event_bytes"]) == e], "gbps")
            out.append(f"| {t} | {fmt(g)} | {fmt(ratio(g, start), '.2f')} | "
                       f"{fmt(ratio(g, end), '.2f')} |")
        out.append("")

    return "\n".join(out + failure_lines(rows))


def idle_table(rows, args):
    out = [f"One event, then {args.idle:g} s with none: CPU of each process (user + system, "
           "% of one core; medians of the runs that passed).\n"]
    head = ["preset"] + NODE_NAMES
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for p in dict.fromkeys(r["preset"] for r in rows):
        rs = [r for r in rows if r["preset"] == p]
        out.append("| " + " | ".join([p] + [fmt(median_of(rs, f"cpu_pct_{n}"), ".2f")
                                           for n in NODE_NAMES]) + " |")
    out.append("")
    return "\n".join(out + failure_lines(rows))


def failure_lines(rows):
    failures = [r for r in rows if r["ok"] != "true"]
    if not failures:
        return []
    out = ["## Failed runs\n"]
    for r in failures:
        out.append(f"- {r['kind']} {r['phase']} {r['preset']} tuple={r['tuple_bytes']} "
                   f"event={r['event_bytes']} congestion={r['congestion']} "
                   f"repeat={r['repeat']}: {r['error']}")
    out.append("")
    return out


def compare_tables(rows, args):
    out = [f"## Congestion control: tcp-opt 128 B tuples / 32 KiB events against the baseline\n",
           f"Duration {args.duration:g} s per run, repeats {args.repeat} (medians of passing runs).\n",
           "| congestion | baseline Gb/s | tcp-opt Gb/s | tcp-opt tuples/s | fraction of baseline | "
           "failed runs |",
           "|---|---|---|---|---|---|"]
    for c in args.compare_congestions:
        b = [r for r in rows if r["kind"] == "baseline" and r["congestion"] == c]
        s = [r for r in rows if r["kind"] == "sluice" and r["congestion"] == c]
        bg, sg = median_of(b, "gbps"), median_of(s, "gbps")
        failed = sum(1 for r in b + s if r["ok"] != "true")
        out.append(f"| {c} | {fmt(bg)} | {fmt(sg)} | {si(median_of(s, 'tuples_per_s'))} | "
                   f"{fmt(ratio(sg, bg), '.2f')} | {failed} |")
    out.append("")
    return "\n".join(out + failure_lines(rows))


# ---------------------------------------------------------------- main

def available_congestions():
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


def describe(row):
    if row["ok"] != "true":
        return f"FAILED: {row['error']}"
    if row["kind"] == "baseline":
        return f"{num(row['gbps']):.3f} Gb/s"
    return (f"{si(num(row['tuples_per_s']))} tuples/s, {num(row['gbps']):.3f} Gb/s, "
            f"p99 {row['latency_p99_us']} us")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=3, help="seconds per run (default 3)")
    ap.add_argument("--presets", default=",".join(PRESETS),
                    help="comma list; fabric-opt/PROVIDER and ucx-opt/TLS pick the carrier "
                         "(e.g. tcp-opt,fabric-opt/tcp,fabric-opt/shm,ucx-opt/tcp,ucx-opt/sm)")
    ap.add_argument("--congestion", default="reno",
                    help="TCP congestion control for every link and the baseline; "
                         "'default' leaves the system's (default reno)")
    ap.add_argument("--build", default="./build", help="build directory (default ./build)")
    ap.add_argument("--out", help="where its files go (default runs/sweep-<timestamp>)")
    ap.add_argument("--quick", action="store_true", help="tuple sizes 128 and 4096 only")
    ap.add_argument("--events", default=",".join(str(e) for e in EVENT_SIZES),
                    help="event sizes in bytes, comma-separated; 0: one tuple per event "
                         "(default 0,32768)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per cell (default 1)")
    ap.add_argument("--idle", type=float, default=0, metavar="SECONDS",
                    help="instead of the sweep: each preset idle for SECONDS (one event, then "
                         "none); CPU %% of each process")
    ap.add_argument("--congestion-compare", action="store_true",
                    help="tcp-opt 128 B / 32 KiB and the baseline with reno, bbr, cubic")
    ap.add_argument("--compare-congestions", default=",".join(COMPARE_CONGESTIONS),
                    help="the list --congestion-compare uses (default reno,bbr,cubic)")
    ap.add_argument("--pipeline", default=str(REPO / "deploy/examples/pipeline.yaml"),
                    help="deployment file (default deploy/examples/pipeline.yaml)")
    ap.add_argument("--deploy", help="sluice-deploy binary (default: found in the build dir)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra --set passed to every sluice-deploy run")
    ap.add_argument("--no-baseline", action="store_true", help="skip the plain-socket baseline")
    ap.add_argument("--baseline-only", action="store_true", help="run only the baseline (twice)")
    args = ap.parse_args()
    args.compare_congestions = [c for c in args.compare_congestions.split(",") if c]
    if args.repeat < 1 or args.duration <= 0:
        ap.error("--repeat must be >= 1 and --duration > 0")

    build = Path(args.build)
    if not build.is_absolute():
        build = (Path.cwd() / build).resolve()
    plainrelay = find_binary(build, "experiments", "sluice-plainrelay")
    deploy = Path(args.deploy).resolve() if args.deploy else find_binary(build, "deploy", "sluice-deploy")
    if deploy is None and not args.baseline_only:
        deploy = shutil.which("sluice-deploy")
    if plainrelay is None and not args.no_baseline:
        log(f"warning: {build}/experiments/sluice-plainrelay not found; baseline runs will fail")
    if deploy is None and not args.baseline_only:
        log(f"warning: sluice-deploy not found under {build}; sluice runs will fail")

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else REPO / "runs" / f"sweep-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    logdir = out / "raw"
    logdir.mkdir(exist_ok=True)

    wanted = set(args.compare_congestions if args.congestion_compare else [args.congestion])
    have = available_congestions()
    for c in sorted(wanted - {"default"}):
        if have and c not in have:
            log(f"warning: congestion control {c!r} is not in tcp_available_congestion_control "
                f"({' '.join(have)}); try `modprobe tcp_{c}`. Its runs will fail.")

    # The plan: (label, thunk) pairs, so progress can say "n/N".
    plan = []
    if args.congestion_compare:
        for rep in range(args.repeat):
            for c in args.compare_congestions:
                if not args.no_baseline:
                    plan.append((f"baseline {c}", lambda c=c, rep=rep: run_baseline(
                        plainrelay, args.duration, c, BASELINE_CHUNK, logdir, f"baseline-{c}-r{rep}")))
                if not args.baseline_only:
                    plan.append((f"tcp-opt t=128 e=32768 {c}", lambda c=c, rep=rep: run_sluice(
                        deploy, args.pipeline, "tcp-opt", 128, 32768, args.duration, c, rep, logdir,
                        args.set, phase="compare")))
    elif args.idle > 0:
        for rep in range(args.repeat):
            for p in args.presets.split(","):
                plan.append((f"{p} idle {args.idle:g} s r={rep}", lambda p=p, rep=rep: run_sluice(
                    deploy, args.pipeline, p, 128, 32768, args.idle, args.congestion, rep, logdir,
                    args.set + ["burst_events=1", f"burst_ms={args.idle * 1e5:g}"], phase="idle")))
    else:
        if not args.no_baseline:
            plan.append(("baseline (start)", lambda: run_baseline(
                plainrelay, args.duration, args.congestion, BASELINE_CHUNK, logdir, "baseline-start")))
        if not args.baseline_only:
            tuples = QUICK_TUPLE_SIZES if args.quick else TUPLE_SIZES
            for rep in range(args.repeat):
                for e in [int(x) for x in args.events.split(",")]:
                    for t in tuples:
                        for p in args.presets.split(","):
                            plan.append((f"{p} t={t} e={e} r={rep}",
                                         lambda p=p, t=t, e=e, rep=rep: run_sluice(
                                             deploy, args.pipeline, p, t, e, args.duration,
                                             args.congestion, rep, logdir, args.set)))
        if not args.no_baseline:
            plan.append(("baseline (end)", lambda: run_baseline(
                plainrelay, args.duration, args.congestion, BASELINE_CHUNK, logdir, "baseline-end")))

    rows = []
    csv_path = out / "results.csv"
    log(f"sweep: {len(plan)} runs of {args.duration:g} s, results in {out}")
    interrupted = False
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for i, (label, thunk) in enumerate(plan, 1):
            log(f"[{i}/{len(plan)}] {label} ...")
            try:
                row = thunk()
            except KeyboardInterrupt:
                interrupted = True
                log("interrupted; writing what has been measured")
                break
            rows.append(row)
            w.writerow(row)
            f.flush()
            log(f"[{i}/{len(plan)}] {label}: {describe(row)}")

    baselines = [r for r in rows if r["kind"] == "baseline"]
    if args.idle > 0:
        text, title = idle_table(rows, args), "# sluice idle links"
    elif args.congestion_compare:
        text, title = compare_tables(rows, args), "# sluice congestion-control comparison"
    else:
        text, title = sweep_tables(rows, baselines, args), "# sluice sweep"
    meta = (f"{title}\n\n{datetime.datetime.now().isoformat(timespec='seconds')} on "
            f"{socket.gethostname()}, {os.cpu_count()} cores, build {build}\n\n")
    (out / "results.md").write_text(meta + text)
    print(meta + text)
    log(f"wrote {csv_path} and {out / 'results.md'}")
    failed = sum(1 for r in rows if r["ok"] != "true")
    if failed:
        log(f"{failed} of {len(rows)} runs failed")
    return 130 if interrupted else (1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
