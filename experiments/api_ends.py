#!/usr/bin/env python3
"""The Python programs at the ends of experiments/api_bench.py's rows:
sluice's Publisher and Subscriber, and the pyzmq baseline's publisher,
relay and subscriber.

  api_ends.py sluice-pub RUN_DIR SECONDS TUPLES_PER_EVENT
  api_ends.py sluice-sub RUN_DIR
  api_ends.py zmq-pub ADDRESS SECONDS TUPLES_PER_EVENT
  api_ends.py zmq-relay IN_ADDRESS OUT_ADDRESS
  api_ends.py zmq-sub ADDRESS

Both publishers send the same tuples, app.yaml's quotes (128 B), in the
same numpy batches: one structured array of TUPLES_PER_EVENT tuples, filled
once, sent again and again for SECONDS, with one in-place update per batch
(key += n for sluice, whose library numbers seq; seq += n for pyzmq, whose
subscriber checks it): a vectorised numpy op, or for one tuple a store
through a memoryview. That is all the numpy work there is: the figures are
of the libraries, not of rebuilding arrays.

pyzmq's chain is the demo chain's shape, four processes: PUSH -> PULL|PUSH
-> PULL|PUSH -> PULL over tcp loopback, one message per batch, pyzmq's
default high-water marks (lossless by construction: PUSH blocks when
full). Messages move without copies where pyzmq allows: the relays forward
the frames they receive (copy=False), the subscriber reads them in place;
the publisher's send(copy=False) is copied by pyzmq itself below
zmq.COPY_THRESHOLD (64 KiB), as it decides. An empty message is the end.

Each prints one JSON line: tuples, its figure where it has one, lost and
duplicated (the subscribers), peak_rss_mib (its own, getrusage). sluice-pub
adds its sending thread's CPU time per event (thread_time: the update,
the module and the library's claim, copy, checksum and commit; not the
links' threads) and the update's alone (fill_us_per_event, timed after
the run), so the module's share is their difference against
api_ends.cc's thread_cpu_us_per_event.
"""
import json
import resource
import struct
import sys
import time

import numpy as np

# app.yaml's quotes, as the sluice ends' dtype has them (checked there).
QUOTES = np.dtype({"names": ["seq", "key", "price", "size"], "formats": ["<u8", "<u4", "<f8", "<i4"],
                   "offsets": [0, 8, 12, 20], "itemsize": 128})


def peak_rss_mib():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def say(**kw):
    u = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps(dict(kw, peak_rss_mib=peak_rss_mib(), user_s=u.ru_utime, sys_s=u.ru_stime)), flush=True)


def batch_of(n):
    b = np.zeros(n, QUOTES)
    q = np.arange(n, dtype=np.uint64)
    b["seq"] = q
    b["key"] = q & 1023
    b["price"] = 100.0 + (q & 255) * 0.25
    b["size"] = (q & 31) + 1
    return b


def one_word(batch, field):
    """The first tuple's `field` as a one-item memoryview: a batch of one
    tuple is updated through it, since a ufunc call on one element (~1 us)
    costs more than a send."""
    off = batch.dtype.fields[field][1]
    size = batch.dtype[field].itemsize
    return memoryview(batch.view(np.uint8))[off:off + size].cast({4: "I", 8: "Q"}[size])


def sluice_pub(run_dir, seconds, per_event):
    import sluice
    pub = sluice.Publisher(run_dir, "publisher")
    if pub.dtype != QUOTES:
        sys.exit(f"api_ends.py: the stream is not app.yaml's quotes: {pub.schema}")
    batch = batch_of(per_event)
    key, key0 = batch["key"], one_word(batch, "key")
    sent = 0
    t0 = time.perf_counter()
    c0 = time.thread_time()
    with pub:
        while time.perf_counter() - t0 < seconds:
            for _ in range(64):
                if per_event > 1:
                    np.add(key, per_event, out=key)
                else:
                    key0[0] = (key0[0] + 1) & 0xFFFFFFFF
                sent += pub.send(batch)
        cpu = time.thread_time() - c0
        events = pub.committed
        pub.flush(timeout=60)
    # The update alone, timed apart: what of the thread's time is not sluice's.
    f0 = time.thread_time()
    for _ in range(10000):
        if per_event > 1:
            np.add(key, per_event, out=key)
        else:
            key0[0] = (key0[0] + 1) & 0xFFFFFFFF
    fill = (time.thread_time() - f0) / 10000
    say(tuples=sent, events=events, thread_cpu_us_per_event=round(cpu / max(events, 1) * 1e6, 3),
        fill_us_per_event=round(fill * 1e6, 3))


def sluice_sub(run_dir):
    import sluice
    tuples = 0

    def on_event(t, event):
        nonlocal tuples
        tuples += len(t)

    with sluice.Subscriber(run_dir, "subscriber") as sub:
        while not sub.ended:
            sub.poll(on_event, limit=256, timeout=1.0)
        k = sub.counts()
    say(tuples=tuples, lost=k["lost"], duplicated=k["duplicated"], corrupt=k["corrupt"])


def zmq_pub(address, seconds, per_event):
    import zmq
    ctx = zmq.Context()
    out = ctx.socket(zmq.PUSH)
    out.connect(address)
    batch = batch_of(per_event)
    seq, seq0 = batch["seq"], one_word(batch, "seq")
    # Below the threshold pyzmq copies the batch into its message, so the
    # next in-place update cannot reach a message still queued.
    if batch.nbytes >= zmq.COPY_THRESHOLD:
        sys.exit(f"api_ends.py: a batch of {batch.nbytes} bytes is not below zmq.COPY_THRESHOLD")
    sent = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(64):
            out.send(batch, copy=False)
            sent += per_event
            if per_event > 1:
                np.add(seq, per_event, out=seq)
            else:
                seq0[0] += 1
    out.send(b"")
    out.close(linger=-1)
    ctx.term()
    say(tuples=sent)


def zmq_relay(in_address, out_address):
    import zmq
    ctx = zmq.Context()
    inp = ctx.socket(zmq.PULL)
    inp.bind(in_address)
    out = ctx.socket(zmq.PUSH)
    out.connect(out_address)
    n = 0
    while True:
        f = inp.recv(copy=False)
        out.send(f, copy=False)
        if len(f) == 0:
            break
        n += 1
    inp.close()
    out.close(linger=-1)
    ctx.term()
    say(messages=n)


def zmq_sub(address):
    import zmq
    ctx = zmq.Context()
    inp = ctx.socket(zmq.PULL)
    inp.bind(address)
    first = last = None
    tuples = lost = duplicated = 0
    want = 0  # the next seq
    tb = QUOTES.itemsize
    seq_of = struct.Struct("<Q").unpack_from
    while True:
        f = inp.recv(copy=False)
        n = len(f) // tb
        if n == 0:
            break
        last = time.perf_counter()
        if first is None:
            first = last
        s = seq_of(f.buffer)[0]
        if s > want:
            lost += s - want
        elif s < want:
            duplicated += min(n, want - s)
        want = max(want, s + n)
        tuples += n
    inp.close()
    ctx.term()
    s = (last - first) if first is not None else 0.0
    say(tuples=tuples, tuples_per_s=tuples / s if s > 0 else 0, lost=lost, duplicated=duplicated)


def main(argv):
    cmds = {"sluice-pub": (sluice_pub, [str, float, int]), "sluice-sub": (sluice_sub, [str]),
            "zmq-pub": (zmq_pub, [str, float, int]), "zmq-relay": (zmq_relay, [str, str]),
            "zmq-sub": (zmq_sub, [str])}
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 != len(cmds[argv[1]][1]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    fn, types = cmds[argv[1]]
    fn(*(t(a) for t, a in zip(types, argv[2:])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
