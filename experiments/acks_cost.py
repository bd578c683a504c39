#!/usr/bin/env python3
"""What acknowledgements and upstream backup cost: the demo pipeline
(loadgen -> node-a -> node-b -> sink, tcp-opt, 128 B tuples in 32 KiB events)
with acks off and on, alternated in one run so both see the same machine.
Prints tuples/s and node CPE_p per run, and the medians' ratio on/off.

  python3 experiments/acks_cost.py [--build build] [--repeats 3] [--duration 5] [--set k=v ...]
                                   [--on-set k=v ...]   # keys for the acks-on runs only
                                   [--example deploy/examples/esper.yaml]

With --on-set checkpoint_interval_ms=50 the on runs take snapshots too (the
sink's verifier; with esper.yaml, node-b's group-by as well).

--variant NAME[:k=v,k=v...] (repeatable) runs several acks-on settings in
each round against the same acks-off run, so they compare with each other
as well as with off (every run in a round goes back to back; which goes
first rotates from round to round):

  python3 experiments/acks_cost.py --repeats 8 --variant acks \
      --variant snapshots:checkpoint_interval_ms=50

Every run starts from guarantee: none (acks off, no restarts, no
snapshots: what the study had), the baseline `none`. A variant that sets
`guarantee` is that guarantee with its keys, not acks on: the levels against
none, and a guarantee's snapshot interval against another's, in one run
(`--variant guarantee=LEVEL` is named by its key):

  python3 experiments/acks_cost.py --repeats 24 --duration 3 \
      --variant guarantee=at-least-once --variant guarantee=exactly-once \
      --variant eo-50:guarantee=exactly-once,checkpoint_interval_ms=50 \
      --variant eo-1000:guarantee=exactly-once,checkpoint_interval_ms=1000

The last lines are a table: each variant's median tuples/s and spread
(the middle half of its runs, and all of them), its ratio to none, and the
rounds.
"""
import argparse, json, statistics, subprocess, sys

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--duration", type=float, default=5)
ap.add_argument("--set", action="append", default=[], help="more deployment keys, k=v")
ap.add_argument("--example", default="deploy/examples/pipeline.yaml")
ap.add_argument("--on-set", action="append", default=[],
                help="deployment keys for the acks-on runs only, k=v (e.g. slots=192)")
ap.add_argument("--variant", action="append", default=[],
                help="an acks-on setting of its own, NAME[:k=v,k=v...], or, when its keys set "
                     "guarantee, that guarantee (guarantee=LEVEL alone names itself); repeatable, "
                     "keys on top of --on-set; default: one, 'on'")
a = ap.parse_args()


def parse_variant(v):
    name, _, keys = v.partition(":")
    if not name or name in ("off", "none"):
        sys.exit(f"--variant {v!r}: needs a name other than 'off' or 'none' (NAME[:k=v,k=v...])")
    sets = [k for k in keys.split(",") if k]
    if "=" in name and not keys:  # --variant guarantee=exactly-once: named by its key
        sets = [name]
    for k in sets:
        if "=" not in k:
            sys.exit(f"--variant {v!r}: {k!r} is not k=v")
    return name, sets


def sets_guarantee(sets):
    return any(k.split("=", 1)[0] == "guarantee" for k in sets)


variants = [parse_variant(v) for v in a.variant] or [("on", [])]
if len({n for n, _ in variants}) != len(variants):
    sys.exit("--variant: two variants have the same name")
extra = dict(variants)


def run(name):
    # The baseline is guarantee: none; a variant that names no guarantee
    # turns acks on over it, one that does is that guarantee.
    acks = "off" if name == "off" else "on"
    cmd = [f"{a.build}/deploy/sluice-deploy", "run", a.example, "--json", "--set", "guarantee=none",
           "--set", f"duration_s={a.duration}", "--set", "base_port=31200", "--set", "progress_s=0"]
    if name != "off" and not sets_guarantee(extra[name]):
        cmd += ["--set", "acks=on"]
    if a.example.endswith("pipeline.yaml"):
        cmd += ["--set", "tuple_bytes=128", "--set", "event_bytes=32768"]
    for s in a.set + (a.on_set + extra[name] if acks == "on" else []):
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        sys.exit(f"run {name} gave no report: {p.stderr.strip()[-400:]}")
    if not j["ok"]:
        sys.exit(f"run {name} failed: {j['error']}")
    nodes = [q for q in j["processes"] if q["role"] == "node"]
    cpe = statistics.mean(q["cpe_p"] for q in nodes)
    # The load generator's too: at full rate it may be the slowest process.
    gens = [q for q in j["processes"] if q["role"] == "loadgen"]
    gcpe = statistics.mean(q["cpe_p"] for q in gens)
    # Snapshots, where they were taken: how many, and the time they cost.
    ck = [q for q in j["processes"] if q.get("checkpoints")]
    ck_note = "".join(f", {q['name']} {q['checkpoints']} snapshots (write {q['checkpoint_write_s']:.3f} s, "
                      f"wait {q['checkpoint_wait_s']:.3f} s)" for q in ck)
    # Frames each credit message answered, per receiving link in pipeline
    # order: with acks, every message also carries the acknowledgement.
    per = [l["frames"] / l["credit_msgs"] for q in j["processes"] for l in q.get("links") or []
           if l["direction"] == "in" and l.get("credit_msgs")]
    if per:
        ck_note += ", frames per credit message " + " / ".join(f"{x:.1f}" for x in per)
    return j["tuples_per_s"], cpe, gcpe, j["lost"], ck_note


names = ["off"] + [n for n, _ in variants]
res = {n: [] for n in names}
for i in range(a.repeats):
    # The runs of a round go back to back, and which runs first rotates:
    # none always follows another's load.
    k = i % len(names)
    for name in names[k:] + names[:k]:
        tps, cpe, gcpe, lost, ck_note = run(name)
        res[name].append((tps, cpe, gcpe))
        label = ("guarantee=none" if name == "off" else
                 "" if sets_guarantee(extra[name]) else "acks=on")
        print(f"run {i + 1}/{a.repeats} {label}"
              f"{'' if name in ('off', 'on') or name == label else ' [' + name + ']'}: {tps:,.0f} tuples/s, "
              f"node CPE_p {cpe:,.0f}, loadgen CPE_p {gcpe:,.0f}, lost {lost}{ck_note}", flush=True)

med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in res.items()}
off = med["off"]
for name in names[1:]:
    label = "" if len(names) == 2 else f"[{name}] "
    on = med[name]
    print(f"{label}median tuples/s: off {off[0]:,.0f}, on {on[0]:,.0f}, on/off {on[0] / off[0]:.3f}")
    # The runs of a round went back to back, on a machine whose speed drifts
    # between rounds (a shared one moved 23-38 M tuples/s): the median of
    # the rounds' own ratios follows the drift less than the medians' ratio.
    pairs = sorted(x[0] / o[0] for o, x in zip(res["off"], res[name]))
    print(f"{label}pairs' on/off: median {statistics.median(pairs):.3f}, range {pairs[0]:.3f}-{pairs[-1]:.3f}")
    # On the 2-core VM whole runs fall in a fast or a slow mode (about 17.5
    # and 13 M tuples/s on 2026-12-01, the host's placement of the vCPUs), so
    # a median moves with how many runs of each variant drew the slow one;
    # the faster half's mean compares the runs of one mode.
    def upper(xs):
        xs = sorted(xs)
        return statistics.mean(xs[len(xs) // 2:])
    print(f"{label}faster half's mean on/off: "
          f"{upper(x[0] for x in res[name]) / upper(x[0] for x in res['off']):.3f}")
    print(f"{label}median node CPE_p: off {off[1]:,.0f}, on {on[1]:,.0f}, on/off {on[1] / off[1]:.3f}")
    print(f"{label}median loadgen CPE_p: off {off[2]:,.0f}, on {on[2]:,.0f}, on/off {on[2] / off[2]:.3f}")
if len(names) > 2:
    # The variants against each other, round by round.
    base = names[1]
    for name in names[2:]:
        r = sorted(x[0] / b[0] for b, x in zip(res[base], res[name]))
        print(f"[{name}]/[{base}] per round: median {statistics.median(r):.3f}, range {r[0]:.3f}-{r[-1]:.3f}")

# The table: each variant against none, every round counted.
def spread(xs):
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return f"{q[0] / 1e6:.2f}-{q[2] / 1e6:.2f} ({xs[0] / 1e6:.2f}-{xs[-1] / 1e6:.2f})"


print("\n| variant | tuples/s median (M) | middle half (all) | median / none | pairs' median (range) | rounds |")
print("|---|---|---|---|---|---|")
for name in names:
    tps = [x[0] for x in res[name]]
    pairs = sorted(x[0] / o[0] for o, x in zip(res["off"], res[name]))
    label = "none" if name == "off" else name
    print(f"| {label} | {statistics.median(tps) / 1e6:.2f} | {spread(tps)} | "
          f"{statistics.median(tps) / med['off'][0]:.3f} | "
          f"{statistics.median(pairs):.3f} ({pairs[0]:.3f}-{pairs[-1]:.3f}) | {len(tps)} |")
