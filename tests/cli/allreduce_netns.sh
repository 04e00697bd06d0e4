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
# hp-test: alone (it times transfers; tests/run.sh runs nothing beside it)
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
# hetpool-train's own all-reduce between 2 nodes at 200 Mbit/s: a wide
# MLP (5.8 M parameters, 23.3 MB of gradients), 5 steps.  Each rank sends
# the whole buffer once (half in the reduce-scatter, half in the
# all-gather) while receiving as much: 0.93 s at the line rate both ways.
# The rank that arrives last at the all-reduce waits for nobody: its time
# is the exchange.  With Open MPI's one TCP connection a peer the two
# directions took turns: 1.42-1.45 s (1.53x); with the trainer's two
# (trainer/comm.c), 1.02-1.03 s (1.10x; 2-7 MB: 1.41-1.58x against
# 1.08-1.11x; the sanitizer build, whose sums are slower, 1.20x).
# Asserted: at least 0.9x the line-rate time (the shaping holds) and
# under 1.4x it.  A loaded machine (or the sanitizer build on one) can
# pass 1.4x with two connections; then the same run with one connection,
# side by side, decides: two must be at least 15% faster (what the
# check is for is that the trainer's all-reduce does not take turns).
# When the pair is too alike to tell (a busy machine slowed both: 1.50 s
# and 1.52 s under ASan beside another training), it runs once more.
# The sanitizer build checks the shaping and that training ends, not the
# speed: its sums are CPU-bound, and on CI's host two connections took
# 1.42-1.44 s against one's 1.31 s, twice (the normal build judges it).
(
	NETNS_WHAT=allreduce_netns_trainer
	. "${HP_ROOT:-.}/benchmarks/allreduce_netns.inc"
	netns_up 2
	netns_shape 200 || skip "tc tbf refused rate 200mbit"
	model=$(cd "${HP_ROOT:-.}" && pwd)/tests/data/train/wide-mlp.json
	sanitized=0
	grep -qs '^HP_SANITIZE:BOOL=ON' "$HP_BIN/../CMakeCache.txt" && sanitized=1
	# Open MPI leaks at exit (its plugins); the sanitizer build's ranks
	# keep every other check (as tests/cli/train.sh runs them)
	train() { # OUT [MCA]: 5 steps between the 2 namespaces (a second
		# try, on a busy machine, starts over in the same OUT)
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
			NETNS_MCA="${2:-}" netns_mpirun 2 "$HP_BIN/hetpool-train \
			--model $model --data synthetic --batch 8 --steps 5 \
			--threads 1 --eval-samples 8 --overwrite --out $1" >"$1.out" 2>&1
	}
	exchange() { # METRICS: the median exchange, seconds
		python3 - "$1" <<'EOF2'
import json, sys
m = [json.loads(l) for l in open(sys.argv[1])]
m = [x for x in m if "rank_allreduce_s" in x][1:]
v = sorted(min(x["rank_allreduce_s"]) for x in m)
print("%.6f %d" % (v[len(v) // 2], len(v)))
EOF2
	}
	# a machine busy enough to slow both runs alike cannot tell them
	# apart: the pair runs once more before the check fails
	for attempt in 1 2; do
		if ! train "$tmp/run"; then
			fail allreduce_netns_trainer "training failed: $(tail -c 300 "$tmp/run.out")"
			exit 0
		fi
		read -r med n < <(exchange "$tmp/run/metrics.jsonl")
		line=$(python3 -c 'print(5824522 * 4 * 8 / 200e6)') # once each way
		echo "allreduce_netns: hetpool-train, 2 nodes at 200 Mbit/s, 23.3 MB: exchange $med s (median of $n steps), line rate both ways $line s"
		if python3 -c "import sys; m, l = $med, $line; sys.exit(0 if 0.9 * l <= m < 1.4 * l else 1)"; then
			ok allreduce_netns_trainer
			exit 0
		fi
		python3 -c "import sys; sys.exit(0 if $med >= 0.9 * $line else 1)" ||
			{ fail allreduce_netns_trainer "$med s, under 0.9x the $line s the line rate needs: the shaping did not hold"; exit 0; }
		if [ "$sanitized" = 1 ]; then
			ok allreduce_netns_trainer_shaped
			echo "skip allreduce_netns_trainer: $med s, over 1.4x the $line s line rate in the sanitizer build, whose sums are CPU-bound (the normal build checks the speed)"
			exit 0
		fi
		if ! train "$tmp/one" "--mca btl_tcp_links 1"; then
			fail allreduce_netns_trainer "training failed: $(tail -c 300 "$tmp/one.out")"
			exit 0
		fi
		read -r one n1 < <(exchange "$tmp/one/metrics.jsonl")
		echo "allreduce_netns: over 1.4x the line rate; with one TCP connection a peer: $one s (median of $n1 steps)"
		if python3 -c "import sys; sys.exit(0 if $med < 0.85 * $one else 1)"; then
			ok allreduce_netns_trainer
			exit 0
		fi
		[ $attempt = 1 ] && echo "allreduce_netns: both alike ($med s, $one s): the machine is busy; once more"
	done
	fail allreduce_netns_trainer "$med s with the trainer's connections, $one s with one: not within 1.4x the $line s line rate, nor 15% faster than one connection (twice)"
)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 77 ] && fail allreduce_netns_trainer "exit $rc"
# Nothing left behind.
if ip netns list 2>/dev/null | grep -q '^hpar'; then
	fail allreduce_netns_cleanup "namespaces left: $(ip netns list | grep '^hpar')"
else
	ok allreduce_netns_cleanup
fi
