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
# cancel, but only with a claim for the outputs.  A stand-in kubectl (a
# script on PATH) plays a cluster with and without the MPI operator for
# `hetpool status`; `_wait-hosts` is tried against a local TCP listener.
# (The trainer runs inside the image, so none is needed here.)
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

# Open MPI 4 cuts a host name at its first '.' (POD.SERVICE would not
# resolve) unless orte_keep_fqdn_hostnames is set; 5 reads the PRRTE name.
pycheck k8s_launcher_keeps_fqdn "$TMP/mixed-job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
l = [i for i in m if i["metadata"]["name"].endswith("-launcher")][0]
env = {e["name"]: e["value"] for e in l["spec"]["template"]["spec"]["containers"][0].get("env", [])}
assert env.get("OMPI_MCA_orte_keep_fqdn_hostnames") == "1", env
assert env.get("PRTE_MCA_prte_keep_fqdn_hostnames") == "1", env
assert "." in l["spec"]["template"]["spec"]["containers"][0]["command"][l["spec"]["template"]["spec"]["containers"][0]["command"].index("--host") + 1]
PY

# Every pod asks for CPU and memory (the workers per rank, --threads or 2
# cores and 4 GiB; the launcher a little), and GPU pods tolerate the
# nvidia.com/gpu taint GPU node pools carry.
pycheck k8s_pod_requests "$TMP/mixed-job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
per = {}
for i in m:
    if i["kind"] != "Job":
        continue
    ps = i["spec"]["template"]["spec"]
    req = ps["containers"][0]["resources"]["requests"]
    assert req.get("cpu") and req.get("memory"), (i["metadata"]["name"], req)
    if i["metadata"]["labels"]["hetpool.io/role"] == "worker":
        gpus = req["nvidia.com/gpu"]
        assert ps["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == gpus
        assert req["cpu"] == str(2 * gpus) and req["memory"] == "%dGi" % (4 * gpus), req
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in ps.get("tolerations", []), ps.get("tolerations")
        per[gpus] = True
assert sorted(per) == [1, 2], per
PY
expect_status k8s_threads_run 0 "$HP" run "$TMP/single.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --threads 3 --json
pycheck k8s_pod_requests_threads "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
sp = m[1]["spec"]["mpiReplicaSpecs"]
w = sp["Worker"]["template"]["spec"]
req = w["containers"][0]["resources"]["requests"]
assert req["cpu"] == "12" and req["memory"] == "16Gi" and req["nvidia.com/gpu"] == 4, req
assert w["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], w
lr = sp["Launcher"]["template"]["spec"]["containers"][0]["resources"]["requests"]
assert lr.get("cpu") and lr.get("memory"), lr
PY

# A CPU rank asks for the memory its plan predicts (the recommender's
# memory_bytes): 1.25 x the most of its component's groups, rounded up to
# a MiB, and 1024 MiB for the trainer's dataset and libraries, per rank of
# the pod; a GPU rank's model is on its GPU, so its pod keeps 4 GiB a rank;
# a plan that does not say keeps 4 GiB too.
cat >"$TMP/cpumem.json" <<'JSON'
{"choice": {"devices": [
  {"node": "c-01", "type": "cpu", "count": 1, "local_batch": 11, "memory_bytes": 104857600},
  {"node": "c-01", "type": "cpu", "count": 1, "local_batch": 10, "memory_bytes": 94371840},
  {"node": "c-02", "type": "cpu", "count": 2, "local_batch": 10, "memory_bytes": 94371840},
  {"node": "t4-01", "type": "t4", "count": 1, "local_batch": 9, "memory_bytes": 734003200}],
 "global_batch": 50, "steps": 3}}
JSON
expect_status k8s_cpu_memory_run 0 "$HP" run "$TMP/cpumem.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --json
pycheck k8s_cpu_memory_request "$TMP/out" <<'PY'
import json, math, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
got = {}
for i in m:
    if i["kind"] == "Job" and i["metadata"]["labels"]["hetpool.io/role"] == "worker":
        c = i["spec"]["template"]["spec"]["containers"][0]
        t = i["spec"]["template"]["metadata"]["annotations"]["hetpool.io/device-type"]
        got[t] = c["resources"]["requests"]
per_rank = math.ceil(1.25 * 104857600 / 2**20) + 1024
assert got["cpu"]["memory"] == "%dMi" % (2 * per_rank), got
assert "nvidia.com/gpu" not in got["cpu"], got
assert got["t4"]["memory"] == "4Gi" and got["t4"]["nvidia.com/gpu"] == 1, got
PY
sed 's/, "memory_bytes": 94371840//' "$TMP/cpumem.json" >"$TMP/cpumem-part.json"
expect_status k8s_cpu_memory_partial_run 0 "$HP" run "$TMP/cpumem-part.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --json
pycheck k8s_cpu_memory_not_said "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
w = [i for i in m if i["kind"] == "Job" and i["metadata"]["labels"]["hetpool.io/role"] == "worker"
     and i["spec"]["template"]["metadata"]["annotations"]["hetpool.io/device-type"] == "cpu"][0]
assert w["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] == "8Gi", w
PY
for bad in negative:-1 string:'"1G"' huge:1e300; do
	sed "s/\"memory_bytes\": 104857600/\"memory_bytes\": ${bad#*:}/" "$TMP/cpumem.json" >"$TMP/cpumem-bad.json"
	expect_status "k8s_cpu_memory_${bad%%:*}" 2 "$HP" run "$TMP/cpumem-bad.json" --model "$MODEL" --data synthetic \
		--backend kubernetes --no-apply
	expect_err "k8s_cpu_memory_${bad%%:*}_says" "devices\[0\]: 'memory_bytes'"
done

# The launcher waits for the workers' sshd (a readiness probe on the
# Service's port) for an hour by default, --k8s-worker-wait to change it.
pycheck k8s_worker_wait_default "$TMP/mixed-job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
svc = [i for i in m if i["kind"] == "Service"][0]
port = svc["spec"]["ports"][0]["port"]
l = [i for i in m if i["metadata"]["name"].endswith("-launcher")][0]
init = l["spec"]["template"]["spec"]["initContainers"][0]["command"]
assert init == ["hetpool", "_wait-hosts", "/hetpool/job/hostfile", "3600"], init
for i in m:
    if i["kind"] == "Job" and i["metadata"]["labels"]["hetpool.io/role"] == "worker":
        c = i["spec"]["template"]["spec"]["containers"][0]
        assert c["readinessProbe"]["tcpSocket"]["port"] == port, c.get("readinessProbe")
PY
expect_status k8s_worker_wait_run 0 "$HP" run "$TMP/mixed.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --k8s-worker-wait 7200 --json
pycheck k8s_worker_wait_option "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
l = [i for i in m if i["metadata"]["name"].endswith("-launcher")][0]
assert l["spec"]["template"]["spec"]["initContainers"][0]["command"][3] == "7200"
PY
expect_status k8s_worker_wait_zero 2 "$HP" run "$TMP/mixed.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --k8s-worker-wait 0

# _wait-hosts: a host that resolves is not enough, its port must take a
# connection.  A listener on 127.0.0.1 passes; a closed port fails within
# the time given, saying so; a listener that comes up late is waited for.
"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' >"$TMP/closed.port"
CLOSED=$(cat "$TMP/closed.port")
listen() { # listen DELAY_S: a TCP listener on 127.0.0.1 after DELAY_S; its port in $TMP/open.port
	"$PY" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0))
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
time.sleep(float(sys.argv[2])); s.listen(16); time.sleep(30)' "$TMP/open.port" "$1" &
	LISTENER=$!
	local n=200
	while [ ! -s "$TMP/open.port" ] && [ "$n" -gt 0 ]; do
		sleep 0.05
		n=$((n - 1))
	done
}
waits_for() { # NAME DELAY_S TIMEOUT_S: a listener up after DELAY_S is waited for
	rm -f "$TMP/open.port"
	listen "$2"
	echo "127.0.0.1:$(cat "$TMP/open.port") slots=1" >"$TMP/hosts.$1"
	expect_status "k8s_wait_hosts_$1" 0 timeout 20 "$HP" _wait-hosts "$TMP/hosts.$1" "$3"
	kill "$LISTENER" 2>/dev/null
	wait "$LISTENER" 2>/dev/null
}
waits_for open 0 5
printf '127.0.0.1:%s slots=1\n' "$CLOSED" >"$TMP/hosts.closed"
t0=$(date +%s)
expect_status k8s_wait_hosts_closed 1 timeout 20 "$HP" _wait-hosts "$TMP/hosts.closed" 2
expect_err k8s_wait_hosts_closed_says "worker '127.0.0.1' did not accept a connection on port $CLOSED within 2 s: Connection refused"
[ $(($(date +%s) - t0)) -le 10 ] && ok k8s_wait_hosts_closed_bounded || fail k8s_wait_hosts_closed_bounded "took $(($(date +%s) - t0)) s"
waits_for late 2 10

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
# The MPIJob's launcher: its replica-level restartPolicy (the operator's
# default OnFailure overrides the template's) is Never, and it is made
# once the workers are ready.
pycheck k8s_mpijob_launcher_policy "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = json.load(open(j["dir"] + "/k8s/manifests.json"))["items"]
sp = [i for i in m if i["kind"] == "MPIJob"][0]["spec"]
assert sp["launcherCreationPolicy"] == "WaitForWorkersReady", sp.keys()
assert sp["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] == "Never", sp["mpiReplicaSpecs"]["Launcher"].keys()
assert sp["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["restartPolicy"] == "Never"
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
		--data synthetic --backend kubernetes --k8s-volume out
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

# A stand-in kubectl: a cluster without the MPI operator (KC_NO_MPI; a
# list naming mpijobs fails as a whole, as the real one does), one that
# cannot be reached (KC_DOWN), one that refuses an apply (KC_APPLY_FAIL).
# What it was asked goes to KC_LOG.
mkdir -p "$TMP/kbin"
cat >"$TMP/kbin/kubectl" <<'SH'
#!/bin/sh
echo "$*" >>"$KC_LOG"
case "$1" in
config) echo stand-in; exit 0 ;;
apply)
	[ -z "$KC_APPLY_FAIL" ] && exit 0
	echo 'Error from server (Forbidden): jobs.batch is forbidden' >&2
	exit 1 ;;
delete) exit 0 ;;
get)
	if [ -n "$KC_DOWN" ]; then
		echo 'Unable to connect to the server: dial tcp 127.0.0.1:9: connect: connection refused' >&2
		exit 1
	fi
	case "$2" in *mpijobs*) if [ -n "$KC_NO_MPI" ]; then
		echo 'error: the server doesn'"'"'t have a resource type "mpijobs"' >&2
		exit 1
	fi ;; esac
	id=${6#hetpool.io/job=}
	case "$2" in
	jobs.batch) printf '{"kind": "List", "items": [{"kind": "Job", "metadata": {"name": "hetpool-%s-launcher"}, "status": {"active": 1}}]}\n' "$id" ;;
	mpijobs.kubeflow.org) printf '{"kind": "List", "items": [{"kind": "MPIJob", "metadata": {"name": "hetpool-%s"}, "status": {"conditions": [{"type": "Running", "status": "True"}]}}]}\n' "$id" ;;
	*) echo "error: stand-in does not know $2" >&2; exit 1 ;;
	esac ;;
*) exit 1 ;;
esac
SH
chmod +x "$TMP/kbin/kubectl"
KPATH=$TMP/kbin:$PATH
export KC_LOG=$TMP/kc.log
: >"$KC_LOG"
job_id() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$1"; }
json_field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# A cluster gets a job only with a claim for its outputs: without one
# they would be lost with the pods.  Refused before any job is made.
before=$(ls "$HETPOOL_JOBS_DIR" | wc -l)
PATH=$KPATH expect_status k8s_no_volume_refused 2 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes
expect_err k8s_no_volume_refused_says "no --k8s-volume: .*give --k8s-volume CLAIM .*or --no-apply"
[ "$(ls "$HETPOOL_JOBS_DIR" | wc -l)" = "$before" ] && ok k8s_no_volume_no_job ||
	fail k8s_no_volume_no_job "a job folder was made"
grep -q '^apply' "$KC_LOG" && fail k8s_no_volume_not_applied "$(cat "$KC_LOG")" || ok k8s_no_volume_not_applied
# written only, it says the outputs need a claim
PATH=$KPATH expect_status k8s_no_volume_written 0 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --no-apply --json
grep -q 'emptyDir, lost with the pods: give --k8s-volume' "$TMP/out" && ok k8s_no_volume_written_says ||
	fail k8s_no_volume_written_says "$(cat "$TMP/out")"

# Indexed Jobs on a cluster without the MPI operator: status asks for
# jobs.batch only, and sees the launcher running.
PATH=$KPATH KC_NO_MPI=1 expect_status k8s_standin_apply 0 "$HP" run "$TMP/mixed.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --k8s-volume out --json
IXID=$(job_id "$TMP/out")
: >"$KC_LOG"
PATH=$KPATH KC_NO_MPI=1 expect_status k8s_status_no_mpi_operator 0 "$HP" status "$IXID" --json
[ "$(json_field "$TMP/out" state)" = running ] && ok k8s_status_no_mpi_operator_running ||
	fail k8s_status_no_mpi_operator_running "$(cat "$TMP/out")"
grep -q "^get jobs.batch -n default -l hetpool.io/job=$IXID" "$KC_LOG" && ! grep -q mpijobs "$KC_LOG" &&
	ok k8s_status_asks_its_kinds || fail k8s_status_asks_its_kinds "$(cat "$KC_LOG")"
# kubectl failing: the state stays, and the reason says why
PATH=$KPATH KC_DOWN=1 expect_status k8s_status_read_fails 0 "$HP" status "$IXID" --json
pycheck k8s_status_read_fails_says "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "running", j["state"]
assert j["reason"].startswith("state not read from the cluster (the last known is shown): kubectl get jobs.batch: exited 1: Unable to connect"), j["reason"]
PY
PATH=$KPATH KC_DOWN=1 expect_status k8s_status_read_fails_text 0 "$HP" status "$IXID"
grep -q '^reason     state not read from the cluster' "$TMP/out" && ok k8s_status_read_fails_text_says ||
	fail k8s_status_read_fails_text_says "$(cat "$TMP/out")"
# read again: that reason goes
PATH=$KPATH expect_status k8s_status_read_again 0 "$HP" status "$IXID" --json
pycheck k8s_status_read_again_clears "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "running" and not j["reason"], j
PY
# An MPIJob is asked for as one; a job not yet seen that cannot be read
# is queued with the reason, not silently
PATH=$KPATH expect_status k8s_standin_apply_mpijob 0 "$HP" run "$TMP/single.json" --model "$MODEL" \
	--data synthetic --backend kubernetes --k8s-volume out --json
MJID=$(job_id "$TMP/out")
PATH=$KPATH KC_DOWN=1 expect_status k8s_status_mpijob_unread 0 "$HP" status "$MJID" --json
pycheck k8s_status_mpijob_unread_says "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "queued" and "kubectl get mpijobs.kubeflow.org: exited 1" in j["reason"], j
PY
: >"$KC_LOG"
PATH=$KPATH expect_status k8s_status_mpijob 0 "$HP" status "$MJID" --json
[ "$(json_field "$TMP/out" state)" = running ] && grep -q "^get mpijobs.kubeflow.org " "$KC_LOG" &&
	! grep -q "jobs.batch" "$KC_LOG" && ok k8s_status_mpijob_running ||
	fail k8s_status_mpijob_running "$(cat "$TMP/out" "$KC_LOG")"
PATH=$KPATH expect_status k8s_standin_cancel 0 "$HP" cancel "$IXID"
PATH=$KPATH expect_status k8s_standin_cancel_mpijob 0 "$HP" cancel "$MJID"

# An apply that fails leaves no namespace recorded: status says "not
# applied" rather than "(namespace , not applied)".
PATH=$KPATH KC_APPLY_FAIL=1 expect_status k8s_standin_apply_refused 1 "$HP" run "$TMP/single.json" \
	--model "$MODEL" --data synthetic --backend kubernetes --k8s-volume out
ID=$(ls -t "$HETPOOL_JOBS_DIR" | head -n 1)
expect_status k8s_status_after_failed_apply 0 "$HP" status "$ID"
grep -q '^backend    kubernetes (not applied)$' "$TMP/out" && ok k8s_status_after_failed_apply_says ||
	fail k8s_status_after_failed_apply_says "$(grep '^backend' "$TMP/out")"

# Applied when kubectl has a cluster.
if ! command -v kubectl >/dev/null 2>&1; then
	echo "skip k8s_apply: no kubectl"
elif ! kubectl config current-context >/dev/null 2>&1; then
	echo "skip k8s_apply: kubectl has no cluster configured (no current context)"
else
	expect_status k8s_apply 0 "$HP" run "$TMP/single.json" --model "$MODEL" --data synthetic \
		--backend kubernetes --k8s-volume "${HP_K8S_CLAIM:-hetpool-out}" --json
	ID=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TMP/out")
	if kubectl get configmap "hetpool-$ID-job" -n default >/dev/null 2>&1; then
		ok k8s_apply_configmap
	else
		fail k8s_apply_configmap "no configmap hetpool-$ID-job in the cluster"
	fi
	expect_status k8s_apply_cancel 0 "$HP" cancel "$ID"
fi
