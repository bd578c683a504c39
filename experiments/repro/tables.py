"""Selecting what the figures show: medians of a CSV column that know their
runs (Val), the study's claims and the rows comparing sluice with them, and
the Report the figures are written into."""

import os
import statistics

WATTS_PER_CORE = 25.0   # section 5.2.2: "a per-core power consumption of 25 Watts"
ZB_YEARS = [(2010, 1.8), (2015, 8.0), (2020, 35.0)]
SRC_ARROW = "<-"

STUDY = {
    "tcp_vs_orig_small": (1.5, "5.1: tcp-opt up to 50% over original at 128 B tuples"),
    "tcp_vs_orig_large": (3.0, "5.1: up to 200% at 4096 B tuples"),
    "ul_vs_tcp_small": (1.30, "5.1: mx-opt up to 30% over tcp-opt for small tuples"),
    "ul_vs_tcp_large": (1.34, "5.1: up to 34% for large tuples"),
    "max_gbps_opt": (8.0, "5.2.1: optimized stacks reach 8 Gb/s on Setup-B"),
    "max_gbps_orig": (4.0, "5.2.1: original about 4 Gb/s on Setup-B"),
    "block_vs_spin_8": (1.44, "5.1, Fig 6: 44% more with spin loops removed, 8 instances"),
    "cpe_u_tcp_vs_orig": (0.63, "5.2.1: CPE_u reduced by up to 37%"),
    "cpe_s_ul_vs_tcp": (0.16, "5.2.1: mx-opt reduces CPE_s by up to 84%"),
    "kwh_2020_orig_small": (30.0, "5.2.2: original, small tuples, 2020: about 30 billion kWh"),
    "energy_tcp_saving_large": (0.6118, "5.2.2: tcp-opt saves up to 61.18% for large events"),
    "energy_ul_saving_large": (0.03, "5.2.2: mx-opt 3% below tcp-opt for large events"),
    "energy_ul_saving_small": (0.20, "5.2.2, Fig 9: mx-opt 20% below tcp-opt for one-tuple events"),
    "energy_tcp_saving_small": (0.0, "5.2.2, Fig 9: tcp-opt does not improve on original for small events"),
    "cores_tcp_saving_min": (0.12, "5.2.3: tcp-opt saves from 12% ..."),
    "cores_tcp_saving_max": (0.40, "5.2.3: ... to 40% of servers"),
    "cores_small_vs_large": (10.0, "5.2.3: small tuples need an order of magnitude more servers"),
    "union_vs_filter": (1.0, "5.2.4: filter and union have the same CPE_p"),
    "aggregate_vs_filter_servers": (2.19, "5.2.4: aggregate needs up to 119% more servers than filter"),
    "tbps_1024_orig": (1.0, "5.3: up to 1 Tb/s per server with 1024 cores, large tuples"),
    "tbps_1024_opt": (2.0, "5.3: optimized stacks twice that, 2 Tb/s"),
    "gbps_per_core_opt": (2.0, "1, 5.3: the optimized stack needs up to 2 Gb/s per core"),
    "filter_overhead": (0.30, "5.4: the filter costs up to 30% against a pass-through operator"),
    # Rachou's measurements of Siddhi: 50 bursts of 1000 events, Table 4.1 and 4.2.
    "burst_1000_far": (32.31, "Rachou, Table 4.1: 1000 events every 1000 ms, mean burst ms"),
    "burst_1000_100": (62.27, "Rachou, Table 4.1: 1000 events every 100 ms, mean burst ms"),
    "burst_constant": (29.73, "Rachou, Table 4.1: a constant stream, ms per 1000 events"),
    "burst_head_tail": (5.77, "Rachou, Table 4.2: first 100 events over last 100, 1000 ms apart"),
}


def fnum(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def select(rows, **kw):
    """The rows that passed and match every keyword (compared as text)."""
    out = []
    for r in rows:
        if r["ok"] != "true":
            continue
        if all(str(r.get(k, "")) == str(v) for k, v in kw.items()):
            out.append(r)
    return out


class Val:
    """A median of one CSV column over some runs, which knows its source."""

    def __init__(self, rows, col):
        vals = [fnum(r[col]) for r in rows if fnum(r[col]) is not None]
        self.col, self.rids = col, [r["rid"] for r in rows if fnum(r[col]) is not None]
        self.v = statistics.median(vals) if vals else None

    def __bool__(self):
        return self.v is not None

    def src(self):
        if self.v is None:
            return f"{self.col}: no runs"
        return f"{self.col}={self.v:.6g} {SRC_ARROW} median {' '.join(self.rids)}"


def srcs(*vals):
    return "; ".join(v.src() for v in vals)


def fmt(v, spec=".3g"):
    return "—" if v is None else format(v, spec)


def si(v):
    if v is None:
        return "—"
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g} {suffix}"
    return f"{v:.3g}"


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def event_label(e):
    e = int(e)
    return "1 tuple" if e == 0 else f"{e // 1024} KiB" if e % 1024 == 0 else f"{e} B"


CLAIMS_SEEN = []  # (key, sluice value, figure) in report order, for the closing note


def claim_row(key, sluice, sources, spec=".3g"):
    study, where = STUDY[key]
    CLAIMS_SEEN.append((key, sluice))
    r = ratio(sluice, study) if study else None
    return [where, fmt(study, spec), fmt(sluice, spec), fmt(r, ".2f") if r is not None else "n/a",
            sources]


CLAIM_HEAD = ["claim (study section)", "study", "sluice", "sluice/study", "source"]


def table(head, lines):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for l in lines:
        out.append("| " + " | ".join(str(c) for c in l) + " |")
    return "\n".join(out) + "\n"



class Report:
    """What the sections write into. rows: this machine's runs, which every
    section reads; others: other machines' (repro/machines.py's Machine),
    which only the sections that show them read."""

    def __init__(self, rows, out, report_path, args, others=()):
        self.rows, self.out, self.path, self.args = rows, out, report_path, args
        self.others = list(others)
        self.plots = out / "plots"
        self.plots.mkdir(parents=True, exist_ok=True)
        self.sections = []
        self.problems = []
        self.summary = {}

    def figure(self, title, plot, text, tables):
        rel = os.path.relpath(self.plots / plot, self.path.parent) if plot else None
        body = [f"## {title}\n"]
        if rel:
            body.append(f"![{title}]({rel})\n")
        body.append(text.strip() + "\n")
        body += tables
        self.sections.append("\n".join(body))

    def save(self, fig, name, series):
        """Saves a matplotlib figure; every named series must have points."""
        for label, n in series.items():
            if n == 0:
                self.problems.append(f"{name}: series '{label}' is empty")
        if not series:
            self.problems.append(f"{name}: no series")
        fig.tight_layout()
        fig.savefig(self.plots / name, dpi=90)
        import matplotlib.pyplot as plt
        plt.close(fig)


def plt_module():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


