#!/bin/sh
# Starts a one-node Slurm cluster on 127.0.0.1 (Debian's slurm-wlm + munge, no systemd, no
# cgroups) for the studies' Slurm test, and prints the partition when it is up.
#
#   sudo scripts/slurm-one-node.sh          # install if missing, configure, start
#   sudo scripts/slurm-one-node.sh stop     # stop the daemons
#
# It writes /etc/slurm/slurm.conf and /etc/munge/munge.key only when they do not exist, so it
# never rewrites a real cluster's configuration. Run as root (it starts the daemons).
set -eu

if [ "${1:-}" = stop ]; then
    pkill -x slurmd 2>/dev/null || true
    pkill -x slurmctld 2>/dev/null || true
    pkill -x munged 2>/dev/null || true
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "slurm-one-node: run as root (it installs packages and starts daemons)" >&2
    exit 1
fi

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

# munge: a key readable only by its daemon
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key
if ! pgrep -x munged >/dev/null; then
    runuser -u munge -- munged
fi

# slurm: one node, every core, no cgroups (the container has none to give)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { print int($2 / 1024) - 512 }' /proc/meminfo)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
if [ ! -s /etc/slurm/slurm.conf ]; then
    cat >/etc/slurm/slurm.conf <<CONF
# one-node cluster for Outcrop's studies test (scripts/slurm-one-node.sh)
ClusterName=outcrop
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=outcrop Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
fi
if ! pgrep -x slurmctld >/dev/null; then
    slurmctld
fi
if ! pgrep -x slurmd >/dev/null; then
    slurmd -N localhost
fi

# up when the node is idle (or mixed/allocated by someone else's jobs)
i=0
while [ $i -lt 60 ]; do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -n1 || true)
    case "$state" in
        idle*|mix*|alloc*) sinfo; exit 0 ;;
    esac
    if [ "$state" = "down" ] || [ "$state" = "drain" ]; then
        scontrol update NodeName=localhost State=RESUME 2>/dev/null || true
    fi
    i=$((i + 1))
    sleep 1
done
echo "slurm-one-node: the node did not come up; see /var/log/slurm/" >&2
sinfo >&2 || true
exit 1
