#!/usr/bin/env python3
"""reproduce.py's check of a report against its CSV: it passes a report whose
every source holds, and names what is wrong in one that does not."""

import csv
import os
import shutil
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


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def cells_of(text, start):
    """The cells of the first table row of text that starts with start."""
    line = next(l for l in text.splitlines() if l.startswith(start))
    return [c.strip() for c in line.strip().strip("|").split("|")]


def section(text, title):
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


class OtherMachines(unittest.TestCase):
    """--other-machine: another machine's rows join runs.csv with new run ids,
    its columns appear in the sections that show it, and every median of
    this machine stays this machine's alone."""

    def machine_rows(self, host, cores, cpu, scale):
        """The runs the two sections read: the relays, original and tcp-opt
        at 128 B tuples in one-tuple and 32 KiB events, two demo runs."""
        base = dict(ok="true", host=host, host_cores=str(cores), cpu_model=cpu, commit="c0ffee",
                    kernel="6.1", clock_ghz="2.5", foreign_cores="0", instances="1",
                    setup="chain", duration_s="2", started_utc="2026-01-01T00:00:00Z")
        rows = [
            dict(group="baseline", setup="start", gbps=8 * scale),
            dict(group="baseline", setup="end", gbps=12 * scale),
            dict(group="throughput", preset="original", tuple_bytes=128, event_bytes=32768,
                 tuples_per_s=1000 * scale, gbps=2 * scale, node_cpe_p=500),
            dict(group="throughput", preset="tcp-opt", tuple_bytes=128, event_bytes=32768,
                 tuples_per_s=4000 * scale, gbps=7.5 * scale, node_cpe_p=100),
            dict(group="throughput", preset="original", tuple_bytes=128, event_bytes=0,
                 tuples_per_s=100 * scale, gbps=0.1 * scale, node_cpe_p=50),
            dict(group="throughput", preset="tcp-opt", tuple_bytes=128, event_bytes=0,
                 tuples_per_s=300 * scale, gbps=0.3 * scale, node_cpe_p=10),
            dict(group="demo", setup="pipeline.yaml", tuples_per_s=2000 * scale, gbps=3 * scale,
                 node_cpe_p=900, latency_p50_us=40, latency_p99_us=90),
            dict(group="demo", setup="pipeline.yaml", tuples_per_s=2200 * scale, gbps=3.3 * scale,
                 node_cpe_p=950, latency_p50_us=44, latency_p99_us=99),
        ]
        return [dict(base, rid=f"r{i}", **{k: str(v) for k, v in r.items()})
                for i, r in enumerate(rows, 1)]

    def write(self, path, rows):
        from repro.run import CSV_FIELDS
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS, restval="")
            w.writeheader()
            w.writerows(rows)

    def report(self, out, other=None):
        """What reproduce.py --report-only [--other-machine OTHER] does, with
        only the two sections that show other machines."""
        from types import SimpleNamespace
        from repro.machines import add_to_csv, load_other
        from repro.sections import SECTIONS
        csv_path = out / "runs.csv"
        rows = read_rows(csv_path)
        added = add_to_csv(csv_path, rows, [(str(other), load_other(other))]) if other else []
        args = SimpleNamespace(quick=False, duration=2.0, repeat=2, calibration=None,
                               build="build")
        problems = reproduce.write_report(rows, out, out / "REPORT.md", args, parts=SECTIONS)
        self.assertEqual(problems, [])
        self.assertEqual(reproduce.check_report(out / "REPORT.md", csv_path), [])
        return (out / "REPORT.md").read_text(), added

    def setUp(self):
        self.here = Path(tempfile.mkdtemp())
        self.write(self.here / "runs.csv", self.machine_rows("small", 2, "AMD EPYC", 1))
        # The other machine: its own run ids (the same as here's), other figures.
        self.other = Path(tempfile.mkdtemp()) / "runs.csv"
        self.write(self.other, self.machine_rows("big", 16, "Intel Xeon Gold", 10))

    def test_columns_of_the_other_machine_and_this_machines_figures_unchanged(self):
        alone, _ = self.report(self.here)
        both, added = self.report(self.here, self.other)

        # The rows came in with the next run ids and their mark.
        rows = {r["rid"]: r for r in read_rows(self.here / "runs.csv")}
        self.assertEqual([r["rid"] for r in added], [f"r{i}" for i in range(9, 17)])
        self.assertEqual(rows["r12"]["host"], "big")
        self.assertEqual(rows["r12"]["imported_from"], f"{self.other}:r4")
        self.assertEqual(rows["r4"]["imported_from"], "")

        # Without an import: no other machine's columns, and how to get them.
        sock = section(alone, "The presets against plain sockets")
        self.assertNotIn("16 cores", alone)
        self.assertIn("--other-machine", sock)
        self.assertEqual(cells_of(sock, "| tuple |")[-1], "source")

        # With it: its columns, from its runs (r12: tcp-opt 40000 tuples/s,
        # 75 Gb/s; its relays r9 and r10, median 100 Gb/s).
        sock = section(both, "The presets against plain sockets")
        head = cells_of(sock, "| tuple |")
        for col in ("original tuples/s (16 cores)", "tcp-opt tuples/s (16 cores)",
                    "of plain sockets (16 cores)"):
            self.assertIn(col, head)
        row = dict(zip(head, cells_of(sock, "| 128 B | 32 KiB")))
        self.assertEqual(row["tcp-opt tuples/s (16 cores)"], "40 k")
        self.assertEqual(row["original tuples/s (16 cores)"], "10 k")
        self.assertEqual(row["of plain sockets (16 cores)"], "0.75")
        self.assertIn("16 cores: tuples_per_s=10000 <- median r11; tuples_per_s=40000 <- median "
                      "r12; gbps=75 <- median r12; gbps=100 <- median r9 r10", row["source"])
        self.assertIn("Intel Xeon Gold", sock)
        relays = dict(zip(cells_of(sock, "| plain sockets |"), cells_of(sock, "| Gb/s at the end")))
        self.assertEqual(relays["16 cores"], "120")
        demo = section(both, "The demo pipeline")
        row = dict(zip(cells_of(demo, "| figure |"), cells_of(demo, "| tuples/s at the sink")))
        self.assertEqual(row["16 cores"], "21 k")
        self.assertIn("tuples_per_s=21000 <- median r15 r16", row["source"])

        # This machine's cells and sources are those of the report without
        # the import: no median mixes the machines' runs.
        for title, start, n in (("The presets against plain sockets", "| 128 B | 32 KiB", 9),
                                ("The presets against plain sockets", "| 128 B | 1 tuple", 9),
                                ("The presets against plain sockets", "| Gb/s at the start", 2),
                                ("The demo pipeline", "| latency p99", 2)):
            a, b = cells_of(section(alone, title), start), cells_of(section(both, title), start)
            self.assertEqual(a[:n], b[:n], start)
            self.assertTrue(b[-1].startswith(a[-1] + "; 16 cores: "), (a[-1], b[-1]))
        self.assertIn("gbps=10 <- median r1 r2", sock)
        # The header counts this machine's runs, and says what else the CSV holds.
        self.assertIn("8 runs (8 passed)", both)
        self.assertIn("The CSV also holds 8 runs of other machines (16 cores", both)

        # Added once: the same runs again, from a copy elsewhere, add nothing.
        copy = Path(tempfile.mkdtemp()) / "copy.csv"
        shutil.copyfile(self.other, copy)
        _, again = self.report(self.here, copy)
        self.assertEqual(again, [])
        self.assertEqual(len(read_rows(self.here / "runs.csv")), 16)

    def test_two_machines_of_one_core_count_each_get_their_columns(self):
        from repro.machines import add_to_csv, load_other
        third = Path(tempfile.mkdtemp()) / "runs.csv"
        self.write(third, self.machine_rows("huge", 16, "AMD EPYC 9654", 100))
        rows = read_rows(self.here / "runs.csv")
        add_to_csv(self.here / "runs.csv", rows,
                   [(str(self.other), load_other(self.other)), (str(third), load_other(third))])
        text, _ = self.report(self.here)
        sock = section(text, "The presets against plain sockets")
        row = dict(zip(cells_of(sock, "| tuple |"), cells_of(sock, "| 128 B | 32 KiB")))
        self.assertEqual(row["tcp-opt tuples/s (16 cores, Intel Xeon Gold)"], "40 k")
        self.assertEqual(row["tcp-opt tuples/s (16 cores, AMD EPYC 9654)"], "400 k")
        self.assertEqual(row["sluice tcp-opt tuples/s"], "4 k")

    def test_rows_of_this_machine_are_refused(self):
        from repro.machines import add_to_csv, load_other
        rows = read_rows(self.here / "runs.csv")
        with self.assertRaisesRegex(ValueError, "r1 ran on small .2 cores, AMD EPYC.*--append"):
            add_to_csv(self.here / "runs.csv", rows, [("x.csv", load_other(self.here / "runs.csv"))])
        bad = self.here / "bad.csv"
        bad.write_text("rid,ok,group,host,host_cores,cpu_model\nr1,true,demo,h,many,x\n")
        with self.assertRaisesRegex(ValueError, "line 2 .r1.: host_cores 'many'"):
            load_other(bad)

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
