#!/usr/bin/env python3
"""Regenerates experiments/REPORT.md, sluice's one results page, from sluice runs.

  python3 experiments/reproduce.py              # the full set: REPORT.md (about 16 min on 2 cores: 428 runs)
  python3 experiments/reproduce.py --quick      # a few minutes: every section, fewer cells; CI
  python3 experiments/reproduce.py --report-only --out DIR   # redraw from DIR/runs.csv
  python3 experiments/reproduce.py --check-only --out DIR    # only re-check DIR's report
  python3 experiments/reproduce.py --runs-only --only baseline,sockets,demo --out DIR
      # only DIR/runs.csv, no report (no matplotlib needed): another machine's runs
  python3 experiments/reproduce.py --report-only --other-machine THERE.csv
      # this machine's report, with columns for that machine's runs

1. Plans the runs each section needs: the demo pipeline as the README runs
   it, plain-socket relays at the start and the end, and the figures of the
   Borealis study (Akram, Marazakis, Bilas, DEBS 2012): presets x tuple sizes
   x event sizes x instances, spin against block waits, one node per
   operator, a pass-through chain, the cost model's calibration and test
   set-ups (after Pohl, Goetze and Sattler's cost model), and bursts (after
   Rachou's measurements of Siddhi).
2. Runs each as `sluice-deploy run FILE --json --set ...` (the baseline as
   four sluice-plainrelay processes), one at a time, each under
   flock(/tmp/cpu.lock) so no other pipeline or benchmark on this machine
   runs beside it, and prints one progress line per run.
3. Keeps every run as a row of OUT/runs.csv: the commit, the machine (host,
   cores, CPU, kernel, clock), the foreign load seen during the run (cores
   busy with work that was not this run's), what it measured, and every
   process's counters (for the cost model).
4. Draws one plot per figure (matplotlib, Agg) into OUT/plots and writes the
   report (experiments/REPORT.md; with --quick, OUT/REPORT.md): per section
   its plot and tables; for the study, what it saw, what sluice shows here,
   the ratio. Every sluice number in a table names its source: `COL=VALUE <-
   median rA rB`, the CSV column and the run ids it is the median of.
5. Checks the report against the CSV (repro/checks.py): every plot named
   exists, every section has a table, no series is empty, every source's
   value is the median of its runs. Exits 1 if a run failed or a check did
   not hold.

Other machines (repro/machines.py): --other-machine CSV (more than once for
more machines) adds the rows of a runs.csv made elsewhere (`--runs-only`;
experiments/device_check.sh's reproduce step makes one from a bundle) to
OUT/runs.csv, with the next free run ids and the column `imported_from` set
to the file and the run id they had there; each keeps its machine columns
(host, cores, CPU, kernel, commit). This machine's rows are the rows without
that mark: every section and figure reads them alone, so no median mixes
machines. The demo and "The presets against plain sockets" add, per other
machine (labelled by its cores, with its host and CPU model named beside),
columns of its own medians, each with its sources like every other number;
without one, the second says how to get them. Adding the same file again adds nothing; rows that claim this
machine's cores and CPU are refused.

The parts are in repro/ (repro/__init__.py lists them); the study's
equations are in model.py, the numbers it reports in repro/tables.py
(STUDY), each with where the study says it.
"""

import argparse
import csv
import datetime
import os
import sys
import tempfile
from pathlib import Path

from repro.checks import check_report
from repro.common import HERE, log
from repro.machines import add_other_machines, add_to_csv, is_imported, load_other
from repro.plan import SELECTORS, plan
from repro.report import classify, write_report  # noqa: F401 (classify: reproduce_test.py)
from repro.run import cpu_model, find_deploy, run_all
from repro.tables import plt_module


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer cells and 1 s runs: every figure in a few minutes (CI)")
    ap.add_argument("--build", default="build", help="the build folder (default: build)")
    ap.add_argument("--out", help="where runs.csv, raw/ and plots/ go (default: "
                    "experiments/report, or runs/reproduce-quick-<time> with --quick)")
    ap.add_argument("--report", help="the report's path (default: experiments/REPORT.md, or "
                    "OUT/REPORT.md with --quick)")
    ap.add_argument("--duration", type=float, help="seconds per run (default 1, full: 2)")
    ap.add_argument("--repeat", type=int, help="runs per cell (default 1, full: 2)")
    ap.add_argument("--calibration", help="where the cost model's coefficients go (default: "
                    "experiments/calibration.json, or OUT/calibration.json with --quick)")
    ap.add_argument("--only", type=lambda v: set(v.split(",")),
                    help="run only these groups (comma-separated: baseline, demo, throughput, spin, "
                    "operators, passthrough, bursts, model; sockets: the throughput runs of "
                    "'The presets against plain sockets' alone)")
    ap.add_argument("--append", action="store_true",
                    help="keep OUT/runs.csv's rows and add the new runs after them")
    ap.add_argument("--report-only", action="store_true",
                    help="no runs: redraw the report from OUT/runs.csv")
    ap.add_argument("--check-only", action="store_true",
                    help="no runs, no drawing: check the report against OUT/runs.csv")
    ap.add_argument("--runs-only", action="store_true",
                    help="only the runs: OUT/runs.csv and OUT/raw/, no report, no check "
                    "(needs no matplotlib; another machine's runs for --other-machine)")
    ap.add_argument("--other-machine", action="append", metavar="CSV", default=[],
                    help="add another machine's runs.csv (reproduce.py --runs-only there) to "
                    "OUT/runs.csv, with new run ids; the sections that show other machines get "
                    "columns for it. May be given more than once")
    args = ap.parse_args()
    if args.only and not args.only <= set(SELECTORS):
        ap.error(f"--only: no group {', '.join(sorted(args.only - set(SELECTORS)))} "
                 f"(there are {', '.join(SELECTORS)})")
    if args.runs_only and (args.report_only or args.check_only or args.other_machine):
        ap.error("--runs-only makes no report: not with --report-only, --check-only or "
                 "--other-machine")
    if args.check_only and args.other_machine:
        ap.error("--other-machine adds rows to draw from: use it with --report-only, not "
                 "--check-only")
    others = []
    try:
        for p in args.other_machine:
            others.append((p, load_other(p)))
        if others and not args.report_only:
            # Refused now rather than after the runs: rows that claim this machine.
            add_other_machines([], others, {(str(os.cpu_count()), cpu_model())})
    except ValueError as e:
        sys.exit(f"reproduce.py: {e}")
    if args.duration is None:
        args.duration = 1.0 if args.quick else 2.0
    if args.repeat is None:
        args.repeat = 1 if args.quick else 2
    if args.duration <= 0 or args.repeat < 1:
        ap.error("--duration must be > 0 and --repeat >= 1")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    out = Path(args.out) if args.out else (
        HERE.parent / "runs" / f"reproduce-quick-{stamp}" if args.quick else HERE / "report")
    report = Path(args.report) if args.report else (
        out / "REPORT.md" if args.quick else HERE / "REPORT.md")
    if args.calibration is None and not args.quick:
        args.calibration = str(HERE / "calibration.json")
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "runs.csv"

    if not (args.check_only or args.runs_only):
        try:
            plt_module()
        except ImportError as e:
            # Debian's python3 has matplotlib (scripts/setup.sh installs it);
            # a python3 earlier on PATH may not: run under Debian's instead.
            debian = "/usr/bin/python3"
            if (os.access(debian, os.X_OK) and not os.environ.get("SLUICE_REPRODUCE_REEXEC")
                    and os.path.realpath(sys.executable) != os.path.realpath(debian)):
                os.environ["SLUICE_REPRODUCE_REEXEC"] = "1"
                os.execv(debian, [debian, os.path.abspath(__file__)] + sys.argv[1:])
            sys.exit(f"reproduce.py: matplotlib is missing ({e}): install Debian's "
                     "python3-matplotlib (scripts/setup.sh does) and run with /usr/bin/python3")

    failed = 0
    if args.check_only or args.report_only:
        if not csv_path.is_file():
            sys.exit(f"reproduce.py: {csv_path} does not exist; run without --report-only first")
        rows = list(csv.DictReader(open(csv_path)))
    else:
        deploy = find_deploy(args.build)
        if deploy is None:
            sys.exit(f"reproduce.py: no sluice-deploy under {args.build}/deploy "
                     "(build the targets sluice-deploy sluice-node sluice-loadgen sluice-sink)")
        with tempfile.TemporaryDirectory(prefix="sluice-repro-") as tmp:
            earlier = []
            if args.append and csv_path.is_file():
                earlier = list(csv.DictReader(open(csv_path)))
            first = 1 + max((int(r["rid"][1:]) for r in earlier), default=0)
            specs = plan(args, tmp)
            if not specs:
                sys.exit(f"reproduce.py: --only {','.join(args.only)} selects no runs")
            for i, s in enumerate(specs, first):
                s.rid = f"r{i}"
            log(f"reproduce.py: {len(specs)} runs of {args.duration:g} s, results in {out}"
                + (f" (after {len(earlier)} earlier runs)" if earlier else ""))
            rows = run_all(specs, deploy, args, out, earlier)
        failed = sum(1 for r in rows if r["ok"] != "true" and not is_imported(r))
    if args.runs_only:
        log(f"wrote {csv_path} ({len(rows)} runs, {failed} failed; --runs-only: no report)")
        return 1 if failed else 0
    if others:
        try:
            added = add_to_csv(csv_path, rows, others)
        except ValueError as e:
            sys.exit(f"reproduce.py: {e}")
        log(f"added {len(added)} runs of other machines to {csv_path}"
            + (f" ({added[0]['rid']} to {added[-1]['rid']})" if added else
               " (all were there already)"))
    if not args.check_only and not any(not is_imported(r) for r in rows):
        sys.exit(f"reproduce.py: {csv_path} has no runs of this machine (every row is "
                 "another machine's)")
    problems = []
    if not args.check_only:
        problems += write_report(rows, out, report, args)
        log(f"wrote {report} and {csv_path}")
    problems += check_report(report, csv_path)
    for p in problems:
        log(f"CHECK FAILED: {p}")
    if failed:
        log(f"{failed} of {len(rows)} runs failed (see the error column of {csv_path})")
    if problems or failed:
        return 1
    log(f"check passed: every figure has a plot and a table, every sluice number traces "
        f"to the median of its runs in {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

