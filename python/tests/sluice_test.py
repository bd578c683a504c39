"""The Python module against real ends: a publisher and a subscriber of one
deployment file in this process (TestInProcess, TestBadInput), and the demo
chain of deploy/examples/app.yaml run by sluice-deploy with its nodes
between them (TestThroughApp), node-a killed with acks on (TestFaults).

Run by CTest (python/CMakeLists.txt) with PYTHONPATH naming the built
module, SLUICE_DEPLOY the sluice-deploy binary and SLUICE_SOURCE_DIR the
tree: python3 -m unittest -v sluice_test.TestInProcess
"""
import json
import os
import pickle
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np
import sluice

SOURCE = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
APP_YAML = os.path.join(SOURCE, "deploy", "examples", "app.yaml")
QUOTES = "quotes{seq:u64,key:u32,price:f64,size:i32;tuple_bytes=128}"


def pair_yaml(port, more=""):
    """A publisher linked straight to a subscriber, quotes in 4 KiB events."""
    return (f"guarantee: none\nbase_port: {port}\nmetrics: off\nprogress_s: 0\nevent_bytes: 4096\n{more}"
            "schema: quotes\nschemas:\n  quotes:\n    fields:\n"
            "      - {name: key, type: u32}\n      - {name: price, type: f64}\n"
            "      - {name: size, type: i32}\n      - {name: tag, type: bytes, width: 6}\n"
            "    tuple_bytes: 64\n"
            "processes:\n  - {name: pub, role: publisher}\n  - {name: sub, role: subscriber}\n")


class Pair:
    """A deployment file of its own and the subscriber of it, opened."""

    def __init__(self, test, port, more=""):
        self.dir = tempfile.TemporaryDirectory(prefix="sluice-py-")
        test.addCleanup(self.dir.cleanup)
        self.file = os.path.join(self.dir.name, "d.yaml")
        with open(self.file, "w") as f:
            f.write(pair_yaml(port, more))

    def subscriber(self, **kw):
        return sluice.Subscriber(deployment=self.file, process="sub", **kw)

    def publisher(self, **kw):
        return sluice.Publisher(deployment=self.file, process="pub", **kw)


def quotes(dtype, first, n):
    a = np.zeros(n, dtype)
    q = np.arange(first, first + n, dtype=np.uint64)
    a["key"] = q % 1000
    a["price"] = q * 0.5
    a["size"] = -(q.astype(np.int64) % 77)
    return a


class Closer(threading.Thread):
    """Closes a publisher on a thread of its own: close() returns once the
    subscriber took END, which it does as the test's thread polls to it."""

    def __init__(self, pub):
        super().__init__()
        self.pub, self.error = pub, None
        self.start()

    def run(self):
        try:
            self.pub.close()
        except Exception as e:  # the test's thread reports it
            self.error = e

    def done(self, test):
        self.join(60)
        test.assertFalse(self.is_alive())
        test.assertIsNone(self.error)


class Reader(threading.Thread):
    """Iterates a subscriber on a thread of its own until END, checking that
    every tuple is the next of the stream and carries what quotes() wrote."""

    def __init__(self, sub):
        super().__init__()
        self.sub, self.tuples, self.wrong, self.error = sub, 0, 0, None

    def run(self):
        try:
            for t in self.sub:
                want = quotes(t.dtype, self.tuples, len(t))
                self.wrong += int(np.count_nonzero(t["seq"] != np.arange(self.tuples, self.tuples + len(t))))
                self.wrong += int(np.count_nonzero((t["key"] != want["key"]) | (t["price"] != want["price"])
                                                   | (t["size"] != want["size"])))
                self.tuples += len(t)
        except Exception as e:  # the test's thread reports it
            self.error = e


class TestInProcess(unittest.TestCase):
    def test_dtype_is_the_schema_and_a_round_trip_keeps_every_value(self):
        p = Pair(self, 12100)
        sub = p.subscriber()
        pub = p.publisher()
        dt = pub.dtype
        self.assertEqual(dt.names, ("seq", "key", "price", "size", "tag"))
        self.assertEqual([dt.fields[n][1] for n in dt.names], [0, 8, 12, 20, 24])
        self.assertEqual([dt.fields[n][0].str for n in dt.names], ["<u8", "<u4", "<f8", "<i4", "|S6"])
        self.assertEqual(dt.itemsize, 64)
        self.assertEqual(sub.dtype, dt)
        self.assertEqual(pub.schema, "quotes{seq:u64,key:u32,price:f64,size:i32,tag:bytes[6];tuple_bytes=64}")
        self.assertEqual(pub.max_tuples, (4096 - 64) // 64)
        reader = Reader(sub)
        reader.start()
        total = 0
        for n in (1, 7, pub.max_tuples, 3 * pub.max_tuples + 5, 1000):  # one event, several, a tail
            self.assertEqual(pub.send(quotes(dt, total, n)), n)
            total += n
        spread = np.zeros(40, dt)
        spread[::2] = quotes(dt, total, 20)
        self.assertEqual(pub.send(spread[::2]), 20)  # not contiguous: copied once first
        self.assertTrue(pub.flush(timeout=30))
        pub.close()
        reader.join(60)
        self.assertIsNone(reader.error)
        self.assertEqual((reader.tuples, reader.wrong), (total + 20, 0))
        k = sub.counts()
        self.assertEqual((k["tuples"], k["lost"], k["duplicated"], k["corrupt"], k["ended"]),
                         (total + 20, 0, 0, 0, True))
        sub.close()

    def test_claim_writes_in_the_slot_and_views_are_read_only(self):
        p = Pair(self, 12120)
        sub = p.subscriber()
        pub = p.publisher()
        got, kept, flags, refused = [], [], [], []

        with pub.claim(5) as room:
            self.assertEqual(len(room.tuples), 5)
            self.assertTrue(room.tuples.flags.writeable)
            room.tuples["key"] = [10, 11, 12, 13, 14]
            room.tuples["tag"] = b"abcdef"
        with self.assertRaises(ZeroDivisionError):
            with pub.claim(3) as room:  # aborted: nothing sent, the slot back
                room.tuples["key"] = 99
                1 / 0
        room = pub.claim(2)
        room.tuples["key"] = [20, 21]
        room.commit(1)  # the first only
        self.assertEqual(pub.committed, 2)
        closer = Closer(pub)

        def handler(tuples, event):
            flags.append(tuples.flags.writeable)
            got.append((event.event_seq, event.first_seq, event.count, tuples["key"].tolist(),
                        tuples["seq"].tolist()))
            with self.assertRaises(ValueError):
                tuples["key"] = 0  # the slot is read-only
            try:
                tuples.flags.writeable = True  # and stays so
                refused.append(False)
            except ValueError:
                refused.append(True)

        def keeper(tuples, event):
            kept.append(tuples)

        self.assertEqual(sub.poll(handler, limit=1, timeout=10), 1)
        self.assertEqual(sub.poll(keeper, limit=1, timeout=10, copy=True), 1)
        self.assertEqual(sub.poll(handler, timeout=10), 0)
        self.assertTrue(sub.ended)
        self.assertEqual(got, [(0, 0, 5, [10, 11, 12, 13, 14], [0, 1, 2, 3, 4])])
        self.assertEqual(flags, [False])
        self.assertEqual(refused, [True])
        self.assertEqual(kept[0]["key"].tolist(), [20])  # a copy, still there after its slot went back
        self.assertEqual(kept[0]["seq"].tolist(), [5])
        self.assertTrue(kept[0].flags.writeable)
        self.assertEqual(sub.counts()["tuples"], 6)
        closer.done(self)
        sub.close()

    def test_waits_release_the_gil(self):
        p = Pair(self, 12140)
        sub = p.subscriber()
        pub = p.publisher()
        polled = []
        t = threading.Thread(target=lambda: polled.append(sub.poll(lambda a, e: None, timeout=1.0)))
        t.start()
        time.sleep(0.1)
        spins = 0
        while t.is_alive():  # runs only while the poll waits without the GIL
            spins += 1
        t.join()
        self.assertEqual(polled, [0])
        self.assertGreater(spins, 1000)
        closer = Closer(pub)
        self.assertEqual(sub.poll(lambda a, e: None, timeout=10), 0)
        self.assertTrue(sub.ended)
        closer.done(self)
        sub.close()

    def test_a_poll_that_waited_hands_every_event_with_the_gil(self):
        p = Pair(self, 12160)
        sub = p.subscriber()
        pub = p.publisher()
        seen, events = [], []

        def handler(tuples, event):  # Python work on the poll's thread, after it waited
            seen.append(int(tuples["key"].sum()))
            events.append(event)
            if len(events) == 2:
                raise KeyError("the application's own error")

        out = []

        def poller():
            try:
                out.append(sub.poll(handler, limit=64, timeout=10))
            except KeyError as e:
                out.append(e)

        t = threading.Thread(target=poller)
        t.start()
        time.sleep(0.2)  # the poll waits, without the GIL
        batch = quotes(pub.dtype, 0, 3 * pub.max_tuples)  # three events at once
        self.assertEqual(pub.send(batch), len(batch))
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertIsInstance(out[0], KeyError)  # raised by the second event's handler, through poll
        while len(events) < 3:
            sub.poll(handler, timeout=10)
        self.assertEqual(seen, [int(batch["key"][i * pub.max_tuples:(i + 1) * pub.max_tuples].sum())
                                for i in range(3)])
        e = events[1]
        self.assertIsInstance(e, sluice.Event)
        self.assertEqual(tuple(e), (0, pub.max_tuples, pub.max_tuples, 1))  # stream, count, first_seq, event_seq
        self.assertEqual(repr(e), f"sluice.Event(stream=0, count={pub.max_tuples}, first_seq={pub.max_tuples}, "
                                  "event_seq=1)")
        closer = Closer(pub)
        self.assertEqual(sub.poll(handler, timeout=10), 0)
        self.assertTrue(sub.ended)
        closer.done(self)
        sub.close()


class TestBadInput(unittest.TestCase):
    def test_an_array_of_another_dtype_is_refused_naming_both(self):
        p = Pair(self, 12200)
        sub = p.subscriber()
        pub = p.publisher()
        packed = np.zeros(10, [("seq", "<u8"), ("key", "<u4"), ("price", "<f8"), ("size", "<i4"),
                               ("tag", "S6")])
        with self.assertRaises(sluice.SchemaError) as e:
            pub.send(packed)
        self.assertEqual(str(e.exception),
                         "send: the array's dtype array{seq:u64,key:u32,price:f64,size:i32,tag:bytes[6];"
                         "tuple_bytes=30} is not the stream's schema quotes{seq:u64,key:u32,price:f64,size:i32,"
                         "tag:bytes[6];tuple_bytes=64} (make arrays with publisher.dtype)")
        self.assertIsInstance(e.exception, TypeError)
        with self.assertRaises(sluice.SchemaError) as e:
            pub.send(np.zeros(10, np.float32))
        self.assertIn("array of float32 (not a structured dtype)", str(e.exception))
        with self.assertRaises(sluice.SchemaError) as e:
            pub.send([1, 2, 3])
        self.assertIn("expected a numpy array of the stream's dtype", str(e.exception))
        self.assertEqual(pub.committed, 0)  # nothing of them went
        closer = Closer(pub)
        self.assertEqual(sub.poll(lambda a, e: None, timeout=10), 0)
        self.assertEqual(sub.counts()["tuples"], 0)
        closer.done(self)
        sub.close()

    def test_a_dtype_once_accepted_is_still_checked(self):
        # send knows an equal dtype by identity after the first array of it:
        # another dtype after it, or the same one renamed in place, is refused.
        p = Pair(self, 12300)
        sub = p.subscriber()
        pub = p.publisher()
        twin = pickle.loads(pickle.dumps(pub.dtype))  # equal, another object
        self.assertIsNot(twin, pub.dtype)
        self.assertEqual(pub.send(quotes(pub.dtype, 0, 4)), 4)
        self.assertEqual(pub.send(quotes(twin, 4, 4)), 4)
        self.assertEqual(pub.send(quotes(twin, 8, 4)), 4)
        wrong = np.zeros(4, [("seq", "<u8"), ("key", "<u4")])
        with self.assertRaises(sluice.SchemaError) as e:
            pub.send(wrong)
        self.assertIn("the array's dtype array{seq:u64,key:u32;tuple_bytes=12} is not the stream's schema",
                      str(e.exception))
        renamed = quotes(twin, 12, 4)
        renamed.dtype.names = ("seq", "key", "price", "size", "label")  # twin itself, in place
        with self.assertRaises(sluice.SchemaError) as e:
            pub.send(renamed)
        self.assertIn("label:bytes[6]", str(e.exception))
        with self.assertRaises(sluice.SchemaError):
            pub.send(quotes(twin, 12, 4))  # twin is renamed now: refused too
        self.assertEqual(pub.send(quotes(pub.dtype, 12, 4)), 4)
        self.assertEqual(pub.committed, 4)  # nothing of the refused went
        closer = Closer(pub)
        got = sum(len(t) for t in sub)
        closer.done(self)
        self.assertEqual(got, 16)
        k = sub.counts()
        self.assertEqual((k["tuples"], k["lost"], k["duplicated"]), (16, 0, 0))
        sub.close()

    def test_a_declared_dtype_of_another_schema_is_refused_at_the_handshake(self):
        p = Pair(self, 12220)
        sub = p.subscriber()
        wrong = np.dtype([("seq", "<u8"), ("price", "<f8")])
        with self.assertRaises(sluice.Error) as e:
            p.publisher(dtype=wrong)
        msg = str(e.exception)
        self.assertIn("handshake rejected", msg)
        self.assertIn("app{seq:u64,price:f64;tuple_bytes=16}", msg)  # the publisher's
        self.assertIn("receiver expects 'quotes{seq:u64,key:u32,price:f64,size:i32,tag:bytes[6];tuple_bytes=64}'",
                      msg)
        with self.assertRaises(sluice.Error) as e:
            p.subscriber(dtype=wrong)
        self.assertEqual(str(e.exception), "schema mismatch: the application reads app{seq:u64,price:f64;"
                         "tuple_bytes=16}, but 'pub' sends quotes{seq:u64,key:u32,price:f64,size:i32,"
                         "tag:bytes[6];tuple_bytes=64} to 'sub'")
        with self.assertRaises(sluice.SchemaError) as e:
            p.publisher(dtype=np.dtype([("seq", "<u8"), ("price", "<f4")]))
        self.assertIn("field 'price' is <f4", str(e.exception))
        # The graph's own dtype, declared, gets through; the subscriber kept waiting for it.
        pub = p.publisher(dtype=sub.dtype)
        self.assertEqual(pub.send(quotes(pub.dtype, 0, 100)), 100)
        closer = Closer(pub)
        self.assertEqual(sum(len(t) for t in sub), 100)
        closer.done(self)
        sub.close()

    def test_bad_calls_raise_with_the_library_words(self):
        p = Pair(self, 12240)
        with self.assertRaises(sluice.Error) as e:
            sluice.Publisher(deployment=p.file, process="sub")
        self.assertEqual(str(e.exception), f"process 'sub' in {p.file} is a subscriber, not a publisher")
        with self.assertRaises(sluice.Error) as e:
            sluice.Publisher("/nonexistent/run", "pub")
        self.assertIn("cannot read /nonexistent/run/apps/pub.json", str(e.exception))
        sub = p.subscriber()
        with self.assertRaises(sluice.Error) as e:
            sub.acknowledge()
        self.assertEqual(str(e.exception), "acknowledge: this subscriber acknowledges by itself (manual_acks off)")
        pub = p.publisher()
        with self.assertRaises(sluice.Error) as e:
            pub.claim(pub.max_tuples + 1)
        self.assertEqual(str(e.exception), f"claim: claim of {pub.max_tuples + 1} tuples: an event holds 1 to "
                                           f"{pub.max_tuples} (event_bytes 4096)")
        with self.assertRaises(ValueError):
            pub.send(quotes(pub.dtype, 0, 1), timeout=-1)
        with self.assertRaises(ValueError):
            sub.poll(lambda a, e: None, limit=0)
        closer = Closer(pub)
        self.assertEqual(sub.poll(lambda a, e: None, timeout=10), 0)
        closer.done(self)
        self.assertTrue(pub.closed)
        with self.assertRaises(sluice.ClosedError):
            pub.send(quotes(pub.dtype, 0, 1))
        sub.close()
        with self.assertRaises(sluice.ClosedError):
            sub.poll(lambda a, e: None)

    def test_no_credit_is_back_pressure_then_everything_comes_once(self):
        p = Pair(self, 12260)
        sub = p.subscriber()
        pub = p.publisher()
        batch = quotes(pub.dtype, 0, pub.max_tuples)
        events = 0
        # Nobody polls: the pool and the receiver's slots fill, then send says so.
        while pub.send(batch, timeout=0.2) == len(batch):
            events += 1
            self.assertLess(events, 100000, "send never saw back pressure")
        self.assertIsNone(pub.claim(1, timeout=0))
        self.assertFalse(pub.flush(timeout=0.1))
        self.assertGreater(events, 0)
        got = 0
        while got < events * len(batch):
            n = []
            sub.poll(lambda t, e: n.append(len(t)), timeout=10)
            got += sum(n)
        self.assertTrue(pub.flush(timeout=30))
        closer = Closer(pub)
        self.assertEqual(sum(len(t) for t in sub), 0)
        closer.done(self)
        k = sub.counts()
        self.assertEqual((k["tuples"], k["lost"], k["duplicated"]), (events * len(batch), 0, 0))
        sub.close()

    def test_a_handler_that_raises_leaves_poll_and_loses_nothing(self):
        p = Pair(self, 12280)
        sub = p.subscriber()
        pub = p.publisher()
        for i in range(5):
            pub.send(quotes(pub.dtype, i * 10, 10))
        closer = Closer(pub)
        seen = []

        def failing(tuples, event):
            seen.append(event.event_seq)
            if event.event_seq == 1:
                raise KeyError("the application's own error")

        # The events may come to one poll together or to several: polls
        # until the handler's error comes out of one.
        raised = False
        while not raised and len(seen) < 5:
            try:
                sub.poll(failing, timeout=10)
            except KeyError:
                raised = True
        self.assertTrue(raised, f"the handler's KeyError did not leave poll (handled {seen})")
        self.assertEqual(seen, [0, 1])
        while not sub.ended:
            sub.poll(failing, timeout=10)
        self.assertEqual(seen, [0, 1, 2, 3, 4])
        self.assertEqual(sub.counts()["tuples"], 50)
        closer.done(self)
        sub.close()


class Deploy:
    """sluice-deploy run of app.yaml in a directory of its own: the nodes
    start, the applications' ends are written, the report comes at the end."""

    def __init__(self, test, port, *sets):
        self.dir = tempfile.TemporaryDirectory(prefix="sluice-py-app-")
        test.addCleanup(self.dir.cleanup)
        self.run = os.path.join(self.dir.name, "run")
        self.log = open(os.path.join(self.dir.name, "deploy.log"), "w+")
        test.addCleanup(self.log.close)
        cmd = [os.environ["SLUICE_DEPLOY"], "run", APP_YAML, "--json", "--run-dir", self.run]
        for s in (f"base_port={port}", "progress_s=0", "metrics=off", "app_wait_s=60") + sets:
            cmd += ["--set", s]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     start_new_session=True)
        deadline = time.time() + 30
        for f in ("publisher", "subscriber"):
            while not os.path.exists(os.path.join(self.run, "apps", f + ".json")):
                if self.proc.poll() is not None or time.time() > deadline:
                    raise AssertionError(f"no apps/{f}.json: sluice-deploy said\n{self.text()}")
                time.sleep(0.05)

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def report(self):
        try:
            out, _ = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise AssertionError(f"sluice-deploy run did not end; its log:\n{self.text()}")
        if self.proc.returncode != 0:
            raise AssertionError(f"sluice-deploy run exited {self.proc.returncode}:\n{self.text()}")
        return json.loads(out)

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class TestThroughApp(unittest.TestCase):
    def test_python_publisher_to_nodes_to_python_subscriber(self):
        d = Deploy(self, 12600)
        try:
            sub = sluice.Subscriber(d.run, "subscriber")
            pub = sluice.Publisher(d.run, "publisher")
            self.assertEqual(pub.schema, QUOTES)
            reader = Reader(sub)
            reader.start()
            sent = 0
            for _ in range(400):  # batches of 256: an event of 255 and one of 1
                sent += pub.send(quotes(pub.dtype, sent, 256))
            self.assertTrue(pub.flush(timeout=30))
            pub.close()
            reader.join(60)
            self.assertIsNone(reader.error)
            self.assertEqual((reader.tuples, reader.wrong), (sent, 0))
            sub.close()
            rep = d.report()
        except BaseException:
            print(f"sluice-deploy's log:\n{d.text()}")  # what the nodes said
            raise
        finally:
            d.kill()
        procs = {p["name"]: p for p in rep["processes"]}
        self.assertEqual(procs["publisher"]["tuples_out"], sent)
        self.assertEqual(procs["subscriber"]["tuples_in"], sent)
        self.assertEqual((rep["tuples"], rep["lost"], rep["duplicated"], rep["corrupt"]), (sent, 0, 0, 0))


def node_a(run):
    """node-a's pid, as sluice-deploy started it."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cl = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if run + "/" in cl and "--process node-a " in cl and "--restarted" not in cl:
            return int(pid)
    return None


class TestFaults(unittest.TestCase):
    def test_killing_node_a_with_acks_loses_and_repeats_nothing(self):
        d = Deploy(self, 13700, "acks=on", "restart=on-failure")
        try:
            sub = sluice.Subscriber(d.run, "subscriber")
            pub = sluice.Publisher(d.run, "publisher")
            reader = Reader(sub)
            reader.start()
            victim = node_a(d.run)
            self.assertIsNotNone(victim)
            sent, killed, t0 = 0, False, time.time()
            while time.time() - t0 < 3:
                if not killed and time.time() - t0 > 1:
                    os.kill(victim, signal.SIGKILL)
                    killed = True
                sent += pub.send(quotes(pub.dtype, sent, pub.max_tuples), timeout=0.1)
                time.sleep(0.0002)
            self.assertTrue(pub.flush(timeout=60))
            self.assertEqual(pub.acknowledged, pub.committed)
            pub.close()
            reader.join(60)
            self.assertIsNone(reader.error)
            self.assertEqual((reader.tuples, reader.wrong), (sent, 0))
            k = sub.counts()
            self.assertEqual((k["lost"], k["duplicated"], k["corrupt"], k["ended"]), (0, 0, 0, True))
            sub.close()
            rep = d.report()
            self.assertIn("node-a died (signal KILL); restarting", d.text())
        except BaseException:
            print(f"sluice-deploy's log:\n{d.text()}")  # what the nodes said
            raise
        finally:
            d.kill()
        self.assertEqual((rep["tuples"], rep["lost"], rep["duplicated"]), (sent, 0, 0))


if __name__ == "__main__":
    unittest.main()
