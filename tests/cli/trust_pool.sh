#!/usr/bin/env bash
# CLI checks that hostile input is refused or escaped: a catalog whose
# memory is 0 or empty or whose idle power is above board power, a pool
# with a bandwidth out of range or an unknown transport, node names
# holding a line break or an escape sequence, a spec and an ONNX file
# whose names hold escape bytes, a file name with both, and batch bounds
# that hold no power of two. Each refusal is exit status 2 with one line
# on stderr naming the problem, and no raw escape byte or stray line break
# reaches stdout or stderr.
. "$(dirname "$0")/lib.sh"
CAT=$HP_ROOT/data/devices.csv
R18=$HP_ROOT/data/models/resnet18.train.onnx
ESC=$(printf '\033')

# no_raw NAME: the last command's stdout and stderr hold no escape byte.
no_raw() {
	if grep -q "$ESC" "$TMP/out" "$TMP/err"; then
		fail "$1" "a raw escape byte reached the terminal: $(cat -v "$TMP/out" "$TMP/err" | head -c 300)"
	else
		ok "$1"
	fi
}

# A one-node pool of V100s; $1 the node's name (JSON text), $2 net_bw_gbps.
pool() {
	printf '{"nodes": [{"name": "%s", "devices": [{"type": "v100", "count": 8}], "cpu_cores": 40, "memory_gb": 512, "intra_bw_gbps": 1200, "net_bw_gbps": %s, "net_latency_us": 3, "base_power_w": 1000}]}\n' "$1" "$2"
}
pool n3 100 >"$TMP/ok.json"
JOB=(--samples 12500 --epochs 1 --deadline 1d)

# --- The catalog: physical ranges on load -------------------------------
v100='^v100,gpu,nvidia,volta,Tesla V100 SXM2 16GB,15.7,,125,16,900,300,40,'
sed "s/$v100/v100,gpu,nvidia,volta,Tesla V100 SXM2 16GB,15.7,,125,0,900,300,40,/" "$CAT" >"$TMP/mem0.csv"
sed "s/$v100/v100,gpu,nvidia,volta,Tesla V100 SXM2 16GB,15.7,,125,,900,300,40,/" "$CAT" >"$TMP/memempty.csv"
sed "s/$v100/v100,gpu,nvidia,volta,Tesla V100 SXM2 16GB,15.7,,125,16,900,300,400,/" "$CAT" >"$TMP/idle.csv"
sed "s/$v100/v100,gpu,nvidia,volta,\"Tesla V100$ESC[31m\",15.7,,125,16,900,300,40,/" "$CAT" >"$TMP/product.csv"
for f in mem0 memempty idle product; do
	cmp -s "$CAT" "$TMP/$f.csv" && fail "trust_catalog_${f}_made" "sed changed nothing"
done
expect_status trust_catalog_mem0 2 "$HP" devices --catalog "$TMP/mem0.csv"
expect_err trust_catalog_mem0_says "mem0.csv:6:[0-9]+: device 'v100': mem_gb = 0 is out of range \[0.001, 16384\]"
# The bug: with memory 0 the recommender gave 12,500 samples to one V100.
expect_status trust_catalog_mem0_recommend 2 "$HP" recommend "$R18" --pool "$TMP/ok.json" "${JOB[@]}" --batch 12500 --catalog "$TMP/mem0.csv"
expect_err trust_catalog_mem0_recommend_says "device 'v100': mem_gb = 0"
expect_status trust_catalog_mem_empty 2 "$HP" devices --catalog "$TMP/memempty.csv"
expect_err trust_catalog_mem_empty_says "memempty.csv:6:[0-9]+: device 'v100': mem_gb is empty; a gpu needs it"
expect_status trust_catalog_idle 2 "$HP" devices --catalog "$TMP/idle.csv"
expect_err trust_catalog_idle_says "idle.csv:6:[0-9]+: device 'v100': idle_w = 400 is more than tdp_w = 300"
expect_status trust_catalog_product_escape 2 "$HP" devices --catalog "$TMP/product.csv"
expect_err trust_catalog_product_escape_says "device 'v100': product holds a control character"
no_raw trust_catalog_product_escape_no_raw
expect_status trust_catalog_shipped 0 "$HP" devices

# A source is prose: a quoted line break loads, and is printed escaped.
awk -F, 'NR == 1 || $1 == "t4"' "$CAT" | sed 's/^t4,\(.*\),"estimate: \(.*\)"$/t4,\1,"estimate:\nline two"/' >"$TMP/src.csv"
expect_status trust_catalog_source_newline 0 "$HP" devices --catalog "$TMP/src.csv" t4
grep -qF 'idle:    estimate:\nline two' "$TMP/out" && ! grep -q '^line two' "$TMP/out" \
	&& ok trust_catalog_source_escaped || fail trust_catalog_source_escaped "$(cat -A "$TMP/out" | tail -3)"

# --- The pool: ranges name the node and the key -------------------------
pool n3 -1 >"$TMP/bwneg.json"
pool n3 1e7 >"$TMP/bwhigh.json"
expect_status trust_pool_bw_negative 2 "$HP" recommend "$R18" --pool "$TMP/bwneg.json" "${JOB[@]}" --batch 256
expect_err trust_pool_bw_negative_says "pool '[^']*bwneg.json': node 'n3': 'net_bw_gbps' = -1 is out of range \[0.001, 10000\]"
expect_status trust_pool_bw_high 2 "$HP" recommend "$R18" --pool "$TMP/bwhigh.json" "${JOB[@]}" --batch 256
expect_err trust_pool_bw_high_says "node 'n3': 'net_bw_gbps' = 1e\+07 is out of range \[0.001, 10000\]"
# A transport outside the four names is refused by the key, its value
# shown escaped, never raw.
pool n3 '100, "net_transport": "\u001b[31mib"' >"$TMP/transport.json"
expect_status trust_pool_transport 2 "$HP" recommend "$R18" --pool "$TMP/transport.json" "${JOB[@]}" --batch 256
expect_err trust_pool_transport_says "pool '[^']*transport.json': node 'n3': 'net_transport' = '\\\\x1b\\[31mib' is not \"auto\", \"tcp\", \"socket\" or \"rdma\""
no_raw trust_pool_transport_no_raw

# Node names are identifiers: a line break or an escape sequence is refused,
# and the message does not echo it.
pool 'n\n3' 100 >"$TMP/name_nl.json"
pool '\u001b[31mred' 100 >"$TMP/name_esc.json"
printf '{"nodes": [{"name": "n\0333", "devices": []}]}\n' >"$TMP/name_raw.json"
for f in name_nl name_esc name_raw; do
	expect_status "trust_pool_${f}" 2 "$HP" recommend "$R18" --pool "$TMP/$f.json" "${JOB[@]}" --batch 256
	[ "$f" = name_raw ] && expect_err "trust_pool_${f}_says" "invalid JSON" \
		|| expect_err "trust_pool_${f}_says" "pool '[^']*$f.json': nodes\[0\]: 'name' holds a control character"
	no_raw "trust_pool_${f}_no_raw"
done

# --- Batch bounds with no power of two ----------------------------------
expect_status trust_batch_no_pow2 2 "$HP" recommend "$R18" --pool "$TMP/ok.json" "${JOB[@]}" --batch-min 129 --batch-max 255
expect_err trust_batch_no_pow2_says "--batch-min 129 --batch-max 255 hold no power of two.*nearest are 128 and 256"
expect_status trust_batch_over_samples 2 "$HP" recommend "$R18" --pool "$TMP/ok.json" --samples 100 --epochs 1 --deadline 1d --batch 256
expect_err trust_batch_over_samples_says "--batch 256 is more than --samples 100"
expect_status trust_json_and_explain 2 "$HP" recommend "$R18" --pool "$TMP/ok.json" "${JOB[@]}" --batch 256 --json --explain
expect_status trust_batch_bounds_said 0 "$HP" recommend "$R18" --pool "$TMP/ok.json" "${JOB[@]}" --batch-min 100 --batch-max 600
grep -q 'global batches searched 128, 256, 512 (the powers of two in \[100, 600\]); kept ' "$TMP/out" \
	&& ok trust_batch_bounds_said_text || fail trust_batch_bounds_said_text "$(head -3 "$TMP/out")"
expect_status trust_batch_bounds_json 0 "$HP" recommend "$R18" --pool "$TMP/ok.json" "${JOB[@]}" --batch-min 100 --batch-max 600 --json
python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
assert d['batches_searched'] == [128, 256, 512], d['batches_searched']
assert d['choice']['global_batch'] in d['batches_searched']
" "$TMP/out" && ok trust_batch_bounds_json_says || fail trust_batch_bounds_json_says "$(head -c 300 "$TMP/out")"

# --- Names inside models, and file names --------------------------------
# A spec whose name holds an escape sequence and a line break: analyzed,
# printed escaped.
printf '{"name": "m\\u001b[31mred\\nx", "input": [3, 8, 8], "classes": 2, "layers": [{"type": "conv", "filters": 4, "kernel": 3, "stride": 1, "pad": 1}, {"type": "fc", "units": 2}]}\n' >"$TMP/spec.json"
expect_status trust_spec_name 0 "$HP" analyze "$TMP/spec.json"
no_raw trust_spec_name_no_raw
grep -qF 'model        m\x1b[31mred\nx (' "$TMP/out" && ok trust_spec_name_escaped || fail trust_spec_name_escaped "$(head -2 "$TMP/out" | cat -A)"
# A spec layer whose type holds an escape byte: refused, one line, escaped.
printf '{"input": [3, 8, 8], "layers": [{"type": "conv\\u001b[31m", "filters": 4}]}\n' >"$TMP/badlayer.json"
expect_status trust_spec_layer 2 "$HP" analyze "$TMP/badlayer.json"
expect_err trust_spec_layer_says 'badlayer.json.*conv\\x1b\[31m'
no_raw trust_spec_layer_no_raw
# An ONNX file whose node (layer) names hold an escape sequence and a line
# break (same length as the name they replace, so the file stays valid).
python3 - "$R18" "$TMP/esc.onnx" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
old, new = b"/conv1/Conv", b"\x1b[31m\n/Conv"
assert len(old) == len(new) and old in b
open(sys.argv[2], 'wb').write(b.replace(old, new))
PY
expect_status trust_onnx_layer_name 0 "$HP" analyze "$TMP/esc.onnx"
no_raw trust_onnx_layer_name_no_raw
grep -qF '\x1b[31m\n/Conv' "$TMP/out" && ! grep -q '^/Conv' "$TMP/out" \
	&& ok trust_onnx_layer_name_escaped || fail trust_onnx_layer_name_escaped "$(grep -a Conv "$TMP/out" | head -3 | cat -A)"
# A file name with a line break and an escape sequence.
weird="$TMP/a
b$ESC[31m.json"
cp "$TMP/spec.json" "$weird"
expect_status trust_file_name_analyze 0 "$HP" analyze "$weird" --summary
no_raw trust_file_name_analyze_no_raw
grep -qF '(' "$TMP/out" && grep -qF 'a\nb\x1b[31m.json)' "$TMP/out" \
	&& ok trust_file_name_analyze_escaped || fail trust_file_name_analyze_escaped "$(head -2 "$TMP/out" | cat -A)"
expect_status trust_file_name_predict 0 "$HP" predict "$weird" --device v100 --batch 2
no_raw trust_file_name_predict_no_raw
grep -qF 'model        ' "$TMP/out" && grep -qF 'a\nb\x1b[31m.json' "$TMP/out" \
	&& ok trust_file_name_predict_escaped || fail trust_file_name_predict_escaped "$(head -2 "$TMP/out" | cat -A)"
expect_status trust_file_name_missing 2 "$HP" analyze "$weird.nope"
no_raw trust_file_name_missing_no_raw
cp "$TMP/bwneg.json" "$weird"
expect_status trust_file_name_pool 2 "$HP" recommend "$R18" --pool "$weird" "${JOB[@]}" --batch 256
expect_err trust_file_name_pool_says "pool '[^']*a\\\\nb\\\\x1b\[31m.json': node 'n3': 'net_bw_gbps'"
no_raw trust_file_name_pool_no_raw
cp "$TMP/mem0.csv" "$weird"
expect_status trust_file_name_catalog 2 "$HP" devices --catalog "$weird"
no_raw trust_file_name_catalog_no_raw
