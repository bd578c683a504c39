#!/usr/bin/env python3
"""Unit tests for experiments/model.py: the study's equations against values
worked by hand from the study's own examples (Akram et al., DEBS 2012,
sections 4.2 and 5).

The study's machines: Setup-A and Setup-B are 4-core (per node, per socket)
Xeons at 2.4 GHz (X3220, E5620); Setup-A's peak power is 200 W; the energy
projection uses 25 W per core; events are 32 KB (32768 B).
"""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model  # noqa: E402

F = 2.4e9  # the study's cores' clock


class Equation2EventsPerSecond(unittest.TestCase):
    def test_single_node_of_four_cores(self):
        # 4 cores x 2.4 GHz / 96 000 cycles per event = 100 000 events/s.
        self.assertAlmostEqual(model.events_per_s(96_000, 4, F), 100_000)

    def test_alpha_scales_linearly(self):
        self.assertAlmostEqual(model.events_per_s(96_000, 4, F, alpha=0.5), 50_000)

    def test_doubling_cores_doubles_rate(self):
        # Section 5.2.3: "doubling the cores will double the events streamed".
        self.assertAlmostEqual(model.events_per_s(1000, 8, F) / model.events_per_s(1000, 4, F), 2)


class Equation1Bandwidth(unittest.TestCase):
    def test_two_terabits_with_1024_cores(self):
        # Section 5.3 and the abstract: 2 Gb/s per core, so 1024 cores demand
        # about 2 Tb/s. 2 Gb/s = 0.25 GB/s at 2.4 GHz is 9.6 cycles per byte;
        # 1024 x 2.4e9 / 9.6 = 256 GB/s = 2048 Gb/s.
        self.assertAlmostEqual(model.gbits_per_s(9.6, 1, F), 2.0)
        self.assertAlmostEqual(model.gbytes_per_s(9.6, 1024, F), 256.0)
        self.assertAlmostEqual(model.gbits_per_s(9.6, 1024, F), 2048.0)

    def test_cpb_from_cpe(self):
        # A 32 KB event at 314 572.8 cycles is 9.6 cycles per byte.
        self.assertAlmostEqual(model.cpb_from_cpe(314_572.8, 32768), 9.6)


class Equation3Energy(unittest.TestCase):
    def test_busy_only(self):
        # Setup-A: P = 200 W, 4 cores at 2.4 GHz; 1e6 cycles per event busy,
        # none idle: 200 x 1e6 / 9.6e9 = 0.0208333 J.
        self.assertAlmostEqual(model.epe_joules(1e6, 0, 200, 4, F), 200e6 / 9.6e9)

    def test_idle_cycles_draw_seventy_percent(self):
        # 1e6 busy + 1e6 idle: 200 x 1.7e6 / 9.6e9 = 0.0354167 J.
        self.assertAlmostEqual(model.epe_joules(1e6, 1e6, 200, 4, F), 0.03541666666)

    def test_per_core_power_is_the_same_as_per_server(self):
        # 25 W per core: one core or four cores of 25 W each, same joules.
        self.assertAlmostEqual(model.epe_joules(5e5, 1e5, 25, 1, F),
                               model.epe_joules(5e5, 1e5, 100, 4, F))

    def test_thirty_billion_kwh_for_2020(self):
        # Section 5.2.2: original, small tuples, 35 ZB (2020) in 32 KB events
        # is "approximately 30 billion kWh" at 25 W per core. Worked back:
        # 35e21 / 32768 = 1.0681e18 events; 30e9 kWh = 1.08e17 J, so
        # EPE = 0.10112 J, which at 25 W per core, 2.4 GHz is
        # 0.10112 x 2.4e9 / 25 = 9.7075e6 cycles per 32 KB event.
        epe = model.epe_joules(9.7075e6, 0, 25, 1, F)
        self.assertAlmostEqual(epe, 0.101120, places=5)
        kwh = model.kwh_for_bytes(35 * model.ZETTABYTE, 32768, epe)
        self.assertAlmostEqual(kwh / 30e9, 1.0, places=3)
        # The same events for 2010's 1.8 ZB: 35/1.8 times less.
        self.assertAlmostEqual(
            model.kwh_for_bytes(1.8 * model.ZETTABYTE, 32768, epe) * 35 / 1.8, kwh, delta=1)

    def test_energy_saving_follows_cpe(self):
        # "tcp-opt can reduce up to 61.18% the energy": with no idle cycles
        # the saving is the CPE_p saving.
        orig = model.epe_joules(1e6, 0, 200, 4, F)
        opt = model.epe_joules(0.3882e6, 0, 200, 4, F)
        self.assertAlmostEqual(model.saving(opt, orig), 0.6118)


class Infrastructure(unittest.TestCase):
    def test_cores_for_ten_billion_events(self):
        # Figure 10: 1e10 events/s at 24 000 cycles per event, 2.4 GHz:
        # 1e10 x 24 000 / 2.4e9 = 100 000 cores.
        self.assertAlmostEqual(model.cores_for_rate(1e10, 24_000, F), 100_000)

    def test_servers_for_a_million_events(self):
        # Figure 11(b): 4-core servers, 1e6 events/s. At 20 000 cycles per
        # event: 1e6 x 2e4 / 2.4e9 = 8.33 cores, so 3 servers.
        self.assertEqual(model.servers_for_rate(1e6, 20_000, F), 3)
        # Exactly 8 cores is 2 servers, not 3.
        self.assertEqual(model.servers_for_rate(1e6, 19_200, F), 2)

    def test_aggregate_needs_119_percent_more_servers(self):
        # "The aggregate operator requires up to 119% more servers": 21 vs 46
        # servers (46/21 = 2.19) is CPE_p 2.19x, e.g. 200 000 vs 438 000.
        filt = model.servers_for_rate(1e6, 200_000, F)
        agg = model.servers_for_rate(1e6, 438_000, F)
        self.assertEqual(filt, 21)
        self.assertEqual(agg, 46)
        self.assertAlmostEqual(agg / filt - 1, 1.19, places=2)

    def test_saving(self):
        # "tcp-opt can save from 12% to 40% in server infrastructure cost".
        self.assertAlmostEqual(model.saving(60, 100), 0.40)
        self.assertAlmostEqual(model.saving(88, 100), 0.12)


class BadInput(unittest.TestCase):
    def test_errors_name_the_argument(self):
        for call, name in [
            (lambda: model.events_per_s(0, 4, F), "cpe_p"),
            (lambda: model.events_per_s(1, -1, F), "cores"),
            (lambda: model.events_per_s(1, 4, F, alpha=1.5), "alpha"),
            (lambda: model.bytes_per_s(float("nan"), 4, F), "cpb_p"),
            (lambda: model.epe_joules(1, -1, 200, 4, F), "cpe_i"),
            (lambda: model.kwh_for_bytes(1e21, 0, 0.1), "event_bytes"),
            (lambda: model.servers_for_rate(1e6, 1, F, cores_per_server=0), "cores_per_server"),
        ]:
            with self.assertRaises(ValueError) as cm:
                call()
            self.assertIn(name, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
