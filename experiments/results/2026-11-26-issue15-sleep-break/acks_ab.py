# acks_ab.py ROUNDS BUILD...: acks off/on per build, interleaved round by round (tcp-opt demo, 4 s runs)
import json, subprocess, statistics, sys
from pathlib import Path
REPO = Path(__file__).resolve().parents[3]
R = int(sys.argv[1]); builds = sys.argv[2:]
res = {(b, a): [] for b in builds for a in ("off", "on")}
for r in range(R):
    for b in builds:
        for a in ("off", "on"):
            cmd = ["flock", "/tmp/cpu.lock", f"{b}/deploy/sluice-deploy", "run", str(REPO / "deploy/examples/pipeline.yaml"), "--json",
                   "--set", f"acks={a}", "--set", "duration_s=4", "--set", "base_port=31200", "--set", "progress_s=0"]
            j = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)
            assert j["ok"] and j["lost"] == 0, j.get("error")
            res[(b, a)].append((j["tuples_per_s"], j["cpe_p_nodes"]))
for b in builds:
    off = statistics.median(x[0] for x in res[(b, "off")]); on = statistics.median(x[0] for x in res[(b, "on")])
    coff = statistics.median(x[1] for x in res[(b, "off")]); con = statistics.median(x[1] for x in res[(b, "on")])
    ratios = [y[0] / x[0] for x, y in zip(res[(b, "off")], res[(b, "on")])]
    print(f"{b}: off {off/1e6:.2f} M, on {on/1e6:.2f} M, on/off {on/off:.3f} (per round {' '.join(f'{x:.2f}' for x in ratios)}); node CPE_p off {coff:.0f} on {con:.0f} ({con/coff:.3f})", flush=True)
