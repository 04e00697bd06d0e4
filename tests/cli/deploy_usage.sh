#!/usr/bin/env bash
# CLI checks for the job commands' front door (no trainer needed: nothing
# here starts one): --help that teaches, one-line errors with exit 2 for
# bad options, plans, ids and names (escaped when they hold control
# characters), an empty jobs folder, a plan the local backend cannot run
# on this host, and the job's own steps refusing wrong arguments.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/deploy.inc"
TRUE=$(type -P true)

for c in run jobs status logs cancel; do
	expect_status "usage_${c}_help" 0 "$HP" "$c" --help
	grep -q '^exit status:' "$TMP/out" && grep -q '^usage: hetpool '"$c" "$TMP/out" &&
		ok "usage_${c}_help_text" || fail "usage_${c}_help_text" "$(head -3 "$TMP/out")"
done
"$HP" --help | grep -q '^  run PLAN|MODEL' && ok usage_main_lists_run || fail usage_main_lists_run "not in hetpool --help"

cat >"$TMP/plan.json" <<'JSON'
{"choice": {"devices": [{"node": "elsewhere-01", "type": "cpu", "count": 2, "local_batch": 8}],
 "global_batch": 16, "steps": 2}}
JSON

expect_status usage_no_args 2 "$HP" run
# a plan's reference batch is held to what the trainer takes (2^31), so a
# job is not made to fail at its start
cat >"$TMP/refplan.json" <<'JSON'
{"choice": {"devices": [{"node": "elsewhere-01", "type": "cpu", "count": 2, "local_batch": 8}],
 "global_batch": 16, "steps": 2, "lr": {"rule": "linear", "ref_batch": 2147483649}}}
JSON
expect_status usage_plan_ref_batch 2 "$HP" run "$TMP/refplan.json" --model "$MODEL" --data synthetic --trainer "$TRUE"
expect_err usage_plan_ref_batch_says "'ref_batch' = 2147483649 is out of range"
expect_status usage_no_data 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --trainer "$TRUE"
expect_err usage_no_data_says "give --data"
# a MODEL without what the recommender needs: what is missing is named
expect_status usage_model_needs_deadline 2 "$HP" run "$MODEL" --data synthetic --batch 32 --steps 5 \
	--samples 1000 --trainer "$TRUE"
expect_err usage_model_needs_deadline_says "missing: --deadline D$"
expect_status usage_model_needs_all 2 "$HP" run "$MODEL" --data synthetic --trainer "$TRUE"
expect_err usage_model_needs_all_says "missing: --batch B; --deadline D; --epochs E or --steps S; --samples N"
expect_status usage_plan_needs_model 2 "$HP" run "$TMP/plan.json" --data synthetic --trainer "$TRUE"
expect_err usage_plan_needs_model_says "give --model FILE"
# Slurm's options are checked one by one, the time limit in sbatch's forms
expect_status usage_slurm_time 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--backend slurm --time forever --trainer "$TRUE"
expect_err usage_slurm_time_says "time limit 'forever'"
expect_status usage_slurm_partition 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--backend slurm --partition 'gpu;rm' --trainer "$TRUE"
expect_err usage_slurm_partition_says "partition 'gpu;rm'"
# a list of partitions is sbatch's form: it gets past the check (to sbatch,
# here missing or not given a cluster: whatever fails next is not the
# partition)
HETPOOL_JOBS_DIR="$TMP/partlist" "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--backend slurm --partition gpu,cpu --trainer "$TRUE" >/dev/null 2>"$TMP/err"
grep -q "partition" "$TMP/err" && fail usage_slurm_partition_list "$(cat "$TMP/err")" || ok usage_slurm_partition_list
# --threads T asks Slurm for T CPUs a rank, in the script and on srun (which
# has not taken the job's --cpus-per-task since 22.05); a stand-in sbatch
# refuses the job, so nothing runs
mkdir -p "$TMP/fakebin"
printf '#!/bin/sh\necho "sbatch: error: refused by the test" >&2\nexit 1\n' >"$TMP/fakebin/sbatch"
chmod +x "$TMP/fakebin/sbatch"
PATH="$TMP/fakebin:$PATH" HETPOOL_JOBS_DIR="$TMP/cpt" "$HP" run "$TMP/plan.json" --model "$MODEL" \
	--data synthetic --backend slurm --threads 3 --trainer "$TRUE" >/dev/null 2>&1
f=$(ls "$TMP"/cpt/*/job.sbatch 2>/dev/null | head -n 1)
[ -n "$f" ] && grep -q '^#SBATCH --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=3 ' "$f" &&
	grep -q '^#   srun --mpi=pmix --cpus-per-task=3 ' "$f" && ok usage_slurm_cpus_per_task ||
	fail usage_slurm_cpus_per_task "$(cat "$f" 2>/dev/null || ls -R "$TMP/cpt")"
# a CPU component asks for the memory its plan predicts (memory_bytes, per
# rank 1.25 x that and 1024 MiB, times its ranks on a node); a GPU one, or
# a plan that does not say, leaves --mem to the site
cat >"$TMP/memplan.json" <<'JSON'
{"choice": {"devices": [
  {"node": "c-01", "type": "cpu", "count": 2, "local_batch": 10, "memory_bytes": 104857600},
  {"node": "g-01", "type": "t4", "count": 1, "local_batch": 12, "memory_bytes": 734003200}],
 "global_batch": 32, "steps": 3}}
JSON
PATH="$TMP/fakebin:$PATH" HETPOOL_JOBS_DIR="$TMP/mem" "$HP" run "$TMP/memplan.json" --model "$MODEL" \
	--data synthetic --backend slurm --trainer "$TRUE" >/dev/null 2>&1
f=$(ls "$TMP"/mem/*/job.sbatch 2>/dev/null | head -n 1)
[ -n "$f" ] && grep -q '^#SBATCH --nodes=1 --ntasks=2 --ntasks-per-node=2 --mem=2298M ' "$f" &&
	[ "$(grep -c -- '--mem=' "$f")" = 1 ] && ok usage_slurm_cpu_mem ||
	fail usage_slurm_cpu_mem "$(cat "$f" 2>/dev/null || ls -R "$TMP/mem")"
# --deadline D reaches sbatch (none did until 3 December): --deadline, the
# time D from the submission (local time, as sbatch reads it), and, from
# the plan's predicted_time_s (for its steps, scaled to --steps), --time of
# 1.5 x that, at least 10 minutes, no longer than the time to the
# deadline; a --time given wins, and without --deadline neither is added.
# slurm_script TAG ARGS...: run the plan (1200 s predicted for 100 steps)
# through the refusing stand-in; $TMP/TAG.sbatch is its script, $TMP/TAG.t0
# and .t1 the Unix times around the run.
cat >"$TMP/dlplan.json" <<'JSON'
{"choice": {"devices": [{"node": "c-01", "type": "cpu", "count": 2, "local_batch": 8}],
 "global_batch": 16, "steps": 100, "predicted_time_s": 1200}}
JSON
slurm_script() {
	local tag=$1 plan=$TMP/dlplan.json
	shift
	[ "$1" = --plan ] && plan=$2 && shift 2
	date +%s >"$TMP/$tag.t0"
	PATH="$TMP/fakebin:$PATH" HETPOOL_JOBS_DIR="$TMP/$tag" "$HP" run "$plan" --model "$MODEL" \
		--data synthetic --backend slurm --trainer "$TRUE" "$@" >/dev/null 2>&1
	date +%s >"$TMP/$tag.t1"
	cp "$(ls "$TMP/$tag"/*/job.sbatch 2>/dev/null | head -n 1)" "$TMP/$tag.sbatch" 2>/dev/null
}
# slurm_times NAME TAG D_S TIME...: TAG's script's --deadline is D_S
# seconds after its run (within its start and end; "-": none), and its
# --time is one of TIME ("-": none)
slurm_times() {
	pycheck "$1" "$TMP/$2.sbatch" "$(cat "$TMP/$2.t0")" "$(cat "$TMP/$2.t1")" "${@:3}" <<'PY'
import re, sys, time
text = open(sys.argv[1]).read()
t0, t1, d = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
times = re.findall(r"(?m)^#SBATCH --time=(\S+)$", text)
dl = re.findall(r"(?m)^#SBATCH --deadline=(\S+)$", text)
if d == "-":
    assert not dl, dl
else:
    assert len(dl) == 1, text
    at = time.mktime(time.strptime(dl[0], "%Y-%m-%dT%H:%M:%S"))
    assert t0 + int(d) <= at <= t1 + int(d), (dl[0], at, t0, t1)
want = sys.argv[5:]
if want == ["-"]:
    assert not times, times
else:
    assert len(times) == 1 and times[0] in want, (times, want)
assert "--time-min" not in text, text
PY
}
slurm_script dl2h --deadline 2h
slurm_times usage_slurm_deadline dl2h 7200 30
slurm_script dlsteps --deadline 2h --steps 50
slurm_times usage_slurm_deadline_steps dlsteps 7200 15
slurm_script dlshort --deadline 2h --steps 2
slurm_times usage_slurm_deadline_least dlshort 7200 10
slurm_script dltight --deadline 20m
slurm_times usage_slurm_deadline_tight dltight 1200 19 20
slurm_script dlgiven --deadline 2h --time 45
slurm_times usage_slurm_deadline_time_given dlgiven 7200 45
slurm_script dlnone
slurm_times usage_slurm_no_deadline dlnone - -
sed 's/, "predicted_time_s": 1200//' "$TMP/dlplan.json" >"$TMP/dlplan-np.json"
slurm_script dlnopred --plan "$TMP/dlplan-np.json" --deadline 2h
slurm_times usage_slurm_deadline_no_prediction dlnopred 7200 -
# sbatch expands '%' in --output and cuts an #SBATCH line at '#'
for bad in 'jp%j' 'jh#x'; do
	HETPOOL_JOBS_DIR="$TMP/$bad" expect_status "usage_slurm_jobs_dir_${bad//[%#]/_}" 2 "$HP" run "$TMP/plan.json" \
		--model "$MODEL" --data synthetic --backend slurm --trainer "$TRUE"
	expect_err "usage_slurm_jobs_dir_${bad//[%#]/_}_says" "no blanks, quotes, '%' or '#'"
done
# the plan form checks the model before any job is made
printf '{"name": "broken", "layers": [' >"$TMP/broken.json"
expect_status usage_plan_bad_model 2 "$HP" run "$TMP/plan.json" --model "$TMP/broken.json" --data synthetic \
	--trainer "$TRUE"
expect_err usage_plan_bad_model_says "broken.json"
[ -z "$(ls -A "$HETPOOL_JOBS_DIR" 2>/dev/null)" ] && ok usage_plan_bad_model_no_job ||
	fail usage_plan_bad_model_no_job "a job was made: $(ls "$HETPOOL_JOBS_DIR")"
expect_status usage_bad_backend 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic --backend ssh
expect_status usage_steps_and_epochs 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--steps 2 --epochs 1
expect_status usage_no_trainer 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--trainer "$TMP/nonexistent"
expect_err usage_no_trainer_says "no hetpool-train at"
# the trainer must be a regular executable file: a folder passed the
# X_OK check until 3 December (and its ranks failed at exec), here on a
# plan for this host that would otherwise be started
cat >"$TMP/hostplan.json" <<JSON
{"choice": {"devices": [{"node": "$HOST", "type": "cpu", "count": 1, "local_batch": 16}],
 "global_batch": 16, "steps": 2}}
JSON
mkdir -p "$TMP/trainer-dir"
expect_status usage_trainer_folder 2 "$HP" run "$TMP/hostplan.json" --model "$MODEL" --data synthetic \
	--trainer "$TMP/trainer-dir"
expect_err usage_trainer_folder_says "no hetpool-train at '$TMP/trainer-dir' \(a folder, not an executable file\)"
printf '#!/bin/sh\n' >"$TMP/not-exec"
HETPOOL_TRAINER="$TMP/not-exec" expect_status usage_trainer_not_exec 2 "$HP" run "$TMP/hostplan.json" \
	--model "$MODEL" --data synthetic
expect_err usage_trainer_not_exec_says "no hetpool-train at '$TMP/not-exec' \(not executable\)"
# A global batch larger than the data's training samples is refused at
# submission, as the MODEL form refuses one larger than --samples: one
# line naming both, exit 2, no job (the PLAN form made the job, which
# failed at the trainer's start, until 3 December).  synthetic: the
# trainer's 16384; a folder: its own count (tiny_idx: 64).
cat >"$TMP/bigplan.json" <<JSON
{"choice": {"devices": [{"node": "$HOST", "type": "cpu", "count": 2, "local_batch": 10000}],
 "global_batch": 20000, "steps": 2}}
JSON
HETPOOL_JOBS_DIR="$TMP/big" expect_status usage_plan_batch_over_synthetic 2 "$HP" run "$TMP/bigplan.json" \
	--model "$MODEL" --data synthetic --trainer "$TRUE"
expect_err usage_plan_batch_over_synthetic_says \
	"^hetpool: run: '[^']*bigplan.json': global_batch 20000 is more than the 16384 training samples of --data synthetic$"
tiny_idx "$TMP/idx"
cat >"$TMP/idxplan.json" <<JSON
{"choice": {"devices": [{"node": "$HOST", "type": "cpu", "count": 2, "local_batch": 40}],
 "global_batch": 80, "steps": 2}}
JSON
HETPOOL_JOBS_DIR="$TMP/big" expect_status usage_plan_batch_over_folder 2 "$HP" run "$TMP/idxplan.json" \
	--model "$MODEL" --data "$TMP/idx" --trainer "$TRUE"
expect_err usage_plan_batch_over_folder_says "global_batch 80 is more than the 64 training samples of --data $TMP/idx$"
# the MODEL form checks --batch against the data too, not only against
# --samples (which may say more than synthetic data holds)
HETPOOL_JOBS_DIR="$TMP/big" expect_status usage_model_batch_over_synthetic 2 "$HP" run "$MODEL" \
	--data synthetic --samples 100000 --batch 20000 --steps 2 --deadline 1h --trainer "$TRUE"
expect_err usage_model_batch_over_synthetic_says "--batch 20000 is more than the 16384 training samples of --data synthetic$"
HETPOOL_JOBS_DIR="$TMP/big" expect_status usage_model_batch_over_samples 2 "$HP" run "$MODEL" \
	--data synthetic --samples 100 --batch 200 --steps 2 --deadline 1h --trainer "$TRUE"
expect_err usage_model_batch_over_samples_says "--batch 200 is more than the 100 training samples that --samples gives$"
[ -z "$(ls -A "$TMP/big" 2>/dev/null)" ] && ok usage_batch_over_no_job || fail usage_batch_over_no_job "$(ls -A "$TMP/big")"
# a batch of all the samples is the trainer's to take: accepted
sed 's/"local_batch": 40}/"local_batch": 32}/; s/"global_batch": 80/"global_batch": 64/' "$TMP/idxplan.json" >"$TMP/idxplan64.json"
HETPOOL_JOBS_DIR="$TMP/fits" expect_status usage_plan_batch_all_samples 0 "$HP" run "$TMP/idxplan64.json" \
	--model "$MODEL" --data "$TMP/idx" --backend kubernetes --no-apply
# the trainer's own count for synthetic data is the one run holds it to
if have_trainer usage_trainer_synthetic_samples; then
	expect_status usage_trainer_synthetic_samples 2 "$TRAINER" --model "$MODEL" --data synthetic --batch 16385 \
		--steps 1 --out "$TMP/synth-out"
	expect_err usage_trainer_synthetic_samples_says "the 16384 training samples$"
fi
expect_status usage_bad_data 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data "$TMP/nonexistent" \
	--trainer "$TRUE"
mkdir -p "$TMP/empty"
expect_status usage_data_folder_without_files 2 "$HP" run "$TMP/plan.json" --model "$MODEL" \
	--data "$TMP/empty" --backend kubernetes --no-apply
expect_err usage_data_folder_says "no 'train-images-idx3-ubyte'"
expect_status usage_local_other_host 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--trainer "$TRUE"
expect_err usage_local_other_host_says "the local backend runs on this host"
printf '{"choice": null, "feasible": false, "reason": "nothing fits"}' >"$TMP/none.json"
expect_status usage_plan_without_choice 2 "$HP" run "$TMP/none.json" --model "$MODEL" --data synthetic \
	--trainer "$TRUE"
expect_err usage_plan_without_choice_says "no choice: nothing fits"
printf '{"choice": {"devices": [{"node": "a\\u001b[31mb", "type": "t4", "count": 1, "local_batch": 8}]}}' >"$TMP/esc.json"
expect_status usage_plan_escape 2 "$HP" run "$TMP/esc.json" --model "$MODEL" --data synthetic \
	--trainer "$TRUE"
if grep -q $'\x1b' "$TMP/err"; then fail usage_plan_escape_escaped "raw ESC on stderr"; else ok usage_plan_escape_escaped; fi
expect_status usage_bad_name 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply --name 'a b'
expect_status usage_bad_gres_map 2 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--backend slurm --trainer "$TRUE" --gres-map t4
# Nothing was made by refused submissions.
expect_status usage_jobs_empty 0 "$HP" jobs --json
[ "$(tr -d ' \n' <"$TMP/out")" = "[]" ] && ok usage_jobs_empty_list || fail usage_jobs_empty_list "$(cat "$TMP/out")"

expect_status usage_status_bad_id 2 "$HP" status '../etc'
expect_status usage_status_unknown 2 "$HP" status 20200101-000000-0000
expect_err usage_status_unknown_says "no job '20200101-000000-0000'"
expect_status usage_cancel_unknown 2 "$HP" cancel 20200101-000000-0000
expect_status usage_logs_unknown 2 "$HP" logs 20200101-000000-0000
expect_status usage_logs_bad_rank 2 "$HP" logs 20200101-000000-0000 --rank x
expect_status usage_jobs_bad_state 2 "$HP" jobs --state done
expect_status usage_jobs_arg 2 "$HP" jobs extra
expect_status usage_status_json_flag_on_logs 2 "$HP" logs 20200101-000000-0000 --json

# A job that exists: rank out of range, and cancel once it has ended.
expect_status usage_k8s_job 0 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply
ID=$(cat "$TMP/out")
expect_status usage_logs_rank_range 2 "$HP" logs "$ID" --rank 2
expect_err usage_logs_rank_range_says "has 2 ranks"
expect_status usage_cancel_once 0 "$HP" cancel "$ID"
expect_status usage_cancel_twice 2 "$HP" cancel "$ID"
expect_err usage_cancel_twice_says "already been cancelled"

# A job whose job.json is damaged is named, not silently left out; the
# other jobs are still listed, and stdout stays a JSON array.
expect_status usage_k8s_job_damaged 0 "$HP" run "$TMP/plan.json" --model "$MODEL" --data synthetic \
	--backend kubernetes --no-apply
BAD=$(cat "$TMP/out")
printf '{"id": "%s", "state": ' "$BAD" >"$HETPOOL_JOBS_DIR/$BAD/job.json"
expect_status usage_jobs_damaged 1 "$HP" jobs --json
expect_err usage_jobs_damaged_says "job $BAD is left out"
if /usr/bin/python3 -c 'import json,sys; ids=[j["id"] for j in json.load(open(sys.argv[1]))]; sys.exit(0 if ids == [sys.argv[2]] else 1)' \
	"$TMP/out" "$ID"; then ok usage_jobs_damaged_lists_rest; else fail usage_jobs_damaged_lists_rest "$(cat "$TMP/out")"; fi
# a stray file named like a job is not one: passed over, not named (the
# exit 1 is the damaged job above, still there)
touch "$HETPOOL_JOBS_DIR/20200101-000000-0001"
expect_status usage_jobs_stray_file 1 "$HP" jobs
if grep -q "20200101-000000-0001" "$TMP/err"; then fail usage_jobs_stray_file_passed_over "$(cat "$TMP/err")"; else ok usage_jobs_stray_file_passed_over; fi
rm -f "$HETPOOL_JOBS_DIR/20200101-000000-0001"
# nor is a folder without job.json: status, logs and cancel say so
mkdir "$HETPOOL_JOBS_DIR/20200101-000000-0002"
for c in status logs cancel; do
	expect_status "usage_${c}_folder_not_job" 2 "$HP" "$c" 20200101-000000-0002
	expect_err "usage_${c}_folder_not_job_says" "no job '20200101-000000-0002' in '.*' \(its folder there holds no job.json\)"
done
rmdir "$HETPOOL_JOBS_DIR/20200101-000000-0002"
expect_status usage_status_damaged 1 "$HP" status "$BAD"
expect_status usage_logs_damaged 1 "$HP" logs "$BAD"
rm -rf "${HETPOOL_JOBS_DIR:?}/$BAD"

# The job's own steps, run by its launchers, refuse wrong arguments.
expect_status usage_helper_args 2 "$HP" _rank
expect_status usage_helper_stage 2 "$HP" _stage "$TMP/nonexistent.json" "$TMP/dest"
expect_status usage_jobs_dir_flag 0 "$HP" jobs --jobs-dir "$TMP/other"
[ -d "$TMP/other" ] && ok usage_jobs_dir_made || fail usage_jobs_dir_made "no $TMP/other"
# a relative jobs folder through '..' is the folder it names (it was
# refused as "not an absolute path" until 3 December)
mkdir -p "$TMP/here/sub"
(cd "$TMP/here/sub" && "$HP" jobs --jobs-dir ../up >/dev/null 2>"$TMP/err") &&
	[ -d "$TMP/here/up" ] && ok usage_jobs_dir_dotdot || fail usage_jobs_dir_dotdot "$(cat "$TMP/err")"
(cd "$TMP/here/sub" && HETPOOL_JOBS_DIR=../../up2 "$HP" jobs >/dev/null 2>"$TMP/err") &&
	[ -d "$TMP/up2" ] && ok usage_jobs_dir_dotdot_env || fail usage_jobs_dir_dotdot_env "$(cat "$TMP/err")"
# 'status ID' in a jobs folder this user may not look in says so (it said
# "no job 'ID'" until 3 December): as user 65534, on a root-only folder
asnobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && "${asnobody[@]}" "$HP" --help >/dev/null 2>&1 &&
	closed=$(mktemp -d /tmp/hp-closed.XXXXXX); then
	chmod 700 "$closed"
	expect_status usage_status_closed_folder 1 "${asnobody[@]}" "$HP" status 20261203-000000-abcd --jobs-dir "$closed"
	expect_err usage_status_closed_folder_says "cannot read '$closed/20261203-000000-abcd': Permission denied"
	rm -rf "$closed"
else
	echo "skip usage_status_closed_folder: needs root, setpriv, and a hetpool that user 65534 can run"
fi
