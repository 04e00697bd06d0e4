#!/usr/bin/env bash
# Run the benchmarks against a build folder.  Speed is measured here,
# never asserted in tests.  Usage: benchmarks/run.sh [BUILD_DIR]
# Run on a quiet machine: on 2 cores, any other busy process makes a
# 2-thread step wait for its descheduled thread.
set -u
build=${1:-build}
threads=${BENCH_THREADS:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

echo "== model analysis (goal: resnet50 under 50 ms)"
"$build/bin/bench_analyze" data/models/resnet50.train.onnx \
	$(ls tests/data/models/vit_b_16.train.onnx tests/data/models/densenet121.train.onnx 2>/dev/null)

if [ -x "$build/bin/bench_predict" ]; then
	echo
	echo "== prediction after the estimator is loaded (goal: under 1 ms)"
	"$build/bin/bench_predict"
fi

if [ -x "$build/bin/bench_recommend" ]; then
	echo
	echo "== recommendation on pools of N nodes x 8 GPUs of 6 types, after loading (goal: 10 ms at 2000 x 8)"
	m=data/models/resnet50.train.onnx
	echo "-- a deadline some configuration meets (4 h)"
	"$build/bin/bench_recommend" "$m" 512 14400
	echo "-- a deadline nothing meets (5 min): the fastest is sought"
	"$build/bin/bench_recommend" "$m" 512 300
	echo "-- worst case: no two nodes alike (1 h)"
	BENCH_REPS=5 "$build/bin/bench_recommend" "$m" 512 3600 distinct
fi

if [ -x "$build/bin/bench_store" ]; then
	echo
	echo "== the store (SQLite, WAL): what hetpoold does per request"
	"$build/bin/bench_store" data/pools/sample.json
fi

if [ -x "$build/bin/bench_fit" ]; then
	echo
	echo "== fitting the estimator: N profile rows resampled from data/profiles/cpu-default.csv + the public GPU rows (goal: 100000 rows under 10 s and 500 MB)"
	# BENCH_FIT_ROWS="1000 10000 100000" by default; bench_fit --distinct
	# for rows that nearly all differ in batch (the worst case).
	# shellcheck disable=SC2086
	"$build/bin/bench_fit" ${BENCH_FIT_ROWS:-1000 10000 100000}
	echo "-- the shipped data (360 profile rows, 111 public rows)"
	out=$(mktemp)
	TIMEFORMAT="hetpool fit: %R s"
	time "$build/bin/hetpool" fit --out "$out" >/dev/null
	TIMEFORMAT="hetpool validate: %R s"
	time "$build/bin/hetpool" validate >/dev/null
	unset TIMEFORMAT
	rm -f "$out"
fi

echo
echo "== training step: hetpool engine (oneDNN) vs PyTorch, $threads threads, side by side (goal: ratio <= 1.2)"
S="benchmarks/specs/cnn2_s32.json:64 benchmarks/specs/cnn3_s32_small.json:64 benchmarks/specs/cnn4_s64.json:16 benchmarks/specs/cnn6_s32.json:32 benchmarks/specs/cnn2_s64_wide.json:32"
eng=$(mktemp)
tor=$(mktemp)
# Interleave the two sides config by config so drift hits both alike.
for s in $S; do
	"$build/bin/bench_engine" -t "$threads" -n 20 -w 5 "$s" >>"$eng"
	if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
		/usr/bin/python3 benchmarks/bench_engine_torch.py -t "$threads" -n 20 -w 5 "$s" >>"$tor"
	fi
done
python3 - "$eng" "$tor" <<'PY'
import re, sys
def load(p):
    d = {}
    for line in open(p):
        kv = dict(re.findall(r'(\w+)=(\S+)', line))
        if 'spec' in kv:
            d[(kv['spec'], kv['batch'])] = float(kv['median_ms'])
    return d
e, t = load(sys.argv[1]), load(sys.argv[2])
print(f"{'config':<34} {'batch':>5} {'hetpool ms':>11} {'torch ms':>9} {'ratio':>6}")
worst = 0
for k, v in e.items():
    tv = t.get(k)
    r = v / tv if tv else float('nan')
    worst = max(worst, r) if tv else worst
    name = k[0].split('/')[-1]
    print(f"{name:<34} {k[1]:>5} {v:>11.2f} {tv if tv else float('nan'):>9.2f} {r:>6.2f}")
if not t:
    print("PyTorch not available (Debian python3-torch): no ratios")
else:
    print(f"worst ratio {worst:.2f} (goal <= 1.2)")
PY
rm -f "$eng" "$tor"

echo
echo "== training step on real architectures at 3x64x64 (torchvision ONNX exports): engine FLOP/s as a share of the host's FP32 peak, and the step time against PyTorch's, $threads threads, side by side"
# the peak: measured once (oneDNN's sgemm at these threads) into a state
# folder of this run's own, which every bench_engine below reads
peak_state=$(mktemp -d)
if HETPOOL_STATE_DIR=$peak_state "$build/bin/hetpool" host --measure --threads "$threads" >/dev/null 2>&1; then
	echo "   (peak: this host's, measured by hetpool host --measure --threads $threads just before: oneDNN sgemm)"
else
	echo "   (peak: not measured here; each bench_engine measures its own, else the ISA estimate: see its peak_source)"
fi
A=""
# the Done-when's five, then the torchvision forms the engine runs since
# (ceil-mode pools, wide concats, SiLU, hardswish, squeeze-and-excitation,
# ShuffleNet's slices and channel shuffles, ConvNeXt's layer norms and
# gelus)
for m in resnet18:16 resnet50:16 mobilenet_v2:32 vgg11:16 alexnet:64 \
	googlenet:16 squeezenet1_0:32 densenet121:16 efficientnet_b0:16 \
	mobilenet_v3_small:32 mnasnet0_5:32 regnet_y_400mf:16 \
	shufflenet_v2_x1_0:32 convnext_tiny:16; do
	f=""
	for d in data/models ../shared/data/models tests/data/models; do
		[ -f "$d/${m%%:*}.train.onnx" ] && { f="$d/${m%%:*}.train.onnx:${m##*:}"; break; }
	done
	if [ -n "$f" ]; then A="$A $f"; else echo "skip ${m%%:*}: no ${m%%:*}.train.onnx"; fi
done
eng=$(mktemp)
tor=$(mktemp)
for s in $A; do
	HETPOOL_STATE_DIR=$peak_state "$build/bin/bench_engine" -t "$threads" -n 10 -w 3 -s 3x64x64 "$s" >>"$eng"
	if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
		/usr/bin/python3 benchmarks/bench_engine_torch.py -t "$threads" -n 10 -w 3 -s 3x64x64 "$s" >>"$tor"
	fi
done
python3 - "$eng" "$tor" <<'PY'
import re, sys
def load(p):
    d = {}
    for line in open(p):
        kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
        if 'spec' in kv:
            d[(kv['spec'], kv['batch'])] = kv
    return d
e, t = load(sys.argv[1]), load(sys.argv[2])
src = sorted({v.get('peak_source', '?') for v in e.values()})
peaks = sorted({v.get('peak_gflops', '?') for v in e.values()})
print(f"peak {', '.join(peaks)} GFLOP/s ({', '.join(src)})")
print(f"{'model':<14} {'batch':>5} {'GFLOP/step':>10} {'GFLOP/s':>8} {'of peak':>8} {'hetpool ms':>11} {'torch ms':>9} {'ratio':>6}")
for k, v in e.items():
    em = float(v['median_ms'])
    tm = float(t[k]['median_ms']) if k in t else float('nan')
    print(f"{k[0]:<14} {k[1]:>5} {float(v['step_gflop']):>10.2f} {float(v['gflops']):>8.1f} "
          f"{100 * float(v['peak_frac']):>7.1f}% {em:>11.1f} {tm:>9.1f} {em / tm:>6.2f}")
if not t:
    print("PyTorch/torchvision not available (Debian python3-torch): no ratios")
else:
    blas = sorted({v.get('blas', 'unknown') for v in t.values()})
    print("PyTorch's matrix products (Linear, MatMul) ran on BLAS: " + ", ".join(blas))
    if 'reference' in blas:
        print("  warning: the reference BLAS (about 20x slower than OpenBLAS here): "
              "PyTorch's side is slow on fc and MatMul layers; install libopenblas0-pthread "
              "(make deps-bench does)")
PY
rm -f "$eng" "$tor"
rm -rf "$peak_state"

echo
echo "== held-out step-time prediction on real architectures (none in any fit), 3x64x64, batches 16/32/64 (goal: MAPE <= 15%, 10%)"
benchmarks/arch_check.sh "$build" 2 | tail -n 2
ARCH_MODELS="googlenet squeezenet1_0 densenet121 efficientnet_b0 mobilenet_v3_small mnasnet0_5 regnet_y_400mf shufflenet_v2_x1_0" \
	benchmarks/arch_check.sh "$build" 2 | tail -n 2
# Inception v3 needs 75x75 at least
ARCH_SHAPE=3x80x80 ARCH_MODELS=inception_v3 benchmarks/arch_check.sh "$build" 2 | tail -n 2
ARCH_MODELS=convnext_tiny benchmarks/arch_check.sh "$build" 2 | tail -n 2

echo
echo "== lr-find: the suggested rate against a log-spaced grid of rates, Fashion-MNIST, fixed budget (goal: within 1 point of the best)"
benchmarks/lr_find_check.sh "$build"

if [ -x "$build/bin/hetpool-train" ]; then
	echo
	echo "== hetpool-train: rebalancing against a CPU hog on rank 1's core (goal: re-split >= 95% of ideal, rank times within 5%)"
	benchmarks/bench_rebalance.sh "$build"
	echo
	echo "== one rank's step-to-step noise on this machine, and the ceiling it puts on re-split / ideal (no goal: a measurement)"
	benchmarks/step_noise.sh "$build"
fi

echo
echo "== the network transport and the recommender's choices: 16 nodes of 4 T4s at 50 Gbit/s, costed on 6 Gbit/s links (a simulation: compute from the estimator)"
/usr/bin/python3 benchmarks/transport_sim.py "$build" | tail -n 2

echo
echo "== one core's input pipeline: hetpool host --measure (libjpeg-turbo, C crop) vs torchvision's (PIL), the same JPEG, alternating"
/usr/bin/python3 benchmarks/bench_loader.py "$build" 5

echo
echo "== hetpoold under load: GET /v1/jobs/ID vs a bare libmicrohttpd endpoint, POST /v1/recommendations vs in-process (goal: >= 80% of each, no errors, flat memory)"
benchmarks/bench_daemon.sh "$build"

echo
echo "== the web dashboard on loopback: time to the first rendered plan plot, cold, and the bytes the browser loads (goals: < 1 s, < 300 KB compressed)"
benchmarks/bench_dashboard.sh "$build"

echo
echo "== hetpoold crash test, longer: ${BENCH_CRASH_ROUNDS:-500} SIGKILLs mid-burst (make test runs 100)"
HP_BIN="$root/$build/bin" HP_ROOT="$root" HP_CRASH_ROUNDS=${BENCH_CRASH_ROUNDS:-500} \
	python3 tests/integration/crash.py

if [ -x "$build/bin/bench_allreduce_fit" ]; then
	echo
	echo "== all-reduce between network namespaces shaped by tc: the model fitted on 3 ranks, tested on 4 and 2 (goal: within 25%; needs root)"
	ar=$(mktemp)
	if sh benchmarks/allreduce_netns.sh -r "2 3 4" -b "200 1000" -m 1048576 \
		-n 3 -a ring -o "$ar"; then
		"$build/bin/bench_allreduce_fit" "$ar" 3 1048576 | grep '^#'
	fi
	rm -f "$ar"
fi
