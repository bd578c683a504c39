#!/usr/bin/env bash
# Runs the pods `sluice-deploy render --k8s` writes for deploy/examples/cluster.yaml
# the way Kubernetes would start them, without Kubernetes: in a user, mount
# and network namespace of their own where each Service's name resolves
# (/etc/hosts), each pod's init container script runs, then its container's
# command on the ConfigMap's deployment.yaml, all at once and the sink 2 s
# late. Checks that every process exits 0 and that the sink's summary (the
# last line of its log, which kubectl logs would show) counts every tuple
# the load generator sent, none lost, duplicated or corrupt, and that each
# program counted its one start on its pod's emptyDir (--starts).
#
# What it does not check: the cluster itself (scheduling, the CPU manager,
# DNS, probes); scripts/k8s-validate.sh checks the manifests' schema.
#
#   scripts/k8s-pods-local.sh [--build-dir DIR] [--deploy PATH] [-- RENDER_ARGS...]
#
# RENDER_ARGS go to render (e.g. -- --set preset=ucx-opt --set ucx_tls=tcp).
#
# Exit 0: the pipeline ran as rendered; 1: it did not; 2: bad usage or a
# program missing; 77: skipped (no user namespaces here, or no python3 with
# PyYAML: the k8s venv's or the system's).
set -euo pipefail

cd "$(dirname "$0")/.."
build_dir=build
deploy=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="${2:?--build-dir needs a directory}"; shift ;;
    --deploy) deploy="${2:?--deploy needs the path of sluice-deploy}"; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "k8s-pods-local.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
build_dir=$(cd "$build_dir" && pwd)
[[ -n "$deploy" ]] || deploy="$build_dir/deploy/sluice-deploy"
say() { echo "k8s-pods-local.sh: $*"; }
skip() { say "SKIPPED: $*"; exit 77; }

for p in "$deploy" "$build_dir/loadgen/sluice-loadgen" "$build_dir/node/sluice-node" "$build_dir/sink/sluice-sink"; do
  [[ -x "$p" ]] || { echo "k8s-pods-local.sh: no program $p (build it first)" >&2; exit 2; }
done
python=
for py in "$build_dir/k8s-venv/bin/python" /usr/bin/python3; do
  if [[ -x "$py" ]] && "$py" -c 'import yaml' 2>/dev/null; then python=$py; break; fi
done
[[ -n "$python" ]] || skip "no python3 with PyYAML to read the manifests (scripts/k8s-validate.sh makes one)"
unshare -rmn true 2>/dev/null || skip "cannot make user, mount and network namespaces here (unshare -rmn)"

work=$(mktemp -d "${TMPDIR:-/tmp}/k8s-pods.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/logs"
ln -s "$build_dir/loadgen/sluice-loadgen" "$build_dir/node/sluice-node" "$build_dir/sink/sluice-sink" "$work/bin/"

"$deploy" render --k8s deploy/examples/cluster.yaml --image registry.example.com/sluice:ci \
  --set duration_s=2 "$@" >"$work/manifests.yaml"

# The pods as shell: per pod, its init containers' scripts, then `exec` its
# command with the ConfigMap's file where the pod mounts it.
"$python" - "$work" <<'EOF'
import shlex, sys, yaml
work = sys.argv[1]
docs = [d for d in yaml.safe_load_all(open(f"{work}/manifests.yaml")) if d]
mounted = None
lines, names = [], []
for d in docs:
    if d["kind"] == "ConfigMap":
        open(f"{work}/deployment.yaml", "w").write(d["data"]["deployment.yaml"])
for d in docs:
    if d["kind"] != "Pod":
        continue
    name, spec = d["metadata"]["name"], d["spec"]
    names.append(name)
    c = spec["containers"][0]
    # Each volume where the pod mounts it: the ConfigMap's file in work/,
    # the pod's own emptyDir (its working directory, --starts) in work/pods/NAME.
    mounts = {}
    for m in c["volumeMounts"]:
        mounts[m["mountPath"]] = work if m["name"] == "deployment" else f"{work}/pods/{name}"
    here = lambda a: next((a.replace(k, v, 1) for k, v in mounts.items() if a == k or a.startswith(k + "/")), a)
    cmd = [here(a) for a in c["command"]]
    cmd[0] = f"{work}/bin/{cmd[0]}"
    steps = [f"timeout 30 {shlex.join(i['command'] + i['args'])}" for i in spec.get("initContainers", [])]
    if c["name"] == "sink":
        steps.insert(0, "sleep 2")  # the last pod to come up
    steps.append(f"mkdir -p {shlex.quote(here(c['workingDir']))} && cd {shlex.quote(here(c['workingDir']))}")
    steps.append("exec " + shlex.join(cmd))
    lines.append(f"( {' && '.join(steps)} ) >{work}/logs/{name}.log 2>&1 & pids+=($!)")
with open(f"{work}/pods.sh", "w") as f:
    f.write("set -u\nmount --bind %s/hosts /etc/hosts\nip link set lo up\npids=()\n" % work)
    f.write("\n".join(lines) + "\n")
    f.write("rc=0\nfor p in \"${pids[@]}\"; do wait $p || rc=1; done\nexit $rc\n")
with open(f"{work}/hosts", "w") as f:
    f.write("127.0.0.1 localhost " + " ".join(names) + "\n")
EOF

rc=0
timeout 60 unshare -rmn bash "$work/pods.sh" || rc=$?
if [[ $rc -ne 0 ]]; then
  say "FAIL: a pod failed (exit $rc); their logs:"
  for f in "$work"/logs/*.log; do echo "== $f"; tail -5 "$f"; done >&2
  exit 1
fi
"$python" - "$work" <<'EOF' || exit 1
import json, sys
work = sys.argv[1]
last = lambda n: json.loads(open(f"{work}/logs/cluster-{n}.log").read().strip().splitlines()[-1])
gen, sink = last("loadgen"), last("sink")
ok = sink["lost"] == 0 and sink["duplicated"] == 0 and sink["corrupt"] == 0 and \
     sink["events_in"] == gen["events_out"] > 0
# Each program counted its one start (--starts) on its pod's emptyDir.
import glob
starts = {f.split("/")[-2]: open(f).read().strip() for f in glob.glob(f"{work}/pods/*/starts")}
if len(starts) != 4 or set(starts.values()) != {"1"}:
    print(f"k8s-pods-local.sh: FAIL: the pods' counts of starts (--starts): {starts}")
    ok = False
print(f"k8s-pods-local.sh: {'ok' if ok else 'FAIL'}: loadgen sent {gen['events_out']} events, the sink "
      f"got {sink['events_in']}: lost {sink['lost']}, duplicated {sink['duplicated']}, corrupt {sink['corrupt']}")
sys.exit(0 if ok else 1)
EOF
