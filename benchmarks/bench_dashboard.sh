#!/usr/bin/env bash
# The dashboard's time to the first rendered plan plot and the bytes the
# browser loads (benchmarks/bench_dashboard.mjs).  Usage:
# benchmarks/bench_dashboard.sh [BUILD_DIR]; BENCH_DASH_RUNS (9) runs.
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v node >/dev/null; then
	echo "skip: no node (make deps)"
	exit 0
fi
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
	echo "skip: no chromium (tools/deps.sh bench)"
	exit 0
fi
if [ ! -f "$root/$build/web/index.html" ] || [ ! -d "$root/web/node_modules/playwright-core" ]; then
	echo "skip: no dashboard built in $build/web (the normal build makes it when node and npm are there)"
	exit 0
fi
HP_CHROMIUM=$chromium exec node "$root/benchmarks/bench_dashboard.mjs" "$root/$build" "${BENCH_DASH_RUNS:-9}"
