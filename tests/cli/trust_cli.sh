#!/usr/bin/env bash
# Trust checks (issue 10) for what the whole command does: output that
# cannot be written fails, names from files never reach the terminal raw,
# --version, and `profile` keeps every complete row, leaves nothing behind
# when it fails, and says what is wrong with --out and --max-seconds.
. "$(dirname "$0")/lib.sh"
SMALL=$HP_ROOT/tests/data/estimate/cpu-small.csv
R18=$HP_ROOT/data/models/resnet18.train.onnx
POOL=$HP_ROOT/data/pools/sample.json
cat >"$TMP/tiny.json" <<'J'
{"name":"tiny","input":[3,16,16],"classes":4,"layers":[{"type":"conv","filters":8,"kernel":3,"pad":1},{"type":"relu"},{"type":"fc","units":4}]}
J

expect_status version 0 "$HP" --version
grep -qE '^hetpool [0-9]+\.[0-9]+\.[0-9]+$' "$TMP/out" && ok version_line || fail version_line "$(cat "$TMP/out")"

# --- output that cannot be written (a full disk) fails, with one line -----
# expect_full NAME CMD...: stdout to /dev/full, exit 1, the reason on stderr.
expect_full() {
	local name=$1
	shift
	"$@" >/dev/full 2>"$TMP/err"
	local rc=$?
	if [ "$rc" -ne 1 ]; then
		fail "$name" "exit $rc with stdout on /dev/full, expected 1"
	elif ! grep -q 'cannot write the output: No space left on device' "$TMP/err"; then
		fail "$name" "stderr lacks the reason: $(cat "$TMP/err")"
	else
		ok "$name"
	fi
}
if [ -w /dev/full ]; then
	expect_full full_help "$HP" --help
	expect_full full_cmd_help "$HP" predict --help
	expect_full full_version "$HP" --version
	expect_full full_analyze_text "$HP" analyze "$R18" --batch 8
	expect_full full_analyze_json "$HP" analyze "$R18" --batch 8 --json
	expect_full full_devices "$HP" devices
	expect_full full_predict_json "$HP" predict "$R18" --device v100 --batch 32 --json
	expect_full full_predict_text "$HP" predict "$R18" --device v100 --batch 32
	expect_full full_recommend_json "$HP" recommend "$R18" --pool "$POOL" --samples 50000 --epochs 1 --batch 256 --deadline 1h --json
	expect_full full_recommend_explain "$HP" recommend "$R18" --pool "$POOL" --samples 50000 --epochs 1 --batch 256 --deadline 1h --explain
	expect_full full_fit_json "$HP" fit "$SMALL" --no-public --out "$TMP/e.json" --json
	expect_full full_validate "$HP" validate --profiles "$SMALL" --no-public --folds 2
	expect_full full_profile_list "$HP" profile --sweep default --list
else
	echo "skip full_*: no writable /dev/full here"
fi

# --- names from files are escaped in every message ------------------------
bad=$(printf 'no\nsuch\033[31m.json')
expect_status escaped_file_name 2 "$HP" analyze "$bad"
if grep -q $'\033' "$TMP/err"; then
	fail escaped_no_esc_byte "a raw ESC reached stderr"
elif ! grep -qF 'no\nsuch\x1b[31m.json' "$TMP/err"; then
	fail escaped_visible "the name is not shown escaped: $(cat "$TMP/err")"
else
	ok escaped_visible
fi
printf '{"name":"a\\u001b[2Jb\\nc","input":[3,8,8],"classes":2,"layers":[{"type":"conv","filters":2,"kernel":3,"pad":1},{"type":"fc","units":2}]}' >"$TMP/esc.json"
# ResNet-18 with its first conv's node and tensor names holding an ESC and a
# newline (renamed in place, same length: the protobuf stays valid).
python3 - "$R18" "$TMP/esc.onnx" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
old = b"/conv1/Conv"
new = b"/c\x1b[1m\nv/Co"
assert len(new) == len(old) and old in d
open(sys.argv[2], "wb").write(d.replace(old, new))
PY
for args in "analyze $TMP/esc.json" "analyze $TMP/esc.json --json" \
	"predict $TMP/esc.json --device cpu --batch 4" \
	"profile --spec $TMP/esc.json --batch 2 --list" \
	"analyze $TMP/esc.onnx" "analyze $TMP/esc.onnx --json" \
	"predict $TMP/esc.onnx --device cpu --batch 4" \
	"recommend $TMP/esc.onnx --pool $POOL --samples 50000 --epochs 1 --batch 256 --deadline 1h --explain"; do
	# shellcheck disable=SC2086
	"$HP" $args >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "escaped_names ($args)" "exit $rc: $(cat "$TMP/err")"
	elif LC_ALL=C grep -q $'\033' "$TMP/out" "$TMP/err"; then
		fail "escaped_names ($args)" "a raw ESC reached the terminal"
	else
		ok "escaped_names ($args)"
	fi
done

# --- profile: complete rows are kept, failures leave nothing ---------------
P=(profile --spec "$TMP/tiny.json" --max-seconds 0.2 --threads 1)
expect_status profile_first 0 "$HP" "${P[@]}" --batch 2 --out "$TMP/p.csv"
rows() { python3 -c "import csv,sys; print(len(list(csv.DictReader(open(sys.argv[1])))))" "$1"; }
# The last row complete but without its newline: kept, the newline added.
head -c -1 "$TMP/p.csv" >"$TMP/nonl.csv"
expect_status profile_resume_no_newline 0 "$HP" "${P[@]}" --batch 4 --out "$TMP/nonl.csv" --resume
n=$(rows "$TMP/nonl.csv")
[ "$n" = 2 ] && [ "$(tail -c 1 "$TMP/nonl.csv" | od -An -c | tr -d ' ')" = '\n' ] &&
	! grep -q 'torn' "$TMP/err" && ok profile_complete_row_kept ||
	fail profile_complete_row_kept "$n rows; stderr: $(cat "$TMP/err")"
# Resuming again measures nothing: the row without its newline counted as done.
head -c -1 "$TMP/p.csv" >"$TMP/nonl2.csv"
expect_status profile_resume_done 0 "$HP" "${P[@]}" --batch 2 --out "$TMP/nonl2.csv" --resume
grep -q 'profiled 0 configurations .*(1 already there' "$TMP/out" && [ "$(rows "$TMP/nonl2.csv")" = 1 ] &&
	ok profile_complete_row_is_done || fail profile_complete_row_is_done "$(cat "$TMP/out")"
# Cut inside the row (an open quote): torn, cut, and measured again.
head -c -20 "$TMP/p.csv" >"$TMP/torn.csv"
expect_status profile_resume_torn 0 "$HP" "${P[@]}" --batch 2 --out "$TMP/torn.csv" --resume
grep -q 'cut a torn last row' "$TMP/err" && [ "$(rows "$TMP/torn.csv")" = 1 ] &&
	ok profile_torn_row_cut || fail profile_torn_row_cut "$(cat "$TMP/err")"

# A profile that fails leaves no file, and the retry is not refused.
expect_status profile_bad_device 1 "$HP" "${P[@]}" --batch 2 --out "$TMP/fail.csv" --device cuda:99
[ ! -e "$TMP/fail.csv" ] && ok profile_failure_leaves_nothing || fail profile_failure_leaves_nothing "$(head -c 200 "$TMP/fail.csv")"
cat >"$TMP/huge.json" <<'J'
{"name":"huge","input":[3,4096,4096],"classes":4,"layers":[{"type":"conv","filters":4096,"kernel":3,"pad":1},{"type":"fc","units":4}]}
J
"$HP" profile --spec "$TMP/huge.json" --batch 4096 --out "$TMP/fail2.csv" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -ne 0 ] && [ ! -e "$TMP/fail2.csv" ] && ok profile_refused_plan_leaves_nothing ||
	fail profile_refused_plan_leaves_nothing "exit $rc; $(cat "$TMP/err")"
expect_status profile_retry_after_failure 0 "$HP" "${P[@]}" --batch 2 --out "$TMP/fail.csv"

# --out and --max-seconds say what is wrong.
expect_status profile_out_dir 2 "$HP" "${P[@]}" --batch 2 --out "$TMP"
expect_err profile_out_dir_says "is a directory: give a file name"
expect_status profile_out_nodir 2 "$HP" "${P[@]}" --batch 2 --out "$TMP/nope/x.csv"
expect_err profile_out_nodir_says "cannot create a file in '.*nope': No such file or directory"
expect_status profile_max_seconds_zero 2 "$HP" "${P[@]}" --batch 2 --max-seconds 0 --out "$TMP/z.csv"
expect_err profile_max_seconds_says "more than 0 and at most 3600"
