#!/usr/bin/env bash
# CLI checks for `hetpool predict --nodes M --link-gbps X`: the all-reduce
# across nodes grows as the link slows and the nodes multiply, one node is
# the plain prediction, a node count that does not divide the devices and
# a link of 0 are refused with one line naming them.
. "$(dirname "$0")/lib.sh"
R18=${HP_ROOT:-.}/data/models/resnet18.train.onnx
P=("$HP" predict "$R18" --device t4 --batch 1024 --devices 16 --json)

for v in "1 25" "4 50" "4 6" "8 6"; do
	set -- $v
	"${P[@]}" --nodes "$1" --link-gbps "$2" >"$TMP/p.$1.$2" 2>"$TMP/err" ||
		fail predict_nodes_run "--nodes $1 --link-gbps $2: $(cat "$TMP/err")"
done
"${P[@]}" >"$TMP/p.plain" 2>"$TMP/err" || fail predict_nodes_run "$(cat "$TMP/err")"
python3 - "$TMP" <<'PY' && ok predict_nodes_comm || fail predict_nodes_comm "see above"
import json, sys
d = sys.argv[1]
p = {k: json.load(open(f"{d}/p.{k}")) for k in ("1.25", "4.50", "4.6", "8.6", "plain")}
c = {k: v["comm_time_s"] for k, v in p.items()}
assert p["4.6"]["nodes"] == 4 and p["4.6"]["link_gbps"] == 6, p["4.6"]
assert p["1.25"]["nodes"] == 1 and p["1.25"]["link_gbps"] is None
assert p["1.25"]["step_time_s"] == p["plain"]["step_time_s"]
assert c["1.25"] < c["4.50"] < c["4.6"] <= c["8.6"], c
assert p["4.6"]["step_time_s"] > p["4.50"]["step_time_s"]
print("predict_nodes: exposed all-reduce %.4f s (1 node), %.4f (4 x 50 Gbit/s), "
      "%.4f (4 x 6), %.4f (8 x 6)" % (c["1.25"], c["4.50"], c["4.6"], c["8.6"]))
PY
expect_status predict_nodes_uneven 2 "$HP" predict "$R18" --device t4 --batch 1024 --devices 16 --nodes 3
expect_err predict_nodes_uneven_names "--nodes 3"
expect_status predict_nodes_link0 2 "$HP" predict "$R18" --device t4 --batch 1024 --devices 16 --nodes 4 --link-gbps 0
expect_err predict_nodes_link0_names "link-gbps"
