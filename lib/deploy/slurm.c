/*
 * slurm.c - the slurm backend.  A plan becomes one batch job with one
 * component per element of the plan (nodes holding the same number of
 * devices of one type): a plan of mixed GPU types is a heterogeneous job,
 * each component asking --gres=gpu:TYPE:N per node.  The batch script is
 * not a shell script: its interpreter is `hetpool _slurm-batch`, which
 * stages the data on every node (srun, one task per node and component),
 * then starts every rank with one srun over all components (PMIx, so they
 * form one MPI world), recording starting, running and the outcome.  The
 * state otherwise comes from squeue, then sacct (`sacct -c`, the jobcomp
 * file, when there is no accounting storage); cancel is scancel.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

/* The batch script's line that names the job directory. */
#define JOBDIR_LINE "# hetpool-job: "

static bool plain_path(const char *s)
{
	return hp__path_ok(s) && !strpbrk(s, " \t\"'\\$`");
}

static bool opt_ok(const char *s, const char *extra)
{
	if (!*s || strlen(s) > 63)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr(extra, *s)))
			return false;
	return true;
}

/* A time limit in one of sbatch's forms: M, M:S, H:M:S, D-H, D-H:M,
 * D-H:M:S (digits), or UNLIMITED / INFINITE. */
static bool slurm_time_ok(const char *t)
{
	const char *p = t, *dash = strchr(t, '-');
	int parts = 0;

	if (!strcmp(t, "UNLIMITED") || !strcmp(t, "INFINITE") ||
	    !strcmp(t, "unlimited") || !strcmp(t, "infinite"))
		return true;
	if (dash) {
		if (dash == t || strspn(t, "0123456789") != (size_t)(dash - t))
			return false;
		p = dash + 1; /* D-H[:M[:S]] */
	}
	for (;;) {
		size_t k = strspn(p, "0123456789");
		if (k == 0 || k > 9)
			return false;
		parts++;
		p += k;
		if (*p == '\0')
			break;
		if (*p != ':')
			return false;
		p++;
	}
	return parts <= 3;
}

static int slurm_check(struct hp__submit *s, struct hp_error *err)
{
	const struct hp_submit_opts *o = s->opts;
	char path[512], gres[HP_NAME_MAX];
	int rc;

	if (!plain_path(s->d->hetpool) || strlen(s->d->hetpool) > 100)
		return hp_error_set(
		    err, HP_EINVAL,
		    "the hetpool program's path '%s' must be at "
		    "most 100 bytes without blanks or quotes: "
		    "it is the batch script's interpreter",
		    s->d->hetpool);
	/* sbatch expands '%' in --output (%j: the job id) and a '#' ends an
	 * #SBATCH line's options (the rest is a comment) */
	if (!plain_path(s->d->jobs_dir) || strpbrk(s->d->jobs_dir, "%#"))
		return hp_error_set(err, HP_EINVAL,
				    "the jobs folder '%s' must have no blanks, "
				    "quotes, '%%' or '#': #SBATCH lines name "
				    "it",
				    s->d->jobs_dir);
	{
		const struct {
			const char *what, *value, *extra;
		} opts[] = {{"partition", o->partition, "-_.,"},
			    {"account", o->account, "-_."},
			    {"Slurm MPI type", o->slurm_mpi, "-_"}};
		for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
			if (opts[k].value &&
			    !opt_ok(opts[k].value, opts[k].extra))
				return hp_error_set(err, HP_EINVAL,
						    "%s '%.64s': give letters, "
						    "digits and '%s'",
						    opts[k].what, opts[k].value,
						    opts[k].extra);
	}
	if (o->time_limit && !slurm_time_ok(o->time_limit))
		return hp_error_set(err, HP_EINVAL,
				    "time limit '%.64s': give one of sbatch's "
				    "forms, minutes (90), H:M:S (1:30:00), "
				    "D-H[:M[:S]] (2-12) or UNLIMITED",
				    o->time_limit);

	if (o->deadline_at_s &&
	    !(isfinite(o->deadline_at_s) && o->deadline_at_s > 0 &&
	      o->deadline_at_s < 1e11))
		return hp_error_set(err, HP_EINVAL,
				    "deadline %g is not a Unix time",
				    o->deadline_at_s);
	if (o->deadline_at_s && o->deadline_at_s <= (double)time(NULL))
		return hp_error_set(err, HP_EINVAL,
				    "the deadline (Unix time %.0f) has passed",
				    o->deadline_at_s);
	for (int c = 0; c < s->plan->ncomps; c++)
		if (s->plan->comps[c].gpu &&
		    (rc = hp__map_get(o->gres_map, s->plan->comps[c].type, gres,
				      sizeof(gres), "GRES map", err)))
			return rc;
	if (!hp__which(s->d->sbatch, path, sizeof(path)))
		return hp_error_set(err, HP_EINVAL,
				    "no '%s' on PATH (Debian package "
				    "slurm-client)",
				    s->d->sbatch);
	return 0;
}

int64_t hp__slurm_time_limit_min(double predicted_s, double window_s)
{
	double limit_min, cap_min;

	if (!(window_s > 0) || !(isfinite(predicted_s) && predicted_s > 0))
		return 0;
	limit_min = ceil(
	    fmax(HP__SLURM_TIME_FACTOR * predicted_s, HP__SLURM_TIME_LEAST_S) /
	    60);
	cap_min = fmax(floor(window_s / 60), 1);
	return (int64_t)fmin(limit_min, cap_min);
}

/* What the plan predicts for the training this job runs (s): its
 * predicted_time_s for its steps, scaled to the steps given; NaN when not
 * known (no prediction, or epochs of the trainer's own data). */
static double predicted_run_s(const struct hp__submit *s)
{
	const struct hp_plan *p = s->plan;
	const struct hp_train_opts *t = s->train;

	if (!isfinite(p->predicted_time_s) || t->epochs)
		return NAN;
	if (!t->steps || t->steps == p->steps)
		return p->predicted_time_s;
	if (p->steps <= 0)
		return NAN;
	return p->predicted_time_s * (double)t->steps / (double)p->steps;
}

char *hp__slurm_script(const struct hp__submit *s, struct hp_error *err)
{
	const struct hp__launch *l = &s->launch;
	const struct hp_submit_opts *o = s->opts;
	struct hp_buf b;
	char line[1024];

	hp_buf_init(&b, 1u << 20);
	hp_buf_printf(&b, "#!%s _slurm-batch\n", s->d->hetpool);
	hp_buf_printf(&b, "#SBATCH --job-name=hetpool-%s\n", l->id);
	hp_buf_printf(&b, "#SBATCH --output=%s/%s\n", l->jobdir,
		      HP_LAUNCHER_LOG);
	hp_buf_printf(&b, "#SBATCH --open-mode=append\n");
	hp_buf_printf(&b, "#SBATCH --chdir=%s\n", l->jobdir);
	if (o->partition)
		hp_buf_printf(&b, "#SBATCH --partition=%s\n", o->partition);
	if (o->account)
		hp_buf_printf(&b, "#SBATCH --account=%s\n", o->account);
	if (o->time_limit)
		hp_buf_printf(&b, "#SBATCH --time=%s\n", o->time_limit);
	if (o->deadline_at_s > 0) {
		/* sbatch reads the time as local time, as localtime_r()
		 * writes it (the same environment, TZ included) */
		time_t at = (time_t)o->deadline_at_s, now = time(NULL);
		struct tm tm;
		char when[32];
		int64_t limit_min = 0;
		if (!localtime_r(&at, &tm) ||
		    !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm)) {
			hp_buf_release(&b);
			hp_error_set(err, HP_EINVAL,
				     "deadline %.0f: not a local time",
				     o->deadline_at_s);
			return NULL;
		}
		hp_buf_printf(&b, "#SBATCH --deadline=%s\n", when);
		if (!o->time_limit)
			limit_min = hp__slurm_time_limit_min(
			    predicted_run_s(s), o->deadline_at_s - (double)now);
		if (limit_min > 0)
			hp_buf_printf(&b, "#SBATCH --time=%lld\n",
				      (long long)limit_min);
	}
	for (int c = 0; c < l->ncomps; c++) {
		const struct hp__launch_comp *x = &l->comps[c];
		if (c)
			hp_buf_adds(&b, "#SBATCH hetjob\n");
		hp_buf_printf(&b,
			      "#SBATCH --nodes=%d --ntasks=%d "
			      "--ntasks-per-node=%d",
			      x->nnodes, x->nranks, x->per_node);
		/* each rank's CPUs: without them Slurm gives a task the
		 * site's default, usually 1 CPU, and the trainer's threads
		 * follow its CPU set */
		if (s->train->threads > 0)
			hp_buf_printf(&b, " --cpus-per-task=%d",
				      s->train->threads);
		/* a CPU rank's memory, from the plan's prediction
		 * (hp__comp_mem_mib()); else the site's default */
		if (x->mem_mib > 0)
			hp_buf_printf(&b, " --mem=%lldM",
				      (long long)x->mem_mib * x->per_node);
		if (x->gpu)
			hp_buf_printf(&b, " --gres=gpu:%s:%d", x->gres,
				      x->per_node);
		hp_buf_printf(&b, "   # %d x %s per node\n", x->per_node,
			      x->type);
	}
	hp_buf_printf(&b, "%s%s\n", JOBDIR_LINE, l->jobdir);
	hp_buf_printf(&b,
		      "# Written by hetpool.  Its interpreter, `hetpool "
		      "_slurm-batch`, stages the data on\n# every node, then "
		      "starts the ranks with:\n#   %s\n",
		      hp__argv_str(l->launcher, line, sizeof(line)));
	if (b.len >= b.cap) {
		hp_buf_release(&b);
		hp_error_set(err, HP_ETOOBIG, "the batch script is too long");
		return NULL;
	}
	if (!b.data)
		hp_error_set(err, HP_ENOMEM, "out of memory");
	return hp_buf_detach(&b);
}

static int slurm_prepare(struct hp__submit *s, struct hp_error *err)
{
	struct hp__launch *l = &s->launch;
	struct hp__argv a = {0};
	char model[HP_DEPLOY_PATH_MAX + 32], out[HP_DEPLOY_PATH_MAX + 32];
	char path[HP_DEPLOY_PATH_MAX + 32], *script;
	const char *ext = strstr(s->train->model, ".onnx") ? "onnx" : "json";
	int rc;

	if ((rc = hp__path(model, sizeof(model), err, "%s/model.%s",
			   s->job->dir, ext)) ||
	    (rc = hp__path(out, sizeof(out), err, "%s/out", s->job->dir)) ||
	    (rc = hp__trainer_argv(s, s->opts->trainer, model,
				   l->stage_manifest[0] ? l->stage_dest
							: "synthetic",
				   out, l, err)))
		return rc;
	hp__argv_add(&a, "srun");
	if (l->ncomps > 1) {
		struct hp_buf g;
		hp_buf_init(&g, 1u << 16);
		hp_buf_adds(&g, "--het-group=");
		for (int c = 0; c < l->ncomps; c++)
			hp_buf_printf(&g, "%s%d", c ? "," : "", c);
		hp__argv_add(&a, hp_buf_str(&g));
		hp_buf_release(&g);
	}
	hp__argv_addf(&a, "--mpi=%s", l->slurm_mpi);
	/* srun has not taken the job's --cpus-per-task since Slurm 22.05 */
	if (s->train->threads > 0)
		hp__argv_addf(&a, "--cpus-per-task=%d", s->train->threads);
	hp__argv_add(&a, "--kill-on-bad-exit=1");
	hp__argv_add(&a, s->d->hetpool);
	hp__argv_add(&a, "_rank");
	hp__argv_add(&a, s->job->dir);
	if (!(l->launcher = hp__argv_take(&a)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if (!(script = hp__slurm_script(s, err)))
		return err->code;
	if (!(rc = hp__path(path, sizeof(path), err, "%s/job.sbatch",
			    s->job->dir)))
		rc = hp_write_file_atomic(path, script, strlen(script), 0755,
					  err);
	free(script);
	return rc;
}

static void set_slurm_id(struct hp_job *j, void *ud)
{
	snprintf(j->slurm_id, sizeof(j->slurm_id), "%s", (const char *)ud);
}

static int slurm_start(struct hp__submit *s, struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 32], id[32], line[300];
	char *argv[] = {s->d->sbatch, "--parsable", path, NULL};
	struct hp_buf out, eout;
	int status, rc;
	size_t n;

	if ((rc = hp__path(path, sizeof(path), err, "%s/job.sbatch",
			   s->job->dir)))
		return rc;
	hp_buf_init(&out, 1u << 16);
	hp_buf_init(&eout, 1u << 20);
	rc = hp__run(argv, s->d->cmd_timeout_s, &out, &eout, &status, err);
	if (rc && strstr(err->msg, "took more than")) {
		/* no answer in time: Slurm may have queued it all the same;
		 * its batch step then sees the job failed and ends (the
		 * advice first: a message is 255 characters) */
		char m[sizeof(err->msg)];
		snprintf(m, sizeof(m), "%s", err->msg);
		rc = hp_error_set(err, rc,
				  "sbatch did not answer in time (should Slurm "
				  "have queued the job all the same, its batch "
				  "step ends without training): %s",
				  m);
	}
	if (!rc && status != 0)
		rc = hp_error_set(
		    err, HP_EIO, "sbatch refused the job: %s",
		    hp__last_line(hp_buf_str(&eout), line, sizeof(line)));
	if (!rc) {
		/* "ID" or "ID;CLUSTER" */
		n = strspn(hp_buf_str(&out), "0123456789");
		if (n == 0 || n >= sizeof(id))
			rc = hp_error_set(err, HP_EIO,
					  "sbatch answered '%s', not a job id",
					  hp__last_line(hp_buf_str(&out), line,
							sizeof(line)));
		else
			snprintf(id, sizeof(id), "%.*s", (int)n,
				 hp_buf_str(&out));
	}
	hp_buf_release(&out);
	hp_buf_release(&eout);
	if (rc)
		return rc;
	return hp__job_update(s->job->dir, -1, NULL, set_slurm_id, id, NULL,
			      err);
}

/* ---- squeue and sacct */

/* Whether a JobID field is the job's allocation or one of its components
 * ("ID", "ID+K"), not a step ("ID.batch", "ID+K.0"). */
static bool is_component(const char *f, size_t n, const char *id)
{
	size_t k = strlen(id);

	if (n < k || strncmp(f, id, k))
		return false;
	if (n == k)
		return true;
	if (f[k] != '+' || n == k + 1)
		return false;
	for (size_t i = k + 1; i < n; i++)
		if (f[i] < '0' || f[i] > '9')
			return false;
	return true;
}

static void count_state(struct hp__slurm_state *st, const char *state,
			const char *reason, int exit_code)
{
	static const char *const pending[] = {
	    "PENDING",	   "CONFIGURING",  "REQUEUED",
	    "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING",
	    "SUSPENDED",   "STOPPED",	   NULL};
	static const char *const failed[] = {
	    "FAILED",	 "TIMEOUT",	  "NODE_FAIL", "OUT_OF_MEMORY",
	    "BOOT_FAIL", "DEADLINE",	  "PREEMPTED", "SPECIAL_EXIT",
	    "REVOKED",	 "LAUNCH_FAILED", NULL};

	st->ncomps++;
	if (exit_code && !st->exit_code)
		st->exit_code = exit_code;
	if (!strcmp(state, "COMPLETED")) {
		st->completed++;
		return;
	}
	if (!strncmp(state, "CANCELLED", 9)) {
		st->cancelled++;
		return;
	}
	for (int i = 0; failed[i]; i++)
		if (!strcmp(state, failed[i])) {
			if (!st->failed++) {
				snprintf(st->first_bad, sizeof(st->first_bad),
					 "%s", state);
				snprintf(st->reason, sizeof(st->reason), "%s",
					 reason);
			}
			return;
		}
	for (int i = 0; pending[i]; i++)
		if (!strcmp(state, pending[i])) {
			if (!st->pending++ && !st->failed)
				snprintf(st->reason, sizeof(st->reason), "%s",
					 reason);
			return;
		}
	/* RUNNING, COMPLETING, and states newer than this code */
	st->running++;
}

/* Split "a|b|c" into at most 3 fields of a line (the rest stays in the
 * last); returns how many. */
static int split3(const char *line, size_t len, const char *f[3], size_t fl[3])
{
	int n = 0;
	const char *p = line, *end = line + len;

	while (n < 3) {
		const char *bar =
		    n < 2 ? memchr(p, '|', (size_t)(end - p)) : NULL;
		f[n] = p;
		fl[n] = bar ? (size_t)(bar - p) : (size_t)(end - p);
		n++;
		if (!bar)
			break;
		p = bar + 1;
	}
	return n;
}

static bool word_ok(const char *s, size_t n)
{
	if (n == 0 || n >= 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == ' ' ||
		      (s[i] >= 'a' && s[i] <= 'z')))
			return false;
	return true;
}

static int parse_lines(const char *text, const char *id, bool sacct,
		       struct hp__slurm_state *st, struct hp_error *err)
{
	const char *p = text;
	int lineno = 0;

	memset(st, 0, sizeof(*st));
	while (*p) {
		const char *end = strchr(p, '\n'), *f[3];
		size_t len = end ? (size_t)(end - p) : strlen(p), fl[3];
		const char *next = end ? end + 1 : p + len;
		char state[64], third[128];
		int code = 0;

		lineno++;
		if (len && p[len - 1] == '\r')
			len--;
		if (len == 0) {
			p = next;
			continue;
		}
		if (split3(p, len, f, fl) != 3 || !fl[0] ||
		    !word_ok(f[1], fl[1]))
			return hp_error_set(err, HP_EPARSE,
					    "%s output line %d is not "
					    "'JOBID|STATE|%s'",
					    sacct ? "sacct" : "squeue", lineno,
					    sacct ? "EXITCODE" : "REASON");
		snprintf(
		    third, sizeof(third), "%.*s",
		    (int)(fl[2] < sizeof(third) ? fl[2] : sizeof(third) - 1),
		    f[2]);
		if (hp_str_has_control(third))
			third[0] = '\0';
		if (sacct) {
			/* ExitCode "N:SIGNAL" */
			char *colon;
			int64_t v;
			if (!(colon = strchr(third, ':')))
				return hp_error_set(
				    err, HP_EPARSE,
				    "sacct output line %d: exit "
				    "code '%s' is not N:S",
				    lineno, third);
			*colon = '\0';
			if (hp_parse_i64(third, 0, 255, &v))
				return hp_error_set(
				    err, HP_EPARSE,
				    "sacct output line %d: exit "
				    "code is not a number",
				    lineno);
			code = (int)v;
		}
		if (is_component(f[0], fl[0], id)) {
			/* "CANCELLED by 0": the first word is the state */
			size_t wl = strcspn(f[1], " |");
			snprintf(state, sizeof(state), "%.*s",
				 (int)(wl < fl[1] ? wl : fl[1]), f[1]);
			count_state(st, state, sacct ? "" : third, code);
		}
		p = next;
	}
	return 0;
}

int hp__slurm_parse_squeue(const char *text, const char *id,
			   struct hp__slurm_state *st, struct hp_error *err)
{
	return parse_lines(text, id, false, st, err);
}

int hp__slurm_parse_sacct(const char *text, const char *id,
			  struct hp__slurm_state *st, struct hp_error *err)
{
	return parse_lines(text, id, true, st, err);
}

enum hp_job_state hp__slurm_job_state(const struct hp__slurm_state *st,
				      char *reason, size_t n)
{
	reason[0] = '\0';
	if (st->failed) {
		snprintf(
		    reason, n, "Slurm: %s%s%s%s", st->first_bad,
		    st->reason[0] && strcmp(st->reason, "None") ? " (" : "",
		    st->reason[0] && strcmp(st->reason, "None") ? st->reason
								: "",
		    st->reason[0] && strcmp(st->reason, "None") ? ")" : "");
		return HP_JOB_FAILED;
	}
	if (st->cancelled) {
		snprintf(reason, n, "cancelled (Slurm)");
		return HP_JOB_CANCELLED;
	}
	if (st->pending) {
		if (st->reason[0] && strcmp(st->reason, "None"))
			snprintf(reason, n, "waiting in Slurm's queue: %s",
				 st->reason);
		return HP_JOB_QUEUED;
	}
	if (st->running)
		return HP_JOB_STARTING;
	return HP_JOB_SUCCEEDED;
}

/* Run a query; its stderr's last line in why (for a query that failed). */
static int ask(struct hp_deploy *d, char *const argv[], struct hp_buf *out,
	       int *status, char *why, size_t nwhy, struct hp_error *err)
{
	struct hp_buf eout;
	int rc;

	hp_buf_init(&eout, 1u << 20);
	hp_buf_reset(out);
	rc = hp__run(argv, d->cmd_timeout_s, out, &eout, status, err);
	hp__last_line(hp_buf_str(&eout), why, nwhy);
	hp_buf_release(&eout);
	return rc;
}

/*
 * Did squeue answer about the job?  It exits 0 listing it, or listing
 * nothing; for an id slurmctld has dropped from memory it exits 1 with
 * "Invalid job id specified".  Any other failure (the controller down or
 * unreachable, no configuration) says nothing about the job.
 */
static bool squeue_answered(int status, const char *why)
{
	return status == 0 || strstr(why, "Invalid job id") != NULL;
}

static void set_exit(struct hp_job *j, void *ud)
{
	const struct hp__slurm_state *st = ud;

	if (j->exit_status < 0 && st->exit_code)
		j->exit_status = st->exit_code;
}

static void set_wait_reason(struct hp_job *j, void *ud)
{
	if (j->state == HP_JOB_QUEUED)
		snprintf(j->reason, sizeof(j->reason), "%s", (const char *)ud);
}

/* A started job Slurm shows pending again was requeued (a node failed):
 * it stays started (its ranks resume from the checkpoint when it runs
 * again), and its reason says it waits. */
#define REQUEUED "Slurm requeued it; it waits to run again"

static void set_requeued(struct hp_job *j, void *ud)
{
	if (j->state == HP_JOB_STARTING || j->state == HP_JOB_RUNNING)
		snprintf(j->reason, sizeof(j->reason), REQUEUED " (%.150s)",
			 (const char *)ud);
}

static void clear_requeued(struct hp_job *j, void *ud)
{
	(void)ud;
	if (!strncmp(j->reason, REQUEUED, strlen(REQUEUED)))
		j->reason[0] = '\0';
}

static int slurm_refresh(struct hp_deploy *d, struct hp_job *job,
			 struct hp_error *err)
{
	char *sq[] = {d->squeue,     "-h", "-t",       "all", "-j",
		      job->slurm_id, "-o", "%i|%T|%r", NULL};
	char *sa[] = {d->sacct, "-n",	       "-P", "-X",
		      "-j",	job->slurm_id, "-o", "JobID,State,ExitCode",
		      NULL};
	char *sc[] = {d->sacct, "-c",	       "-n", "-P",
		      "-j",	job->slurm_id, "-o", "JobID,State,ExitCode",
		      NULL};
	struct hp__slurm_state st = {0};
	struct hp_buf out;
	char reason[256], path[HP_DEPLOY_PATH_MAX + 64], why[256];
	enum hp_job_state state;
	int status = 0, rc;

	if (!job->slurm_id[0])
		return 0; /* not submitted yet (or sbatch refused it) */
	hp_buf_init(&out, HP_CMD_OUT_MAX);
	rc = ask(d, sq, &out, &status, why, sizeof(why), err);
	if (!rc && status == 0)
		rc = hp__slurm_parse_squeue(hp_buf_str(&out), job->slurm_id,
					    &st, err);
	if (!rc && !squeue_answered(status, why))
		rc = hp_error_set(err, HP_EIO,
				  "cannot ask Slurm about job %s (the state "
				  "is left as it was): squeue exited %d: %s",
				  job->slurm_id, status,
				  why[0] ? why : "no message");
	if (!rc && st.ncomps == 0) {
		/* Gone from slurmctld's memory: ask the accounting, or the
		 * job completion file when there is no accounting storage. */
		status = 0;
		rc = ask(d, sa, &out, &status, why, sizeof(why), err);
		if (!rc && status == 0)
			rc = hp__slurm_parse_sacct(hp_buf_str(&out),
						   job->slurm_id, &st, err);
		if (!rc && (status != 0 || st.ncomps == 0)) {
			rc = ask(d, sc, &out, &status, why, sizeof(why), err);
			if (!rc && status == 0)
				rc = hp__slurm_parse_sacct(
				    hp_buf_str(&out), job->slurm_id, &st, err);
		}
	}
	hp_buf_release(&out);
	if (rc)
		return rc;
	if (st.ncomps == 0) {
		/* squeue answered that it does not know the job */
		if (hp__wall_now() - job->created_s > 300)
			return hp__job_update(job->dir, HP_JOB_FAILED,
					      "Slurm no longer knows the job "
					      "(squeue, sacct)",
					      NULL, NULL, NULL, err);
		return 0;
	}
	state = hp__slurm_job_state(&st, reason, sizeof(reason));
	if (state == HP_JOB_SUCCEEDED) {
		snprintf(path, sizeof(path), "%s/out/results.json", job->dir);
		if (access(path, R_OK)) {
			state = HP_JOB_FAILED;
			snprintf(reason, sizeof(reason),
				 "Slurm says COMPLETED, but the trainer wrote "
				 "no out/results.json");
		}
	}
	if (state == HP_JOB_QUEUED) {
		/* Only why it waits can change. */
		if (job->state == HP_JOB_STARTING ||
		    job->state == HP_JOB_RUNNING)
			return hp__job_update(job->dir, -1, NULL, set_requeued,
					      reason, NULL, err);
		if (job->state != HP_JOB_QUEUED || !strcmp(job->reason, reason))
			return 0;
		return hp__job_update(job->dir, -1, NULL, set_wait_reason,
				      reason, NULL, err);
	}
	if ((state == HP_JOB_STARTING || state == HP_JOB_RUNNING) &&
	    !strncmp(job->reason, REQUEUED, strlen(REQUEUED)) &&
	    (rc = hp__job_update(job->dir, -1, NULL, clear_requeued, NULL, NULL,
				 err)))
		return rc;
	return hp__job_update(job->dir, state, reason, set_exit, &st, NULL,
			      err);
}

static void mark_cancel(struct hp_job *j, void *ud)
{
	(void)ud;
	j->cancel_requested = true;
}

static int slurm_cancel(struct hp_deploy *d, struct hp_job *job,
			struct hp_error *err)
{
	char *argv[] = {d->scancel, job->slurm_id, NULL};
	struct hp_buf eout;
	char line[256];
	int status, rc;

	if (job->slurm_id[0]) {
		hp_buf_init(&eout, 1u << 20);
		rc = hp__run(argv, d->cmd_timeout_s, NULL, &eout, &status, err);
		if (!rc && status != 0)
			rc = hp_error_set(err, HP_EIO, "scancel %s failed: %s",
					  job->slurm_id,
					  hp__last_line(hp_buf_str(&eout), line,
							sizeof(line)));
		hp_buf_release(&eout);
		if (rc)
			return rc;
	}
	return hp__job_update(job->dir, HP_JOB_CANCELLED, "cancelled",
			      mark_cancel, NULL, NULL, err);
}

/* ---- the batch job's interpreter */

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static bool digits(const char *s)
{
	return s && *s && strspn(s, "0123456789") == strlen(s) &&
	       strlen(s) <= 20;
}

/*
 * Does Slurm still run a step of this job (of any of its components:
 * SLURM_JOB_ID_HET_GROUP_K, else SLURM_JOB_ID) besides its batch and
 * extern steps (squeue --steps)?  1 yes, 0 no, -1 it cannot tell (no job
 * id, squeue failed).
 */
static int steps_running(const struct hp__launch *l)
{
	char *argv[] = {
	    (char *)l->squeue, "-h", "-s", "-j", NULL, "-o", "%i", NULL};
	char name[64];
	struct hp_buf ids, out;
	int status = 0, rc, running = 0;
	const char *p;

	hp_buf_init(&ids, 1u << 16);
	for (int c = 0; c < l->ncomps; c++) {
		snprintf(name, sizeof(name), "SLURM_JOB_ID_HET_GROUP_%d", c);
		if (digits(getenv(name)))
			hp_buf_printf(&ids, "%s%s", c ? "," : "", getenv(name));
	}
	if (!ids.len && digits(getenv("SLURM_JOB_ID")))
		hp_buf_adds(&ids, getenv("SLURM_JOB_ID"));
	if (!ids.len) {
		hp_buf_release(&ids);
		return -1;
	}
	argv[4] = (char *)hp_buf_str(&ids);
	hp_buf_init(&out, 1u << 20);
	rc = hp__run(argv, 30, &out, NULL, &status, NULL);
	hp_buf_release(&ids);
	if (rc || status) {
		hp_buf_release(&out);
		return -1;
	}
	for (p = hp_buf_str(&out); *p;) {
		size_t n = strcspn(p, "\n");
		const char *dot = memchr(p, '.', n);
		size_t tail = dot ? (size_t)(p + n - dot) : 0;
		if (n && !(tail == 6 && !strncmp(dot, ".batch", 6)) &&
		    !(tail == 7 && !strncmp(dot, ".extern", 7)))
			running = 1;
		p += n + (p[n] == '\n');
	}
	hp_buf_release(&out);
	return running;
}

/* Have all ranks started (each wrote its record, logs/rank-K.json)? */
static bool ranks_started(const struct hp__launch *l)
{
	char path[HP_DEPLOY_PATH_MAX + 64];

	for (int k = 0; k < l->nranks; k++) {
		snprintf(path, sizeof(path), "%s/logs/rank-%d.json", l->jobdir,
			 k);
		if (access(path, F_OK))
			return false;
	}
	return true;
}

/*
 * Run argv (output to log), passing a stop on as SIGTERM.  With watch
 * (the srun of the ranks), an srun that does not exit once its steps have
 * ended is stopped (SIGTERM, SIGKILL 2 s later) and said to be stuck:
 * Slurm 22.05's srun can hang so after a heterogeneous step with
 * --mpi=pmix whose components end at the same moment (its mpi/pmix plugin
 * joins its abort-agent thread from each component's thread without a
 * lock; seen here: srun blocked in pthread_join under
 * pmixp_abort_agent_stop with every task gone).  The steps have ended when
 * squeue lists none of them, once every rank has started (or srun has
 * run 2 minutes), twice in a row; or, squeue unable to say, the
 * trainer wrote its results HP_RESULTS_LINGER x linger_s ago.  squeue is
 * asked every 10 s (every 60 s after 5 minutes; every 2 s once the
 * results are there or it listed no step; never less often than every
 * linger_s).
 */
static int run_child(char *const argv[], const char *log,
		     const struct hp__launch *l, volatile sig_atomic_t *stop,
		     bool watch, struct hp__run_end *end, struct hp_error *err)
{
	char results[HP_DEPLOY_PATH_MAX + 64];
	pid_t pid;
	int ws = 0, rc, gone = 0;
	bool sent = false, killed = false;
	double start = hp_now_s(), ended_at = 0, results_at = 0, stuck_at = 0;
	double early = l->linger_s < 10 ? l->linger_s : 10,
	       soon = l->linger_s < 2 ? l->linger_s : 2,
	       late = l->linger_s < 60 ? l->linger_s : 60,
	       next_ask = start + early;

	memset(end, 0, sizeof(*end));
	snprintf(results, sizeof(results), "%s/out/results.json", l->jobdir);
	if ((rc = hp__spawn(argv, log, false, &pid, err)))
		return rc;
	for (;;) {
		pid_t w = waitpid(pid, &ws, WNOHANG);
		double now = hp_now_s();
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (*stop && !sent) {
			kill(pid, SIGTERM);
			sent = true;
		}
		if (watch && !sent && !stuck_at) {
			if (!results_at && access(results, F_OK) == 0) {
				results_at = now;
				next_ask = now;
			}
			if (!ended_at && now >= next_ask &&
			    (ranks_started(l) || now - start > 120)) {
				int r = steps_running(l);
				gone = r == 0 ? gone + 1 : 0;
				if (gone >= 2)
					ended_at = now;
				next_ask = now + (results_at || gone  ? soon
						  : now - start < 300 ? early
								      : late);
			}
			if ((ended_at && now - ended_at > l->linger_s) ||
			    (results_at &&
			     now - results_at >
				 HP_RESULTS_LINGER * l->linger_s)) {
				end->stuck = true;
				end->after_s =
				    ended_at ? l->linger_s
					     : HP_RESULTS_LINGER * l->linger_s;
				end->after = ended_at
						 ? "its job steps had ended"
						 : "the trainer wrote its "
						   "results";
				kill(pid, SIGTERM);
				stuck_at = now;
			}
		}
		if (stuck_at && !killed && hp_now_s() - stuck_at > 2) {
			kill(pid, SIGKILL); /* the hang above ignores TERM */
			killed = true;
		}
		sleep_s(0.05);
	}
	end->status = WIFEXITED(ws)
			  ? WEXITSTATUS(ws)
			  : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
	return 0;
}

/*
 * From srun's first "srun: error: NODE: task K: HOW" line in text (HOW
 * "Exited with exit code N", "Segmentation fault", ...), the node, the
 * task (numbered within its component's step) and HOW, into the caller's
 * buffers.
 */
static bool srun_failure(const char *text, char *node, size_t nn, int *task,
			 char *how, size_t hn)
{
	static const char head[] = "srun: error: ";
	const char *p = text, *t, *eol;

	while ((p = strstr(p, head))) {
		p += sizeof(head) - 1;
		eol = p + strcspn(p, "\n");
		t = strstr(p, ": task ");
		if (!t || t > eol) {
			p = eol;
			continue;
		}
		snprintf(node, nn, "%.*s", (int)(t - p), p);
		*task = (int)strtol(t + 7, (char **)&t, 10);
		if (strncmp(t, ": ", 2))
			return false;
		t += 2;
		snprintf(how, hn, "%.*s", (int)(eol - t), t);
		return true;
	}
	return false;
}

/*
 * Which rank failed first, from srun's report in log: the task srun names
 * is numbered within its component, whose ranks ran on the node named (the
 * ranks' records say where each ran).  On success reason gets "rank R
 * (task K on NODE) exited with status N: <its log's last line>" or "...
 * was killed (Segmentation fault): ...", and true is returned.
 */
static bool failed_rank(const struct hp__launch *l, const char *log,
			char *reason, size_t n)
{
	char node[HP_NAME_MAX], how[128], line[300],
	    path[HP_DEPLOY_PATH_MAX + 64], *text;
	size_t len;
	int task = -1, rank = -1, comp = l->ncomps == 1 ? 0 : -1;
	bool found;

	if (hp_read_file(log, 4u << 20, &text, &len, NULL))
		return false;
	found = srun_failure(text, node, sizeof(node), &task, how, sizeof(how));
	free(text);
	if (!found || task < 0)
		return false;
	for (int k = 0; comp < 0 && k < l->nranks; k++) {
		json_t *o;
		snprintf(path, sizeof(path), "%s/logs/rank-%d.json", l->jobdir,
			 k);
		if ((o = hp__read_json(path, 64u << 10, NULL))) {
			json_t *nd = json_object_get(o, "node");
			if (json_is_string(nd) &&
			    !strcmp(json_string_value(nd), node))
				comp = l->ranks[k].comp;
			json_decref(o);
		}
	}
	if (comp < 0 || task >= l->comps[comp].nranks)
		return false;
	rank = l->comps[comp].first_rank + task;
	if (!hp__rank_says(l->jobdir, rank, line, sizeof(line))) {
		char other[sizeof(line) - 40];
		for (int k = 0; k < l->nranks; k++)
			if (k != rank &&
			    hp__rank_says(l->jobdir, k, other, sizeof(other))) {
				snprintf(line, sizeof(line), "rank %d said: %s",
					 k, other);
				break;
			}
	}
	if (!strncmp(how, "Exited with exit code ", 22))
		snprintf(reason, n,
			 "rank %d (task %d on %s) exited with status "
			 "%s%s%s",
			 rank, task, node, how + 22, line[0] ? ": " : "", line);
	else
		snprintf(reason, n,
			 "rank %d (task %d on %s) was killed (%s)%s%s", rank,
			 task, node, how, line[0] ? ": " : "", line);
	return true;
}

int hp_deploy_slurm_batch(const char *script, volatile sig_atomic_t *stop,
			  int *exit_status, struct hp_error *err)
{
	char *text, *p, jobdir[HP_DEPLOY_PATH_MAX],
	    log[HP_DEPLOY_PATH_MAX + 32];
	char reason[700], rstate[32], why[300];
	struct hp__launch l;
	struct hp__run_end end;
	size_t len;
	bool have;
	int rc, status = 0;

	*exit_status = 1;
	if ((rc = hp_read_file(script, 1u << 20, &text, &len, err)))
		return rc;
	p = strstr(text, "\n" JOBDIR_LINE);
	if (!p) {
		free(text);
		return hp_error_set(err, HP_EINVAL,
				    "'%s' has no '" JOBDIR_LINE "' line",
				    script);
	}
	p += 1 + strlen(JOBDIR_LINE);
	snprintf(jobdir, sizeof(jobdir), "%.*s", (int)strcspn(p, "\n"), p);
	free(text);
	if (!hp__path_ok(jobdir))
		return hp_error_set(err, HP_EINVAL, "'%s' names no job folder",
				    script);
	{
		/* A job hetpool has already ended (sbatch took too long and
		 * the job was failed without a Slurm id, or it was cancelled
		 * meanwhile) is not trained: nobody follows it. */
		struct hp_job j;
		if ((rc = hp__job_load(jobdir, &j, err)))
			return rc;
		rc = hp_job_state_terminal(j.state)
			 ? hp_error_set(err, HP_ESTATE,
					"job %s is %s already (%s): not "
					"training it",
					j.id, hp_job_state_name(j.state),
					j.reason[0] ? j.reason : "no reason")
			 : 0;
		hp_job_release(&j);
		if (rc)
			return rc;
	}
	if ((rc = hp__launch_load(jobdir, &l, err)))
		return rc;
	snprintf(log, sizeof(log), "%s/%s", jobdir, HP_LAUNCHER_LOG);
	hp__job_update(jobdir, HP_JOB_STARTING, NULL, NULL, NULL, NULL, NULL);
	if (l.stage_manifest[0]) {
		for (int c = 0; c < l.ncomps && !*stop; c++) {
			struct hp__argv a = {0};
			char **argv;
			hp__argv_add(&a, "srun");
			if (l.ncomps > 1)
				hp__argv_addf(&a, "--het-group=%d", c);
			hp__argv_addf(&a, "--nodes=%d", l.comps[c].nnodes);
			hp__argv_addf(&a, "--ntasks=%d", l.comps[c].nnodes);
			hp__argv_add(&a, "--ntasks-per-node=1");
			hp__argv_add(&a, "--kill-on-bad-exit=1");
			hp__argv_add(&a, l.hetpool);
			hp__argv_add(&a, "_stage");
			hp__argv_add(&a, l.stage_manifest);
			hp__argv_add(&a, l.stage_dest);
			if (!(argv = hp__argv_take(&a))) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				goto out;
			}
			rc = run_child(argv, log, &l, stop, false, &end, err);
			hp__argv_free(argv);
			if (rc)
				goto out;
			status = end.status;
			if (status && !*stop) {
				snprintf(reason, sizeof(reason),
					 "staging the data on the %s nodes "
					 "failed (srun exited with status "
					 "%d; see %s)",
					 l.comps[c].type, status,
					 HP_LAUNCHER_LOG);
				hp__job_update(jobdir, HP_JOB_FAILED, reason,
					       NULL, NULL, NULL, NULL);
				*exit_status = 1;
				goto out;
			}
		}
	}
	if (*stop) {
		*exit_status = 143;
		goto out;
	}
	hp__job_update(jobdir, HP_JOB_RUNNING, NULL, NULL, NULL, NULL, NULL);
	if ((rc = run_child(l.launcher, log, &l, stop, true, &end, err)))
		goto out;
	status = end.status;
	*exit_status = status;
	if (*stop)
		goto out; /* Slurm says how it ended (cancelled, timeout) */
	have =
	    hp__results_state(jobdir, rstate, sizeof(rstate), why, sizeof(why));
	if (end.stuck) {
		enum hp_job_state s =
		    hp__stuck_outcome(jobdir, l.launcher[0], end.after_s,
				      end.after, reason, sizeof(reason));
		if (s == HP_JOB_FAILED) {
			/* srun may have said which task failed first */
			char first[400];
			if (failed_rank(&l, log, first, sizeof(first))) {
				size_t k = strlen(reason);
				snprintf(reason + k, sizeof(reason) - k, "; %s",
					 first);
			}
		}
		hp__job_update(jobdir, s, reason, NULL, NULL, NULL, NULL);
		*exit_status = s == HP_JOB_SUCCEEDED ? 0 : 1;
	} else if (status == 0 && have) {
		if (!strcmp(rstate, "stopped"))
			snprintf(reason, sizeof(reason),
				 "the trainer stopped early: %s",
				 why[0] ? why : "(no reason given)");
		else
			reason[0] = '\0';
		hp__job_update(jobdir, HP_JOB_SUCCEEDED, reason, NULL, NULL,
			       NULL, NULL);
	} else if (status == 0) {
		hp__job_update(jobdir, HP_JOB_FAILED,
			       "the trainer ended without writing "
			       "out/results.json",
			       NULL, NULL, NULL, NULL);
		*exit_status = 1;
	} else {
		if (!failed_rank(&l, log, reason, sizeof(reason)))
			snprintf(reason, sizeof(reason),
				 "srun exited with status %d (see %s)", status,
				 HP_LAUNCHER_LOG);
		hp__job_update(jobdir, HP_JOB_FAILED, reason, NULL, NULL, NULL,
			       NULL);
	}
out:
	hp__launch_release(&l);
	return rc;
}

const struct hp__backend_ops hp__backend_slurm = {
    .name = "slurm",
    .check = slurm_check,
    .prepare = slurm_prepare,
    .start = slurm_start,
    .refresh = slurm_refresh,
    .cancel = slurm_cancel,
};
