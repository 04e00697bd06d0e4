#!/usr/bin/env bash
# CLI checks for `hetpool analyze`: output contracts, exit statuses and
# one-line errors on bad input.
. "$(dirname "$0")/lib.sh"
M=$HP_ROOT/data/models/resnet18.train.onnx

expect_status analyze_table 0 "$HP" analyze "$M" --batch 2
grep -q '^params       11689512' "$TMP/out" && ok analyze_table_params || fail analyze_table_params "$(head -5 "$TMP/out")"

expect_status analyze_json 0 "$HP" analyze "$M" --json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["params"] == 11689512, d["params"]
assert d["macs"] == 1814073344, d["macs"]
for k in ("forward", "backward"):
    assert d["flops"][k] > 0
for k in ("activations_bytes", "weights_bytes", "gradients_bytes"):
    assert d["memory"][k] > 0
assert d["layers"]["conv"] == 20 and d["layers"]["norm"] == 20
assert len(d["per_layer"]) > 40 and d["skipped_ops"] == []
assert sum(r["macs"] for r in d["per_layer"]) == d["macs"]
PY
then ok analyze_json_contract; else fail analyze_json_contract "JSON keys or values wrong"; fi

expect_status analyze_help 0 "$HP" analyze --help
grep -q -- '--input-shape' "$TMP/out" && ok analyze_help_text || fail analyze_help_text "no --input-shape in help"

expect_status analyze_299 0 "$HP" analyze "$M" --input-shape 3x299x299 --json --summary

# Bad input: one line on stderr that names the file, exit status 2.
expect_status bad_missing_file 2 "$HP" analyze "$TMP/nope.onnx"
expect_err bad_missing_file_names_it "nope.onnx"
head -c 1000 "$M" >"$TMP/trunc.onnx"
expect_status bad_truncated 2 "$HP" analyze "$TMP/trunc.onnx"
expect_err bad_truncated_names_it "trunc.onnx"
head -c 4096 /dev/urandom >"$TMP/garbage.onnx"
expect_status bad_garbage 2 "$HP" analyze "$TMP/garbage.onnx"
echo '{"input":[3,8,8],"layers":[{"type":"pool","kernel":4},{"type":"pool","kernel":4}]}' >"$TMP/shrink.json"
expect_status bad_spec_shrinks 2 "$HP" analyze "$TMP/shrink.json"
expect_err bad_spec_shrinks_says "shrink.json.*layer 1 \\(pool\\)"
expect_status bad_batch 2 "$HP" analyze "$M" --batch 0
expect_status bad_batch_text 2 "$HP" analyze "$M" --batch ten
expect_status bad_shape 2 "$HP" analyze "$M" --input-shape 3x-1x4
expect_status bad_shape_rank 2 "$HP" analyze "$M" --input-shape 224x224
expect_status bad_option 2 "$HP" analyze "$M" --frobnicate
expect_status bad_command 2 "$HP" frobnicate
mkdir -p "$TMP/dir.onnx"
expect_status bad_directory 2 "$HP" analyze "$TMP/dir.onnx"
truncate -s 600M "$TMP/huge.onnx" # sparse: costs no disk
expect_status bad_oversized 2 "$HP" analyze "$TMP/huge.onnx"
expect_err bad_oversized_says "more than the limit"
rm -f "$TMP/huge.onnx"
