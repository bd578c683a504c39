#!/usr/bin/env bash
# A real 4-node Slurm cluster on this machine, for tests and for trying
# `sluice-deploy run --launcher slurm` (Debian's slurm-wlm and munge; root).
#
#   scripts/slurm-cluster.sh up       # start it; prints `export SLURM_CONF=...`
#   scripts/slurm-cluster.sh status   # each daemon alive?, and sinfo
#   scripts/slurm-cluster.sh down     # stop everything, remove everything
#
# 1. up: a munged of its own (its own key and socket, beside the config), a
#    bridge sluiceslurm0 at 10.79.0.254/24, and four network namespaces
#    sluice-slurm-sn1..4 (eth0 10.79.0.1..4) joined to it. slurmctld runs
#    here on the bridge's address; one slurmd per namespace (NodeName sn1..4,
#    2 CPUs each, partition `sluice`). Every daemon's pid is recorded in
#    $DIR/pids as it starts. up returns once all four nodes are idle (or
#    fails, having torn down what it made, with the daemons' last log lines).
# 2. Slurm's commands (srun, salloc, sinfo, scontrol, scancel) reach it with
#    SLURM_CONF=$DIR/slurm.conf (also in $DIR/env). A job step runs inside
#    its node's namespace: it binds and is reached at its node's address.
# 3. down: every recorded daemon is stopped (SIGTERM, SIGKILL after 5 s),
#    slurmd before its namespace goes; then the namespaces, the bridge, the
#    cgroups slurmd made on the host's hierarchies and $DIR are removed.
#    down is safe to run twice, or after a failed up.
#
# $SLUICE_SLURM_DIR (default /tmp/sluice-slurm) holds the config, the key,
# the state, the daemons' logs and pids. Only one such cluster per machine
# (the bridge and namespace names and the subnet are fixed).
#
# Why the namespace shells mount cgroups: `ip netns exec` gives a fresh /sys
# with no cgroup tree, and slurmd 22.05 refuses the host's mixed v1/v2
# layout; each slurmd's shell (its own mount namespace) mounts a tmpfs and
# the v1 controllers, and cgroup.conf says cgroup/v1.
set -euo pipefail

DIR=${SLUICE_SLURM_DIR:-/tmp/sluice-slurm}
BRIDGE=sluiceslurm0
NS_PREFIX=sluice-slurm-
SUBNET=10.79.0
NODES=4
CTLD_PORT=16817
SLURMD_PORT=16818
CONTROLLERS=(cpu cpuacct cpuset memory devices freezer pids)

say() { echo "slurm-cluster: $*" >&2; }
die() { say "$*"; exit 1; }

need_tools() {
  [[ $(id -u) -eq 0 ]] || die "needs root (namespaces, a bridge, slurmd)"
  local missing=()
  for t in ip munged slurmctld slurmd sinfo scontrol srun; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  [[ ${#missing[@]} -eq 0 ]] ||
    die "missing: ${missing[*]} (apt-get install slurm-wlm munge, or scripts/setup.sh)"
}

record() { echo "$1 $2" >> "$DIR/pids"; }

# Whether a pid is a live process: a zombie (a daemon that ended but that
# init has not reaped yet, as it was started by an `up` that has exited)
# is not.
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z ]]
}

write_config() {
  local host; host=$(hostname)
  cat > "$DIR/slurm.conf" <<EOF
# Written by scripts/slurm-cluster.sh: a 4-node test cluster in namespaces.
ClusterName=sluice
SlurmctldHost=${host}(${SUBNET}.254)
SlurmctldPort=${CTLD_PORT}
SlurmdPort=${SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=${DIR}/munge/munge.socket
CredType=cred/munge
StateSaveLocation=${DIR}/ctld
SlurmdSpoolDir=${DIR}/spool-%n
SlurmctldPidFile=${DIR}/slurmctld.pid
SlurmdPidFile=${DIR}/slurmd-%n.pid
SlurmctldLogFile=${DIR}/slurmctld.log
SlurmdLogFile=${DIR}/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
InactiveLimit=0
KillWait=2
MinJobAge=30
SlurmdTimeout=30
SlurmctldTimeout=30
EOF
  for i in $(seq 1 $NODES); do
    echo "NodeName=sn$i NodeAddr=${SUBNET}.$i CPUs=2 State=UNKNOWN" >> "$DIR/slurm.conf"
  done
  echo "PartitionName=sluice Nodes=sn[1-$NODES] Default=YES MaxTime=INFINITE State=UP" >> "$DIR/slurm.conf"
  cat > "$DIR/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
EOF
  echo "export SLURM_CONF=$DIR/slurm.conf" > "$DIR/env"
}

start_munge() {
  mkdir -p "$DIR/munge"
  chmod 0700 "$DIR/munge"
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$DIR/munge/munge.key"
  munged --foreground --force --key-file="$DIR/munge/munge.key" \
    --socket="$DIR/munge/munge.socket" --pid-file="$DIR/munge/munged.pid" \
    --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed" \
    </dev/null >>"$DIR/munge/munged.out" 2>&1 &
  record munged $!
  for _ in $(seq 100); do
    [[ -S "$DIR/munge/munge.socket" ]] && return 0
    kill -0 "$!" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}

make_network() {
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for i in $(seq 1 $NODES); do
    local ns="${NS_PREFIX}sn$i"
    ip netns add "$ns"
    ip link add "slsv$i" type veth peer name "slsp$i"
    ip link set "slsp$i" netns "$ns"
    ip -n "$ns" link set "slsp$i" name eth0
    ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip link set "slsv$i" master "$BRIDGE"
    ip link set "slsv$i" up
  done
}

start_slurmd() {
  local i=$1 ns="${NS_PREFIX}sn$1"
  mkdir -p "$DIR/spool-sn$i"
  # The shell's mount namespace is the namespace's own (ip netns exec): the
  # mounts go with the daemon and the host's /sys is untouched.
  local mounts="mount -t tmpfs cgroup_root /sys/fs/cgroup"
  for c in "${CONTROLLERS[@]}"; do
    mounts+=" && mkdir -p /sys/fs/cgroup/$c && mount -t cgroup -o $c $c /sys/fs/cgroup/$c"
  done
  ip netns exec "$ns" sh -c "$mounts && exec slurmd -D -f '$DIR/slurm.conf' -N sn$i" \
    </dev/null >>"$DIR/slurmd-sn$i.out" 2>&1 &
  record "slurmd-sn$i" $!
}

wait_idle() {
  local deadline=$((SECONDS + 30)) states
  while ((SECONDS < deadline)); do
    states=$(SLURM_CONF="$DIR/slurm.conf" sinfo -h -N -o '%N %T' 2>/dev/null || true)
    if [[ $(grep -c ' idle$' <<<"$states") -eq $NODES ]]; then return 0; fi
    while read -r name pid; do
      alive "$pid" || { say "$name (pid $pid) exited"; return 1; }
    done < "$DIR/pids"
    sleep 0.2
  done
  say "nodes not idle after 30 s: $(tr '\n' ' ' <<<"$states")"
  return 1
}

show_logs() {
  for f in "$DIR"/*.log "$DIR"/*.out "$DIR"/munge/*.log "$DIR"/munge/*.out; do
    [[ -s "$f" ]] || continue
    say "--- $f (last lines)"
    tail -n 5 "$f" >&2
  done
}

cmd_up() {
  need_tools
  if [[ -s "$DIR/pids" ]] || ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "already up (or left over: $DIR/pids, bridge $BRIDGE); run: $0 down"
  fi
  local t0; t0=$(date +%s.%N)
  rm -rf "$DIR"
  mkdir -p "$DIR/ctld"
  : > "$DIR/pids"
  write_config
  if ! start_munge; then show_logs; cmd_down quiet; die "munged did not start"; fi
  if ! make_network; then cmd_down quiet; die "could not make the bridge and namespaces"; fi
  slurmctld -D -f "$DIR/slurm.conf" </dev/null >>"$DIR/slurmctld.out" 2>&1 &
  record slurmctld $!
  for i in $(seq 1 $NODES); do start_slurmd "$i"; done
  if ! wait_idle; then show_logs; cmd_down quiet; die "the cluster did not come up"; fi
  local t1; t1=$(date +%s.%N)
  say "up in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s: sn[1-$NODES] at $SUBNET.1-$NODES, slurmctld at $SUBNET.254; daemons in $DIR/pids"
  echo "export SLURM_CONF=$DIR/slurm.conf"
}

# Stops recorded daemons together: SIGTERM, then SIGKILL to those left
# after GRACE tenths of a second. Fails if one is still there.
stop_pids() {
  local grace=$1 pid alive
  shift
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq "$grace"); do
    alive=0
    for pid in "$@"; do alive "$pid" && alive=1; done
    [[ $alive -eq 1 ]] || return 0
    sleep 0.1
  done
  for pid in "$@"; do kill -KILL "$pid" 2>/dev/null || true; done
  sleep 0.5
  for pid in "$@"; do alive "$pid" && return 1; done
  return 0
}

cmd_down() {
  local quiet=${1:-} left=0
  [[ $(id -u) -eq 0 ]] || die "needs root"
  if [[ -f "$DIR/pids" ]]; then
    # The slurmds first (while their namespaces still exist), 5 s each to
    # end their steps; then slurmctld and munged together, 0.5 s (each
    # takes 2 s to save state that goes with $DIR anyway).
    for group in 1 0; do
      local pids grace=5; pids=$(awk -v g="$group" '(index($1, "slurmd-") == 1) == g {print $2}' "$DIR/pids")
      [[ $group -eq 1 ]] && grace=50
      [[ -n "$pids" ]] || continue
      # shellcheck disable=SC2086
      if ! stop_pids $grace $pids; then say "pids $(echo $pids) would not die"; left=1; fi
    done
  fi
  for i in $(seq 1 $NODES); do
    local ns="${NS_PREFIX}sn$i"
    if ip netns list | grep -qw "$ns"; then
      # Anything a job step left in the namespace goes with it.
      local inside; inside=$(ip netns pids "$ns" 2>/dev/null || true)
      [[ -z "$inside" ]] || kill -KILL $inside 2>/dev/null || true
      ip netns del "$ns"
    fi
    ip link del "slsv$i" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  # slurmd's cgroups on the host's v1 hierarchies (the namespaces mounted
  # the same ones): empty folders, removed deepest first.
  for c in "${CONTROLLERS[@]}"; do
    for top in /sys/fs/cgroup/$c/slurm /sys/fs/cgroup/$c/slurm_sn*; do
      [[ -d "$top" ]] || continue
      find "$top" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
  done
  if [[ $left -eq 0 ]]; then
    rm -rf "$DIR"
    [[ -n "$quiet" ]] || say "down: nothing left"
  else
    say "down: some daemons were left; $DIR kept"
    return 1
  fi
}

cmd_status() {
  [[ -f "$DIR/pids" ]] || { say "not up ($DIR/pids missing)"; return 1; }
  local bad=0
  while read -r name pid; do
    if alive "$pid"; then echo "$name $pid running"; else echo "$name $pid gone"; bad=1; fi
  done < "$DIR/pids"
  SLURM_CONF="$DIR/slurm.conf" sinfo -N -o '%N %T %c %o' || bad=1
  return $bad
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) sed -n '2,8p' "$0"; exit 2 ;;
esac
