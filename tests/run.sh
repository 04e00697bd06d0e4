#!/usr/bin/env bash
# Run the whole suite against a build folder: the unit tests (one process
# per test), the CLI tests (tests/cli/*.sh) and the integration tests that
# start a real hetpoold (tests/integration/*.sh), each a sequence of checks
# printing "ok NAME", "FAIL NAME: why" or "skip NAME: why".  A test that
# cannot run here is skipped, counted on a line of its own, never passed.
# Nothing may hang the suite: the unit tests get HP_UNIT_TIMEOUT seconds
# (1200) and each CLI script HP_SCRIPT_TIMEOUT (900), then it is killed
# and counted as a failure.  Ends with the line "N passed, N failed".
#
# Most scripts spend their time waiting on processes they started
# (mpirun, slurmctld, hetpoold), so HP_TEST_JOBS of them (default 2 on a
# machine of 2 cores or more, else 1) run at once, each into a file of its
# own that is printed whole when it ends.  A script whose first lines say
# "hp-test: alone" (it measures speed, or loads the cores on purpose) runs
# with nothing beside it.  Each task gets a TMPDIR of its own, removed after it.
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
jobs=${HP_TEST_JOBS:-}
if [ -z "$jobs" ]; then
	jobs=1
	[ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && jobs=2
fi
case $jobs in '' | *[!0-9]* | 0)
	echo "tests/run.sh: HP_TEST_JOBS='$jobs': give a count of 1 or more" >&2
	exit 2
	;;
esac
# short: the tasks' TMPDIRs are under it, and Unix sockets (Open MPI's,
# hetpoold's) have room for 107 bytes of path
work=$(mktemp -d /tmp/hpt.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The tasks: the scripts marked alone, one by one, then the unit tests and
# the other scripts, in name order, as many at once as HP_TEST_JOBS says.
alone=()
shared=()
for t in "$root"/tests/cli/*.sh "$root"/tests/integration/*.sh; do
	[ -f "$t" ] || continue
	[ "$(basename "$t")" = lib.sh ] && continue
	if head -n 20 "$t" | grep -q 'hp-test: alone'; then
		alone+=("$t")
	else
		shared+=("$t")
	fi
done

running=0
declare -A started=() pids=()

# Start task NAME (a script, or "hp_unit") in the background.
start() {
	local name=$1 t=$2
	local o="$work/$name"
	started[$name]=$SECONDS
	(
		export TMPDIR="$o.d"
		mkdir -p "$TMPDIR"
		if [ "$t" = hp_unit ]; then
			timeout -k 10 "$unit_limit" "$HP_BIN/hp_unit" >"$o.out" 2>&1
		else
			# the CLI and integration tests plan for a CPU-only
			# host: a GPU host's GPUs are hidden from them (the
			# unit tests' GPU checks and benchmarks/gpu_check.sh
			# still see them)
			CUDA_VISIBLE_DEVICES= timeout -k 10 "$script_limit" \
				bash "$t" >"$o.out" 2>&1
		fi
		echo $? >"$o.rc.tmp"
		mv "$o.rc.tmp" "$o.rc"
	) &
	pids[$name]=$!
	running=$((running + 1))
}

# Print and count a task that has ended.
report() {
	local name=$1 o="$work/$1"
	local rc p f s line
	rc=$(cat "$o.rc")
	cat "$o.out"
	echo "time $name $((SECONDS - started[$name])) s"
	if [ "$name" = hp_unit ]; then
		line=$(grep -E '^unit: [0-9]+ passed, [0-9]+ failed$' "$o.out" | tail -n 1)
		s=$(grep -E '^unit: [0-9]+ skipped$' "$o.out" | tail -n 1 | sed -E 's/unit: ([0-9]+) skipped/\1/')
		skipped=$((skipped + ${s:-0}))
		if [ -n "$line" ]; then
			p=$(echo "$line" | sed -E 's/unit: ([0-9]+) passed.*/\1/')
			f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')
		else
			echo "FAIL unit test binary did not finish (within ${unit_limit} s?)"
			p=0
			f=1
		fi
	else
		p=$(grep -c '^ok ' "$o.out")
		f=$(grep -c '^FAIL ' "$o.out")
		s=$(grep -c '^skip ' "$o.out")
		skipped=$((skipped + s))
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			echo "FAIL $name did not finish within ${script_limit} s: killed"
			f=$((f + 1))
		elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			echo "FAIL $name exited $rc"
			f=1
		fi
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	rm -rf "$o.out" "$o.rc" "$o.d"
	unset "started[$name]" "pids[$name]"
	running=$((running - 1))
}

# Wait until at most $1 tasks run, reporting each that ends.
drain() {
	local name ended
	while [ "$running" -gt "$1" ]; do
		ended=0
		for name in "${!started[@]}"; do
			if [ -e "$work/$name.rc" ]; then
				wait "${pids[$name]}" 2>/dev/null
				report "$name"
				ended=1
			fi
		done
		[ $ended = 1 ] || sleep 0.5
	done
}

for t in "${alone[@]}"; do
	start "$(basename "$t")" "$t"
	drain 0
done
start hp_unit hp_unit
for t in "${shared[@]}"; do
	drain $((jobs - 1))
	start "$(basename "$t")" "$t"
done
drain 0

echo "$skipped skipped (cannot run on this machine: see the 'skip' lines above)"
echo "time: $SECONDS s in all ($jobs at once)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
