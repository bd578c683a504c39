#!/bin/bash
# A few kills on the examples the fault tests and the soak do not run: union, split, query.
cd "$(dirname "$0")/../../.."  # the repository root
one() {  # name file victim delay sets...
  local name=$1 file=$2 victim=$3 delay=$4; shift 4
  local dir=/tmp/uf-$name; rm -rf $dir
  local args=""; for k in "$@"; do args="$args --set $k"; done
  build/deploy/sluice-deploy run deploy/examples/$file --run-dir $dir --json --set progress_s=0 --set base_port=28600 $args > $dir.json 2> $dir.err &
  local sup=$!
  if [ -n "$victim" ]; then sleep $delay; pkill -9 -f "run-dir $dir\b.*--process $victim |$dir/resolved.yaml --process $victim " ; fi
  wait $sup; local rc=$?
  python3 - "$dir.json" "$name" "$rc" <<'P'
import json,sys
try: j=json.load(open(sys.argv[1]))
except Exception as e: print(sys.argv[2], "rc", sys.argv[3], "no json", e); sys.exit()
print(f"{sys.argv[2]:28s} rc {sys.argv[3]} ok {j['ok']} tuples {j['tuples']} lost {j['lost']} dup {j['duplicated']} replayed {j['replayed']} dedup {j['deduplicated']} restarts {j['restarts']} err {j.get('error','')[:150]}")
P
}
R="acks=on restart=on-failure restart_backoff_ms=200 rate=2000 duration_s=4"
one union-none union.yaml "" 0 $R
one union-kill-node union.yaml node-a 1.5 $R
one union-kill-gen union.yaml gen-1 1.5 $R
one split-kill-node split.yaml node-a 1.5 $R
one split-kill-sink split.yaml sink-2 1.5 $R checkpoint_interval_ms=50
one query-kill-b query.yaml node-b 0.3 acks=on restart=on-failure restart_backoff_ms=200 checkpoint_interval_ms=50 rate=20000
one query-none query.yaml "" 0 acks=on checkpoint_interval_ms=50 rate=20000
