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

here=$(cd "$(dirname "$0")" && pwd)
. "$here/allreduce_netns.inc"
command -v mpicc >/dev/null 2>&1 || skip "no mpicc"
n0=0
for n in $ranks; do [ "$n" -gt $n0 ] && n0=$n; done
netns_up $n0
mpicc -O2 -o "$tmp/allreduce_mpi" "$here/allreduce_mpi.c" ||
	{ echo "allreduce_netns: cannot build allreduce_mpi" >&2; exit 1; }

[ -n "$out" ] && : >"$out"
for rate in $rates; do
	netns_shape $rate || skip "tc tbf refused rate ${rate}mbit"
	for alg in $algs; do
	case $alg in
	ring) amca="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4" ;;
	recdbl) amca="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 3" ;;
	default) amca= ;;
	*) echo "allreduce_netns: unknown algorithm '$alg'" >&2; exit 2 ;;
	esac
	for n in $ranks; do
		# Largest size: about one second a call at this rate.
		hi=$min
		while [ $((hi * 4)) -le $max ] &&
			[ $((hi * 4 / 1000 * 8 / rate)) -le 700 ]; do
			hi=$((hi * 4))
		done
		echo "allreduce_netns: $n ranks at $rate Mbit/s, $alg, $min-$hi bytes" >&2
		NETNS_MCA="$amca" netns_mpirun $n "$tmp/allreduce_mpi $min $hi $reps" \
			>"$tmp/run.out" ||
			{ echo "allreduce_netns: mpirun failed ($n ranks, $rate Mbit/s)" >&2
			  cat "$tmp/run.out" >&2; exit 1; }
		while read -r b r med lo hi2; do
			line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s' "$r" "$rate" "$b" "$med" "$lo" "$hi2" "$alg")
			if [ -n "$out" ]; then echo "$line" >>"$out"; else echo "$line"; fi
		done <"$tmp/run.out"
	done
	done
done
