#!/usr/bin/env bash
# arch_check.sh [BUILD] [ROUNDS] - real architectures against the
# estimator: ResNet-18, ResNet-50, MobileNetV2, VGG-11 and AlexNet (the
# torchvision training-mode ONNX exports) at 3x64x64, batches 16, 32 and 64,
# run by the engine on the CPU with 2 threads (bench_engine: the median of
# its timed steps, the median again over ROUNDS rounds that interleave the
# models so drift hits all alike) and predicted by `hetpool predict
# --device cpu` on the spec the engine ran (hetpool profile --save-spec).
# None of these models is in any fit: they are the held-out test.  Prints
# one row per (model, batch), the engine's time per layer type, and the
# step-time MAPE (docs/estimator.md, "Real architectures").
#
# ARCH_ESTIMATOR=FILE predicts with that estimator instead of the shipped
# one (e.g. one fitted on a profile of this host: see docs/estimator.md).
# ARCH_PEER="HETPOOL_BINARY [ESTIMATOR]" predicts with another build (an
# older version of the model) too, against the same measurements: its
# MAPE is printed beside.
#
# ARCH_MODELS="NAME ..." checks other torchvision models (say googlenet
# densenet121 efficientnet_b0 mobilenet_v3_small: tests/data/models has
# them) in place of the five.  ARCH_SHAPE=CxHxW runs them at another
# input (Inception v3 needs 75x75 at least: ARCH_SHAPE=3x80x80).
#
# The models are looked for in data/models/, then $HP_MODELS_DIR, then
# ../shared/data/models/, then tests/data/models/; one that is missing is
# skipped and said so.
set -u
build=${1:-build}
rounds=${2:-3}
threads=${ARCH_THREADS:-2}
steps=${ARCH_STEPS:-6}
shape=${ARCH_SHAPE:-3x64x64}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

find_model() {
	for d in data/models "${HP_MODELS_DIR:-/nonexistent}" ../shared/data/models \
		tests/data/models; do
		[ -f "$d/$1.train.onnx" ] && { echo "$d/$1.train.onnx"; return 0; }
	done
	return 1
}

models=""
for m in ${ARCH_MODELS:-resnet18 resnet50 mobilenet_v2 vgg11 alexnet}; do
	if p=$(find_model "$m"); then
		models="$models $p"
	else
		echo "skip $m: no $m.train.onnx in data/models, \$HP_MODELS_DIR or ../shared/data/models"
	fi
done

# predictions, on the spec the engine runs
for p in $models; do
	m=$(basename "$p" .train.onnx)
	"$build/bin/hetpool" profile "$p" --batch 16 --input-shape $shape \
		--save-spec "$tmp/$m.json" --list >/dev/null || exit 1
	for b in 16 32 64; do
		printf '%s %s ' "$m" "$b" >>"$tmp/pred"
		"$build/bin/hetpool" predict "$tmp/$m.json" --device cpu --batch "$b" \
			--threads "$threads" ${ARCH_ESTIMATOR:+--estimator "$ARCH_ESTIMATOR"} --json |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])' >>"$tmp/pred"
		if [ -n "${ARCH_PEER:-}" ]; then
			set -- $ARCH_PEER
			printf '%s %s ' "$m" "$b" >>"$tmp/peer"
			"$1" predict "$tmp/$m.json" --device cpu --batch "$b" \
				--threads "$threads" ${2:+--estimator "$2"} --json |
				python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])' >>"$tmp/peer"
		fi
	done
done

# measurements, interleaved
for r in $(seq "$rounds"); do
	for b in 16 32 64; do
		for p in $models; do
			nice -n 0 "$build/bin/bench_engine" -t "$threads" -n "$steps" -w 2 \
				-s $shape -L "$p:$b" >>"$tmp/eng" || echo "bench_engine failed on $p:$b" >&2
		done
	done
done

python3 - "$tmp/pred" "$tmp/eng" "$rounds" "$tmp/peer" <<'PY'
import os, re, sys, statistics as st
def preds(f):
    p = {}
    for line in open(f):
        m, b, t = line.split()
        p[(m, int(b))] = float(t) * 1e3
    return p
pred = preds(sys.argv[1])
peer = preds(sys.argv[4]) if os.path.exists(sys.argv[4]) else {}
runs, lt = {}, {}
last = None
for line in open(sys.argv[2]):
    kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
    if line.startswith('impl=engine'):
        last = (kv['spec'], int(kv['batch']))
        runs.setdefault(last, []).append((float(kv['median_ms']), float(kv['gflops']), float(kv['peak_frac'])))
    elif line.startswith('layer_times') and last:
        d = lt.setdefault(last, {})
        for k, v in kv.items():
            if k.endswith('_ms'):
                d.setdefault(k[:-3], []).append(float(v))
print(f"{'model':<13} {'batch':>5} {'engine ms':>10} {'spread':>13} {'predicted ms':>13} {'error':>7} {'GFLOP/s':>8} {'of peak':>8}")
errs = {}
for k in sorted(runs, key=lambda k: (k[0], k[1])):
    ms = [x[0] for x in runs[k]]
    med = st.median(ms)
    p = pred.get(k)
    e = (p - med) / med if p else float('nan')
    errs[k] = e
    gf = st.median(x[1] for x in runs[k])
    pf = st.median(x[2] for x in runs[k])
    print(f"{k[0]:<13} {k[1]:>5} {med:>10.1f} {min(ms):>6.0f}-{max(ms):<6.0f} {p:>13.1f} {e*100:>+6.1f}% {gf:>8.1f} {pf*100:>7.1f}%")
print()
print("engine time per layer type (ms per step, median over rounds):")
for k in sorted(lt, key=lambda k: (k[0], k[1])):
    parts = " ".join(f"{n}={st.median(v):.1f}" for n, v in sorted(lt[k].items(), key=lambda x: -st.median(x[1])) if st.median(v) >= 0.05)
    print(f"  {k[0]:<13} {k[1]:>3}: {parts}")
ok = [abs(e) for e in errs.values() if e == e]
if ok:
    print()
    print(f"step-time MAPE {100 * sum(ok) / len(ok):.1f}% over {len(ok)} configurations "
          f"(Done-when: <= 15%, goal 10%); median signed error {100 * st.median(errs.values()):+.1f}% "
          f"(negative: predicted too fast); rounds {sys.argv[3]}")
    bym = {}
    for (m, b), e in errs.items():
        bym.setdefault(m, []).append(abs(e))
    print("per model MAPE: " + ", ".join(f"{m} {100 * sum(v) / len(v):.0f}%" for m, v in sorted(bym.items())))
if peer:
    pe = {k: (peer[k] - st.median(x[0] for x in runs[k])) / st.median(x[0] for x in runs[k])
          for k in runs if k in peer}
    v = [abs(e) for e in pe.values()]
    bym = {}
    for (m, b), e in pe.items():
        bym.setdefault(m, []).append(abs(e))
    print(f"peer ({os.environ.get('ARCH_PEER')}): step-time MAPE {100 * sum(v) / len(v):.1f}% over {len(v)} "
          f"configurations, the same measurements; median signed error {100 * st.median(pe.values()):+.1f}%")
    print("peer per model MAPE: " + ", ".join(f"{m} {100 * sum(v) / len(v):.0f}%" for m, v in sorted(bym.items())))
PY
