#!/usr/bin/env bash
# CLI checks for `hetpool profile`: one configuration, a small sweep,
# resume after an interrupt, and bad input.
. "$(dirname "$0")/lib.sh"
cat >"$TMP/tiny.json" <<'J'
{"name":"tiny","input":[3,16,16],"classes":4,"layers":[{"type":"conv","filters":8,"kernel":3,"pad":1},{"type":"bn"},{"type":"relu"},{"type":"pool","kernel":2},{"type":"fc","units":4}]}
J
cat >"$TMP/sweep.json" <<'J'
{"conv_layers":[1,2],"filters":[4,8],"fc_layers":[1,2],"fc_width":[16],"input_size":[8,16],"batch":[2,4],"classes":4}
J
out=$TMP/one.csv
expect_status profile_one 0 "$HP" profile --spec "$TMP/tiny.json" --batch 4 --out "$out" --max-seconds 0.3 --threads 1 --json
if python3 - "$TMP/out" "$out" <<'PY'
import csv, json, sys
j = json.load(open(sys.argv[1]))
assert j["measured"] == 1 and j["result"]["step_time_s"] > 0
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 1, rows
r = rows[0]
assert r["config_id"].startswith("spec:tiny-") and r["config_id"].endswith(":b4"), r["config_id"]
assert r["batch"] == "4"
assert float(r["step_time_s"]) > 0 and int(r["steps"]) >= 10
assert r["energy_per_step_j"] == "" and r["energy_source"] == "not measured"
assert int(r["params"]) == 3*8*9+8 + 16 + 8*8*8*4+4, r["params"]
assert r["device"] == "cpu" and "oneDNN" in r["backend"]
assert json.loads(r["spec_json"])["name"] == "tiny"
PY
then ok profile_one_row; else fail profile_one_row "dataset row wrong"; fi

expect_status profile_refuses_overwrite 2 "$HP" profile --spec "$TMP/tiny.json" --batch 4 --out "$out"
expect_err profile_refuses_overwrite_says "--resume"
expect_status profile_resume_nothing_to_do 0 "$HP" profile --spec "$TMP/tiny.json" --batch 4 --out "$out" --resume
[ "$(wc -l <"$out")" -eq 2 ] && ok profile_resume_no_duplicate || fail profile_resume_no_duplicate "$(wc -l <"$out") lines"

# Interrupt a sweep, then resume it: the file stays valid, nothing repeats.
sw=$TMP/sweep.csv
"$HP" profile --sweep "$TMP/sweep.json" --out "$sw" --max-seconds 0.05 --threads 1 >/dev/null 2>"$TMP/err" &
pid=$!
for _ in $(seq 1 100); do [ -f "$sw" ] && [ "$(wc -l <"$sw")" -ge 4 ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && ok profile_interrupt_status || fail profile_interrupt_status "exit $rc: $(cat "$TMP/err")"
grep -q "resume" "$TMP/err" && ok profile_interrupt_says_resume || fail profile_interrupt_says_resume "$(cat "$TMP/err")"
n1=$(($(wc -l <"$sw") - 1))
printf 'cnn-torn,c1-f1,1,4' >>"$sw" # a kill mid-write leaves a torn line
expect_status profile_resume 0 "$HP" profile --sweep "$TMP/sweep.json" --out "$sw" --resume --max-seconds 0.05 --threads 1
if python3 - "$sw" "$n1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ids = [r["config_id"] for r in rows]
assert len(ids) == 32, len(ids)
assert len(set(ids)) == 32, "duplicates"
assert int(sys.argv[2]) < 32
PY
then ok profile_resume_completes_sweep; else fail profile_resume_completes_sweep "rows wrong after resume (had $n1)"; fi
expect_err profile_resume_cut_torn "torn"

# The yardstick: every row carries the reference step's median time.
if python3 - "$out" <<'PY'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
assert float(r["ref_time_s"]) > 0 and int(r["ref_steps"]) >= 7, (r["ref_time_s"], r["ref_steps"])
assert float(r["ref_time_cv"]) >= 0
PY
then ok profile_ref_time; else fail profile_ref_time "no yardstick in the row"; fi

# --repeat: each configuration N times, in rounds; --resume completes them.
rep=$TMP/repeat.csv
echo '{"conv_layers":[1],"filters":[4,8],"fc_layers":[1],"input_size":[8],"batch":[2],"classes":4}' >"$TMP/sw2.json"
expect_status profile_repeat_limit 0 "$HP" profile --sweep "$TMP/sw2.json" --out "$rep" --repeat 3 --limit 3 --max-seconds 0.05 --threads 1
expect_status profile_repeat_resume 0 "$HP" profile --sweep "$TMP/sw2.json" --out "$rep" --repeat 3 --resume --max-seconds 0.05 --threads 1
if python3 - "$rep" <<'PY'
import csv, sys
ids = [r["config_id"] for r in csv.DictReader(open(sys.argv[1]))]
assert len(ids) == 6 and len(set(ids)) == 2, ids
assert ids[0] != ids[1] and ids[:2] == ids[2:4], ids  # rounds, not runs
PY
then ok profile_repeat_rows; else fail profile_repeat_rows "$(cut -d, -f1 "$rep" | tr '\n' ' ')"; fi
expect_status profile_repeat_bad 2 "$HP" profile --sweep "$TMP/sw2.json" --out "$TMP/r0.csv" --repeat 0

# Where the step went: the per-class times are there and add up to about
# the step (the rest is the per-step overhead).
if python3 - "$out" <<'PY'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
parts = [float(r[k]) for k in ("time_conv_s", "time_fc_s", "time_other_s", "time_loss_s")]
assert all(p >= 0 for p in parts) and parts[0] > 0 and parts[1] > 0, parts
s = sum(parts) / float(r["step_time_s"])
assert 0.5 < s < 1.3, s
assert float(r["cpu_pressure"]) >= 0 and int(r["attempts"]) >= 1
PY
then ok profile_time_split; else fail profile_time_split "per-class times wrong"; fi

# A busy host: as many CPU hogs as cores, in this session, while a
# configuration is measured on every core.  Its threads wait for a CPU
# about half the time: the profiler measures again, then keeps the row
# with its cpu_pressure and a warning, and fit leaves such rows out.
ncpu=$(nproc)
hogs=""
for _ in $(seq 1 "$ncpu"); do (while :; do :; done) & hogs="$hogs $!"; done
"$HP" profile --spec "$TMP/tiny.json" --batch 4 --out "$TMP/busy.csv" --max-seconds 0.3 --threads "$ncpu" --retries 1 >"$TMP/out" 2>"$TMP/err"
rc=$?
kill $hogs 2>/dev/null
wait $hogs 2>/dev/null
[ $rc -eq 0 ] && ok profile_busy_status || fail profile_busy_status "exit $rc: $(cat "$TMP/err")"
grep -q "warning: .*busy" "$TMP/err" && ok profile_busy_warns || fail profile_busy_warns "$(cat "$TMP/err")"
if python3 - "$TMP/busy.csv" <<'PY'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
assert float(r["cpu_pressure"]) > 0.05 and r["attempts"] == "2", (r["cpu_pressure"], r["attempts"])
PY
then ok profile_busy_recorded; else fail profile_busy_recorded "$(cut -d, -f28-32 "$TMP/busy.csv")"; fi

# Bad input.
expect_status bad_profile_pressure 2 "$HP" profile --spec "$TMP/tiny.json" --batch 2 --out "$TMP/x.csv" --max-pressure 2
expect_status bad_profile_retries 2 "$HP" profile --spec "$TMP/tiny.json" --batch 2 --out "$TMP/x.csv" --retries -1
expect_status bad_profile_no_batch 2 "$HP" profile --spec "$TMP/tiny.json" --out "$TMP/x.csv"
expect_status bad_profile_device 2 "$HP" profile --spec "$TMP/tiny.json" --batch 2 --device tpu --out "$TMP/x.csv"
expect_status bad_profile_nogpu 1 "$HP" profile --spec "$TMP/tiny.json" --batch 2 --device cuda:1023 --out "$TMP/g.csv"
expect_err bad_profile_nogpu_says "cuda"
echo '{"name":"big","input":[3,4096,4096],"layers":[{"type":"conv","filters":4096,"kernel":3,"pad":1}]}' >"$TMP/big.json"
expect_status bad_profile_too_big 2 "$HP" profile --spec "$TMP/big.json" --batch 4096 --out "$TMP/big.csv"
echo '{"filterz":[1]}' >"$TMP/badsweep.json"
expect_status bad_sweep_key 2 "$HP" profile --sweep "$TMP/badsweep.json" --out "$TMP/y.csv"
# Grouped, separable and residual nets in a list of sweeps (a union):
# the nets the list names, each once, measured; a bad part named.
cat >"$TMP/union.json" <<'J'
[{"conv_layers": [2], "filters": [8], "fc_layers": [1], "input_size": [8],
  "batch": [2], "groups": [1, 2], "separable": [false, true]},
 {"conv_layers": [2], "filters": [8], "fc_layers": [1], "input_size": [8],
  "batch": [2], "groups": [2], "residual": [false, true]}]
J
expect_status profile_union 0 "$HP" profile --sweep "$TMP/union.json" --out "$TMP/union.csv" --max-seconds 0.05 --threads 1
python3 - "$TMP/union.csv" <<'PY' && ok profile_union_rows || fail profile_union_rows "$(cut -d, -f1 "$TMP/union.csv" | tr '\n' ' ')"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ids = sorted(r["config_id"] for r in rows)
want = sorted("cnn-c2-k8-f1-w128-s8%s-b2" % x
              for x in ("", "-g2", "-sep", "-g2-sep", "-g2-res"))
assert ids == want, ids
for r in rows:
    layers = json.loads(r["spec_json"])["layers"]
    groups = [L.get("groups", 1) for L in layers if L["type"] == "conv"]
    cid = r["config_id"]
    # the first conv reads the image: dense; a separable one's depthwise
    # conv has a group a channel, its pointwise one the sweep's groups
    assert groups[0] == 1, (cid, groups)
    if "-sep" in cid:
        assert 8 in groups and groups[-1] == (2 if "-g2" in cid else 1), (cid, groups)
    if "-res" in cid:
        assert sum(L["type"] == "add" for L in layers) == 2, cid
    assert float(r["step_time_s"]) > 0, cid
PY
echo '[{"conv_layers": [1]}, {"groups": [3], "filters": [8]}]' >"$TMP/badunion.json"
expect_status bad_sweep_union_part 2 "$HP" profile --sweep "$TMP/badunion.json" --out "$TMP/y.csv"
expect_err bad_sweep_union_part_named "sweep \[1\].*groups 3 do not divide filters 8"
echo 'config_id,x' >"$TMP/notds.csv"
expect_status bad_resume_not_dataset 2 "$HP" profile --spec "$TMP/tiny.json" --batch 2 --out "$TMP/notds.csv" --resume

# A spec given as the model takes --input-shape, as analyze and predict do
# (until 3 December the spec's own input was profiled)
expect_status profile_spec_input_shape 0 "$HP" profile "$TMP/tiny.json" --batch 2 --input-shape 3x24x24 \
	--out "$TMP/shape.csv" --max-seconds 0.3 --threads 1 --save-spec "$TMP/shape.json"
python3 -c "
import csv, json, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert r and r[-1]['input_size'] == '24', r[-1].get('input_size')
assert json.load(open(sys.argv[2]))['input'] == [3, 24, 24]
" "$TMP/shape.csv" "$TMP/shape.json" && ok profile_spec_input_shape_taken || fail profile_spec_input_shape_taken "$(head -c 300 "$TMP/shape.csv")"
