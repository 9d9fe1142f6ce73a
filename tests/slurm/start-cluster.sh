#!/usr/bin/env bash
# Start a single-node SLURM cluster (munged, slurmctld, slurmd) without systemd, its
# configuration, state and logs under DIR, for tests/test_workflow_slurm.py:
#     start-cluster.sh DIR      (clients: export SLURM_CONF=DIR/etc/slurm.conf)
# The configuration is also linked from /etc/slurm/slurm.conf while the cluster runs,
# which the start refuses to do over a configuration of the machine's own.
# Needs root and Debian's slurm-wlm and munge. Idempotent. No accounting database: job
# states come from squeue (finished jobs stay listed for an hour, MinJobAge).
set -euo pipefail

BASE=${1:?usage: start-cluster.sh DIR}
mkdir -p "$BASE"
BASE=$(cd "$BASE" && pwd)
ETC=$BASE/etc
STATE=$BASE/state
CONF=$ETC/slurm.conf
HOST=$(hostname -s)

[ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
for b in munged slurmctld slurmd sinfo; do
  command -v "$b" >/dev/null || { echo "$b not found: apt-get install -y slurm-wlm munge" >&2; exit 1; }
done

mkdir -p "$ETC" "$STATE"/{ctld,log,run} "$STATE/spool/$HOST"

# ---------------------------------------------------------------- munge
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge          # missing without systemd/tmpfiles
if [ ! -s /etc/munge/munge.key ]; then
  if command -v mungekey >/dev/null; then mungekey --create --keyfile=/etc/munge/munge.key
  else dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none; fi
fi
chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.2; done
  munge -n | unmunge >/dev/null || { echo "munged failed to start (see /var/log/munge/munged.log)" >&2; exit 1; }
fi

# ---------------------------------------------------------------- slurm.conf
# Node line from the real hardware (CPUs, sockets, cores, RealMemory).
NODELINE=$(slurmd -C | head -1)
# leave a bit of memory headroom so the node isn't drained on small fluctuations
MEM=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$NODELINE")
NODELINE=$(sed "s/RealMemory=[0-9]*/RealMemory=$((MEM * 95 / 100))/" <<<"$NODELINE")

cat >"$CONF.new" <<EOF
# written by tests/slurm/start-cluster.sh
ClusterName=local
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# without this a job with no --mem gets the whole node's memory -> 1 job at a time
DefMemPerCPU=1024
ReturnToService=2
SchedulerType=sched/backfill
# no slurmdbd: no accounting storage; jobcomp file gives a finished-jobs log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/log/jobcomp.txt
# keep finished jobs visible in squeue/scontrol for 1h (default 300s); snakemake's slurm
# plugin accepts --slurm-status-command squeue only if MinJobAge >= 3*40s
MinJobAge=3600
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
Waittime=0
$NODELINE State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
if ! cmp -s "$CONF.new" "$CONF"; then mv "$CONF.new" "$CONF"; CONF_CHANGED=1; else rm -f "$CONF.new"; CONF_CHANGED=0; fi
export SLURM_CONF=$CONF

# Commands inside jobs (the executor's srun) read /etc/slurm/slurm.conf, not SLURM_CONF:
# link it there, unless the machine has a configuration of its own.
mkdir -p /etc/slurm
if [ -e /etc/slurm/slurm.conf ] && [ "$(readlink /etc/slurm/slurm.conf)" != "$CONF" ]; then
  echo "/etc/slurm/slurm.conf exists and is not this test cluster's; not starting" >&2
  exit 1
fi
ln -sfn "$CONF" /etc/slurm/slurm.conf

# ---------------------------------------------------------------- daemons
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
if alive "$STATE/run/slurmctld.pid"; then
  [ "$CONF_CHANGED" = 1 ] && scontrol reconfigure || true
else
  slurmctld -f "$CONF"            # daemonizes; -i would ignore state on corrupted restart
fi
for _ in $(seq 50); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
if ! alive "$STATE/run/slurmd.pid"; then
  slurmd -f "$CONF"
fi

# ---------------------------------------------------------------- wait for idle
for i in $(seq 60); do
  st=$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null || true)
  case "$st" in
    idle*|mixed*|allocated*) break ;;
    down*|drain*) scontrol update NodeName="$HOST" State=RESUME 2>/dev/null || true ;;
  esac
  sleep 1
done
sinfo -N -l
case "$st" in idle*|mixed*|allocated*) echo "SLURM cluster up (SLURM_CONF=$CONF)";;
  *) echo "node not idle (state: ${st:-?}); see $STATE/log/" >&2; exit 1;; esac
