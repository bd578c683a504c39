#!/usr/bin/env python3
"""Fails when an #include runs upward (docs/DESIGN.md, Layout).

Folders, bottom to top; a folder may include its own level and any below it,
never one above, and never a sibling at its own level:

  0 base/        Status, descriptors, rings and waits, fds
  1 transport/   event format, pool, handshake, protocol core, carriers
                 (transport/tcp/, ...), the registry
  2 graph/       the deployment schema and parser, operators
  3 node/        the three stages, links joined to them, metrics
  3 kafka/       librdkafka's clients, for the Kafka source and sink
  3 codec/       records of a schema (csv, jsonl, binary) and the file reader
  4 loadgen/ sink/   a Source that makes events, a Destination that checks them
  5 runtime/     a program assembled from a deployment (sluice-node, -loadgen, -sink)
  6 deploy/      sluice-deploy and its launcher
  6 client/      the library applications link (include/sluice/)

Tests (*_test.cc), benchmarks (*_bench.cc), fuzz targets and test data may
reach up: they are not part of the layer. Usage: check_layering.py [ROOT]
"""
import os
import re
import sys

LEVEL = {"base": 0, "transport": 1, "graph": 2, "node": 3, "kafka": 3, "codec": 3, "loadgen": 4, "sink": 4,
         "runtime": 5, "deploy": 6, "client": 6}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def exempt(path):
    name = os.path.basename(path)
    return (name.endswith("_test.cc") or name.endswith("_bench.cc") or "/fuzz/" in path
            or "/testdata/" in path or name.startswith("test_util"))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    bad = []
    checked = 0
    for top in LEVEL:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if exempt(rel):
                    continue
                checked += 1
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in LEVEL or m.group(1) == top:
                            continue
                        if LEVEL[m.group(1)] >= LEVEL[top]:
                            bad.append(f"{rel}:{n}: {top}/ (level {LEVEL[top]}) includes "
                                       f"{m.group(1)}/ (level {LEVEL[m.group(1)]}): {line.strip()}")
    for b in bad:
        print(b)
    print(f"checked {checked} files: {len(bad)} upward includes")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
