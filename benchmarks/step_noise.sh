#!/usr/bin/env bash
# step_noise.sh - how much one rank's step time varies from step to step on
# this machine, and the ceiling that puts on a synchronous step.
#
# A synchronous data-parallel step waits for the slower rank.  With the
# ranks' mean step times made equal (what the rebalancer does), what is
# left is each rank's step-to-step noise: the step takes the larger of two
# noisy times, so two ranks deliver at most 1 / E[max(t0/m0, t1/m1)] of
# the sum of their own throughputs (the "ideal" of bench_rebalance.sh),
# whatever the split.  This measures that ceiling directly: two 1-rank
# trainers at once, as bench_rebalance.sh measures its ideal (rank 0's
# batch on core 0, rank 1's on core 1 with a busy loop sharing it), each
# step's compute time divided by its run's mean, the two series paired
# step by step.  It also runs one trainer alone on core 0 with nothing on
# core 1: the noise of the machine itself, with no hog and no MPI.
#
# Usage: benchmarks/step_noise.sh [BUILD_DIR]
# Knobs: NOISE_STEPS (170; the first 20 are dropped), NOISE_BATCHES
#        ("671 353": the split bench_rebalance.sh's re-split reaches),
#        NOISE_ROUNDS (3).
# Prints per round the CV of each series and the ceiling; the medians.
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
train=$build/bin/hetpool-train
steps=${NOISE_STEPS:-170}
read -r b0 b1 <<<"${NOISE_BATCHES:-671 353}"
rounds=${NOISE_ROUNDS:-3}
spec=$root/tests/data/train/cnn.json

if [ ! -x "$train" ] || ! command -v taskset >/dev/null || [ "$(nproc)" -lt 2 ]; then
	echo "skip step_noise: needs $train, taskset and 2 cores"
	exit 0
fi
tmp=$(mktemp -d)
hog=
cleanup() {
	[ -n "$hog" ] && kill "$hog" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# run CORE BATCH DIR: one 1-rank trainer pinned to CORE
run() {
	taskset -c "$1" "$train" --model "$spec" --data synthetic --synthetic-samples 8192 \
		--threads 1 --eval-samples 64 --lr 0.02 --batch "$2" --steps "$steps" \
		--rebalance off --out "$3" >/dev/null 2>&1
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "per-step compute time (rank_step_s) over steps 21-$steps; ceiling = 1 / mean over steps of max(t0/mean0, t1/mean1)"
printf '%5s %14s %16s %16s %9s %9s\n' round "alone CV" "core 0 CV" "core 1+hog CV" ceiling "normal"
for r in $(seq 1 "$rounds"); do
	rm -rf "${tmp:?}/alone" "$tmp/r0" "$tmp/r1"
	run 0 "$b0" "$tmp/alone"
	taskset -c 1 sh -c 'while :; do :; done' &
	hog=$!
	run 0 "$b0" "$tmp/r0" &
	p0=$!
	run 1 "$b1" "$tmp/r1"
	wait "$p0"
	kill "$hog" 2>/dev/null
	wait "$hog" 2>/dev/null
	hog=
	python3 - "$tmp" "$r" <<'PY' | tee -a "$tmp/rows.txt"
import json, math, statistics as st, sys
d, r = sys.argv[1], sys.argv[2]
def series(name):
    xs = []
    for line in open(f"{d}/{name}/metrics.jsonl"):
        o = json.loads(line)
        if "rank_step_s" in o:
            xs.append(o["rank_step_s"][0])
    return xs[20:]
a, x0, x1 = series("alone"), series("r0"), series("r1")
cv = lambda xs: st.pstdev(xs) / st.mean(xs)
n = min(len(x0), len(x1))
m0, m1 = st.mean(x0[:n]), st.mean(x1[:n])
ceiling = 1 / st.mean(max(p / m0, q / m1) for p, q in zip(x0[:n], x1[:n]))
# the same from the CVs, for two independent normal times of equal mean
normal = 1 / (1 + math.sqrt(cv(x0) ** 2 + cv(x1) ** 2) / math.sqrt(2 * math.pi))
print("%5s %13.1f%% %15.1f%% %15.1f%% %8.1f%% %8.1f%%" % (r, 100 * cv(a), 100 * cv(x0), 100 * cv(x1), 100 * ceiling, 100 * normal))
PY
done
python3 - "$tmp/rows.txt" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
col = lambda i: [float(x[i].rstrip("%")) for x in rows]
print("median: alone CV %.1f%%, core 0 CV %.1f%%, core 1 with the hog CV %.1f%%; ceiling on re-split / ideal %.1f%% (range %.1f-%.1f%%), from the CVs for normal noise %.1f%%" % (
    st.median(col(1)), st.median(col(2)), st.median(col(3)), st.median(col(4)), min(col(4)), max(col(4)), st.median(col(5))))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
