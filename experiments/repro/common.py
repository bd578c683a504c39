"""What every part of reproduce.py shares: where things are, the presets, the
sizes of an event."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent   # experiments/
REPO = HERE.parent
sys.path.insert(0, str(HERE))   # model.py, sweep.py, costmodel.py

LOCK = "/tmp/cpu.lock"
PIPELINE = REPO / "deploy/examples/pipeline.yaml"
EVENT_HEADER = 64      # bytes of an event's header (pipeline.yaml: 64 + 255 x 128 = 32704)
SLOT_OVERHEAD = 80     # what a slot holds beyond the event (sweep.py)
DEFAULT_SLOT = 65536
PRESETS = ["original", "tcp-opt", "fabric-opt", "ucx-opt"]
USER_LEVEL = ["fabric-opt", "ucx-opt"]  # the study's mx-opt: the carriers that are not sockets


def log(msg):
    print(msg, file=sys.stderr, flush=True)
