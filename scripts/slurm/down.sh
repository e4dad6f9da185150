#!/usr/bin/env bash
# Stops the test cluster scripts/slurm/up.sh started in SLURM_CI_DIR: cancels its jobs,
# stops its daemons (TERM, then KILL after 10 s), then kills what it can tie to that
# directory and nothing else: slurmstepd's holding a file under it, task processes and
# Slurm clients whose SLURM_CONF is its slurm.conf. Never this script or its ancestors.
# Idempotent: exits 0 when nothing runs. --purge also removes the directory.
# Not for: clusters this script did not start.
set -uo pipefail

DIR="${SLURM_CI_DIR:-/tmp/tune-slurm-ci}"
CONF="$DIR/slurm.conf"
purge=0
[ "${1:-}" = "--purge" ] && purge=1

alive() {
  local pid="$1" st
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  st="$(sed -e 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
  [ -n "$st" ] && [ "$st" != Z ]
}

# This script and its ancestors (a test that calls down.sh has SLURM_CONF set too).
declare -A keep=()
p=$$
while [ -n "$p" ] && [ "$p" -gt 1 ] 2>/dev/null; do
  keep[$p]=1
  p="$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)"
done

daemons=()
for f in "$DIR"/slurmctld.pid "$DIR"/slurmd.*.pid; do
  [ -r "$f" ] || continue
  pid="$(cat "$f" 2>/dev/null)"
  alive "$pid" && daemons+=("$pid")
done

# Jobs first, while the controller can still act on them (bounded: it may be hung).
if [ -r "$CONF" ] && alive "$(cat "$DIR/slurmctld.pid" 2>/dev/null)"; then
  jobs="$(SLURM_CONF="$CONF" timeout 5 squeue -h -o %i 2>/dev/null | tr '\n' ' ')"
  [ -n "${jobs// /}" ] && SLURM_CONF="$CONF" timeout 5 scancel $jobs 2>/dev/null
fi

if ((${#daemons[@]})); then
  kill -TERM "${daemons[@]}" 2>/dev/null
  for _ in $(seq 1 200); do
    left=0
    for pid in "${daemons[@]}"; do alive "$pid" && left=1; done
    [ "$left" = 0 ] && break
    sleep 0.05
  done
  for pid in "${daemons[@]}"; do alive "$pid" && kill -KILL "$pid" 2>/dev/null; done
fi

# Stragglers tied to this directory.
clients=" srun salloc sbatch scancel squeue sinfo scontrol sattach sstat "
for d in /proc/[0-9]*; do
  pid="${d#/proc/}"
  [ -n "${keep[$pid]:-}" ] && continue
  alive "$pid" || continue
  comm="$(cat "$d/comm" 2>/dev/null)" || continue
  hit=0
  case "$comm" in
  slurmstepd)
    ls -l "$d/fd" 2>/dev/null | grep -qF -- "-> $DIR/" && hit=1
    ;;
  slurmctld | slurmd)
    tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qF -- "$CONF" && hit=1
    ;;
  esac
  if [ "$hit" = 0 ] && [ -r "$d/environ" ]; then
    envs="$({ tr '\0' '\n' <"$d/environ"; } 2>/dev/null)"
    if echo "$envs" | grep -qxF "SLURM_CONF=$CONF"; then
      if echo "$envs" | grep -q '^SLURM_JOB_ID=' || [[ "$clients" == *" $comm "* ]]; then
        hit=1
      fi
    fi
  fi
  [ "$hit" = 1 ] && kill -KILL "$pid" 2>/dev/null
done

if [ "$purge" = 1 ]; then
  rm -rf "$DIR"
fi
exit 0
