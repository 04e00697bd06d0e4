#!/usr/bin/env bash
# gpu_check.sh - the CUDA backend on a GPU machine, in one go (< ~6 min):
# build with the GPU backend, run the engine's unit tests (the GPU ones
# compare against the naive reference and the CPU backend), then profile a
# 20-configuration GPU sweep (--max-seconds 1) with NVML energy into
# $OUT/gpu-sweep.csv and print a summary.  Everything it writes goes to
# $OUT (default ./gpu-check-out).
#
# Usage: bash benchmarks/gpu_check.sh [BUILD_DIR]     (default build-gpu-check)
#        SKIP_BUILD=1 bash benchmarks/gpu_check.sh build-gpu   (prebuilt)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-gpu-check}
case $build in /*) ;; *) build=$root/$build ;; esac
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
t0=$(date +%s)
say() { echo "== $(($(date +%s) - t0))s: $*"; }
status=0

say "machine"
{
	nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit \
		--format=csv 2>&1 || echo "no nvidia-smi"
	/usr/local/cuda/bin/nvcc --version 2>&1 | tail -n 2
	nproc
} | tee "$out/machine.txt"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
	say "build ($build)"
	if ! { cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
		timeout 300 cmake --build "$build" -j "$(nproc)"; } >"$out/build.log" 2>&1; then
		tail -n 40 "$out/build.log"
		echo "FAIL build (see $out/build.log)"
		exit 1
	fi
	grep "hpengine:" "$out/build.log"
fi
if ! grep -q "HP_HAVE_CUDA" "$build/build.ninja" 2>/dev/null; then
	echo "FAIL the build has no CUDA backend (toolkit or cuDNN not found)"
	exit 1
fi

say "unit tests: engine (CPU) and engine_gpu (GPU vs reference and CPU)"
HP_TEST_TIMEOUT=120 timeout 240 "$build/bin/hp_unit" engine 2>&1 |
	tee "$out/unit-engine.log" | grep -v '^ok ' | grep -v '^net '
grep -q '^unit: [0-9]* passed, 0 failed' "$out/unit-engine.log" || status=1
if grep -q '^SKIP no GPU' "$out/unit-engine.log"; then
	echo "FAIL the GPU tests skipped: no usable GPU"
	status=1
fi

say "profile: 20 configurations on cuda:0"
cat >"$out/gpu-sweep.json" <<'J'
{"conv_layers":[2,4],"filters":[32,64],"fc_layers":[1],"fc_width":[256],"input_size":[32,64],"batch":[16,64,256],"classes":10}
J
rm -f "$out/gpu-sweep.csv"
timeout 240 "$build/bin/hetpool" profile --sweep "$out/gpu-sweep.json" \
	--device cuda:0 --max-seconds 1 --limit 20 \
	--out "$out/gpu-sweep.csv" >"$out/profile.log" 2>&1
rc=$?
tail -n 5 "$out/profile.log"
[ $rc -eq 0 ] || { echo "FAIL profile exited $rc"; status=1; }

say "summary"
python3 - "$out/gpu-sweep.csv" <<'PY' || status=1
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"{len(rows)} rows")
if not rows:
    sys.exit(1)
r0 = rows[0]
for k in ("device", "device_name", "driver", "backend", "energy_source"):
    print(f"  {k}: {r0.get(k)}")
print(f"  {'config':<28} {'batch':>5} {'step ms':>9} {'cv':>6} {'J/step':>8} {'W':>7} {'MiB':>8}")
for r in rows:
    e = r["energy_per_step_j"]
    print(f"  {r['config_id'][:28]:<28} {r['batch']:>5} {1e3*float(r['step_time_s']):9.3f} "
          f"{float(r['step_time_cv']):6.3f} {float(e) if e else float('nan'):8.4f} "
          f"{float(r['power_w']) if r['power_w'] else float('nan'):7.1f} "
          f"{int(r['peak_mem_bytes'])/2**20:8.1f}")
bad = [r["config_id"] for r in rows if r["energy_source"] != "nvml"]
if bad:
    print(f"energy not measured for {len(bad)} rows: {bad[:3]}")
    sys.exit(1)
p = [float(r["power_w"]) for r in rows]
print(f"power: median {statistics.median(p):.1f} W, range {min(p):.1f}..{max(p):.1f} W")
PY

say "done: status $status, files in $out"
exit $status
