#!/usr/bin/env bash
# CLI checks for `hetpool devices`: the catalog listing, its JSON contract,
# name resolution, and one-line errors naming FILE:LINE on a bad catalog.
. "$(dirname "$0")/lib.sh"
CAT=$HP_ROOT/data/devices.csv

expect_status devices_list 0 "$HP" devices
missing=""
for n in cpu k80 p100 v100 t4 a10 a40 l4 l40s a100-40 a100-80 h100-sxm h100-pcie h200 rtx6000 rtxa6000; do
	grep -q "^$n " "$TMP/out" || missing="$missing $n"
done
[ -z "$missing" ] && ok devices_list_required_types || fail devices_list_required_types "missing:$missing"
grep -q '^cpu  *cpu  *~' "$TMP/out" && ok devices_list_cpu_detected || fail devices_list_cpu_detected "$(grep '^cpu' "$TMP/out")"

expect_status devices_json 0 "$HP" devices --json
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
devs = {x["name"]: x for x in d["devices"]}
assert len(devs) >= 16, len(devs)
keys = ("name", "kind", "vendor", "arch", "product", "fp32_tflops", "tf32_tflops",
        "fp16_tflops", "mem_gb", "mem_bw_gbs", "tdp_w", "idle_w", "idle_estimated",
        "devices_per_board", "aliases", "sources")
for x in devs.values():
    for k in keys:
        assert k in x, (x["name"], k)
    assert set(x["sources"]) == {"compute", "memory", "power", "idle"}
v = devs["v100"]
assert v["kind"] == "gpu" and v["fp32_tflops"] == 15.7 and v["mem_gb"] == 16
assert v["tf32_tflops"] is None and v["idle_estimated"] is True
assert devs["k80"]["devices_per_board"] == 2 and devs["k80"]["tdp_w"] == 150
c = devs["cpu"]
assert c["kind"] == "cpu" and c["mem_bw_gbs"] is None and c["host"]["logical_cpus"] >= 1
assert c["mem_gb"] > 0
PY
then ok devices_json_contract; else fail devices_json_contract "JSON keys or values wrong"; fi

expect_status devices_names 0 "$HP" devices --json a100 "Tesla V100-SXM2-16GB" H100
if python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [x["name"] for x in d["devices"]] == ["a100-80", "v100", "h100-sxm"], d["devices"]
PY
then ok devices_names_resolve; else fail devices_names_resolve "$(head -c 300 "$TMP/out")"; fi
expect_status devices_detail 0 "$HP" devices k80
grep -q 'idle:    estimate' "$TMP/out" && ok devices_detail_sources || fail devices_detail_sources "$(cat "$TMP/out")"

expect_status devices_help 0 "$HP" devices --help
grep -q 'HETPOOL_DATA_DIR' "$TMP/out" && ok devices_help_text || fail devices_help_text "no search order in help"

# The catalog is found by $HETPOOL_DATA_DIR and by --catalog.
mkdir -p "$TMP/data"
head -3 "$CAT" >"$TMP/data/devices.csv"
expect_status devices_data_dir 0 env HETPOOL_DATA_DIR="$TMP/data" "$HP" devices --json
python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))['devices']) == 2" "$TMP/out" \
	&& ok devices_data_dir_used || fail devices_data_dir_used "not the catalog in HETPOOL_DATA_DIR"
expect_status devices_catalog_option 0 "$HP" devices --catalog "$TMP/data/devices.csv"

# Bad input: one line on stderr naming FILE:LINE, exit status 2.
{ head -5 "$CAT"; echo 'x1,gpu,nvidia,volta,X,abc,,,,,,,1,,,,,'; } >"$TMP/bad.csv"
expect_status bad_catalog_number 2 "$HP" devices --catalog "$TMP/bad.csv"
expect_err bad_catalog_names_line "bad.csv:6:[0-9]+: device 'x1': fp32_tflops: 'abc' is not a number"
{ head -3 "$CAT"; echo 'x1,gpu,"unterminated'; } >"$TMP/quote.csv"
expect_status bad_catalog_quote 2 "$HP" devices --catalog "$TMP/quote.csv"
expect_err bad_catalog_quote_names_line "quote.csv:4:[0-9]+: "
{ head -3 "$CAT"; echo 'x1,gpu'; } >"$TMP/short.csv"
expect_status bad_catalog_fields 2 "$HP" devices --catalog "$TMP/short.csv"
expect_err bad_catalog_fields_says "short.csv:4:[0-9]+: 2 fields, the header has 18"
echo 'name,kind,speed' >"$TMP/col.csv"
expect_status bad_catalog_column 2 "$HP" devices --catalog "$TMP/col.csv"
expect_err bad_catalog_column_says "col.csv:1:11: unknown column 'speed'"
expect_status bad_catalog_missing 2 "$HP" devices --catalog "$TMP/nope.csv"
expect_err bad_catalog_missing_names_it "nope.csv"
expect_status bad_catalog_dir 2 "$HP" devices --catalog "$TMP"
expect_status bad_device_name 2 "$HP" devices tpu-v5
expect_err bad_device_name_says "'tpu-v5' is not in the catalog"
expect_status bad_devices_option 2 "$HP" devices --frobnicate
expect_status bad_no_catalog 2 env HETPOOL_DATA_DIR=/nonexistent "$HP" devices --catalog
