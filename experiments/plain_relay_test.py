#!/usr/bin/env python3
"""sluice-plainrelay's latency mode delivers what its source sent: every
message, whole, in order, at most as many as the rate allows, one message at a
time, with --batch and with --epoll. About 3 s.

  python3 experiments/plain_relay_test.py BUILD/experiments/sluice-plainrelay
"""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import free_ports  # noqa: E402

relay = sys.argv[1]
failures = []


def check(what, cond):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)


def wait_listening(ports, timeout_s=10):
    """Until each port has a listener or has accepted its one connection
    (/proc/net/tcp*: a local port in state 0A or 01), so the source never
    connects before the relays listen on a loaded machine. A sink or relay
    closes its listener once it has accepted, and a relay connects on before
    it accepts, so the chain's downstream ports are often past listening by
    the time this looks; waiting for 0A alone then sat out the whole timeout,
    10 s a run. Connecting to find out would take a relay's one upstream."""
    want = {f"{p:04X}" for p in ports}
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        seen = set()
        for f in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                for line in open(f).readlines()[1:]:
                    cols = line.split()
                    if cols[3] in ("0A", "01"):
                        seen.add(cols[1].rsplit(":", 1)[1])
            except OSError:
                pass
        if want <= seen:
            return
        time.sleep(0.02)
    sys.exit(f"ports {sorted(ports)}: no listener after {timeout_s} s")


def run(message_bytes, rate, duration, batch, epoll=False):
    p1, p2, p3 = free_ports(3)
    common = (["--message-bytes", str(message_bytes)] + (["--batch"] if batch else [])
              + (["--epoll"] if epoll else []))
    procs = [
        subprocess.Popen([relay, "sink", "--listen", str(p3), "--json"] + common, stdout=subprocess.PIPE, text=True),
        subprocess.Popen([relay, "relay", "--listen", str(p2), "--connect", f"127.0.0.1:{p3}"] + common,
                         stderr=subprocess.DEVNULL),
        subprocess.Popen([relay, "relay", "--listen", str(p1), "--connect", f"127.0.0.1:{p2}"] + common,
                         stderr=subprocess.DEVNULL),
    ]
    wait_listening((p1, p2, p3))
    src = subprocess.run([relay, "source", "--connect", f"127.0.0.1:{p1}", "--rate", f"{rate:g}",
                          "--duration", f"{duration:g}"] + common, capture_output=True, text=True, timeout=30)
    out, _ = procs[0].communicate(timeout=30)
    codes = [p.wait(timeout=30) for p in procs] + [src.returncode]
    m = re.search(r"sent (\d+) messages of (\d+) bytes", src.stderr)
    return codes, json.loads(out), int(m.group(1)) if m else -1


for batch, epoll in ((False, False), (True, False), (False, True)):
    name = "batch" if batch else "epoll, one at a time" if epoll else "one at a time"
    # Paced: 2,000/s for 0.5 s is at most 1,000 messages, all of them delivered.
    codes, res, sent = run(92, 2000, 0.5, batch, epoll)
    check(f"{name}, paced: every process exits 0 ({codes})", codes == [0, 0, 0, 0])
    check(f"{name}, paced: the sink got what the source sent ({res['messages']} of {sent})",
          sent > 0 and res["messages"] == sent)
    check(f"{name}, paced: no more than the rate allows ({sent} > 1000)", 0 < sent <= 1000)
    check(f"{name}, paced: none out of order ({res['out_of_order']})", res["out_of_order"] == 0)
    check(f"{name}, paced: message size reported ({res['message_bytes']})", res["message_bytes"] == 92)
    check(f"{name}, paced: latency percentiles ordered ({res['latency_us']})",
          0 < res["latency_us"]["p50"] <= res["latency_us"]["p99"] <= res["latency_us"]["max"])
    # Full rate with an odd size, so reads split messages: still whole and in order.
    codes, res, sent = run(211, 0, 0.3, batch, epoll)
    check(f"{name}, full rate: every process exits 0 ({codes})", codes == [0, 0, 0, 0])
    check(f"{name}, full rate: the sink got what the source sent ({res['messages']} of {sent})",
          sent > 1000 and res["messages"] == sent)
    check(f"{name}, full rate: none out of order ({res['out_of_order']})", res["out_of_order"] == 0)

bad = subprocess.run([relay, "source", "--connect", "127.0.0.1:1", "--rate", "10"], capture_output=True, text=True)
check(f"--rate without --message-bytes is refused, naming it ({bad.returncode}, {bad.stderr.strip()})",
      bad.returncode == 2 and "--message-bytes" in bad.stderr)

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("plain_relay_test: ok")
