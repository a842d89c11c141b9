#!/bin/sh
# slurm-node slurmctld|slurmd: MUNGE, then the Slurm daemon in the foreground.
set -e
mkdir -p /var/log/slurm /var/spool/slurmctld /var/spool/slurmd /run/munge
chown munge:munge /run/munge
runuser -u munge -- /usr/sbin/munged
case "$1" in
  slurmctld) exec /usr/sbin/slurmctld -D -i ;;
  slurmd) exec /usr/sbin/slurmd -D -N "$(hostname)" ;;
  *) echo "slurm-node: want slurmctld or slurmd, got '$1'" >&2; exit 2 ;;
esac
