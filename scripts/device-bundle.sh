#!/usr/bin/env bash
# Packs what the pipeline needs on a machine where sluice cannot be built
# (nothing can be installed there): the programs of a build, stripped, and the shared libraries they
# load (glibc's own excepted: the machine's newer one runs them), under
# OUT (default .devbundle, which git ignores).
#
#   bash scripts/device-bundle.sh [--build build] [--out .devbundle]
#
# There: `source .devbundle/env.sh`, then any script with
# `--build .devbundle/build`; experiments/device_check.sh does both. Above
# 64 MiB it fails: a bundle is meant to be small enough to copy around.
set -euo pipefail

build=build
out=.devbundle
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="${2:?--build needs a directory}"; shift ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "device-bundle.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
cd "$(dirname "$0")/.."

progs=(deploy/sluice-deploy loadgen/sluice-loadgen node/sluice-node sink/sluice-sink
       experiments/sluice-plainrelay)
for p in "${progs[@]}"; do
  [[ -x "$build/$p" ]] || { echo "device-bundle.sh: no $build/$p: build it first (ninja -C $build)" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out/lib/ucx"
for p in "${progs[@]}"; do
  mkdir -p "$out/build/$(dirname "$p")"
  strip -o "$out/build/$p" "$build/$p"
done

# The syscall_gaps library (experiments/syscall_gaps/gaps.py), where built:
# it is preloaded, not linked, so it travels beside the programs.
gaps=experiments/syscall_gaps/syscall_gaps.so
if [[ -f "$build/$gaps" ]]; then
  mkdir -p "$out/build/$(dirname "$gaps")"
  strip -o "$out/build/$gaps" "$build/$gaps"
fi

# UCX loads its transports as modules, from UCX_MODULE_DIR.
ucx_dir=$(dirname "$(ldconfig -p | awk '/libucp\.so\.0 / {print $NF; exit}')")/ucx
mods=()
if [[ -d "$ucx_dir" ]]; then
  for m in "$ucx_dir"/*.so.0; do
    [[ -e "$m" ]] || continue
    cp -L "$m" "$out/lib/ucx/"
    mods+=("$m")
  done
fi

# libfabric is opened only when a fabric link needs it (dlopen), so ldd
# does not name it: it goes too, with what it loads.
fabric=$(ldconfig -p | awk '/libfabric\.so\.1 / {print $NF; exit}')
[[ -n "$fabric" ]] && cp -L "$fabric" "$out/lib/"

# Every library the programs and modules load, but glibc's own.
ldd "${progs[@]/#/$build/}" "${mods[@]}" ${fabric:+"$fabric"} 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done

cat > "$out/env.sh" <<'ENV'
# Sourced before running the bundle's programs.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export UCX_MODULE_DIR="$here/lib/ucx"
ENV
git rev-parse --short HEAD > "$out/commit" 2>/dev/null || true

mib=$(( $(du -sb "$out" | cut -f1) / 1048576 ))
echo "device-bundle.sh: $out: ${#progs[@]} programs, $(ls "$out/lib" | grep -c '\.so') libraries, ${#mods[@]} UCX modules, $mib MiB"
if (( mib >= 64 )); then
  echo "device-bundle.sh: $mib MiB, more than a bundle may be (64 MiB)" >&2
  exit 1
fi
