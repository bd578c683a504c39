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


if __name__ == "__main__":
    unittest.main()
