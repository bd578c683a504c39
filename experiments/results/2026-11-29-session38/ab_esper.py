import sys, json, subprocess, statistics, os
R=int(sys.argv[1]); variants=sys.argv[2:]
res={v:[] for v in variants}
for r in range(R):
    order=variants[r%len(variants):]+variants[:r%len(variants)]
    for v in order:
        env=dict(os.environ); sets=[]
        for t in v.split():
            k=t.split("=")[0]
            if k.isupper(): env[k]=t.split("=",1)[1]
            else: sets.append(t)
        cmd=["build/deploy/sluice-deploy","run","deploy/examples/esper.yaml","--json","--run-dir","/tmp/abesp","--set","progress_s=0","--set","base_port=26700","--set","tuples=100000000"]
        for s in sets: cmd+=["--set",s]
        p=subprocess.run(["flock","/tmp/cpu.lock"]+cmd,capture_output=True,text=True,env=env)
        j=json.loads(p.stdout); assert j["ok"], j.get("error")
        nb=[p for p in j["processes"] if p["name"]=="node-b"][0]; res[v].append((nb["tuples_in"]/nb["wall_s"],nb["checkpoint_wait_s"]*1e3))
base=statistics.median(a[0] for a in res[variants[0]])
for v in variants:
    x=res[v]; m=statistics.median(a[0] for a in x)
    print(f"{v:60s} {m/1e6:6.2f} M/s ({m/base:.3f}) node-b ck wait ms {statistics.median(a[1] for a in x):7.1f}  "+" ".join(f"{a[0]/1e6:.1f}" for a in x),flush=True)
