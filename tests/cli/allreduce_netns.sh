#!/usr/bin/env bash
# The all-reduce machinery against a real one: Open MPI's ring all-reduce
# between 3 network namespaces of this machine, each joined to a bridge by
# a veth link shaped to 200 Mbit/s by tc's token-bucket filter
# (benchmarks/allreduce_netns.sh, which removes what it makes), at 1 and
# 4 MB, median of 3.  What is asserted does not depend on the machine's
# speed: the shaping holds (no all-reduce beats the time its bytes need
# on the shaped links: each rank sends 2 (n - 1) / n of the buffer in a
# ring), the larger buffer takes longer, and the model gives a time for
# each.  How close the model comes (25% in the issue, measured with more
# repeats and sizes on a quiet machine) is the benchmark's to report
# (benchmarks/allreduce_netns.sh, make bench): a suite running beside
# other work moves measured times by tens of percent.  Skips where
# namespaces cannot be made (not root, no iproute2/tc, no mpirun).
. "$(dirname "$0")/lib.sh"

FIT=${HP_BIN}/bench_allreduce_fit
if [ ! -x "$FIT" ]; then
	echo "skip allreduce_netns: no $FIT (built with the benchmarks)"
	exit 0
fi
sh "${HP_ROOT:-.}/benchmarks/allreduce_netns.sh" -r 3 -b 200 -m 1048576 \
	-M 4194304 -n 3 -a ring -o "$TMP/m.tsv" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 77 ]; then
	cat "$TMP/out"
	exit 0
elif [ $rc -ne 0 ] || [ ! -s "$TMP/m.tsv" ]; then
	fail allreduce_netns "benchmark exit $rc: $(tail -c 300 "$TMP/err")"
	exit 0
fi
bad=
n=0
prev=0
while read -r ranks mbps bytes med lo hi alg; do
	pred=$("$FIT" --predict "$ranks" "$mbps" "$bytes")
	# the payload alone over the shaped link (headers only add to it);
	# 0.9 for the tbf burst and the timer
	floor=$(awk -v n="$ranks" -v b="$bytes" -v r="$mbps" \
		'BEGIN { printf "%.6f", 0.9 * 2 * (n - 1) / n * b * 8 / (r * 1e6) }')
	if ! awk -v m="$med" -v f="$floor" 'BEGIN { exit !(m >= f) }'; then
		bad="$bad ${bytes}B in $med s, under the $floor s its bytes need at ${mbps} Mbit/s (shaping not applied?);"
	fi
	if ! awk -v m="$med" -v p="$prev" 'BEGIN { exit !(m > p) }'; then
		bad="$bad ${bytes}B took $med s, not more than the smaller buffer's $prev s;"
	fi
	if ! awk -v p="$pred" 'BEGIN { exit !(p > 0 && p < 1e3) }'; then
		bad="$bad ${bytes}B: the model gave '$pred';"
	fi
	echo "allreduce_netns: ${bytes} B over $ranks ranks at $mbps Mbit/s: measured $med s (floor $floor s), model $pred s"
	prev=$med
	n=$((n + 1))
done <"$TMP/m.tsv"
if [ $n -ne 2 ]; then
	fail allreduce_netns "expected 2 sizes, got $n: $(cat "$TMP/m.tsv")"
elif [ -n "$bad" ]; then
	fail allreduce_netns "$bad"
else
	ok allreduce_netns
fi
# Nothing left behind.
if ip netns list 2>/dev/null | grep -q '^hpar'; then
	fail allreduce_netns_cleanup "namespaces left: $(ip netns list | grep '^hpar')"
else
	ok allreduce_netns_cleanup
fi
