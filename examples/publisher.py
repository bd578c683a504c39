#!/usr/bin/env python3
"""Publishes quotes into the graph of deploy/examples/app.yaml from numpy:
each batch is a structured array of the stream's dtype, sent as one event,
copied straight into a slot of the stream's pool (Publisher.claim hands out
the slot itself). When the graph falls behind, send waits with the GIL
released; nothing queues up without bound.

  examples/publisher.py RUN_DIR [TUPLES] [SECONDS]   (default 1000000 tuples)
"""
import sys
import time

import numpy as np
import sluice


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    want = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    try:
        pub = sluice.Publisher(sys.argv[1], "publisher")
    except sluice.Error as e:
        print(f"cannot publish: {e}", file=sys.stderr)
        return 1
    # pub.dtype is the stream's schema: seq first (the library numbers it),
    # then key, price and size at the schema's offsets, 128 bytes a tuple.
    batch = np.zeros(pub.max_tuples, pub.dtype)
    index = np.arange(pub.max_tuples, dtype=np.uint64)
    t0 = time.perf_counter()
    sent = 0
    try:
        with pub:  # closes at the end: END after everything sent
            while sent < want and (seconds <= 0 or time.perf_counter() - t0 < seconds):
                n = min(len(batch), want - sent)
                q = index[:n] + np.uint64(sent)
                batch["key"][:n] = q & 1023
                batch["price"][:n] = 100.0 + (q & 255) * 0.25
                batch["size"][:n] = (q & 31) + 1
                sent += pub.send(batch[:n])  # waits for room: all n go
            if not pub.flush(timeout=30):
                print("flush: not everything was acknowledged within 30 s", file=sys.stderr)
            elapsed = time.perf_counter() - t0
    except sluice.Error as e:
        print(f"publish: {e}", file=sys.stderr)
        return 1
    print(f"published {sent} tuples in {pub.committed} events, {elapsed:.3f} s, "
          f"{sent / elapsed if elapsed > 0 else 0:.0f} tuples/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
