#!/usr/bin/env python3
"""An independent sender, written from transport/PROTOCOL.md alone.

Starts a real sluice-sink (acks on) and speaks the link protocol to it: a
hand-built Cap'n Proto Hello, frames of events with XXH3 checksums sent only
with credit, the largest END the document allows, and the clean close once
every frame is acknowledged; then checks the sink's summary: every tuple
arrived once and intact. Before that, Hellos the document says a receiver
refuses (an older version, other acks) must be refused with why, the sink
waiting on for its real upstream; after it, a second sink must answer a frame
after END as a protocol error: no last acknowledgement, an error that
names the link, and an exit status of 1 (its stream ended with the error). Python 3 standard library and python3-xxhash (Debian) only.

Usage: protocol_sender.py PATH/TO/sluice-sink
"""

import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time

import xxhash

TUPLE_BYTES = 32
SLOT_BYTES = 65536
STREAMS = 2
TUPLES_PER_STREAM = 5000


def fail(msg):
    print(f"protocol_sender: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


# ---------------------------------------------------------------- Cap'n Proto by hand

def text_pointer(offset_words, text):
    """A list pointer to byte elements: the text plus its NUL."""
    count = len(text) + 1
    return (1 | ((offset_words & 0x3FFFFFFF) << 2) | (2 << 32) | (count << 35))


def padded(b):
    return b + b"\0" * (-len(b) % 8)


def build_message(data_words, fields, texts):
    """One-segment message: root struct pointer, data section, pointer section
    of Text fields, then the texts. `fields` is a list of (byte offset,
    struct format, value) in the data section."""
    data = bytearray(8 * data_words)
    for off, fmt, value in fields:
        struct.pack_into("<" + fmt, data, off, value)
    nptr = len(texts)
    # Words: [root][data][pointers][texts...]
    bodies = [padded(t.encode() + b"\0") if t else b"" for t in texts]
    ptrs = []
    after_ptrs = 0  # words from the end of the pointer section to the next body
    for i, (t, body) in enumerate(zip(texts, bodies)):
        if not t:
            ptrs.append(0)
            continue
        # Offset counts from the end of pointer i: the pointers after it, then
        # the bodies before this one.
        offset = (nptr - i - 1) + after_ptrs
        ptrs.append(text_pointer(offset, t))
        after_ptrs += len(body) // 8
    root = 0 | (0 << 2) | (data_words << 32) | (nptr << 48)
    seg = struct.pack("<Q", root) + bytes(data) + b"".join(struct.pack("<Q", p) for p in ptrs) \
        + b"".join(bodies)
    table = struct.pack("<II", 0, len(seg) // 8)  # one segment
    return table + seg


def read_message_root(msg):
    """Returns (data bytes, pointer words, segment, pointer section start word)."""
    nseg = struct.unpack_from("<I", msg, 0)[0] + 1
    sizes = struct.unpack_from(f"<{nseg}I", msg, 4)
    start = 4 + 4 * nseg
    start += -start % 8
    seg = msg[start:start + 8 * sizes[0]]
    root = struct.unpack_from("<Q", seg, 0)[0]
    if root & 3 != 0:
        fail("HelloReply root is not a struct pointer")
    off = (root >> 2) & 0x3FFFFFFF
    dw, pw = (root >> 32) & 0xFFFF, (root >> 48) & 0xFFFF
    data_at = 1 + off
    return seg, data_at, dw, pw


def read_text(seg, ptr_word_index):
    p = struct.unpack_from("<Q", seg, 8 * ptr_word_index)[0]
    if p == 0:
        return ""
    off = (p >> 2) & 0x3FFFFFFF
    count = p >> 35
    at = 8 * (ptr_word_index + 1 + off)
    return seg[at:at + count - 1].decode(errors="replace")


VERSION = 4


def hello(version=VERSION, acks=True):
    msg = build_message(
        3,
        [(0, "H", version),           # version
         (2, "B", 1 if acks else 0),  # acks: bit 0 of data byte 2
         (4, "I", 0),                 # linkId: the standalone sink's one link
         (8, "I", 0),                 # instance
         (12, "I", TUPLE_BYTES),      # tupleBytes
         (16, "I", SLOT_BYTES),       # slotBytes
         (20, "I", 64)],              # slots (informative)
        ["sluice.tuple", "tcp/sg", "", "python-sender", "sink"])
    return struct.pack("<II", 0x53484C53, len(msg)) + msg


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            fail(f"the sink closed the connection ({len(buf)} of {n} bytes)")
        buf += chunk
    return buf


def read_reply(sock):
    magic, length = struct.unpack("<II", recv_exact(sock, 8))
    if magic != 0x53484C53:
        fail(f"reply magic 0x{magic:08x}")
    seg, data_at, dw, pw = read_message_root(recv_exact(sock, length))
    data = seg[8 * data_at:8 * (data_at + dw)]
    accepted = data[0] & 1
    credits, slot_bytes, batch = struct.unpack_from("<III", data, 4)
    error = read_text(seg, data_at + dw) if pw > 0 else ""
    return bool(accepted), credits, slot_bytes, batch, error


# ---------------------------------------------------------------- events

def event(stream, first_seq, count, event_seq):
    tuples = bytearray()
    for i in range(count):
        seq = first_seq + i
        tuples += struct.pack("<QI", seq, (seq * 2654435761) & 0xFFFFFFFF)
        tuples += bytes((seq + j) & 0xFF for j in range(TUPLE_BYTES - 12))
    header = struct.pack("<IHHIIQIIIIQQ", 0x45434C53, 2, 64, stream, TUPLE_BYTES, first_seq,
                         count, count, 0, 0, time.time_ns(), event_seq)
    assert len(header) == 56
    head = xxhash.xxh3_64_intdigest(header, seed=0)
    checksum = xxhash.xxh3_64_intdigest(bytes(tuples), seed=head)
    return header + struct.pack("<Q", checksum) + bytes(tuples)


def frame(kind, payload, events):
    return struct.pack("<IHHII", 0x52464C53, kind, 0, len(payload), events) + payload


class Credits:
    """Credit messages as they come: credits, and with acks the acknowledged
    prefix (the largest seen; it never decreases)."""

    def __init__(self, sock, granted):
        self.sock, self.left, self.granted, self.buf = sock, granted, granted, b""
        self.waits = 0
        self.acked = 0
        self.eof = False

    def _take_arrived(self, block, eof_ok=False):
        r, _, _ = select.select([self.sock], [], [], 30 if block else 0)
        if not r:
            if block:
                fail("no credit came back in 30 s")
            return
        try:
            data = self.sock.recv(4096)
        except ConnectionResetError:
            if not eof_ok:
                raise
            data = b""
        if not data:
            if eof_ok:
                self.eof = True
                return
            fail("the sink closed the connection while credits were owed")
        self.buf += data
        while len(self.buf) >= 16:
            magic, n, acked = struct.unpack_from("<IIQ", self.buf, 0)
            self.buf = self.buf[16:]
            if magic != 0x52434C53:
                fail(f"credit magic 0x{magic:08x}")
            if n > 1 << 24:
                fail(f"a credit message grants {n} credits")
            self.left += n
            if self.left > self.granted:
                fail(f"the sink returned more credits than it granted ({self.left} > {self.granted})")
            self.acked = max(self.acked, acked)

    def take(self):
        self._take_arrived(False)
        while self.left == 0:
            self.waits += 1
            self._take_arrived(True)
        self.left -= 1

    def wait_acked(self, frames):
        """With acks, after END: the last credit message acknowledges every
        frame (rule A5); the sender waits for it before its FIN."""
        while self.acked < frames:
            self._take_arrived(True)
        if self.acked != frames:
            fail(f"the sink acknowledged {self.acked} frames, {frames} were sent")

    def until_eof(self):
        """After FIN: credit messages until the receiver's FIN (rule X1)."""
        self.sock.settimeout(30)
        while not self.eof:
            self._take_arrived(True, eof_ok=True)


def start_sink(sink, work, name):
    """A sink on a free loopback port, told acks=on rather than left to the
    default (a deployment's, not the protocol's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    summary = os.path.join(work, f"{name}.json")
    log = open(os.path.join(work, f"{name}.log"), "w")
    proc = subprocess.Popen([sink, "--listen", f"127.0.0.1:{port}", "--summary", summary,
                             "--set", f"tuple_bytes={TUPLE_BYTES}", "--set", "progress_s=0",
                             "--set", "acks=on"],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    return proc, port, summary, log


def connect(port):
    for _ in range(200):
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError:
            time.sleep(0.05)
    fail("the sink never listened")


def refused(port, hello_bytes, why):
    """A Hello the receiver must refuse (rule H5), saying why; it closes the
    connection and keeps waiting (H6)."""
    with connect(port) as sock:
        sock.sendall(hello_bytes)
        accepted, _, _, _, error = read_reply(sock)
        if accepted:
            fail(f"a Hello that should be refused ({why}) was accepted")
        if why not in error:
            fail(f"the refusal says '{error}', not '{why}'")
        print(f"refused as it should be: {error}")


def largest_end(next_seq, events):
    """END with flags 3 (accounts with a partitioned field) naming every
    stream the document allows: 8 + 56 x 256 bytes, the largest END."""
    n = 256
    entries = b"".join(struct.pack("<IIQQ", st, 0, next_seq[st] if st < STREAMS else 0,
                                   events[st] if st < STREAMS else 0) for st in range(n))
    accounts = struct.pack("<QQQQ", 0, 0, 0, 0) * n
    end = struct.pack("<II", n, 3) + entries + accounts
    assert len(end) == 8 + 56 * n == 14344
    return end


def good_run(sock):
    accepted, credits, slot_bytes, batch, error = read_reply(sock)
    if not accepted:
        fail(f"Hello refused: {error}")
    print(f"accepted: {credits} credits of {slot_bytes}-byte slots, batch {batch}")
    gate = Credits(sock, credits)

    # Events of 1..40 tuples, streams interleaved, several events per
    # frame; far more frames than the initial credits.
    next_seq = [0] * STREAMS
    events = [0] * STREAMS
    frames = 0
    pending, pending_events = b"", 0
    sizes = [1, 7, 40, 3, 16]
    k = 0
    while any(n < TUPLES_PER_STREAM for n in next_seq):
        for st in range(STREAMS):
            if next_seq[st] >= TUPLES_PER_STREAM:
                continue
            count = min(sizes[k % len(sizes)], TUPLES_PER_STREAM - next_seq[st])
            k += 1
            ev = event(st, next_seq[st], count, events[st])
            next_seq[st] += count
            events[st] += 1
            if len(pending) + len(ev) > slot_bytes or pending_events == 8:
                gate.take()
                sock.sendall(frame(1, pending, pending_events))
                frames += 1
                pending, pending_events = b"", 0
            pending += ev
            pending_events += 1
    if pending:
        gate.take()
        sock.sendall(frame(1, pending, pending_events))
        frames += 1
    gate.take()  # END costs a credit too
    sock.sendall(frame(3, largest_end(next_seq, events), 0))
    frames += 1
    print(f"sent {frames} frames, {sum(events)} events, {sum(next_seq)} tuples; "
          f"waited for credit {gate.waits} times")
    if frames <= credits:
        fail("the test must send more frames than the initial credits")
    # The clean close with acks: every frame acknowledged, then FIN, then
    # credits until the sink's FIN.
    gate.wait_acked(frames)
    sock.shutdown(socket.SHUT_WR)
    gate.until_eof()
    sock.close()


def frame_after_end(sink, work):
    """A frame after END (rules X3, E3): the sink returns no last credits (so
    END is never acknowledged), its error names the link and what came, and
    it exits 1: with acks too, a protocol error ends its stream."""
    proc, port, _, log = start_sink(sink, work, "after-end")
    try:
        with connect(port) as sock:
            sock.sendall(hello())
            accepted, credits, _, _, error = read_reply(sock)
            if not accepted:
                fail(f"Hello refused: {error}")
            gate = Credits(sock, credits)
            gate.take()
            sock.sendall(frame(1, event(0, 0, 5, 0), 1))
            end = struct.pack("<II", 1, 0) + struct.pack("<IIQQ", 0, 0, 5, 1)
            gate.take()
            gate.take()
            # END and a frame behind it, in one write.
            sock.sendall(frame(3, end, 0) + frame(1, event(0, 5, 5, 1), 1))
            sock.shutdown(socket.SHUT_WR)
            gate.until_eof()
            if gate.acked >= 2:
                fail(f"the sink acknowledged {gate.acked} frames: END with a frame after it was "
                     "acknowledged")
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    text = open(os.path.join(work, "after-end.log")).read()
    want = "came after END, as frame 2: nothing may follow END"
    if want not in text or "link python-sender -> sink" not in text:
        fail(f"the sink's log does not name the frame after END ('{want}'):\n{text}")
    if rc != 1:
        fail(f"the sink exited {rc} after a frame after END, not 1 (its stream ends with the "
             f"protocol error):\n{text}")
    print("a frame after END: refused as it should be")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    sink = sys.argv[1]
    work = tempfile.mkdtemp(prefix="sluice-protocol-")
    proc, port, summary, log = start_sink(sink, work, "sink")
    try:
        refused(port, hello(version=3), f"wire version 3, receiver speaks {VERSION}")
        refused(port, hello(acks=False),
                "sender 'python-sender' has acks off, receiver 'sink' has acks on")
        sock = connect(port)
        sock.sendall(hello())
        good_run(sock)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    if rc != 0:
        fail(f"the sink exited {rc}; log: {open(os.path.join(work, 'sink.log')).read()}")
    s = json.load(open(summary))
    want = STREAMS * TUPLES_PER_STREAM
    print(f"sink: tuples_in {s['tuples_in']}, lost {s['lost']}, duplicated {s['duplicated']}, "
          f"corrupt {s['corrupt']}")
    if s["tuples_in"] != want:
        fail(f"the sink counted {s['tuples_in']} tuples, {want} were sent")
    for key in ("lost", "duplicated", "corrupt"):
        if s[key] != 0:
            fail(f"the sink counted {s[key]} {key} tuples")
    frame_after_end(sink, work)
    print("protocol_sender: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
