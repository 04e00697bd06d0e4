#!/usr/bin/env bash
# Run the benchmarks against a build folder.  Speed is measured here,
# never asserted in tests.  Usage: benchmarks/run.sh [BUILD_DIR]
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
echo "== model analysis (goal: resnet50 under 50 ms)"
"$build/bin/bench_analyze" data/models/resnet50.train.onnx \
	$(ls tests/data/models/vit_b_16.train.onnx tests/data/models/densenet121.train.onnx 2>/dev/null)
