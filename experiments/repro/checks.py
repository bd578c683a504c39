"""The report checked against the CSV it names: every figure has a plot and a
table, every sluice number is the median of the runs its source names."""

import csv
import re
import statistics
from pathlib import Path

from repro.tables import SRC_ARROW, fnum


SRC_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=([-+0-9.eE]+) " + re.escape(SRC_ARROW) +
                    r" median((?: r\d+)+)")


def check_report(path, csv_path):
    """Re-reads the report and the CSV it names and returns what does not hold:
    every figure has a plot file and a table with rows; every table row has a
    source; every source's value is the median of its column over its runs,
    and those runs passed; no sluice cell is empty."""
    problems = []
    text = Path(path).read_text()
    rows = {r["rid"]: r for r in csv.DictReader(open(csv_path))}
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    if not sections:
        problems.append("the report has no figures")
    for sec in sections:
        title = sec.splitlines()[0]
        if title.startswith("Closing note"):
            continue
        for img in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", sec):
            f = Path(path).parent / img
            if not f.is_file() or f.stat().st_size < 1000:
                problems.append(f"{title}: plot {img} missing or empty")
        all_lines = sec.splitlines()
        lines = [l for l in all_lines if l.startswith("|")]
        if len(lines) < 3:
            problems.append(f"{title}: no table rows")
        head = None
        for n, l in enumerate(all_lines):
            if not l.startswith("|"):
                continue
            cells = [c.strip() for c in l.strip().strip("|").split("|")]
            if set("".join(cells)) <= set("-"):
                continue
            nxt = all_lines[n + 1] if n + 1 < len(all_lines) else ""
            if nxt.startswith("|") and set(nxt.replace("|", "").strip()) <= set("-"):
                head = cells   # a table's header: the line above its |---|
                continue
            if len(cells) != len(head):
                problems.append(f"{title}: row has {len(cells)} cells, header {len(head)}: {l}")
                continue
            if head[-1] != "source":
                continue
            for h, c in zip(head, cells):
                if (h.startswith("sluice") or h == "sluice") and c in ("", "—"):
                    problems.append(f"{title}: empty sluice cell '{h}' in: {l[:160]}")
            found = SRC_RE.findall(cells[-1])
            if not found:
                problems.append(f"{title}: row without a traceable source: {l[:160]}")
            for col, val, rids in found:
                rids = rids.split()
                vals = []
                for rid in rids:
                    r = rows.get(rid)
                    if r is None:
                        problems.append(f"{title}: source names {rid}, not in the CSV")
                    elif r["ok"] != "true":
                        problems.append(f"{title}: source names {rid}, which failed")
                    elif fnum(r.get(col)) is None:
                        problems.append(f"{title}: {rid} has no {col}")
                    else:
                        vals.append(fnum(r[col]))
                if vals:
                    m = statistics.median(vals)
                    if abs(m - float(val)) > 1e-4 * max(abs(m), 1e-9):
                        problems.append(f"{title}: {col}={val} but the median of {rids} is {m}")
    return problems


