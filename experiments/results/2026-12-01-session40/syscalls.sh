#!/bin/bash
# System calls per frame, by process and by thread, of one demo-pipeline run
# (perf's syscall tracepoints, system-wide; frames = tuples / 512 at 128 B
# tuples in 32 KiB events, two events a frame). From the repository root:
#   BUILD=build bash syscalls.sh NAME "acks=on slots=64"
# Needs perf; the traced run is slower than an untraced one (count per
# frame, not per second).
set -euo pipefail
name=$1; v=${2:-}; build=${BUILD:-build}
sets=(); for s in $v; do sets+=(--set "$s"); done
f=/tmp/syscalls-$name.data
ev=write,read,poll,futex,sendto,recvfrom,epoll_wait,recvmsg,sendmsg
flock /tmp/cpu.lock perf record -q -a -e "$(sed 's/\([a-z_][a-z_]*\)/syscalls:sys_enter_\1/g' <<<"$ev")" -o "$f" \
  "$build"/deploy/sluice-deploy run deploy/examples/pipeline.yaml --json --run-dir /tmp/syscalls-run \
  --set duration_s=3 --set progress_s=0 "${sets[@]}" > /tmp/syscalls-$name.json 2>/dev/null
fr=$(python3 -c "import json;print(json.load(open('/tmp/syscalls-$name.json'))['tuples']//512)")
echo "== $name ($build) $v: $fr frames"
perf script -i "$f" -F comm,tid,event 2>/dev/null | grep -E '^ *sluice-(loadgen|node|sink)' |
  awk -v fr="$fr" '{c[$1" "$2" "$3]++; t[$1]++} END{for(k in c) if (c[k]/fr>0.01) printf "%.3f %s\n", c[k]/fr, k;
                    for (k in t) printf "%.3f %s all\n", t[k]/fr, k}' |
  sed 's/syscalls:sys_enter_//' | sort -k2,2 -k3n
rm -f "$f"
