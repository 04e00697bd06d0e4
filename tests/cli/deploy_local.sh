#!/usr/bin/env bash
# CLI checks for `hetpool run --backend local` with the real trainer: a
# 2-rank plan for this host (batch split 3:1) runs end to end, staged data
# checksummed, each rank pinned to its own CPUs with no GPU visible, the
# trainer's metrics and results collected; jobs, status and logs show it;
# a one-rank run from a model (no mpirun); a rank that fails leaves the job
# failed naming the rank; cancel stops a running job at once and leaves no
# process of it; with the GPUs hidden, a GPU plan is refused unless
# --host-gpus names them, and its rank then trains on the CPU.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/deploy.inc"
# The suite's CLI and integration tests plan for a CPU-only host; GPU runs
# are benchmarks/gpu_check.sh's.  Hidden, a GPU host's GPUs stay out.
export CUDA_VISIBLE_DEVICES=

if have_trainer local_run local_split local_pinning local_staging local_results \
	local_jobs local_logs local_model_form local_rank_fails local_resume_from local_cancel local_cancel_no_process \
	local_remove_running local_remove local_remove_gone local_remove_again \
	local_hidden_gpus_refused local_host_gpus_wins; then

cat >"$TMP/plan.json" <<JSON
{"choice": {"devices": [
  {"node": "$HOST", "type": "cpu", "count": 1, "local_batch": 24},
  {"node": "$HOST", "type": "cpu", "count": 1, "local_batch": 8}],
 "global_batch": 32, "steps": 3, "lr": {"rule": "linear", "ref_batch": 32, "warmup_steps": 0}}}
JSON

expect_status local_run 0 mpi_run_wait "$TMP/plan.json" --model "$MODEL" --data "$DATA" \
	--steps 3 --lr 0.05 --seed 1 --wait --json
cp "$TMP/out" "$TMP/job.json"
JOBDIR=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["dir"])' "$TMP/job.json")
ID=$(basename "$JOBDIR")

pycheck local_split "$JOBDIR" <<'PY'
import json, sys
d = sys.argv[1]
l = json.load(open(d + "/launch.json"))
t = l["trainer"]
assert t[t.index("--local-batches") + 1] == "24,8", t
assert t[t.index("--devices") + 1] == "cpu,cpu", t
assert t[t.index("--batch") + 1] == "32", t
assert t[t.index("--out") + 1] == d + "/out", t
assert l["launcher"][0].endswith("mpirun"), l["launcher"]
PY

pycheck local_pinning "$JOBDIR" <<'PY'
import json, os, sys
d = sys.argv[1]
r = [json.load(open("%s/logs/rank-%d.json" % (d, k))) for k in range(2)]
allowed = sorted(os.sched_getaffinity(0))
for x in r:
    assert x["device"] == "cpu" and x["cuda_visible_devices"] == "", x
    assert x["cpus"] and set(x["cpus"]) <= set(allowed), (x["cpus"], allowed)
    assert x["threads"] == len(x["cpus"]), x
if len(allowed) >= 2:
    assert not set(r[0]["cpus"]) & set(r[1]["cpus"]), "ranks share CPUs"
PY

# Staging: the copies' checksums, computed here, match the manifest's,
# which match the dataset's own files.
if [ "$DATA" = fashion-mnist ]; then
	pycheck local_staging "$JOBDIR" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
m = json.load(open(d + "/stage.json"))
assert len(m["files"]) == 4
l = json.load(open(d + "/launch.json"))
dest = l["stage"]["dest"]
t = l["trainer"]
assert t[t.index("--data") + 1] == dest
for f in m["files"]:
    h = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
    assert h(f["source"]) == f["sha256"], f["source"]
    assert h(os.path.join(dest, f["name"])) == f["sha256"], f["name"]
PY
else
	echo "skip local_staging: no dataset-fashion-mnist here"
fi

pycheck local_results "$TMP/job.json" "$JOBDIR" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); d = sys.argv[2]
assert j["state"] == "succeeded" and j["backend"] == "local" and j["ranks"] == 2, j
assert j["exit_status"] == 0 and j["started"] and j["ended"] >= j["started"]
r = j["results"]
for k in ("test_accuracy", "steps", "wall_s"):
    assert k in r, k
assert r["steps"] == 3, r
# step lines have "step", event lines (eval, rebalance) "event" and "at_step"
lines = [json.loads(s) for s in open(d + "/out/metrics.jsonl") if s.strip()]
steps = [m for m in lines if "event" not in m]
events = [m for m in lines if "event" in m]
assert [m["step"] for m in steps] == [1, 2, 3], [m.get("step") for m in steps]
for m in steps:
    for k in ("step", "loss", "lr", "local_batches", "rank_step_s"):
        assert k in m, k
    assert sum(m["local_batches"]) == 32 and len(m["rank_step_s"]) == 2, m
evals = [m for m in events if m["event"] == "eval"]
assert evals and evals[-1]["at_step"] == 3, events
assert evals[-1]["test_accuracy"] == r["test_accuracy"], (evals[-1], r["test_accuracy"])
assert [x["device"] for x in j["rank_devices"]] == ["cpu", "cpu"]
PY

expect_status local_jobs 0 "$HP" jobs
grep -q "^$ID *succeeded *local *2 " "$TMP/out" && ok local_jobs_line || fail local_jobs_line "$(cat "$TMP/out")"
expect_status local_status 0 "$HP" status "$ID"
grep -q '^state      succeeded' "$TMP/out" && grep -q '^rank 1 ' "$TMP/out" &&
	ok local_status_text || fail local_status_text "$(cat "$TMP/out")"
expect_status local_logs 0 "$HP" logs "$ID" --rank 1
grep -q 'rank 1: starting' "$TMP/out" && ok local_logs_rank1 || fail local_logs_rank1 "$(head -c 300 "$TMP/out")"

# A model instead of a plan: the recommender cannot weigh this host's CPU
# (no power figure), so it runs on it, one rank, said so.
expect_status local_model_form 0 run_wait "$MODEL" --data "$DATA" --steps 2 --batch 16 \
	--deadline 1h --wait --json
pycheck local_model_form_one_rank "$TMP/out" "$TMP/err" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); err = open(sys.argv[2]).read()
assert j["state"] == "succeeded" and j["ranks"] == 1, j
l = json.load(open(j["dir"] + "/launch.json"))
assert l["launcher"][1] == "_rank", l["launcher"]       # no mpirun for one rank
assert "training on its CPU with 1 rank" in err, err
PY
# --epochs with a MODEL is E passes over --samples N, the work the plan was
# judged on: 512 samples at batch 32 is 16 steps (not an epoch of the
# trainer's 16384 synthetic samples)
expect_status local_model_form_epochs 0 run_wait "$MODEL" --data synthetic --samples 512 --batch 32 \
	--epochs 1 --deadline 1h --wait --json
pycheck local_model_form_epochs_steps "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "succeeded" and j["results"]["steps"] == 16, j["results"]
PY

# GPUs hidden (CUDA_VISIBLE_DEVICES=, above): a plan for a t4 here is
# refused, as on a host without one; --host-gpus still says what the host
# has, and the t4 rank then trains on the CPU, said so, with no GPU visible.
cat >"$TMP/t4.json" <<JSON
{"choice": {"devices": [{"node": "$HOST", "type": "t4", "count": 1, "local_batch": 8}],
 "global_batch": 8, "steps": 1}}
JSON
expect_status local_hidden_gpus_refused 2 "$HP" run "$TMP/t4.json" --model "$MODEL" --data synthetic --steps 1
expect_err local_hidden_gpus_refused_says "the plan wants 1 x t4 on this host, which has 0 .0 NVIDIA GPUs seen."
expect_status local_host_gpus_wins 0 run_wait "$TMP/t4.json" --model "$MODEL" --data synthetic --steps 1 \
	--host-gpus t4 --wait --json
pycheck local_host_gpus_wins_on_cpu "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "succeeded" and j["ranks"] == 1, j
l = json.load(open(j["dir"] + "/launch.json"))
assert [(x["type"], x["cuda_visible_devices"]) for x in l["ranks"]] == [("t4", "0")], l["ranks"]
r = json.load(open(j["dir"] + "/logs/rank-0.json"))
assert r["requested"] == "cuda" and r["device"] == "cpu" and r["cuda_visible_devices"] == "", r
assert "CUDA_VISIBLE_DEVICES hides every GPU" in r["note"], r["note"]
PY
# ... and with --no-cpu-fallback the job fails, its reason saying why
# (the rank's own step said it before any trainer ran; the reason was
# only "rank 0 exited with status 1" until 3 December)
expect_status local_no_fallback_fails 1 run_wait "$TMP/t4.json" --model "$MODEL" --data synthetic --steps 1 \
	--host-gpus t4 --no-cpu-fallback --wait
expect_err local_no_fallback_reason "rank 0 exited with status 1: hetpool: _rank: rank 0: the plan gives it a t4 GPU but CUDA_VISIBLE_DEVICES hides every GPU"

# A rank that fails (a model the data cannot feed: 3x32x32 inputs) leaves
# the job failed, naming a rank and what it said.
cat >"$TMP/bad.json" <<'JSON'
{"name": "bad", "input": [3, 32, 32], "classes": 10, "layers": [{"type": "fc", "units": 10}]}
JSON
expect_status local_rank_fails 1 mpi_run_wait "$TMP/plan.json" --model "$TMP/bad.json" \
	--data fashion-mnist --steps 2 --wait --json
pycheck local_rank_fails_reason "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "failed" and "rank" in j["reason"], j
# the trainer's own error (printed by the lowest failing rank), whichever
# rank mpirun names as the first to exit
assert "hetpool-train: " in j["reason"] and ("3x32x32" in j["reason"] or "fashion-mnist" in j["reason"]), j["reason"]
PY

# A damaged data folder (--data DIR, its labels cut short) fails the job,
# and the reason names the user's folder, not the staged copy the rank read
# (JOBS/.stage/HASH; until 3 December the reason named that copy)
tiny_idx "$TMP/dmg"
"$PY" - "$TMP/dmg/train-labels-idx1-ubyte.gz" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
open(sys.argv[1], "wb").write(data[: len(data) // 2])
PY
expect_status local_data_damaged 1 run_wait "$MODEL" --data "$TMP/dmg" --steps 2 --batch 16 \
	--samples 64 --deadline 1h --wait --json
pycheck local_data_damaged_names_folder "$TMP/out" "$TMP/dmg" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "failed", j
assert "--data %s: train-labels-idx1-ubyte.gz" % sys.argv[2] in j["reason"], j["reason"]
assert ".stage" not in j["reason"], j["reason"]
PY

# A rank killed by a signal (here a trainer that sends itself SIGSEGV as
# rank 1): mpirun's "exited on signal 11" is the rank's, named as such
cat >"$TMP/segv-trainer" <<'SH'
#!/bin/sh
[ "$OMPI_COMM_WORLD_RANK" = 1 ] && kill -SEGV $$
sleep 2
SH
chmod +x "$TMP/segv-trainer"
expect_status local_rank_signal 1 mpi_run_wait "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--steps 1 --trainer "$TMP/segv-trainer" --wait
expect_err local_rank_signal_says "rank 1 was killed by signal 11 .Segmentation fault."

# --resume-from: a new job continues an ended one from its checkpoint (its
# out/ starts as the old one's), and --resume alone, which has nothing to
# resume in a new job's empty out/, is refused.
expect_status local_resume_first 0 mpi_run_wait "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--steps 6 --seed 3 --wait --json
RA=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TMP/out")
expect_status local_resume_from 0 mpi_run_wait "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--steps 10 --seed 3 --resume-from "$RA" --wait --json
pycheck local_resume_from_continues "$TMP/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["results"]
assert r["resumed_from_step"] == 6 and r["steps"] == 10 and r["state"] == "completed", r
steps = [json.loads(l)["step"] for l in open(j["dir"] + "/out/metrics.jsonl") if '"step"' in l]
assert steps == list(range(1, 11)), steps
PY
expect_status local_resume_alone 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic --steps 10 --resume
expect_err local_resume_alone_says "give --resume-from ID"
expect_status local_resume_from_missing 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--steps 10 --resume-from 20990101-000000-abcd
expect_err local_resume_from_missing_says "no job '20990101-000000-abcd'"

# Cancel: a long run is stopped at once (the trainers get SIGTERM) and no
# process of the job is left.
ASAN_OPTIONS=$MPI_ASAN "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic --steps 100000000 >"$TMP/id" 2>"$TMP/err"
ID=$(cat "$TMP/id")
if wait_state "$ID" running 30; then
	sleep 1
	# a job that has not ended is not removed
	expect_status local_remove_running 2 "$HP" remove "$ID"
	expect_err local_remove_running_says "is running: cancel it"
	[ -d "$HETPOOL_JOBS_DIR/$ID" ] && ok local_remove_running_kept || fail local_remove_running_kept "its folder went"
	expect_status local_cancel 0 "$HP" cancel "$ID"
	pycheck local_cancel_no_process "$HETPOOL_JOBS_DIR/$ID" <<'PY'
import json, os, sys, time
d = sys.argv[1]
j = json.load(open(d + "/job.json"))
assert j["state"] == "cancelled", j["state"]

def runs(pid, start):
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return f[0] != "Z" and int(f[19]) == start

# the workers are gone when the job is recorded cancelled
for k in range(2):
    r = json.load(open("%s/logs/rank-%d.json" % (d, k)))
    assert not runs(r["pid"], r["pid_start"]), "rank %d (pid %d) still runs" % (k, r["pid"])
# the supervisor exits just after recording it
for _ in range(50):
    if not runs(j["pid"], j["pid_start"]):
        break
    time.sleep(0.1)
else:
    raise AssertionError("the supervisor (pid %d) still runs" % j["pid"])
PY
else
	fail local_cancel "job $ID never ran: $("$HP" status "$ID" 2>&1 | head -3)"
fi
# an ended job goes with its folder; then it is no job
if wait_state "$ID" cancelled 30; then
	expect_status local_remove 0 "$HP" remove "$ID" --json
	grep -q '"removed": true' "$TMP/out" && [ ! -e "$HETPOOL_JOBS_DIR/$ID" ] &&
		[ -z "$(ls -A "$HETPOOL_JOBS_DIR" | grep '^\.removing')" ] && ok local_remove_gone ||
		fail local_remove_gone "$(cat "$TMP/out"; ls -a "$HETPOOL_JOBS_DIR")"
	expect_status local_remove_again 2 "$HP" remove "$ID"
	expect_status local_remove_status_after 2 "$HP" status "$ID"
else
	fail local_remove "job $ID did not end cancelled"
fi

# A rank stopped (SIGSTOP; a hung driver, a frozen node) holds the other
# in its next collective: with --stall-timeout the trainer's watchdog ends
# the job, failed, with its words for the reason, instead of running for
# ever (until 3 December it ran until cancelled)
ASAN_OPTIONS=$MPI_ASAN "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--steps 100000000 --stall-timeout 2 >"$TMP/id" 2>"$TMP/err"
ID=$(cat "$TMP/id")
r1=
if wait_state "$ID" running 60; then
	for _ in $(seq 300); do
		r1=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
			"$HETPOOL_JOBS_DIR/$ID/logs/rank-1.json" 2>/dev/null) && [ -n "$r1" ] &&
			grep -qs '"step":3,' "$HETPOOL_JOBS_DIR/$ID/out/metrics.jsonl" && break
		r1=
		sleep 0.1
	done
fi
if [ -n "$r1" ] && kill -STOP "$r1"; then
	if wait_state "$ID" failed 120; then
		pycheck local_stall_fails "$HETPOOL_JOBS_DIR/$ID/job.json" <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
assert re.search(r"rank 0: no progress for [0-9]+ s after step [0-9]+ \(the stall limit", j["reason"]), j["reason"]
PY
		pycheck local_stall_passed "$HETPOOL_JOBS_DIR/$ID/launch.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["trainer"]
assert t[t.index("--stall-timeout") + 1] == "2", t
PY
	else
		fail local_stall_fails "job $ID did not fail: $("$HP" status "$ID" 2>&1 | head -3)"
	fi
	kill -CONT "$r1" 2>/dev/null
else
	fail local_stall_fails "job $ID: rank 1 never ran: $("$HP" status "$ID" 2>&1 | head -3)"
fi
cancel_all
expect_status local_stall_usage 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic --stall-timeout 0.5
expect_err local_stall_usage_says "^hetpool: run: --stall-timeout: give 1 s to 1e9 s \\(got 0.5 s\\)$"
fi
