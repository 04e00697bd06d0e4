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
# A type's fitted correction (the K80's is e^0.45, the V100 PCIe's e^-0.32)
# scales its compute, not the all-reduce: across nodes the step is the
# compute at the per-device batch plus the exposed all-reduce (until 3
# December the correction scaled the all-reduce too)
for d in k80 v100-pcie t4; do
	"$HP" predict "$R18" --device $d --batch 64 --devices 4 --nodes 2 --link-gbps 0.5 --json >"$TMP/c.$d.4" &&
		"$HP" predict "$R18" --device $d --batch 16 --json >"$TMP/c.$d.1" ||
		fail predict_nodes_correction_run "$d"
done
python3 - "$TMP" <<'PY' && ok predict_nodes_correction_is_compute_only || fail predict_nodes_correction_is_compute_only "see above"
import json, sys
d = sys.argv[1]
for t in ("k80", "v100-pcie", "t4"):
    four = json.load(open(f"{d}/c.{t}.4")); one = json.load(open(f"{d}/c.{t}.1"))
    compute = four["step_time_s"] - four["comm_time_s"]
    assert four["comm_time_s"] > one["step_time_s"], (t, four["comm_time_s"], one["step_time_s"])
    assert abs(compute / one["step_time_s"] - 1) < 1e-6, (t, compute, one["step_time_s"])
PY
expect_status predict_nodes_uneven 2 "$HP" predict "$R18" --device t4 --batch 1024 --devices 16 --nodes 3
expect_err predict_nodes_uneven_names "--nodes 3"
expect_status predict_nodes_link0 2 "$HP" predict "$R18" --device t4 --batch 1024 --devices 16 --nodes 4 --link-gbps 0
expect_err predict_nodes_link0_names "link-gbps"

# The transport: the default on a GPU is NCCL's sockets; each transport's
# all-reduce is its share of the line rate (docs/estimator.md,
# "Transports"); a CPU defaults to MPI over TCP.
for t in tcp socket rdma; do
	"${P[@]}" --nodes 4 --link-gbps 50 --link-transport "$t" >"$TMP/t.$t" 2>"$TMP/err" ||
		fail predict_nodes_transport_run "--link-transport $t: $(cat "$TMP/err")"
done
"$HP" predict "$R18" --device cpu --batch 64 --devices 4 --nodes 4 --link-gbps 1 --json \
	>"$TMP/t.cpu" 2>"$TMP/err" || fail predict_nodes_transport_run "cpu: $(cat "$TMP/err")"
python3 - "$TMP" <<'PY' && ok predict_nodes_transport || fail predict_nodes_transport "see above"
import json, sys
d = sys.argv[1]
p = {k: json.load(open(f"{d}/{k}")) for k in ("p.4.50", "t.tcp", "t.socket", "t.rdma", "t.cpu")}
assert p["p.4.50"]["link_transport"] == "socket", p["p.4.50"]
assert p["t.cpu"]["link_transport"] == "tcp", p["t.cpu"]
assert p["p.4.50"]["comm_time_s"] == p["t.socket"]["comm_time_s"]
c = {k: p["t." + k]["comm_time_s"] for k in ("tcp", "socket", "rdma")}
assert c["rdma"] < c["tcp"] < c["socket"], c
# Wider spread for the all-reduce than for compute alone: the interval
# grows with the transport's error.
for k in ("tcp", "socket"):
    q = p["t." + k]
    lo, hi = q["step_time_interval_s"]
    assert lo < q["step_time_s"] < hi, q
print("predict_nodes: 4 x 50 Gbit/s, exposed all-reduce %.4f s (tcp), %.4f (socket), %.4f (rdma)"
      % (c["tcp"], c["socket"], c["rdma"]))
PY
expect_status predict_nodes_transport_bad 2 "$HP" predict "$R18" --device t4 --batch 1024 --devices 16 --nodes 4 --link-transport infiniband
expect_err predict_nodes_transport_bad_names "link-transport"
