#!/usr/bin/env bash
# tcp-opt's Gb/s on four hosts: the local launcher (every host this machine,
# on 127.0.9.x) against four network-namespace hosts, with no rate and with
# a 10gbit rate on every host. One file (deploy/examples/cluster.yaml), the
# three set-ups interleaved so drift on a shared machine hits each alike.
#
#   experiments/netns_compare.sh [REPEATS] [DURATION_S]    (default 3 and 5)
#   OUT=DIR experiments/netns_compare.sh ...   (a folder of your choosing)
#
# Needs root (netns). Prints one line per run, then the median and range per
# set-up; writes runs/netns-<stamp>/results.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
duration=${2:-5}
deploy=build/deploy/sluice-deploy
file=deploy/examples/cluster.yaml
out=${OUT:-runs/netns-$(date +%Y-%m-%d-%H%M%S)}
mkdir -p "$out"
csv=$out/results.csv
runs=$(mktemp -d "${TMPDIR:-/tmp}/sluice-netns-compare.XXXXXX")  # logs: not results
trap 'rm -rf "$runs"' EXIT
echo "setup,repeat,gbps,tuples_per_s,lost,duplicated,node_a_cpe_p" >"$csv"

local_addrs=()
for i in 0 1 2 3; do local_addrs+=(--set "hosts.$i.address=127.0.9.$((i + 1))"); done

run() {  # NAME ARGS...
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
print("%s,%s,%.2f,%.0f,%d,%d,%.0f" % (sys.argv[1], sys.argv[2], j["gbps"], j["tuples_per_s"],
      j["lost"], j["duplicated"], na["cpe_p"]))
' "$name" "$rep" "$json" | tee -a "$csv"
}

for rep in $(seq 1 "$repeats"); do
  run local "$rep" --launcher local "${local_addrs[@]}"
  run netns "$rep" --launcher netns --set host_rate=0
  run netns-10gbit "$rep" --launcher netns --set host_rate=10gbit
done

{ echo "# netns_compare.sh $repeats rounds of ${duration} s, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(uname -r), commit $(git rev-parse --short HEAD 2>/dev/null)"
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("\n| set-up | Gb/s median (min-max) | tuples/s median | node-a CPE_p median | lost/dup |")
print("|---|---|---|---|---|")
for s in dict.fromkeys(r["setup"] for r in rows):
    g = [float(r["gbps"]) for r in rows if r["setup"] == s]
    t = [float(r["tuples_per_s"]) for r in rows if r["setup"] == s]
    c = [float(r["node_a_cpe_p"]) for r in rows if r["setup"] == s]
    bad = sum(int(r["lost"]) + int(r["duplicated"]) for r in rows if r["setup"] == s)
    print(f"| {s} | {statistics.median(g):.2f} ({min(g):.2f}-{max(g):.2f}) | "
          f"{statistics.median(t)/1e6:.2f} M | {statistics.median(c)/1e3:.1f} k | {bad} |")
PY
} | tee "$out/results.md"
echo "results: $csv, $out/results.md"
