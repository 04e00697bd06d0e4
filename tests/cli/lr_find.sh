#!/usr/bin/env bash
# CLI checks for `hetpool lr-find`: --from on a metrics.jsonl written here
# (a synthetic range test: a known curve plus seeded noise, whose good
# region is known), the JSON contract, the plot parsed as XML
# (xml.etree), the text summary; one-line errors with exit 2 on bad input;
# the spawn path through a stand-in trainer script (argv, progress file,
# pass-through arguments, a failing trainer); and a real range test
# through hetpool-train on Fashion-MNIST when this build has the trainer.
. "$(dirname "$0")/lib.sh"

# A range test of 200 steps from 1e-5 to 10 whose loss falls fastest at
# lr 1e-2 and is lowest near 0.3, then blows up; 5% noise and a few
# spikes.  The trainer's --stop-on-divergence 4 cut is applied.
gen_metrics() { # DIR SEED [flat]
	mkdir -p "$1"
	python3 - "$1/metrics.jsonl" "$2" "${3:-}" <<'PY'
import json, math, random, sys
path, seed, flat = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "flat"
random.seed(seed)
v, bp, best = 0.0, 1.0, float("inf")
with open(path, "w") as f:
    for i in range(200):
        x = -5 + 6 * i / 199
        l = 2.3 if flat else 2.3 - 2.0 / (1 + math.exp(-(x + 2) / 0.35)) + 0.05 * math.exp((x + 0.3) / 0.15)
        l *= 1 + 0.05 * random.gauss(0, 1)
        if random.random() < 0.02:
            l *= 2.5
        acc = max(0.0, min(1.0, 0.1 + 0.8 * (2.3 - l) / 2.0))
        f.write(json.dumps({"step": i + 1, "epoch": 0, "lr": 10 ** x, "loss": l,
                            "accuracy": acc, "local_batches": [64],
                            "rank_step_s": [0.01]}) + "\n")
        v = 0.98 * v + 0.02 * l
        bp *= 0.98
        best = min(best, v / (1 - bp))
        if v / (1 - bp) > 4 * best:
            break
PY
}

# check_result NAME JSON SVG: the contract, and the suggestion in the known
# region (from half a decade below the true steepest point, 1e-2, to the
# true minimum, about 0.3).
check_result() {
	if python3 - "$2" "$3" <<'PY'
import json, sys
import xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
for k in ("suggested_lr", "suggested_how", "interval", "interval_how", "candidates",
          "polynomial", "log_fit", "steps_run", "stopped_early", "diverged", "warnings"):
    assert k in d, k
s = d["suggested_lr"]
lo, hi = d["interval"]
assert 10 ** -2.5 <= s <= 0.31, s
assert lo <= s <= hi, (lo, s, hi)
assert d["suggested_how"] and d["interval_how"]["low"] and d["interval_how"]["high"]
p = d["polynomial"]
assert 1 <= p["degree"] <= 8 and len(p["coefficients"]) == p["degree"] + 1
assert d["log_fit"]["b"] < 0
assert d["steps_run"] > 100
root = ET.parse(sys.argv[2]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
assert len(root.findall(".//" + ns + "polyline")) >= 4
texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
assert "suggested" in texts and "learning rate" in texts, texts
PY
	then ok "$1"; else fail "$1" "$(head -c 600 "$2")"; fi
}

gen_metrics "$TMP/a" 5
expect_status lr_find_from_json 0 "$HP" lr-find --from "$TMP/a" --json
cp "$TMP/out" "$TMP/a.stdout.json"
check_result lr_find_from_contract "$TMP/a.stdout.json" "$TMP/a/lr-find.svg"
cmp -s "$TMP/a.stdout.json" "$TMP/a/lr-find.json" && ok lr_find_json_file || fail lr_find_json_file "stdout and DIR/lr-find.json differ"

# Other seeds: the suggestion stays in the known region.
for seed in 11 12 13; do
	gen_metrics "$TMP/s$seed" $seed
	"$HP" lr-find --from "$TMP/s$seed" --json >"$TMP/s$seed.json" 2>"$TMP/err" &&
		check_result "lr_find_from_seed_$seed" "$TMP/s$seed.json" "$TMP/s$seed/lr-find.svg" ||
		fail "lr_find_from_seed_$seed" "$(cat "$TMP/err")"
done

expect_status lr_find_from_text 0 "$HP" lr-find --from "$TMP/a" --out "$TMP/a-text"
grep -qE '^suggested lr +[0-9.e-]+$' "$TMP/out" && grep -q '^interval ' "$TMP/out" && grep -q '^  how ' "$TMP/out" &&
	ok lr_find_text_summary || fail lr_find_text_summary "$(cat "$TMP/out")"
[ -s "$TMP/a-text/lr-find.svg" ] && [ -s "$TMP/a-text/lr-find.json" ] && ok lr_find_out_dir || fail lr_find_out_dir "nothing in --out"
expect_status lr_find_ewma 0 "$HP" lr-find --from "$TMP/a" --smooth ewma --out "$TMP/a-ewma" --json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['smoothing']['method']=='ewma'" "$TMP/out" &&
	ok lr_find_ewma_said || fail lr_find_ewma_said "$(head -c 300 "$TMP/out")"

# Every figure of the analysis against an independent re-analysis in plain
# Python (lrfind_ref.py, written from docs/lr-find.md): the synthetic series
# above and a real 300-step range test of fmnist-cnn on Fashion-MNIST
# (tests/data/lrfind), under each smoothing option.  With --diverge 2
# --window 21 the smoothed tail is flat to the last bit; a running sum's
# rounding once read it as falling and cut the fit one step short.
REF="$(dirname "$0")/lrfind_ref.py"
FX="$HP_ROOT/tests/data/lrfind"
mkdir -p "$TMP/fx" && cp "$FX/fmnist-cnn-300.metrics.jsonl" "$TMP/fx/metrics.jsonl"
ref_case() { # NAME SRC MAXDEG OPTIONS...
	local name=$1 src=$2 deg=$3
	shift 3
	rm -rf "$TMP/ref-out"
	if "$HP" lr-find --from "$src" --out "$TMP/ref-out" --json "$@" >/dev/null 2>"$TMP/err" &&
		python3 "$REF" "$TMP/ref-out" "$src" "$deg" >"$TMP/ref.txt" 2>&1; then
		ok "$name"
	else
		fail "$name" "$(cat "$TMP/err"; grep -E 'differs|Error' "$TMP/ref.txt" | head -5)"
	fi
}
ref_case lr_find_ref_synthetic "$TMP/a" 8
ref_case lr_find_ref_synthetic_ewma "$TMP/a" 8 --smooth ewma
ref_case lr_find_ref_real "$TMP/fx" 8
ref_case lr_find_ref_real_window7 "$TMP/fx" 8 --window 7
ref_case lr_find_ref_real_flat_tail "$TMP/fx" 8 --diverge 2 --window 21
ref_case lr_find_ref_real_degree4 "$TMP/fx" 4 --max-degree 4
ref_case lr_find_ref_real_ewma "$TMP/fx" 8 --smooth ewma

# A folder name with markup and a control character: escaped in the plot.
weird="$TMP/w<&>\"$(printf '\001')"
gen_metrics "$weird" 5
expect_status lr_find_weird_dir 0 "$HP" lr-find --from "$weird"
python3 -c "import xml.etree.ElementTree as ET,sys; ET.parse(sys.argv[1])" "$weird/lr-find.svg" 2>"$TMP/err" &&
	ok lr_find_weird_svg_parses || fail lr_find_weird_svg_parses "$(cat "$TMP/err")"

# Bad input: one line, exit 2.
expect_status lr_find_help 0 "$HP" lr-find --help
grep -q -- '--lr-min X' "$TMP/out" && ok lr_find_help_options || fail lr_find_help_options "$(head -c 200 "$TMP/out")"
expect_status lr_find_no_model 2 "$HP" lr-find --out "$TMP/x"
expect_status lr_find_no_out 2 "$HP" lr-find --model "$TMP/nothing.json"
expect_status lr_find_from_missing 2 "$HP" lr-find --from "$TMP/none"
mkdir -p "$TMP/empty"
expect_status lr_find_from_no_metrics 2 "$HP" lr-find --from "$TMP/empty"
expect_err lr_find_from_no_metrics_says "metrics.jsonl'?: cannot open"
expect_status lr_find_from_and_model 2 "$HP" lr-find --from "$TMP/a" --model x.json
expect_status lr_find_bad_steps 2 "$HP" lr-find --model x.json --out "$TMP/x" --steps 5
expect_status lr_find_bad_range 2 "$HP" lr-find --model x.json --out "$TMP/x" --lr-min 1 --lr-max 0.1
expect_status lr_find_bad_window 2 "$HP" lr-find --from "$TMP/a" --window 4
expect_status lr_find_bad_smooth 2 "$HP" lr-find --from "$TMP/a" --smooth mean
expect_status lr_find_stray_arg 2 "$HP" lr-find --from "$TMP/a" extra
expect_status lr_find_unknown_opt 2 "$HP" lr-find --from "$TMP/a" --frobnicate
expect_status lr_find_bad_data 2 "$HP" lr-find --model x.json --out "$TMP/x" --data mnist-of-my-own
expect_status lr_find_missing_model 2 "$HP" lr-find --model "$TMP/nothing.json" --out "$TMP/x"
mkdir -p "$TMP/garbage"
head -n 20 "$TMP/a/metrics.jsonl" >"$TMP/garbage/metrics.jsonl"
echo '{"step": 21, "lr": 0.001, "loss": oops}' >>"$TMP/garbage/metrics.jsonl"
expect_status lr_find_garbage_line 2 "$HP" lr-find --from "$TMP/garbage"
expect_err lr_find_garbage_names_line "metrics.jsonl line 21: not JSON"
# Rows the fit cannot use are refused, naming the file, the line and the
# field (until 3 December a negative loss or an accuracy of 1e308 was
# analysed, exit 0): a loss is a finite number from 0 (or null, "nan",
# "inf" where it overflowed), an accuracy from 0 to 1, a rate above 0.
forge() { # NAME LINE PYTHON-STATEMENT-ON-d PATTERN
	mkdir -p "$TMP/forged-$1"
	python3 - "$TMP/a/metrics.jsonl" "$TMP/forged-$1/metrics.jsonl" "$2" "$3" <<'PY'
import json, sys
src, dst, line, stmt = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(dst, "w") as f:
    for i, l in enumerate(open(src), 1):
        d = json.loads(l)
        if i == line:
            exec(stmt)
        f.write(json.dumps(d) + "\n")
PY
	expect_status "lr_find_forged_$1" 2 "$HP" lr-find --from "$TMP/forged-$1"
	expect_err "lr_find_forged_$1_says" "$4"
}
forge negative_loss 12 'd["loss"] = -3' "forged-negative_loss/metrics.jsonl line 12: step 12: loss -3 is negative"
forge tiny_negative_loss 30 'd["loss"] = -1e-300' "metrics.jsonl line 30: step 30: loss -1e-300 is negative"
forge accuracy_huge 12 'd["accuracy"] = 1e308' "metrics.jsonl line 12: step 12: accuracy 1e\+308 is not between 0 and 1"
forge accuracy_negative 5 'd["accuracy"] = -0.01' "metrics.jsonl line 5: step 5: accuracy -0.01 is not between 0 and 1"
forge lr_zero 7 'd["lr"] = 0' "metrics.jsonl line 7: step 7: lr 0 is not a positive number"
forge lr_negative 7 'd["lr"] = -d["lr"]' "metrics.jsonl line 7: step 7: lr -[0-9.e-]+ is not a positive number"
forge lr_string 7 'd["lr"] = "inf"' "metrics.jsonl line 7: 'lr' is not a number"
forge loss_string 7 'd["loss"] = "-3"' "metrics.jsonl line 7: 'loss' is not a number"
[ ! -e "$TMP/forged-negative_loss/lr-find.json" ] && ok lr_find_forged_no_result ||
	fail lr_find_forged_no_result "a forged series got an lr-find.json"
# A loss's unit does not change the answer (it may be any finite number
# from 0): the series above with its losses times 1e100, 1e-100 and 1e-10
# gets the suggestion of the series itself (until 3 December, past about
# 1e77 the cross-validation overflowed: degree 1 and a suggestion of about
# 1, outside the good region, exit 0), and a plot whose loss axis is
# labelled in the losses' unit (losses of 1e-10 were drawn flat on an
# axis of -0.4 to 0.4).
for f in 1e100 1e-100 1e-10; do
	mkdir -p "$TMP/scaled$f"
	python3 -c "
import json, sys
with open(sys.argv[2], 'w') as o:
    for l in open(sys.argv[1]):
        d = json.loads(l); d['loss'] *= float(sys.argv[3]); o.write(json.dumps(d) + '\n')" \
		"$TMP/a/metrics.jsonl" "$TMP/scaled$f/metrics.jsonl" $f
	expect_status "lr_find_scaled_$f" 0 "$HP" lr-find --from "$TMP/scaled$f" --json
	if python3 - "$TMP/out" "$TMP/a.stdout.json" "$TMP/scaled$f/lr-find.svg" $f <<'PY'
import json, sys
import xml.etree.ElementTree as ET
d, ref, f = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[4])
assert abs(d["suggested_lr"] / ref["suggested_lr"] - 1) < 1e-6, (d["suggested_lr"], ref["suggested_lr"])
assert d["polynomial"]["degree"] == ref["polynomial"]["degree"], d["polynomial"]
assert abs(d["log_fit"]["b"] / (ref["log_fit"]["b"] * f) - 1) < 1e-6, d["log_fit"]
ns = "{http://www.w3.org/2000/svg}"
labels = []
for t in ET.parse(sys.argv[3]).getroot().iter(ns + "text"):
    try:
        labels.append(float(t.text))
    except (TypeError, ValueError):
        pass
# the loss axis's labels, in the losses' unit (the rate axis's are the
# powers of ten from 1e-5 to 10, outside 0.05 f .. 50 f for these f)
loss = [v for v in labels if 0.05 * f <= abs(v) <= 50 * f]
assert len(loss) >= 3, labels
PY
	then ok "lr_find_scaled_${f}_same"; else fail "lr_find_scaled_${f}_same" "$(head -c 400 "$TMP/out")"; fi
done
mkdir -p "$TMP/down"
python3 -c "
import json
for i in range(20): print(json.dumps({'step': i + 1, 'lr': 1.0 / (i + 1), 'loss': 1.0}))" >"$TMP/down/metrics.jsonl"
expect_status lr_find_rate_falls 2 "$HP" lr-find --from "$TMP/down"
expect_err lr_find_rate_falls_says "the rate must rise"
gen_metrics "$TMP/flat" 5 flat
expect_status lr_find_flat 2 "$HP" lr-find --from "$TMP/flat"
expect_err lr_find_flat_says "does not fall"
[ -s "$TMP/flat/lr-find.svg" ] && python3 -c "import xml.etree.ElementTree as ET,sys; ET.parse(sys.argv[1])" "$TMP/flat/lr-find.svg" &&
	ok lr_find_flat_still_plots || fail lr_find_flat_still_plots "no plot of the raw loss"

# The trainer: named by --trainer or HETPOOL_TRAIN, it must be executable.
cat >"$TMP/model.json" <<'SPEC'
{"name": "fmnist-small", "input": [1, 28, 28], "classes": 10, "layers": [
  {"type": "conv", "filters": 8, "kernel": 3, "stride": 1, "pad": 1},
  {"type": "relu"}, {"type": "pool", "op": "max", "kernel": 2, "stride": 2},
  {"type": "fc", "units": 32}, {"type": "relu"}, {"type": "fc", "units": 10}]}
SPEC
expect_status lr_find_trainer_missing 2 "$HP" lr-find --model "$TMP/model.json" --out "$TMP/x" --trainer "$TMP/no-such-trainer"
HETPOOL_TRAIN=$TMP/no-such-trainer expect_status lr_find_trainer_env_missing 2 "$HP" lr-find --model "$TMP/model.json" --out "$TMP/x"
# HETPOOL_TRAINER, the name run and hetpoold read, is taken too
HETPOOL_TRAINER=$TMP/no-such-trainer expect_status lr_find_trainer_env2_missing 2 "$HP" lr-find --model "$TMP/model.json" --out "$TMP/x"
expect_err lr_find_trainer_env2_says "[(]HETPOOL_TRAINER[)] is not an executable file"

# The spawn path, with a stand-in for hetpool-train (this is not the
# trainer: it checks the command line lr-find builds, writes a range test's
# steps one by one and stops on divergence as the contract says).
cat >"$TMP/stand-in-train" <<'PY'
#!/usr/bin/env python3
import json, math, os, random, sys, time
a = sys.argv[1:]
def opt(name):
    return a[a.index(name) + 1]
assert opt("--lr-schedule") == "exp-ramp" and opt("--stop-on-divergence") == "4", a
assert opt("--data") == "fashion-mnist" and opt("--batch") == "32" and opt("--seed") == "7", a
if os.environ.get("STANDIN_FAIL"):
    print("loading data\nstand-in: boom", file=sys.stderr)
    sys.exit(int(os.environ.get("STANDIN_STATUS", "3")))
steps, lo, hi = int(opt("--steps")), float(opt("--lr-min")), float(opt("--lr-max"))
out = opt("--out")
if "--resume" in a and not os.path.exists(os.path.join(out, "metrics.jsonl")):
    print("stand-in: --resume, and no steps to resume from", file=sys.stderr)
    sys.exit(3)
with open(os.path.join(out, "argv.json"), "w") as f:
    json.dump(a, f)
random.seed(int(opt("--seed")))
v, bp, best = 0.0, 1.0, float("inf")
with open(os.path.join(out, "metrics.jsonl"), "w") as f:
    for i in range(steps):
        lr = lo * (hi / lo) ** (i / (steps - 1))
        x = math.log10(lr)
        l = (2.3 - 2.0 / (1 + math.exp(-(x + 2) / 0.35)) + 0.05 * math.exp((x + 0.3) / 0.15)) * (1 + 0.05 * random.gauss(0, 1))
        f.write(json.dumps({"step": i + 1, "lr": lr, "loss": l, "accuracy": 0.5}) + "\n")
        f.flush()
        v = 0.98 * v + 0.02 * l; bp *= 0.98; best = min(best, v / (1 - bp))
        if v / (1 - bp) > 4 * best:
            break
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump({"test_accuracy": None, "steps": i + 1, "wall_s": 0.1}, f)
PY
chmod +x "$TMP/stand-in-train"
expect_status lr_find_spawn 0 "$HP" lr-find --model "$TMP/model.json" --data fashion-mnist --batch 32 --seed 7 \
	--steps 200 --out "$TMP/run" --trainer "$TMP/stand-in-train" --json -- --optimizer sgd --momentum 0.9
cp "$TMP/out" "$TMP/run.json"
check_result lr_find_spawn_contract "$TMP/run.json" "$TMP/run/lr-find.svg"
if python3 - "$TMP/run/argv.json" "$TMP/run.json" "$TMP/run" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
assert a[a.index("--out") + 1] == sys.argv[3], a
assert a[a.index("--model") + 1].endswith("model.json")
assert float(a[a.index("--lr-min") + 1]) == 1e-5 and float(a[a.index("--lr-max") + 1]) == 10
assert a[a.index("--steps") + 1] == "200"
assert a[-3:] == ["--optimizer", "sgd", "--momentum", "0.9"][-3:] and "--optimizer" in a, a
assert d["steps_requested"] == 200 and d["stopped_early"] is True and d["steps_run"] < 200, d
PY
then ok lr_find_spawn_argv; else fail lr_find_spawn_argv "$(cat "$TMP/run/argv.json")"; fi
STANDIN_FAIL=1 expect_status lr_find_trainer_fails 1 "$HP" lr-find --model "$TMP/model.json" --batch 32 --seed 7 \
	--out "$TMP/run-fail" --trainer "$TMP/stand-in-train"
expect_err lr_find_trainer_fails_says "hetpool-train failed \(exit 3\): stand-in: boom; its log: .*trainer.log"
# the trainer's bad input is lr-find's (exit 2)
STANDIN_FAIL=1 STANDIN_STATUS=2 expect_status lr_find_trainer_usage 2 "$HP" lr-find --model "$TMP/model.json" --batch 32 \
	--seed 7 --out "$TMP/run-fail" --trainer "$TMP/stand-in-train"
# a test run again in its folder replaces the earlier one's files (the
# trainer is told --overwrite); one that fails leaves no earlier suggestion
expect_status lr_find_again 0 "$HP" lr-find --model "$TMP/model.json" --data fashion-mnist --batch 32 --seed 7 \
	--steps 200 --out "$TMP/run" --trainer "$TMP/stand-in-train" --json
grep -q -- '"--overwrite"' "$TMP/run/argv.json" && ok lr_find_again_overwrites || fail lr_find_again_overwrites "$(cat "$TMP/run/argv.json")"
cp -r "$TMP/run" "$TMP/spawned"
# a test resumed (-- --resume) goes on from its steps: they are not
# removed first (the stand-in fails without them)
expect_status lr_find_resume_keeps_steps 0 "$HP" lr-find --model "$TMP/model.json" --data fashion-mnist --batch 32 \
	--seed 7 --steps 200 --out "$TMP/run" --trainer "$TMP/stand-in-train" --json -- --resume
STANDIN_FAIL=1 expect_status lr_find_again_fails 1 "$HP" lr-find --model "$TMP/model.json" --batch 32 --seed 7 \
	--out "$TMP/run" --trainer "$TMP/stand-in-train"
[ ! -e "$TMP/run/lr-find.json" ] && [ ! -e "$TMP/run/lr-find.svg" ] && ok lr_find_no_stale_result ||
	fail lr_find_no_stale_result "the earlier test's lr-find.json or .svg is still there"
# a training run's folder is not the range test's to replace
mkdir -p "$TMP/trainrun" && echo ck >"$TMP/trainrun/checkpoint"
expect_status lr_find_training_folder 2 "$HP" lr-find --model "$TMP/model.json" --batch 32 --seed 7 \
	--out "$TMP/trainrun" --trainer "$TMP/stand-in-train"
expect_err lr_find_training_folder_says "holds a training run \(checkpoint\)"
[ "$(cat "$TMP/trainrun/checkpoint")" = ck ] && ok lr_find_training_folder_kept || fail lr_find_training_folder_kept "changed"
# nor when --from wrote an lr-find.json into it: that made the folder a
# range test's, which the next test replaced, checkpoint and all
mkdir -p "$TMP/trainrun2" && echo ck >"$TMP/trainrun2/checkpoint"
cp "$TMP/spawned/metrics.jsonl" "$TMP/trainrun2/"
expect_status lr_find_from_training_folder 0 "$HP" lr-find --from "$TMP/trainrun2" --json
expect_status lr_find_from_then_test 2 "$HP" lr-find --model "$TMP/model.json" --batch 32 --seed 7 \
	--out "$TMP/trainrun2" --trainer "$TMP/stand-in-train"
expect_err lr_find_from_then_test_says "holds a training run \(checkpoint\).*-- --overwrite"
[ "$(cat "$TMP/trainrun2/checkpoint")" = ck ] && cmp -s "$TMP/spawned/metrics.jsonl" "$TMP/trainrun2/metrics.jsonl" &&
	ok lr_find_from_then_test_kept || fail lr_find_from_then_test_kept "the run's checkpoint or steps changed"
# the trainer options the test sets itself are refused after --, in any
# form the trainer's getopt takes (--name=value, an abbreviation): given
# again they would win, and the test wrote into another run's folder
# (replacing it) or trained another batch than the plot says
for bad in out:"--out $TMP/trainrun" outeq:"--out=$TMP/trainrun" abbrev:"--ou $TMP/trainrun" \
	batch:"--batch=64" steps:"--steps 5" lr:"--lr 0.1" schedule:"--lr-schedule cosine"; do
	# shellcheck disable=SC2086
	expect_status "lr_find_owned_${bad%%:*}" 2 "$HP" lr-find --model "$TMP/model.json" --batch 32 --seed 7 \
		--out "$TMP/owned" --trainer "$TMP/stand-in-train" -- ${bad#*:}
	expect_err "lr_find_owned_${bad%%:*}_says" "after '--' is --[a-z-]+, an option the range test sets itself"
done
[ "$(cat "$TMP/trainrun/checkpoint")" = ck ] && [ ! -e "$TMP/owned" ] && ok lr_find_owned_nothing_touched ||
	fail lr_find_owned_nothing_touched "$(ls -la "$TMP/trainrun" "$TMP/owned" 2>&1)"
# a metrics.jsonl that is a symlink loop is bad input (it was exit 1)
mkdir -p "$TMP/loop" && ln -s metrics.jsonl "$TMP/loop/metrics.jsonl"
expect_status lr_find_from_symlink_loop 2 "$HP" lr-find --from "$TMP/loop"
expect_err lr_find_from_symlink_loop_says "metrics.jsonl': cannot open: Too many levels of symbolic links"
# a training run's steps (warm-up, then one rate for a third of them) are
# not a range test: refused, not a curve fitted through rates never tried
mkdir -p "$TMP/warmup"
python3 - "$TMP/warmup/metrics.jsonl" <<'PY'
import json, math, sys
with open(sys.argv[1], "w") as f:
    for i in range(60):
        f.write(json.dumps({"step": i + 1, "lr": 0.05 * min(1, (i + 1) / 40),
                            "loss": 2.3 * math.exp(-i / 30) + 0.1}) + "\n")
PY
expect_status lr_find_not_range_test 2 "$HP" lr-find --from "$TMP/warmup"
expect_err lr_find_not_range_test_says "21 of the 60 steps analysed \(steps 40 to 60\) share one rate, 0.05: not a range test"
# an analysis that fails replaces the plot in --out: the earlier
# suggestion there is removed with it, not left beside another's plot
expect_status lr_find_from_fails_in_old 2 "$HP" lr-find --from "$TMP/warmup" --out "$TMP/spawned"
[ ! -e "$TMP/spawned/lr-find.json" ] && [ -s "$TMP/spawned/lr-find.svg" ] && grep -q "the earlier lr-find.json there is removed" "$TMP/err" &&
	ok lr_find_from_fails_no_stale_json || fail lr_find_from_fails_no_stale_json "$(cat "$TMP/err"; ls "$TMP/spawned")"
: >"$TMP/a-file"
expect_status lr_find_out_file 2 "$HP" lr-find --model "$TMP/model.json" --out "$TMP/a-file" --trainer "$TMP/stand-in-train"
expect_err lr_find_out_file_says "is not a folder"
expect_status lr_find_trainer_dir 2 "$HP" lr-find --model "$TMP/model.json" --out "$TMP/x" --trainer "$TMP"

# The real trainer, when this build has it.
if [ -x "$HP_BIN/hetpool-train" ]; then
	expect_status lr_find_real 0 "$HP" lr-find --model "$TMP/model.json" --data fashion-mnist --steps 100 \
		--batch 32 --out "$TMP/real" --json
	if python3 - "$TMP/out" "$TMP/real/lr-find.svg" <<'PY'
import json, sys
import xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
lo, hi = d["interval"]
assert 1e-5 <= lo <= d["suggested_lr"] <= hi <= 10, d
assert d["steps_run"] >= 10
ET.parse(sys.argv[2])
PY
	then ok lr_find_real_contract; else fail lr_find_real_contract "$(head -c 600 "$TMP/out")"; fi
else
	echo "skip lr_find_real: no hetpool-train in this build"
fi
