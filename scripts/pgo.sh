#!/usr/bin/env bash
# Builds sluice's programs with profile-guided optimization:
#
#   scripts/pgo.sh [--build-dir DIR]     (default build-pgo; about 11 minutes on 2 cores)
#
# 1. Configures DIR with -DSLUICE_PGO=generate and builds sluice-deploy,
#    -loadgen, -node and -sink instrumented.
# 2. Trains: runs deploy/examples/pipeline.yaml from DIR, one-tuple events at
#    2,000 and 20,000 events/s, then full rate with 32 KiB events on tcp-opt,
#    ucx-opt and fabric-opt. The counts land in DIR/pgo-profile.
# 3. Reconfigures DIR with -DSLUICE_PGO=use and builds the four again.
#
# Then run DIR/deploy/sluice-deploy as you would build/deploy/sluice-deploy.
# What it buys, measured on the 2-core VM: docs/RUNNING.md, "Building for
# latency". Needs what scripts/setup.sh installs (run that first).
set -euo pipefail

build_dir=build-pgo
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="${2:?--build-dir needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pgo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/.."
targets=(sluice-deploy sluice-loadgen sluice-node sluice-sink)
profile="$build_dir/pgo-profile"
say() { echo "pgo.sh: $*" >&2; }

say "1/3: instrumented build in $build_dir"
rm -rf "$profile"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_PGO=generate \
  -DSLUICE_PGO_DIR="$PWD/$profile" >/dev/null
cmake --build "$build_dir" --target "${targets[@]}"

say "2/3: training runs"
train() {
  local what="$1"; shift
  say "  $what"
  if ! "$build_dir/deploy/sluice-deploy" run deploy/examples/pipeline.yaml --run-dir "$build_dir/pgo-train" \
      --set progress_s=0 "$@" >"$build_dir/pgo-train.log" 2>&1; then
    tail -20 "$build_dir/pgo-train.log" >&2
    say "training run failed ($what): nothing rebuilt; the instrumented build is left in $build_dir"
    exit 1
  fi
}
train "one-tuple events, 2,000/s" --set event_bytes=0 --set rate=2000 --set duration_s=4
train "one-tuple events, 20,000/s" --set event_bytes=0 --set rate=20000 --set duration_s=3
train "32 KiB events, tcp-opt" --set preset=tcp-opt --set duration_s=3
train "32 KiB events, ucx-opt" --set preset=ucx-opt --set duration_s=3
train "32 KiB events, fabric-opt" --set preset=fabric-opt --set duration_s=3
[[ -n "$(find "$profile" -name '*.gcda' -print -quit 2>/dev/null)" ]] ||
  { say "the training wrote no profile to $profile"; exit 1; }

say "3/3: build with the profile"
cmake -S . -B "$build_dir" -DSLUICE_PGO=use >/dev/null
cmake --build "$build_dir" --target "${targets[@]}"
say "done: $build_dir/deploy/sluice-deploy"
