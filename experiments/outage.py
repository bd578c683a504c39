#!/usr/bin/env python3
"""How long a stream stays stopped after a cut in the network between hosts,
with tcp_rto_max_ms 0 (the system's retransmission back-off, capped at 120 s)
against 1000 (the default), alternated in one run.

deploy/examples/cluster.yaml in network namespaces (--launcher netns), acks
on, 20,000 events/s. 3 s in, the bridge between the hosts stops forwarding
to and from one host's port (an nftables rule in the bridge's namespace: a
switch port that fails, where neither end sees an error of its own) for
--down seconds, then forwards again. The sink's longest pause (its
summary's stalls_s) is the outage plus what TCP's back-off added: a
retransmission doubles its wait each time, so it may next try up to as long
after the wire is back as the outage lasted.

  python3 experiments/outage.py [--build build] [--rounds 3] [--down 3,4,7] [--port h2]

Needs root and nft (Debian: nftables) in the namespaces. --port is the
bridge's port: h0..h3 for hosts h1..h4 (h2: node-b's host).
"""
import argparse, json, shutil, statistics, subprocess, sys, tempfile, time

from procs import bridge_netns, nft

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--down", default="3,4,7", help="outage lengths in seconds, comma-separated")
ap.add_argument("--port", default="h2", help="the bridge port cut off")
a = ap.parse_args()
if not shutil.which("nft"):
    sys.exit("outage.py: needs nft (apt-get install nftables)")

CAPS = ["0", "1000"]
for down in [float(x) for x in a.down.split(",")]:
    pauses = {c: [] for c in CAPS}
    for r in range(a.rounds):
        for cap in CAPS if r % 2 == 0 else CAPS[::-1]:
            d = tempfile.mkdtemp(prefix="sluice-outage-")
            p = subprocess.Popen([f"{a.build}/deploy/sluice-deploy", "run", "deploy/examples/cluster.yaml",
                                  "--launcher", "netns", "--json", "--run-dir", d + "/run",
                                  "--set", f"duration_s={down * 2 + 8:g}", "--set", "rate=20000", "--set", "acks=on",
                                  "--set", f"tcp_rto_max_ms={cap}", "--set", "progress_s=0"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(3)
            net = bridge_netns(d + "/run")
            if not net:
                p.kill()
                sys.exit(f"outage.py: no bridge namespace in {d}/run/state.json: {p.communicate()[1][-300:]}")
            nft(net, "add", "table", "bridge", "outage")
            nft(net, "add chain bridge outage cut { type filter hook forward priority 0; }")
            nft(net, "add", "rule", "bridge", "outage", "cut", "iifname", a.port, "drop")
            nft(net, "add", "rule", "bridge", "outage", "cut", "oifname", a.port, "drop")
            time.sleep(down)
            nft(net, "delete", "table", "bridge", "outage")
            out, err = p.communicate()
            try:
                j = json.loads(out)
            except ValueError:
                sys.exit(f"outage.py: the run wrote no report: {err[-400:]}")
            sink = [q for q in j["processes"] if q["role"] == "sink"][0]
            pause = max((b - e for e, b in sink.get("stalls_s", [])), default=0)
            pauses[cap].append(pause)
            print(f"cut {down:g} s, round {r + 1}, tcp_rto_max_ms {cap}: ok {j['ok']}, lost {j['lost']}, "
                  f"duplicated {j['duplicated']}, the sink's longest pause {pause:.2f} s", flush=True)
            shutil.rmtree(d, ignore_errors=True)
    for cap in CAPS:
        v = pauses[cap]
        print(f"cut {down:g} s: tcp_rto_max_ms {cap}: longest pause, median of {len(v)}: "
              f"{statistics.median(v):.2f} s ({', '.join(f'{x:.2f}' for x in v)})", flush=True)
