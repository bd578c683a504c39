#!/bin/bash
# What each thread of the pipeline's processes does at 2,000 one-tuple events/s (threads: adaptive).
# sample per-thread voluntary ctx switches of sluice processes over 2 s mid-run
cd "$(dirname "$0")/../../.."  # the repository root
build/deploy/sluice-deploy run deploy/examples/pipeline.yaml --set threads=adaptive --set event_bytes=0 --set rate=2000 --set duration_s=6 --set base_port=23400 > /tmp/ctxrun.log 2>&1 &
sleep 2.5
snap() { for p in $(pgrep -f 'sluice-(node|loadgen|sink)' ); do for t in /proc/$p/task/*; do echo "$p $(basename $t) $(cat $t/comm) $(grep voluntary_ctxt_switches $t/status | head -1 | awk '{print $2}') $(awk '{print $14+$15}' $t/stat)"; done; done; }
snap > /tmp/s1; sleep 2; snap > /tmp/s2
join <(awk '{print $1"/"$2, $3, $4, $5}' /tmp/s1 | sort) <(awk '{print $1"/"$2, $4, $5}' /tmp/s2 | sort) | awk '{printf "%s %-16s wakes/s %7.0f  cpu_ticks %d\n", $1, $2, ($5-$3)/2, $6-$4}'
for p in $(pgrep -f 'sluice-(node|loadgen|sink)'); do echo "$p $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-80)"; done
wait
