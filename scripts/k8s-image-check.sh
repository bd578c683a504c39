#!/usr/bin/env bash
# The Dockerfile's runtime stage without Docker: checks that its package list
# is enough for the programs, and that the rendered pods run on it.
#
#   scripts/k8s-image-check.sh [--build-dir DIR] [--rootfs DIR]
#
# 1. debootstrap --variant=minbase bookworm into DIR/base (DIR: --rootfs,
#    default /tmp/sluice-k8s-rootfs; made once), copied afresh to DIR/image:
#    Debian 12, about what debian:12-slim holds.
# 2. In it, as the Dockerfile's runtime stage does: apt-get install the
#    packages that stage lists (read from the Dockerfile, so the two cannot
#    drift), the four programs (stripped) in /usr/local/bin, the same checks
#    (ldd finds every library, --help, validate), uid 10001.
# 3. The pods of `render --k8s deploy/examples/cluster.yaml` (duration_s 2)
#    run in it as uid 10001, in a network namespace whose /etc/hosts maps the
#    Services' names: each init script as rendered, then each command as
#    rendered, on /etc/sluice/deployment.yaml; the sink must get every event,
#    lost 0.
#
# Needs root, network (the Debian mirror) and a few minutes: a manual check,
# not a ctest. Exit 0: all of it passed; 1: something failed.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
build_dir=build
rootfs=/tmp/sluice-k8s-rootfs
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="${2:?}"; shift ;;
    --rootfs) rootfs="${2:?}"; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "k8s-image-check.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
build_dir=$(cd "$build_dir" && pwd)
say() { echo "k8s-image-check.sh: $*"; }
[[ $(id -u) -eq 0 ]] || { say "needs root (debootstrap, chroot, namespaces)"; exit 1; }
command -v debootstrap >/dev/null || { say "needs debootstrap (apt-get install debootstrap)"; exit 1; }

# The runtime stage's packages: the apt-get install in the last FROM.
packages=$(awk '/^FROM /{stage++} stage==2' Dockerfile |
  sed -n '/apt-get install/,/&& rm -rf/p' | tr ' \\' '\n\n' | grep -E '^lib|^ibverbs' | sort -u | tr '\n' ' ')
[[ -n "$packages" ]] || { say "no package list found in the Dockerfile's runtime stage"; exit 1; }
say "runtime packages (from the Dockerfile): $packages"

# The bootstrapped base is kept (DIR/base) and copied afresh for each check
# (DIR/image), so a package dropped from the Dockerfile's list is missed here too.
if [[ ! -x "$rootfs/base/usr/bin/apt-get" ]]; then
  say "debootstrap bookworm into $rootfs/base"
  rm -rf "$rootfs/base"; mkdir -p "$rootfs"
  debootstrap --variant=minbase bookworm "$rootfs/base" http://deb.debian.org/debian >/dev/null
fi
rm -rf "$rootfs/image"
cp -a "$rootfs/base" "$rootfs/image"
rootfs=$rootfs/image
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
# shellcheck disable=SC2086
chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive sh -c \
  "apt-get update -q >/tmp/apt.log 2>&1 && apt-get install -y -q --no-install-recommends $packages >>/tmp/apt.log 2>&1 ||
   { tail -20 /tmp/apt.log; exit 1; }"
mkdir -p "$rootfs/usr/share/sluice" "$rootfs/etc/sluice"
cp "$build_dir/loadgen/sluice-loadgen" "$build_dir/node/sluice-node" "$build_dir/sink/sluice-sink" \
   "$build_dir/deploy/sluice-deploy" "$rootfs/usr/local/bin/"
strip --strip-debug "$rootfs"/usr/local/bin/sluice-*
rm -rf "$rootfs/usr/share/sluice/examples" "$rootfs/usr/share/sluice/prometheus"
cp -r deploy/examples deploy/prometheus "$rootfs/usr/share/sluice/"
# The Dockerfile's checks.
chroot "$rootfs" sh -c '! ldd /usr/local/bin/sluice-* | grep "not found" && ldconfig -p | grep -q "libfabric\.so\.1 " &&
  sluice-node --help >/dev/null &&
  sluice-deploy validate /usr/share/sluice/examples/cluster.yaml >/dev/null'
chroot "$rootfs" sh -c 'id -u 10001 >/dev/null 2>&1 || useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin sluice'
say "the runtime stage's libraries are enough: ldd, libfabric by name, --help, validate pass"

# The pods, as rendered.
python=$build_dir/k8s-venv/bin/python
[[ -x "$python" ]] || python=/usr/bin/python3
"$build_dir/deploy/sluice-deploy" render --k8s deploy/examples/cluster.yaml \
  --image registry.example.com/sluice:ci --set duration_s=2 >"$rootfs/tmp/manifests.yaml"
"$python" - "$rootfs" <<'EOF'
import shlex, sys, yaml
r = sys.argv[1]
docs = [d for d in yaml.safe_load_all(open(f"{r}/tmp/manifests.yaml")) if d]
lines, names = [], []
for d in docs:
    if d["kind"] == "ConfigMap":
        open(f"{r}/etc/sluice/deployment.yaml", "w").write(d["data"]["deployment.yaml"])
for d in docs:
    if d["kind"] != "Pod":
        continue
    n, s = d["metadata"]["name"], d["spec"]
    c = s["containers"][0]
    names.append(n)
    steps = [shlex.join(i["command"] + i["args"]) for i in s.get("initContainers", [])]
    if c["name"] == "sink":
        steps.insert(0, "sleep 2")
    steps.append("exec " + shlex.join(c["command"]))
    lines.append(f"( cd {c['workingDir']} && {' && '.join(steps)} ) >/tmp/{n}.log 2>&1 & pids+=($!)")
open(f"{r}/tmp/pods.sh", "w").write(
    "pids=()\n" + "\n".join(lines) + '\nrc=0; for p in "${pids[@]}"; do wait $p || rc=1; done; exit $rc\n')
open(f"{r}/tmp/pods.hosts", "w").write("127.0.0.1 localhost " + " ".join(names) + "\n")
EOF
rc=0
timeout 90 unshare -mn sh -c "
  ip link set lo up && cp '$rootfs/tmp/pods.hosts' '$rootfs/etc/hosts' &&
  mount -t proc proc '$rootfs/proc' && mkdir -p '$rootfs/run/sluice' && chown 10001 '$rootfs/run/sluice' &&
  chroot '$rootfs' setpriv --reuid 10001 --regid 10001 --clear-groups bash /tmp/pods.sh" || rc=$?
if [[ $rc -ne 0 ]]; then
  say "FAIL: a pod failed (exit $rc)"
  for f in "$rootfs"/tmp/cluster-*.log; do echo "== $f"; tail -3 "$f"; done >&2
  exit 1
fi
"$python" - "$rootfs" <<'EOF'
import json, sys
r = sys.argv[1]
last = lambda n: json.loads(open(f"{r}/tmp/cluster-{n}.log").read().strip().splitlines()[-1])
g, s = last("loadgen"), last("sink")
ok = s["events_in"] == g["events_out"] > 0 and s["lost"] == s["duplicated"] == s["corrupt"] == 0
print(f"k8s-image-check.sh: {'ok' if ok else 'FAIL'}: the pods ran on the runtime stage as uid 10001: "
      f"loadgen sent {g['events_out']} events, the sink got {s['events_in']}, lost {s['lost']}")
sys.exit(0 if ok else 1)
EOF
