"""The sections before the study's figures: the demo pipeline as a user first
runs it, and the two presets against plain sockets on the same machine."""

from pathlib import Path

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


def sec_demo(rep):
    rows = select(rep.rows, group="demo")
    lines = []
    for col, what in (("tuples_per_s", "tuples/s at the sink"), ("gbps", "Gb/s at the sink"),
                      ("node_cpe_p", "CPE_p of a node (mean of node-a and node-b)"),
                      ("latency_p50_us", "latency p50 (us)"), ("latency_p99_us", "latency p99 (us)")):
        v = Val(rows, col)
        lines.append([what, si(v.v) if col in ("tuples_per_s",) else fmt(v.v, ".4g"), srcs(v)])
    best, text = demo_run_text(rep, rows)
    shown = ""
    if text:
        # The run directory was a temporary one, removed since.
        text = "\n".join("ok; logs and summaries in RUN_DIR" if l.startswith("ok; logs and summaries in")
                         else l for l in text.rstrip().splitlines())
        shown = (f"\n\nWhat `sluice-deploy run` printed for run {best['rid']} (the one nearest the "
                 "median tuples/s):\n\n```\n" + text + "\n```\n")
    duration = rows[0]["duration_s"] if rows else "?"
    rep.figure(
        "The demo pipeline", None,
        "`build/deploy/sluice-deploy run deploy/examples/pipeline.yaml`, as the README's first "
        f"command runs it (`loadgen -> node-a -> node-b -> sink`, tcp-opt, 128 B tuples in "
        f"32 KiB events, every process on this machine), for {duration} s; the medians over "
        f"{len(rows)} run(s):" + shown,
        [table(["figure", "sluice", "source"], lines)])


def sec_sockets(rep):
    """tcp-opt and original from the throughput grid (one instance), against
    four plain-socket processes relaying 32 KiB chunks in the same run."""
    plt = None
    try:
        from repro.tables import plt_module
        plt = plt_module()
    except ImportError:
        pass
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    base = select(rep.rows, group="baseline")
    start, end = Val(select(base, setup="start"), "gbps"), Val(select(base, setup="end"), "gbps")
    plain = Val(base, "gbps")
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    lines, xs, ys = [], [], []
    for e in (0, 32768):
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
            lines.append([f"{t} B", event_label(e), si(o.v), si(p.v), fmt(ratio(p.v, o.v), ".2f"),
                          fmt(g.v, ".3g"), frac, si(co.v), si(cp.v), srcs(*vals)])
    plot = None
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(xs, ys, marker="o", label="tcp-opt Gb/s / plain sockets' Gb/s")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set(xscale="log", xlabel="tuple bytes (32 KiB events)", ylabel="fraction of plain sockets",
               title="tcp-opt against plain sockets")
        ax.set_xticks(xs or [128])
        ax.set_xticklabels([str(x) for x in xs] or ["128"])
        ax.grid(alpha=0.3)
        ax.legend()
        plot = "fig0_sockets.png"
        rep.save(fig, plot, {"tcp-opt / plain": len(xs)})
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
        "options.)",
        [table(["tuple", "event", "sluice original tuples/s", "sluice tcp-opt tuples/s",
                "tcp-opt/original", "sluice tcp-opt Gb/s", "of plain sockets",
                "sluice node CPE_p original", "sluice node CPE_p tcp-opt", "source"], lines),
         table(["plain sockets", "sluice", "source"],
               [["Gb/s at the start", fmt(start.v, ".3g"), srcs(start)],
                ["Gb/s at the end", fmt(end.v, ".3g"), srcs(end)]])])


SECTIONS = [sec_demo, sec_sockets]
