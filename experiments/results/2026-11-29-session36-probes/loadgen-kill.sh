#!/bin/bash
# Kills the load generator 2 s into a 4 s run at 2,000 events/s, acks and restart on.
cd "$(dirname "$0")/../../.."  # the repository root
D=${1:-build}; i=${2:-1}; shift 2
rm -rf /tmp/lk$i
$D/deploy/sluice-deploy run deploy/examples/pipeline.yaml --run-dir /tmp/lk$i --set acks=on --set restart=on-failure --set restart_backoff_ms=200 --set duration_s=4 --set rate=2000 --set progress_s=0 "$@" > /tmp/lk$i.out 2>&1 &
dp=$!
for _ in $(seq 2000); do pgrep -f "sluice-loadgen.*/tmp/lk$i/" >/dev/null && break; sleep 0.01; done
sleep 2
pkill -9 -f "sluice-loadgen.*/tmp/lk$i/"
wait $dp; echo "run $i rc=$? $(( $(date +%s%N) ))"
grep -E "^pipeline|restarts:" /tmp/lk$i.out
grep -h "resum\|position" /tmp/lk$i/loadgen*.log | head -3
