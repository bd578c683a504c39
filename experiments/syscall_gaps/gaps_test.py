#!/usr/bin/env python3
"""syscall_gaps.so interposes the calls a program makes and reports each pair.

A plain source sends 800 messages at 2,000/s to a plain sink, both with the
library preloaded: the sink must report recv -> recv and the source
clock_nanosleep -> send, each about once per message, with gaps that are
user time (well under the 500 us between messages)."""
import argparse, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gaps  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--build", type=Path, required=True)
a = ap.parse_args()
args = argparse.Namespace(build=a.build, rate=2000, duration=0.4, tuple_bytes=128)
procs = dict(gaps.run_plain(args, a.build / "experiments/syscall_gaps/syscall_gaps.so", 0))
fails = []
sink = {(x[1], x[2]): x for x in procs.get("sink:23700", [])}
source = {(x[1], x[2]): x for x in procs.get("source", [])}
for who, pairs, pair in (("sink", sink, ("recv", "recv")), ("source", source, ("clock_nanosleep", "send"))):
    row = pairs.get(pair)
    if not row:
        fails.append(f"{who}: no {pair[0]} -> {pair[1]} line (got {sorted(pairs)}; processes {sorted(procs)})")
    elif not (600 <= row[3] <= 800):
        fails.append(f"{who}: {pair[0]} -> {pair[1]} n={row[3]}, expected about 800")
    elif not (0 < row[4] < 100):
        fails.append(f"{who}: {pair[0]} -> {pair[1]} p50 {row[4]} us: not user time between calls")
if fails:
    sys.exit("\n".join(fails))
print("ok:", {k: v[3] for k, v in {**sink, **source}.items()})
