"""Other machines' runs: rows of another runs.csv added to this one's
(--other-machine), and the rows split by machine for the report.

An added row keeps every column it had there (host, cores, CPU, kernel,
commit, what it measured) but its run id, which becomes the next free one
here; its `imported_from` column names the file and the run id it had
("PATH:rN"). This machine's rows are those with an empty `imported_from`:
every section reads them alone, and only the sections that show other
machines read the others, each machine's rows on their own (write_report
splits them, in one place). A machine is its core count and CPU model, so
runs of two hosts of one kind pool their medians."""

import csv
import os
from pathlib import Path

from repro.run import CSV_FIELDS

MARK = "imported_from"
NEEDED = ("rid", "ok", "group", "host", "host_cores", "cpu_model")


def machine_key(row):
    return (str(row.get("host_cores") or ""), (row.get("cpu_model") or "").strip())


def is_imported(row):
    return bool(row.get(MARK))


def load_other(path):
    """An other machine's runs.csv as rows, or ValueError naming what is wrong
    and where. Its own imported rows (a third machine's) come along."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--other-machine {path}: no such file")
    with open(p, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"--other-machine {path}: not a reproduce.py runs.csv "
                             f"(no column {', '.join(missing)})")
        rows = list(reader)
    for n, r in enumerate(rows, 2):   # line 1 is the header
        if not (r["rid"] or "").startswith("r") or not r["rid"][1:].isdigit():
            raise ValueError(f"--other-machine {path}, line {n}: run id '{r['rid']}' is not rN")
        if not (r["host_cores"] or "").isdigit():
            raise ValueError(f"--other-machine {path}, line {n} ({r['rid']}): host_cores "
                             f"'{r['host_cores']}' is not a number of cores")
    if not rows:
        raise ValueError(f"--other-machine {path}: no runs in it")
    return rows


def add_other_machines(rows, others, here_keys):
    """Rows of other machines' CSVs (others: [(path, rows)]) appended to rows
    with the next free run ids and the mark; returns the added rows. A row
    already added (same host, start and run id there) is not added twice. here_keys:
    this machine's (cores, CPU); rows that claim it are refused (ValueError),
    as their medians would be read as another machine's."""
    def same_run(r, mark):   # its host, start and run id there; not the path, typed anyhow
        return (r.get("host"), r.get("started_utc"), mark.rsplit(":", 1)[-1])

    seen = {same_run(r, r[MARK]) for r in rows if is_imported(r)}
    nxt = 1 + max((int(r["rid"][1:]) for r in rows), default=0)
    added = []
    for path, theirs in others:
        for r in theirs:
            if machine_key(r) in here_keys:
                raise ValueError(
                    f"--other-machine {path}: {r['rid']} ran on {r['host']} "
                    f"({r['host_cores']} cores, {r['cpu_model'] or 'CPU not recorded'}), "
                    "the machine of this runs.csv; add runs of this machine with --append")
            mark = r.get(MARK) or f"{path}:{r['rid']}"
            if same_run(r, mark) in seen:
                continue
            seen.add(same_run(r, mark))
            row = dict(r)
            row.update(rid=f"r{nxt}", raw="")   # raw/ stayed on that machine
            row[MARK] = mark
            nxt += 1
            added.append(row)
    rows.extend(added)
    return added


def add_to_csv(csv_path, rows, others):
    """add_other_machines with this machine's rows (those without the mark)
    as this machine, then the CSV rewritten with every row; returns the
    added rows."""
    added = add_other_machines(rows, others, {machine_key(r) for r in rows if not is_imported(r)})
    write_csv(csv_path, rows)
    return added


def write_csv(path, rows):
    """All rows, every column they have (CSV_FIELDS first)."""
    fields = list(CSV_FIELDS)
    for r in rows:
        fields += [k for k in r if k is not None and k not in fields]
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, restval="", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


class Machine:
    """Another machine's rows, and the label its columns carry."""

    def __init__(self, key, rows):
        self.key, self.rows = key, rows
        self.cores, self.cpu = key
        self.label = f"{self.cores} cores"

    def describe(self):
        hosts = sorted({r["host"] for r in self.rows})
        commits = sorted({r.get("commit") or "?" for r in self.rows})
        kernels = sorted({r.get("kernel") or "?" for r in self.rows})
        ok = sum(1 for r in self.rows if r["ok"] == "true")
        files = sorted({r[MARK].rsplit(":", 1)[0] for r in self.rows})
        return (f"*{self.label}*: {len(self.rows)} runs ({ok} passed, {self.rows[0]['rid']} to "
                f"{self.rows[-1]['rid']}) on {', '.join(hosts)} ({self.cores} cores, "
                f"{self.cpu or 'CPU not recorded'}, Linux {', '.join(kernels)}) at commit "
                f"{', '.join(commits)}, added from {', '.join(files)}")


def split_machines(rows):
    """This machine's rows (no mark), and the other machines', each a Machine
    labelled by its cores (and its CPU where two share a core count)."""
    here = [r for r in rows if not is_imported(r)]
    groups = {}
    for r in rows:
        if is_imported(r):
            groups.setdefault(machine_key(r), []).append(r)
    others = [Machine(k, v) for k, v in sorted(groups.items(),
                                               key=lambda kv: (int(kv[0][0] or 0), kv[0][1]))]
    cores = [m.cores for m in others]
    for m in others:
        if cores.count(m.cores) > 1:
            m.label = f"{m.cores} cores, {m.cpu or 'CPU not recorded'}"
    return here, others
