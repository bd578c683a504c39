#!/bin/bash
# strace -c of node-a for 2 s at 2,000 one-tuple events/s (threads: adaptive); the table in /tmp/strace.node.
cd "$(dirname "$0")/../../.."  # the repository root
build/deploy/sluice-deploy run deploy/examples/pipeline.yaml --set threads=adaptive --set event_bytes=0 --set rate=2000 --set duration_s=6 --set base_port=23400 > /tmp/ctxrun.log 2>&1 &
sleep 2.5
p=$(pgrep -f 'sluice-node' | head -1)
timeout 2 strace -f -c -p $p -o /tmp/strace.node 2>/dev/null
p=$(pgrep -f 'sluice-loadgen' | head -1)
wait
