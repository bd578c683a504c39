#!/usr/bin/env python3
"""Random faults at random times, with acks: on and restart: on-failure, run
after run: what faults.py's fixed schedule does not reach.

Each run picks a carrier, an example and a schedule from --seed, so a run
that fails can be repeated exactly (--seed S --first I --runs 1):

  pipeline  deploy/examples/pipeline.yaml, full rate, 8 s (with --rates,
            sometimes paced), checkpoint_interval_ms 50 when the sink is a
            victim (without it a restarted sink refuses to run: its counts
            died with it), else half the time
  esper     deploy/examples/esper.yaml at 2,000 events/s, 4 s, snapshots
            on: node-b's group-by; its results are compared with a run of
            the same carrier without faults (one per carrier, made first)
  cluster   deploy/examples/cluster.yaml in network namespaces (--launcher
            netns: root), 8 s at 20,000 events/s, tcp only; its faults also
            take a host's wire down (ip link set eth0 down) for 0.5-4 s;
            with --cuts also CUT (the bridge drops the host's port, neither
            end sees an error) and RESETS (the bridge drops the TCP resets
            the host sends: a death then goes unseen), 0.5-4 s, overlapping
            the faults after them; --cluster-carriers picks its links'
            carrier from a list (fabric tcp: libfabric's tcp provider, ucx
            tcp: UCX's tcp transport, each across the namespaces' bridge)

and 1-3 faults in the run: SIGKILL (twice as likely) or SIGSTOP for 0.5-3 s
of node-a, node-b, the sink or the load generator (started again, it
resumes from its position, what its link had acknowledged, and the sink
drops what comes twice), sometimes
with threads: dedicated or shared.
A run passes when the report says ok, with lost, duplicated and corrupt 0,
and (esper) the same groups as the run without faults. A failed run's
directory is kept under --keep and named in its line.

While a process is stopped the others have nothing to do once their
windows fill: each SIGSTOP's line says the largest share of a core another
process took over the stop (its CPU time from /proc over the pause), and
marks it SPUN from --spun (0.5): what waits should sleep (a carrier that
polled behind a stalled receiver took 0.3-1.0 of a core there). SPUN is
reported, not failed: another fault's restart in the same window works.

  python3 experiments/soak.py [--runs 40] [--seed 1] [--first 0] [--build build]
      [--carriers tcp-opt,fabric shm,ucx sm,tcp capnp,tcp copy] [--examples pipeline,esper,cluster]
      [--rates] [--cuts] [--cluster-carriers tcp-opt,fabric tcp,ucx tcp]
      [--keep /tmp/sluice-soak]

One run at a time, ports from 9000 (each run 700 apart, 20 in turn, all
below the ephemeral range). Exit status 1 when a run failed.
"""
import argparse, json, os, random, shutil, signal, subprocess, sys, tempfile, threading, time

from procs import bridge_netns, cpu_s, host_netns, nft, pids_of

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--runs", type=int, default=40)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--first", type=int, default=0, help="start at this run of the seed's sequence")
ap.add_argument("--build", default="build")
ap.add_argument("--carriers", default="tcp-opt,fabric shm,ucx sm,tcp capnp,tcp copy")
ap.add_argument("--examples", default="pipeline,esper")
ap.add_argument("--rates", action="store_true", help="pipeline runs sometimes paced (2,000-200,000 events/s)")
ap.add_argument("--cuts", action="store_true",
                help="cluster runs also get CUT (the bridge drops a host's port, as outage.py) and RESETS "
                     "(the bridge drops the TCP resets a host sends, as lost_reset.py) for 0.5-4 s, "
                     "overlapping the faults after them (needs nft)")
ap.add_argument("--cluster-carriers", default="tcp-opt",
                help="the carriers cluster runs pick from (tcp-opt, fabric tcp, ucx tcp; default tcp-opt, "
                     "which draws nothing, so earlier seeds choose as before)")
ap.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "sluice-soak"))
ap.add_argument("--spun", type=float, default=0.5,
                help="mark a SIGSTOP whose bystanders took more than this share of a core (default 0.5)")
ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                help="a deployment key for every run, after the run's own (repeatable); the "
                     "seed's choices do not depend on it, so a run can be repeated with a key changed")
a = ap.parse_args()
if a.cuts and "cluster" in a.examples.split(",") and not shutil.which("nft"):
    sys.exit("soak.py: --cuts drops a host's port on the cluster's bridge with nft, which is not "
             "installed here (apt-get install nftables)")

CARRIERS = {"tcp-opt": [], "fabric shm": ["transport=fabric", "fabric_provider=shm"],
            "ucx sm": ["transport=ucx", "ucx_tls=sm"], "tcp capnp": ["encoding=capnp"],
            "tcp copy": ["encoding=copy"], "fabric tcp": ["transport=fabric", "fabric_provider=tcp"],
            "ucx tcp": ["transport=ucx", "ucx_tls=tcp"]}
carriers = [c for c in a.carriers.split(",") if c]
for c in carriers:
    if c not in CARRIERS:
        sys.exit(f"--carriers: no carrier {c!r} (known: {', '.join(CARRIERS)})")
cluster_carriers = [c for c in a.cluster_carriers.split(",") if c]
for c in cluster_carriers:
    if c not in ("tcp-opt", "fabric tcp", "ucx tcp", "tcp capnp", "tcp copy"):
        sys.exit(f"--cluster-carriers: no carrier {c!r} across namespaces (known: tcp-opt, fabric tcp, "
                 "ucx tcp, tcp capnp, tcp copy)")
examples = [e for e in a.examples.split(",") if e]
for e in examples:
    if e not in ("pipeline", "esper", "cluster"):
        sys.exit(f"--examples: no example {e!r} (known: pipeline, esper, cluster)")
FILE = {"pipeline": "deploy/examples/pipeline.yaml", "esper": "deploy/examples/esper.yaml",
        "cluster": "deploy/examples/cluster.yaml"}
HOST = {"loadgen": "h1", "node-a": "h2", "node-b": "h3", "sink": "h4"}  # cluster.yaml's
os.makedirs(a.keep, exist_ok=True)


def run(example, sets, schedule, port, rng):
    run_dir = tempfile.mkdtemp(prefix="run-", dir=a.keep)
    duration = 4 if example == "esper" else 8
    cmd = [f"{a.build}/deploy/sluice-deploy", "run", FILE[example], "--json", "--run-dir", run_dir,
           "--timeout", "120", "--set", f"duration_s={duration}", "--set", f"base_port={port}",
           "--set", "acks=on", "--set", "restart=on-failure", "--set", "restart_limit=5",
           "--set", "restart_backoff_ms=100", "--set", "progress_s=0"]
    if example == "cluster":
        cmd += ["--launcher", "netns"]
    for s in sets + a.set:
        cmd += ["--set", s]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    undo = []
    stops = []  # each SIGSTOP: (victim, the busiest other process, its share of a core)
    for k, (at, victim, sig, pause) in enumerate(schedule):
        time.sleep(max(0, t0 + at - time.time()))
        if sig in ("CUT", "RESETS"):
            net = bridge_netns(run_dir)
            if not net:
                continue
            port = "h%d" % (int(HOST[victim][1:]) - 1)  # the bridge's port of host hN
            table = f"soak{k}"
            nft(net, "add", "table", "bridge", table)
            nft(net, f"add chain bridge {table} f {{ type filter hook forward priority 0; }}")
            if sig == "CUT":
                nft(net, f"add rule bridge {table} f iifname {port} drop")
                nft(net, f"add rule bridge {table} f oifname {port} drop")
            else:
                nft(net, f"add rule bridge {table} f iifname {port} tcp flags & rst == rst drop")
            t = threading.Timer(pause, lambda n=net, tb=table: subprocess.run(
                ["ip", "netns", "exec", n, "nft", "delete", "table", "bridge", tb], capture_output=True))
            t.start()
            undo.append(t)
            continue
        if sig == "DOWN":
            n = host_netns(run_dir, HOST[victim])
            if n:
                subprocess.run(["ip", "-n", n, "link", "set", "eth0", "down"], capture_output=True)
                time.sleep(pause)
                subprocess.run(["ip", "-n", n, "link", "set", "eth0", "up"], capture_output=True)
            continue
        for pid in pids_of(run_dir, victim):
            try:
                if sig == "KILL":
                    os.kill(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGSTOP)
                    others = {n: pids_of(run_dir, n) for n in HOST if n != victim}
                    before = {n: cpu_s(q) for n, q in others.items()}
                    t1 = time.time()
                    time.sleep(pause)
                    took = {n: (cpu_s(q) - before[n]) / (time.time() - t1) for n, q in others.items()}
                    os.kill(pid, signal.SIGCONT)
                    busiest = max(took, key=took.get)
                    stops.append((victim, busiest, took[busiest]))
            except ProcessLookupError:  # it died meanwhile: the report says why
                pass
    for t in undo:
        t.join()
    out, err = p.communicate()
    return out, err, run_dir, stops


references = {}  # carrier -> esper's results without faults
failed = 0
for i in range(a.first, a.first + a.runs):
    rng = random.Random(a.seed * 1000003 + i)  # run i's choices, whatever ran before it
    carrier = rng.choice(carriers)
    example = rng.choice(examples)
    port = 9000 + (i % 20) * 700
    victims = ["node-a", "node-b", "node-b", "sink", "loadgen"] if example == "esper" else \
        ["node-a", "node-b", "sink", "loadgen"]
    span = 3.5 if example == "esper" else 7
    kinds = ["KILL", "KILL", "STOP"] + (["DOWN", "DOWN"] if example == "cluster" else [])
    if example == "cluster" and a.cuts:
        kinds += ["CUT", "RESETS", "RESETS"]
    schedule = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(kinds)
        schedule.append((round(rng.uniform(0.3, span), 2), rng.choice(victims), kind,
                         round(rng.uniform(0.5, 4 if kind in ("DOWN", "CUT", "RESETS") else 3), 2)))
    schedule.sort()
    if example == "cluster":
        # Its hosts are namespaces: shared memory does not join them.
        carrier = cluster_carriers[0] if len(cluster_carriers) == 1 else rng.choice(cluster_carriers)
    sets = list(CARRIERS[carrier])
    if example == "esper":
        sets += ["checkpoint_interval_ms=50", "rate=2000"]
    else:
        if any(v == "sink" and k == "KILL" for _, v, k, _ in schedule) or rng.random() < 0.5:
            sets.append("checkpoint_interval_ms=50")
        if example == "cluster":
            sets.append("rate=20000")
        elif a.rates and rng.random() < 0.3:
            sets.append(f"rate={rng.choice([2000, 20000, 200000])}")
    if rng.random() < 0.3:
        sets.append("threads=" + rng.choice(["dedicated", "shared"]))
    if example == "esper" and carrier not in references:
        out, err, d, _ = run("esper", list(CARRIERS[carrier]) + ["checkpoint_interval_ms=50", "rate=2000"], [],
                          port + 350, rng)
        try:
            references[carrier] = open(f"{d}/esper-results.csv").read()
        except OSError:
            sys.exit(f"the reference esper run on {carrier} wrote no results ({d}): {err[-300:]}")
        shutil.rmtree(d, ignore_errors=True)
    out, err, run_dir, stops = run(example, sets, schedule, port, rng)
    try:
        j = json.loads(out)
        ok = j["ok"] and j["lost"] == 0 and j["duplicated"] == 0 and j["corrupt"] == 0
        what = (f"tuples {j['tuples']}, lost {j['lost']}, duplicated {j['duplicated']}, restarts {j['restarts']}, "
                f"replayed {j['replayed']}")
        if example == "esper" and j["ok"]:
            got = open(f"{run_dir}/esper-results.csv").read()
            same = got == references[carrier]
            ok = ok and same
            what += ", groups " + ("as without faults" if same else
                                   f"DIFFER ({got.count(chr(10))} lines against {references[carrier].count(chr(10))})")
        # A paced run cannot deliver faster than it was paced: a report over
        # the wrong interval (a restarted sink's last run alone) did.
        rate = next((float(x.split("=", 1)[1]) for x in sets if x.startswith("rate=")), 0)
        if rate and example != "esper" and j["ok"]:
            lg = [q for q in j["processes"] if q["role"] == "loadgen"]
            events = sum(q["events_out"] for q in lg)
            if events:
                paced = rate * sum(q["tuples_out"] for q in lg) / events
                what += f", {j['tuples_per_s'] / paced:.2f} of the paced tuples/s"
                if j["tuples_per_s"] > 1.05 * paced:
                    ok = False
                    what += " (MORE than it was paced for)"
        if not j["ok"]:
            what += f"; {j['error'][:300]}"
    except (ValueError, KeyError, OSError) as e:
        ok, what = False, f"no report ({e}): {err[-300:]}"
    for victim, busiest, share in stops:
        what += (f"; {victim} stopped: {busiest} took {share:.2f} of a core" +
                 (" (SPUN)" if share > a.spun else ""))
    failed += not ok
    words = {"DOWN": "DOWN {}'s wire", "CUT": "CUT {}'s bridge port", "RESETS": "DROP {}'s resets"}
    faults = ", ".join((words[s].format(HOST[v]) if s in words else f"{s} {v}") + f" at {t} s" +
                       (f" for {p} s" if s != "KILL" else "") for t, v, s, p in schedule)
    print(f"run {i}: {'ok' if ok else 'FAILED'}: {example} over {carrier} {' '.join(sets[len(CARRIERS[carrier]):])}; "
          f"{faults}: {what}{'' if ok else '; kept in ' + run_dir}", flush=True)
    if ok:
        shutil.rmtree(run_dir, ignore_errors=True)
print(f"{failed} of {a.runs} runs failed (seed {a.seed})")
sys.exit(1 if failed else 0)
