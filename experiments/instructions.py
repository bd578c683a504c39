#!/usr/bin/env python3
"""Instructions per event, per process: sluice against the plain relays.

Each process of loadgen -> node-a -> node-b -> sink (deploy/examples/
pipeline.yaml, one-tuple events) and of the plain relays (source -> relay ->
relay -> sink, sluice-plainrelay in latency mode, messages as large as
sluice's frames) runs under valgrind's callgrind, which counts the user-space
instructions each one executes (the kernel's are not counted). Each system
runs twice, with N1 and N2 events; a process's instructions per event is

    (instructions with N2 events - instructions with N1 events) / (N2 - N1)

so start-up (reading the file, making pools, connecting) cancels out and
what is left is what one more event costs, on every thread of the process.

Unlike a time, the count hardly depends on what else the machine runs:
the same binaries and settings give the same figures within 1-3% from run
to run (what varies is how events fall against credit messages, timers and
wake-ups), on a shared 2-core VM as on a quiet host. It is not
a time: cache misses and system calls cost cycles it does not show. Read
it beside the latency script (experiments/latency.py), as what each hop
executes, and as a regression signal for a change to the per-event path
(--before DIR runs another build in the same script).

    python3 experiments/instructions.py [--build build] [--before OLD]
        [--rate 2000] [--events 2000,6000] [--tuple-bytes 128]
        [--set KEY=VALUE ...] [--no-plain] [--top N] [--out DIR]

Needs valgrind (Debian's `valgrind`). Each run is N/rate seconds under
callgrind (about 50x slower per instruction, so keep the rate moderate: at
2,000 events/s every process keeps up). Holds /tmp/cpu.lock per run.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repro.run import git_commit  # noqa: E402
from sweep import find_binary, free_ports, kill_group  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "deploy" / "examples" / "pipeline.yaml"
SLUICE = ["loadgen", "node-a", "node-b", "sink"]
PLAIN = ["source", "relay1", "relay2", "sink"]
FRAME_HEADER, EVENT_HEADER = 16, 64  # as experiments/latency.py


def callgrind_total(path):
    """Instructions in a callgrind output file (its `totals:` or `summary:` line)."""
    text = Path(path).read_text(errors="replace")
    m = re.search(r"^(?:totals|summary):\s*(\d+)", text, re.M)
    if not m:
        raise RuntimeError(f"{path}: no totals line")
    return int(m.group(1))


def wrapper(bin_dir, out_dir, program, real):
    """A script named like the program that runs it under callgrind, its
    output file named after the process (--process NAME)."""
    script = bin_dir / program
    script.write_text(
        "#!/bin/bash\n"
        'name=$(echo "$@" | sed -n \'s/.*--process \\([^ ]*\\).*/\\1/p\')\n'
        f'exec valgrind --tool=callgrind --callgrind-out-file={out_dir}/cg.$name {real} "$@"\n')
    script.chmod(0o755)


def run_sluice(build, events, rate, tuple_bytes, sets, work):
    """Instructions per process for one run of `events` one-tuple events."""
    deploy = find_binary(build, "deploy", "sluice-deploy")
    out = Path(tempfile.mkdtemp(prefix="cg-", dir=work))
    bins = out / "bin"
    bins.mkdir()
    for sub, prog in (("loadgen", "sluice-loadgen"), ("node", "sluice-node"), ("sink", "sluice-sink")):
        wrapper(bins, out, prog, find_binary(build, sub, prog))
    port = free_ports(1)[0]
    cmd = ["flock", "/tmp/cpu.lock", str(deploy), "run", str(PIPELINE), "--bin-dir", str(bins),
           "--run-dir", str(out / "run"), "--set", "event_bytes=0", "--set", f"tuple_bytes={tuple_bytes}",
           "--set", f"rate={rate}", "--set", f"tuples={events}", "--set", "duration_s=0",
           "--set", "progress_s=0", "--set", f"base_port={port}"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=events / rate * 4 + 120)
    if p.returncode != 0:
        raise RuntimeError(f"sluice run failed ({p.returncode}): {p.stderr[-2000:]}{p.stdout[-2000:]}")
    m = re.search(r"lost (\d+), duplicated (\d+)", p.stdout)
    if not m or m.groups() != ("0", "0"):
        raise RuntimeError(f"sluice run lost or duplicated tuples: {p.stdout[-1000:]}")
    return {n: callgrind_total(out / f"cg.{n}") for n in SLUICE}, out


def run_plain(build, events, rate, tuple_bytes, work):
    relay = find_binary(build, "experiments", "sluice-plainrelay")
    out = Path(tempfile.mkdtemp(prefix="cg-plain-", dir=work))
    mb = FRAME_HEADER + EVENT_HEADER + tuple_bytes
    common = ["--message-bytes", str(mb), "--congestion", "reno"]
    p1, p2, p3 = free_ports(3)
    vg = lambda name: ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.{name}", str(relay)]
    cmds = [
        ("sink", vg("sink") + ["sink", "--listen", str(p3), "--json"] + common),
        ("relay2", vg("relay2") + ["relay", "--listen", str(p2), "--connect", f"127.0.0.1:{p3}"] + common),
        ("relay1", vg("relay1") + ["relay", "--listen", str(p1), "--connect", f"127.0.0.1:{p2}"] + common),
        ("source", vg("source") + ["source", "--connect", f"127.0.0.1:{p1}", "--duration",
                                   f"{events / rate:g}", "--rate", f"{rate:g}"] + common),
    ]
    procs = {}
    with open(out / "stderr", "w") as err:
        try:
            for name, cmd in cmds:
                procs[name] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err,
                                               stdin=subprocess.DEVNULL, start_new_session=True)
                if name != "source":
                    time.sleep(1.0)  # listening (valgrind starts slowly) before its upstream connects
            for name, p in procs.items():
                if p.wait(timeout=events / rate * 4 + 120) != 0:
                    raise RuntimeError(f"plain {name} exited {p.returncode}: {(out / 'stderr').read_text()[-2000:]}")
        finally:
            for p in procs.values():
                if p.returncode is None:
                    kill_group(p)
    return {n: callgrind_total(out / f"cg.{n}") for n in PLAIN}, out


def per_event(small, large, n1, n2):
    return {k: (large[k] - small[k]) / (n2 - n1) for k in small}


def functions(path):
    """Instructions by function, the function's own (not its callees'): what
    `callgrind_annotate` lists, as {name: instructions}."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", "--inclusive=no", str(path)],
                         capture_output=True, text=True).stdout
    by = {}
    listing = False
    for line in out.splitlines():
        if re.match(r"^\s*Ir\s+file:function", line):
            listing = True
        if not listing:
            continue
        m = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r"\s*\[[^\]]*\]$", "", m.group(2))  # the object file
        name = name.split(":", 1)[1] if ":" in name else name  # the source file
        by[name] = by.get(name, 0) + int(m.group(1).replace(",", ""))
    return by


def top_functions(small_dir, large_dir, names, n1, n2, top):
    """Per process, the `top` functions by their own instructions per event."""
    lines = []
    for p in names:
        a, b = functions(small_dir / f"cg.{p}"), functions(large_dir / f"cg.{p}")
        per = sorted(((b.get(f, 0) - a.get(f, 0)) / (n2 - n1), f) for f in b)
        per = [x for x in reversed(per) if x[0] >= 1][:top]
        lines.append(f"\n{p}: the {len(per)} functions with the most instructions of their own per event\n")
        lines += [f"    {v:8,.0f}  {f[:110]}" for v, f in per]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--before", help="another build (the commit before a change), run in the same script")
    ap.add_argument("--rate", type=float, default=2000)
    ap.add_argument("--events", default="2000,6000", help="N1,N2 (default 2000,6000)")
    ap.add_argument("--tuple-bytes", type=int, default=128)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE for the sluice runs (repeatable)")
    ap.add_argument("--no-plain", action="store_true", help="sluice only")
    ap.add_argument("--top", type=int, default=0,
                    help="also list each sluice process's N functions with the most instructions of "
                         "their own per event (this build)")
    ap.add_argument("--out", help="write DIR/instructions.md too")
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("instructions.py: needs valgrind (apt-get install valgrind)")
    n1, n2 = (int(x) for x in a.events.split(","))
    if not 0 < n1 < n2:
        sys.exit("instructions.py: --events N1,N2 with 0 < N1 < N2")
    work = Path(tempfile.mkdtemp(prefix="sluice-instructions-"))
    rows = []  # (system, {process: per event})
    top = []
    try:
        builds = [("sluice", a.build)] + ([("sluice@before", a.before)] if a.before else [])
        for label, b in builds:
            print(f"{label}: {n1} and {n2} events at {a.rate:g}/s under callgrind ...", flush=True)
            (small, d1), (large, d2) = (run_sluice(b, n, a.rate, a.tuple_bytes, a.set, work) for n in (n1, n2))
            rows.append((label, per_event(small, large, n1, n2)))
            if a.top and label == "sluice":
                top = top_functions(d1, d2, SLUICE, n1, n2, a.top)
        if not a.no_plain:
            print(f"plain relays: {n1} and {n2} messages ...", flush=True)
            (small, _), (large, _) = (run_plain(a.build, n, a.rate, a.tuple_bytes, work) for n in (n1, n2))
            rows.append(("plain", per_event(small, large, n1, n2)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sets = "".join(f" --set {s}" for s in a.set)
    md = [f"# Instructions per event (callgrind)\n",
          f"`python3 experiments/instructions.py --rate {a.rate:g} --events {n1},{n2} --tuple-bytes "
          f"{a.tuple_bytes}{sets}{' --before ' + a.before if a.before else ''}`, commit {git_commit()}; "
          f"one-tuple events of {a.tuple_bytes} B; user-space instructions per event, every thread, "
          f"start-up cancelled out ((I({n2}) - I({n1})) / {n2 - n1}).\n",
          "| system | source | hop 1 | hop 2 | sink | all four |", "|---|---|---|---|---|---|"]
    for label, r in rows:
        v = list(r.values())
        md.append(f"| {label} | " + " | ".join(f"{x:,.0f}" for x in v) + f" | {sum(v):,.0f} |")
    if len(rows) > 1:
        base = [r for l, r in rows if l == "sluice"][0]
        for label, r in rows[1:]:
            v, b = list(r.values()), list(base.values())
            md.append(f"| sluice / {label} | " + " | ".join(f"{x / y:.2f}" for x, y in zip(b, v)) +
                      f" | {sum(b) / sum(v):.2f} |")
    if top:
        md += ["", "```"] + top + ["```"]
    text = "\n".join(md) + "\n"
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "instructions.md").write_text(text)


if __name__ == "__main__":
    main()
