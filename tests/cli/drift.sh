#!/usr/bin/env bash
# CLI checks for measurement that survives drift: `hetpool validate`
# reports the repeat-measurement noise floor beside every error (text and
# --json; "not measured" without repeats), and `fit` keeps the yardstick's
# reference speed in the estimator when the rows carry ref_time_s.
. "$(dirname "$0")/lib.sh"
SMALL=$HP_ROOT/tests/data/estimate/cpu-small.csv

# Without repeats: not measured.
expect_status drift_validate_no_repeats 0 "$HP" validate --profiles "$SMALL" --no-public --folds 3
grep -qE '^cpu-profiles +physical +k-fold .* not measured' "$TMP/out" && ok drift_noise_not_measured || fail drift_noise_not_measured "$(head -5 "$TMP/out")"

# The same rows measured three times: 1x, 1.1x and 0.9x the time, each with
# a yardstick that moved with it (relative times identical).  By hand,
# each against the next: 200*0.1/2.1, 200*0.2/2.0 -> median 14.76%;
# relative 0.
python3 - "$SMALL" "$TMP/rep.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
fields = list(rows[0]) 
for c in ("ref_time_s", "ref_time_cv", "ref_steps"):
    if c not in fields:
        fields.insert(fields.index("spec_json"), c)
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=fields)
w.writeheader()
for f in (1.0, 1.1, 0.9):
    for r in rows:
        r = dict(r)
        r["step_time_s"] = repr(float(r["step_time_s"]) * f)
        r["ref_time_s"] = repr(0.002 * f)
        r["ref_time_cv"] = "0.01"
        r["ref_steps"] = "9"
        w.writerow(r)
PY
expect_status drift_validate_repeats 0 "$HP" validate --profiles "$TMP/rep.csv" --no-public --folds 3
grep -qE '^cpu-profiles +physical +k-fold .* 14\.8/0\.0 ' "$TMP/out" && ok drift_noise_text || fail drift_noise_text "$(head -5 "$TMP/out")"
expect_status drift_validate_repeats_json 0 "$HP" validate --profiles "$TMP/rep.csv" --no-public --folds 3 --json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    n = r["noise_floor"]
    assert abs(n["abs_percent"] - (200 * 0.1 / 2.1 + 200 * 0.2 / 2.0) / 2) < 1e-6, n
    assert abs(n["rel_percent"]) < 1e-9 and n["pairs"] == 45 * 2, n
PY
then ok drift_noise_json; else fail drift_noise_json "$(head -c 600 "$TMP/out")"; fi

# fit keeps the reference speed; the relative times are fitted.
expect_status drift_fit_ref 0 "$HP" fit "$TMP/rep.csv" --no-public --out "$TMP/est.json"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
cpu = [x for x in d['devices'] if x['kind'] == 'cpu'][0]
assert abs(cpu['ref_time_s'] - 0.002) < 1e-12, cpu.get('ref_time_s')
" "$TMP/est.json" && ok drift_fit_ref_speed || fail drift_fit_ref_speed "$(head -c 600 "$TMP/est.json")"
expect_status drift_validate_absolute 0 "$HP" validate --profiles "$TMP/rep.csv" --no-public --folds 3 --absolute
