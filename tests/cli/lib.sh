# lib.sh - helpers for the CLI tests: each check prints "ok NAME" or
# "FAIL NAME: why".  Sourced by tests/cli/*.sh.
HP=${HP_BIN:?}/hetpool
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# host files (measured peaks, calibration) of the user's state stay out
export HETPOOL_STATE_DIR=$TMP/state

ok() { echo "ok   $1"; }
fail() { echo "FAIL $1: $2"; }

# expect_status NAME STATUS CMD...: the command exits with STATUS and, when
# it fails, prints exactly one line on stderr.
expect_status() {
	local name=$1 want=$2
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$name" "exit $rc, expected $want; stderr: $(head -c 300 "$TMP/err")"
		return 1
	fi
	if [ "$want" -ne 0 ] && [ "$(grep -vEc '^hetpool(-train)?: warning' "$TMP/err")" -ne 1 ]; then
		fail "$name" "expected one error line, got: $(cat "$TMP/err")"
		return 1
	fi
	ok "$name"
}

# expect_err NAME PATTERN: the last failing command's stderr matches.
expect_err() {
	if grep -qE -- "$2" "$TMP/err"; then ok "$1"; else fail "$1" "stderr '$(cat "$TMP/err")' lacks /$2/"; fi
}

# cpu_power_catalog DST TDP_W IDLE_W: the shipped device catalog with the
# CPU row's board and idle power set (the shipped row has none: a host's
# power is measured, or not known)
cpu_power_catalog() {
	python3 - "${HP_ROOT:?}/data/devices.csv" "$@" <<'PY'
import csv, sys
src, dst, tdp, idle = sys.argv[1:5]
rows = list(csv.reader(open(src)))
h = rows[0]
for r in rows[1:]:
    if r[0] == "cpu":
        r[h.index("tdp_w")], r[h.index("idle_w")] = tdp, idle
csv.writer(open(dst, "w", newline="")).writerows(rows)
PY
}
