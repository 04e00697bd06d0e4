#!/usr/bin/env bash
# CLI checks for `hetpool run --backend kubernetes`: the manifests it
# writes (JSON, which kubectl takes as it takes YAML) are read back and
# checked structurally: a mixed-type plan becomes Indexed Jobs (one per
# component) with a headless Service and a launcher Job, a one-type plan a
# Kubeflow MPIJob; workers request nvidia.com/gpu for their node's devices
# and select nodes by nvidia.com/gpu.product; every rank's local batch and
# GPU is in the launcher's mpirun; the model and the data manifest travel
# in a ConfigMap.  With no cluster configured the job stays queued and says
# so; when kubectl has a cluster, the manifests are applied and deleted on
# cancel.  (The trainer runs inside the image, so none is needed here.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/deploy.inc"

cat >"$TMP/mixed.json" <<'JSON'
{"choice": {"devices": [
  {"node": "a100-01", "type": "a100-80", "count": 2, "local_batch": 12},
  {"node": "t4-01", "type": "t4", "count": 1, "local_batch": 8},
  {"node": "t4-02", "type": "t4", "count": 1, "local_batch": 8}],
 "global_batch": 40, "steps": 3}}
JSON
cat >"$TMP/single.json" <<'JSON'
{"choice": {"devices": [
  {"node": "v100-01", "type": "v100", "count": 4, "local_batch": 32},
  {"node": "v100-02", "type": "v100", "count": 4, "local_batch": 32}],
 "global_batch": 256, "steps": 3}}
JSON

expect_status k8s_mixed 0 "$HP" run "$TMP/mixed.json" --model "$MODEL" --data "$DATA" \
	--backend kubernetes --no-apply --image registry.example/hetpool:0.1 --json
cp "$TMP/out" "$TMP/mixed-job.json"
pycheck k8s_mixed_manifests "$TMP/mixed-job.json" "$MODEL" <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
model = open(sys.argv[2]).read()
assert j["state"] == "queued" and "not applied (--no-apply was given)" in j["reason"] and j["applied"] is False, j
m = json.load(open(j["dir"] + "/k8s/manifests.json"))
assert m["kind"] == "List" and m["apiVersion"] == "v1"
items = m["items"]
kinds = [(i["kind"], i["apiVersion"]) for i in items]
assert kinds == [("ConfigMap", "v1"), ("Service", "v1"), ("Job", "batch/v1"),
                 ("Job", "batch/v1"), ("Job", "batch/v1")], kinds
dns = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
for i in items:
    md = i["metadata"]
    assert dns.match(md["name"]) and len(md["name"]) <= 63, md["name"]
    assert md["labels"]["hetpool.io/job"] == j["id"] and md["namespace"] == "default"
cm, svc, w0, w1, launcher = items
assert cm["data"]["model.json"] == model
if j["data"] == "fashion-mnist":
    st = json.loads(cm["data"]["stage.json"])
    assert len(st["files"]) == 4 and all(len(f["sha256"]) == 64 for f in st["files"])
assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["selector"]["hetpool.io/job"] == j["id"]
want = {w0["metadata"]["name"]: ("NVIDIA-A100-SXM4-80GB", 2, 1, "12,12"),
        w1["metadata"]["name"]: ("Tesla-T4", 1, 2, "8;8")}
hosts = []
for w in (w0, w1):
    prod, gpus, nodes, lbs = want[w["metadata"]["name"]]
    s = w["spec"]
    assert s["completionMode"] == "Indexed" and s["completions"] == nodes == s["parallelism"], s
    pod = s["template"]
    ps = pod["spec"]
    assert ps["subdomain"] == svc["metadata"]["name"]
    assert ps["nodeSelector"] == {"nvidia.com/gpu.product": prod}, ps["nodeSelector"]
    c = ps["containers"][0]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == gpus, c
    assert c["image"] == "registry.example/hetpool:0.1"
    ann = pod["metadata"]["annotations"]
    assert all(isinstance(v, str) for v in ann.values()), ann
    assert ann["hetpool.io/local-batches"] == lbs, ann
    if j["data"] == "fashion-mnist":
        init = ps["initContainers"][0]["command"]
        assert init[:3] == ["hetpool", "_stage", "/hetpool/job/stage.json"], init
    for k in range(nodes):
        hosts.append("%s-%d.%s" % (w["metadata"]["name"], k, svc["metadata"]["name"]))
# the launcher: one mpirun app context per rank, on its pod, with its GPU
ls = launcher["spec"]["template"]["spec"]
assert ls["initContainers"][0]["command"][:2] == ["hetpool", "_wait-hosts"]
cmd = ls["containers"][0]["command"]
assert cmd[0] == "mpirun"
ctx = " ".join(cmd).split(" : ")
assert len(ctx) == 4, len(ctx)
ranks = [(re.search(r"--host (\S+)", c).group(1), re.search(r"CUDA_VISIBLE_DEVICES=(\S*)", c).group(1)) for c in ctx]
assert ranks == [(hosts[0], "0"), (hosts[0], "1"), (hosts[1], "0"), (hosts[2], "0")], (ranks, hosts)
for c in ctx:
    a = c.split()
    assert a[a.index("--local-batches") + 1] == "12,12,8,8" and a[a.index("--batch") + 1] == "40", c
hf = cm["data"]["hostfile"].split("\n")
assert hf[:3] == ["%s slots=2" % hosts[0], "%s slots=1" % hosts[1], "%s slots=1" % hosts[2]], hf
PY

expect_status k8s_mpijob 0 "$HP" run "$TMP/single.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --namespace team-a --product-map v100=Tesla-V100-SXM2-16GB --json
pycheck k8s_mpijob_manifest "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["namespace"] == "team-a"
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
assert [i["kind"] for i in m] == ["ConfigMap", "MPIJob"], [i["kind"] for i in m]
mj = m[1]
assert mj["apiVersion"] == "kubeflow.org/v2beta1" and mj["metadata"]["namespace"] == "team-a"
sp = mj["spec"]
assert sp["slotsPerWorker"] == 4
assert sp["mpiReplicaSpecs"]["Launcher"]["replicas"] == 1
w = sp["mpiReplicaSpecs"]["Worker"]
assert w["replicas"] == 2
ps = w["template"]["spec"]
assert ps["nodeSelector"] == {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"}
assert ps["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 4
cmd = sp["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
ctx = " ".join(cmd).split(" : ")
assert len(ctx) == 8
name = mj["metadata"]["name"]
assert "--host %s-worker-1.%s.team-a.svc" % (name, name) in ctx[7], ctx[7]
assert "CUDA_VISIBLE_DEVICES=3" in ctx[7] and "--data synthetic" in ctx[7]
PY

# The selector is the label GPU feature discovery writes from the driver's
# name (nvidia-smi's), not the datasheet's: "NVIDIA A100 PCIe 40GB" is
# "NVIDIA-A100-PCIE-40GB" on a real node, an H100 SXM5 "NVIDIA-H100-80GB-HBM3".
cat >"$TMP/types.json" <<'JSON'
{"choice": {"devices": [
  {"node": "n1", "type": "a100-pcie-40", "count": 1, "local_batch": 8},
  {"node": "n2", "type": "h100-sxm", "count": 1, "local_batch": 8},
  {"node": "n3", "type": "v100-pcie", "count": 1, "local_batch": 8},
  {"node": "n4", "type": "h200", "count": 1, "local_batch": 8}],
 "global_batch": 32, "steps": 3}}
JSON
expect_status k8s_driver_labels_run 0 "$HP" run "$TMP/types.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --json
pycheck k8s_driver_labels "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
sel = sorted(i["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]
             for i in m if i["kind"] == "Job" and "nodeSelector" in i["spec"]["template"]["spec"])
assert sel == ["NVIDIA-A100-PCIE-40GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200", "Tesla-V100-PCIE-16GB"], sel
PY

# On a claim (--k8s-volume) each job's outputs go to a folder of its own
# (subPath: its id), for the launcher and the workers alike; the launcher
# is not retried.
expect_status k8s_claim_run 0 "$HP" run "$TMP/single.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --k8s-volume shared-out --json
pycheck k8s_claim_subpath "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
def find(x, pred, found):
    """every object in the manifests that pred accepts"""
    if isinstance(x, dict):
        if pred(x):
            found.append(x)
        for v in x.values():
            find(v, pred, found)
    elif isinstance(x, list):
        for v in x:
            find(v, pred, found)
    return found
outs = find(m, lambda x: x.get("name") == "out" and "mountPath" in x, [])
assert len(outs) >= 2 and all(o.get("subPath") == j["id"] for o in outs), outs
vols = find(m, lambda x: x.get("name") == "out" and "persistentVolumeClaim" in x, [])
assert vols and all(v["persistentVolumeClaim"]["claimName"] == "shared-out" for v in vols), vols
mj = [i for i in m if i["kind"] == "MPIJob"]
assert not mj or mj[0]["spec"]["runPolicy"]["backoffLimit"] == 0, mj[0]["spec"]["runPolicy"]
PY

# kubectl apply that fails part way (here: a cluster that does not
# answer, the real kubectl) is followed by a delete of what it may have
# made; that failing too, the job's reason says what to run by hand.
if command -v kubectl >/dev/null 2>&1; then
	cat >"$TMP/kc.yaml" <<'YAML'
apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:9"}
  name: none
contexts:
- context: {cluster: none, user: u}
  name: none
current-context: none
users:
- name: u
  user: {token: x}
YAML
	KUBECONFIG=$TMP/kc.yaml expect_status k8s_apply_fails 1 "$HP" run "$TMP/types.json" --model "$MODEL" \
		--data synthetic --backend kubernetes
	expect_err k8s_apply_fails_says "kubectl apply failed, and so did deleting what it may have made: run 'kubectl delete -f k8s/manifests.json' in the job's folder .all kubectl said: k8s/apply.log."
	ID=$(ls -t "$HETPOOL_JOBS_DIR" | head -n 1)
	grep -q 'connect\|refused\|Unable\|error' "$HETPOOL_JOBS_DIR/$ID/k8s/apply.log" && ok k8s_apply_fails_log_kept || fail k8s_apply_fails_log_kept "$(ls "$HETPOOL_JOBS_DIR/$ID/k8s")"
else
	echo "skip k8s_apply_fails: no kubectl"
fi

# --wait on a job nothing will apply ends at once (it waited for ever)
KUBECONFIG=$TMP/none.yaml expect_status k8s_wait_not_applied 1 timeout 60 "$HP" run "$TMP/single.json" \
	--model "$MODEL" --data synthetic --backend kubernetes --wait
expect_err k8s_wait_not_applied_says "queued: manifests written to k8s/manifests.json, not applied .no Kubernetes cluster"
expect_status k8s_wait_no_apply_refused 2 "$HP" run "$TMP/single.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --no-apply --wait
expect_err k8s_wait_no_apply_says "--wait with --no-apply"

expect_status k8s_mpijob_mixed_refused 2 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --k8s-flavor mpijob --no-apply
expect_err k8s_mpijob_mixed_says "an MPIJob has one kind of worker"
expect_status k8s_bad_namespace 2 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --namespace 'Team A' --no-apply
expect_err k8s_bad_namespace_says "namespace 'Team A': 'T' \(character 1\) is not allowed"
# a namespace is a DNS-1123 label: up to 63 characters, not 31
ns63=$(printf 'n%.0s' $(seq 63))
expect_status k8s_namespace_63 0 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --namespace "$ns63" --no-apply --json
expect_status k8s_namespace_64 2 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --namespace "${ns63}x" --no-apply
expect_err k8s_namespace_64_says "is 64 characters; Kubernetes takes at most 63"
expect_status k8s_namespace_dash_end 2 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --namespace team- --no-apply
expect_err k8s_namespace_dash_end_says "namespace 'team-' must start and end with a letter or digit"
# a claim is a DNS-1123 subdomain: dots are allowed
expect_status k8s_claim_dots 0 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --k8s-volume runs.team-a --no-apply --json

# A GPU type the catalog does not know has no product label: refused
# (its name as the label would select no node), unless --product-map
# gives one.
cat >"$TMP/unknown.json" <<'JSON'
{"choice": {"devices": [{"node": "n1", "type": "b200x", "count": 2, "local_batch": 8}],
 "global_batch": 16, "steps": 1}}
JSON
before=$(ls "$HETPOOL_JOBS_DIR" | wc -l)
expect_status k8s_unknown_type 2 "$HP" run "$TMP/unknown.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --no-apply
expect_err k8s_unknown_type_says "GPU type 'b200x' is not in the device catalog.*--product-map b200x=LABEL"
[ "$(ls "$HETPOOL_JOBS_DIR" | wc -l)" = "$before" ] && ok k8s_unknown_type_no_job ||
	fail k8s_unknown_type_no_job "a job folder was made"
expect_status k8s_unknown_type_mapped 0 "$HP" run "$TMP/unknown.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --no-apply --product-map b200x=NVIDIA-B200 --json
pycheck k8s_unknown_type_mapped_label "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["dir"]
m = json.dumps(json.load(open(d + "/k8s/manifests.json")))
assert '"nvidia.com/gpu.product": "NVIDIA-B200"' in m, m[:300]
PY

# 512 ranks: one app context per rank, each repeating every rank's batch,
# is a launcher command of about 2 MiB, which no object or exec holds: the
# job fails saying so (it was written, and could never start)
"$PY" - "$TMP/big.json" <<'PY'
import json, sys
devs = [{"node": "h-%03d" % i, "type": "h100-sxm", "count": 8, "local_batch": 16} for i in range(64)]
json.dump({"choice": {"devices": devs, "global_batch": 64 * 8 * 16, "steps": 10}}, open(sys.argv[1], "w"))
PY
expect_status k8s_too_many_ranks 1 "$HP" run "$TMP/big.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --no-apply
expect_err k8s_too_many_ranks_says "512 ranks: the launcher's mpirun command would be [0-9.]+ MiB"

# A job that was only written: its log would be its pods', none ran,
# which logs says (and does not wait for ever with --follow).
ID=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TMP/mixed-job.json")
expect_status k8s_logs_not_applied 2 timeout 20 "$HP" logs "$ID" --follow
expect_err k8s_logs_not_applied_says "not applied: no pod has run"
# Cancelled: nothing to delete; its logs now says it ended before any
# pod ran (not to apply it)
expect_status k8s_cancel_written 0 "$HP" cancel "$ID"
grep -q "cancelled" "$TMP/out" && ok k8s_cancel_written_state || fail k8s_cancel_written_state "$(cat "$TMP/out")"
expect_status k8s_logs_cancelled_unapplied 2 timeout 20 "$HP" logs "$ID"
expect_err k8s_logs_cancelled_unapplied_says "cancelled before any pod ran, so there is no log: cancelled"

# Applied when kubectl has a cluster.
if ! command -v kubectl >/dev/null 2>&1; then
	echo "skip k8s_apply: no kubectl"
elif ! kubectl config current-context >/dev/null 2>&1; then
	echo "skip k8s_apply: kubectl has no cluster configured (no current context)"
else
	expect_status k8s_apply 0 "$HP" run "$TMP/single.json" --model "$MODEL" --data synthetic \
		--backend kubernetes --json
	ID=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TMP/out")
	if kubectl get configmap "hetpool-$ID-job" -n default >/dev/null 2>&1; then
		ok k8s_apply_configmap
	else
		fail k8s_apply_configmap "no configmap hetpool-$ID-job in the cluster"
	fi
	expect_status k8s_apply_cancel 0 "$HP" cancel "$ID"
fi
