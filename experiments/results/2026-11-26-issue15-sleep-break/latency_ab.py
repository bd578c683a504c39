# latency_ab.py ROUNDS "SETS" BUILD...: ab_latency.py's alternation with the given
# keys and no plain relays; ratios are to the first build.
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-26-issue17-pgo"))
from ab_latency import alternate

alternate(int(sys.argv[1]), sys.argv[3:], sets=sys.argv[2], with_plain=False)
