"""The plan: which runs each figure needs, as Specs (a deployment file and its
--set overrides)."""

from pathlib import Path

from repro.common import DEFAULT_SLOT, EVENT_HEADER, PIPELINE, PRESETS, REPO, SLOT_OVERHEAD


class Spec:
    """One run: a deployment file, its --set overrides, and what to record."""

    def __init__(self, group, setup, yaml, sets, **params):
        self.group, self.setup, self.yaml, self.sets = group, setup, yaml, dict(sets)
        self.params = params
        self.rid = ""

    def label(self):
        p = self.params
        bits = [self.group, self.setup, p.get("preset", "")]
        if p.get("carrier"):
            bits[-1] += "/" + p["carrier"]
        if p.get("tuple_bytes") != "":
            bits.append(f"t{p.get('tuple_bytes')}")
        if p.get("event_bytes") != "":
            bits.append(f"e{p.get('event_bytes')}")
        bits.append(f"i{p.get('instances', 1)}")
        if p.get("wait"):
            bits.append(p["wait"])
        if p.get("threads"):
            bits.append(f"threads={p['threads']}")
        return " ".join(b for b in bits if b)


def sets_for(preset, tuple_bytes, event_bytes, instances=1, wait="", carrier="", extra=None):
    s = {"preset": preset, "tuple_bytes": tuple_bytes, "event_bytes": event_bytes,
         "instances": instances}
    if carrier:
        s["fabric_provider" if preset == "fabric-opt" else "ucx_tls"] = carrier
    elif preset == "ucx-opt":
        # The study's user-level carrier over a network: UCX over tcp, as
        # ucx-opt was before ucx_tls: auto made one host shared memory (the
        # calibration's "ucx-opt"; "ucx-opt/sm" is a carrier of its own).
        s["ucx_tls"] = "tcp"
    if wait:
        s["wait"] = wait
    if event_bytes + SLOT_OVERHEAD > DEFAULT_SLOT:
        s["slot_bytes"] = event_bytes + SLOT_OVERHEAD
    s.update(extra or {})
    return s


def spec(group, setup, preset, t, e, inst=1, wait="", carrier="", yaml=None, extra=None):
    return Spec(group, setup, yaml or str(PIPELINE),
                sets_for(preset, t, e, inst, wait, carrier, extra),
                preset=preset, carrier=carrier, tuple_bytes=t, event_bytes=e,
                instances=inst, wait=wait)


# The bursts run in both threading modes: dedicated (every event through
# both rings) and adaptive (what auto is on tcp links).
BURST_THREADS = ("dedicated", "adaptive")


# A plain-socket baseline run's parameters (sweep.run_baseline).
BASELINE = dict(preset="plain-sockets", carrier="", tuple_bytes="", event_bytes=32768, instances=1,
                wait="")


# What "The presets against plain sockets" reads of the throughput grid
# (sections.sec_sockets): one instance of these presets at these event sizes.
SOCKETS_PRESETS = ("original", "tcp-opt")
SOCKETS_EVENTS = (0, 32768)

# What --only takes: a group, or "sockets", the throughput runs that section
# reads and no others (another machine's columns; experiments/device_check.sh).
GROUPS = ("baseline", "demo", "throughput", "spin", "operators", "passthrough", "bursts", "model")
SELECTORS = GROUPS + ("sockets",)


def for_sockets(s):
    p = s.params
    return (s.group == "throughput" and p.get("instances") == 1
            and p.get("preset") in SOCKETS_PRESETS and p.get("event_bytes") in SOCKETS_EVENTS)


def fits(t, e):
    return e == 0 or e >= t + EVENT_HEADER


class Sizes:
    """Which cells each mode runs."""

    def __init__(self, quick):
        self.quick = quick
        if quick:
            self.tuples = [128, 1024, 4096]
            self.events = [0, 32768]
            self.instances = [1]
            self.extra_instances = [2]        # tcp-opt at 128 B / 32 KiB only
            self.spin_instances = [1, 2]
            self.op_tuples = 12
            self.bursts = [(1000, 20), (1000, 200), (500, 100), (2000, 100)]
        else:
            self.tuples = [12, 128, 1024, 4096]
            self.events = [0, 4096, 32768, 65536]
            self.instances = [1, 2, 4]
            self.extra_instances = []
            self.spin_instances = [1, 2, 4, 8]
            self.op_tuples = 12
            self.bursts = [(1000, 10), (1000, 100), (1000, 300), (1000, 1000),
                           (500, 100), (2000, 100)]


def operator_yamls(tmp):
    """The study's operator comparison (5.2.4), 12-byte tuples, one node between
    loadgen(s) and a sink (as experiments/operators.sh), and the group-by-having
    query of deploy/examples/esper.yaml's node-b."""
    files = {}
    bodies = {
        "pass": "processes:\n  - {name: loadgen, role: loadgen}\n  - {name: node, role: node}\n"
                "  - {name: sink, role: sink}\n",
        "filter": "processes:\n  - {name: loadgen, role: loadgen}\n"
                  "  - {name: node, role: node, operators: [{filter: {where: \"key < 512\"}}]}\n"
                  "  - {name: sink, role: sink}\n",
        "union": "processes:\n  - {name: gen-1, role: loadgen}\n  - {name: gen-2, role: loadgen}\n"
                 "  - {name: node, role: node}\n  - {name: sink, role: sink}\n"
                 "links:\n  - {from: gen-1, to: node}\n  - {from: gen-2, to: node}\n"
                 "  - {from: node, to: sink}\n",
        "aggregate": "processes:\n  - {name: loadgen, role: loadgen}\n"
                     "  - {name: node, role: node, operators: [{groupby: {group_by: key, "
                     "aggregates: count, window: count, size: 1000, max_groups: 1024}}]}\n"
                     "  - {name: sink, role: sink}\n",
        "groupby-having": "processes:\n  - {name: loadgen, role: loadgen}\n"
                          "  - {name: node, role: node, operators: [{groupby: {group_by: key, "
                          "aggregates: \"sum(key)\", window: count, size: 100000, "
                          "having: \"sum(key) >= 1000000\", max_groups: 1024}}]}\n"
                          "  - {name: sink, role: sink}\n",
    }
    for name, body in bodies.items():
        path = Path(tmp) / f"op-{name}.yaml"
        path.write_text("preset: tcp-opt\ncongestion: reno\nprogress_s: 0\n" + body)
        files[name] = str(path)
    return files


def plan(args, tmp):
    sz = Sizes(args.quick)
    specs = []
    reps = range(args.repeat)
    # Figures 1, 3-6: presets x tuple sizes x event sizes x instances.
    for r in reps:
        first = len(specs)
        for inst in sz.instances:
            for t in sz.tuples:
                for e in sz.events:
                    if not fits(t, e):
                        continue
                    for p in PRESETS:
                        specs.append(spec("throughput", "chain", p, t, e, inst))
        for inst in sz.extra_instances:
            specs.append(spec("throughput", "chain", "tcp-opt", 128, 32768, inst))
        # Figure 2: spin against block waits, tcp-opt, 128 B tuples, 32 KiB events.
        for inst in sz.spin_instances:
            for w in ("block", "spin"):
                specs.append(spec("spin", "chain", "tcp-opt", 128, 32768, inst, wait=w))
        # Figure 5 (Fig 11): one node per operator.
        ops = operator_yamls(tmp)
        for name, path in ops.items():
            specs.append(spec("operators", name, "tcp-opt", sz.op_tuples, 32768, 1, yaml=path))
        # Section 5.4: the demo chain with its two filters replaced by nothing.
        for p in ("original", "tcp-opt"):
            for t in (128, 4096) if not args.quick else (128,):
                specs.append(spec("passthrough", "chain-pass", p, t, 32768, 1,
                                  extra={"processes.1.operators": "[]",
                                         "processes.2.operators": "[]"}))
        # Bursts of one-tuple events (Rachou's events, measured on Siddhi,
        # are single tuples) every burst_ms; the sink times each burst and
        # its head. Each twice, threads dedicated and adaptive, so the
        # figure compares the two modes in one run.
        for n, period in sz.bursts:
            for th in BURST_THREADS:
                sp = spec("bursts", "chain", "tcp-opt", 128, 0, 1,
                          extra={"burst_events": n, "burst_ms": period, "threads": th})
                sp.params.update(burst_events=n, burst_ms=period, threads=th,
                                 duration=max(args.duration, 4 * period / 1000 + 0.5))
                specs.append(sp)
        # The cost model's graphs beyond chains, predicted by plan --predict:
        # a key split to two sinks and a union of two loadgens.
        # split_key calibrates the split's cost per tuple; split_key-8k (8 KiB
        # events) and the union are predicted.
        for setup, name, extra in (("split_key", "split_key", {}),
                                   ("split_key-8k", "split_key", {"event_bytes": 8192}),
                                   ("union", "union", {})):
            sp = Spec("model", setup, str(REPO / f"deploy/examples/{name}.yaml"),
                      dict({"preset": "tcp-opt"}, **extra), preset="tcp-opt", carrier="",
                      tuple_bytes="", event_bytes="", instances=1, wait="")
            specs.append(sp)
        # The demo as the README's first command runs it: the file as it
        # is (full mode: its own five seconds).
        specs.append(Spec("demo", "pipeline.yaml", str(PIPELINE), {}, preset="tcp-opt", carrier="",
                          tuple_bytes="", event_bytes="", instances=1, wait="",
                          duration=args.duration if args.quick else 5.0))
        for s in specs[first:]:
            s.params["repeat"] = r
    # Plain sockets relaying 32 KiB chunks, before every sluice run and
    # after the last: the ceiling the presets are read against, and the
    # machine's drift over the runs.
    specs = ([Spec("baseline", "start", "", {}, **BASELINE)] + specs
             + [Spec("baseline", "end", "", {}, **BASELINE)])
    if args.only:
        specs = [s for s in specs
                 if s.group in args.only or ("sockets" in args.only and for_sockets(s))]
    return specs


