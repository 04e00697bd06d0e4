#!/usr/bin/env bash
# Run each libFuzzer target for SECONDS, seeded from tests/fuzz/seeds/<name>
# and the sample models; crashes land in build-fuzz/crashes/<name>/.
# FUZZ_JOBS targets run at once (default: the cores, at most 4; each
# target is one process on one core); their results are printed in name
# order when all have ended.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET]
set -u
build=${1:-build-fuzz}
secs=${2:-60}
only=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]* | 0)
	echo "tests/fuzz/run.sh: FUZZ_JOBS='$jobs': give a count of 1 or more" >&2
	exit 2
	;;
esac
[ -n "${FUZZ_JOBS:-}" ] || [ "$jobs" -le 4 ] || jobs=4

# One target: its corpus seeded, then fuzzed; its exit status in
# $build/$name.rc.
fuzz_one() {
	local bin=$1 name corpus crashes
	name=$(basename "$bin")
	corpus="$build/corpus/$name"
	crashes="$build/crashes/$name"
	mkdir -p "$corpus" "$crashes"
	[ -d "$root/tests/fuzz/seeds/$name" ] && cp -n "$root"/tests/fuzz/seeds/"$name"/* "$corpus"/ 2>/dev/null
	if [ "$name" = fuzz_onnx ]; then
		cp -n "$root"/data/models/*.onnx "$corpus"/ 2>/dev/null
		cp -n "$root"/tests/data/models/*.onnx "$corpus"/ 2>/dev/null
		cp -n "$root"/tests/data/onnx/*.onnx "$corpus"/ 2>/dev/null
	fi
	ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" -max_len=262144 \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$crashes/" "$corpus" >"$build/$name.log" 2>&1
	echo $? >"$build/$name.rc"
}

names=()
for bin in "$build"/bin/fuzz_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	[ -n "$only" ] && [ "$name" != "$only" ] && continue
	names+=("$name")
	rm -f "$build/$name.rc"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		sleep 0.5
	done
	echo "== $name for ${secs}s"
	fuzz_one "$bin" &
done
wait

status=0
for name in "${names[@]}"; do
	rc=$(cat "$build/$name.rc" 2>/dev/null || echo 1)
	echo "== $name"
	grep -E '^stat::number_of_executed_units|^Done|ERROR|SUMMARY' "$build/$name.log" | tail -5
	if [ "$rc" -ne 0 ]; then
		echo "FAIL $name (exit $rc): see $build/$name.log"
		status=1
	else
		echo "ok   $name"
	fi
done
exit $status
