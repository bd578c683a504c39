#!/usr/bin/env bash
# What needs a machine without contention, in one call on a machine where
# sluice cannot be built (many cores, nothing installed): a smoke run of
# each carrier, then the reliability, scaling and latency measurements, each a
# ratio against a baseline run beside it.
#
#   here:   bash scripts/device-bundle.sh         # .devbundle/, about 20 MiB
#   there:  copy the tree with .devbundle/, then
#           bash experiments/device_check.sh     # about 6 minutes on 2 cores
#
#   1. each carrier (tcp-opt, fabric-opt, ucx-opt): a 1 s pipeline, lost 0;
#      then experiments/syscall_gaps/gaps.py --plain at 20,000 events/s
#   2. acks_cost.py, ROUNDS15 rounds (default 12) of acks off, acks alone,
#      acks with the sink's snapshots, acks with the nodes keeping copies
#      (node_backup: copies), and acks with 64 slots per link (where a link
#      with acks into a node that holds slots has 128), back to back
#   3. scaling.py (RSCALE rounds, default 3): tcp-opt's node cycles per
#      tuple and tuples/s against the plain relays' at 128 B and 4 KiB tuples
#      in 32 KiB events (with the guarantee key, also guarantee=none), the
#      demo pipeline at parallelism 1 against 4 (and pinned, pin=spread),
#      deploy/examples/esper_parallel.yaml's input tuples/s at 1 against 4
#      and its rows with the group-by as 4 processes against one, fabric shm
#      against tcp-opt; $OUT/scaling.md and scaling.json
#   4. latency.py at 2,000 and 20,000 one-tuple events/s, adaptive (acks
#      off, and on) against plain socket relays, ROUNDS17 rounds (default
#      8); and adaptive with slots: 1024, where a credit message goes once
#      per 256 frames, not 16, so few events meet one at a hop
#   5. (only when STEPS names it) reproduce: `reproduce.py --runs-only --only
#      baseline,sockets,demo`, the runs that REPORT.md's first two sections
#      read: the plain-socket relays at the start and the end, original and
#      tcp-opt at 12 B to 4 KiB tuples in one-tuple and 32 KiB events (16
#      cells), and the demo pipeline as it is; RREPRO repeats (default 3) of
#      2 s runs (the demo's own 5 s): 48 + 3 + 2 = 53 runs, each lasting
#      its duration and about 0.1 s more: 2 minutes on 2 cores, and a run's
#      length does not grow with the cores.
#      $OUT/runs.csv (about 2 KB a run, 100 KB) is what comes back: here,
#      `reproduce.py --report-only --other-machine runs.csv` gives that
#      machine columns of its own in those two sections
#
# Output goes to $OUT, or to runs/device-check/. Run directories and raw
# logs go to runs/device-check-work/, so $OUT stays small enough to copy
# back. QUICK=1: one round of each (scaling.py's and reproduce's runs 1 s),
# to try the script here. STEPS=smoke,gaps,acks,scaling,latency (the
# default: all but reproduce) runs those only: where one call may run 10
# minutes at most, the scaling figures take a call of their own (about 5
# minutes on 16 cores),
#   STEPS=smoke,scaling bash experiments/device_check.sh
# and reproduce runs only when named (about 2 minutes; with smoke, or alone):
#   STEPS=smoke,reproduce bash experiments/device_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bundle=.devbundle
if [[ ! -x $bundle/build/deploy/sluice-deploy ]]; then
  echo "device_check.sh: no $bundle: make it first (bash scripts/device-bundle.sh)" >&2
  exit 1
fi
# shellcheck source=/dev/null
source $bundle/env.sh
out=${OUT:-runs/device-check}
# Run directories and raw logs stay off $OUT: a run leaves a hundred files.
work=runs/device-check-work
mkdir -p "$out" "$work"
r15=${ROUNDS15:-12}
r17=${ROUNDS17:-8}
rscale=${RSCALE:-3}
rrepro=${RREPRO:-3}
sdur=3 stuples=2000000 rdur=2
if [[ ${QUICK:-0} == 1 ]]; then r15=1; r17=1; rscale=1; sdur=1; stuples=200000; rrepro=1; rdur=1; fi
say() { echo "device_check.sh: $(date +%T) $*" | tee -a "$out/steps.txt"; }
steps=",${STEPS:-smoke,gaps,acks,scaling,latency},"   # reproduce: only when named
want() { [[ $steps == *",$1,"* ]]; }

{
  echo "bundle of $(cat $bundle/commit 2>/dev/null || echo '?')"
  uname -a
  echo "cpus: $(nproc)"
  grep -m1 'model name' /proc/cpuinfo || true
  free -g | head -2
} > "$out/machine.txt"
say "$(nproc) cpus; bundle of $(cat $bundle/commit 2>/dev/null || echo '?')"

want smoke && for preset in tcp-opt fabric-opt ucx-opt; do
  if ! $bundle/build/deploy/sluice-deploy run deploy/examples/pipeline.yaml --json \
      --set preset=$preset --set duration_s=1 --set progress_s=0 \
      --run-dir "$work/smoke-$preset" > "$out/smoke-$preset.json" 2> "$out/smoke-$preset.err"; then
    say "smoke $preset FAILED: $(tail -3 "$out/smoke-$preset.err")"
    exit 1
  fi
  summary=$(python3 - "$out/smoke-$preset.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{j['tuples_per_s'] / 1e6:.1f} M tuples/s, lost {j['lost']}, ok {j['ok']}")
PY
)
  say "smoke $preset: $summary"
done

if want gaps && [[ -f $bundle/build/experiments/syscall_gaps/syscall_gaps.so ]]; then
  say "syscall gaps at 20,000 events/s (each hop's user time; the plain relays beside)"
  python3 experiments/syscall_gaps/gaps.py --build $bundle/build --rate 20000 --plain \
    > "$out/gaps.txt" 2>&1 || say "gaps.py failed: $(tail -2 "$out/gaps.txt")"
fi

if want scaling; then
say "scaling: scaling.py, $rscale rounds: a node against the relays, parallelism 1 against 4, esper, fabric shm"
# Where the deployment has a guarantee key (acks on by default), the hop
# also runs with guarantee=none beside the default.
vars=()
if $bundle/build/deploy/sluice-deploy check deploy/examples/pipeline.yaml --set guarantee=none >/dev/null 2>&1; then
  vars=(--variant none:guarantee=none)
fi
python3 experiments/scaling.py --build $bundle/build --rounds "$rscale" --duration "$sdur" --pin \
  --esper-tuples "$stuples" --parts hop,parallel,esper,fabric "${vars[@]}" --out "$work/scaling" --json \
  > "$out/scaling.json" 2> "$out/scaling.txt" || say "scaling.py failed: $(tail -2 "$out/scaling.txt")"
cp "$work/scaling/scaling.md" "$out/" 2>/dev/null || true
fi

if want acks; then
say "reliability: acks_cost.py, $r15 rounds"
python3 experiments/acks_cost.py --build $bundle/build --repeats "$r15" --duration 3 \
  --variant acks --variant snapshots:checkpoint_interval_ms=50 \
  --variant acks-copies:node_backup=copies --variant acks-64:slots=64 | tee "$out/acks_cost.txt"
fi

if want latency; then
say "latency: latency.py, $r17 rounds"
python3 experiments/latency.py --build $bundle/build --modes "adaptive,adaptive+acks=on,adaptive+slots=1024" --plain plain \
  --rates 2000,20000 --tuple-bytes 128 --rounds "$r17" --duration 3 --idle-rate 0 \
  --no-batched --out "$work/latency" | tee "$out/latency.txt"
mkdir -p "$out/latency"
cp "$work"/latency/*.md "$work"/latency/*.csv "$work"/latency/*.png "$work"/latency/*.json "$out/latency/" 2>/dev/null || true
fi
if want reproduce; then
say "reproduce: reproduce.py --runs-only --only baseline,sockets,demo, $rrepro repeat(s) of $rdur s runs"
# The runs' commit column: the bundle's (the tree here may have no git).
commit=$(cat $bundle/commit 2>/dev/null || true)
rm -rf "$work/reproduce"
if ! SLUICE_COMMIT=$commit python3 experiments/reproduce.py --runs-only --build $bundle/build \
    --only baseline,sockets,demo --repeat "$rrepro" --duration "$rdur" --out "$work/reproduce" \
    2>&1 | tee "$work/reproduce.txt"; then
  say "reproduce.py: a run failed (its error column in runs.csv): $(tail -2 "$work/reproduce.txt")"
fi
if [[ -f $work/reproduce/runs.csv ]]; then
  cp "$work/reproduce/runs.csv" "$out/runs.csv"
  say "reproduce: $out/runs.csv, $(( $(wc -l < "$out/runs.csv") - 1 )) runs, $(( $(wc -c < "$out/runs.csv") / 1024 )) KiB"
fi
fi
say "done"
