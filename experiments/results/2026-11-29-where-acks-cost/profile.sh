#!/bin/bash
# A whole-machine CPU profile of the demo pipeline at full rate (perf's
# cpu-clock: no hardware counters on this VM), 4 s from 2.5 s into a 7 s run.
#   bash profile.sh NAME [k=v ...]      e.g. bash profile.sh ack acks=on
#   perf report -i NAME.data --sort comm,sym --stdio | head -60
name=$1; shift
sets=(); for s in "$@"; do sets+=(--set "$s"); done
build/deploy/sluice-deploy run deploy/examples/pipeline.yaml --set duration_s=7 --set base_port=31200 \
  --set progress_s=0 --set tuple_bytes=128 --set event_bytes=32768 "${sets[@]}" > "$name.txt" 2>&1 &
sleep 2.5
perf record -e cpu-clock -F 2000 -a -o "$name.data" -- sleep 4 2>/dev/null
wait
grep '^pipeline:' "$name.txt"
