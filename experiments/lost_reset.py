#!/usr/bin/env python3
"""A sink that dies while its reset is lost: does its upstream ever hear of it?

deploy/examples/cluster.yaml in network namespaces (--launcher netns), acks
on, restart: on-failure, snapshots every 50 ms, 2,000 one-tuple events/s.
3 s in, the sink is stopped (SIGSTOP) for 1 s: node-b spends its credits,
and everything it sent is in the sink's socket, acknowledged by TCP, so
node-b's connection is idle, waiting for credits. Then the bridge drops
every TCP reset from the sink's host (an nftables rule in the bridge's
namespace), the sink is killed, and 1 s later the rule goes. The reset
the sink's kernel sent when it died is lost, as one can be in a cut or
when a host reboots; the sink is restarted and waits for node-b.

Without keepalive node-b's connection looks alive for ever: nothing goes
over it, so nothing comes back to say it is gone, and the run hangs to
its --timeout. With tcp_keepalive_s 1 (the default) node-b probes the idle
connection after a second, the sink's host answers with a reset, and node-b
connects to the restarted sink and replays.

  python3 experiments/lost_reset.py [--build build] [--rounds 2] [--timeout 40]
      [--carrier tcp|fabric|ucx] [--drop rst|fin-rst|power]

--carrier fabric (libfabric's tcp provider) or ucx (UCX's tcp transport)
puts every link on that carrier. Their data connections are the library's;
a peer's death reaches the carrier through its control connection, a TCP
connection of sluice's own that gets the same keepalive. The control
connection holds no unread data when the sink dies, so its kernel closes it
with a FIN, not a reset: --drop fin-rst drops both. The sink's kernel
sends that FIN again until it is answered (a reset is sent once), so it
arrives once the rule goes. --drop power also makes the host forget its
half of every connection to node-b (ss -K in its namespace, which sends
one more reset, dropped too), as a host that lost its power has: then
nothing will come from it again, and only a probe finds the link gone.

Needs root and nft (Debian: nftables). Alternates tcp_keepalive_s 0 and 1.
KEEP=1 keeps each run's directory (printed) for its logs.
"""
import argparse, json, os, shutil, signal, subprocess, sys, tempfile, time

from procs import bridge_netns, host_netns, nft, pids_of

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--timeout", type=int, default=40)
ap.add_argument("--carrier", choices=["tcp", "fabric", "ucx"], default="tcp")
ap.add_argument("--drop", choices=["rst", "fin-rst", "power"], default="rst",
                help="what the bridge drops from the sink's host while it dies (default rst)")
a = ap.parse_args()
if not shutil.which("nft"):
    sys.exit("lost_reset.py: needs nft (apt-get install nftables)")
CARRIER = {"tcp": [], "fabric": ["transport=fabric", "fabric_provider=tcp"], "ucx": ["transport=ucx", "ucx_tls=tcp"]}
carrier_sets = [x for kv in CARRIER[a.carrier] for x in ("--set", kv)]
repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

failed = 0
for r in range(a.rounds):
    for keep in ("0", "1") if r % 2 == 0 else ("1", "0"):
        d = tempfile.mkdtemp(prefix="sluice-lost-reset-")
        run_dir = d + "/run"
        p = subprocess.Popen([f"{a.build}/deploy/sluice-deploy", "run", "deploy/examples/cluster.yaml",
                              "--launcher", "netns", "--json", "--run-dir", run_dir, "--timeout", str(a.timeout),
                              "--set", "duration_s=10", "--set", "rate=2000", "--set", "event_bytes=0",
                              "--set", "acks=on", "--set", "restart=on-failure", "--set", "restart_backoff_ms=100",
                              "--set", "checkpoint_interval_ms=50", "--set", f"tcp_keepalive_s={keep}",
                              "--set", "progress_s=0"] + carrier_sets,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=repo)
        time.sleep(3)
        net = bridge_netns(run_dir)
        if not net:
            p.kill()
            sys.exit(f"lost_reset.py: no bridge namespace in {run_dir}/state.json: {p.communicate()[1][-300:]}")
        sink = pids_of(run_dir, "sink")
        for pid in sink:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(1)
        # h3 is the bridge's port of h4, the sink's host.
        nft(net, "add", "table", "bridge", "lost")
        nft(net, "add chain bridge lost resets { type filter hook forward priority 0; }")
        flags = "rst" if a.drop == "rst" else "fin | rst"
        nft(net, f"add rule bridge lost resets iifname h3 tcp flags & ({flags}) != 0 drop")
        killed = time.time()
        for pid in sink:
            os.kill(pid, signal.SIGKILL)
        if a.drop == "power":
            time.sleep(0.2)  # the process is gone and its sockets orphaned
            # h4 is the sink's host; 10.77.0.3 is node-b's (cluster.yaml's).
            subprocess.run(["ip", "netns", "exec", host_netns(run_dir, "h4"), "ss", "-K", "-t", "dst", "10.77.0.3"],
                           check=True, stdout=subprocess.DEVNULL)
        time.sleep(1)
        nft(net, "delete", "table", "bridge", "lost")
        out, err = p.communicate()
        took = time.time() - killed
        try:
            j = json.loads(out)
        except ValueError:
            sys.exit(f"lost_reset.py: the run wrote no report: {err[-400:]}")
        sink_j = [q for q in j["processes"] if q["role"] == "sink"][0]
        rec = sink_j.get("recovery_s") or [None]
        failed += keep == "1" and not j["ok"]
        print(f"round {r + 1}, {a.carrier}, drop {a.drop}, tcp_keepalive_s {keep}: ok {j['ok']}, lost {j['lost']}, duplicated "
              f"{j['duplicated']}, restarts {sink_j.get('restarts')}, recovery {rec[0]} s, run ended "
              f"{took:.1f} s after the kill{'' if j['ok'] else ': ' + j.get('error', '')[:160]}", flush=True)
        if os.environ.get("KEEP"): print("kept", d)
        else: shutil.rmtree(d, ignore_errors=True)
sys.exit(1 if failed else 0)
