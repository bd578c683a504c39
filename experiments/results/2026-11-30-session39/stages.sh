for i in 1 2 3 4; do for a in off on; do
build/deploy/sluice-deploy run deploy/examples/pipeline.yaml --json --set acks=$a --set duration_s=3 --set base_port=31200 --set progress_s=0 2>/dev/null | python3 -c '
import json,sys; d=json.load(sys.stdin)
s="'$a' %.1fM" % (d["tuples_per_s"]/1e6)
for p in d["processes"]:
    n=max(1,p["events_out"] or p["events_in"])
    s+=" | %s " % p["name"][:6]
    for st in p["stages"]:
        s+="%s %.0f/%.0f " % (st["name"][0], st["user_s"]*2.6e9/n, st["sys_s"]*2.6e9/n)
    for l in p["links"]:
        s+="%s%.2f " % ("i" if l["direction"]=="in" else "o", l["syscalls"]/max(1,l["frames"]))
print(s)'
done; done
