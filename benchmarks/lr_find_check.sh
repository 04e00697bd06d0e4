#!/usr/bin/env bash
# lr_find_check.sh - is the rate `hetpool lr-find` suggests a good one?
# The check of issue 11: for each seed, run the range test, then train
# Fashion-MNIST for a fixed budget (the same steps, batch and seed) at the
# suggested rate and at each rate of a log-spaced grid (at least 6 rates),
# and compare test accuracies; the goal is the suggestion within 1 point of
# the grid's best.  Runs hetpool-train by its contract (--model --data
# --batch --steps --lr --seed --threads --out; DIR/results.json's
# test_accuracy).  The whole procedure, range test included, is repeated
# per seed: a suggestion that is good for one seed's range test only
# would be luck.
#
# Usage: benchmarks/lr_find_check.sh [BUILD_DIR [OUT_DIR]]   (or make bench)
# Run it under `nice -n 5` on a shared machine.  With the defaults it
# runs 2 range tests and 16 training runs of 1000 steps: 2 minutes on the
# project's shared 2-core VM (docs/lr-find.md).
# Environment (defaults in brackets):
#   TRAINER     the trainer [BUILD_DIR/bin/hetpool-train]; for a dry run
#               without it: TRAINER=benchmarks/lr_find_standin.py (a
#               NumPy stand-in, MLP specs only, NOT hetpool-train)
#   MODEL       the model spec [data/models/fmnist-cnn.json; an MLP
#               written here when TRAINER is the stand-in]
#   BUDGET      training steps per run [1000, about one epoch at batch 64]
#   BATCH       global batch [64]
#   SEEDS       seeds; each gets its own range test and runs ["1 2"]
#   GRID        the rates ["1e-3 3.16e-3 1e-2 3.16e-2 0.1 0.316 1": 7
#               rates, half a decade apart]
#   LRF_STEPS   steps of the range test [800, lr-find's default]
#   THREADS     --threads for every run [1: runs go one at a time, and on a
#               shared 2-core machine a 2-thread step waits for whichever
#               thread is descheduled (3.5x slower, measured); empty: the
#               trainer's default]
#   TRAIN_ARGS  more trainer arguments for every run, the range test too
#               (e.g. "--optimizer adam")
#   OUT         where runs and the summary go [OUT_DIR, else a new
#               temporary folder]; runs already there (results.json) are
#               reused, so an interrupted check resumes (a folder made with
#               other settings is refused)
# Prints, per seed, the range test (wall time, interval, suggestion) and a
# table (rate, test accuracy, wall time), then the verdict; writes
# OUT/lr_find_check.json.  Exit status 0 whatever the verdict (it is a
# measurement); 1 when a range test fails.  Without a trainer or the
# dataset it prints "skip lr_find_check: ..." and exits 0.
set -u
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
HP=$build/bin/hetpool
TRAINER=${TRAINER:-$build/bin/hetpool-train}
BUDGET=${BUDGET:-1000}
BATCH=${BATCH:-64}
SEEDS=${SEEDS:-"1 2"}
GRID=${GRID:-"1e-3 3.16e-3 1e-2 3.16e-2 0.1 0.316 1"}
LRF_STEPS=${LRF_STEPS:-800}
THREADS=${THREADS-1}
OUT=${OUT:-${2:-$(mktemp -d /tmp/lr_find_check.XXXXXX)}}
# shellcheck disable=SC2206
EXTRA=(${TRAIN_ARGS:-})
[ -n "$THREADS" ] && EXTRA+=(--threads "$THREADS")

if [ ! -x "$TRAINER" ]; then
	echo "skip lr_find_check: no hetpool-train in this build ($TRAINER)"
	exit 0
fi
if ! dpkg -L dataset-fashion-mnist 2>/dev/null | grep -q 'train-images-idx3-ubyte'; then
	echo "skip lr_find_check: the Debian package dataset-fashion-mnist is not installed"
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
	MODEL=data/models/fmnist-cnn.json
	if [ "$(basename "$TRAINER")" = lr_find_standin.py ]; then
		MODEL=$OUT/model.json
		cat >"$MODEL" <<'SPEC'
{"name": "fmnist-mlp", "input": [1, 28, 28], "classes": 10, "layers": [
  {"type": "fc", "units": 128}, {"type": "relu"}, {"type": "fc", "units": 10}]}
SPEC
	fi
fi

# Runs are reused only under the same settings.
config="model=$(cat "$MODEL") batch=$BATCH budget=$BUDGET lrf_steps=$LRF_STEPS threads=$THREADS args=${TRAIN_ARGS:-}"
if [ -s "$OUT/config" ] && [ "$(cat "$OUT/config")" != "$config" ]; then
	echo "lr_find_check: $OUT holds runs made with other settings ($OUT/config); give another OUT_DIR" >&2
	exit 2
fi
printf '%s\n' "$config" >"$OUT/config"

now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f\n", a - b }'; }

# train DIR LR SEED: one run of the budget; its rate to DIR/lr, its wall
# time to DIR/wall_s.  A run found complete at the same rate is kept.
train() {
	local dir=$1 lr=$2 seed=$3 t0
	if [ -s "$dir/results.json" ] && [ -s "$dir/wall_s" ] && [ "$(cat "$dir/lr" 2>/dev/null)" = "$lr" ]; then
		return 0
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "$lr" >"$dir/lr"
	t0=$(now)
	if ! "$TRAINER" --model "$MODEL" --data fashion-mnist --batch "$BATCH" --steps "$BUDGET" \
		--lr "$lr" --seed "$seed" --out "$dir" "${EXTRA[@]}" >"$dir/trainer.log" 2>&1; then
		echo "   lr $lr seed $seed: the trainer failed (counted as 0%): $(tail -n 1 "$dir/trainer.log")"
	fi
	since "$t0" >"$dir/wall_s"
}

echo "== lr-find check: $(basename "$TRAINER"), model $(basename "$MODEL"), batch $BATCH, budget $BUDGET steps, threads ${THREADS:-default}, seeds: $SEEDS"
echo "   grid: $GRID${TRAIN_ARGS:+; trainer arguments: $TRAIN_ARGS}"
for seed in $SEEDS; do
	sd=$OUT/seed_$seed
	mkdir -p "$sd"
	if [ ! -s "$sd/lr-find.stdout.json" ] || [ ! -s "$sd/lr-find.wall_s" ]; then
		t0=$(now)
		if ! "$HP" lr-find --model "$MODEL" --data fashion-mnist --steps "$LRF_STEPS" --batch "$BATCH" \
			--seed "$seed" --trainer "$TRAINER" --out "$sd/lr-find" --json -- "${EXTRA[@]}" \
			>"$sd/lr-find.stdout.json"; then
			echo "lr_find_check: hetpool lr-find failed (seed $seed); see $sd/lr-find/trainer.log" >&2
			exit 1
		fi
		since "$t0" >"$sd/lr-find.wall_s"
	fi
	suggested=$(python3 -c "import json,sys; print(repr(json.load(open(sys.argv[1]))['suggested_lr']))" \
		"$sd/lr-find.stdout.json")
	echo "-- seed $seed: range test done in $(printf %.1f "$(cat "$sd/lr-find.wall_s")") s, suggested $suggested; training $((ngrid + 1)) runs"
	for lr in $GRID; do
		train "$sd/train/lr_$lr" "$lr" "$seed"
	done
	train "$sd/train/suggested" "$suggested" "$seed"
done

python3 - "$OUT" "$SEEDS" "$GRID" "$BUDGET" "$BATCH" "$LRF_STEPS" "${THREADS:-default}" "$MODEL" <<'PY'
import json, os, statistics, sys
out, seeds, grid, budget, batch, lrf_steps, threads, model = sys.argv[1:]
seeds, grid = seeds.split(), grid.split()

def run(d):
    """(test accuracy in percent, wall s); a failed run counts 0%."""
    try:
        a = json.load(open(os.path.join(d, "results.json"))).get("test_accuracy")
    except (OSError, ValueError):
        a = None
    try:
        w = float(open(os.path.join(d, "wall_s")).read())
    except (OSError, ValueError):
        w = float("nan")
    return (0.0 if a is None else 100 * a), w

per_seed = []
for s in seeds:
    sd = os.path.join(out, f"seed_{s}")
    lf = json.load(open(os.path.join(sd, "lr-find.stdout.json")))
    lf_wall = float(open(os.path.join(sd, "lr-find.wall_s")).read())
    lo, hi = lf["interval"]
    sugg = lf["suggested_lr"]
    rows = [(float(lr),) + run(os.path.join(sd, "train", f"lr_{lr}")) for lr in grid]
    s_acc, s_wall = run(os.path.join(sd, "train", "suggested"))
    best_lr, best, _ = max(rows, key=lambda r: r[1])
    gap = best - s_acc
    print(f"\n-- seed {s}: range test {lf['steps_run']} of {lf['steps_requested']} steps, "
          f"{lf_wall:.1f} s; interval {lo:.3g} .. {hi:.3g}; suggested {sugg:.3g}")
    print(f"   how: {lf['suggested_how']}")
    print(f"{'lr':>10} {'test acc %':>11} {'wall s':>7}")
    for lr, a, w in rows:
        print(f"{lr:>10.3g} {a:>11.2f} {w:>7.1f}" + ("   <- best of the grid" if lr == best_lr else ""))
    print(f"{sugg:>10.3g} {s_acc:>11.2f} {s_wall:>7.1f}   <- suggested")
    verdict = "PASS" if gap <= 1 else "FAIL"
    print(f"seed {s}: suggested {sugg:.3g}: {s_acc:.2f}%; best of the {len(grid)}-rate grid "
          f"{best_lr:.3g}: {best:.2f}%; gap {gap:.2f} points (goal <= 1): {verdict}")
    per_seed.append({"seed": int(s), "range_test_s": lf_wall, "range_test_steps": lf["steps_run"],
                     "interval": [lo, hi], "suggested_lr": sugg,
                     "suggested_accuracy_percent": s_acc, "suggested_wall_s": s_wall,
                     "best_grid_lr": best_lr, "best_grid_accuracy_percent": best,
                     "gap_points": gap, "verdict": verdict,
                     "grid": [{"lr": lr, "accuracy_percent": a, "wall_s": w} for lr, a, w in rows]})

gaps = [p["gap_points"] for p in per_seed]
npass = sum(p["verdict"] == "PASS" for p in per_seed)
lf_walls = [p["range_test_s"] for p in per_seed]
runs = [g["wall_s"] for p in per_seed for g in p["grid"]] + [p["suggested_wall_s"] for p in per_seed]
verdict = "PASS" if npass == len(per_seed) else "FAIL"
print(f"\nverdict: {verdict}: the suggestion is within 1 point of the grid's best for {npass} of "
      f"{len(per_seed)} seeds (gaps {', '.join(f'{g:.2f}' for g in gaps)} points; "
      f"mean {statistics.mean(gaps):.2f}); range test {min(lf_walls):.1f} to {max(lf_walls):.1f} s; "
      f"training runs {statistics.median(runs):.1f} s median ({min(runs):.1f} to {max(runs):.1f})")
summary = {"model": model, "budget_steps": int(budget), "batch": int(batch),
           "range_test_steps": int(lrf_steps), "threads": threads, "grid": [float(x) for x in grid],
           "verdict": verdict, "seeds_passed": npass, "gaps_points": gaps, "per_seed": per_seed}
with open(os.path.join(out, "lr_find_check.json"), "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
print(f"runs and summary: {out}")
PY
