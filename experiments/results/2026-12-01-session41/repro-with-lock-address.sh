#!/bin/bash
# as repro-x3-hang.sh, also the spin lock's address and the maps of every process
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/exp
for i in $(seq 1 ${1:-8}); do
  python3 experiments/faults.py --duration 5 --only x3 --carriers "fabric shm" --out /tmp/exp/rep$i.md > /tmp/exp/rep$i.log 2>&1 &
  fp=$!; t0=$SECONDS; dumped=0
  while kill -0 $fp 2>/dev/null; do
    sleep 2
    if (( SECONDS - t0 > 32 && dumped == 0 )); then
      dumped=1; echo "run $i: past 32 s, dumping"
      for pid in $(pgrep -f 'sluice-(node|loadgen|sink)'); do
        echo "=== $pid $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-200)"
        gdb -p $pid -batch -ex 'thread apply all bt' -ex 'thread apply all p/x $rdi' 2>/dev/null | grep -E '^#|^Thread|^\$'
        cp /proc/$pid/maps /tmp/exp/maps.$pid
        ls -la /proc/$pid/map_files/ > /tmp/exp/mapfiles.$pid 2>&1
      done > /tmp/exp/stacks$i.txt
      ls -la /dev/shm > /tmp/exp/devshm$i.txt
    fi
  done
  grep -E "^\s+\('fabric" /tmp/exp/rep$i.log | cut -c1-160
  [[ $dumped == 1 ]] && break
done
