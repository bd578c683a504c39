"""The sections before the study's figures: the demo pipeline as a user first
runs it, and the two presets against plain sockets on the same machine."""

from pathlib import Path

from repro.plan import SOCKETS_EVENTS
from repro.tables import Val, event_label, fmt, ratio, select, si, srcs, table


def demo_run_text(rep, rows):
    """The table a demo run printed (its run directory's report.txt, kept as
    raw/RID.txt): the run whose tuples/s is nearest the median."""
    v = Val(rows, "tuples_per_s")
    if not v:
        return None, None
    best = min(rows, key=lambda r: abs(float(r["tuples_per_s"]) - v.v))
    txt = Path(rep.out) / "raw" / f"{best['rid']}.txt"
    return best, txt.read_text() if txt.is_file() else None


def other_machines_text(shown):
    """The paragraph naming the other machines whose columns a section shows."""
    return "\n\n" + "\n".join(f"- {m.describe()}" for m in shown) + "\n"


def shown_srcs(label, vals):
    """An other machine's sources, after this machine's in a source cell."""
    vals = [v for v in vals if v]
    return f"; {label}: {srcs(*vals)}" if vals else ""


def sec_demo(rep):
    rows = select(rep.rows, group="demo")
    shown = [(m, select(m.rows, group="demo")) for m in rep.others]
    shown = [(m, r) for m, r in shown if r]
    lines = []
    for col, what in (("tuples_per_s", "tuples/s at the sink"), ("gbps", "Gb/s at the sink"),
                      ("node_cpe_p", "CPE_p of a node (mean of node-a and node-b)"),
                      ("latency_p50_us", "latency p50 (us)"), ("latency_p99_us", "latency p99 (us)")):
        show = si if col == "tuples_per_s" else (lambda x: fmt(x, ".4g"))
        v = Val(rows, col)
        theirs = [Val(r, col) for _, r in shown]
        lines.append([what, show(v.v)] + [show(t.v) for t in theirs] +
                     [srcs(v) + "".join(shown_srcs(m.label, [t])
                                        for (m, _), t in zip(shown, theirs))])
    best, text = demo_run_text(rep, rows)
    text_shown = ""
    if text:
        # The run directory was a temporary one, removed since.
        text = "\n".join("ok; logs and summaries in RUN_DIR" if l.startswith("ok; logs and summaries in")
                         else l for l in text.rstrip().splitlines())
        text_shown = (f"\n\nWhat `sluice-deploy run` printed for run {best['rid']} (the one "
                      "nearest the median tuples/s):\n\n```\n" + text + "\n```\n")
    duration = rows[0]["duration_s"] if rows else "?"
    others = ":"
    if shown:
        others = (", and in a column each, the medians over another machine's runs of the "
                  "same:" + other_machines_text([m for m, _ in shown]))
    rep.figure(
        "The demo pipeline", None,
        "`build/deploy/sluice-deploy run deploy/examples/pipeline.yaml`, as the README's first "
        f"command runs it (`loadgen -> node-a -> node-b -> sink`, tcp-opt, 128 B tuples in "
        f"32 KiB events, every process on this machine), for {duration} s; the medians over "
        f"{len(rows)} run(s)" + others + text_shown,
        [table(["figure", "sluice"] + [m.label for m, _ in shown] + ["source"], lines)])


def sockets_runs(rows):
    """One machine's runs for the section: its one-instance throughput runs,
    its relays, and their median Gb/s."""
    thr = [r for r in rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    base = select(rows, group="baseline")
    return thr, base, Val(base, "gbps")


def sec_sockets(rep):
    """tcp-opt and original from the throughput grid (one instance), against
    four plain-socket processes relaying 32 KiB chunks in the same run; and
    where other machines' runs were added, the same from theirs."""
    plt = None
    try:
        from repro.tables import plt_module
        plt = plt_module()
    except ImportError:
        pass
    rows, base, plain = sockets_runs(rep.rows)
    start, end = Val(select(base, setup="start"), "gbps"), Val(select(base, setup="end"), "gbps")
    # Other machines with runs of this section: columns of their own.
    shown = []
    for m in rep.others:
        thr, mbase, mplain = sockets_runs(m.rows)
        if select(thr) or mbase:
            shown.append((m, thr, mbase, mplain))
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    lines, xs, ys = [], [], []
    theirs_xy = {m.label: ([], []) for m, *_ in shown}
    for e in SOCKETS_EVENTS:
        for t in tuples:
            o = Val(select(rows, preset="original", tuple_bytes=t, event_bytes=e), "tuples_per_s")
            p = Val(select(rows, preset="tcp-opt", tuple_bytes=t, event_bytes=e), "tuples_per_s")
            g = Val(select(rows, preset="tcp-opt", tuple_bytes=t, event_bytes=e), "gbps")
            co = Val(select(rows, preset="original", tuple_bytes=t, event_bytes=e), "node_cpe_p")
            cp = Val(select(rows, preset="tcp-opt", tuple_bytes=t, event_bytes=e), "node_cpe_p")
            if not (o or p):
                continue
            vals = [o, p, g, co, cp]
            frac = "—"
            if e == 32768 and plain and g:
                frac = fmt(ratio(g.v, plain.v), ".2f")
                vals.append(plain)
                xs.append(t)
                ys.append(ratio(g.v, plain.v))
            cells, their_srcs = [], ""
            for m, thr, _, mplain in shown:
                mo = Val(select(thr, preset="original", tuple_bytes=t, event_bytes=e),
                         "tuples_per_s")
                mp = Val(select(thr, preset="tcp-opt", tuple_bytes=t, event_bytes=e),
                         "tuples_per_s")
                mg = Val(select(thr, preset="tcp-opt", tuple_bytes=t, event_bytes=e), "gbps")
                mfrac = ratio(mg.v, mplain.v) if e == 32768 else None
                cells += [si(mo.v), si(mp.v), fmt(mfrac, ".2f")]
                their_srcs += shown_srcs(m.label, [mo, mp] + ([mg, mplain] if mfrac is not None else []))
                if mfrac is not None:
                    theirs_xy[m.label][0].append(t)
                    theirs_xy[m.label][1].append(mfrac)
            lines.append([f"{t} B", event_label(e), si(o.v), si(p.v), fmt(ratio(p.v, o.v), ".2f"),
                          fmt(g.v, ".3g"), frac, si(co.v), si(cp.v)] + cells +
                         [srcs(*vals) + their_srcs])
    plot = None
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(xs, ys, marker="o", label="tcp-opt Gb/s / plain sockets' Gb/s")
        for label, (mx, my) in theirs_xy.items():
            if mx:
                ax.plot(mx, my, marker="s", linestyle="--", label=f"the same, {label}")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set(xscale="log", xlabel="tuple bytes (32 KiB events)", ylabel="fraction of plain sockets",
               title="tcp-opt against plain sockets")
        ax.set_xticks(xs or [128])
        ax.set_xticklabels([str(x) for x in xs] or ["128"])
        ax.grid(alpha=0.3)
        ax.legend()
        plot = "fig0_sockets.png"
        rep.save(fig, plot, {"tcp-opt / plain": len(xs)})
    if shown:
        others = (" Columns marked with another machine's cores are its own runs of the same "
                  "cells, read against its own relays (its rows here are this machine's cells):" +
                  other_machines_text([m for m, *_ in shown]))
    else:
        others = ("\n\nAnother machine's runs get columns of their own: "
                  "`STEPS=reproduce bash experiments/device_check.sh` there writes its runs.csv, "
                  "and `python3 experiments/reproduce.py --report-only --other-machine RUNS.csv` "
                  "here adds them.")
    relays = []
    for what, setup in (("Gb/s at the start", "start"), ("Gb/s at the end", "end")):
        mine = start if setup == "start" else end
        theirs = [Val(select(mbase, setup=setup), "gbps") for _, _, mbase, _ in shown]
        relays.append([what, fmt(mine.v, ".3g")] + [fmt(v.v, ".3g") for v in theirs] +
                      [srcs(mine) + "".join(shown_srcs(m.label, [v])
                                            for (m, *_), v in zip(shown, theirs))])
    rep.figure(
        "The presets against plain sockets", plot,
        "The throughput grid's one-instance runs of `original` and `tcp-opt` (the demo chain, "
        "128 B tuples or as the row says, `congestion: reno`), and four `sluice-plainrelay` "
        "processes relaying 32 KiB chunks over loopback in the same shape, run at the start "
        f"({fmt(start.v, '.3g')} Gb/s) and at the end ({fmt(end.v, '.3g')} Gb/s) of the runs "
        "(their difference is the machine's drift over the runs). The relays move bytes and "
        "nothing else: one blocking thread per process, each reading what has arrived and "
        "writing all of it, no events, no checks; sluice's processes also make, check and "
        "account for every tuple, and pipeline receive, process and send on threads of their "
        "own. *of plain sockets* is tcp-opt's Gb/s over the relays' median, for 32 KiB "
        "events, where sluice's sends are the size of the relays' chunks. CPE_p is the mean over the two "
        "nodes. (`experiments/sweep.py` runs the same comparison on its own, with more "
        "options.)" + others,
        [table(["tuple", "event", "sluice original tuples/s", "sluice tcp-opt tuples/s",
                "tcp-opt/original", "sluice tcp-opt Gb/s", "of plain sockets",
                "sluice node CPE_p original", "sluice node CPE_p tcp-opt"] +
               [f"{c} ({m.label})" for m, *_ in shown
                for c in ("original tuples/s", "tcp-opt tuples/s", "of plain sockets")] +
               ["source"], lines),
         table(["plain sockets", "sluice"] + [m.label for m, *_ in shown] + ["source"], relays)])


SECTIONS = [sec_demo, sec_sockets]
