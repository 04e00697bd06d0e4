#!/usr/bin/env bash
# tests/slurm/slurm.sh - a real Slurm cluster on this one machine for the
# tests: slurmctld and two slurmd "nodes", hp-a100 (2 fake a100 GPUs) and
# hp-t4 (2 fake t4 GPUs), as ../shared/recipes/slurm-single-node.md
# describes (fake GPUs are character devices made with mknod).  Two nodes,
# not one, because Slurm's backfill scheduler starts a heterogeneous job
# only when it can place each component on a node of its own
# (doc/html/heterogeneous_jobs.shtml, "Limitations").  Each slurmd runs in
# a private mount namespace with its own PMIx temporary folder and its own
# /dev/shm, as two real nodes would have: PMIx names that folder after the
# job, and Open MPI its shared-memory files after the host, the job and
# the local rank, so two slurmds on one host would collide (`srun
# --mpi=pmix` could not start a step that spans both; ranks would read
# each other's messages).  Job ids start at a number of this cluster's own,
# so two such clusters on one host (two suites at once) do not collide
# either.
#
# Everything lives under BASE: its own munged (key, socket), own ports,
# state, logs; nothing outside BASE is touched and the daemons are
# stopped by the PIDs in their pid files, never by name.
#
#   tests/slurm/slurm.sh start BASE   start it (BASE is made if missing);
#                                     prints lines to eval:
#                                     SLURM_CONF=... HP_SLURM_NODES=...
#                                     HP_SLURM_PMIX=1|0 (0: no private
#                                     mount namespace here, so a step over
#                                     both nodes cannot use PMIx)
#   tests/slurm/slurm.sh stop BASE    cancel its jobs, stop its daemons
#   tests/slurm/slurm.sh check        print why it cannot run here and
#                                     exit 1, or exit 0
#
# Needs root (slurmd runs jobs as any user; munged, mknod and mount need
# it) and the Debian packages slurm-wlm and munge.  Start-up takes about a
# second; it waits (bounded) until both nodes are idle.
set -u
PATH=/usr/sbin:/sbin:$PATH

die() {
	echo "slurm.sh: $*" >&2
	exit 1
}

check() {
	if [ "$(id -u)" != 0 ]; then
		echo "not root (slurmd, munged, mknod and mount need it)"
		return 1
	fi
	local p
	for p in slurmctld slurmd munged sbatch squeue sacct scancel sinfo scontrol srun mknod unshare; do
		if ! command -v "$p" >/dev/null 2>&1; then
			echo "no '$p' (Debian packages slurm-wlm, munge)"
			return 1
		fi
	done
	# slurmd 22.05 loads its cgroup plugin whatever the proctrack and
	# task plugins, and refuses to start without a cgroup filesystem (a
	# chroot whose /sys was bound without its submounts)
	if ! grep -qE '^[^ ]+ /sys/fs/cgroup (cgroup2?|tmpfs) ' /proc/mounts; then
		echo "no cgroup filesystem on /sys/fs/cgroup (slurmd needs one)"
		return 1
	fi
	return 0
}

# A TCP port no socket uses, from a range keyed by our pid (the kernel's
# tables, so no iproute2 is needed).
free_port() {
	local p used
	used=$(for h in $(awk 'FNR > 1 {n = split($2, a, ":"); print a[n]}' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u); do
		printf '%d\n' "0x$h"
	done)
	p=$((20000 + ($$ * 7 + $1 * 101) % 30000))
	while echo "$used" | grep -qx "$p"; do p=$((p + 1)); done
	echo "$p"
}

# Is the process in pid file $1 alive (a zombie counts as gone)?
alive() {
	local pid st
	[ -s "$1" ] || return 1
	pid=$(cat "$1" 2>/dev/null)
	case "$pid" in '' | *[!0-9]*) return 1 ;; esac
	st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# Start slurmd for node $2 in a private mount namespace where
# $1/pmix is the node's own folder and /dev/shm its own tmpfs.
start_slurmd() {
	local base=$1 node=$2
	mkdir -p "$base/nodes/$node/pmix" "$base/pmix"
	if [ "$pmix" = 1 ]; then
		unshare --mount --propagation private -- "$0" _slurmd "$base" "$node"
	else
		slurmd -N "$node" -f "$base/slurm.conf"
	fi
}

start() {
	local base=$1 why
	why=$(check) || die "$why"
	mkdir -p "$base" || die "cannot make '$base'"
	base=$(cd "$base" && pwd)
	case "$base" in *[!A-Za-z0-9/._-]*) die "BASE '$base' holds characters slurm.conf cannot take" ;; esac
	mkdir -p "$base/dev" "$base/state" "$base/spool" "$base/log" "$base/munge"
	chmod 711 "$base" "$base/munge"

	# munged: our own key, socket and pid file.
	head -c 128 /dev/urandom >"$base/munge/munge.key"
	chmod 400 "$base/munge/munge.key"
	munged --force -S "$base/munge/socket" --key-file="$base/munge/munge.key" \
		--log-file="$base/log/munged.log" --pid-file="$base/munge/munged.pid" \
		--seed-file="$base/munge/seed" ||
		die "munged did not start: $(tail -n 3 "$base/log/munged.log" 2>/dev/null)"

	# Four fake NVIDIA-like character devices (major 195, the driver's).
	local n
	for n in 0 1 2 3; do
		[ -e "$base/dev/nvidia$n" ] || mknod "$base/dev/nvidia$n" c 195 "$n" ||
			die "mknod '$base/dev/nvidia$n' failed"
	done

	# Can a slurmd get a private mount namespace here?
	pmix=1
	unshare --mount --propagation private -- true 2>/dev/null || pmix=0

	# Job ids of our own range: two test clusters on one host (two
	# worktrees' suites at once) would otherwise both run job 1, whose
	# PMIx namespace (slurm.pmix.1.2) and Open MPI shared-memory files
	# have the same names on the same host (seen: ranks of one job
	# crashing in the other's segments).
	local first_job=$((1000 + ($$ % 5000) * 1000 + RANDOM % 1000))
	local host ctld_port pa pb
	host=$(hostname -s)
	ctld_port=$(free_port 1)
	pa=$(free_port 2)
	pb=$(free_port 3)
	[ "$pa" != "$ctld_port" ] || pa=$((pa + 1))
	[ "$pb" != "$pa" ] && [ "$pb" != "$ctld_port" ] || pb=$((pa + 2))
	cat >"$base/gres.conf" <<GRES
AutoDetect=off
NodeName=hp-a100 Name=gpu Type=a100 File=$base/dev/nvidia[0-1]
NodeName=hp-t4 Name=gpu Type=t4 File=$base/dev/nvidia[2-3]
GRES
	echo "PMIxCliTmpDirBase=$base/pmix" >"$base/mpi.conf"
	# Four CPUs per node whatever the machine has (config_overrides), so
	# a test's ranks fit on a 2-core machine.
	cat >"$base/slurm.conf" <<CONF
ClusterName=hptest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$base/munge/socket
CredType=cred/munge
StateSaveLocation=$base/state
SlurmdSpoolDir=$base/spool/%n
SlurmctldPidFile=$base/slurmctld.pid
SlurmdPidFile=$base/slurmd-%n.pid
SlurmctldLogFile=$base/log/slurmctld.log
SlurmdLogFile=$base/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$base/log/jobcomp.txt
ReturnToService=2
MpiDefault=none
SlurmdParameters=config_overrides
DefMemPerCPU=100
KillWait=5
MinJobAge=600
FirstJobId=$first_job
NodeName=hp-a100 NodeHostname=$host NodeAddr=127.0.0.1 Port=$pa CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=2000 Gres=gpu:a100:2 State=UNKNOWN
NodeName=hp-t4 NodeHostname=$host NodeAddr=127.0.0.1 Port=$pb CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=2000 Gres=gpu:t4:2 State=UNKNOWN
PartitionName=debug Nodes=hp-a100,hp-t4 Default=YES MaxTime=INFINITE State=UP
CONF
	export SLURM_CONF="$base/slurm.conf"
	slurmctld -c -f "$SLURM_CONF" ||
		die "slurmctld did not start: $(tail -n 3 "$base/log/slurmctld.log" 2>/dev/null)"
	for n in hp-a100 hp-t4; do
		start_slurmd "$base" "$n" ||
			die "slurmd '$n' did not start: $(tail -n 3 "$base/log/slurmd-$n.log" 2>/dev/null)"
	done

	# Wait (bounded: 30 s) for both nodes to be idle.
	local st="" i
	for i in $(seq 1 150); do
		st=$(sinfo -h -N -o %T 2>/dev/null | sort -u | tr '\n' ' ')
		[ "$st" = "idle " ] && break
		case "$st" in
		*drain* | *inval* | *down*)
			scontrol update nodename=hp-a100,hp-t4 state=resume >/dev/null 2>&1
			;;
		esac
		sleep 0.2
	done
	[ "$st" = "idle " ] ||
		die "nodes are '$st', not idle, after 30 s: $(tail -n 3 "$base/log/slurmctld.log")"
	echo "SLURM_CONF=$SLURM_CONF"
	echo "HP_SLURM_NODES='hp-a100 hp-t4'"
	echo "HP_SLURM_PMIX=$pmix"
}

stop_pid() {
	local f=$1 pid i
	alive "$f" || return 0
	pid=$(cat "$f" 2>/dev/null)
	kill "$pid" 2>/dev/null || return 0
	for i in $(seq 1 50); do
		alive "$f" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
}

stop() {
	local base=$1 i
	[ -f "$base/slurm.conf" ] || return 0
	export SLURM_CONF="$base/slurm.conf"
	# Our cluster's jobs first, so no slurmstepd outlives the daemons.
	if alive "$base/slurmctld.pid"; then
		scancel --full --quiet -u "$(id -un)" 2>/dev/null
		for i in $(seq 1 50); do
			[ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
	stop_pid "$base/slurmd-hp-a100.pid"
	stop_pid "$base/slurmd-hp-t4.pid"
	stop_pid "$base/slurmctld.pid"
	stop_pid "$base/munge/munged.pid"
}

case "${1:-}" in
start) start "${2:?give BASE}" ;;
stop) stop "${2:?give BASE}" ;;
check) check ;;
_slurmd)
	# Inside the private mount namespace: this node's own PMIx folder,
	# and its own /dev/shm.  The two nodes have one host name, so Open
	# MPI's shared-memory files (/dev/shm/vader_segment.HOST.JOBID.LOCALRANK)
	# of two ranks with the same local rank, one on each node, would be one
	# file: each rank would take the other's messages (seen: segfaults in
	# mca_btl_vader_poll_handle_frag).  Real nodes do not share /dev/shm.
	mount --bind "$2/nodes/$3/pmix" "$2/pmix" || exit 1
	if [ -d /dev/shm ]; then
		mount -t tmpfs -o mode=1777,size=256m "shm-$3" /dev/shm || exit 1
	fi
	exec slurmd -N "$3" -f "$2/slurm.conf"
	;;
*)
	echo "usage: tests/slurm/slurm.sh start|stop BASE | check" >&2
	exit 2
	;;
esac
