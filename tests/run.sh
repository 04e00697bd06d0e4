#!/usr/bin/env bash
# Run the whole suite against a build folder: the unit tests (one process
# per test), the CLI tests (tests/cli/*.sh) and the integration tests that
# start a real hetpoold (tests/integration/*.sh), each a sequence of checks
# printing "ok NAME", "FAIL NAME: why" or "skip NAME: why".  A test that
# cannot run here is skipped, counted on a line of its own, never passed.
# Nothing may hang the suite: the unit tests get HP_UNIT_TIMEOUT seconds
# (1200) and each CLI script HP_SCRIPT_TIMEOUT (900), then it is killed
# and counted as a failure.  Ends with the line "N passed, N failed".
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
export HP_BIN="$root/$build/bin"
[ -d "$HP_BIN" ] || HP_BIN="$build/bin"
export HP_ROOT="$root"
export HP_SHARED_DIR="${HP_SHARED_DIR:-$root/../shared}"
passed=0
failed=0
skipped=0

unit_limit=${HP_UNIT_TIMEOUT:-1200}
script_limit=${HP_SCRIPT_TIMEOUT:-900}
out=$(mktemp)
t0=$SECONDS
timeout -k 10 "$unit_limit" "$HP_BIN/hp_unit" | tee "$out"
echo "time hp_unit $((SECONDS - t0)) s"
line=$(grep -E '^unit: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
s=$(grep -E '^unit: [0-9]+ skipped$' "$out" | tail -n 1 | sed -E 's/unit: ([0-9]+) skipped/\1/')
skipped=$((skipped + ${s:-0}))
if [ -n "$line" ]; then
	p=$(echo "$line" | sed -E 's/unit: ([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')
	passed=$((passed + p))
	failed=$((failed + f))
else
	echo "FAIL unit test binary did not finish (within ${unit_limit} s?)"
	failed=$((failed + 1))
fi
rm -f "$out"

for t in "$root"/tests/cli/*.sh "$root"/tests/integration/*.sh; do
	[ -f "$t" ] || continue
	out=$(mktemp)
	t0=$SECONDS
	timeout -k 10 "$script_limit" bash "$t" >"$out" 2>&1
	rc=$?
	cat "$out"
	echo "time $(basename "$t") $((SECONDS - t0)) s"
	p=$(grep -c '^ok ' "$out")
	f=$(grep -c '^FAIL ' "$out")
	s=$(grep -c '^skip ' "$out")
	skipped=$((skipped + s))
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "FAIL $(basename "$t") did not finish within ${script_limit} s: killed"
		f=$((f + 1))
	elif [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $(basename "$t") exited $rc"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	rm -f "$out"
done

echo "$skipped skipped (cannot run on this machine: see the 'skip' lines above)"
echo "time: $SECONDS s in all"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
