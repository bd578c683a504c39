#!/usr/bin/env python3
"""syscall_gaps.so interposes the calls a program makes and reports each pair.

A plain source sends messages at 2,000/s for 0.4 s to a plain sink, both
with the library preloaded and every pair reported (SLUICE_GAPS_MIN_COUNT=1).
Every call must be counted: the source's pairs that end in send add up to
the sends it reports (all but the first follow a clock_nanosleep, or a send
when it ran late), and the sink's pairs that end in recv to at least one per
message. The sink's recv -> recv gap must be user time: well under the 500 us
between messages.

The counts hold whatever the load: ctest runs this beside other tests on two
cores, where the source, preempted, sends what is due back to back (with 12
busy loops beside it, 66 of 797 sends followed a sleep) and stops at its end
time with fewer than 800 sent. So how many sends followed a sleep is not
asserted."""
import argparse, re, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gaps  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", type=Path, required=True)
a = ap.parse_args()
args = argparse.Namespace(build=a.build, rate=2000, duration=0.4, tuple_bytes=128)
logs = []
procs = dict(gaps.run_plain(args, a.build / "experiments/syscall_gaps/syscall_gaps.so", 0, logs=logs, min_count=1))
sent = [int(m.group(1)) for m in (re.search(r"source: sent (\d+) messages", x) for x in logs) if m]
sinks = [k for k in procs if k.startswith("sink:")]
if len(sinks) != 1 or "source" not in procs or len(sent) != 1:
    sys.exit(f"expected one sink and one source that says what it sent; processes {sorted(procs)}, logs {logs}")
sent = sent[0]
sink = {(x[1], x[2]): x for x in procs[sinks[0]]}
source = {(x[1], x[2]): x for x in procs["source"]}


def ending_in(pairs, call):
    return sum(r[3] for (_, b), r in pairs.items() if b == call)


fails = []
if sent < 50:
    fails.append(f"source: sent only {sent} of 800 messages")
sends = ending_in(source, "send")
# The first send follows the connect, which is not interposed.
if sends != sent - 1:
    fails.append(f"source: {sends} pairs end in send, it sent {sent} (pairs {sorted(source)})")
recvs = ending_in(sink, "recv")
if not (sent <= recvs <= 4 * sent):
    fails.append(f"sink: {recvs} pairs end in recv, expected one or a few for each of {sent} messages "
                 f"and the end of the stream (pairs {sorted(sink)})")
row = sink.get(("recv", "recv"))
if not row:
    fails.append(f"sink: no recv -> recv line (pairs {sorted(sink)})")
elif not (0 < row[4] < 250):
    fails.append(f"sink: recv -> recv p50 {row[4]} us: not user time between calls (messages are 500 us apart)")
if fails:
    sys.exit("\n".join(fails))
print(f"ok: sent {sent};", {k: v[3] for k, v in {**sink, **source}.items()})
