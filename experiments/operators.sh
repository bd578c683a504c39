#!/usr/bin/env bash
# The study's operator comparison through the real pipeline: 12-byte tuples
# (seq, key u32), one node between loadgen(s) and a sink running
#   pass       no operator (the baseline)
#   filter     filter where "key < 512" (about half pass)
#   union      no operator, two loadgens into it
#   aggregate  groupby key, count, tumbling windows of 1000 tuples
# and the node's CPE_p of each, in interleaved rounds (drift hits all alike);
# medians and their ratio to `pass`.
#
#   flock /tmp/cpu.lock experiments/operators.sh [ROUNDS] [TUPLES]   (default 3 and 4000000)
#
# Writes results.csv and results.md under
# runs/operators-<date>/ (OUT=DIR: elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
tuples=${2:-4000000}
deploy=build/deploy/sluice-deploy
out=${OUT:-runs/operators-$(date +%Y-%m-%d-%H%M%S)}
mkdir -p "$out"
csv=$out/results.csv
runs=$(mktemp -d "${TMPDIR:-/tmp}/sluice-operators.XXXXXX")
trap 'rm -rf "$runs"' EXIT
echo "setup,round,node_cpe_p,node_tuples_in,tuples_per_s" >"$csv"

head="preset: tcp-opt
tuple_bytes: 12
tuples: $tuples
progress_s: 0
base_port: 19100
"
cat >"$runs/pass.yaml" <<Y
${head}processes:
  - {name: loadgen, role: loadgen}
  - {name: node, role: node}
  - {name: sink, role: sink}
Y
cat >"$runs/filter.yaml" <<Y
${head}processes:
  - {name: loadgen, role: loadgen}
  - {name: node, role: node, operators: [{filter: {where: "key < 512"}}]}
  - {name: sink, role: sink}
Y
cat >"$runs/union.yaml" <<Y
${head}processes:
  - {name: gen-1, role: loadgen}
  - {name: gen-2, role: loadgen}
  - {name: node, role: node}
  - {name: sink, role: sink}
links:
  - {from: gen-1, to: node}
  - {from: gen-2, to: node}
  - {from: node, to: sink}
Y
cat >"$runs/aggregate.yaml" <<Y
${head}processes:
  - {name: loadgen, role: loadgen}
  - {name: node, role: node, operators: [{groupby: {group_by: key, aggregates: count, window: count, size: 1000, max_groups: 1024}}]}
  - {name: sink, role: sink}
Y

run() {  # SETUP ROUND
  local json
  json=$("$deploy" run "$runs/$1.yaml" --json --run-dir "$runs/$1-$2" 2>"$runs/$1-$2.err") ||
    { echo "run $1 $2 failed:" >&2; tail -5 "$runs/$1-$2.err" >&2; exit 1; }
  python3 -c '
import json, sys
j = json.loads(sys.argv[3])
assert j["lost"] == 0 and j["corrupt"] == 0, (j["lost"], j["corrupt"])
n = [p for p in j["processes"] if p["name"] == "node"][0]
print("%s,%s,%.1f,%d,%.0f" % (sys.argv[1], sys.argv[2], n["cpe_p"], n.get("tuples_in", 0), j["tuples_per_s"]))
' "$1" "$2" "$json" | tee -a "$csv"
}

for r in $(seq 1 "$rounds"); do
  for s in pass filter union aggregate; do run "$s" "$r"; done
done

python3 - "$csv" <<'PY' | tee "$out/results.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {s: statistics.median(float(r["node_cpe_p"]) for r in rows if r["setup"] == s)
       for s in dict.fromkeys(r["setup"] for r in rows)}
print("| node runs | CPE_p median (min-max) | against pass | tuples/s median |")
print("|---|---|---|---|")
for s in med:
    c = [float(r["node_cpe_p"]) for r in rows if r["setup"] == s]
    t = statistics.median(float(r["tuples_per_s"]) for r in rows if r["setup"] == s)
    print(f"| {s} | {med[s]:.0f} ({min(c):.0f}-{max(c):.0f}) | {med[s]/med['pass']:.2f}x | {t/1e6:.2f} M |")
PY
echo "results: $csv, $out/results.md"
