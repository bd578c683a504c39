for v in 1 0; do
if [ $v = 1 ]; then export SLUICE_CK_SYNC=1; else unset SLUICE_CK_SYNC; fi
rd=/tmp/s39/stoprun; rm -rf $rd
build/deploy/sluice-deploy run deploy/examples/esper.yaml --json --run-dir $rd --set base_port=25700 --set duration_s=3 --set rate=2000 --set progress_s=0 --set acks=on --set checkpoint_interval_ms=50 --set restart=on-failure > /tmp/s39/stop.json 2>/dev/null &
sleep 1
p=$(pgrep -f "sluice-sink.*stoprun" | head -1); kill -STOP $p; sleep 1; kill -CONT $p; wait
python3 -c '
import json; d=json.load(open("/tmp/s39/stop.json"))
print("sync='$v'", d["ok"], [(p["name"], p["checkpoints"], round(p["checkpoint_wait_s"],3), p["events_in"]) for p in d["processes"]])'
done
