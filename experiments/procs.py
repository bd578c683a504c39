"""Finding a run's processes from outside, for the experiments that signal them."""
import os


def pids_of(run_dir, name):
    """The pids of process `name` (its --process) of the sluice-deploy run whose
    run directory is `run_dir` (the resolved deployment its programs read is there)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cl = open(f"/proc/{pid}/cmdline").read().replace("\0", " ")
        except OSError:  # it ended meanwhile
            continue
        if f"{run_dir}/" in cl and f"--process {name} " in cl:
            out.append(int(pid))
    return out
