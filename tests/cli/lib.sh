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
