import sys, statistics, re
for f in sys.argv[1:]:
    print("==", f)
    rows = []
    for line in open(f):
        m = re.match(r"(.{40,})\s+([\d.]+) M/s \(([\d.]+)\)\s+node cpe_p\s+(\d+)\s+ends\s+(\d+)\s+(.*)$", line.rstrip())
        if not m: continue
        name = m.group(1).strip(); vals = [float(x) for x in m.group(6).split()]
        rows.append((name, vals))
    base = None
    for name, v in rows:
        s = sorted(v); n = len(s)
        q75 = s[int(0.75 * (n - 1))]; top = statistics.mean(s[n // 2:])
        fast = sum(1 for x in v if x >= 0.9 * s[-1]) 
        if base is None: base = (statistics.median(v), q75, top)
        print(f"  {name:52s} median {statistics.median(v)/base[0]:.3f}  q75 {q75/base[1]:.3f}  upper-half mean {top/base[2]:.3f}   n {n}")
