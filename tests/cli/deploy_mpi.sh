#!/usr/bin/env bash
# CLI checks for `hetpool run --backend mpi` against the real mpirun (Open
# MPI) and the real trainer: a 3-rank plan on this host's name
# ("localhost" in the hostfile) with uneven local batches runs to the end;
# the hostfile has the plan's nodes and slots, the data is staged by one
# `hetpool _stage` per node through mpirun, every rank logs, a GPU rank on
# a host whose GPUs are hidden trains on the CPU and says so; cancel stops
# it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/deploy.inc"
# The suite's CLI and integration tests plan for a CPU-only host; GPU runs
# are benchmarks/gpu_check.sh's.  Hidden, a GPU host's GPUs stay out.
export CUDA_VISIBLE_DEVICES=

if ! command -v mpirun >/dev/null 2>&1; then
	echo "skip mpi_*: no mpirun (Debian package openmpi-bin)"
elif have_trainer mpi_run mpi_launch mpi_ranks mpi_gpu_rank_on_cpu mpi_cancel; then

cat >"$TMP/plan.json" <<JSON
{"choice": {"devices": [
  {"node": "localhost", "type": "cpu", "count": 2, "local_batch": 12},
  {"node": "localhost", "type": "t4", "count": 1, "local_batch": 8}],
 "global_batch": 32, "steps": 3}}
JSON

expect_status mpi_run 0 mpi_run_wait "$TMP/plan.json" --model "$MODEL" --data "$DATA" \
	--backend mpi --stage-dir "$TMP/stage" --steps 3 --wait --json
cp "$TMP/out" "$TMP/job.json"

pycheck mpi_launch "$TMP/job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); d = j["dir"]
l = json.load(open(d + "/launch.json"))
a = l["launcher"]
assert a[0].endswith("mpirun") and a[a.index("-np") + 1] == "3", a
assert a[a.index("--hostfile") + 1] == d + "/hostfile", a
assert a[-2:] == ["_rank", d], a
assert open(d + "/hostfile").read() == "localhost slots=3\n"
t = l["trainer"]
assert t[t.index("--local-batches") + 1] == "12,12,8", t
if l["stage"]:
    s = l["stage"]["argv"]
    assert s[0].endswith("mpirun") and "_stage" in s and s[s.index("-np") + 1] == "1", s
    assert open(d + "/hostfile.stage").read() == "localhost slots=1\n"
PY

pycheck mpi_ranks "$TMP/job.json" <<'PY'
import json, os, sys
j = json.load(open(sys.argv[1])); d = j["dir"]
assert j["state"] == "succeeded" and j["ranks"] == 3, j
for k in range(3):
    assert os.path.getsize("%s/logs/rank-%d.log" % (d, k)) > 0, k
assert "test_accuracy" in j["results"]
lines = [json.loads(s) for s in open(d + "/out/metrics.jsonl") if s.strip()]
steps = [m for m in lines if "event" not in m]    # not the eval/rebalance lines
assert [m["step"] for m in steps] == [1, 2, 3], lines
assert all(len(m["rank_step_s"]) == 3 and m["local_batches"] == [12, 12, 8] for m in steps), steps
assert j["results"]["state"] == "completed" and j["results"]["ranks"] == 3, j["results"]
PY

# the t4 rank is GPU 0 of the plan, but CUDA_VISIBLE_DEVICES (empty,
# inherited through mpirun) hides every GPU, driver or not: the CPU
pycheck mpi_gpu_rank_on_cpu "$TMP/job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
l = json.load(open(j["dir"] + "/launch.json"))
assert l["ranks"][2]["cuda_visible_devices"] == "0", l["ranks"][2]
r = j["rank_devices"][2]
assert r["requested"] == "cuda" and r["device"] == "cpu" and r["cuda_visible_devices"] == "", r
assert "CUDA_VISIBLE_DEVICES hides every GPU" in r["note"], r
assert [x["device"] for x in j["rank_devices"]] == ["cpu"] * 3, j["rank_devices"]
PY

ASAN_OPTIONS=$MPI_ASAN "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic --backend mpi \
	--steps 100000000 >"$TMP/id" 2>"$TMP/err"
ID=$(cat "$TMP/id")
if wait_state "$ID" running 30; then
	sleep 1
	expect_status mpi_cancel 0 "$HP" cancel "$ID"
	wait_state "$ID" cancelled 1 && ok mpi_cancel_state || fail mpi_cancel_state "$("$HP" status "$ID" | head -4)"
else
	fail mpi_cancel "job $ID never ran: $("$HP" status "$ID" 2>&1 | head -3)"
fi

# One rank on a node mpirun cannot reach: the reason is mpirun's, not a
# rank "killed by signal 127" (mpirun's exit 255 read as the rank's)
cat >"$TMP/far.json" <<JSON
{"choice": {"devices": [{"node": "no-such-node.invalid", "type": "cpu", "count": 1, "local_batch": 8}],
 "global_batch": 8, "steps": 1}}
JSON
expect_status mpi_unreachable_node 1 timeout 120 env ASAN_OPTIONS=$MPI_ASAN "$HP" run "$TMP/far.json" \
	--model "$MODEL" --data synthetic --backend mpi --wait
if grep -q "mpirun exited with status" "$TMP/err" && ! grep -q "signal" "$TMP/err" && ! grep -qF '\r' "$TMP/err"; then
	ok mpi_unreachable_node_reason
else
	fail mpi_unreachable_node_reason "$(tail -n 2 "$TMP/err")"
fi
# its rank never started: logs says so and points to the launcher's log
FAR=$(grep -o 'job [0-9a-z-]* failed' "$TMP/err" | head -n 1 | cut -d' ' -f2)
expect_status mpi_unreachable_logs 2 "$HP" logs "$FAR" --rank 0
expect_err mpi_unreachable_logs_says "ended before the rank started; see its launcher's log .--launcher."

# A staging root another user owns is refused before any copy, and the
# job's reason says why (it said only "'hetpool _stage' exited with
# status 1" until 3 December)
if [ "$DATA" = fashion-mnist ] && [ "$(id -u)" = 0 ]; then
	mkdir -p "$TMP/theirs"
	chown 65534 "$TMP/theirs"
	expect_status mpi_stage_theirs 1 mpi_run_wait "$TMP/plan.json" --model "$MODEL" --data "$DATA" \
		--backend mpi --stage-dir "$TMP/theirs" --steps 1 --wait
	expect_err mpi_stage_theirs_reason "staging the data: .*_stage' exited with status [0-9]+: .*lets another user replace"
else
	echo "skip mpi_stage_theirs: needs --data fashion-mnist and root to make another user's folder"
fi
fi
