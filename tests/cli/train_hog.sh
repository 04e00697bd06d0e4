#!/usr/bin/env bash
# train_hog.sh - rebalancing under a real imbalance: two CPU hogs pinned
# to core 1 slow the rank bound there, and hetpool-train (2 ranks under
# the real mpirun) moves samples to the rank that finished its share
# first, keeping the global batch.  On a shared machine other people's
# processes may make either core the slower one, so the direction is
# checked against the times the trainer logged.  It needs the two cores
# to differ by what the hogs do: anything else running floats to core 0
# and evens them out.
# hp-test: alone (it makes one core slower; tests/run.sh runs nothing beside it)
. "$(dirname "$0")/lib.sh"
TRAIN=$HP_BIN/hetpool-train
ROOT=${HP_ROOT:?}
CNN=$ROOT/tests/data/train/cnn.json
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none # no CMA in containers
HOGS=()
cleanup() {
	for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

if [ ! -x "$TRAIN" ]; then
	echo "skip hog: no $TRAIN (a build without the engine)"
	exit 0
fi
if ! command -v mpirun >/dev/null || [ "$(nproc)" -lt 2 ] || ! command -v taskset >/dev/null; then
	echo "skip hog: needs mpirun, 2 cores and taskset"
	exit 0
fi
# Under AddressSanitizer Open MPI's own allocations are reported as leaks
# at exit (see train.sh): leak checking is off for the ranks.
MPI_ASAN="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

check() { # check NAME FILE EXPR: a Python expression over the step lines (s) and events (e)
	local out
	if out=$("$PY" - "$2" "$3" 2>&1 <<'PY'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
s = [x for x in L if 'step' in x]
e = [x for x in L if 'event' in x]
v = eval(sys.argv[2])
print(v)
sys.exit(0 if v not in (False, None) else 1)
PY
	); then ok "$1"; else fail "$1" "$3 is $out"; fi
}

for _ in 1 2; do
	taskset -c 1 sh -c 'while :; do :; done' &
	HOGS+=($!)
done
ASAN_OPTIONS=$MPI_ASAN timeout -k 5 300 mpirun -np 2 --bind-to core --map-by core "$TRAIN" \
	--model "$CNN" --data synthetic --batch 256 --steps 30 --threads 1 --rebalance-window 6 \
	--eval-samples 64 --synthetic-samples 2048 --out "$TMP/hog" 2>"$TMP/err"
rc=$?
for p in "${HOGS[@]}"; do kill "$p" 2>/dev/null; done
HOGS=()
[ $rc -eq 0 ] && ok hog_runs || fail hog_runs "exit $rc: $(tail -n 3 "$TMP/err")"
check hog_resplit "$TMP/hog/metrics.jsonl" "len([x for x in e if x['event'] == 'rebalance']) > 0"
check hog_towards_faster "$TMP/hog/metrics.jsonl" "all((x['local_batches_after'][0] > x['local_batches_before'][0]) == (x['rank_step_s_before'][0] < x['rank_step_s_before'][1]) for x in e if x['event'] == 'rebalance')"
check hog_global_kept "$TMP/hog/metrics.jsonl" "all(sum(x['local_batches']) == 256 for x in s)"
