#!/usr/bin/env python3
"""sluice's connectors against their baselines, in one run on one machine.

Kafka rows: a topic of 4 partitions holding N records of 128 bytes (CSV of
a schema of eight i64 fields, deploy/examples/kafka.yaml's kind of record)
is moved to another topic by

  kafka-consumer-perf  Kafka's own ConsumerPerformance reading the input
                       topic alone: the broker's ceiling for a reader here
  kcat-pipe            kcat -C -t in -e | kcat -P -t out (Debian's kcat)
  kcat-pipe-prefetch   the same, its consumer's prefetch queue as large as
                       sluice's source's (-X queued.min.messages=2000000
                       -X queued.max.messages.kbytes=262144): librdkafka
                       2.0 stops fetching for up to a second each time the
                       default 100,000 records fill it, which makes the
                       default pipe's rate swing between runs
  sluice               a Kafka source (one stream per partition) -> a node
                       with a filter that keeps every record -> a sink
                       producing each row to the output topic (4
                       partitions, stream s to partition s), under the
                       project's default guarantee, exactly-once (acks,
                       restart, snapshots every 50 ms at most, Kafka
                       transactions; a read_committed reader counts)
  sluice-killed        the same, its node killed with SIGKILL mid-run and
                       restarted
  sluice-GUARANTEE     with --guarantees: the same as sluice under
                       guarantee: at-least-once (no transactions: the
                       producer flushed before each snapshot) or none (no
                       acks, no snapshots)

on the same broker (scripts/kafka.sh up, on ports of its own, stopped at
the end), each writing a topic of its own. Before the rounds, a sluice run
of 100,000 records makes the broker's internal topics (__consumer_offsets,
__transaction_state: ~2 s on a fresh broker), which the first run that
commits offsets or a transaction would otherwise pay for. Each Kafka row
carries broker_cpu_s, the broker's CPU time over the row (it shares the
machine's cores with what it serves), and sluice's rows cpu_s, each
process's.

File rows: esper.yaml's query (filter node, group-by node) over N tuples

  generator-esper      made by esper.yaml's load generator
  file-csv-esper       the same tuples read from a CSV file (p0,p1, written
                       first by deploy/examples/esper-tuples.yaml) by
                       deploy/examples/file.yaml's file source; its results
                       must equal generator-esper's (ok)

alternated, each once per round. Their records_per_s is the load generator
process's own: tuples sent over its wall time, first event to END (the
file source's includes reading and parsing the file); pipeline_tuples_per_s
is the run report's.

A Kafka row's records_per_s is records over the time from its first record
out to its last, by the timestamps the producer (kcat's or sluice's sink)
gave them as it took them (CreateTime, ms), the same rule for every row:
what the pipeline moves, not its start-up (processes, JVM, connections,
init_transactions), which on 1 M records is a fifth to a half of a kcat
pipe's or sluice's wall time; kafka-consumer-perf's is its own clock's,
from its first fetch. wall_records_per_s is records over the whole
command's wall time (start-up included, as a user waits for it).
records_out is what a read_committed reader finds in the output topic; lost
is records_in - records_out. Each round runs the rows in another order
(rotated by one a round): the broker's JVM compiles its code paths as they
are first used (transactions, fetches), so a row run first pays for that.
The summary gives each row's median over the rounds and, per round, each
sluice row against that round's kcat-pipe.

  python3 experiments/connectors.py [--only kafka|file] [--records N] [--tuples N] [--rounds R]
                                    [--guarantees at-least-once,none] [--json]

Run it under `flock -x /tmp/cpu.lock` on a shared machine. Needs the build
(build/) and, for the Kafka rows, scripts/setup.sh's packages (kcat, the
broker's jars).
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEPLOY = os.path.join(ROOT, "build", "deploy", "sluice-deploy")
KAFKA_SH = os.path.join(ROOT, "scripts", "kafka.sh")
RECORD_BYTES = 128
IN_TOPIC = "in"  # main() names one per run
FIELDS = 8
WARM_RECORDS = 100000  # the warm-up run's: enough for the broker's JVM to compile its transaction paths

KAFKA_YAML = """\
# experiments/connectors.py: a Kafka topic through a filter to a Kafka topic.
preset: tcp-opt
schema: rec
schemas:
  rec:
    fields: [{fields}]
event_bytes: 32768
streams: 4
processes:
  - {{name: source, role: loadgen, source: kafka, kafka_topic: in}}
  - name: node
    role: node
    operators:
      - filter: {{where: "a0 >= 0"}}
  - {{name: sink, role: sink, kafka_topic: out}}
""".format(fields=", ".join("{name: a%d, type: i64}" % i for i in range(FIELDS)))


def record(rng):
    # Eight positive numbers, 15 digits each but the last's 16: 128 bytes.
    vals = [rng.randrange(10 ** 14, 10 ** 15) for _ in range(FIELDS - 1)] + [rng.randrange(10 ** 15, 10 ** 16)]
    r = ",".join(str(v) for v in vals)
    assert len(r) == RECORD_BYTES, len(r)
    return r


class Broker:
    """Its own broker, stopped at the end; or with SLUICE_KAFKA_DIR set, the
    one there (started if need be, left running)."""

    def __init__(self, keep):
        given = os.environ.get("SLUICE_KAFKA_DIR")
        self.dir = given or tempfile.mkdtemp(prefix="sluice-connectors-kafka-")
        self.env = dict(os.environ, SLUICE_KAFKA_DIR=self.dir)
        self.keep = keep or bool(given)
        out = subprocess.run([KAFKA_SH, "up"], env=self.env, check=True, capture_output=True, text=True).stdout
        self.bootstrap = out.strip().splitlines()[-1].split("=", 1)[1]
        self.jars = os.path.join(os.environ.get("SLUICE_KAFKA_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sluice", "kafka-4.1.1"), "lib")

    def cpu_s(self):
        """The broker's CPU time so far (user + system, every thread)."""
        try:
            pid = open(os.path.join(self.dir, "pid")).read().strip()
            f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return 0.0

    def topic(self, name, partitions):
        subprocess.run([KAFKA_SH, "topic", name, str(partitions)], env=self.env, check=True, capture_output=True)

    def down(self):
        if not self.keep:
            subprocess.run([KAFKA_SH, "down"], env=self.env, capture_output=True)
            shutil.rmtree(self.dir, ignore_errors=True)


def read_committed(broker, topic):
    """What a read_committed reader finds in `topic` (every partition): its
    records, and the first and last of their timestamps (ms)."""
    p = subprocess.run(["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-e", "-q", "-f", "%T\\n",
                        "-X", "isolation.level=read_committed"], capture_output=True, check=True, text=True)
    ts = [int(t) for t in p.stdout.split()]
    return len(ts), (min(ts) if ts else 0), (max(ts) if ts else 0)


def count_committed(broker, topic):
    return read_committed(broker, topic)[0]


def row(name, records_in, records_out, seconds, span_s=None, **extra):
    """span_s: first record out to last; None: the wall time (seconds)."""
    span = seconds if span_s is None else span_s
    r = {"name": name, "records_per_s": round(records_in / span) if span > 0 else 0,
         "records_in": records_in, "records_out": records_out, "lost": records_in - records_out,
         "seconds": round(seconds, 3), "span_s": round(span, 3),
         "wall_records_per_s": round(records_in / seconds) if seconds > 0 else 0}
    r.update(extra)
    return r


def output_row(name, broker, n, topic, wall, **extra):
    """A row that wrote `topic`: timed from its first record out to its last."""
    got, first_ms, last_ms = read_committed(broker, topic)
    return row(name, n, got, wall, span_s=(last_ms - first_ms) / 1000.0, **extra)


def kafka_consumer_perf(broker, n):
    """Kafka's own ConsumerPerformance reading the input topic alone."""
    cmd = ["java", "-Xmx512m", "-cp", broker.jars + "/*", "org.apache.kafka.tools.ConsumerPerformance",
           "--bootstrap-server", broker.bootstrap, "--topic", IN_TOPIC, "--messages", str(n),
           "--group", "perf-%d" % random.randrange(1 << 30)]
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.monotonic() - t0
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, ...
    line = [l for l in out.splitlines() if re.match(r"^\d{4}-", l)][-1]
    cols = [c.strip() for c in line.split(",")]
    got = int(cols[4])
    own = float(cols[5])  # its own clock: from its first fetch, no JVM start
    return row("kafka-consumer-perf", n, got, wall, span_s=n / own if own > 0 else wall)


KCAT_PREFETCH = ["-X", "queued.min.messages=2000000", "-X", "queued.max.messages.kbytes=262144"]


def kcat_pipe(broker, n, out_topic, name="kcat-pipe", consumer_args=()):
    t0 = time.monotonic()
    c = subprocess.Popen(["kcat", "-C", "-b", broker.bootstrap, "-t", IN_TOPIC, "-e", "-q"] + list(consumer_args),
                         stdout=subprocess.PIPE)
    p = subprocess.Popen(["kcat", "-P", "-b", broker.bootstrap, "-t", out_topic], stdin=c.stdout)
    c.stdout.close()
    c.wait()
    p.wait()
    wall = time.monotonic() - t0
    if c.returncode or p.returncode:
        raise RuntimeError("kcat pipe failed: %s %s" % (c.returncode, p.returncode))
    return output_row(name, broker, n, out_topic, wall)


def sluice(broker, n, out_topic, yaml_path, kill_node=False, name="sluice", guarantee="exactly-once",
           in_topic=None):
    run_dir = tempfile.mkdtemp(prefix="sluice-connectors-run-")
    cmd = [DEPLOY, "run", yaml_path, "--json", "--run-dir", run_dir, "--set", "kafka_bootstrap=" + broker.bootstrap,
           "--set", "tuples=%d" % n, "--set", "progress_s=0", "--set", "processes.2.kafka_topic=" + out_topic,
           "--set", "processes.0.kafka_topic=" + (in_topic or IN_TOPIC), "--set", "guarantee=" + guarantee,
           "--set", "kafka_group=connectors-%s" % out_topic]
    if guarantee != "none":
        cmd += ["--set", "restart_backoff_ms=200", "--set", "checkpoint_interval_ms=50"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = False
    if kill_node:
        # Once the source reads, kill the node in the middle of the stream.
        log = os.path.join(run_dir, "source.log")
        for _ in range(400):
            if os.path.exists(log) and "partition(s) from" in open(log).read():
                break
            time.sleep(0.05)
        time.sleep(1.0)
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cl = open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "sluice-node" in cl and run_dir + "/" in cl and "--process node " in cl:
                os.kill(int(pid), signal.SIGKILL)
                killed = True
                break
    out, err = proc.communicate()
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError("%s: sluice-deploy exited %d:\n%s" % (name, proc.returncode, err[-2000:]))
    rep = json.loads(out)
    restarts = sum(p.get("restarts", 0) for p in rep.get("processes", []))
    cpu = {p["name"]: round(p.get("user_s", 0) + p.get("sys_s", 0), 3) for p in rep.get("processes", [])}
    shutil.rmtree(run_dir, ignore_errors=True)
    return output_row(name, broker, n, out_topic, wall, killed=killed, restarts=restarts, guarantee=guarantee,
                      pipeline_tuples_per_s=round(rep.get("tuples_per_s", 0)), cpu_s=cpu)


def warm_up(broker, yaml_path):
    """One exactly-once run of WARM_RECORDS: the broker makes its internal
    topics (__consumer_offsets, __transaction_state) and its JVM compiles
    its transaction paths now, not in a measured row."""
    topic = "connectors-warm-%d" % random.randrange(1 << 30)
    broker.topic(topic, 4)
    broker.topic(topic + "-out", 4)
    rng = random.Random(1)
    p = subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", topic],
                       input="".join(record(rng) + "\n" for _ in range(WARM_RECORDS)), text=True, check=True)
    sluice(broker, WARM_RECORDS, topic + "-out", yaml_path, name="warm-up", in_topic=topic)


def deploy_json(example, run_dir, sets, port):
    """sluice-deploy run EXAMPLE --json: its report (a dict)."""
    cmd = [DEPLOY, "run", os.path.join(ROOT, "deploy", "examples", example), "--json", "--run-dir", run_dir,
           "--set", "base_port=%d" % port, "--set", "progress_s=0"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        raise RuntimeError("%s wrote no report (exit %d): %s" % (example, p.returncode, p.stderr[-600:]))
    if not rep.get("ok"):
        raise RuntimeError("%s failed: %s" % (example, rep.get("error")))
    return rep


def csv_rows(path, skip_columns=0):
    """A CSV results file's rows after its header, each a tuple of strings."""
    with open(path) as f:
        next(f)
        return [tuple(l.rstrip("\n").split(",")[skip_columns:]) for l in f]


def file_rows(n, rounds, event_bytes):
    """generator-esper and file-csv-esper, alternated, each once per round."""
    scratch = tempfile.mkdtemp(prefix="sluice-connectors-file-")
    rows = []
    port = 24100
    try:
        sets = ["tuples=%d" % n, "event_bytes=%d" % event_bytes]
        gen_dir = os.path.join(scratch, "tuples")
        deploy_json("esper-tuples.yaml", gen_dir, sets, port)
        csv = os.path.join(gen_dir, "esper-tuples.csv")
        size = os.path.getsize(csv)
        want = None
        for r in range(rounds):
            for what in ("generator-esper", "file-csv-esper"):
                port += 1000
                run_dir = os.path.join(scratch, "%s-%d" % (what, r))
                print("round %d: %s" % (r + 1, what), file=sys.stderr)
                t0 = time.monotonic()
                if what == "generator-esper":
                    rep = deploy_json("esper.yaml", run_dir, sets, port)
                    got = csv_rows(os.path.join(run_dir, "esper-results.csv"), skip_columns=1)  # less seq
                    want = want if want is not None else got
                else:
                    rep = deploy_json("file.yaml", run_dir, ["source_file=" + csv, "event_bytes=%d" % event_bytes],
                                      port)
                    got = csv_rows(os.path.join(run_dir, "file-results.csv"))
                wall = time.monotonic() - t0
                src = next(p for p in rep["processes"] if p["name"] == "loadgen")
                sink = next(p for p in rep["processes"] if p["name"] == "sink")
                sent, src_wall = src["tuples_out"], src["wall_s"]
                rec_in = sent + src.get("rejected", 0)
                row_ = {"name": what, "records_per_s": round(sent / src_wall) if src_wall > 0 else 0,
                        "records_in": rec_in, "records_out": len(got), "lost": sink["lost"] + (n - sent),
                        "seconds": round(wall, 3), "ok": got == want and rec_in == n,
                        "pipeline_tuples_per_s": round(rep["tuples_per_s"]), "round": r + 1}
                if what == "file-csv-esper":
                    row_["mb_per_s"] = round(src.get("read_bytes", size) / src_wall / 1e6, 1) if src_wall > 0 else 0
                    row_["source_cpu_s"] = round(src["user_s"] + src["sys_s"], 3)
                rows.append(row_)
                shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1000000, help="records in the input topic (default 1,000,000)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds, each system once per round in turn")
    ap.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    ap.add_argument("--keep-broker", action="store_true", help="leave the broker running (its folder is printed)")
    ap.add_argument("--only", choices=("kafka", "file"), help="only the Kafka rows, or only the file rows")
    ap.add_argument("--tuples", type=int, default=20000000, help="tuples of the file rows (default 20,000,000)")
    ap.add_argument("--event-bytes", type=int, default=32768, help="event_bytes of the file rows' pipelines")
    ap.add_argument("--guarantees", default="", help="also sluice under these guarantees (at-least-once,none), "
                    "a row sluice-GUARANTEE each")
    a = ap.parse_args()
    rows = []
    if a.only != "kafka":
        rows += file_rows(a.tuples, a.rounds, a.event_bytes)
    if a.only != "file":
        rows += kafka_rows(a)
    report(rows, a.json)


def kafka_rows(a):
    n = a.records
    rows = []
    yaml_dir = None
    broker = Broker(a.keep_broker)
    try:
        print("broker at %s (%s)" % (broker.bootstrap, broker.dir), file=sys.stderr)
        global IN_TOPIC
        IN_TOPIC = "connectors-in-%d-%d" % (n, random.randrange(1 << 30))
        broker.topic(IN_TOPIC, 4)
        rng = random.Random(58)
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            for _ in range(n):
                f.write(record(rng) + "\n")
            data = f.name
        subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", IN_TOPIC, "-l", data], check=True)
        os.unlink(data)
        have = count_committed(broker, IN_TOPIC)
        if have != n:
            raise RuntimeError("the input topic holds %d records, not %d" % (have, n))
        yaml_dir = tempfile.mkdtemp(prefix="sluice-connectors-")
        yaml_path = os.path.join(yaml_dir, "kafka_filter.yaml")
        with open(yaml_path, "w") as f:
            f.write(KAFKA_YAML)
        warm_up(broker, yaml_path)
        extra = ["sluice-" + g for g in a.guarantees.split(",") if g]
        order = ["kafka-consumer-perf", "kcat-pipe", "kcat-pipe-prefetch", "sluice", "sluice-killed"] + extra
        for r in range(a.rounds):
            k = r % len(order)
            for what in order[k:] + order[:k]:
                topic = "%s-out-%s-%d" % (IN_TOPIC, what, r)
                if what != "kafka-consumer-perf":
                    broker.topic(topic, 4)
                print("round %d: %s" % (r + 1, what), file=sys.stderr)
                cpu0 = broker.cpu_s()
                if what == "kafka-consumer-perf":
                    rows.append(kafka_consumer_perf(broker, n))
                elif what == "kcat-pipe":
                    rows.append(kcat_pipe(broker, n, topic))
                elif what == "kcat-pipe-prefetch":
                    rows.append(kcat_pipe(broker, n, topic, name=what, consumer_args=KCAT_PREFETCH))
                elif what in extra:
                    rows.append(sluice(broker, n, topic, yaml_path, name=what, guarantee=what[len("sluice-"):]))
                else:
                    rows.append(sluice(broker, n, topic, yaml_path, kill_node=what == "sluice-killed", name=what))
                rows[-1]["round"] = r + 1
                rows[-1]["broker_cpu_s"] = round(broker.cpu_s() - cpu0, 2)
    finally:
        broker.down()
        if yaml_dir:
            shutil.rmtree(yaml_dir, ignore_errors=True)
    return rows


def median(v):
    v = sorted(v)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2 if v else 0


def report(rows, as_json):
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    print("%-20s %6s %14s %14s %11s %11s %6s %8s" % ("name", "round", "records/s", "wall rec/s", "records in",
                                                    "records out", "lost", "seconds"))
    for r in rows:
        print("%-20s %6d %14d %14d %11d %11d %6d %8.2f" % (r["name"], r["round"], r["records_per_s"],
                                                          r.get("wall_records_per_s", r["records_per_s"]),
                                                          r["records_in"], r["records_out"], r["lost"],
                                                          r["seconds"]))

    def best(name):
        v = [r["records_per_s"] for r in rows if r["name"] == name]
        return max(v) if v else 0

    gen, file = best("generator-esper"), best("file-csv-esper")
    if gen and file:
        print("%-14s best %9d records/s: %.2f of generator-esper's %d; results equal: %s"
              % ("file-csv-esper", file, file / gen, gen,
                 all(r["ok"] for r in rows if r["name"] in ("generator-esper", "file-csv-esper"))))
    if not any(r["name"] == "kcat-pipe" for r in rows):
        return

    def rate(name, rnd):
        return next((r["records_per_s"] for r in rows if r["name"] == name and r["round"] == rnd), 0)

    rounds = sorted({r["round"] for r in rows if r["name"] == "kcat-pipe"})
    names = ["sluice", "sluice-killed"] + sorted({r["name"] for r in rows if r["name"].startswith("sluice-")} -
                                                 {"sluice-killed"}) + ["kcat-pipe-prefetch"]
    ceiling = median([rate("kafka-consumer-perf", k) for k in rounds])
    print("first record out to last; median over %d round(s); per round x that round's kcat-pipe:" % len(rounds))
    print("%-20s %10s  %s" % ("kcat-pipe", "%d" % median([rate("kcat-pipe", k) for k in rounds]),
                              "  ".join("r%d %d" % (k, rate("kcat-pipe", k)) for k in rounds)))
    for name in names:
        per = [(k, rate(name, k), rate("kcat-pipe", k)) for k in rounds]
        ratios = [a / b for _, a, b in per if a and b]
        if not ratios:
            continue
        med = median([a for _, a, _ in per])
        print("%-20s %10d  %s; median %.2fx kcat-pipe, %.2f of kafka-consumer-perf's %d"
              % (name, med, "  ".join("r%d %.2fx" % (k, a / b) for k, a, b in per if a and b), median(ratios),
                 med / ceiling if ceiling else 0, ceiling))


if __name__ == "__main__":
    main()
