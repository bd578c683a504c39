#!/usr/bin/env bash
# Validates the Kubernetes manifests `sluice-deploy render --k8s` writes,
# offline, against the Kubernetes OpenAPI schemas, and checks that rendering
# is deterministic. No cluster is involved: this says the manifests are
# well-formed objects of that Kubernetes version, not that they run.
#
#   scripts/k8s-validate.sh [--build-dir DIR] [--deploy PATH] [--setup-only]
#
# 1. A virtual environment DIR/k8s-venv (DIR: build) holding kubernetes-validate
#    and its dependencies at the versions pinned in scripts/k8s-validate.txt,
#    made on first use (needs PyPI then; never after: the schemas ship inside
#    the package). --setup-only stops here (scripts/setup.sh runs that).
# 2. Renders every deploy/examples/*.yaml, cluster.yaml with 2 instances and
#    metrics off, and cluster.yaml with fabric/ucx links, --host-network,
#    --rdma-resource and --pod-monitor, twice each (to standard
#    output and with -o DIR): the two renderings must be byte-identical.
# 3. kubernetes-validate --strict (unknown fields are errors) against
#    Kubernetes $K8S_VERSION, every manifest but the PodMonitor (a custom
#    resource, whose schema the validator lacks); and a broken manifest must
#    fail, so a validator that passes everything is caught.
#
# Exit 0: every manifest valid and rendering deterministic; 1: a manifest
# invalid, or two renderings differ; 2: bad usage, sluice-deploy missing;
# 77: skipped (ctest's SKIP_RETURN_CODE) because the virtual environment
# cannot be made: no python3 venv module, or no PyPI on the first run.
set -euo pipefail

K8S_VERSION=1.34.0          # the Kubernetes version whose schemas are used
IMAGE=registry.example.com/sluice:ci

cd "$(dirname "$0")/.."
ROOT=$PWD
build_dir=build
deploy=
setup_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="${2:?--build-dir needs a directory}"; shift ;;
    --deploy) deploy="${2:?--deploy needs the path of sluice-deploy}"; shift ;;
    --setup-only) setup_only=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "k8s-validate.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ -n "$deploy" ]] || deploy="$build_dir/deploy/sluice-deploy"

say() { echo "k8s-validate.sh: $*"; }
skip() { say "SKIPPED: $*"; exit 77; }

# 1. The validator, pinned.
venv="$build_dir/k8s-venv"
pins="$ROOT/scripts/k8s-validate.txt"
stamp="$venv/.sluice-pins"
if [[ ! -x "$venv/bin/kubernetes-validate" ]] || ! cmp -s "$pins" "$stamp"; then
  python=/usr/bin/python3
  [[ -x "$python" ]] || python=$(command -v python3 || true)
  [[ -n "$python" ]] || skip "no python3 to make $venv with"
  rm -rf "$venv"
  say "making $venv (kubernetes-validate and its dependencies as pinned in scripts/k8s-validate.txt)"
  if ! "$python" -m venv "$venv" >/tmp/k8s-venv.$$.log 2>&1; then
    cat /tmp/k8s-venv.$$.log >&2; rm -f /tmp/k8s-venv.$$.log; rm -rf "$venv"
    skip "cannot make a virtual environment with $python (Debian: apt-get install python3-venv)"
  fi
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$pins" \
       >/tmp/k8s-venv.$$.log 2>&1; then
    tail -5 /tmp/k8s-venv.$$.log >&2; rm -f /tmp/k8s-venv.$$.log; rm -rf "$venv"
    skip "cannot install the pinned kubernetes-validate into $venv (is PyPI reachable? scripts/setup.sh makes it once)"
  fi
  rm -f /tmp/k8s-venv.$$.log
  cp "$pins" "$stamp"
fi
say "$("$venv/bin/kubernetes-validate" --version 2>&1 | tr '\n' ' ')(pinned), Kubernetes $K8S_VERSION schemas"
[[ $setup_only -eq 0 ]] || exit 0

[[ -x "$deploy" ]] || { echo "k8s-validate.sh: no sluice-deploy at $deploy (build it, or --deploy PATH)" >&2; exit 2; }

# 2. Render each case twice; the two must be the same bytes.
out=$(mktemp -d "${TMPDIR:-/tmp}/k8s-validate.XXXXXX")
trap 'rm -rf "$out"' EXIT
failed=0
cases=()
for f in deploy/examples/*.yaml; do
  # An application's ends (publisher, subscriber) are no pods: refused, saying so.
  if grep -Eq 'role: (publisher|subscriber)' "$f"; then
    if "$deploy" render --k8s "$f" --image "$IMAGE" >/dev/null 2>"$out/apps.err" ||
       ! grep -q "an application's end" "$out/apps.err"; then
      say "FAIL: render --k8s $f should refuse its application's ends:"; cat "$out/apps.err" >&2; failed=1
    fi
    continue
  fi
  # A file source reads a file the pod mounts; the file leaves it unnamed.
  extra=""
  grep -Eq 'source: file' "$f" && extra="--set source_file=/data/records.csv"
  cases+=("$(basename "$f" .yaml)|$f|$extra")
done
cases+=("cluster-x2-nometrics|deploy/examples/cluster.yaml|--set instances=2 --set metrics=off --name x2")
cases+=("cluster-rdma|deploy/examples/cluster.yaml|--pod-monitor --host-network --rdma-resource rdma/hca --set links.0.transport=ucx --set links.1.transport=fabric --set hosts.1.cores=0-3 --set processes.2.restart=on-failure")
for c in "${cases[@]}"; do
  IFS='|' read -r name file extra <<<"$c"
  # shellcheck disable=SC2086
  if ! "$deploy" render --k8s "$file" --image "$IMAGE" $extra >"$out/$name.stream.yaml" 2>"$out/$name.err"; then
    say "FAIL: render --k8s $file $extra:"; cat "$out/$name.err" >&2; failed=1; continue
  fi
  # shellcheck disable=SC2086
  "$deploy" render --k8s "$file" --image "$IMAGE" $extra -o "$out/$name" >/dev/null
  # The files of -o are the stream's documents, in order (the stream adds a
  # "---" and a "# FILE" line before each file).
  (cd "$out/$name" && for m in $(sed -n 's/^# \(.*\.yaml\)$/\1/p' "$out/$name.stream.yaml"); do
     echo '---'; echo "# $m"; cat "$m"; done) >"$out/$name.files.yaml"
  "$deploy" render --k8s "$file" --image "$IMAGE" $extra >"$out/$name.again.yaml" 2>/dev/null
  if ! cmp -s "$out/$name.stream.yaml" "$out/$name.again.yaml" ||
     ! cmp -s "$out/$name.stream.yaml" "$out/$name.files.yaml"; then
    say "FAIL: $name: two renderings differ:"
    diff -u "$out/$name.stream.yaml" "$out/$name.again.yaml" | head -20 >&2 || true
    diff -u "$out/$name.stream.yaml" "$out/$name.files.yaml" | head -20 >&2 || true
    failed=1
  fi
done

# 3. Validate every manifest file.
# A PodMonitor is a custom resource: no schema ships with the validator
# (it would pass with a warning), so it is left out here and counted apart.
manifests=()
for m in "$out"/*/*.yaml; do [[ "$m" == *-podmonitor.yaml ]] || manifests+=("$m"); done
n_pm=$(ls "$out"/*/*-podmonitor.yaml 2>/dev/null | wc -l)
n_docs=$(cat "${manifests[@]}" | grep -c '^kind: ' || true)
if ! "$venv/bin/kubernetes-validate" --strict --quiet -k "$K8S_VERSION" "${manifests[@]}" >"$out/validate.log" 2>&1; then
  say "FAIL: manifests invalid for Kubernetes $K8S_VERSION:"; cat "$out/validate.log" >&2; failed=1
fi
# The controls: a Pod with a misspelt field (--strict), and one with a port
# that is not a number. Each must fail.
mkdir -p "$out/broken"
sed -e 's/^  restartPolicy:/  restartPolicyy:/' "$out/cluster/cluster-sink.yaml" >"$out/broken/field.yaml"
sed -e 's/containerPort: \([0-9]*\)/containerPort: "p\1"/' "$out/cluster/cluster-sink.yaml" >"$out/broken/port.yaml"
for b in field port; do
  if "$venv/bin/kubernetes-validate" --strict --quiet -k "$K8S_VERSION" "$out/broken/$b.yaml" >"$out/broken.log" 2>&1; then
    say "FAIL: a broken manifest ($b) passed: the validator checks nothing"; failed=1
  fi
done

if [[ $failed -ne 0 ]]; then exit 1; fi
say "ok: ${#cases[@]} renderings deterministic; ${#manifests[@]} files, $n_docs objects valid for Kubernetes $K8S_VERSION (--strict); two broken Pods rejected; $n_pm PodMonitor rendered, not validated (no schema)"
