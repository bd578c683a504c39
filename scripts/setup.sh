#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine to build and test sluice, then builds it.
#
#   scripts/setup.sh [--no-build] [--build-dir DIR]
#
# 1. Installs whichever of the packages below are missing (apt-get update runs
#    only if something is missing). Needs root, or sudo.
# 2. Fetches Apache Kafka's jars once into a cache outside the build folder
#    (scripts/kafka.sh fetch: about a minute the first time, nothing after).
# 3. Gives the python3 on PATH (perhaps a pyenv build, not Debian's) numpy,
#    with pip where it has none: the Python module's arrays; and pyzmq,
#    experiments/api_bench.py's baseline (the module never imports it).
# 4. Configures and builds: cmake -S . -B DIR -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo,
#    the Python module for that python3 among the rest, and makes it importable
#    there (a sluice.pth in its site-packages naming DIR/python).
#
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config python3 iproute2
  libfabric-dev libucx-dev libasio-dev capnproto libcapnp-dev
  libspdlog-dev libfmt-dev prometheus-cpp-dev libyaml-cpp-dev libcli11-dev
  libbenchmark-dev libgtest-dev libxxhash-dev python3-xxhash
  nlohmann-json3-dev         # JSON summaries and reports, written and read
  clang libclang-rt-14-dev   # sanitizer and libFuzzer runtimes for clang builds
  prometheus                 # sluice-deploy run --prometheus, and its test
  tmux                       # the live table's test: a run on a terminal, captured
  python3-matplotlib         # experiments/reproduce.py: the plots of REPORT.md
  chromium                   # the console's test: the page in headless Chromium
  openssh-client openssh-server   # the ssh launcher, and its test (sshd in namespaces)
  slurm-wlm munge            # the slurm launcher, and its test (scripts/slurm-cluster.sh)
  python3-venv               # scripts/k8s-validate.sh: the pinned kubernetes-validate in BUILD/k8s-venv
  librdkafka-dev             # the Kafka source and sink (connect/kafka/)
  kcat                       # scripts/kafka.sh's readiness check; the kcat pipe of experiments/connectors.py
  maven openjdk-17-jdk-headless   # scripts/kafka.sh: Apache Kafka's jars from Maven Central, on OpenJDK 17
  pybind11-dev python3-dev python3-numpy   # the Python module (python/), for Debian's python3 too
)

build=1
build_dir=build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --build-dir) build_dir="${2:?--build-dir needs a directory}"; shift ;;
    --build-dir=*) build_dir="${1#*=}" ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "setup.sh: $*"; }

cd "$(dirname "$0")/.."

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  say "all ${#PACKAGES[@]} packages already installed"
else
  if [[ $(id -u) -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "setup.sh: missing packages (${missing[*]}) and not root, and no sudo to install them" >&2
    exit 1
  fi
  say "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The Kafka tests' broker (scripts/kafka.sh), fetched now while Maven Central
# is reachable; the tests need no network after.
scripts/kafka.sh fetch

# numpy for the python3 the README's commands run (python/ builds the module
# for it). Debian's python3-numpy serves /usr/bin/python3 only.
if ! python3 -c "import numpy" 2>/dev/null; then
  say "installing numpy for $(command -v python3) with pip"
  python3 -m pip install --quiet numpy
fi
# pyzmq: only the baseline rows of experiments/api_bench.py (pyzmq, pyzmq-1tuple).
if ! python3 -c "import zmq" 2>/dev/null; then
  say "installing pyzmq for $(command -v python3) with pip (experiments/api_bench.py's baseline)"
  python3 -m pip install --quiet pyzmq
fi

if [[ $build -eq 0 ]]; then
  say "--no-build: not building"
  exit 0
fi

say "configuring $build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
say "building $build_dir"
cmake --build "$build_dir"
# `import sluice` for the python3 on PATH: its site-packages names the built
# module's folder (cmake --install puts a copy under its prefix instead).
if ls "$build_dir"/python/sluice*.so >/dev/null 2>&1; then
  site=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['platlib'])")
  if echo "$(cd "$build_dir/python" && pwd)" > "$site/sluice.pth" 2>/dev/null; then
    say "import sluice: $site/sluice.pth names $build_dir/python"
  else
    say "cannot write $site/sluice.pth: run Python programs with PYTHONPATH=$build_dir/python"
  fi
fi
# The Kubernetes manifests' validator (the k8s_manifests_valid test), made now
# while PyPI is reachable; the test needs no network after. Not fatal: without
# it that test skips and says why.
scripts/k8s-validate.sh --setup-only --build-dir "$build_dir" ||
  say "no venv for scripts/k8s-validate.sh: the test k8s_manifests_valid will skip"
say "done"
