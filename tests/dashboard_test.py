#!/usr/bin/env python3
"""The Grafana dashboard (deploy/grafana/sluice.json) and the recording rules
(deploy/prometheus/sluice.rules.yml) name only series that exist.

   dashboard_test.py SOURCE_DIR

1. The metrics the exporter serves are read from runtime/exporter.cc (every
   "sluice_..." name it adds; a histogram also has _bucket, _sum, _count).
2. Each rule's expression may name those and the rules recorded before it.
3. The dashboard is JSON with a stable uid and a datasource variable
   DS_PROMETHEUS that every panel and query uses; each query names only
   exported metrics and recorded rules.
A name is any identifier left in an expression once strings, label matchers,
ranges, numbers, function calls and PromQL's keywords are taken out.
"""
import json
import re
import sys

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan",
            # aggregation operators, which may be followed by by/without
            "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
            "bottomk", "topk", "quantile"}


def names_in(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)      # strings
    e = re.sub(r"'(?:[^'\\]|\\.)*'", "''", e)
    e = re.sub(r"\{[^}]*\}", "", e)                      # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                     # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", e)
    out = []
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        rest = e[m.end():].lstrip()
        if rest.startswith("("):
            continue                                     # a function
        if word.lower() in KEYWORDS:
            continue
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue                                     # the exponent of a number: 1e9
        out.append(word)
    return out


def exported(src):
    text = open(f"{src}/runtime/exporter.cc").read()
    names = set()
    for m in re.finditer(r'\b(?:add|family)\(\s*"(sluice_[a-z_]+)"', text):
        names.add(m.group(1))
    for m in re.finditer(r'family\(\s*"(sluice_[a-z_]+)"[^;]*MetricType::Histogram', text, re.S):
        for suffix in ("_bucket", "_sum", "_count"):
            names.add(m.group(1) + suffix)
    return names


def rules(src):
    """[(record, expr)] in order, from the rules file (YAML read by hand: the
    file's form is `- record: NAME` then `expr: EXPR` or `expr: >` and lines)."""
    out = []
    lines = open(f"{src}/deploy/prometheus/sluice.rules.yml").read().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"\s*- record:\s*(\S+)", lines[i])
        if not m:
            i += 1
            continue
        rec = m.group(1)
        e = re.match(r"(\s*)expr:\s*(.*)", lines[i + 1])
        assert e, f"rule {rec}: no expr on the line after it"
        expr = e.group(2)
        i += 2
        if expr in (">", "|"):
            parts = []
            while i < len(lines) and (lines[i].startswith(e.group(1) + "  ") or not lines[i].strip()):
                parts.append(lines[i].strip())
                i += 1
            expr = " ".join(p for p in parts if p)
        out.append((rec, expr))
    return out


def main():
    src = sys.argv[1]
    errors = []
    metrics = exported(src)
    assert len(metrics) > 10, f"found only {sorted(metrics)} in runtime/exporter.cc"
    known = set(metrics)
    recorded = rules(src)
    assert recorded, "no rules found"
    for rec, expr in recorded:
        for n in names_in(expr):
            if n not in known:
                errors.append(f"rule {rec}: {n} is neither exported nor recorded before it")
        known.add(rec)

    d = json.load(open(f"{src}/deploy/grafana/sluice.json"))
    if d.get("uid") != "sluice-pipeline":
        errors.append(f"dashboard uid is {d.get('uid')!r}, not the stable 'sluice-pipeline'")
    variables = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
    ds = variables.get("DS_PROMETHEUS")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        errors.append("no datasource variable DS_PROMETHEUS of type prometheus")
    # A range that fits a run (a few minutes): the dashboard opens on at most
    # the last 15 minutes, ending now, and refreshes while the run goes on;
    # an hour's range made a run's first minutes a sliver at the right edge.
    tr = d.get("time", {})
    m = re.fullmatch(r"now-(\d+)([smh])", tr.get("from", ""))
    span_s = int(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)] if m else None
    if span_s is None or span_s > 900 or tr.get("to") != "now":
        errors.append(f"dashboard opens on {tr}: not a range of at most 15 min ending now")
    r = re.fullmatch(r"(\d+)s", str(d.get("refresh", "")))
    if not r or int(r.group(1)) > 30:
        errors.append(f"dashboard refresh is {d.get('refresh')!r}: not every 30 s or less")
    panels = d.get("panels", [])
    if len(panels) < 8:
        errors.append(f"only {len(panels)} panels")
    want = {"sluice:cpe_p:rate5s", "sluice:cpe_u:rate5s", "sluice:cpe_s:rate5s", "sluice:cpe_i:rate5s",
            "sluice:gbps:rate5s", "sluice:tuples_per_second:rate5s", "sluice:epe_joules:rate5s",
            "sluice:ring_fill:ratio", "sluice_link_credits", "sluice:stage_blocked:ratio5s"}
    seen = set()
    for p in panels:
        where = f"panel {p.get('id')} ({p.get('title')})"
        if p.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
            errors.append(f"{where}: datasource is not ${{DS_PROMETHEUS}}")
        targets = p.get("targets", [])
        if not targets:
            errors.append(f"{where}: no query")
        for t in targets:
            if t.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
                errors.append(f"{where} {t.get('refId')}: datasource is not ${{DS_PROMETHEUS}}")
            names = names_in(t["expr"])
            if not names:
                errors.append(f"{where}: {t['expr']!r} names no series")
            for n in names:
                seen.add(n)
                if n not in known:
                    errors.append(f"{where}: {n} is neither exported nor recorded")
    for w in sorted(want - seen):
        errors.append(f"no panel shows {w}")
    for v in variables.values():
        q = v.get("query")
        if isinstance(q, dict):
            # label_values(METRIC, LABEL): the metric is its first argument
            query = re.sub(r"label_values\(([^,)]*),[^)]*\)", r"\1", q.get("query", ""))
            for n in names_in(query):
                if n not in known:
                    errors.append(f"variable {v['name']}: {n} is neither exported nor recorded")
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    print(f"ok: {len(panels)} panels, {len(metrics)} exported metrics, {len(recorded)} rules")


if __name__ == "__main__":
    main()
