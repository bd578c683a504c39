"""A cost model for sluice's pipelines, after Pohl, Goetze and Sattler's:
calibrate per-operator, per-hand-off and per-carrier costs from a few runs,
then predict tuples/s and CPE_p of configurations before running them.

Their model writes a query's cost per tuple as the sum of its operators' costs
plus, where operators run in different threads, the queue (hand-off) cost, and
takes the slowest thread as the bound. sluice's processes share this machine's
cores, so the bound here is the machine: the pipeline's cycles per event,
summed over its processes, against the cycles the cores give it (the study's
Equation 2 with alpha calibrated):

  cycles of process p per event through the pipeline
      C_p = s_c * events sent + r_c * events received          (carrier c, per event)
          + b_c * bytes in and out + t_c * tuples in and out   (carrier c, per byte, per tuple)
          + h * ring hand-offs                                 (a node's receive->process->send: 2)
          + o_k * tuples into operator k                       (filter, groupby, ...)
          + g * tuples generated (loadgen) + v * tuples verified (sink)
  events/s = alpha_c * N * F / sum_p C_p          tuples/s = events/s * tuples per event
  CPE_p of p = C_p / (events in + events out of p) (the study counts both)

Counts per event come from the configuration (tuple and event sizes), not from
a run, so a prediction needs nothing measured. The loadgen's and sink's own
ring hand-off is counted in their carrier's per-event costs; the costs are fit
by least squares on relative error (numpy.linalg.lstsq), and alpha_c is the
median over carrier c's calibration runs of the alpha that makes the equation
exact. The coefficients go to a JSON calibration file that
`sluice-deploy plan --predict` reads as well.
"""

import json
import statistics

EVENT_HEADER = 64


def tuples_per_event(tuple_bytes, event_bytes):
    """As the load generator packs them: as many as fit after the header, at least one."""
    if event_bytes <= 0:
        return 1
    return max(1, (event_bytes - EVENT_HEADER) // tuple_bytes)


def event_wire_bytes(tuple_bytes, event_bytes):
    return EVENT_HEADER + tuples_per_event(tuple_bytes, event_bytes) * tuple_bytes


def chain_counts(roles_ops, carrier, tuple_bytes, event_bytes):
    """Per-process counts per pipeline event for a chain (loadgen, nodes..., sink).
    roles_ops: [(role, [operator kinds])]. Returns [(role, {feature: count})]."""
    k = tuples_per_event(tuple_bytes, event_bytes)
    b = event_wire_bytes(tuple_bytes, event_bytes)
    out = []
    for role, ops in roles_ops:
        f = {}
        ein = 0 if role == "loadgen" else 1
        eout = 0 if role == "sink" else 1
        if eout:
            f[f"send_event:{carrier}"] = eout
        if ein:
            f[f"recv_event:{carrier}"] = ein
        f[f"byte:{carrier}"] = b * (ein + eout)
        f[f"tuple:{carrier}"] = k * (ein + eout)
        if role == "node":
            f["handoff"] = 2
            for op in ops:
                f[f"op:{op}"] = f.get(f"op:{op}", 0) + k
        elif role == "loadgen":
            f["gen_tuple"] = k
            f["gen_byte"] = b
        elif role == "sink":
            f["sink_tuple"] = k
            f["sink_byte"] = b
        out.append((role, f, ein + eout))
    return out


def carrier_of(row):
    return row["preset"] + (("/" + row["carrier"]) if row.get("carrier") else "")


def roles_ops_of(row):
    return [(p["role"], p.get("operators") or []) for p in json.loads(row["procs"])]


def measured_counts(row, procs, E):
    """Features per loadgen event from what each process counted: for graphs
    other than a chain (a key split), where the counts are not the chain's. A
    key split shows as the node's `partition` operator (sluice-node adds it)."""
    carrier = carrier_of(row)
    out = []
    for p in procs:
        ein, eout = (p["events_in"] or 0) / E, (p["events_out"] or 0) / E
        tin, tout = (p["tuples_in"] or 0) / E, (p["tuples_out"] or 0) / E
        bin_, bout = (p["bytes_in"] or 0) / E, (p["bytes_out"] or 0) / E
        f = {f"byte:{carrier}": bin_ + bout, f"tuple:{carrier}": tin + tout}
        if eout:
            f[f"send_event:{carrier}"] = eout
        if ein:
            f[f"recv_event:{carrier}"] = ein
        if p["role"] == "node":
            f["handoff"] = 2 * ein
            for op in p.get("operators") or []:
                f[f"op:{op}"] = f.get(f"op:{op}", 0) + tin
        elif p["role"] == "loadgen":
            f["gen_tuple"], f["gen_byte"] = tout, bout
        else:
            f["sink_tuple"], f["sink_byte"] = tin, bin_
        out.append((p["role"], f, 0))
    return out


def is_chain_row(row):
    return str(row.get("tuple_bytes", "")).isdigit() and str(row.get("event_bytes", "")).isdigit()


def observations(row):
    """(features, measured cycles per loadgen event, process) per process: a
    chain's features from its configuration, any other graph's from what its
    processes counted."""
    procs = json.loads(row["procs"])
    E = sum(p["events_out"] or 0 for p in procs if p["role"] == "loadgen")
    if not E:
        return []
    ghz = float(row["clock_ghz"])
    if is_chain_row(row):
        counts = chain_counts(roles_ops_of(row), carrier_of(row), int(row["tuple_bytes"]),
                              int(row["event_bytes"]))
    else:
        counts = measured_counts(row, procs, E)
    obs = []
    for p, (role, f, _) in zip(procs, counts):
        cyc = ((p["user_s"] or 0) + (p["sys_s"] or 0)) * ghz * 1e9 / E
        obs.append((f, cyc, p))
    return obs


def measured_alpha(row):
    """The alpha that makes events/s = alpha N F / sum C_p exact for this run
    (events per loadgen; tuples/s at the sinks over the tuples one loadgen
    event brings them)."""
    obs = observations(row)
    procs = json.loads(row["procs"])
    E = sum(p["events_out"] or 0 for p in procs if p["role"] == "loadgen")
    sink_tuples = sum(p["tuples_in"] or 0 for p in procs if p["role"] == "sink")
    eps = float(row["tuples_per_s"]) / (sink_tuples / E)
    total = sum(c for _, c, _ in obs)
    return eps * total / (int(row["host_cores"]) * float(row["clock_ghz"]) * 1e9)


def nonnegative_lstsq(A, b):
    """Least squares with every coefficient >= 0 (a cost is never negative):
    Lawson and Hanson's active-set method, on numpy alone."""
    import numpy as np
    n = A.shape[1]
    passive = np.zeros(n, dtype=bool)
    x = np.zeros(n)
    for _ in range(3 * n + 10):
        w = A.T @ (b - A @ x)
        if passive.all() or (w[~passive] <= 1e-12).all():
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            step = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + step * (z - x)
            passive &= x > 1e-12
    return x


def fit(rows):
    """Least squares on relative error over every process of every row.
    Returns a calibration dict (coefficients in cycles, alpha per carrier)."""
    import numpy as np
    obs = [o for r in rows for o in observations(r)]
    names = sorted({k for f, _, _ in obs for k in f})
    A = np.array([[f.get(n, 0.0) / y for n in names] for f, y, _ in obs])
    b = np.ones(len(obs))
    coef = nonnegative_lstsq(A, b)
    alphas = {}
    for r in rows:
        alphas.setdefault(carrier_of(r), []).append(measured_alpha(r))
    return {
        "about": "sluice cost model (experiments/costmodel.py): cycles per event, byte, tuple "
                 "and hand-off per carrier and operator, fit on the runs named in `runs`",
        "clock_ghz": float(rows[0]["clock_ghz"]),
        "host_cores": int(rows[0]["host_cores"]),
        "event_header_bytes": EVENT_HEADER,
        "coefficients": {n: float(c) for n, c in zip(names, coef)},
        "alpha": {c: statistics.median(v) for c, v in alphas.items()},
        "runs": [r["rid"] for r in rows],
    }


def predict(cal, roles_ops, carrier, tuple_bytes, event_bytes, cores=None, ghz=None):
    """Predicted tuples/s, events/s and per-process (role, CPE_p, cycles per event)."""
    coef = cal["coefficients"]
    counts = chain_counts(roles_ops, carrier, tuple_bytes, event_bytes)
    missing = sorted({n for _, f, _ in counts for n in f if n not in coef})
    if missing:
        raise KeyError(f"no calibrated cost for {', '.join(missing)}")
    per = []
    for role, f, ev in counts:
        c = sum(coef[n] * v for n, v in f.items())
        per.append((role, c / ev if ev else None, c))
    total = sum(c for _, _, c in per)
    if carrier not in cal["alpha"]:
        raise KeyError(f"no calibrated alpha for carrier {carrier}")
    N = cores or cal["host_cores"]
    F = (ghz or cal["clock_ghz"]) * 1e9
    eps = cal["alpha"][carrier] * N * F / total if total > 0 else None
    k = tuples_per_event(tuple_bytes, event_bytes)
    return {"events_per_s": eps, "tuples_per_s": eps * k if eps else None, "processes": per,
            "cycles_per_event": total}
