#!/usr/bin/env python3
"""The examples are the first test of the library: sluice-deploy runs
deploy/examples/app.yaml (publisher -> node-a -> node-b -> subscriber), the
two example programs connect as its publisher and subscriber by naming the
run directory, and every tuple the publisher sent reaches the subscriber,
once, with the run's report counting both applications beside the nodes.

  examples_test.py --deploy D --publisher P --subscriber S --app-yaml Y [--tuples N]
"""
import argparse, json, os, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--deploy", required=True)
ap.add_argument("--publisher", required=True)
ap.add_argument("--subscriber", required=True)
ap.add_argument("--app-yaml", required=True)
ap.add_argument("--tuples", type=int, default=300000)
ap.add_argument("--set", action="append", default=[])
a = ap.parse_args()


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


with tempfile.TemporaryDirectory(prefix="sluice-examples-") as tmp:
    run = os.path.join(tmp, "run")
    sets = ["base_port=32400", "progress_s=0", "app_wait_s=60"] + a.set
    cmd = [a.deploy, "run", a.app_yaml, "--json", "--run-dir", run]
    for s in sets:
        cmd += ["--set", s]
    deploy = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The nodes are up and the endpoints written once both apps/*.json are there.
    for f in ("publisher", "subscriber"):
        path = os.path.join(run, "apps", f + ".json")
        deadline = time.time() + 30
        while not os.path.exists(path):
            if deploy.poll() is not None or time.time() > deadline:
                out, err = deploy.communicate()
                fail(f"no {path}: sluice-deploy exited {deploy.returncode}\n{err}")
            time.sleep(0.05)
    sub = subprocess.Popen([a.subscriber, run], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pub = subprocess.run([a.publisher, run, str(a.tuples)], capture_output=True, text=True, timeout=120)
    print("publisher:", pub.stdout.strip(), pub.stderr.strip()[-2000:])
    if pub.returncode != 0:
        sub.kill()
        deploy.kill()
        fail(f"the publisher exited {pub.returncode}")
    try:
        sout, serr = sub.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        sub.kill()
        deploy.kill()
        fail("the subscriber did not end within 60 s of the publisher's close")
    print("subscriber:", sout.strip(), serr.strip()[-2000:])
    if sub.returncode != 0:
        deploy.kill()
        fail(f"the subscriber exited {sub.returncode}")
    if f"received {a.tuples} tuples" not in sout:
        fail(f"the subscriber did not receive {a.tuples} tuples")
    try:
        out, err = deploy.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        deploy.kill()
        fail("sluice-deploy run did not end once both applications had")
    if deploy.returncode != 0:
        fail(f"sluice-deploy run exited {deploy.returncode}:\n{out}\n{err[-3000:]}")
    rep = json.loads(out)
    if "publisher (role publisher)" not in err or "Connect{.run_dir" not in err:
        fail(f"run did not say how to connect the applications:\n{err[-3000:]}")
    procs = {p["name"]: p for p in rep["processes"]}
    for name, key in (("publisher", "tuples_out"), ("subscriber", "tuples_in")):
        if name not in procs or procs[name].get(key) != a.tuples:
            fail(f"the report's {name} {key} is {procs.get(name, {}).get(key)}, not {a.tuples}: {procs.get(name)}")
    if rep["lost"] or rep["duplicated"] or rep["corrupt"] or rep["tuples"] != a.tuples:
        fail(f"the report's pipeline: {rep['tuples']} tuples, lost {rep['lost']}, duplicated "
             f"{rep['duplicated']}, corrupt {rep['corrupt']}; want {a.tuples} and none")
    print(f"ok: {a.tuples} tuples published and received through app.yaml; report ok")
