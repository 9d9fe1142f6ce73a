#!/usr/bin/env bash
# Stop the single-node SLURM cluster that start-cluster.sh started under DIR. Idempotent.
#     stop-cluster.sh DIR [--purge] [--keep-munge]
# --purge: also delete its state and logs; --keep-munge: leave munged running.
set -uo pipefail
BASE=${1:?usage: stop-cluster.sh DIR [--purge] [--keep-munge]}
BASE=$(cd "$BASE" && pwd)
STATE=$BASE/state
PURGE=0; KEEP_MUNGE=0
for a in "$@"; do case $a in --purge) PURGE=1;; --keep-munge) KEEP_MUNGE=1;; esac; done

stop_pid() {  # stop_pid NAME PIDFILE
  local pf=$2 pid
  [ -s "$pf" ] || return 0
  pid=$(cat "$pf")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped $1 ($pid)"
  fi
  rm -f "$pf"
}
stop_pid slurmd "$STATE/run/slurmd.pid"
stop_pid slurmctld "$STATE/run/slurmctld.pid"

if [ "$KEEP_MUNGE" = 0 ]; then
  stop_pid munged /run/munge/munged.pid
fi

if [ "$(readlink /etc/slurm/slurm.conf)" = "$BASE/etc/slurm.conf" ]; then
  rm -f /etc/slurm/slurm.conf
fi
[ "$PURGE" = 1 ] && rm -rf "$STATE" && echo "purged $STATE"
exit 0
