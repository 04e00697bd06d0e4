#!/usr/bin/env bash
# CLI checks for the estimator: `hetpool fit` on a small profile, `predict`
# (JSON contract, interval around the step time, the shipped default
# estimator, cross-device from specs, memory refusal), `validate` (MAPE
# rows), and one-line errors with exit 2 on bad input.
. "$(dirname "$0")/lib.sh"
SMALL=$HP_ROOT/tests/data/estimate/cpu-small.csv
R50=$HP_ROOT/data/models/resnet50.train.onnx
cat >"$TMP/cnn.json" <<'SPEC'
{"name": "cnn-test", "input": [3, 32, 32], "classes": 10,
 "layers": [{"type": "conv", "filters": 32, "kernel": 3, "stride": 1, "pad": 1},
            {"type": "bn"}, {"type": "relu"},
            {"type": "pool", "op": "max", "kernel": 2, "stride": 2, "pad": 0},
            {"type": "conv", "filters": 32, "kernel": 3, "stride": 1, "pad": 1},
            {"type": "relu"},
            {"type": "pool", "op": "max", "kernel": 2, "stride": 2, "pad": 0},
            {"type": "fc", "units": 10}]}
SPEC

expect_status fit_small 0 "$HP" fit "$SMALL" --no-public --out "$TMP/est.json"
grep -q 'wrote .*est.json (physical family)' "$TMP/out" && ok fit_says_what || fail fit_says_what "$(cat "$TMP/out")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['format']=='hetpool-estimator' and d['version']==2 and d['provenance']['profile_rows']==45, d['provenance']" "$TMP/est.json" \
	&& ok fit_provenance || fail fit_provenance "$(head -c 400 "$TMP/est.json")"

# The reduction (k_half) and max-pooling (x_max) terms are fitted only
# where the rows vary what they describe: the small profile has 3x3
# max-pooling nets only (both stay off); this host's wide profile has
# kernels 1-7 and both poolings (both fitted); its max-pooling rows alone
# vary the kernel but not the pooling (k_half only)
WIDE=$HP_ROOT/data/profiles/hosts/amd-epyc-avx2-t1-wide.csv
python3 - "$WIDE" "$TMP/wide-max.csv" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=list(rows[0]), lineterminator="\n")
w.writeheader()
for r in rows:
    if all(l.get("op", "max") == "max" for l in json.loads(r["spec_json"])["layers"] if l["type"] == "pool"):
        w.writerow(r)
PY
"$HP" fit "$WIDE" --no-public --out "$TMP/wide.json" >/dev/null 2>&1 &&
	"$HP" fit "$TMP/wide-max.csv" --no-public --out "$TMP/wide-max.json" >/dev/null 2>&1
python3 - "$TMP/est.json" "$TMP/wide.json" "$TMP/wide-max.json" <<'PY' && ok fit_terms_the_rows_vary || fail fit_terms_the_rows_vary "$(head -c 300 "$TMP/wide.json")"
import json, math, sys
def terms(f):
    p = [d for d in json.load(open(f))["devices"] if d["kind"] == "cpu"][0]["params"]
    return p["log_conv_half_reduction"], p["log_maxpool_traffic"]
off = math.log(1e-6)
k, x = terms(sys.argv[1])
assert k == off and x == 0, (k, x)
k, x = terms(sys.argv[2])
assert k != off and abs(k - math.log(4)) > 1e-3 and x != 0, (k, x)
k, x = terms(sys.argv[3])
assert k != off and x == 0, (k, x)
PY

expect_status predict_cpu_json 0 "$HP" predict "$TMP/cnn.json" --device cpu --batch 32 --estimator "$TMP/est.json" --json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("step_time_s", "step_time_interval_s", "samples_per_s", "energy_per_step_j",
          "power_w", "peak_memory_bytes", "fits_in_memory", "basis", "utilisation"):
    assert k in d, k
t = d["step_time_s"]; lo, hi = d["step_time_interval_s"]
assert t > 0 and d["samples_per_s"] > 0 and d["peak_memory_bytes"] > 0
assert 0 < lo <= t <= hi, (lo, t, hi)
assert abs(d["samples_per_s"] - 32 / t) < 1e-6 * d["samples_per_s"]
assert "rows of cpu" in d["basis"]["step_time"]
# No CPU power figure in the catalog: energy is null, and says why.
assert d["energy_per_step_j"] is None and "not known" in d["basis"]["energy"]
PY
then ok predict_cpu_contract; else fail predict_cpu_contract "$(head -c 600 "$TMP/out")"; fi
expect_status predict_cpu_linear 0 "$HP" predict "$TMP/cnn.json" --device cpu --batch 32 --estimator "$TMP/est.json" --family linear
expect_status predict_linear_refuses_resnet 2 "$HP" predict "$R50" --device cpu --batch 8 --estimator "$TMP/est.json" --family linear
expect_err predict_linear_says_why "linear family cannot apply: conv_layers 53"

# The shipped default estimator: out of the box, GPUs with and without data.
expect_status predict_default_v100 0 "$HP" predict "$R50" --device v100 --batch 64
grep -q '^step time' "$TMP/out" && ok predict_text || fail predict_text "$(cat "$TMP/out")"
expect_status predict_default_json 0 "$HP" predict "$R50" --device v100 --batch 64 --json
cp "$TMP/out" "$TMP/v100.json"
expect_status predict_unmeasured_l4 0 "$HP" predict "$R50" --device l4 --batch 64 --json
cp "$TMP/out" "$TMP/l4.json"
expect_status predict_unmeasured_h200 0 "$HP" predict "$R50" --device h200 --batch 64 --json
if python3 - "$TMP/v100.json" "$TMP/l4.json" "$TMP/out" <<'PY'
import json, sys
v, l4, h200 = (json.load(open(p)) for p in sys.argv[1:])
for d in (v, l4, h200):
    lo, hi = d["step_time_interval_s"]
    assert 0 < lo <= d["step_time_s"] <= hi
    assert d["power_w"] > 0 and d["energy_per_step_j"] > 0
assert not l4["measured"] and "no measurements of l4" in l4["basis"]["step_time"]
# H200 (67 TFLOP/s, 4.8 TB/s) is faster than V100 (15.7, 0.9).
assert h200["step_time_s"] < v["step_time_s"], (h200["step_time_s"], v["step_time_s"])
PY
then ok predict_cross_device; else fail predict_cross_device "$(cat "$TMP/out")"; fi
expect_status predict_multi_gpu 0 "$HP" predict "$R50" --device a100 --batch 512 --devices 8 --json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['devices']==8 and d['comm_time_s']>0" "$TMP/out" \
	&& ok predict_multi_gpu_comm || fail predict_multi_gpu_comm "$(cat "$TMP/out")"
# The step by layer class: conv, fully connected and other, under the step
# with the all-reduce (the rest is the per-step overhead); none for the
# roofline, which has no layers; a line of text.
python3 - "$TMP/out" <<'PY' && ok predict_class_times || fail predict_class_times "$(cat "$TMP/out")"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["class_time_s"]
assert sorted(c) == ["conv", "fc", "other"] and min(c.values()) >= 0, c
assert c["conv"] > c["fc"] and sum(c.values()) + d["comm_time_s"] < d["step_time_s"], (c, d["step_time_s"])
PY
expect_status predict_roofline_classes 0 "$HP" predict "$R50" --device a100 --batch 512 --family roofline --json
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['class_time_s'] is None" "$TMP/out" \
	&& ok predict_roofline_no_classes || fail predict_roofline_no_classes "$(cat "$TMP/out")"
expect_status predict_class_text 0 "$HP" predict "$R50" --device a100 --batch 512
grep -qE '^layers +conv [0-9.e+-]+ s, fully connected [0-9.e+-]+ s, other [0-9.e+-]+ s' "$TMP/out" \
	&& ok predict_class_line || fail predict_class_line "$(cat "$TMP/out")"
# Precision: amp (FP16 tensor cores) is faster than fp32 on an A100, tf32
# (the TF32 peak everywhere) in between or equal; a V100 has no TF32.
for p in fp32 tf32 amp; do
	expect_status predict_precision_$p 0 "$HP" predict "$R50" --device a100 --batch 256 --precision $p --json
	cp "$TMP/out" "$TMP/prec_$p.json"
done
python3 - "$TMP/prec_fp32.json" "$TMP/prec_tf32.json" "$TMP/prec_amp.json" <<'PY' \
	&& ok predict_precision_order || fail predict_precision_order "$(cat "$TMP/prec_amp.json")"
import json, sys
f, t, a = (json.load(open(x)) for x in sys.argv[1:])
assert (f["precision"], t["precision"], a["precision"]) == ("fp32", "tf32", "amp")
assert a["step_time_s"] < t["step_time_s"] <= f["step_time_s"], (f, t, a)
assert a["peak_memory_bytes"] < f["peak_memory_bytes"]
PY
expect_status predict_tf32_on_v100 2 "$HP" predict "$R50" --device v100 --batch 64 --precision tf32
expect_err predict_tf32_on_v100_says "no TF32 tensor cores"
expect_status predict_amp_on_cpu 2 "$HP" predict "$R50" --device cpu --batch 8 --precision amp
expect_status bad_precision 2 "$HP" predict "$R50" --device v100 --batch 8 --precision fp16
expect_status predict_too_big 2 "$HP" predict "$R50" --device t4 --batch 2048
expect_err predict_too_big_says "does not fit: .* t4 has"

expect_status validate_runs 0 "$HP" validate --profiles "$SMALL" --no-public --folds 3
grep -qE '^cpu-profiles +physical +leave-family-out +[0-9]+ +[0-9.]+' "$TMP/out" && ok validate_physical_row || fail validate_physical_row "$(cat "$TMP/out")"
grep -qE '^cpu-profiles +roofline +k-fold' "$TMP/out" && ok validate_roofline_row || fail validate_roofline_row "$(cat "$TMP/out")"
expect_status validate_json 0 "$HP" validate --profiles "$SMALL" --no-public --folds 3 --json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert all(r['mape_percent']>=0 for r in d['rows']) and len(d['rows'])>=6" "$TMP/out" \
	&& ok validate_json_rows || fail validate_json_rows "$(head -c 300 "$TMP/out")"

expect_status help_fit 0 "$HP" fit --help
expect_status help_predict 0 "$HP" predict --help
expect_status help_validate 0 "$HP" validate --help

# Bad input: one line on stderr, exit status 2.
expect_status bad_device 2 "$HP" predict "$R50" --device tpu-v5 --batch 8
expect_err bad_device_says "'tpu-v5' is not in the catalog"
expect_status bad_batch_zero 2 "$HP" predict "$R50" --device v100 --batch 0
expect_status bad_batch_multiple 2 "$HP" predict "$R50" --device v100 --batch 10 --devices 4
expect_status bad_estimator_missing 2 "$HP" predict "$R50" --device v100 --batch 8 --estimator "$TMP/nope.json"
expect_err bad_estimator_missing_names_it "nope.json"
echo '{"format": "hetpool-estimator", "version": 2, "family": "physical", "gpu": {' >"$TMP/corrupt.json"
expect_status bad_estimator_corrupt 2 "$HP" predict "$R50" --device v100 --batch 8 --estimator "$TMP/corrupt.json"
expect_err bad_estimator_corrupt_says "not valid JSON"
expect_status bad_model 2 "$HP" predict "$TMP/nope.onnx" --device v100 --batch 8
expect_status bad_family 2 "$HP" predict "$R50" --device v100 --batch 8 --family magic
expect_status bad_fit_no_out 2 "$HP" fit "$SMALL" --no-public
expect_status bad_fit_dataset 2 "$HP" fit "$TMP/nope.csv" --no-public --out "$TMP/x.json"
expect_status bad_fit_family 2 "$HP" fit "$SMALL" --no-public --family roofline --out "$TMP/x.json"
# With no DATASET, fit has a default (the shipped data/profiles, and the
# shipped public measurements); datasets given that add no row are bad
# input (until 3 December a header alone fitted the public rows alone,
# exit 0, and wrote that estimator as the fit asked for)
head -n 1 "$SMALL" >"$TMP/header-only.csv"
expect_status bad_fit_header_only 2 "$HP" fit "$TMP/header-only.csv" --out "$TMP/ho.json"
expect_err bad_fit_header_only_says "^hetpool: fit: no profile row to fit in '.*header-only.csv': a header alone"
[ ! -e "$TMP/ho.json" ] && ok bad_fit_header_only_wrote_nothing || fail bad_fit_header_only_wrote_nothing "$(head -c 200 "$TMP/ho.json")"
python3 - "$SMALL" "$TMP/all-busy.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=list(rows[0]) + ["cpu_pressure"])
w.writeheader()
for r in rows:
    r["cpu_pressure"] = "0.4"
    w.writerow(r)
PY
expect_status bad_fit_all_rows_left_out 2 "$HP" fit "$TMP/all-busy.csv" "$TMP/header-only.csv" --out "$TMP/ho.json"
expect_err bad_fit_all_rows_left_out_says "no profile row to fit in the 2 datasets given: .*every row left out"
expect_status bad_validate_folds 2 "$HP" validate --folds 1

# Rows measured on a busy host (cpu_pressure over 0.05) are left out of fits.
python3 - "$SMALL" "$TMP/busy.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=list(rows[0]) + ["cpu_pressure"])
w.writeheader()
for i, r in enumerate(rows):
    r["cpu_pressure"] = "0.4" if i < 5 else "0.001"
    w.writerow(r)
PY
expect_status fit_busy_rows 0 "$HP" fit "$TMP/busy.csv" --no-public --out "$TMP/busy.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['provenance']['profile_rows']==40, d['provenance']" "$TMP/busy.json" \
	&& ok fit_busy_rows_left_out || fail fit_busy_rows_left_out "$(head -c 400 "$TMP/busy.json")"
expect_status validate_busy_rows 0 "$HP" validate --profiles "$TMP/busy.csv" --no-public --folds 3
grep -q "5 rows of .*busy host" "$TMP/out" && ok validate_busy_rows_noted || fail validate_busy_rows_noted "$(tail -3 "$TMP/out")"

# More threads than this process may run on share those CPUs: the
# prediction is made at those, said in a warning and the basis (until 3
# December it read "(4096 threads)" on the cores' figures, and used the
# 4096-thread host file, which holds no peaks or calibration)
expect_status predict_threads_past_cores 0 "$HP" predict "$TMP/cnn.json" --device cpu --batch 8 --threads 4096 --json
cp "$TMP/out" "$TMP/t4096.json"
expect_err predict_threads_past_cores_warns "4096 threads asked, but this process may run on [0-9]+ CPUs: predicting at"
expect_status predict_threads_at_cpus 0 "$HP" predict "$TMP/cnn.json" --device cpu --batch 8 --threads "$(nproc)" --json
python3 - "$TMP/t4096.json" "$TMP/out" <<'PY' && ok predict_threads_past_cores_said || fail predict_threads_past_cores_said "$(head -c 600 "$TMP/t4096.json")"
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert "4096 thread" not in a["basis"]["step_time"], a["basis"]["step_time"]
assert a["basis"]["step_time"] == b["basis"]["step_time"] and a["step_time_s"] == b["step_time_s"], (a["step_time_s"], b["step_time_s"])
PY
# the input pipeline on a CPU device is not modelled (its cores compute
# too): null in the JSON, as the text says (it printed a ceiling)
expect_status predict_cpu_input_pipeline 0 "$HP" predict "$TMP/cnn.json" --device cpu --batch 8 --input-cores 1 --input-rate 1 --json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['input_pipeline'] is None and 'input pipeline not modelled on a CPU' in d['basis']['step_time'], d['input_pipeline']" "$TMP/out" \
	&& ok predict_cpu_input_pipeline_null || fail predict_cpu_input_pipeline_null "$(head -c 400 "$TMP/out")"

# fit says what it left out (until 3 December it said nothing): a CPU with
# too few rows for a model of its own, a torn last line
head -8 "$HP_ROOT/data/profiles/cpu-default.csv" >"$TMP/n7.csv"
expect_status fit_few_cpu_rows 0 "$HP" fit "$TMP/n7.csv" --no-public --out "$TMP/n7.json"
expect_err fit_few_cpu_rows_said "fit: note: cpu: 7 profile rows, fewer than 8: no model of it was fitted"
head -c 20000 "$HP_ROOT/data/profiles/cpu-default.csv" >"$TMP/torn.csv"
expect_status fit_torn_line 0 "$HP" fit "$TMP/torn.csv" --no-public --out "$TMP/torn.json" --json
python3 -c "import json,sys; n=json.load(open(sys.argv[1]))['notes']; assert any('cut short' in x for x in n), n" "$TMP/out" \
	&& ok fit_torn_line_said || fail fit_torn_line_said "$(head -c 400 "$TMP/out")"

# A CPU's TDP is its package with every core busy: on T of C cores a step
# draws the idle power and T / C of the modelled power above it (until 3
# December one thread of two cores drew the whole package's).  Checked
# against the formula, with the shipped estimator's exponent, at 1 thread
# and at all the cores.
cpu_power_catalog "$TMP/cat-tdp.csv" 100 20
cores=$("$HP" host --json | python3 -c "import json,sys; print(json.load(sys.stdin)['host']['physical_cores'])")
if [ "${cores:-1}" -lt 2 ]; then
	echo "skip predict_cpu_power_thread_share: this host has $cores core"
else
	for th in 1 "$cores"; do
		"$HP" predict "$TMP/cnn.json" --device cpu --batch 32 --threads "$th" \
			--catalog "$TMP/cat-tdp.csv" --json >"$TMP/p$th.json" 2>"$TMP/err"
	done
	python3 - "$HP_ROOT/data/estimators/default.json" "$TMP/p1.json" "$TMP/p$cores.json" "$cores" <<'PY' &&
import json, sys
g = json.load(open(sys.argv[1]))["power"]["gamma"]
c = int(sys.argv[4])
for path, share in ((sys.argv[2], 1 / c), (sys.argv[3], 1.0)):
    p = json.load(open(path))
    want = 20 + 80 * p["utilisation"] ** g * share
    assert abs(p["power_w"] - want) < 1e-6 * want, (path, p["power_w"], want)
PY
	ok predict_cpu_power_thread_share || fail predict_cpu_power_thread_share "$(cat "$TMP/err")"
fi
