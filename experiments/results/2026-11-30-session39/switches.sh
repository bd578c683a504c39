for i in 1 2 3; do for a in off on; do
build/deploy/sluice-deploy run deploy/examples/pipeline.yaml --json --set acks=$a --set duration_s=4 --set base_port=31200 --set progress_s=0 > /tmp/cs.json 2>/dev/null &
sleep 1.5
perf stat -e context-switches,cpu-migrations -a -x, -- sleep 2 2>/tmp/cs.perf
wait
t=$(python3 -c 'import json; print("%.1f" % (json.load(open("/tmp/cs.json"))["tuples_per_s"]/1e6))')
echo "$a ${t}M $(tr '\n' ' ' < /tmp/cs.perf | awk -F, '{print $1, $3, $6}')"
done; done
