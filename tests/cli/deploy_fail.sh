#!/usr/bin/env bash
# CLI checks for how a local or mpi job ends when something goes wrong
# with it: a rank's error in training (the trainer calls MPI_Abort) is the
# job's reason, quoted from the rank's log, not mpirun's report; a rank
# killed by a signal gets no unrelated log line appended; a cancel that
# comes after the trainer completed leaves the job succeeded; a job file
# without the supervisor's start time never gets another process
# signalled; a job folder that is a symbolic link is not removed through.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/deploy.inc"
export CUDA_VISIBLE_DEVICES=

# poll_for TRIES CMD...: run CMD every 0.1 s until it succeeds (true) or
# TRIES tries have failed (false).  A bound on a wait, not an assertion of
# speed: a slow host (AddressSanitizer, other tests beside) only waits longer.
poll_for() {
	local n=$1
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

if have_trainer fail_abort_local fail_abort_mpi fail_killed_rank fail_late_cancel fail_stage_cancel; then

cat >"$TMP/plan.json" <<JSON
{"choice": {"devices": [
  {"node": "$HOST", "type": "cpu", "count": 2, "local_batch": 8}],
 "global_batch": 16, "steps": 20}}
JSON

# A trainer whose rank 0 cannot write its checkpoint (every temporary name
# it would try is a folder already): it says so at step 5 and calls
# MPI_Abort.  The reason quoted mpirun's "with errorcode 1." (or an
# ORTE_ERROR_LOG line) until 3 December.
cat >"$TMP/abort-trainer" <<SH
#!/bin/bash
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then
	prev=
	for a in "\$@"; do [ "\$prev" = --out ] && out=\$a; prev=\$a; done
	mkdir -p "\$out" && (cd "\$out" && mkdir checkpoint.tmp.\$\$.{0..999})
fi
exec "$TRAINER" "\$@"
SH
chmod +x "$TMP/abort-trainer"
for be in local mpi; do
	expect_status fail_abort_$be 1 mpi_run_wait "$TMP/plan.json" --model "$MODEL" --data synthetic \
		--steps 20 --checkpoint-every 5 --backend $be --trainer "$TMP/abort-trainer" --wait
	expect_err fail_abort_${be}_reason "failed: rank 0 exited with status 1: hetpool-train: checkpoint at step 5: cannot write '.*/out/checkpoint': File exists$"
done

# A rank killed with SIGKILL: the reason says so, and quotes no line of
# its log that is no error ("hetpool: rank 1: starting ..." was appended
# until 3 December)
ASAN_OPTIONS=$MPI_ASAN "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--steps 100000000 >"$TMP/id" 2>"$TMP/err"
ID=$(cat "$TMP/id")
# rank 1's pid, once its record is there (written by `hetpool _rank` just
# before it becomes the trainer: the pid is the trainer's)
rank1_pid() {
	RANK1=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
		"$HETPOOL_JOBS_DIR/$ID/logs/rank-1.json" 2>/dev/null) && [ -n "$RANK1" ]
}
RANK1=
if wait_state "$ID" running 30 && poll_for 300 rank1_pid && kill -9 "$RANK1"; then
	if wait_state "$ID" failed 30; then
		pycheck fail_killed_rank "$HETPOOL_JOBS_DIR/$ID/job.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["reason"]
assert r == "rank 1 was killed by signal 9 (Killed)", r
PY
	else
		fail fail_killed_rank "job $ID did not fail: $("$HP" status "$ID" 2>&1 | head -3)"
	fi
else
	fail fail_killed_rank "job $ID never ran, or no rank 1 to kill (pid '$RANK1'): $("$HP" status "$ID" 2>&1 | head -3)"
fi

# A cancel that comes once the trainer has completed (here, while its
# rank lingers after it, deaf to SIGTERM, until the cancel is recorded in
# the job's file) stops nothing: the job succeeded (it was recorded
# cancelled until 3 December).  The linger ends on the cancel, not on a
# clock: it must end within the supervisor's grace after its SIGTERM (10 s:
# a rank still there then is killed, and the job is cancelled after all);
# 30 s is its bound if no cancel comes (the check fails then).
cat >"$TMP/late-trainer" <<SH
#!/bin/bash
"$TRAINER" "\$@"
rc=\$?
trap '' TERM
prev=
for a in "\$@"; do [ "\$prev" = --out ] && out=\$a; prev=\$a; done
for _ in \$(seq 300); do
	grep -qs '"cancel_requested": *true' "\$out/../job.json" && break
	sleep 0.1
done
exit \$rc
SH
chmod +x "$TMP/late-trainer"
"$HP" run "$MODEL" --data synthetic --samples 256 --batch 16 --steps 2 --deadline 1h \
	--trainer "$TMP/late-trainer" >"$TMP/id" 2>"$TMP/err"
ID=$(cat "$TMP/id")
poll_for 600 grep -qs '"completed"' "$HETPOOL_JOBS_DIR/$ID/out/results.json"
expect_status fail_late_cancel 0 "$HP" cancel "$ID"
pycheck fail_late_cancel_succeeded "$HETPOOL_JOBS_DIR/$ID/job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "succeeded" and j["results"]["state"] == "completed", (j["state"], j["reason"])
assert "the cancel came after the trainer's last step" in j["reason"], j["reason"]
PY

# Staging (local backend) stops on a cancel: here while it waits for the
# staging folder's lock, which another holds; and under the lock it
# removes the temporaries a killed stager left (a cancel waited for the
# copy to end, then killed the supervisor, which left its temporary for
# ever, until 3 December)
tiny_idx "$TMP/idx"
stage_run() { run_wait "$MODEL" --data "$TMP/idx" --samples 64 --batch 16 --steps 2 --deadline 1h "$@"; }
expect_status fail_stage_first 0 stage_run --wait --json
DEST=$("$PY" -c 'import json,sys; print(json.load(open(json.load(open(sys.argv[1]))["dir"] + "/launch.json"))["stage"]["dest"])' "$TMP/out")
STALE=$DEST/train-images-idx3-ubyte.gz.tmp.999999.0
head -c 100000 /dev/zero >"$STALE"
# the holder says it has the lock (a file written once flock returned)
"$PY" -c 'import fcntl, sys, time
f = open(sys.argv[1], "a"); fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close(); time.sleep(120)' "$DEST/.lock" "$TMP/held" &
HOLDER=$!
poll_for 300 test -e "$TMP/held" || fail fail_stage_lock_held "the lock holder never took $DEST/.lock"
stage_run >"$TMP/id" 2>"$TMP/err"
ID=$(cat "$TMP/id")
# the cancel comes while the supervisor waits for the lock: once it has
# the lock file open (it tries for the lock straight after), as its
# /proc/PID/fd shows; a bound, not a speed assertion (600 x 0.1 s)
LOCKFILE=$(readlink -f "$DEST/.lock")
super_at_lock() {
	local pid f
	pid=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
		"$HETPOOL_JOBS_DIR/$ID/job.json" 2>/dev/null) || return 1
	for f in /proc/"$pid"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "$LOCKFILE" ] && return 0
	done
	return 1
}
poll_for 600 super_at_lock || fail fail_stage_waits_for_lock "the supervisor of job $ID never opened $DEST/.lock: $("$HP" status "$ID" 2>&1 | head -3)"
START=$SECONDS
expect_status fail_stage_cancel 0 timeout 60 "$HP" cancel "$ID"
# (the supervisor stopped itself: one that does not is killed after its
# grace, and the reason says so)
pycheck fail_stage_cancel_prompt "$HETPOOL_JOBS_DIR/$ID/job.json" "$((SECONDS - START))" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["state"] == "cancelled" and j["reason"] == "cancelled", (j["state"], j["reason"], "%s s" % sys.argv[2])
PY
[ -f "$STALE" ] && ok fail_stage_lock_kept_stale || fail fail_stage_lock_kept_stale "a temporary went without the lock"
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
expect_status fail_stage_after 0 stage_run --wait --json
[ ! -e "$STALE" ] && ok fail_stage_stale_removed || fail fail_stage_stale_removed "$(ls -la "$DEST")"

# A succeeded job whose rank log was deleted: logs says it is gone, not
# that the rank never started (until 3 December), and --rank all says so
# too (it printed nothing and exited 0)
DONE=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TMP/out")
rm -f "$HETPOOL_JOBS_DIR/$DONE"/logs/rank-*.log
expect_status fail_logs_gone 2 "$HP" logs "$DONE"
expect_err fail_logs_gone_says "no rank log for job $DONE .succeeded.: the rank ran, but its log is gone"
expect_status fail_logs_all_gone 2 "$HP" logs "$DONE" --rank all
expect_err fail_logs_all_gone_says "the log of none of its 1 rank is there"
fi

# `hetpool _stage` (the mpi and Slurm backends' staging step on a node)
# stops on SIGTERM in the middle of a copy and removes its temporary
# (until 3 December it died there, leaving the temporary to the next
# stager): a 1 GiB sparse source, SIGTERM once the copy has begun to
# write.  Stopped, not finished: the copy is not there either.
SRC=$TMP/bigdata
mkdir -p "$SRC"
if [ "$(df -Pk "$TMP" | awk 'NR == 2 {print $4}')" -gt $((3 << 20)) ] &&
	truncate -s 1G "$SRC/train-images-idx3-ubyte"; then
	"$PY" - "$SRC/train-images-idx3-ubyte" "$TMP/bigstage.json" "$TMP/bigdest" <<'PY'
import hashlib, json, os, sys
src, manifest, dest = sys.argv[1:4]
h, zero, left = hashlib.sha256(), bytes(1 << 20), os.path.getsize(src)
while left:
    n = min(left, len(zero))
    h.update(zero[:n])
    left -= n
json.dump({"version": 1, "data": os.path.dirname(src), "dest": dest,
           "files": [{"name": os.path.basename(src), "source": src,
                      "size": os.path.getsize(src), "sha256": h.hexdigest()}]},
          open(manifest, "w"))
PY
	"$HP" _stage "$TMP/bigstage.json" "$TMP/bigdest" 2>"$TMP/err" &
	STAGER=$!
	# the temporary once it holds some of the copy (a bound, not a
	# time assertion: 600 x 0.05 s)
	for _ in $(seq 600); do
		tmpf=$(ls "$TMP"/bigdest/train-images-idx3-ubyte.tmp.* 2>/dev/null | head -n 1)
		[ -n "$tmpf" ] && [ -s "$tmpf" ] && break
		sleep 0.05
	done
	# (a copy that ended before the SIGTERM tests nothing: said so,
	# neither passed nor failed)
	if kill -0 "$STAGER" 2>/dev/null; then
		kill -TERM "$STAGER"
		wait "$STAGER"
		rc=$?
		[ -n "$tmpf" ] && [ "$rc" = 1 ] && grep -q "^hetpool: _stage: staging was stopped$" "$TMP/err" &&
			ok fail_stage_sigterm || fail fail_stage_sigterm "exit $rc (1 expected), temporary '$tmpf': $(cat "$TMP/err")"
		left=$(ls -A "$TMP/bigdest" 2>/dev/null | grep -v '^\.lock$')
		[ -z "$left" ] && ok fail_stage_sigterm_no_temporary || fail fail_stage_sigterm_no_temporary "left: $left"
	else
		wait "$STAGER"
		rc=$?
		echo "skip fail_stage_sigterm: the copy ended (exit $rc) before the SIGTERM could come"
		echo "skip fail_stage_sigterm_no_temporary: the copy ended before the SIGTERM could come"
	fi
	rm -rf "$TMP/bigdest" "$SRC"
else
	echo "skip fail_stage_sigterm: no sparse 1 GiB file, or under 3 GiB free in $TMP"
fi

# A job file that names a pid but no start time (pid_start missing): that
# pid may be any process now; cancel and status leave it alone and take
# the supervisor as gone (cancel sent it SIGTERM until 3 December)
ID=20261203-000000-abcd
mkdir -p "$HETPOOL_JOBS_DIR/$ID/logs"
sleep 60 &
VICTIM=$!
"$PY" - "$HETPOOL_JOBS_DIR/$ID/job.json" "$VICTIM" <<'PY'
import json, sys, time
json.dump({"id": sys.argv[1].split("/")[-2], "name": None, "backend": "local",
           "state": "running", "created": time.time() - 600, "ranks": 1,
           "pid": int(sys.argv[2])}, open(sys.argv[1], "w"))
PY
"$HP" status "$ID" >/dev/null 2>&1
"$HP" cancel "$ID" >/dev/null 2>&1
sleep 0.2
if kill -0 "$VICTIM" 2>/dev/null; then ok fail_no_pid_start_spared; else fail fail_no_pid_start_spared "pid $VICTIM was signalled"; fi
kill "$VICTIM" 2>/dev/null
wait "$VICTIM" 2>/dev/null
expect_status fail_no_pid_start_status 0 "$HP" status "$ID"
grep -q '^state *failed' "$TMP/out" && grep -q 'ended without recording the outcome' "$TMP/out" &&
	ok fail_no_pid_start_gone || fail fail_no_pid_start_gone "$(head -4 "$TMP/out")"

# A job folder that is a symbolic link is refused, and nothing it points
# to is removed (remove emptied the target until 3 December)
mkdir -p "$TMP/elsewhere"
echo precious >"$TMP/elsewhere/keep.txt"
cp "$HETPOOL_JOBS_DIR/$ID/job.json" "$TMP/elsewhere/job.json"
LINK=20261203-000000-beef
sed -i "s/$ID/$LINK/" "$TMP/elsewhere/job.json"
ln -s "$TMP/elsewhere" "$HETPOOL_JOBS_DIR/$LINK"
expect_status fail_remove_symlink 2 "$HP" remove "$LINK"
expect_err fail_remove_symlink_says "is a symbolic link"
[ -f "$TMP/elsewhere/keep.txt" ] && [ -L "$HETPOOL_JOBS_DIR/$LINK" ] &&
	[ -z "$(ls -A "$HETPOOL_JOBS_DIR" | grep '^\.removing')" ] && ok fail_remove_symlink_kept ||
	fail fail_remove_symlink_kept "$(ls -la "$TMP/elsewhere" "$HETPOOL_JOBS_DIR")"
# a link inside a job folder goes, what it points to stays
echo precious >"$TMP/elsewhere/keep.txt"
ln -s "$TMP/elsewhere" "$HETPOOL_JOBS_DIR/$ID/logs/link"
expect_status fail_remove_inner_link 0 "$HP" remove "$ID"
[ -f "$TMP/elsewhere/keep.txt" ] && [ ! -e "$HETPOOL_JOBS_DIR/$ID" ] && ok fail_remove_inner_link_kept ||
	fail fail_remove_inner_link_kept "$(ls -la "$TMP/elsewhere")"

# A half-made job folder whose maker (a `hetpool run` killed while it
# filled it) is gone is removed by the next submission; one whose maker
# runs, or of another host, stays (they stayed for ever until 3 December)
sleep 0 &
DEAD=$!
wait "$DEAD"
mkdir -p "$HETPOOL_JOBS_DIR/.new-20261203-000000-dead-$DEAD@$HOST/logs" \
	"$HETPOOL_JOBS_DIR/.new-20261203-000000-live-$$@$HOST" \
	"$HETPOOL_JOBS_DIR/.new-20261203-000000-away-$DEAD@elsewhere.invalid"
run_wait "$MODEL" --data synthetic --samples 64 --batch 16 --steps 1 --deadline 1h --wait >/dev/null 2>&1
[ ! -e "$HETPOOL_JOBS_DIR/.new-20261203-000000-dead-$DEAD@$HOST" ] && ok fail_half_made_removed ||
	fail fail_half_made_removed "$(ls -a "$HETPOOL_JOBS_DIR")"
[ -d "$HETPOOL_JOBS_DIR/.new-20261203-000000-live-$$@$HOST" ] &&
	[ -d "$HETPOOL_JOBS_DIR/.new-20261203-000000-away-$DEAD@elsewhere.invalid" ] && ok fail_half_made_others_kept ||
	fail fail_half_made_others_kept "$(ls -a "$HETPOOL_JOBS_DIR")"
