#!/usr/bin/env python3
"""User time between system calls on the data path, per process and thread.

Runs a sluice pipeline (sluice-deploy run) and, with --plain, the plain
blocking-socket relays of the same shape (sluice-plainrelay latency mode:
source -> one relay per node -> sink), each with syscall_gaps.so preloaded,
and prints for every thread the time from the end of one network system call
to the start of the next, by pair, p50 / p90 / p99 in us. The pairs on a
tuple's critical path:

  loadgen / source   nanosleep or clock_nanosleep -> sendmsg or send  (woken, stamped, sent)
  node / relay       recvmsg or recv -> sendmsg or send               (a hop)
  sink               recvmsg or recv -> the next one                  (what it does per frame)

A pair that is not on the path (a credit message after a send) shows where
each system call sits. The kernel's time is not in the gaps; compare the
same pair across builds or against the relays.

  python3 experiments/syscall_gaps/gaps.py [--build build] [--rate 20000] [--duration 3]
      [--deployment deploy/examples/pipeline.yaml] [--set KEY=VALUE ...] [--plain] [--plain-only N]
      [--shim build/experiments/syscall_gaps/syscall_gaps.so]
"""
import argparse, os, re, subprocess, sys, tempfile, time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments"))
from sweep import free_ports  # noqa: E402
LINE = re.compile(r"thread (\d+) (\w+) -> (\w+) n=(\d+) p50=([\d.]+) p90=([\d.]+) p99=([\d.]+)")


def read_dir(d):
    """[(name, [(thread, a, b, n, p50, p90, p99)])], in launch order."""
    out = []
    for f in sorted(Path(d).glob("*.txt"), key=lambda p: int(p.stem)):
        lines = f.read_text().splitlines()
        exe = lines[0].split(" ", 1)[1] if lines else ""
        cmd = lines[1][4:] if len(lines) > 1 else ""
        if exe.endswith("sluice-deploy") or not exe.split("/")[-1].startswith("sluice-"):
            continue
        m = re.search(r"--process (\S+)", cmd)
        name = m.group(1) if m else " ".join(cmd.split()[1:2]) or exe
        if not m and " --listen " in cmd:
            name += ":" + cmd.split(" --listen ")[1].split()[0]
        rows = [(int(g[0]), g[1], g[2], int(g[3]), float(g[4]), float(g[5]), float(g[6]))
                for g in (LINE.match(x).groups() for x in lines[2:] if LINE.match(x))]
        out.append((name, rows))
    return out


def show(title, procs):
    print(f"## {title}")
    print(f"{'process':14s} {'thr':>3s} {'pair':34s} {'n':>7s} {'p50 us':>7s} {'p90 us':>7s} {'p99 us':>7s}")
    for name, rows in procs:
        for t, a, b, n, p50, p90, p99 in sorted(rows, key=lambda r: -r[3]):
            print(f"{name:14s} {t:3d} {a + ' -> ' + b:34s} {n:7d} {p50:7.2f} {p90:7.2f} {p99:7.2f}")
    print()


def env_with(shim, d, **extra):
    return dict(os.environ, LD_PRELOAD=str(shim), SLUICE_GAPS_DIR=str(d), **extra)


def run_sluice(args, shim):
    d = Path(tempfile.mkdtemp(prefix="syscall-gaps-"))
    cmd = [str(args.build / "deploy/sluice-deploy"), "run", str(args.deployment), "--json",
           "--run-dir", str(d / "run"), "--set", f"rate={args.rate}", "--set", f"duration_s={args.duration}",
           "--set", "progress_s=0"]
    for s in args.set:
        cmd += ["--set", s]
    p = subprocess.run(cmd, env=env_with(shim, d), capture_output=True, text=True, cwd=REPO)
    if p.returncode != 0:
        sys.exit(f"gaps.py: sluice-deploy failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return read_dir(d)


def run_plain(args, shim, relays, logs=None, min_count=None):
    """The plain relays' pairs (read_dir); each program's stderr into logs
    (a list) when given; min_count: report pairs seen this often (default
    the library's 200)."""
    d = Path(tempfile.mkdtemp(prefix="syscall-gaps-plain-"))
    relay = args.build / "experiments/sluice-plainrelay"
    common = ["--message-bytes", str(16 + 64 + args.tuple_bytes), "--congestion", "reno"]
    # Ports the kernel says are free: a fixed base met a test's node on it
    # (tests/pipeline_processes_test.cc listens on 23700) when ctest ran both.
    ports = free_ports(relays + 1)
    cmds = [[relay, "sink", "--listen", str(ports[-1])]]
    for i in range(relays - 1, -1, -1):
        cmds.append([relay, "relay", "--listen", str(ports[i]), "--connect", f"127.0.0.1:{ports[i + 1]}"])
    cmds.append([relay, "source", "--connect", f"127.0.0.1:{ports[0]}", "--duration", str(args.duration),
                 "--rate", str(args.rate)])
    extra = {"SLUICE_GAPS_MIN_COUNT": str(min_count)} if min_count is not None else {}
    procs = []
    for c in cmds:
        procs.append(subprocess.Popen([str(x) for x in c] + common, env=env_with(shim, d, **extra),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        time.sleep(0.05)
    for p in procs:
        _, err = p.communicate(timeout=args.duration + 30)
        if logs is not None:
            logs.append(err)
        if p.returncode != 0:
            sys.exit(f"gaps.py: sluice-plainrelay failed ({p.returncode}): {err.strip()[-400:]}")
    return read_dir(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, default=REPO / "build")
    ap.add_argument("--deployment", type=Path, default=REPO / "deploy/examples/pipeline.yaml")
    ap.add_argument("--rate", type=float, default=20000, help="events/s (default 20000)")
    ap.add_argument("--duration", type=float, default=3, help="seconds (default 3)")
    ap.add_argument("--tuple-bytes", type=int, default=128)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE for sluice-deploy (repeatable)")
    ap.add_argument("--plain", action="store_true", help="also the plain relays, as many as the nodes")
    ap.add_argument("--plain-only", type=int, metavar="RELAYS", default=None,
                    help="only the plain relays, this many between source and sink")
    ap.add_argument("--shim", type=Path, default=None,
                    help="syscall_gaps.so to preload (default: BUILD's; another build's programs can use this one's)")
    args = ap.parse_args()
    shim = args.shim or args.build / "experiments/syscall_gaps/syscall_gaps.so"
    if not shim.exists():
        sys.exit(f"gaps.py: no {shim}: build it (ninja -C {args.build} syscall_gaps)")
    if args.plain_only is not None:
        show(f"plain relays, {args.plain_only} between source and sink, {args.rate:g}/s", run_plain(args, shim, args.plain_only))
        return
    args.set = [f"tuple_bytes={args.tuple_bytes}", "event_bytes=0"] + args.set
    procs = run_sluice(args, shim)
    show(f"sluice, {args.deployment.name}, {args.rate:g} one-tuple events/s, {' '.join(args.set)}", procs)
    if args.plain:
        nodes = sum(1 for n, _ in procs if n not in ("loadgen", "sink") and not n.startswith("loadgen") and not n.startswith("sink"))
        show(f"plain relays, {nodes} between source and sink, {args.rate:g}/s", run_plain(args, shim, nodes))


if __name__ == "__main__":
    main()
