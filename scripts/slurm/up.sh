#!/usr/bin/env bash
# Brings up a private single-host Slurm cluster for tests (root only): Debian's slurmctld
# and slurmd, auth/none, no cgroups, fake GPUs, all state in one directory. Prints
# `export SLURM_CONF=...` so that `eval "$(scripts/slurm/up.sh)"` points clients at it.
# Not for: production clusters (no security at all), or running without root.
#
# Knobs (environment):
#   SLURM_CI_DIR      where everything lives (default /tmp/tune-slurm-ci)
#   SLURM_CI_NODES    fake nodes ci1..ciN, one slurmd each on this host (default 1)
#   SLURM_CI_CPUS     CPUs each node declares (default 8; slurmd is told to trust it)
#   SLURM_CI_GPUS     fake GPUs per node (default 4; 0 = none)
#   SLURM_CI_PORT     slurmctld's port; slurmd's are the next ones (default 6817)
#   SLURM_CI_TIMEOUT  seconds to wait for the nodes to be idle (default 30)
#   SLURM_CI_INSTALL  1: apt-get install the packages when missing
#
# Partitions: "debug" (ci1 only, the default) and "multi" (every node). The fake GPUs
# are character devices cloned from /dev/null (slurmd refuses plain files, and then sets
# no CUDA_VISIBLE_DEVICES), declared in gres.conf with AutoDetect=off.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
DIR="${SLURM_CI_DIR:-/tmp/tune-slurm-ci}"
NODES="${SLURM_CI_NODES:-1}"
CPUS="${SLURM_CI_CPUS:-8}"
GPUS="${SLURM_CI_GPUS:-4}"
PORT="${SLURM_CI_PORT:-6817}"
TIMEOUT="${SLURM_CI_TIMEOUT:-30}"

say() { echo "slurm-up: $*" >&2; }

if [ "$(id -u)" != 0 ]; then
  say "must run as root (slurmd starts tasks as their user)"
  exit 1
fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
  ! command -v srun >/dev/null; then
  if [ "${SLURM_CI_INSTALL:-0}" = 1 ]; then
    say "installing slurmctld slurmd slurm-client"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client >&2
  else
    say "slurmctld, slurmd or srun is missing (apt-get install slurmctld slurmd slurm-client,"
    say "or SLURM_CI_INSTALL=1)"
    exit 1
  fi
fi

CONF="$DIR/slurm.conf"
HOST="$(hostname -s)"

# A process is alive when /proc says so and it is not a zombie (kill -0 succeeds on
# zombies, which a sandbox's PID 1 may leave around for a while).
alive() {
  local pid="$1" st
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  st="$(sed -e 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
  [ -n "$st" ] && [ "$st" != Z ]
}

pidof_file() { [ -r "$1" ] && cat "$1" 2>/dev/null || true; }

# Healthy = every daemon of this directory alive and every node usable.
healthy() {
  [ -r "$CONF" ] || return 1
  alive "$(pidof_file "$DIR/slurmctld.pid")" || return 1
  local n
  for n in $(seq 1 "$NODES"); do
    alive "$(pidof_file "$DIR/slurmd.ci$n.pid")" || return 1
  done
  local states
  states="$(SLURM_CONF="$CONF" timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null)" || return 1
  [ "$(echo "$states" | sort -u | grep -c .)" -eq "$NODES" ] || return 1
  ! echo "$states" | grep -Eqv ' (idle|mix|alloc|comp)$'
}

if healthy; then
  echo "export SLURM_CONF=$CONF"
  exit 0
fi

SLURM_CI_DIR="$DIR" "$here/down.sh" --purge >&2 || true
mkdir -p "$DIR/state" "$DIR/dev"
t0=$(date +%s.%N)

nodes="ci1"
[ "$NODES" -gt 1 ] && nodes="ci[1-$NODES]"
ports="$((PORT + 1))"
[ "$NODES" -gt 1 ] && ports="[$((PORT + 1))-$((PORT + NODES))]"
gres=""
[ "$GPUS" -gt 0 ] && gres="Gres=gpu:$GPUS"

{
  echo "AutoDetect=off"
  for n in $(seq 1 "$NODES"); do
    mkdir -p "$DIR/dev/ci$n"
    for g in $(seq 0 $((GPUS - 1))); do
      mknod "$DIR/dev/ci$n/gpu$g" c 1 3
    done
    [ "$GPUS" -gt 0 ] && echo "NodeName=ci$n Name=gpu File=$DIR/dev/ci$n/gpu[0-$((GPUS - 1))]"
  done
} >"$DIR/gres.conf"

cat >"$CONF" <<EOF
# Written by scripts/slurm/up.sh: a throwaway test cluster, no security.
ClusterName=tuneci
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.txt
MpiDefault=none
ReturnToService=2
KillWait=2
MinJobAge=60
InactiveLimit=0
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.%n.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$nodes NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$ports CPUs=$CPUS RealMemory=1000 $gres State=UNKNOWN
PartitionName=debug Nodes=ci1 Default=YES MaxTime=INFINITE State=UP
PartitionName=multi Nodes=$nodes MaxTime=INFINITE State=UP
EOF

slurmctld -f "$CONF" -i
for n in $(seq 1 "$NODES"); do
  mkdir -p "$DIR/spool/ci$n"
  slurmd -f "$CONF" -N "ci$n"
done

deadline=$(($(date +%s) + TIMEOUT))
until healthy; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    say "the cluster in $DIR did not come up within ${TIMEOUT}s; last log lines:"
    tail -n 5 "$DIR"/*.log >&2 || true
    exit 1
  fi
  sleep 0.05
done
echo "export SLURM_CONF=$CONF" >"$DIR/env.sh"
say "up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s: $NODES node(s), $CPUS CPUs and $GPUS GPUs each ($DIR)"
echo "export SLURM_CONF=$CONF"
