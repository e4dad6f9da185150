#!/bin/bash
# bench/pbt/timed.sh LOG COMMAND...: runs COMMAND and appends "start end exit" (epoch
# seconds) to LOG, so that run.sh can sum the trial-seconds of every attempt, the ones PBT
# stops for an exploit included. tune signals the trial's process group: the trap defers
# bash's own SIGTERM until the trainer has exited, so the end is still written. The times
# come from bash's own clock ($EPOCHREALTIME, bash 5), not from a date(1) process, which a
# SIGTERM right at the start would kill too, tearing the line.
log=$1
shift
t0=$EPOCHREALTIME
trap 'echo "$t0 $EPOCHREALTIME term" >>"$log"; exit 143' TERM INT
"$@"
rc=$?
echo "$t0 $EPOCHREALTIME $rc" >>"$log"
exit $rc
