#!/usr/bin/env python3
"""costmodel.py: a fit on runs made from known costs gives those costs back
and predicts a configuration it was not fit on; counts follow the loadgen's
packing. Needs numpy (Debian's python3-numpy, which python3-matplotlib pulls in)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import costmodel as cm  # noqa: E402

TRUE = {"send_event:tcp-opt": 900.0, "recv_event:tcp-opt": 600.0, "byte:tcp-opt": 0.5,
        "tuple:tcp-opt": 3.0, "handoff": 150.0, "op:filter": 4.0, "gen_tuple": 20.0,
        "gen_byte": 0.3, "sink_tuple": 30.0, "sink_byte": 0.2}
CHAIN = [("loadgen", []), ("node", ["filter"]), ("node", ["filter"]), ("sink", [])]
GHZ, CORES, ALPHA = 2.0, 2, 0.8


def synthetic_run(rid, t, e, E=100000, chain=CHAIN):
    """A run whose processes spent exactly TRUE's cycles, at ALPHA of the machine."""
    counts = cm.chain_counts(chain, "tcp-opt", t, e)
    procs, total = [], 0.0
    for (role, ops), (_, f, _) in zip(chain, counts):
        cyc = sum(TRUE[k] * v for k, v in f.items())
        total += cyc
        k = cm.tuples_per_event(t, e)
        procs.append({"role": role, "operators": ops, "user_s": cyc * E / (GHZ * 1e9),
                      "sys_s": 0.0, "events_in": 0 if role == "loadgen" else E,
                      "events_out": 0 if role == "sink" else E,
                      "tuples_in": 0 if role == "loadgen" else k * E,
                      "tuples_out": 0 if role == "sink" else k * E, "cpe_p": 0})
    eps = ALPHA * CORES * GHZ * 1e9 / total
    return {"rid": rid, "preset": "tcp-opt", "carrier": "", "tuple_bytes": str(t),
            "event_bytes": str(e), "clock_ghz": str(GHZ), "host_cores": str(CORES),
            "tuples_per_s": str(eps * cm.tuples_per_event(t, e)), "procs": json.dumps(procs)}


class CostModel(unittest.TestCase):
    def test_packing(self):
        self.assertEqual(cm.tuples_per_event(128, 32768), 255)   # pipeline.yaml's comment
        self.assertEqual(cm.tuples_per_event(4096, 32768), 7)
        self.assertEqual(cm.tuples_per_event(4096, 0), 1)
        self.assertEqual(cm.tuples_per_event(4096, 4096), 1)     # at least one
        self.assertEqual(cm.event_wire_bytes(128, 32768), 32704)

    def test_fit_then_predict_unseen(self):
        cells = [(128, 0), (4096, 0), (128, 32768), (4096, 32768), (1024, 8192)]
        # A chain whose nodes run no operator tells the filter's cost from the
        # carrier's per-tuple cost (as reproduce.py's pass-through runs do).
        pass_chain = [("loadgen", []), ("node", []), ("node", []), ("sink", [])]
        cal = cm.fit([synthetic_run(f"r{i}", t, e) for i, (t, e) in enumerate(cells)] +
                     [synthetic_run("p", 128, 32768, chain=pass_chain)])
        self.assertAlmostEqual(cal["alpha"]["tcp-opt"], ALPHA, places=6)
        truth = synthetic_run("x", 512, 65536)
        p = cm.predict(cal, CHAIN, "tcp-opt", 512, 65536)
        self.assertAlmostEqual(p["tuples_per_s"] / float(truth["tuples_per_s"]), 1.0, places=4)
        for n, v in TRUE.items():
            self.assertAlmostEqual(cal["coefficients"][n], v, delta=1e-3 * v, msg=n)

    def test_unknown_carrier_is_an_error(self):
        cal = cm.fit([synthetic_run("r1", 128, 0), synthetic_run("r2", 128, 32768)])
        with self.assertRaises(KeyError) as e:
            cm.predict(cal, CHAIN, "ucx-opt", 128, 0)
        self.assertIn("ucx-opt", str(e.exception))

    def test_costs_are_never_negative(self):
        import numpy as np
        A = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
        b = np.array([3.0, 2.0, 1.0])          # unconstrained slope would be -1
        x = cm.nonnegative_lstsq(A, b)
        self.assertTrue((x >= 0).all())
        self.assertAlmostEqual(x[1], 0.0)
        self.assertAlmostEqual(x[0], 2.0)


if __name__ == "__main__":
    unittest.main()
