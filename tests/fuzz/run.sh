#!/usr/bin/env bash
# Run each libFuzzer target for SECONDS, seeded from tests/fuzz/seeds/<name>
# and the sample models; crashes land in build-fuzz/crashes/<name>/.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET]
set -u
build=${1:-build-fuzz}
secs=${2:-60}
only=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
status=0
for bin in "$build"/bin/fuzz_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	[ -n "$only" ] && [ "$name" != "$only" ] && continue
	corpus="$build/corpus/$name"
	crashes="$build/crashes/$name"
	mkdir -p "$corpus" "$crashes"
	[ -d "$root/tests/fuzz/seeds/$name" ] && cp -n "$root"/tests/fuzz/seeds/"$name"/* "$corpus"/ 2>/dev/null
	if [ "$name" = fuzz_onnx ]; then
		cp -n "$root"/data/models/*.onnx "$corpus"/ 2>/dev/null
		cp -n "$root"/tests/data/models/*.onnx "$corpus"/ 2>/dev/null
		cp -n "$root"/tests/data/onnx/*.onnx "$corpus"/ 2>/dev/null
	fi
	echo "== $name for ${secs}s"
	ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" -max_len=262144 \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$crashes/" "$corpus" >"$build/$name.log" 2>&1
	rc=$?
	grep -E '^stat::number_of_executed_units|^Done|ERROR|SUMMARY' "$build/$name.log" | tail -5
	if [ $rc -ne 0 ]; then
		echo "FAIL $name (exit $rc): see $build/$name.log"
		status=1
	else
		echo "ok   $name"
	fi
done
exit $status
