#!/usr/bin/env python3
"""Subscribes to the quotes that come out of the graph of
deploy/examples/app.yaml: each event is handed to the handler as a read-only
numpy array over the slot it arrived in, already checked as the sink checks
it (checksum, each stream's sequence; a replay's duplicates dropped). The
GIL is released while poll waits.

  examples/subscriber.py RUN_DIR
"""
import sys
import time

import numpy as np
import sluice


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    try:
        sub = sluice.Subscriber(sys.argv[1], "subscriber")
    except sluice.Error as e:
        print(f"cannot subscribe: {e}", file=sys.stderr)
        return 1
    notional = 0.0
    tuples = 0
    first = None

    def on_event(quotes, event):  # quotes: valid inside this call (poll(copy=True) to keep them)
        nonlocal notional, tuples
        notional += float(np.dot(quotes["price"], quotes["size"]))
        tuples += len(quotes)

    try:
        with sub:  # closes at the end: the summary, the sink's verdict
            while not sub.ended:  # END: the publisher closed, everything before it came
                if sub.poll(on_event, limit=64, timeout=1.0) and first is None:
                    first = time.perf_counter()
            k = sub.counts()
    except sluice.Error as e:
        print(f"subscribe: {e}", file=sys.stderr)
        return 1
    s = time.perf_counter() - first if first else 0.0
    print(f"received {tuples} tuples, {tuples / s if s > 0 else 0:.0f} tuples/s, notional {notional:.0f}; "
          f"lost {k['lost']}, duplicated {k['duplicated']}, corrupt {k['corrupt']}")
    return 3 if k["lost"] or k["duplicated"] or k["corrupt"] else 0


if __name__ == "__main__":
    sys.exit(main())
