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


def cpu_s(pids):
    """The CPU seconds (user + system) the processes `pids` used so far (a
    process that ended meanwhile counts nothing)."""
    t = 0
    for pid in pids:
        try:
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            t += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return t


def bridge_netns(run_dir):
    """The network namespace of the bridge that joins a --launcher netns
    run's hosts (its state.json names it, "...-net"); None if there is none yet."""
    import json
    try:
        return [n for n in json.load(open(f"{run_dir}/state.json"))["namespaces"] if n.endswith("-net")][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None


def host_netns(run_dir, host):
    """The network namespace of host `host` of a --launcher netns run
    ("...-HOST" in its state.json); None if there is none yet."""
    import json
    try:
        return [n for n in json.load(open(f"{run_dir}/state.json"))["namespaces"] if n.endswith("-" + host)][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None


def nft(netns, *args):
    """nft ARGS in the namespace netns (root; Debian: nftables)."""
    import subprocess
    subprocess.run(["ip", "netns", "exec", netns, "nft", *args], check=True)
