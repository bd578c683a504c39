#!/usr/bin/env python3
"""reproduce.py's check of a report against its CSV: it passes a report whose
every source holds, and names what is wrong in one that does not."""

import csv
import os
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reproduce  # noqa: E402

REPORT = """# report

## Figure 1: something

![Figure 1](plots/f1.png)

| claim | study | sluice | sluice/study | source |
|---|---|---|---|---|
| a claim | 2 | 3 | 1.5 | tuples_per_s=150 <- median r1 r2 |

| preset | sluice tuples/s | source |
|---|---|---|
| tcp-opt | 100 | tuples_per_s=100 <- median r1 |

| coefficient | value |
|---|---|
| x | 1 |

## Closing note: which claims reproduce here

- nothing to check here
"""


class CheckReport(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        (self.dir / "plots").mkdir()
        (self.dir / "plots/f1.png").write_bytes(b"\x89PNG" + b"x" * 2000)
        with open(self.dir / "runs.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["rid", "ok", "tuples_per_s"])
            w.writeheader()
            w.writerow({"rid": "r1", "ok": "true", "tuples_per_s": "100"})
            w.writerow({"rid": "r2", "ok": "true", "tuples_per_s": "200"})
            w.writerow({"rid": "r3", "ok": "false", "tuples_per_s": "7"})

    def check(self, text):
        (self.dir / "REPORT.md").write_text(text)
        return reproduce.check_report(self.dir / "REPORT.md", self.dir / "runs.csv")

    def test_a_report_whose_sources_hold_passes(self):
        self.assertEqual(self.check(REPORT), [])

    def test_a_value_that_is_not_the_median(self):
        p = self.check(REPORT.replace("tuples_per_s=150", "tuples_per_s=151"))
        self.assertEqual(len(p), 1)
        self.assertIn("median", p[0])

    def test_unknown_and_failed_runs(self):
        p = self.check(REPORT.replace("median r1 r2", "median r1 r9"))
        self.assertTrue(any("r9, not in the CSV" in x for x in p), p)
        p = self.check(REPORT.replace("tuples_per_s=100 <- median r1", "tuples_per_s=7 <- median r3"))
        self.assertTrue(any("r3, which failed" in x for x in p), p)

    def test_empty_series_and_missing_pieces(self):
        p = self.check(REPORT.replace("| tcp-opt | 100 |", "| tcp-opt | — |"))
        self.assertTrue(any("empty sluice cell" in x for x in p), p)
        p = self.check(REPORT.replace(" tuples_per_s=100 <- median r1 |", " by hand |"))
        self.assertTrue(any("without a traceable source" in x for x in p), p)
        (self.dir / "plots/f1.png").unlink()
        p = self.check(REPORT)
        self.assertTrue(any("plot plots/f1.png missing" in x for x in p), p)

    def test_a_figure_without_a_table(self):
        p = self.check("# r\n\n## Figure 2: nothing\n\ntext only\n")
        self.assertTrue(any("no table rows" in x for x in p), p)


class Classify(unittest.TestCase):
    def test_effects_and_absolutes(self):
        # tcp-opt/original: study 1.5 (effect 0.5 over the null 1).
        self.assertEqual(reproduce.classify("tcp_vs_orig_small", 1.45), "reproduces")
        self.assertEqual(reproduce.classify("tcp_vs_orig_small", 3.0), "reproduces, stronger")
        self.assertEqual(reproduce.classify("tcp_vs_orig_small", 1.2), "weaker")
        self.assertEqual(reproduce.classify("tcp_vs_orig_small", 0.9), "does not reproduce")
        # kWh: lower is better; 30 in the study.
        self.assertEqual(reproduce.classify("kwh_2020_orig_small", 25), "reproduces")
        self.assertEqual(reproduce.classify("kwh_2020_orig_small", 1), "beats")
        self.assertEqual(reproduce.classify("kwh_2020_orig_small", 100), "does not reproduce")
        self.assertEqual(reproduce.classify("kwh_2020_orig_small", None), "no data")


class PresetsAgainstPlainSockets(unittest.TestCase):
    """The presets against plain sockets: its ratios come from the runs,
    and the check holds the section to the CSV like any figure."""

    def test_the_fraction_is_over_the_relays_median_and_traces(self):
        from types import SimpleNamespace
        from repro.sections import sec_sockets
        from repro.tables import Report
        out = Path(tempfile.mkdtemp())
        fields = ["rid", "ok", "group", "setup", "preset", "tuple_bytes", "event_bytes", "instances",
                  "tuples_per_s", "gbps", "node_cpe_p"]
        rows = [
            # the relays at the start and the end: median 10 Gb/s
            dict(rid="r1", group="baseline", setup="start", gbps="8"),
            dict(rid="r6", group="baseline", setup="end", gbps="12"),
            dict(rid="r2", group="throughput", preset="original", tuple_bytes="128",
                 event_bytes="32768", tuples_per_s="1000", gbps="2", node_cpe_p="500"),
            dict(rid="r3", group="throughput", preset="tcp-opt", tuple_bytes="128",
                 event_bytes="32768", tuples_per_s="4000", gbps="7.5", node_cpe_p="100"),
            dict(rid="r4", group="throughput", preset="original", tuple_bytes="128",
                 event_bytes="0", tuples_per_s="100", gbps="0.1", node_cpe_p="50"),
            dict(rid="r5", group="throughput", preset="tcp-opt", tuple_bytes="128",
                 event_bytes="0", tuples_per_s="300", gbps="0.3", node_cpe_p="10"),
        ]
        for r in rows:
            r.setdefault("ok", "true")
            r.setdefault("instances", "1")
            r.setdefault("setup", "chain")
        with open(out / "runs.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, restval="")
            w.writeheader()
            w.writerows(rows)
        rep = Report(list(csv.DictReader(open(out / "runs.csv"))), out, out / "REPORT.md",
                     SimpleNamespace(quick=True))
        sec_sockets(rep)
        self.assertEqual(rep.problems, [])
        (out / "REPORT.md").write_text("# r\n\n" + rep.sections[0] + "\n")
        text = (out / "REPORT.md").read_text()
        row32 = next(l for l in text.splitlines() if l.startswith("| 128 B | 32 KiB"))
        cells = [c.strip() for c in row32.strip("|").split("|")]
        self.assertEqual(cells[4], "4.00")    # tcp-opt / original
        self.assertEqual(cells[6], "0.75")    # 7.5 Gb/s over the relays' median, 10
        self.assertIn("gbps=10 <- median r1 r6", cells[-1])
        row1 = next(l for l in text.splitlines() if l.startswith("| 128 B | 1 tuple"))
        self.assertEqual([c.strip() for c in row1.strip("|").split("|")][6], "—")
        self.assertEqual(reproduce.check_report(out / "REPORT.md", out / "runs.csv"), [])


class DeviceStep(unittest.TestCase):
    def test_the_device_step_plans_what_the_two_sections_read(self):
        """--only baseline,sockets,demo (experiments/device_check.sh): the relays,
        original and tcp-opt one instance at every tuple size in one-tuple and
        32 KiB events, the demo; 53 runs at 3 repeats, as its header says."""
        from types import SimpleNamespace
        from repro.plan import plan
        args = SimpleNamespace(quick=False, repeat=3, duration=2.0,
                               only={"baseline", "sockets", "demo"})
        specs = plan(args, tempfile.mkdtemp())
        self.assertEqual(len(specs), 53)
        thr = [s for s in specs if s.group == "throughput"]
        cells = {(s.params["preset"], s.params["tuple_bytes"], s.params["event_bytes"],
                  s.params["instances"]) for s in thr}
        self.assertEqual(cells, {(p, t, e, 1) for p in ("original", "tcp-opt")
                                 for t in (12, 128, 1024, 4096) for e in (0, 32768)})
        self.assertEqual(len(thr), 48)
        self.assertEqual([s.setup for s in specs if s.group == "baseline"], ["start", "end"])
        self.assertEqual(sum(1 for s in specs if s.group == "demo"), 3)


if __name__ == "__main__":
    unittest.main()
