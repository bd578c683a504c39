#!/bin/bash
# Kills node-a as soon as the load generator has started, with acks and restart on.
i=$1
cd "$(dirname "$0")/../../.."  # the repository root
rm -rf /tmp/ek$i
build/deploy/sluice-deploy run deploy/examples/pipeline.yaml --run-dir /tmp/ek$i --set acks=on --set restart=on-failure --set duration_s=2 > /tmp/ek$i.out 2>&1 &
dp=$!
for _ in $(seq 2000); do pgrep -f "sluice-loadgen" >/dev/null && break; sleep 0.001; done
pkill -9 -f "sluice-node.*node-a" 
wait $dp; echo "run $i rc=$?"
grep -E "restart|lost|HelloReply|went away" /tmp/ek$i.out | head -5
grep -l "went away" /tmp/ek$i/*.log 2>/dev/null
