"""The figures: one function each, which reads the runs of its group from the
Report, draws its plot and adds its text and tables."""

import json
import os
import re
import statistics
import subprocess
from pathlib import Path

import model
from repro.common import EVENT_HEADER, PRESETS, REPO, USER_LEVEL
from repro.plan import BURST_THREADS
from repro.run import find_deploy, mean
from repro.tables import (CLAIM_HEAD, WATTS_PER_CORE, ZB_YEARS, Val, claim_row, event_label, fmt,
                          fnum, plt_module, ratio, select, si, srcs, table)

def fig_throughput(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput"]
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    events = sorted({int(r["event_bytes"]) for r in rows})
    insts = sorted({int(r["instances"]) for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    series = {}
    colour = {p: f"C{j}" for j, p in enumerate(PRESETS)}
    dash = {1: "-", 2: "--", 4: ":", 8: "-."}
    for p in PRESETS:
        for i in insts:
            xs, ys = [], []
            for t in tuples:
                v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768, instances=i),
                        "tuples_per_s")
                if v:
                    xs.append(t)
                    ys.append(v.v)
            if i == 1 or xs:
                series[f"{p} x{i} tuples/s"] = len(xs)
            if xs:
                axes[0].plot(xs, ys, marker="o", label=f"{i}x {p}", color=colour[p],
                             linestyle=dash.get(i, "-"))
            xs, ys = [], []
            for t in tuples:
                v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768, instances=i),
                        "gbps")
                if v:
                    xs.append(t)
                    ys.append(v.v)
            if xs:
                axes[1].plot(xs, ys, marker="o", label=f"{i}x {p}", color=colour[p],
                             linestyle=dash.get(i, "-"))
        xs, ys = [], []
        for e in events:
            v = Val(select(rows, preset=p, tuple_bytes=128, event_bytes=e, instances=1), "gbps")
            if v:
                xs.append(e if e else 128 + EVENT_HEADER)
                ys.append(v.v)
        series[f"{p} Gb/s by event size"] = len(xs)
        axes[2].plot(xs, ys, marker="o", label=p, color=colour[p])
    axes[0].set(xscale="log", yscale="log", xlabel="tuple bytes (32 KiB events)",
                ylabel="tuples/s at the sink", title="tuples/s by tuple size")
    axes[1].set(xscale="log", xlabel="tuple bytes (32 KiB events)", ylabel="Gb/s",
                title="Gb/s by tuple size")
    axes[2].set(xscale="log", xlabel="event bytes (128 B tuples; left: one tuple)",
                ylabel="Gb/s", title="Gb/s by event size, 1 instance")
    for a in axes:
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    rep.save(fig, "fig1_throughput.png", series)

    # Claims: the best ratio over the cells, at each tuple size.
    def best_ratio(num_presets, den, t):
        best = None
        for e in events:
            for i in insts:
                d = Val(select(rows, preset=den, tuple_bytes=t, event_bytes=e, instances=i),
                        "tuples_per_s")
                for p in num_presets:
                    n = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e, instances=i),
                            "tuples_per_s")
                    r = ratio(n.v, d.v)
                    if r is not None and (best is None or r > best[0]):
                        best = (r, srcs(n, d), p, e, i)
        return best

    claims = []
    small, large = min(tuples, key=lambda t: abs(t - 128)), max(tuples)
    for key, nums, den, t in (("tcp_vs_orig_small", ["tcp-opt"], "original", small),
                              ("tcp_vs_orig_large", ["tcp-opt"], "original", large),
                              ("ul_vs_tcp_small", USER_LEVEL, "tcp-opt", small),
                              ("ul_vs_tcp_large", USER_LEVEL, "tcp-opt", large)):
        b = best_ratio(nums, den, t)
        if b:
            claims.append(claim_row(key, b[0], f"{b[2]}, {event_label(b[3])}, {b[4]}x: {b[1]}"))
        else:
            claims.append(claim_row(key, None, "no runs"))
    for key, presets in (("max_gbps_opt", ["tcp-opt"] + USER_LEVEL), ("max_gbps_orig", ["original"])):
        best = None
        for p in presets:
            for t in tuples:
                for e in events:
                    for i in insts:
                        v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e, instances=i),
                                "gbps")
                        if v and (best is None or v.v > best.v):
                            best = v
        claims.append(claim_row(key, best.v if best else None, best.src() if best else "no runs"))

    cells = []
    for t in tuples:
        for e in events:
            vals = [Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e, instances=1),
                        "tuples_per_s") for p in PRESETS]
            if not any(vals):
                continue
            gb = [Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e, instances=1), "gbps")
                  for p in PRESETS]
            cells.append([t, event_label(e)] + [si(v.v) for v in vals] +
                         [fmt(ratio(vals[1].v, vals[0].v), ".2f")] + [fmt(g.v) for g in gb] +
                         [srcs(*vals)])
    rep.figure(
        "Figure 1: throughput by tuple size and event size (study Figs 4, 5)",
        "fig1_throughput.png",
        "The demo chain (loadgen -> node-a -> node-b -> sink, a pass-everything filter on "
        "each node) on this one machine, every preset (fabric-opt and ucx-opt with their "
        "default providers) and each instance count. The study's servers were four "
        "machines over 10 GbE; here every process shares two cores, so absolute rates "
        "compare to the study's only as orders of magnitude, and ratios between presets "
        "are what carries over.",
        [table(CLAIM_HEAD, claims),
         "Every cell with one instance (sluice tuples/s per preset, tcp-opt/original, Gb/s):\n\n" +
         table(["tuple B", "event"] + [f"sluice {p} tuples/s" for p in PRESETS] +
               ["tcp-opt/original"] + [f"{p} Gb/s" for p in PRESETS] + ["source"], cells)])


def fig_spin(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "spin"]
    insts = sorted({int(r["instances"]) for r in rows})
    fig, ax = plt.subplots(figsize=(6, 4))
    series, lines, last = {}, [], None
    for w in ("block", "spin"):
        xs, ys = [], []
        for i in insts:
            v = Val(select(rows, wait=w, instances=i), "tuples_per_s")
            if v:
                xs.append(i)
                ys.append(v.v)
        series[w] = len(xs)
        ax.plot(xs, ys, marker="o", label=f"wait={w}")
    ax.set(xlabel="instances", ylabel="tuples/s", title="tcp-opt, 128 B tuples, 32 KiB events")
    ax.grid(alpha=0.3)
    ax.legend()
    rep.save(fig, "fig2_spin.png", series)
    for i in insts:
        b = Val(select(rows, wait="block", instances=i), "tuples_per_s")
        s = Val(select(rows, wait="spin", instances=i), "tuples_per_s")
        lines.append([i, si(b.v), si(s.v), fmt(ratio(b.v, s.v), ".2f"), srcs(b, s)])
        if b and s:
            last = (i, ratio(b.v, s.v), srcs(b, s))
    claims = [claim_row("block_vs_spin_8", last[1] if last else None,
                        f"at {last[0]} instances: {last[2]}" if last else "no runs")]
    rep.figure(
        "Figure 2: spinning against blocking waits (study Fig 6)", "fig2_spin.png",
        "tcp-opt with every stage waiting on its rings by spinning (`wait=spin`) or by "
        "blocking (`wait=block`), 1 to 8 instances of the chain. The study removed "
        "Borealis's spin loops; sluice's spin is a choice, so the comparison is the same "
        "data path with and without it. On two cores, spinning threads take cycles the "
        "others need as soon as there are more threads than cores.",
        [table(CLAIM_HEAD, claims),
         table(["instances", "sluice block tuples/s", "sluice spin tuples/s", "block/spin",
                "source"], lines)])


def fig_cpe(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    t = 1024
    events = sorted({int(r["event_bytes"]) for r in select(rows, tuple_bytes=t)})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series, lines = {}, []
    for p in PRESETS:
        for col, ax in (("node_cpe_u", axes[0]), ("node_cpe_s", axes[1])):
            xs, ys = [], []
            for e in events:
                v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), col)
                if v:
                    xs.append(e if e else t + EVENT_HEADER)
                    ys.append(v.v)
            series[f"{p} {col}"] = len(xs)
            ax.plot(xs, ys, marker="o", label=p)
        for e in events:
            u = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), "node_cpe_u")
            s = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), "node_cpe_s")
            lines.append([p, event_label(e), fmt(u.v, ".4g"), fmt(s.v, ".4g"), srcs(u, s)])
    for ax, what in ((axes[0], "CPE_u (user cycles per event)"),
                     (axes[1], "CPE_s (system cycles per event)")):
        ax.set(xscale="log", yscale="log", xlabel="event bytes (1 KiB tuples)", ylabel=what)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    rep.save(fig, "fig3_cpe.png", series)

    def best(col, nums, den):
        b = None
        for e in events:
            d = Val(select(rows, preset=den, tuple_bytes=t, event_bytes=e), col)
            for p in nums:
                n = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), col)
                r = ratio(n.v, d.v)
                if r is not None and (b is None or r < b[0]):
                    b = (r, f"{p}, {event_label(e)}: {srcs(n, d)}")
        return b or (None, "no runs")

    claims = [claim_row("cpe_u_tcp_vs_orig", *best("node_cpe_u", ["tcp-opt"], "original")),
              claim_row("cpe_s_ul_vs_tcp", *best("node_cpe_s", USER_LEVEL, "tcp-opt"))]
    rep.figure(
        "Figure 3: CPE_u and CPE_s at 1 KiB tuples (study Fig 7)", "fig3_cpe.png",
        "User and system cycles per event (in and out counted, as the study counts them) "
        "of the two nodes (their mean), one instance. The study's mx-opt is Myrinet MX, "
        "a user-level network; sluice's nearest are fabric-opt and ucx-opt, which over "
        "loopback move bytes through shared memory or the kernel's TCP depending on "
        "the provider; the claim row takes whichever is lower.",
        [table(CLAIM_HEAD, claims),
         table(["preset", "event", "sluice CPE_u", "sluice CPE_s", "source"], lines)])


def epe_of(rows):
    """Joules per event of the node at 25 W per core (the study's energy
    figures), from its CPE_p and CPE_i, with the runs it came from."""
    p, i = Val(rows, "node_cpe_p"), Val(rows, "node_cpe_i")
    if not (p and i):
        return None, srcs(p, i)
    ghz = fnum(rows[0]["clock_ghz"]) or 1.0
    return model.epe_joules(p.v, i.v, WATTS_PER_CORE, 1, ghz * 1e9), srcs(p, i)


def fig_energy(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    small, large = min(tuples, key=lambda t: abs(t - 128)), max(tuples)
    lines32, lines1 = [], []
    kwh = {}
    for p in PRESETS:
        for t in (small, large):
            epe, src = epe_of(select(rows, preset=p, tuple_bytes=t, event_bytes=32768))
            k = [model.kwh_for_bytes(zb * model.ZETTABYTE, 32768, epe) / 1e9 if epe else None
                 for _, zb in ZB_YEARS]
            kwh[(p, t, 32768)] = (k, src)
            lines32.append([p, t, fmt(epe, ".4g")] + [fmt(x, ".3g") for x in k] + [src])
        for t in tuples:
            epe, src = epe_of(select(rows, preset=p, tuple_bytes=t, event_bytes=0))
            k = [model.kwh_for_bytes(zb * model.ZETTABYTE, t, epe) / 1e9 if epe else None
                 for _, zb in ZB_YEARS]
            kwh[(p, t, 0)] = (k, src)
            lines1.append([p, t, fmt(epe, ".4g"), fmt(k[0], ".3g"), fmt(k[2], ".3g"), src])
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    series = {}
    width = 0.2
    for ax, t, e, title in ((axes[0], small, 32768, f"{small} B tuples, 32 KiB events"),
                            (axes[1], large, 32768, f"{large} B tuples, 32 KiB events"),
                            (axes[2], small, 0, f"{small} B tuples, one-tuple events")):
        for j, p in enumerate(PRESETS):
            k = kwh[(p, t, e)][0]
            ys = [x if x is not None else 0 for x in k]
            series[f"{p} {title}"] = sum(1 for x in k if x is not None)
            ax.bar([i + j * width for i in range(len(ZB_YEARS))], ys, width, label=p)
        ax.set_xticks([i + 1.5 * width for i in range(len(ZB_YEARS))],
                      [f"{y}: {zb} ZB" for y, zb in ZB_YEARS])
        ax.set(ylabel="billion kWh", title=title, yscale="log")
        ax.legend(fontsize=8)
    rep.save(fig, "fig4_energy.png", series)

    def saving(p_opt, p_base, t, e):
        a, b = kwh[(p_opt, t, e)], kwh[(p_base, t, e)]
        if a[0][2] is None or b[0][2] is None:
            return None, "no runs"
        return model.saving(a[0][2], b[0][2]), f"{p_opt}: {a[1]}; {p_base}: {b[1]}"

    def best_saving(opts, base, e, ts):
        best = (None, "no runs")
        for t in ts:
            for p in opts:
                s = saving(p, base, t, e)
                if s[0] is not None and (best[0] is None or s[0] > best[0]):
                    best = (s[0], f"{t} B: " + s[1])
        return best

    orig = kwh[("original", small, 32768)]
    claims = [claim_row("kwh_2020_orig_small", orig[0][2], orig[1]),
              claim_row("energy_tcp_saving_large", *best_saving(["tcp-opt"], "original", 32768,
                                                                (small, large))),
              claim_row("energy_ul_saving_large", *best_saving(USER_LEVEL, "tcp-opt", 32768,
                                                               (small, large))),
              claim_row("energy_ul_saving_small", *best_saving(USER_LEVEL, "tcp-opt", 0, tuples)),
              claim_row("energy_tcp_saving_small", *best_saving(["tcp-opt"], "original", 0,
                                                                tuples))]
    rep.figure(
        "Figure 4: energy to stream the world's data (study Figs 8, 9)", "fig4_energy.png",
        "Equation 3 (model.py: EPE = P (CPE_p + 0.7 CPE_i) / (N F)) with the node's CPE_p "
        "and CPE_i at 25 W per core (section 5.2.2), times the events that carry 1.8, 8 and "
        "35 ZB (2010, 2015, 2020): 32 KiB events, or one tuple per event. Billions of kWh. "
        "CPE_i is the idle cycles per event of the node's share of this machine's cores; on "
        "two cores shared by four processes it is large, and it weighs 0.7 of CPE_p.",
        [table(CLAIM_HEAD, claims),
         "32 KiB events:\n\n" +
         table(["preset", "tuple B", "sluice EPE J"] +
               [f"sluice {y} ({zb} ZB) G kWh" for y, zb in ZB_YEARS] + ["source"], lines32),
         "One tuple per event (Fig 9):\n\n" +
         table(["preset", "tuple B", "sluice EPE J", "sluice 2010 G kWh", "sluice 2020 G kWh",
                "source"], lines1)])


def fig_infra(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    ops = [r for r in rep.rows if r["group"] == "operators"]
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    ghz = fnum(rows[0]["clock_ghz"]) if rows else 2.6
    F = (ghz or 2.6) * 1e9
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    series, lines, cores = {}, [], {}
    for e, ax in ((32768, axes[0]), (0, axes[1])):
        for p in PRESETS:
            xs, ys = [], []
            for t in tuples:
                v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=e), "node_cpe_p")
                if v:
                    c = model.cores_for_rate(1e10, v.v, F)
                    cores[(p, t, e)] = (c, v)
                    xs.append(t)
                    ys.append(c / 1e6)
                    lines.append([p, t, event_label(e), fmt(c / 1e6, ".4g"), v.src()])
            series[f"{p} {event_label(e)}"] = len(xs)
            ax.plot(xs, ys, marker="o", label=p)
        ax.set(xscale="log", yscale="log", xlabel="tuple bytes",
               ylabel="million cores for 1e10 events/s",
               title=f"{'32 KiB events' if e else 'one tuple per event'}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    op_names = ["pass", "filter", "union", "aggregate", "groupby-having"]
    op_lines, servers, opv = [], [], {}
    for name in op_names:
        v = Val(select(ops, setup=name), "node_cpe_p")
        opv[name] = v
        n = model.servers_for_rate(1e6, v.v, F) if v else None
        servers.append(n or 0)
        op_lines.append([name, fmt(v.v, ".4g"), fmt(n, "d") if n else "—", v.src()])
    series["servers per operator"] = sum(1 for s in servers if s)
    axes[2].bar(op_names, servers)
    axes[2].set(ylabel="4-core servers for 1e6 events/s", title="per operator, 12 B tuples")
    axes[2].tick_params(axis="x", labelsize=8)
    rep.save(fig, "fig5_infrastructure.png", series)

    savings = []
    for t in tuples:
        a, b = cores.get(("tcp-opt", t, 32768)), cores.get(("original", t, 32768))
        if a and b:
            savings.append((model.saving(a[0], b[0]), f"{t} B: {srcs(a[1], b[1])}"))
    lo = min(savings) if savings else (None, "no runs")
    hi = max(savings) if savings else (None, "no runs")
    sm = cores.get(("tcp-opt", min(tuples), 32768))
    lg = cores.get(("tcp-opt", max(tuples), 32768))
    sl = (ratio(sm[0], lg[0]), f"tcp-opt {min(tuples)} B / {max(tuples)} B: {srcs(sm[1], lg[1])}") \
        if sm and lg else (None, "no runs")
    fs = model.servers_for_rate(1e6, opv["filter"].v, F) if opv["filter"] else None
    ag = model.servers_for_rate(1e6, opv["aggregate"].v, F) if opv["aggregate"] else None
    claims = [claim_row("cores_tcp_saving_min", *lo), claim_row("cores_tcp_saving_max", *hi),
              claim_row("cores_small_vs_large", *sl),
              claim_row("union_vs_filter", ratio(opv["union"].v, opv["filter"].v),
                        srcs(opv["union"], opv["filter"])),
              claim_row("aggregate_vs_filter_servers", ratio(ag, fs),
                        srcs(opv["aggregate"], opv["filter"]))]
    rep.figure(
        "Figure 5: cores and servers (study Figs 10, 11)", "fig5_infrastructure.png",
        f"Equation 2 solved for cores (model.cores_for_rate, alpha = 1, F = this machine's "
        f"{ghz} GHz): millions of cores to stream 1e10 events/s at the node's CPE_p, per "
        "preset and tuple size; and 4-core servers for one million events/s through one "
        "node running each operator (12 B tuples, 32 KiB events, tcp-opt; `filter` keeps "
        "about half, `aggregate` is a count per key over windows of 1000 tuples, "
        "`groupby-having` a sum per key over windows of 100 000 with a HAVING, the shape of "
        "deploy/examples/esper.yaml's query). The study's aggregate is a 4-tuple pattern with a timing check; "
        "sluice's grouped aggregate is the nearest operator it has.",
        [table(CLAIM_HEAD, claims),
         table(["preset", "tuple B", "event", "sluice M cores for 1e10 ev/s", "source"], lines),
         table(["operator", "sluice node CPE_p", "sluice servers for 1e6 ev/s", "source"],
               op_lines)])


def fig_projection(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "throughput" and str(r["instances"]) == "1"]
    tuples = sorted({int(r["tuple_bytes"]) for r in rows})
    small, large = min(tuples, key=lambda t: abs(t - 128)), max(tuples)
    ghz = fnum(rows[0]["clock_ghz"]) if rows else 2.6
    F = (ghz or 2.6) * 1e9
    core_counts = [128, 256, 1024]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series, lines, tb = {}, [], {}
    for ax, t in ((axes[0], small), (axes[1], large)):
        for p in PRESETS:
            v = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768), "node_cpb_p")
            ys = [model.gbits_per_s(v.v, n, F) / 1e3 for n in core_counts] if v else []
            tb[(p, t)] = (ys, v)
            series[f"{p} {t} B"] = len(ys)
            if ys:
                ax.plot(core_counts, ys, marker="o", label=p)
                lines.append([p, t, fmt(v.v, ".4g"), fmt(model.gbits_per_s(v.v, 1, F), ".3g")] +
                             [fmt(y, ".3g") for y in ys] + [v.src()])
        ax.set(xscale="log", yscale="log", xlabel="cores per server", ylabel="Tb/s",
               title=f"{t} B tuples, 32 KiB events")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    rep.save(fig, "fig6_projection.png", series)
    opt = max(((tb[(p, large)][0][-1], tb[(p, large)][1]) for p in ["tcp-opt"] + USER_LEVEL
               if tb[(p, large)][0]), default=None, key=lambda x: x[0])
    orig = tb[("original", large)]
    per_core = max(((model.gbits_per_s(tb[(p, t)][1].v, 1, F), tb[(p, t)][1])
                    for p in ["tcp-opt"] + USER_LEVEL for t in (small, large)
                    if tb[(p, t)][1]), default=None, key=lambda x: x[0])
    claims = [claim_row("tbps_1024_orig", orig[0][-1] if orig[0] else None, orig[1].src()),
              claim_row("tbps_1024_opt", opt[0] if opt else None, opt[1].src() if opt else "—"),
              claim_row("gbps_per_core_opt", per_core[0] if per_core else None,
                        per_core[1].src() if per_core else "—")]

    # Section 5.4: pass-through against the filter, the same chain.
    pas = [r for r in rep.rows if r["group"] == "passthrough"]
    pl, worst = [], None
    for p in ("original", "tcp-opt"):
        for t in sorted({int(r["tuple_bytes"]) for r in pas}):
            a = Val(select(pas, preset=p, tuple_bytes=t), "node_cpe_p")
            b = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768), "node_cpe_p")
            ta = Val(select(pas, preset=p, tuple_bytes=t), "tuples_per_s")
            tf = Val(select(rows, preset=p, tuple_bytes=t, event_bytes=32768), "tuples_per_s")
            ov = ratio(b.v, a.v)
            pl.append([p, t, fmt(a.v, ".4g"), fmt(b.v, ".4g"),
                       fmt(ov - 1 if ov else None, ".2f"), fmt(ratio(ta.v, tf.v), ".2f"),
                       srcs(a, b, ta, tf)])
            if ov and (worst is None or ov > worst[0]):
                worst = (ov, srcs(a, b))
    claims.append(claim_row("filter_overhead", worst[0] - 1 if worst else None,
                            worst[1] if worst else "no runs"))
    if not pl:
        rep.problems.append("passthrough: no runs")
    rep.figure(
        "Figure 6: network per server in the many-core era, and the operator's share "
        "(study Fig 12, section 5.4)", "fig6_projection.png",
        f"Equation 1 (model.gbits_per_s, alpha = 1, F = {ghz} GHz) with the node's CPB_p "
        "(cycles per byte in and out): the Tb/s one server of 128, 256 or 1024 such cores "
        "would need to keep busy. Then the chain with both nodes running no operator "
        "against the same chain with its pass-everything filters: the filter's share of "
        "a node's cycles.",
        [table(CLAIM_HEAD, claims),
         table(["preset", "tuple B", "sluice node CPB_p", "sluice Gb/s per core"] +
               [f"sluice Tb/s at {n} cores" for n in core_counts] + ["source"], lines),
         "Pass-through against filter (node CPE_p; overhead = filter/pass - 1; tuples/s "
         "pass/filter):\n\n" +
         table(["preset", "tuple B", "sluice pass CPE_p", "sluice filter CPE_p",
                "sluice filter overhead", "sluice tuples/s pass/filter", "source"], pl)])


def fig_bursts(rep):
    plt = plt_module()
    rows = [r for r in rep.rows if r["group"] == "bursts"]
    present = {r.get("threads", "") for r in rows}
    # dedicated: every event through both rings; adaptive: an idle node
    # runs a batch to completion. A CSV without the threads column has one
    # unnamed set.
    modes = [t for t in BURST_THREADS if t in present] or sorted(present)
    after = "adaptive" if "adaptive" in modes else modes[-1]
    cells = sorted({(int(r["burst_events"]), int(r["burst_ms"])) for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series, lines = {}, []
    for n in sorted({c[0] for c in cells}):
        for th in modes:
            xs, ys = [], []
            for m in sorted(c[1] for c in cells if c[0] == n):
                v = Val(select(rows, burst_events=n, burst_ms=m, threads=th),
                        "burst_processing_p50_us")
                if v:
                    xs.append(m)
                    ys.append(v.v / 1e3)
            name = f"bursts of {n}" + (f", {th}" if th else "")
            series[name] = len(xs)
            axes[0].plot(xs, ys, marker="o", label=name,
                         linestyle="-" if th == after else "--")
    labels, heads, tails = [], [], []
    for n, m in cells:
        for th in modes:
            sel = select(rows, burst_events=n, burst_ms=m, threads=th)
            pr, h, t = (Val(sel, "burst_processing_p50_us"), Val(sel, "burst_head_p50_us"),
                        Val(sel, "burst_tail_p50_us"))
            b = Val(sel, "bursts")
            lines.append([n, m, th or "—", fmt(b.v, ".0f"),
                          fmt(pr.v / 1e3 if pr else None, ".3g"),
                          fmt(h.v, ".4g"), fmt(t.v, ".4g"), fmt(ratio(h.v, t.v), ".2f"),
                          srcs(b, pr, h, t)])
            if h and t and th == after:
                labels.append(f"{n}/{m}ms")
                heads.append(h.v)
                tails.append(t.v)
    series["head and tail"] = len(labels)
    xs = list(range(len(labels)))
    axes[1].bar([x - 0.2 for x in xs], heads, 0.4, label="head (first tenth) p50")
    axes[1].bar([x + 0.2 for x in xs], tails, 0.4, label="tail p50")
    axes[1].set_xticks(xs, labels, rotation=30, fontsize=8)
    axes[1].set(ylabel="latency us (sent to received)", yscale="log",
                title="head against tail of a burst" + (f" ({after})" if after else ""))
    axes[0].set(xscale="log", xlabel="burst period ms", ylabel="burst processing ms (p50)",
                title="first tuple sent to last received")
    for a in axes:
        a.legend(fontsize=7)
        a.grid(alpha=0.3)
    rep.save(fig, "fig8_bursts.png", series)

    # Before and after the latency work, cell by cell.
    before = "dedicated" if "dedicated" in modes and after != "dedicated" else None
    ba = []
    if before:
        for n, m in cells:
            sb = select(rows, burst_events=n, burst_ms=m, threads=before)
            sa = select(rows, burst_events=n, burst_ms=m, threads=after)
            pb, pa = Val(sb, "burst_processing_p50_us"), Val(sa, "burst_processing_p50_us")
            hb, ha = Val(sb, "burst_head_p50_us"), Val(sa, "burst_head_p50_us")
            ba.append([n, m, fmt(pb.v / 1e3 if pb else None, ".3g"),
                       fmt(pa.v / 1e3 if pa else None, ".3g"),
                       fmt(ratio(pa.v, pb.v), ".2f"), fmt(hb.v, ".4g"), fmt(ha.v, ".4g"),
                       fmt(ratio(ha.v, hb.v), ".2f"), srcs(pb, pa, hb, ha)])

    def at(n, m, col):
        return Val(select(rows, burst_events=n, burst_ms=m, threads=after), col)

    far = max((m for n, m in cells if n == 1000), default=None)
    claims = []
    if far is not None:
        v = at(1000, far, "burst_processing_p50_us")
        claims.append(claim_row("burst_1000_far", v.v / 1e3 if v else None,
                                f"every {far} ms: " + v.src()))
        h, t = at(1000, far, "burst_head_p50_us"), at(1000, far, "burst_tail_p50_us")
        claims.append(claim_row("burst_head_tail", ratio(h.v, t.v), srcs(h, t)))
    near = min((m for n, m in cells if n == 1000 and m >= 100), default=None)
    if near is not None:
        v = at(1000, near, "burst_processing_p50_us")
        claims.append(claim_row("burst_1000_100", v.v / 1e3 if v else None,
                                f"every {near} ms: " + v.src()))
    steady = Val(select(rep.rows, group="throughput", preset="tcp-opt", tuple_bytes=128,
                        event_bytes=0, instances=1), "tuples_per_s")
    claims.append(claim_row("burst_constant", 1000 / steady.v * 1e3 if steady else None,
                            "1000 / " + steady.src()))
    tables = [table(CLAIM_HEAD, claims),
              table(["burst tuples", "every ms", "threads", "sluice bursts",
                     "sluice burst ms p50", "sluice head us p50", "sluice tail us p50",
                     "head/tail", "source"], lines)]
    if ba:
        tables.append(
            f"The two threading modes: `threads: {before}` (every event through both "
            f"rings) against `threads: {after}` (what the default, auto, is on tcp links), "
            "same cells, same run:\n\n" +
            table(["burst tuples", "every ms", f"sluice burst ms p50 {before}",
                   f"sluice burst ms p50 {after}", f"{after}/{before}",
                   f"sluice head us p50 {before}", f"sluice head us p50 {after}",
                   f"head {after}/{before}", "source"], ba))
    rep.figure(
        "Figure 8: bursts (after Rachou's measurements of Siddhi)", "fig8_bursts.png",
        "The demo chain (tcp-opt, 128 B tuples, one tuple per event, as Rachou's events) "
        "fed bursts of 500, 1000 or 2000 tuples, one burst every `burst_ms`, once with "
        "each node's stages on dedicated threads and once adaptive (what the default is on "
        "tcp links: an idle node's receiving thread runs a batch to completion). The sink "
        "reports each burst's processing time (its first tuple sent to its last received) "
        "and the latency of a burst's first tenth (the head) against the rest (the tail). "
        "Rachou measured Siddhi, one JVM process, from injection to the end of processing; "
        "sluice's times cross four processes and three loopback links, so the head carries "
        "every wake-up on the path: a stage blocked on an empty ring or socket is woken by "
        "the first tuple of a burst, and the kernel's wake-up and a cold cache are paid "
        "once per process per burst. The claims use the adaptive runs. The constant "
        "stream row (distance 0) is the same chain's steady one-tuple throughput.",
        tables)


# The cost model's calibration: these cells of the throughput grid (one
# instance, every preset) and the pass-through chains; every other chain run
# is predicted before its measurement is looked at.
CAL_CELLS = [(128, 0), (4096, 0), (128, 32768), (4096, 32768)]


def is_calibration(r):
    if r["group"] == "passthrough" or (r["group"] == "model" and r["setup"] == "split_key"):
        return True
    return (r["group"] == "throughput" and str(r["instances"]) == "1"
            and (int(r["tuple_bytes"]), int(r["event_bytes"])) in CAL_CELLS)


def is_model_test(r):
    """Chains the model describes: the throughput grid, block waits, and the
    one-node pass-through (another chain length and 12 B tuples)."""
    if r["ok"] != "true" or is_calibration(r):
        return False
    return (r["group"] == "throughput" or (r["group"] == "spin" and r["wait"] == "block")
            or (r["group"] == "operators" and r["setup"] == "pass"))


def plan_predict(deploy, row, cal_path):
    """`sluice-deploy plan FILE --predict` for a run's file and overrides: its
    tuples/s and its nodes' mean CPE_p, or the error it printed."""
    cmd = [str(deploy), "plan", str(REPO / row["file"]), "--predict", "--calibration",
           str(cal_path)]
    for kv in row["sets"].split():
        cmd += ["--set", kv]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if res.returncode != 0:
        return (res.stderr or res.stdout).strip()[-300:]
    m = re.search(r"^predicted: ([0-9.e+]+) tuples/s", res.stdout, re.M)
    nodes = [float(l.split()[3]) for l in res.stdout.splitlines()
             if len(l.split()) == 4 and l.split()[1] == "node"]
    if not m or not nodes:
        return "no prediction in: " + res.stdout[-300:]
    return {"tuples_per_s": float(m.group(1)), "node_cpe_p": sum(nodes) / len(nodes)}


def fig_costmodel(rep):
    import costmodel
    plt = plt_module()
    cal_rows = [r for r in rep.rows if r["ok"] == "true" and is_calibration(r)]
    cal = costmodel.fit(cal_rows)
    cal_path = rep.args.calibration or (rep.out / "calibration.json")
    Path(cal_path).write_text(json.dumps(cal, indent=1, sort_keys=True) + "\n")
    # One prediction per configuration, against the median of its runs
    # (its repeats): the model predicts a configuration, not one run's noise.
    configs = {}
    for r in rep.rows:
        if is_model_test(r) or (r["group"] == "model" and r["ok"] == "true"
                                and not is_calibration(r)):
            configs.setdefault((r["group"], r["setup"], r["sets"]), []).append(r)
    lines, errs_t, errs_c, pts, spread_t, spread_c = [], [], [], [], [], []
    deploy = find_deploy(rep.args.build)
    for (group, setup, sets), runs in configs.items():
        r = runs[0]
        if group == "model":
            if deploy is None:
                rep.problems.append(f"cost model: no sluice-deploy under {rep.args.build} to "
                                    f"predict {setup}")
                continue
            p = plan_predict(deploy, r, cal_path)
            if isinstance(p, str):
                rep.problems.append(f"cost model: {r['rid']} {setup}: {p}")
                continue
            pt, pc = p["tuples_per_s"], p["node_cpe_p"]
            what = f"{r['file'].rsplit('/', 1)[-1]}"
            extra = [kv for kv in sets.split() if not kv.startswith(("duration_s=", "preset="))]
            what += (" " + " ".join(extra) if extra else "") + " (plan --predict)"
        else:
            try:
                p = costmodel.predict(cal, costmodel.roles_ops_of(r), costmodel.carrier_of(r),
                                      int(r["tuple_bytes"]), int(r["event_bytes"]))
            except KeyError as e:
                rep.problems.append(f"cost model: {r['rid']}: {e}")
                continue
            pt = p["tuples_per_s"]
            pc = mean([cpe for role, cpe, _ in p["processes"] if role == "node"])
            what = f"{costmodel.carrier_of(r)} {r['tuple_bytes']} B {event_label(r['event_bytes'])}"
            if group == "operators":
                what += ", one node"
            if str(r["instances"]) != "1":
                what += f", {r['instances']} instances"
        t, c = Val(runs, "tuples_per_s"), Val(runs, "node_cpe_p")
        et, ec = pt / t.v - 1, pc / c.v - 1
        errs_t.append(abs(et))
        errs_c.append(abs(ec))
        pts.append((t.v, pt, c.v, pc))
        if len(runs) >= 2:
            a, b = fnum(runs[0]["tuples_per_s"]), fnum(runs[1]["tuples_per_s"])
            spread_t.append(abs(a / b - 1))
            a, b = fnum(runs[0]["node_cpe_p"]), fnum(runs[1]["node_cpe_p"])
            spread_c.append(abs(a / b - 1))
        lines.append([what, si(pt), si(t.v), f"{et:+.0%}", fmt(pc, ".4g"), fmt(c.v, ".4g"),
                      f"{ec:+.0%}", srcs(t, c)])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, i, j, what in ((axes[0], 0, 1, "tuples/s"), (axes[1], 2, 3, "node CPE_p")):
        xs, ys = [p[i] for p in pts], [p[j] for p in pts]
        ax.scatter(xs, ys)
        if xs:
            lo, hi = min(xs + ys) * 0.7, max(xs + ys) * 1.4
            ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
            ax.fill_between([lo, hi], [lo * 0.85, hi * 0.85], [lo * 1.15, hi * 1.15], alpha=0.1)
        ax.set(xscale="log", yscale="log", xlabel=f"measured {what}",
               ylabel=f"predicted {what}", title=f"{what}: prediction against measurement")
        ax.grid(alpha=0.3)
    rep.save(fig, "fig7_costmodel.png", {"predictions": len(pts)})
    med_t = statistics.median(errs_t) if errs_t else None
    med_c = statistics.median(errs_c) if errs_c else None
    med = statistics.median(errs_t + errs_c) if errs_t else None
    coef_lines = [[k, f"{v:.4g}"] for k, v in sorted(cal["coefficients"].items())]
    alpha_lines = [[k, f"{v:.3f}"] for k, v in sorted(cal["alpha"].items())]
    cal_src = Val(cal_rows, "tuples_per_s")
    rep.figure(
        "Figure 7: the cost model, predicted before measured", "fig7_costmodel.png",
        f"Calibrated on {len(cal_rows)} runs (one instance, every preset, (tuple, event) "
        f"cells {', '.join(f'{t} B/{event_label(e)}' for t, e in CAL_CELLS)}, and the "
        "pass-through chains); then every other chain run (other tuple and event sizes, "
        "more instances, a one-node chain of 12 B tuples) is predicted from its "
        "configuration alone and compared with what it measured. A key split's cost per "
        "tuple (hashing and repacking) is calibrated on deploy/examples/split_key.yaml "
        "as it is; the same split with 8 KiB events and the union (union.yaml) are "
        "predicted by `sluice-deploy plan --predict` itself, from the coefficients "
        "written here. The model "
        "(experiments/costmodel.py) is Pohl, Goetze and Sattler's sum of operator and hand-off costs per "
        "tuple, with per-carrier costs per event, byte and tuple, and the study's "
        "Equation 2 for the rate. Coefficients in "
        f"`{os.path.relpath(cal_path, rep.path.parent)}`; `sluice-deploy plan --predict` "
        "reads the same file.\n\n"
        f"**median prediction error: {med * 100:.0f}%** (tuples/s and node CPE_p of "
        f"{len(errs_t)} configurations not used to calibrate, each against the median of "
        f"its runs; tuples/s alone {med_t * 100:.0f}%, node CPE_p alone {med_c * 100:.0f}%). "
        + (f"For scale, two runs of the same configuration here differ by a median "
           f"{statistics.median(spread_t) * 100:.0f}% in tuples/s and "
           f"{statistics.median(spread_c) * 100:.0f}% in node CPE_p (first two runs of "
           f"each of {len(spread_t)} configurations above): the machine's own noise, "
           "shared with other work, bounds how close any prediction can come."
           if spread_t else "") if med is not None else
        "median prediction error: n/a (no runs to predict)",
        [table(["configuration", "predicted tuples/s", "sluice tuples/s", "error",
                "predicted node CPE_p", "sluice node CPE_p", "error", "source"], lines),
         "Calibration runs (" + cal_src.src() + "):\n\n" +
         table(["coefficient (cycles per unit)", "value"], coef_lines) + "\n" +
         table(["carrier", "alpha (share of N F the pipeline got)"], alpha_lines)])
    if med is not None:
        rep.summary["median_prediction_error"] = med


FIGURES = [fig_throughput, fig_spin, fig_cpe, fig_energy, fig_infra, fig_projection,
           fig_costmodel, fig_bursts]


