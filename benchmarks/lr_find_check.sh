#!/usr/bin/env bash
# lr_find_check.sh - is the rate `hetpool lr-find` suggests a good one?
# The check of issue 11: train Fashion-MNIST for a fixed budget at the
# suggested rate and at each rate of a log-spaced grid (at least 6 rates),
# and compare test accuracies; the goal is the suggestion within 1 point of
# the grid's best.  Runs hetpool-train by its contract (--model --data
# --batch --steps --lr --seed --out; DIR/results.json's test_accuracy).
#
# Usage: benchmarks/lr_find_check.sh [BUILD_DIR]     (or from make bench)
# Environment (defaults in brackets):
#   TRAINER     the trainer [BUILD_DIR/bin/hetpool-train]; for a dry run
#               before it exists: TRAINER=benchmarks/lr_find_standin.py
#               (a NumPy stand-in, MLP specs only, NOT hetpool-train)
#   MODEL       the model spec [a small CNN written here; an MLP when
#               TRAINER is the stand-in]
#   BUDGET      training steps per run [1000, about one epoch at batch 64]
#   BATCH       global batch [64]
#   SEEDS       seeds per rate, accuracies averaged ["1 2"]
#   GRID        the rates ["1e-4 3.16e-4 1e-3 3.16e-3 1e-2 3.16e-2 0.1
#               0.316 1", 9 rates, half a decade apart]
#   LRF_STEPS   steps of the range test [200]
#   THREADS     --threads for every run [unset: the trainer's default]
#   TRAIN_ARGS  more trainer arguments for every run, the range test too
#               (e.g. "--optimizer sgd --momentum 0.9")
#   OUT         where runs and the summary go [a new temporary folder]
# Prints a table and a verdict line; writes OUT/lr_find_check.json.  A
# build without a trainer prints "skip lr_find_check: ..." and exits 0.
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
HP=$build/bin/hetpool
TRAINER=${TRAINER:-$build/bin/hetpool-train}
BUDGET=${BUDGET:-1000}
BATCH=${BATCH:-64}
SEEDS=${SEEDS:-"1 2"}
GRID=${GRID:-"1e-4 3.16e-4 1e-3 3.16e-3 1e-2 3.16e-2 0.1 0.316 1"}
LRF_STEPS=${LRF_STEPS:-200}
OUT=${OUT:-$(mktemp -d /tmp/lr_find_check.XXXXXX)}
# shellcheck disable=SC2206
EXTRA=(${TRAIN_ARGS:-})
[ -n "${THREADS:-}" ] && EXTRA+=(--threads "$THREADS")

if [ ! -x "$TRAINER" ]; then
	echo "skip lr_find_check: no hetpool-train in this build ($TRAINER)"
	exit 0
fi
if [ ! -x "$HP" ]; then
	echo "lr_find_check: no $HP; build first" >&2
	exit 1
fi
ngrid=$(echo "$GRID" | wc -w)
if [ "$ngrid" -lt 6 ]; then
	echo "lr_find_check: GRID has $ngrid rates; the check needs at least 6" >&2
	exit 2
fi
mkdir -p "$OUT"
if [ -z "${MODEL:-}" ]; then
	MODEL=$OUT/model.json
	case "$(basename "$TRAINER")" in
	lr_find_standin.py)
		cat >"$MODEL" <<'SPEC'
{"name": "fmnist-mlp", "input": [1, 28, 28], "classes": 10, "layers": [
  {"type": "fc", "units": 128}, {"type": "relu"}, {"type": "fc", "units": 10}]}
SPEC
		;;
	*)
		cat >"$MODEL" <<'SPEC'
{"name": "fmnist-cnn", "input": [1, 28, 28], "classes": 10, "layers": [
  {"type": "conv", "filters": 16, "kernel": 3, "stride": 1, "pad": 1},
  {"type": "relu"}, {"type": "pool", "op": "max", "kernel": 2, "stride": 2},
  {"type": "conv", "filters": 32, "kernel": 3, "stride": 1, "pad": 1},
  {"type": "relu"}, {"type": "pool", "op": "max", "kernel": 2, "stride": 2},
  {"type": "fc", "units": 64}, {"type": "relu"}, {"type": "fc", "units": 10}]}
SPEC
		;;
	esac
fi

echo "== lr-find check: $(basename "$TRAINER"), model $(basename "$MODEL"), batch $BATCH, budget $BUDGET steps, seeds: $SEEDS"
echo "-- range test ($LRF_STEPS steps)"
t0=$(date +%s.%N)
if ! "$HP" lr-find --model "$MODEL" --data fashion-mnist --steps "$LRF_STEPS" --batch "$BATCH" --seed 1 \
	--trainer "$TRAINER" --out "$OUT/lr-find" --json -- "${EXTRA[@]}" >"$OUT/lr-find.stdout.json"; then
	echo "lr_find_check: hetpool lr-find failed; see $OUT/lr-find/trainer.log" >&2
	exit 1
fi
t1=$(date +%s.%N)
suggested=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['suggested_lr'])" "$OUT/lr-find.stdout.json")
python3 - "$OUT/lr-find.stdout.json" "$t0" "$t1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lo, hi = d["interval"]
print(f"suggested {d['suggested_lr']:.3g} (interval {lo:.3g} .. {hi:.3g}), "
      f"{d['steps_run']} steps, {float(sys.argv[3]) - float(sys.argv[2]):.0f} s")
print(f"  how: {d['suggested_how']}")
PY

# Train at every rate of the grid and at the suggestion, seed by seed.
for seed in $SEEDS; do
	for lr in $GRID "$suggested"; do
		dir=$OUT/train/lr_${lr}_seed_$seed
		[ -s "$dir/results.json" ] && continue
		mkdir -p "$dir"
		if ! "$TRAINER" --model "$MODEL" --data fashion-mnist --batch "$BATCH" --steps "$BUDGET" \
			--lr "$lr" --seed "$seed" --out "$dir" "${EXTRA[@]}" >"$dir/trainer.log" 2>&1; then
			echo "   lr $lr seed $seed: the trainer failed (a diverged run counts as 0%): $(tail -n 1 "$dir/trainer.log")"
		fi
	done
done

python3 - "$OUT" "$suggested" "$SEEDS" "$BUDGET" "$BATCH" "$GRID" "$t0" "$t1" <<'PY'
import json, os, statistics, sys
out, sugg, seeds, budget, batch, grid, t0, t1 = sys.argv[1:]
seeds, grid = seeds.split(), grid.split()

def acc(lr, seed):
    """Test accuracy in percent; a run that diverged or failed counts 0."""
    try:
        r = json.load(open(os.path.join(out, "train", f"lr_{lr}_seed_{seed}", "results.json")))
        a = r.get("test_accuracy")
    except (OSError, ValueError):
        a = None
    if a is None:
        return 0.0
    return 100 * a if a <= 1 else a

rows = []
for lr in grid + [sugg]:
    vals = [acc(lr, s) for s in seeds]
    rows.append((lr, statistics.mean(vals), vals))
print(f"{'lr':>10} {'test accuracy %':>16}   per seed")
for lr, m, vals in rows[:-1]:
    print(f"{float(lr):>10.3g} {m:>16.2f}   {' '.join(f'{v:.2f}' for v in vals)}")
lr_s, m_s, vals_s = rows[-1]
print(f"{float(lr_s):>10.3g} {m_s:>16.2f}   {' '.join(f'{v:.2f}' for v in vals_s)}   <- suggested")
best_lr, best, _ = max(rows[:-1], key=lambda r: r[1])
gap = best - m_s
verdict = "PASS" if gap <= 1 else "FAIL"
print(f"suggested {float(lr_s):.3g}: {m_s:.2f}%; best of the {len(grid)}-rate grid {float(best_lr):.3g}: "
      f"{best:.2f}%; gap {gap:.2f} points (goal <= 1): {verdict}")
summary = {"suggested_lr": float(lr_s), "suggested_accuracy_percent": m_s,
           "best_grid_lr": float(best_lr), "best_grid_accuracy_percent": best,
           "gap_points": gap, "verdict": verdict, "budget_steps": int(budget),
           "batch": int(batch), "seeds": seeds, "range_test_s": float(t1) - float(t0),
           "grid": [{"lr": float(lr), "accuracy_percent": m, "per_seed": v} for lr, m, v in rows[:-1]]}
with open(os.path.join(out, "lr_find_check.json"), "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
print(f"runs and summary: {out}")
PY
