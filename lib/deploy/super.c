/*
 * super.c - the local and mpi backends, and the supervisor they share.
 *
 * Both start `hetpool _supervise JOBDIR`, a process in a session of its
 * own that outlives the program that submitted the job: it records itself
 * in the state file, stages the data (in-process for local; one
 * `hetpool _stage` per node through mpirun for mpi), starts the workers
 * (the one rank directly, or mpirun), waits, and records the outcome.  On
 * SIGTERM (a cancel) it passes SIGTERM on, so the trainers stop at a step
 * boundary, and SIGKILLs what is left after the grace time; whatever the
 * ending, no worker outlives it.  A supervisor that vanished (SIGKILL, a
 * reboot) is noticed by the next look at the job, which then fails.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- this host's GPUs */

/* The device type of each of this host's GPUs, by CUDA index: --host-gpus
 * when given, else detected (none when CUDA_VISIBLE_DEVICES hides them
 * all, hp__gpus_detect()). */
static int host_gpu_types(const struct hp_submit_opts *o,
			  char types[][HP_TYPE_MAX], int max,
			  struct hp_error *err)
{
	int n = 0;

	if (o->host_gpus) {
		const char *p = o->host_gpus;
		while (*p && n < max) {
			size_t len = strcspn(p, ",");
			if (len == 0 || len >= HP_TYPE_MAX)
				return hp_error_set(
				    err, HP_EINVAL,
				    "host GPUs '%s': give device "
				    "types separated by commas",
				    o->host_gpus);
			memcpy(types[n], p, len);
			types[n][len] = '\0';
			if (!hp__type_ok(types[n]))
				return hp_error_set(
				    err, HP_EINVAL,
				    "host GPUs '%s': '%s' is not "
				    "a device type",
				    o->host_gpus, types[n]);
			n++;
			p += len;
			if (*p == ',')
				p++;
		}
		return n;
	}
	{
		struct hp__gpu g[64];
		int k = hp__gpus_detect(g, 64 < max ? 64 : max);
		for (int i = 0; i < k; i++) {
			const struct hp_device_type *t =
			    o->cat ? hp_catalog_find(o->cat, g[i].model) : NULL;
			if (t) {
				snprintf(types[n++], HP_TYPE_MAX, "%.31s",
					 t->name);
			} else {
				/* not in the catalog: its model name */
				char *q = types[n++];
				snprintf(q, HP_TYPE_MAX, "%.31s", g[i].model);
				for (; *q; q++)
					*q = *q == ' ' ? '-'
					     : (*q >= 'A' && *q <= 'Z')
						 ? (char)(*q - 'A' + 'a')
						 : *q;
			}
		}
	}
	return n;
}

/* ---- local */

static bool this_host(const char *node)
{
	char host[HP_NAME_MAX];

	hp__hostname(host, sizeof(host));
	return !strcmp(node, host) || !strcmp(node, "localhost");
}

static int local_check(struct hp__submit *s, struct hp_error *err)
{
	const struct hp_plan *p = s->plan;
	char types[64][HP_TYPE_MAX], host[HP_NAME_MAX], path[512];
	int n;

	hp__hostname(host, sizeof(host));
	for (int i = 0; i < p->nnodes; i++)
		if (!this_host(p->nodes[i].name))
			return hp_error_set(
			    err, HP_EINVAL,
			    "the local backend runs on this host ('%s'), the "
			    "plan on '%s': run it with --backend mpi or slurm, "
			    "or plan for this host",
			    host, p->nodes[i].name);
	if (p->nnodes != 1)
		return hp_error_set(err, HP_EINVAL,
				    "the plan names this host twice ('%s', "
				    "'%s'): use one name",
				    p->nodes[0].name, p->nodes[1].name);
	if ((n = host_gpu_types(s->opts, types, 64, err)) < 0)
		return n;
	for (int c = 0; c < p->ncomps; c++) {
		int have = 0;
		if (!p->comps[c].gpu)
			continue;
		for (int i = 0; i < n; i++)
			have += !strcmp(types[i], p->comps[c].type);
		if (have < p->comps[c].per_node)
			return hp_error_set(
			    err, HP_EINVAL,
			    "the plan wants %d x %s on this host, which has "
			    "%d (%d NVIDIA GPU%s seen)",
			    p->comps[c].per_node, p->comps[c].type, have, n,
			    n == 1 ? "" : "s");
	}
	if (p->nranks > 1 && !hp__which(s->d->mpirun, path, sizeof(path)))
		return hp_error_set(err, HP_EINVAL,
				    "%d ranks need '%s' (Debian package "
				    "openmpi-bin), which is not on PATH",
				    p->nranks, s->d->mpirun);
	return 0;
}

/*
 * How long mpirun waits between SIGTERM and SIGKILL when it tears a job
 * down (a rank failed, or mpirun itself got SIGTERM), in seconds.  It
 * waits that long twice even when every rank is already gone, so it is
 * short; the grace a cancel gives the trainers is the supervisor's, which
 * signals the ranks on this host itself (ranks on other hosts, mpi
 * backend, get only this).
 */
#define MPIRUN_SIGKILL_S "1"

/* The common head of an mpirun command. */
static void mpirun_head(struct hp__argv *a, const struct hp_deploy *d)
{
	hp__argv_add(a, d->mpirun);
	if (geteuid() == 0)
		hp__argv_add(a, "--allow-run-as-root");
}

static int write_text(const char *dir, const char *name, const char *text,
		      struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 64];
	int rc;

	if ((rc = hp__path(path, sizeof(path), err, "%s/%s", dir, name)))
		return rc;
	return hp_write_file_atomic(path, text, strlen(text), 0644, err);
}

static int trainer_argv(struct hp__submit *s, struct hp_error *err)
{
	char model[HP_DEPLOY_PATH_MAX + 32], out[HP_DEPLOY_PATH_MAX + 32];
	const char *ext = strstr(s->train->model, ".onnx") ? "onnx" : "json";
	int rc;

	if ((rc = hp__path(model, sizeof(model), err, "%s/model.%s",
			   s->job->dir, ext)) ||
	    (rc = hp__path(out, sizeof(out), err, "%s/out", s->job->dir)))
		return rc;
	return hp__trainer_argv(
	    s, s->opts->trainer, model,
	    s->launch.stage_manifest[0] ? s->launch.stage_dest : "synthetic",
	    out, &s->launch, err);
}

static int local_prepare(struct hp__submit *s, struct hp_error *err)
{
	struct hp__launch *l = &s->launch;
	char types[64][HP_TYPE_MAX], hostfile[HP_DEPLOY_PATH_MAX + 32];
	char text[64];
	int cpus[1024], first[HP_PLAN_MAX_RANKS], count[HP_PLAN_MAX_RANKS];
	int n, ncpus, rc;
	struct hp__argv a = {0};

	if ((n = host_gpu_types(s->opts, types, 64, err)) < 0)
		return n;
	/* The gpu_index-th GPU of its type, by CUDA index (a rank where
	 * CUDA_VISIBLE_DEVICES hides every GPU gets none: rank.c). */
	for (int r = 0; r < l->nranks; r++) {
		struct hp__launch_rank *x = &l->ranks[r];
		int seen = 0;
		if (!x->gpu)
			continue;
		for (int i = 0; i < n; i++)
			if (!strcmp(types[i], x->type) &&
			    seen++ == x->gpu_index)
				snprintf(x->cuda, sizeof(x->cuda), "%d", i);
	}
	ncpus = hp__cpus_allowed(cpus, 1024);
	hp__cpus_split(ncpus, l->nranks, first, count);
	for (int r = 0; r < l->nranks; r++) {
		struct hp__launch_rank *x = &l->ranks[r];
		if (!count[r])
			continue;
		if (!(x->cpus = calloc((size_t)count[r], sizeof(int))))
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		x->ncpus = count[r];
		for (int k = 0; k < count[r]; k++)
			x->cpus[k] = cpus[first[r] + k];
		x->threads = s->train->threads ? s->train->threads : count[r];
	}
	if ((rc = trainer_argv(s, err)))
		return rc;
	if (l->nranks == 1) {
		hp__argv_add(&a, s->d->hetpool);
		hp__argv_add(&a, "_rank");
		hp__argv_add(&a, s->job->dir);
	} else {
		if ((rc = hp__path(hostfile, sizeof(hostfile), err,
				   "%s/hostfile", s->job->dir)))
			return rc;
		snprintf(text, sizeof(text), "localhost slots=%d\n", l->nranks);
		if ((rc = write_text(s->job->dir, "hostfile", text, err)))
			return rc;
		mpirun_head(&a, s->d);
		hp__argv_add(&a, "--oversubscribe");
		hp__argv_add(&a, "--bind-to");
		hp__argv_add(&a, "none");
		hp__argv_add(&a, "--hostfile");
		hp__argv_add(&a, hostfile);
		hp__argv_add(&a, "-np");
		hp__argv_addf(&a, "%d", l->nranks);
		hp__argv_add(&a, "--mca");
		hp__argv_add(&a, "odls_base_sigkill_timeout");
		hp__argv_add(&a, MPIRUN_SIGKILL_S);
		hp__argv_add(&a, s->d->hetpool);
		hp__argv_add(&a, "_rank");
		hp__argv_add(&a, s->job->dir);
	}
	if (!(l->launcher = hp__argv_take(&a)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	return 0;
}

/* ---- mpi */

static int mpi_check(struct hp__submit *s, struct hp_error *err)
{
	const struct hp_plan *p = s->plan;
	char path[512];

	/* mpirun places ranks by slot, node after node: each node's ranks
	 * must follow one another in the plan's order. */
	for (int r = 1; r < p->nranks; r++)
		if (p->ranks[r].node != p->ranks[r - 1].node)
			for (int q = 0; q < r - 1; q++)
				if (p->ranks[q].node == p->ranks[r].node)
					return hp_error_set(
					    err, HP_EINVAL,
					    "node '%s' holds devices of two "
					    "components whose ranks are not "
					    "together; the mpi backend needs "
					    "each node's ranks in one run "
					    "(use --backend slurm)",
					    p->nodes[p->ranks[r].node].name);
	if (!hp__which(s->d->mpirun, path, sizeof(path)))
		return hp_error_set(err, HP_EINVAL,
				    "no '%s' on PATH (Debian package "
				    "openmpi-bin)",
				    s->d->mpirun);
	return 0;
}

static int mpi_prepare(struct hp__submit *s, struct hp_error *err)
{
	const struct hp_plan *p = s->plan;
	struct hp__launch *l = &s->launch;
	char hostfile[HP_DEPLOY_PATH_MAX + 32],
	    stagefile[HP_DEPLOY_PATH_MAX + 32];
	struct hp_buf hf, sf;
	struct hp__argv a = {0};
	int rc;

	/* The plan numbers a rank's GPU within its type on its node; the
	 * node, which alone knows its GPUs' order, finds that GPU by the
	 * names of its type (rank.c).  The index stays as the fallback for
	 * a node whose driver lists no GPU. */
	for (int r = 0; r < l->nranks; r++) {
		struct hp__launch_rank *x = &l->ranks[r];
		const struct hp_device_type *t;
		struct hp__argv names = {0};
		if (!x->gpu)
			continue;
		snprintf(x->cuda, sizeof(x->cuda), "%d", x->gpu_index);
		t = hp_catalog_find(s->opts->cat, x->type);
		hp__argv_add(&names, t ? t->name : x->type);
		for (int k = 0; t && k < t->naliases; k++)
			hp__argv_add(&names, t->aliases[k]);
		if (names.oom) {
			hp__argv_free(hp__argv_take(&names));
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		}
		x->gpu_models = hp__argv_take(&names);
	}
	hp_buf_init(&hf, 16u << 20);
	hp_buf_init(&sf, 16u << 20);
	for (int r = 0; r < p->nranks;) {
		int k = p->ranks[r].node, run = 0;
		while (r < p->nranks && p->ranks[r].node == k) {
			run++;
			r++;
		}
		hp_buf_printf(&hf, "%s slots=%d\n", p->nodes[k].name, run);
	}
	for (int k = 0; k < p->nnodes; k++)
		hp_buf_printf(&sf, "%s slots=1\n", p->nodes[k].name);
	rc = write_text(s->job->dir, "hostfile", hp_buf_str(&hf), err);
	if (!rc)
		rc = write_text(s->job->dir, "hostfile.stage", hp_buf_str(&sf),
				err);
	hp_buf_release(&hf);
	hp_buf_release(&sf);
	if (rc ||
	    (rc = hp__path(hostfile, sizeof(hostfile), err, "%s/hostfile",
			   s->job->dir)) ||
	    (rc = hp__path(stagefile, sizeof(stagefile), err,
			   "%s/hostfile.stage", s->job->dir)) ||
	    (rc = trainer_argv(s, err)))
		return rc;
	if (l->stage_manifest[0]) {
		mpirun_head(&a, s->d);
		hp__argv_add(&a, "--hostfile");
		hp__argv_add(&a, stagefile);
		hp__argv_add(&a, "-np");
		hp__argv_addf(&a, "%d", p->nnodes);
		hp__argv_add(&a, "--bind-to");
		hp__argv_add(&a, "none");
		hp__argv_add(&a, s->d->hetpool);
		hp__argv_add(&a, "_stage");
		hp__argv_add(&a, l->stage_manifest);
		hp__argv_add(&a, l->stage_dest);
		if (!(l->stage_argv = hp__argv_take(&a)))
			return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	mpirun_head(&a, s->d);
	hp__argv_add(&a, "--hostfile");
	hp__argv_add(&a, hostfile);
	hp__argv_add(&a, "-np");
	hp__argv_addf(&a, "%d", l->nranks);
	hp__argv_add(&a, "--map-by");
	hp__argv_add(&a, "slot");
	hp__argv_add(&a, "--bind-to");
	hp__argv_add(&a, "none");
	hp__argv_add(&a, "--mca");
	hp__argv_add(&a, "odls_base_sigkill_timeout");
	hp__argv_add(&a, MPIRUN_SIGKILL_S);
	hp__argv_add(&a, s->d->hetpool);
	hp__argv_add(&a, "_rank");
	hp__argv_add(&a, s->job->dir);
	if (!(l->launcher = hp__argv_take(&a)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	return 0;
}

/* ---- the supervisor's backend parts */

int hp__super_start(struct hp__submit *s, struct hp_error *err)
{
	char log[HP_DEPLOY_PATH_MAX + 32], line[256];
	char *argv[] = {s->d->hetpool, "_supervise", s->job->dir, NULL};
	struct hp_job j;
	pid_t pid, w;
	int ws = 0, rc;

	if ((rc = hp__path(log, sizeof(log), err, "%s/%s", s->job->dir,
			   HP_LAUNCHER_LOG)))
		return rc;
	if ((rc = hp__spawn(argv, log, true, &pid, err)))
		return rc;
	/* `_supervise` forks the supervisor and exits once it is recorded
	 * in the state file; the record is what counts (a program that
	 * reaps its children itself may take the exit status first). */
	while ((w = waitpid(pid, &ws, 0)) < 0 && errno == EINTR)
		;
	if (w == pid && (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)) {
		ws = -1;
	} else if (!hp__job_load(s->job->dir, &j, NULL)) {
		ws = j.pid > 0 ? 0 : -1;
		hp_job_release(&j);
	}
	if (ws != 0) {
		char *text;
		size_t len;
		line[0] = '\0';
		if (!hp_read_file(log, 1u << 20, &text, &len, NULL)) {
			hp__last_line(text, line, sizeof(line));
			free(text);
		}
		return hp_error_set(err, HP_EIO,
				    "the job's supervisor did not start: %s",
				    line[0] ? line : "(no message)");
	}
	return 0;
}

/* Signal the ranks of jobdir that run on this host (from their records,
 * logs/rank-K.json, checked against their start times; sig 0 sends
 * nothing); returns how many ranks have a record of running on this
 * host, and *alive (may be NULL) how many of those still run. */
static int scan_ranks(const char *jobdir, int nranks, int sig, int *alive)
{
	char host[HP_NAME_MAX];
	int here = 0;

	if (alive)
		*alive = 0;
	hp__hostname(host, sizeof(host));
	for (int k = 0; k < nranks; k++) {
		char path[HP_DEPLOY_PATH_MAX + 64];
		json_t *o;
		snprintf(path, sizeof(path), "%s/logs/rank-%d.json", jobdir, k);
		if (!(o = hp__read_json(path, 64u << 10, NULL)))
			continue;
		if (json_is_string(json_object_get(o, "host")) &&
		    !strcmp(json_string_value(json_object_get(o, "host")),
			    host)) {
			long pid =
			    (long)json_integer_value(json_object_get(o, "pid"));
			unsigned long long st =
			    (unsigned long long)json_integer_value(
				json_object_get(o, "pid_start"));
			here++;
			if (pid > 1 && st && hp__proc_alive(pid, st)) {
				if (alive)
					(*alive)++;
				if (sig)
					kill((pid_t)pid, sig);
			}
		}
		json_decref(o);
	}
	return here;
}

static int signal_ranks(const char *jobdir, int nranks, int sig)
{
	return scan_ranks(jobdir, nranks, sig, NULL);
}

int hp__super_refresh(struct hp_deploy *d, struct hp_job *job,
		      struct hp_error *err)
{
	struct hp_job j;
	int fd, rc;
	char reason[512], said[300] = "";

	(void)d;
	if (job->pid && hp__proc_alive(job->pid, job->pid_start))
		return 0;
	if (!job->pid && hp__wall_now() - job->created_s < 60)
		return 0; /* its supervisor may be starting */
	if ((fd = hp__lock(job->dir, err)) < 0)
		return fd;
	if ((rc = hp__job_load(job->dir, &j, err)))
		goto out;
	if (!hp_job_state_terminal(j.state) &&
	    !(j.pid && hp__proc_alive(j.pid, j.pid_start))) {
		signal_ranks(j.dir, j.nranks, SIGKILL);
		/* a rank's own error may be why (its supervisor could not
		 * record it: a full disk) */
		for (int k = 0; k < j.nranks && !said[0]; k++)
			if (!hp__rank_says(j.dir, k, said, sizeof(said)))
				said[0] = '\0';
		if (j.pid)
			snprintf(reason, sizeof(reason),
				 "its supervisor (pid %ld) ended without "
				 "recording the outcome (killed, the host "
				 "restarted, or its disk full); its workers "
				 "were stopped%s%s",
				 j.pid, said[0] ? "; a rank said: " : "", said);
		else
			snprintf(reason, sizeof(reason),
				 "its supervisor never started");
		j.state = j.cancel_requested ? HP_JOB_CANCELLED : HP_JOB_FAILED;
		snprintf(j.reason, sizeof(j.reason), "%s",
			 j.cancel_requested ? "cancelled" : reason);
		j.ended_s = hp__wall_now();
		hp__job_collect(&j);
		rc = hp__job_save(&j, err);
	}
	hp_job_release(&j);
out:
	hp__unlock(fd);
	return rc;
}

int hp__super_cancel(struct hp_deploy *d, struct hp_job *job,
		     struct hp_error *err)
{
	struct hp_job j;
	double until;
	long pid;
	unsigned long long start;
	int fd, rc;

	if ((fd = hp__lock(job->dir, err)) < 0)
		return fd;
	if ((rc = hp__job_load(job->dir, &j, err))) {
		hp__unlock(fd);
		return rc;
	}
	if (hp_job_state_terminal(j.state)) {
		rc = hp_error_set(err, HP_EINVAL, "job '%s' has already %s",
				  j.id, hp_job_state_name(j.state));
		hp_job_release(&j);
		hp__unlock(fd);
		return rc;
	}
	j.cancel_requested = true;
	rc = hp__job_save(&j, err);
	pid = j.pid;
	start = j.pid_start;
	hp_job_release(&j);
	hp__unlock(fd);
	if (rc)
		return rc;
	if (pid && hp__proc_alive(pid, start))
		kill((pid_t)pid, SIGTERM);
	/* The supervisor records the end once its workers are gone. */
	until = hp_now_s() + d->grace_s + 10;
	while (hp_now_s() < until) {
		if (!hp__job_load(job->dir, &j, NULL)) {
			bool done = hp_job_state_terminal(j.state);
			hp_job_release(&j);
			if (done)
				return 0;
		}
		if (pid && !hp__proc_alive(pid, start))
			break;
		sleep_s(0.05);
	}
	if (pid && hp__proc_alive(pid, start))
		kill((pid_t)pid, SIGKILL);
	signal_ranks(job->dir, job->nranks, SIGKILL);
	return hp__job_update(job->dir, HP_JOB_CANCELLED,
			      "cancelled (its supervisor did not stop in time: "
			      "its processes were killed)",
			      NULL, NULL, NULL, err);
}

/* ---- the supervisor */

struct rec {
	long pid;
	unsigned long long start;
};

static void record_self(struct hp_job *j, void *ud)
{
	const struct rec *r = ud;

	j->pid = r->pid;
	j->pid_start = r->start;
}

static void set_exit(struct hp_job *j, void *ud)
{
	j->exit_status = *(const int *)ud;
}

/*
 * Start argv (its own process group) and wait, passing a stop on:
 * SIGTERM, then SIGKILL after grace_s.  With watch (the launcher of the
 * ranks), a launcher that does not exit once its ranks have ended is
 * stopped the same way and said to be stuck: every rank recorded on this
 * host and none of them running, for linger_s; or, ranks elsewhere,
 * the trainer's results written, for HP_RESULTS_LINGER x linger_s.
 * (Slurm 22.05's srun was seen to hang so; mpirun should not, but
 * nothing here may wait for ever.)
 */
static int run_stoppable(char *const argv[], const char *log,
			 const struct hp__launch *l,
			 volatile sig_atomic_t *stop, bool watch,
			 struct hp__run_end *end, struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 64];
	pid_t pid;
	int ws = 0, rc;
	double term_at = 0, next_look = 0, ended_at = 0, results_at = 0;
	bool killed = false;
	struct stat st;

	memset(end, 0, sizeof(*end));
	snprintf(path, sizeof(path), "%s/out/results.json", l->jobdir);
	if ((rc = hp__spawn(argv, log, false, &pid, err)))
		return rc;
	for (;;) {
		pid_t w = waitpid(pid, &ws, WNOHANG);
		double now = hp_now_s();
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (*stop && !term_at) {
			/* The trainers get SIGTERM straight away.  mpirun is
			 * told only when some rank is elsewhere or not
			 * started: it would SIGKILL them all after its own
			 * timeout (the grace time) even when they stop
			 * sooner. */
			if (signal_ranks(l->jobdir, l->nranks, SIGTERM) <
				l->nranks ||
			    l->nranks == 1)
				kill(-pid, SIGTERM);
			term_at = now;
		}
		if (watch && !term_at && now >= next_look) {
			int alive;
			next_look = now + (l->linger_s < 1 ? l->linger_s : 1);
			if (!ended_at &&
			    scan_ranks(l->jobdir, l->nranks, 0, &alive) ==
				l->nranks &&
			    alive == 0)
				ended_at = now;
			if (!results_at && stat(path, &st) == 0)
				results_at = now;
			if ((ended_at && now - ended_at > l->linger_s) ||
			    (results_at &&
			     now - results_at >
				 HP_RESULTS_LINGER * l->linger_s)) {
				end->stuck = true;
				end->after_s =
				    ended_at ? l->linger_s
					     : HP_RESULTS_LINGER * l->linger_s;
				end->after = ended_at ? "every rank had ended"
						      : "the trainer wrote its "
							"results";
				kill(-pid, SIGTERM);
				term_at = now;
			}
		}
		if (term_at && !killed && now - term_at > l->grace_s) {
			signal_ranks(l->jobdir, l->nranks, SIGKILL);
			kill(-pid, SIGKILL);
			killed = true;
		}
		sleep_s(0.05);
	}
	/* Nothing of it outlives it. */
	signal_ranks(l->jobdir, l->nranks, SIGKILL);
	kill(-pid, SIGKILL);
	end->status = WIFEXITED(ws)
			  ? WEXITSTATUS(ws)
			  : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
	return 0;
}

/* From mpirun's report, the first rank that failed and its exit code
 * (128 + the signal for one killed: "mpirun noticed that process rank 1
 * with PID 7 on node n exited on signal 11 (Segmentation fault)."; the
 * code a rank gave MPI_Abort, which the trainer calls on an error in
 * training: "MPI_ABORT was invoked on rank 0 in communicator
 * MPI_COMM_WORLD\nwith errorcode 1."). */
static bool mpirun_failure(const char *text, int *rank, int *code,
			   char *signame, size_t sn)
{
	const char *p = strstr(text, "Process name: [[");
	const char *c, *q = strstr(text, "mpirun noticed that process rank ");
	const char *a = strstr(text, "MPI_ABORT was invoked on rank ");

	signame[0] = '\0';
	if (q && (c = strstr(q, " exited on signal ")) &&
	    !memchr(q, '\n', (size_t)(c - q))) {
		const char *o = strchr(c, '('), *e = o ? strchr(o, ')') : NULL;
		*rank = (int)strtol(q + 33, NULL, 10);
		*code = 128 + (int)strtol(c + 18, NULL, 10);
		if (e && !memchr(c, '\n', (size_t)(e - c)))
			snprintf(signame, sn, "%.*s", (int)(e - o - 1), o + 1);
		return true;
	}
	if (a) {
		*rank = (int)strtol(
		    a + strlen("MPI_ABORT was invoked on rank "), NULL, 10);
		c = strstr(a, "with errorcode ");
		*code = c ? (int)strtol(c + strlen("with errorcode "), NULL, 10)
			  : -1;
		return true;
	}
	if (!p)
		return false;
	p = strstr(p, "],");
	if (!p)
		return false;
	*rank = (int)strtol(p + 2, NULL, 10);
	c = strstr(p, "Exit code:");
	*code = c ? (int)strtol(c + 10, NULL, 10) : -1;
	return true;
}

/* Whether the launcher is the one rank itself (the local backend's 1-rank
 * job) rather than mpirun, whose exit status is its own. */
static bool launcher_is_rank(const struct hp__launch *l)
{
	return l->backend == HP_BACKEND_LOCAL && l->nranks == 1;
}

static void failure_reason(const struct hp__launch *l, int status, char *reason,
			   size_t n)
{
	char path[HP_DEPLOY_PATH_MAX + 64], line[300], *text;
	size_t len;
	int rank = -1, code = status;
	bool signalled = false;
	char signame[64] = "";

	if (launcher_is_rank(l)) {
		rank = 0;
	} else {
		snprintf(path, sizeof(path), "%s/%s", l->jobdir,
			 HP_LAUNCHER_LOG);
		if (!hp_read_file(path, 4u << 20, &text, &len, NULL)) {
			if (!mpirun_failure(text, &rank, &code, signame,
					    sizeof(signame)))
				rank = -1;
			else
				signalled = code > 128;
			free(text);
		}
	}
	line[0] = '\0';
	/* mpirun's report named no rank (Open MPI's report of a rank's
	 * MPI_Abort can come garbled, or not at all: "ORTE_ERROR_LOG: Data
	 * unpack would read past end of buffer", a full disk): a rank that
	 * said why is the one that failed */
	for (int k = 0; rank < 0 && k < l->nranks; k++)
		if (hp__rank_says(l->jobdir, k, line, sizeof(line))) {
			rank = k;
			code = status;
		}
	if (rank >= 0) {
		/* mpirun names the first rank to exit, which need not be the
		 * one that said why: the trainer's ranks agree on a set-up
		 * failure and only the lowest failing one prints it */
		if (!hp__rank_says(l->jobdir, rank, line, sizeof(line)))
			for (int k = 0; k < l->nranks; k++) {
				char other[sizeof(line)];
				if (k != rank &&
				    hp__rank_says(l->jobdir, k, other,
						  sizeof(other))) {
					rank = k;
					memcpy(line, other, sizeof(line));
					break;
				}
			}
		/* no rank said why: the rank's own step may have, before the
		 * trainer started (a GPU the node lacks), in the launcher's
		 * log */
		snprintf(path, sizeof(path), "%s/%s", l->jobdir,
			 HP_LAUNCHER_LOG);
		if (!line[0] && !hp__log_says(path, line, sizeof(line)))
			line[0] = '\0';
		if (code > 128 && (launcher_is_rank(l) || signalled))
			snprintf(reason, n,
				 "rank %d was killed by signal %d%s%s%s%s%s",
				 rank, code - 128, signame[0] ? " (" : "",
				 signame, signame[0] ? ")" : "",
				 line[0] ? ": " : "", line);
		else
			snprintf(reason, n, "rank %d exited with status %d%s%s",
				 rank, code, line[0] ? ": " : "", line);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", l->jobdir, HP_LAUNCHER_LOG);
	hp__log_says(path, line, sizeof(line));
	snprintf(reason, n, "%s exited with status %d%s%s", l->launcher[0],
		 status, line[0] ? ": " : "", line);
}

int hp_deploy_supervise(const char *jobdir, int ready_fd,
			volatile sig_atomic_t *stop, struct hp_error *err)
{
	struct hp__launch l;
	struct hp_job j = {0};
	struct rec me = {(long)getpid(), hp__proc_start((long)getpid())};
	char log[HP_DEPLOY_PATH_MAX + 32], reason[512], rstate[32], why[300];
	struct hp__run_end end;
	bool have, late;
	int rc, status = -1;

	rc = hp__launch_load(jobdir, &l, err);
	if (rc) {
		if (ready_fd >= 0)
			close(ready_fd);
		/* without a launch file, say why in the state file */
		hp__job_update(jobdir, HP_JOB_FAILED, err->msg, NULL, NULL,
			       NULL, NULL);
		return rc;
	}
	rc = hp__job_update(jobdir, HP_JOB_STARTING, NULL, record_self, &me, &j,
			    err);
	if (ready_fd >= 0) {
		if (!rc)
			(void)!write(ready_fd, "1", 1);
		close(ready_fd);
	}
	if (rc)
		goto out;
	if (j.cancel_requested || hp_job_state_terminal(j.state)) {
		hp_job_release(&j);
		rc = hp__job_update(jobdir, HP_JOB_CANCELLED, "cancelled", NULL,
				    NULL, NULL, err);
		goto out;
	}
	hp_job_release(&j);
	snprintf(log, sizeof(log), "%s/%s", jobdir, HP_LAUNCHER_LOG);

	/* Stage the data before any worker starts. */
	if (l.stage_manifest[0]) {
		struct hp_error serr = {0};
		int src = 0;
		if (l.stage_argv) {
			struct hp__run_end e;
			src = run_stoppable(l.stage_argv, log, &l, stop, false,
					    &e, &serr);
			status = e.status;
			if (!src && status != 0 && !*stop) {
				/* what it said (a folder it could not make),
				 * not only that it failed */
				char said[300];
				hp__log_says(log, said, sizeof(said));
				src = hp_error_set(
				    &serr, HP_EIO,
				    "'%s _stage' exited with status %d%s%s "
				    "(see %s)",
				    l.hetpool, status, said[0] ? ": " : "",
				    said, HP_LAUNCHER_LOG);
			}
		} else {
			src = hp_deploy_stage_stoppable(
			    l.stage_manifest, l.stage_dest, stop, &serr);
		}
		if (src && !*stop) {
			snprintf(reason, sizeof(reason), "staging the data: %s",
				 serr.msg);
			rc = hp__job_update(jobdir, HP_JOB_FAILED, reason, NULL,
					    NULL, NULL, err);
			goto out;
		}
	}
	if (*stop) {
		rc = hp__job_update(jobdir, HP_JOB_CANCELLED, "cancelled", NULL,
				    NULL, NULL, err);
		goto out;
	}
	if ((rc = hp__job_update(jobdir, HP_JOB_RUNNING, NULL, NULL, NULL, NULL,
				 err)))
		goto out;
	rc = run_stoppable(l.launcher, log, &l, stop, true, &end, err);
	if (rc) {
		hp__job_update(jobdir, HP_JOB_FAILED, err->msg, NULL, NULL,
			       NULL, NULL);
		goto out;
	}
	status = end.status;
	hp__job_update(jobdir, -1, NULL, set_exit, &status, &j, NULL);
	have =
	    hp__results_state(jobdir, rstate, sizeof(rstate), why, sizeof(why));
	/* a cancel that came after the trainer's last step (during its
	 * final checkpoint and evaluation, or before this could record the
	 * end) stopped nothing: the run completed */
	late = (*stop || j.cancel_requested) && status == 0 && have &&
	       !strcmp(rstate, "completed");
	if ((*stop || j.cancel_requested) && !late) {
		rc = hp__job_update(jobdir, HP_JOB_CANCELLED, "cancelled", NULL,
				    NULL, NULL, err);
	} else if (end.stuck) {
		enum hp_job_state s =
		    hp__stuck_outcome(jobdir, l.launcher[0], end.after_s,
				      end.after, reason, sizeof(reason));
		rc = hp__job_update(jobdir, s, reason, NULL, NULL, NULL, err);
	} else if (status == 0) {
		if (have && !strcmp(rstate, "stopped"))
			snprintf(reason, sizeof(reason),
				 "the trainer stopped early: %s",
				 why[0] ? why : "(no reason given)");
		else if (late)
			snprintf(reason, sizeof(reason),
				 "the cancel came after the trainer's last "
				 "step: it completed");
		else
			reason[0] = '\0';
		if (have)
			rc = hp__job_update(jobdir, HP_JOB_SUCCEEDED, reason,
					    NULL, NULL, NULL, err);
		else
			rc = hp__job_update(jobdir, HP_JOB_FAILED,
					    "the trainer ended without writing "
					    "out/results.json",
					    NULL, NULL, NULL, err);
	} else if (have && !strcmp(rstate, "cancelled")) {
		/* a SIGTERM that did not come from hetpool cancel */
		rc = hp__job_update(jobdir, HP_JOB_CANCELLED,
				    "the trainer stopped on a SIGTERM from "
				    "outside hetpool (out/results.json: "
				    "cancelled; its checkpoint is "
				    "out/checkpoint)",
				    NULL, NULL, NULL, err);
	} else {
		failure_reason(&l, status, reason, sizeof(reason));
		rc = hp__job_update(jobdir, HP_JOB_FAILED, reason, NULL, NULL,
				    NULL, err);
	}
	hp_job_release(&j);
out:
	hp__launch_release(&l);
	return rc;
}

static int super_start(struct hp__submit *s, struct hp_error *err)
{
	return hp__super_start(s, err);
}

const struct hp__backend_ops hp__backend_local = {
    .name = "local",
    .check = local_check,
    .prepare = local_prepare,
    .start = super_start,
    .refresh = hp__super_refresh,
    .cancel = hp__super_cancel,
};

const struct hp__backend_ops hp__backend_mpi = {
    .name = "mpi",
    .check = mpi_check,
    .prepare = mpi_prepare,
    .start = super_start,
    .refresh = hp__super_refresh,
    .cancel = hp__super_cancel,
};
