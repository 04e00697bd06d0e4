#!/bin/sh
# allreduce_netns.sh - measure MPI_Allreduce between "nodes" that are
# network namespaces of this machine, one rank each, every node joined to
# a bridge (in a namespace of its own, the switch) by a veth pair whose two
# ends are shaped by tc's token-bucket filter (tbf) to the same rate: each
# node has a full-duplex link of that rate to the switch.  Open MPI's TCP
# BTL carries the all-reduce; mpirun runs in the first namespace and
# reaches the others through an rsh agent that enters them (ip netns exec),
# each with its own host name (/etc/netns/NAME/hosts, unshare --uts).
#
# usage: benchmarks/allreduce_netns.sh [-r "2 3 4"] [-b "200 1000 4000"]
#            [-m MIN_BYTES] [-M MAX_BYTES] [-n REPEATS] [-o OUT.tsv]
#   -r  rank (namespace) counts            (default "2 3 4")
#   -b  link rates, Mbit/s                  (default "200 1000 4000")
#   -m  smallest all-reduce, bytes          (default 1024)
#   -M  largest, bytes (x4 steps)           (default 67108864; capped so
#       that one call takes about a second at the rate)
#   -n  timed repeats per size (median)     (default 5)
#   -a  Open MPI all-reduce algorithms      (default "ring recdbl"):
#       ring (coll_tuned algorithm 4), recdbl (recursive doubling, 3),
#       default (Open MPI's own choice per size and rank count)
#   -o  output, tab-separated: ranks rate_mbps bytes median_s min_s max_s
#       algorithm (default: stdout)
# Needs root (namespaces, tc), iproute2, unshare, mpicc and mpirun.  Prints
# "skip allreduce_netns: why" and exits 77 when namespaces cannot be made.
# Everything it makes (namespaces, /etc/netns/NAME, a temporary folder) is
# removed on exit.
set -u
ranks="2 3 4"
rates="200 1000 4000"
min=1024
max=67108864
reps=5
algs="ring recdbl"
out=
while getopts r:b:m:M:n:o:a: o; do
	case $o in
	r) ranks=$OPTARG ;;
	b) rates=$OPTARG ;;
	m) min=$OPTARG ;;
	M) max=$OPTARG ;;
	n) reps=$OPTARG ;;
	a) algs=$OPTARG ;;
	o) out=$OPTARG ;;
	*) echo "usage: $0 [-r RANKS] [-b MBPS] [-m MIN] [-M MAX] [-n REPEATS] [-o OUT]" >&2
	   exit 2 ;;
	esac
done

skip() {
	echo "skip allreduce_netns: $*"
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root for network namespaces and tc"
for c in ip tc unshare mpicc mpirun; do
	command -v $c >/dev/null 2>&1 || skip "no $c"
done

here=$(cd "$(dirname "$0")" && pwd)
tag=hpar$$
br=${tag}s
tmp=$(mktemp -d /tmp/allreduce_netns.XXXXXX) || exit 1
nmax=0
for n in $ranks; do [ "$n" -gt $nmax ] && nmax=$n; done

cleanup() {
	i=0
	while [ $i -lt $nmax ]; do
		ip netns del ${tag}n$i 2>/dev/null
		rm -rf /etc/netns/${tag}n$i
		i=$((i + 1))
	done
	ip netns del $br 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add $br 2>/dev/null || skip "cannot make a network namespace"
ip netns exec $br ip link add sw type bridge || skip "cannot make a bridge"
ip netns exec $br ip link set sw up
i=0
while [ $i -lt $nmax ]; do
	ns=${tag}n$i
	ip netns add $ns || skip "cannot make namespace $ns"
	ip link add v netns $ns type veth peer name p$i netns $br ||
		skip "cannot make a veth pair"
	ip netns exec $ns ip addr add 10.77.0.$((i + 1))/24 dev v
	ip netns exec $ns ip link set lo up
	ip netns exec $ns ip link set v up
	ip netns exec $br ip link set p$i master sw
	ip netns exec $br ip link set p$i up
	i=$((i + 1))
done
# Host names inside the namespaces (ip netns exec bind-mounts
# /etc/netns/NAME/hosts over /etc/hosts).
i=0
while [ $i -lt $nmax ]; do
	mkdir -p /etc/netns/${tag}n$i
	{
		echo "127.0.0.1 localhost"
		j=0
		while [ $j -lt $nmax ]; do
			echo "10.77.0.$((j + 1)) ${tag}n$j"
			j=$((j + 1))
		done
	} >/etc/netns/${tag}n$i/hosts
	i=$((i + 1))
done

cat >"$tmp/nsrsh" <<'EOF'
#!/bin/sh
host=$1
shift
exec ip netns exec "$host" unshare --uts sh -c "hostname $host; $*"
EOF
chmod +x "$tmp/nsrsh"
mpicc -O2 -o "$tmp/allreduce_mpi" "$here/allreduce_mpi.c" ||
	{ echo "allreduce_netns: cannot build allreduce_mpi" >&2; exit 1; }

shape() { # rate_mbps: both ends of every link
	rate=$1
	# burst: 1 ms at the rate, at least ten 1514-byte frames
	burst=$((rate * 1000 / 8))
	[ $burst -lt 15140 ] && burst=15140
	i=0
	while [ $i -lt $nmax ]; do
		ip netns exec ${tag}n$i tc qdisc replace dev v root tbf \
			rate ${rate}mbit burst $burst latency 20ms || return 1
		ip netns exec $br tc qdisc replace dev p$i root tbf \
			rate ${rate}mbit burst $burst latency 20ms || return 1
		i=$((i + 1))
	done
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -n "$out" ] && : >"$out"
for rate in $rates; do
	shape $rate || skip "tc tbf refused rate ${rate}mbit"
	for alg in $algs; do
	case $alg in
	ring) amca="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4" ;;
	recdbl) amca="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 3" ;;
	default) amca= ;;
	*) echo "allreduce_netns: unknown algorithm '$alg'" >&2; exit 2 ;;
	esac
	for n in $ranks; do
		hf=$tmp/hosts.$n
		: >"$hf"
		i=0
		while [ $i -lt $n ]; do
			echo "${tag}n$i slots=1" >>"$hf"
			i=$((i + 1))
		done
		# Largest size: about one second a call at this rate.
		hi=$min
		while [ $((hi * 4)) -le $max ] &&
			[ $((hi * 4 / 1000 * 8 / rate)) -le 700 ]; do
			hi=$((hi * 4))
		done
		echo "allreduce_netns: $n ranks at $rate Mbit/s, $alg, $min-$hi bytes" >&2
		ip netns exec ${tag}n0 unshare --uts sh -c "hostname ${tag}n0;
		    timeout 600 mpirun --hostfile $hf \
		    --mca plm_rsh_agent $tmp/nsrsh \
		    --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
		    --mca oob_tcp_if_include 10.77.0.0/24 \
		    --mca mpi_yield_when_idle 1 $amca -np $n \
		    $tmp/allreduce_mpi $min $hi $reps" >"$tmp/run.out" ||
			{ echo "allreduce_netns: mpirun failed ($n ranks, $rate Mbit/s)" >&2
			  cat "$tmp/run.out" >&2; exit 1; }
		while read -r b r med lo hi2; do
			line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s' "$r" "$rate" "$b" "$med" "$lo" "$hi2" "$alg")
			if [ -n "$out" ]; then echo "$line" >>"$out"; else echo "$line"; fi
		done <"$tmp/run.out"
	done
	done
done
