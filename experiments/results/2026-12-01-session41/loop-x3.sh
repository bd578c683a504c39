#!/bin/bash
# The fabric shm three-kill row N times; a run past 40 s gets its stacks dumped and is left to faults.py's timeout.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/exp
for i in $(seq 1 ${1:-30}); do
  python3 experiments/faults.py --duration 5 --only x3 --carriers "fabric shm" --out /tmp/exp/l3_$i.md > /tmp/exp/l3_$i.log 2>&1 &
  fp=$!; t0=$SECONDS; dumped=0
  while kill -0 $fp 2>/dev/null; do
    sleep 2
    if (( SECONDS - t0 > 40 && dumped == 0 )); then
      dumped=1; echo "run $i: past 40 s, dumping"
      for pid in $(pgrep -f 'sluice-(node|loadgen|sink)'); do
        echo "=== $pid $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-200)"
        gdb -p $pid -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^#|^Thread'
      done > /tmp/exp/l3stacks$i.txt
    fi
  done
  echo "run $i: $(grep -E "^\s+\('fabric" /tmp/exp/l3_$i.log | cut -c1-140)"
done
echo "freed-lock warnings: $(grep -l 'libfabric shm: a call has waited' /tmp/sluice-faults-*/run/*.log 2>/dev/null | wc -l)"
grep -h 'libfabric shm: a call has waited' /tmp/sluice-faults-*/run/*.log 2>/dev/null | cut -c1-250
