#!/usr/bin/env bash
# The cost of the metrics endpoint: the tcp-opt demo pipeline with
# `metrics: on` and `metrics: off`, interleaved (drift hits both alike), and
# once more with on plus a scrape of every process each second
# (--prometheus), as a dashboard would.
#
#   experiments/metrics_cost.sh [REPEATS] [DURATION_S]    (default 5 and 4)
#
# Prints one line per run, then the median tuples/s per set-up and its ratio
# to `off`; writes results.csv and results.md under
# runs/metrics-cost-<date>/ (OUT=DIR: elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-5}
duration=${2:-4}
deploy=build/deploy/sluice-deploy
file=deploy/examples/pipeline.yaml
out=${OUT:-runs/metrics-cost-$(date +%Y-%m-%d-%H%M%S)}
mkdir -p "$out"
csv=$out/results.csv
runs=$(mktemp -d "${TMPDIR:-/tmp}/sluice-metrics-cost.XXXXXX")
trap 'rm -rf "$runs"' EXIT
echo "setup,repeat,tuples_per_s,gbps,node_a_cpe_p" >"$csv"

run() {  # NAME REPEAT ARGS...
  local name=$1 rep=$2
  shift 2
  local json
  json=$("$deploy" run "$file" --json --set duration_s="$duration" --set progress_s=0 \
           --run-dir "$runs/$name-$rep" "$@" 2>"$runs/$name-$rep.err") ||
    { echo "run $name $rep failed:" >&2; tail -5 "$runs/$name-$rep.err" >&2; exit 1; }
  python3 -c '
import json, sys
j = json.loads(sys.argv[3])
na = [p for p in j["processes"] if p["name"] == "node-a"][0]
print("%s,%s,%.0f,%.2f,%.0f" % (sys.argv[1], sys.argv[2], j["tuples_per_s"], j["gbps"], na["cpe_p"]))
' "$name" "$rep" "$json" | tee -a "$csv"
}

for rep in $(seq 1 "$repeats"); do
  run off "$rep" --set metrics=off
  run on "$rep" --set metrics=on
  run on-scraped "$rep" --set metrics=on --prometheus
done

python3 - "$csv" <<'PY' | tee "$out/results.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for s in dict.fromkeys(r["setup"] for r in rows):
    med[s] = statistics.median(float(r["tuples_per_s"]) for r in rows if r["setup"] == s)
print("| set-up | tuples/s median (min-max) | against off | node-a CPE_p median |")
print("|---|---|---|---|")
for s in med:
    t = [float(r["tuples_per_s"]) for r in rows if r["setup"] == s]
    c = statistics.median(float(r["node_a_cpe_p"]) for r in rows if r["setup"] == s)
    print(f"| {s} | {med[s]/1e6:.2f} M ({min(t)/1e6:.2f}-{max(t)/1e6:.2f}) | {med[s]/med['off']:.3f}x | {c:.0f} |")
PY
echo "results: $csv, $out/results.md"
