#!/usr/bin/env bash
# CLI checks that hostile model files are refused, not analysed: each case
# of tests/cli/bad_models.py (an integer division by zero in a shape chain,
# Splits ONNX refuses, an unknown auto_pad, an attribute given twice, loss
# labels for another batch, a graph with no nodes, a spec with a byte
# order mark or a top-level array) through analyze, predict and recommend:
# exit status 2 and one stderr line naming the file and the fault, with
# control characters from the file escaped.  The harmless cases (a byte
# order mark, an uneven num_outputs Split) are analysed.
. "$(dirname "$0")/lib.sh"
POOL=$HP_ROOT/data/pools/sample.json
REC=(--pool "$POOL" --samples 1000 --epochs 1 --batch 8 --deadline 1h)

if ! python3 "$HP_ROOT/tests/cli/bad_models.py" "$TMP/m"; then
	fail trust_generate "tests/cli/bad_models.py failed"
	exit 1
fi

# run_cmd CMD FILE: one of the three commands on FILE.
run_cmd() {
	case $1 in
	analyze) "$HP" analyze "$2" ;;
	predict) "$HP" predict "$2" --device cpu --batch 8 ;;
	recommend) "$HP" recommend "$2" "${REC[@]}" ;;
	esac
}

while IFS=$'\t' read -r name want; do
	f=$TMP/m/$name
	base=${name%.*}
	if [ "$want" = ok ]; then
		expect_status "trust_${base}_analyze" 0 run_cmd analyze "$f"
		continue
	fi
	for cmd in analyze predict recommend; do
		t="trust_${base}_$cmd"
		expect_status "$t" 2 run_cmd "$cmd" "$f" || continue
		if ! grep -qF -- "'$f'" "$TMP/err"; then
			fail "${t}_names_file" "$(cat "$TMP/err")"
		elif ! grep -qF -- "$want" "$TMP/err"; then
			fail "${t}_says" "stderr '$(cat "$TMP/err")' lacks '$want'"
		elif LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$TMP/err"; then
			fail "${t}_escaped" "raw control bytes on stderr"
		else
			ok "${t}_says"
		fi
	done
done <"$TMP/m/CASES"

# A byte order mark changes nothing: the same analysis as without it.
tail -c +4 "$TMP/m/bom.json" >"$TMP/plain.json"
expect_status trust_bom_json 0 "$HP" analyze "$TMP/m/bom.json" --json
sed 's/"source": .*//' "$TMP/out" >"$TMP/bom.out"
expect_status trust_plain_json 0 "$HP" analyze "$TMP/plain.json" --json
sed 's/"source": .*//' "$TMP/out" >"$TMP/plain.out"
cmp -s "$TMP/bom.out" "$TMP/plain.out" && ok trust_bom_same_analysis ||
	fail trust_bom_same_analysis "$(diff "$TMP/bom.out" "$TMP/plain.out" | head -5)"
expect_status trust_bom_predict 0 run_cmd predict "$TMP/m/bom.json"
expect_status trust_bom_recommend 0 run_cmd recommend "$TMP/m/bom.json"
