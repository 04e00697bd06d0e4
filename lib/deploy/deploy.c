/*
 * deploy.c - the front of lib/deploy: the context, submitting a plan
 * (the job directory made complete under a temporary name and renamed to
 * its id, the data manifest, the plan, the model, the trainer's argv),
 * and following jobs (state, list, cancel, logs) through the backend ops
 * table.  A backend that fails after the job exists leaves it failed,
 * with the reason.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deploy/deploy_int.h"
#include "util/banned.h"

const struct hp__backend_ops *hp__backend(enum hp_backend b)
{
	switch (b) {
	case HP_BACKEND_LOCAL:
		return &hp__backend_local;
	case HP_BACKEND_MPI:
		return &hp__backend_mpi;
	case HP_BACKEND_SLURM:
		return &hp__backend_slurm;
	case HP_BACKEND_KUBERNETES:
		return &hp__backend_k8s;
	}
	return NULL;
}

void hp_train_opts_init(struct hp_train_opts *t)
{
	memset(t, 0, sizeof(*t));
	t->warmup_steps = -1;
	t->seed = -1;
}

void hp_submit_opts_init(struct hp_submit_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = HP_BACKEND_LOCAL;
}

static char *prog(const char *given, const char *dflt)
{
	return hp_strdup(given && *given ? given : dflt);
}

void hp_deploy_free(struct hp_deploy *d)
{
	if (!d)
		return;
	free(d->mpirun);
	free(d->sbatch);
	free(d->squeue);
	free(d->sacct);
	free(d->scancel);
	free(d->kubectl);
	free(d->dpkg_query);
	free(d);
}

struct hp_deploy *hp_deploy_new(const struct hp_deploy_config *cfg,
				struct hp_error *err)
{
	struct hp_deploy *d;

	if (!cfg->jobs_dir || !hp__path_ok(cfg->jobs_dir)) {
		hp_error_set(err, HP_EINVAL,
			     "jobs folder '%s': give an absolute path without "
			     "'..' or control characters, of at most %d bytes",
			     cfg->jobs_dir ? cfg->jobs_dir : "",
			     HP_DEPLOY_PATH_MAX - 160);
		return NULL;
	}
	if (!cfg->hetpool || !hp__path_ok(cfg->hetpool) ||
	    access(cfg->hetpool, X_OK)) {
		hp_error_set(err, HP_EINVAL,
			     "'%s' is not the absolute path of the hetpool "
			     "program",
			     cfg->hetpool ? cfg->hetpool : "");
		return NULL;
	}
	if (hp_mkdirs(cfg->jobs_dir, 0755, err)) {
		size_t l = strlen(err->msg);
		snprintf(err->msg + l, sizeof(err->msg) - l,
			 " (the jobs folder '%s': give --jobs-dir DIR or set "
			 "HETPOOL_JOBS_DIR)",
			 cfg->jobs_dir);
		return NULL;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(d->jobs_dir, sizeof(d->jobs_dir), "%s", cfg->jobs_dir);
	snprintf(d->hetpool, sizeof(d->hetpool), "%s", cfg->hetpool);
	d->mpirun = prog(cfg->mpirun, "mpirun");
	d->sbatch = prog(cfg->sbatch, "sbatch");
	d->squeue = prog(cfg->squeue, "squeue");
	d->sacct = prog(cfg->sacct, "sacct");
	d->scancel = prog(cfg->scancel, "scancel");
	d->kubectl = prog(cfg->kubectl, "kubectl");
	d->dpkg_query = prog(cfg->dpkg_query, "dpkg-query");
	d->grace_s = cfg->grace_s > 0 ? cfg->grace_s : 10;
	d->cmd_timeout_s = cfg->cmd_timeout_s > 0 ? cfg->cmd_timeout_s : 60;
	d->linger_s = cfg->linger_s > 0 ? cfg->linger_s : 10;
	if (!d->mpirun || !d->sbatch || !d->squeue || !d->sacct ||
	    !d->scancel || !d->kubectl || !d->dpkg_query) {
		hp_deploy_free(d);
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	return d;
}

const char *hp_deploy_jobs_dir(const struct hp_deploy *d)
{
	return d->jobs_dir;
}

/* A new id: the UTC time and 16 random bits ("20261130-121501-3fa2"). */
static void new_id(char *id, size_t n)
{
	unsigned short r = 0;
	time_t t = time(NULL);
	struct tm tm;
	char ts[32];

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (unsigned short)(hp_now_s() * 1e6) ^
		    (unsigned short)getpid();
	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", &tm);
	snprintf(id, n, "%.15s-%04x", ts, (unsigned)r);
}

static int copy_into(const char *src, const char *dst, struct hp_error *err)
{
	char *text;
	size_t len;
	int rc;

	if ((rc = hp_read_file(src, 1u << 30, &text, &len, err)))
		return rc;
	rc = hp_write_file_atomic(dst, text, len, 0644, err);
	free(text);
	return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static const char *model_file(const char *model)
{
	return ends_with(model, ".onnx") ? "model.onnx" : "model.json";
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Check what the caller gave before anything is written. */
static int job_dir(const struct hp_deploy *d, const char *id, char *buf,
		   size_t n, struct hp_error *err);

static int check_opts(struct hp__submit *s, struct hp_error *err)
{
	const struct hp_train_opts *t = s->train;
	const struct hp_submit_opts *o = s->opts;
	struct stat st;

	if (!hp__backend(o->backend))
		return hp_error_set(err, HP_EINVAL, "unknown backend %d",
				    (int)o->backend);
	if (s->plan->nranks < 1)
		return hp_error_set(err, HP_EINVAL, "the plan has no ranks");
	if (o->name && *o->name && !hp__name_ok(o->name))
		return hp_error_set(err, HP_EINVAL,
				    "name '%s': give letters, digits, '-', '.' "
				    "and '_' (1-63)",
				    o->name);
	if (!t->model || stat(t->model, &st) || !S_ISREG(st.st_mode) ||
	    access(t->model, R_OK))
		return hp_error_set(err, HP_EINVAL,
				    "model '%s' is not a readable file",
				    t->model ? t->model : "");
	if (!t->data || !*t->data)
		return hp_error_set(err, HP_EINVAL,
				    "give the data: fashion-mnist, synthetic "
				    "or a folder");
	if (t->steps && t->epochs)
		return hp_error_set(err, HP_EINVAL,
				    "give steps or epochs, not both");
	if (!t->steps && !t->epochs && !s->plan->steps)
		return hp_error_set(err, HP_EINVAL,
				    "the plan has no steps: give steps or "
				    "epochs");
	if (t->lr_rule && strcmp(t->lr_rule, "linear") &&
	    strcmp(t->lr_rule, "sqrt") && strcmp(t->lr_rule, "none"))
		return hp_error_set(err, HP_EINVAL,
				    "learning-rate rule '%s': give linear, "
				    "sqrt or none",
				    t->lr_rule);
	if (t->optimizer && strcmp(t->optimizer, "sgd") &&
	    strcmp(t->optimizer, "adam"))
		return hp_error_set(err, HP_EINVAL,
				    "optimizer '%s': give sgd or adam",
				    t->optimizer);
	if (t->lr_range_min || t->lr_range_max) {
		if (!(t->lr_range_min > 0 &&
		      t->lr_range_max > t->lr_range_min &&
		      t->lr_range_max < 1e6))
			return hp_error_set(err, HP_EINVAL,
					    "a range test needs 0 < lr_min < "
					    "lr_max (got %g and %g)",
					    t->lr_range_min, t->lr_range_max);
		if (t->lr > 0)
			return hp_error_set(err, HP_EINVAL,
					    "a range test sets every step's "
					    "rate: give no lr with it");
	}
	if (t->resume_from) {
		char old[HP_DEPLOY_PATH_MAX + 64];
		struct hp_job j;
		int rc;
		if (o->backend == HP_BACKEND_KUBERNETES)
			return hp_error_set(err, HP_EINVAL,
					    "a Kubernetes job cannot resume "
					    "another: checkpoints stay in the "
					    "pods' volume");
		/* its state brought up to date (a Slurm job may have ended
		 * since it was last asked) */
		if ((rc = job_dir(s->d, t->resume_from, old, sizeof(old),
				  err)) ||
		    (rc =
			 hp_deploy_status(s->d, t->resume_from, true, &j, err)))
			return rc;
		rc = hp_job_state_terminal(j.state)
			 ? 0
			 : hp_error_set(err, HP_EINVAL,
					"job %s is %s: cancel it (or let it "
					"end) before resuming from it",
					j.id, hp_job_state_name(j.state));
		hp_job_release(&j);
		if (rc)
			return rc;
		strncat(old, "/out/checkpoint", sizeof(old) - strlen(old) - 1);
		if (access(old, R_OK))
			return hp_error_set(err, HP_EINVAL,
					    "job %s left no checkpoint to "
					    "resume from (%s)",
					    t->resume_from, old);
	}
	if (!(t->lr >= 0 && t->lr < 1e6) || !(t->max_seconds >= 0) ||
	    !(t->stall_timeout_s == 0 ||
	      (t->stall_timeout_s >= 1 && t->stall_timeout_s <= 1e9)) ||
	    t->threads < 0 || t->steps < 0 || t->epochs < 0 ||
	    t->checkpoint_every < 0)
		return hp_error_set(err, HP_EINVAL,
				    "a trainer setting is out of range");
	if (o->backend != HP_BACKEND_KUBERNETES) {
		/* a folder passes access(X_OK): the ranks would fail at
		 * exec, after the job waited for its devices */
		if (!o->trainer || !hp__path_ok(o->trainer) ||
		    stat(o->trainer, &st) || !S_ISREG(st.st_mode) ||
		    access(o->trainer, X_OK))
			return hp_error_set(
			    err, HP_EINVAL,
			    "no hetpool-train at '%s' (an absolute path of "
			    "an executable file)",
			    o->trainer ? o->trainer : "");
	} else if (o->trainer &&
		   (hp_str_has_control(o->trainer) || !*o->trainer)) {
		return hp_error_set(err, HP_EINVAL,
				    "trainer '%s' is not a path", o->trainer);
	}
	{
		/* the maps are read whole, whatever the plan looks up */
		char v[HP_NAME_MAX];
		int rc;
		if ((rc = hp__map_get(o->gres_map, "cpu", v, sizeof(v),
				      "GRES map", err)) ||
		    (rc = hp__map_get(o->product_map, "cpu", v, sizeof(v),
				      "product map", err)))
			return rc;
	}
	if (o->stage_dir && !hp__path_ok(o->stage_dir))
		return hp_error_set(err, HP_EINVAL,
				    "staging folder '%s' is not an absolute "
				    "path",
				    o->stage_dir);
	return 0;
}

int hp__trainer_argv(const struct hp__submit *s, const char *trainer,
		     const char *model, const char *data, const char *out,
		     struct hp__launch *l, struct hp_error *err)
{
	const struct hp_plan *p = s->plan;
	const struct hp_train_opts *t = s->train;
	struct hp__argv a = {0};
	struct hp_buf lb, dev;
	const char *rule = t->lr_rule ? t->lr_rule : p->lr_rule;
	int64_t ref = t->ref_batch ? t->ref_batch : p->ref_batch;
	int64_t warm = t->warmup_steps >= 0 ? t->warmup_steps : p->warmup_steps;

	hp_buf_init(&lb, 1u << 20);
	hp_buf_init(&dev, 1u << 20);
	for (int i = 0; i < p->nranks; i++) {
		hp_buf_printf(&lb, "%s%lld", i ? "," : "",
			      (long long)p->ranks[i].local_batch);
		hp_buf_printf(&dev, "%s%s", i ? "," : "",
			      p->ranks[i].gpu ? "cuda" : "cpu");
	}
	hp__argv_add(&a, trainer);
	hp__argv_add(&a, "--model");
	hp__argv_add(&a, model);
	hp__argv_add(&a, "--data");
	hp__argv_add(&a, data);
	hp__argv_add(&a, "--batch");
	hp__argv_addf(&a, "%lld", (long long)p->global_batch);
	hp__argv_add(&a, "--local-batches");
	hp__argv_add(&a, hp_buf_str(&lb));
	hp__argv_add(&a, "--devices");
	l->ndev_arg = a.n;
	hp__argv_add(&a, hp_buf_str(&dev));
	if (t->steps || (!t->epochs && p->steps)) {
		hp__argv_add(&a, "--steps");
		hp__argv_addf(&a, "%lld",
			      (long long)(t->steps ? t->steps : p->steps));
	} else {
		hp__argv_add(&a, "--epochs");
		hp__argv_addf(&a, "%lld", (long long)t->epochs);
	}
	if (t->lr > 0) {
		hp__argv_add(&a, "--lr");
		hp__argv_addf(&a, "%.9g", t->lr);
	}
	if (t->lr_range_min > 0) {
		/* the range test's divergence factor is lr-find's default */
		hp__argv_add(&a, "--lr-schedule");
		hp__argv_add(&a, "exp-ramp");
		hp__argv_add(&a, "--lr-min");
		hp__argv_addf(&a, "%.17g", t->lr_range_min);
		hp__argv_add(&a, "--lr-max");
		hp__argv_addf(&a, "%.17g", t->lr_range_max);
		hp__argv_add(&a, "--stop-on-divergence");
		hp__argv_add(&a, "4");
	}
	hp__argv_add(&a, "--lr-rule");
	hp__argv_add(&a, rule);
	if (strcmp(rule, "none")) {
		hp__argv_add(&a, "--ref-batch");
		hp__argv_addf(&a, "%lld",
			      (long long)(ref ? ref : p->global_batch));
	}
	if (warm > 0) {
		hp__argv_add(&a, "--warmup-steps");
		hp__argv_addf(&a, "%lld", (long long)warm);
	}
	if (t->optimizer) {
		hp__argv_add(&a, "--optimizer");
		hp__argv_add(&a, t->optimizer);
	}
	if (t->seed >= 0) {
		hp__argv_add(&a, "--seed");
		hp__argv_addf(&a, "%lld", (long long)t->seed);
	}
	if (t->checkpoint_every > 0) {
		hp__argv_add(&a, "--checkpoint-every");
		hp__argv_addf(&a, "%lld", (long long)t->checkpoint_every);
	}
	if (t->resume || t->resume_from)
		hp__argv_add(&a, "--resume");
	if (t->max_seconds > 0) {
		hp__argv_add(&a, "--max-seconds");
		hp__argv_addf(&a, "%.9g", t->max_seconds);
	}
	if (t->stall_timeout_s > 0) {
		hp__argv_add(&a, "--stall-timeout");
		hp__argv_addf(&a, "%.9g", t->stall_timeout_s);
	}
	if (t->threads > 0) {
		hp__argv_add(&a, "--threads");
		hp__argv_addf(&a, "%d", t->threads);
	}
	hp__argv_add(&a, "--out");
	hp__argv_add(&a, out);
	if (lb.len >= lb.cap || dev.len >= dev.cap)
		a.oom = true;
	hp_buf_release(&lb);
	hp_buf_release(&dev);
	hp__argv_free(l->trainer);
	if (!(l->trainer = hp__argv_take(&a)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	return 0;
}

/* The parts of the launch file every backend shares. */
int hp__launch_fill(struct hp__submit *s, struct hp_error *err)
{
	const struct hp_plan *p = s->plan;
	struct hp__launch *l = &s->launch;
	int rc;

	snprintf(l->id, sizeof(l->id), "%s", s->job->id);
	l->backend = s->opts->backend;
	snprintf(l->jobdir, sizeof(l->jobdir), "%s", s->job->dir);
	snprintf(l->hetpool, sizeof(l->hetpool), "%s", s->d->hetpool);
	l->cpu_fallback = !s->opts->no_cpu_fallback;
	l->grace_s = s->d->grace_s;
	l->linger_s = s->d->linger_s;
	snprintf(l->squeue, sizeof(l->squeue), "%s", s->d->squeue);
	snprintf(l->slurm_mpi, sizeof(l->slurm_mpi), "%s",
		 s->opts->slurm_mpi ? s->opts->slurm_mpi : "pmix");
	l->ranks = calloc((size_t)p->nranks, sizeof(*l->ranks));
	l->comps = calloc((size_t)p->ncomps, sizeof(*l->comps));
	if (!l->ranks || !l->comps)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	l->nranks = p->nranks;
	l->ncomps = p->ncomps;
	for (int i = 0; i < p->nranks; i++) {
		const struct hp_plan_rank *r = &p->ranks[i];
		struct hp__launch_rank *x = &l->ranks[i];
		snprintf(x->node, sizeof(x->node), "%s",
			 p->nodes[r->node].name);
		snprintf(x->type, sizeof(x->type), "%s",
			 p->groups[r->group].type);
		x->gpu = r->gpu;
		x->comp = r->comp;
		x->local_rank = r->local_rank;
		x->gpu_index = r->gpu_index;
		x->local_batch = r->local_batch;
		x->transport = p->nodes[r->node].transport;
		snprintf(x->cuda, sizeof(x->cuda), "%s", r->gpu ? "-" : "");
	}
	for (int c = 0; c < p->ncomps; c++) {
		const struct hp_plan_comp *pc = &p->comps[c];
		struct hp__launch_comp *x = &l->comps[c];
		snprintf(x->type, sizeof(x->type), "%s", pc->type);
		x->gpu = pc->gpu;
		x->per_node = pc->per_node;
		x->nnodes = pc->nnodes;
		x->first_rank = pc->first_rank;
		x->nranks = pc->nranks;
		x->mem_mib = hp__comp_mem_mib(pc);
		if (pc->gpu &&
		    (rc = hp__map_get(s->opts->gres_map, pc->type, x->gres,
				      sizeof(x->gres), "GRES map", err)))
			return rc;
	}
	return 0;
}

int64_t hp__comp_mem_mib(const struct hp_plan_comp *pc)
{
	if (pc->gpu || !isfinite(pc->memory_bytes) || pc->memory_bytes < 0)
		return 0;
	return (int64_t)ceil(HP__MEM_MARGIN * pc->memory_bytes / 1048576.0) +
	       HP__HOST_MEM_MIB;
}

/* Write launch.json from s->launch. */
int hp__launch_write(struct hp__submit *s, struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 32];
	json_t *o;
	int rc;

	if ((rc = hp__path(path, sizeof(path), err, "%s/%s", s->job->dir,
			   HP_LAUNCH_FILE)))
		return rc;
	if (!(o = hp__launch_json(&s->launch)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	rc = hp__write_json(path, o, err);
	json_decref(o);
	return rc;
}

bool hp__which(const char *name, char *buf, size_t n)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(buf, n, "%s", name);
		return access(name, X_OK) == 0;
	}
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int k = snprintf(buf, n, "%.*s/%s", (int)len, p, name);
		if (len && k > 0 && (size_t)k < n && access(buf, X_OK) == 0)
			return true;
		p = end ? end + 1 : p + len;
	}
	return false;
}

/* Remove name (in the folder at at) and, a folder, what it holds; a
 * symbolic link is removed itself, never followed (a link in a job folder
 * may point anywhere). */
static void remove_at(int at, const char *name)
{
	int fd =
	    openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			unlinkat(at, name, 0);
		return;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN)
			remove_at(dirfd(d), e->d_name);
		else
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	unlinkat(at, name, AT_REMOVEDIR);
}

static void remove_tree(const char *dir)
{
	remove_at(AT_FDCWD, dir);
}

/* Remove the half-made job folders ".new-ID-PID@HOST" in jobs whose
 * maker, on this host, no longer runs (a `hetpool run` killed while it
 * filled one); another host's are left to it (the jobs folder may be
 * shared). */
static void remove_half_made(const char *jobs)
{
	char host[HP_NAME_MAX];
	struct dirent *e;
	DIR *d;

	if (!(d = opendir(jobs)))
		return;
	hp__hostname(host, sizeof(host));
	while ((e = readdir(d))) {
		const char *at = strrchr(e->d_name, '@'), *dash;
		char *end;
		long pid;
		if (strncmp(e->d_name, ".new-", 5) || !at ||
		    strcmp(at + 1, host))
			continue;
		for (dash = at; dash > e->d_name && dash[-1] != '-'; dash--)
			;
		pid = strtol(dash, &end, 10);
		if (dash == at || end != at || pid <= 1 ||
		    hp__proc_start(pid) != 0)
			continue;
		remove_at(dirfd(d), e->d_name);
	}
	closedir(d);
}

/* Fill the new job folder tmp: the model, the plan, the recommendation,
 * the data manifest, the state file. */
/* A resumed job's out/ starts as the old one's ended: its checkpoint and
 * its metrics (which the trainer cuts back to the checkpoint's step). */
static int seed_out(const struct hp_deploy *d, const char *from,
		    const char *tmp, struct hp_error *err)
{
	static const char *const files[] = {"checkpoint", "metrics.jsonl"};
	char old[HP_DEPLOY_PATH_MAX], src[HP_DEPLOY_PATH_MAX + 64],
	    dst[HP_DEPLOY_PATH_MAX + 64];
	int rc;

	if ((rc = job_dir(d, from, old, sizeof(old), err)))
		return rc;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct hp_atomic_file af;
		if ((rc = hp__path(src, sizeof(src), err, "%s/out/%s", old,
				   files[i])) ||
		    (rc = hp__path(dst, sizeof(dst), err, "%s/out/%s", tmp,
				   files[i])))
			return rc;
		if (i > 0 && access(src, F_OK))
			continue; /* no metrics: the checkpoint is enough */
		if ((rc = hp_atomic_open(&af, dst, 0644, err)))
			return rc;
		if ((rc = hp__copy_into(src, &af, err)) ||
		    (rc = hp_atomic_commit(&af, err))) {
			hp_atomic_abort(&af);
			return rc;
		}
	}
	return 0;
}

static int fill_new(struct hp__submit *s, const char *tmp, const char *id,
		    bool *staged, char *dest, size_t ndest,
		    struct hp_error *err)
{
	char path[HP_DEPLOY_PATH_MAX + 64], root[HP_DEPLOY_PATH_MAX];
	char *plan;
	int rc;

	if ((rc = hp__path(path, sizeof(path), err, "%s/%s", tmp,
			   model_file(s->train->model))) ||
	    (rc = copy_into(s->train->model, path, err)))
		return rc;
	if (!(plan = hp_plan_json(s->plan)))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	if (!(rc = hp__path(path, sizeof(path), err, "%s/%s", tmp,
			    HP_PLAN_FILE)))
		rc = hp_write_file_atomic(path, plan, strlen(plan), 0644, err);
	free(plan);
	if (rc)
		return rc;
	if (s->opts->recommendation &&
	    ((rc = hp__path(path, sizeof(path), err, "%s/recommendation.json",
			    tmp)) ||
	     (rc = hp_write_file_atomic(path, s->opts->recommendation,
					strlen(s->opts->recommendation), 0644,
					err))))
		return rc;
	for (int i = 0; i < 2; i++) {
		if ((rc = hp__path(path, sizeof(path), err, "%s/%s", tmp,
				   i ? "out" : "logs")))
			return rc;
		if (mkdir(path, 0755))
			return hp_error_set(err, HP_EIO,
					    "cannot make folder '%s': %s", path,
					    strerror(errno));
	}
	if (s->train->resume_from &&
	    (rc = seed_out(s->d, s->train->resume_from, tmp, err)))
		return rc;
	if (s->opts->stage_dir)
		snprintf(root, sizeof(root), "%s", s->opts->stage_dir);
	else if (s->opts->backend == HP_BACKEND_LOCAL) {
		if ((rc = hp__path(root, sizeof(root), err, "%s/.stage",
				   s->d->jobs_dir)))
			return rc;
	} else if (s->opts->backend == HP_BACKEND_KUBERNETES)
		snprintf(root, sizeof(root), "/hetpool/data");
	else /* one per user: another's would refuse this one's copies */
		snprintf(root, sizeof(root), "/tmp/hetpool-stage-%u",
			 (unsigned)geteuid());
	if ((rc = hp__stage_manifest(s->d, s->train->data, tmp, root, staged,
				     dest, ndest, err)))
		return rc;
	memset(s->job, 0, sizeof(*s->job));
	snprintf(s->job->id, sizeof(s->job->id), "%s", id);
	snprintf(s->job->dir, sizeof(s->job->dir), "%s", tmp);
	snprintf(s->job->name, sizeof(s->job->name), "%s",
		 s->opts->name ? s->opts->name : "");
	s->job->backend = s->opts->backend;
	s->job->state = HP_JOB_QUEUED;
	s->job->created_s = hp__wall_now();
	s->job->nranks = s->plan->nranks;
	s->job->exit_status = -1;
	snprintf(s->job->model, sizeof(s->job->model), "%s",
		 base_name(s->train->model));
	snprintf(s->job->data, sizeof(s->job->data), "%s", s->train->data);
	return hp__job_save(s->job, err);
}

/* The job failed after it was made: record why (keeps err). */
static int fail_job(struct hp__submit *s, int rc, struct hp_error *err)
{
	char reason[512];

	snprintf(reason, sizeof(reason), "%s",
		 err && err->msg[0] ? err->msg : hp_strerror(rc));
	hp__job_update(s->job->dir, HP_JOB_FAILED, reason, NULL, NULL, NULL,
		       NULL);
	return rc;
}

int hp_deploy_submit(struct hp_deploy *d, const struct hp_plan *plan,
		     const struct hp_train_opts *train,
		     const struct hp_submit_opts *opts, char *id,
		     struct hp_error *err)
{
	const struct hp__backend_ops *ops = hp__backend(opts->backend);
	struct hp_job job;
	struct hp__submit s = {
	    .d = d, .plan = plan, .train = train, .opts = opts, .job = &job};
	char tmp[HP_DEPLOY_PATH_MAX], dir[HP_DEPLOY_PATH_MAX];
	char dest[HP_DEPLOY_PATH_MAX], newid[HP_JOB_ID_MAX];
	char host[HP_NAME_MAX];
	bool staged = false;
	int rc, tries, e;

	id[0] = '\0';
	memset(&job, 0, sizeof(job));
	if ((rc = check_opts(&s, err)) || (rc = ops->check(&s, err)))
		return rc;
	hp__hostname(host, sizeof(host));
	remove_half_made(d->jobs_dir);
	for (tries = 0; tries < 20; tries++) {
		new_id(newid, sizeof(newid));
		/* its maker and host in its name: remove_half_made() */
		if ((rc = hp__path(tmp, sizeof(tmp), err, "%s/.new-%s-%ld@%s",
				   d->jobs_dir, newid, (long)getpid(), host)) ||
		    (rc = hp__path(dir, sizeof(dir), err, "%s/%s", d->jobs_dir,
				   newid)))
			return rc;
		if (access(dir, F_OK) == 0)
			continue;
		if (mkdir(tmp, 0755)) {
			if (errno == EEXIST)
				continue;
			return hp_error_set(err, HP_EIO,
					    "cannot make folder '%s': %s", tmp,
					    strerror(errno));
		}
		rc = fill_new(&s, tmp, newid, &staged, dest, sizeof(dest), err);
		if (rc) {
			remove_tree(tmp);
			hp_job_release(&job);
			return rc;
		}
		/* rename() does not replace a non-empty folder: a job made
		 * meanwhile under the same id keeps it. */
		if (rename(tmp, dir) == 0)
			break;
		e = errno;
		remove_tree(tmp);
		hp_job_release(&job);
		if (e != EEXIST && e != ENOTEMPTY)
			return hp_error_set(err, HP_EIO,
					    "cannot rename '%s': %s", tmp,
					    strerror(e));
	}
	if (tries == 20)
		return hp_error_set(err, HP_EIO, "no free job id in '%s'",
				    d->jobs_dir);
	snprintf(id, HP_JOB_ID_MAX, "%s", newid);
	snprintf(job.dir, sizeof(job.dir), "%s", dir);
	if ((rc = hp__launch_fill(&s, err)))
		goto fail;
	if (staged) {
		snprintf(s.launch.stage_dest, sizeof(s.launch.stage_dest), "%s",
			 dest);
		if ((rc = hp__path(s.launch.stage_manifest,
				   sizeof(s.launch.stage_manifest), err,
				   "%s/%s", dir, HP_STAGE_FILE)))
			goto fail;
	}
	if ((rc = ops->prepare(&s, err)) || (rc = hp__launch_write(&s, err)) ||
	    (rc = ops->start(&s, err)))
		goto fail;
	hp__launch_release(&s.launch);
	hp_job_release(&job);
	return 0;
fail:
	fail_job(&s, rc, err);
	hp__launch_release(&s.launch);
	hp_job_release(&job);
	return rc;
}

static int job_dir(const struct hp_deploy *d, const char *id, char *buf,
		   size_t n, struct hp_error *err)
{
	if (!hp_job_id_valid(id))
		return hp_error_set(err, HP_EINVAL,
				    "'%s' is not a job id (letters a-z, "
				    "digits and '-')",
				    id);
	if (hp__path(buf, n, err, "%s/%s", d->jobs_dir, id))
		return HP_ERANGE;
	if (access(buf, F_OK) && errno == ENOENT)
		return hp_error_set(err, HP_ENOENT, "no job '%s' in '%s'", id,
				    d->jobs_dir);
	if (access(buf, F_OK)) /* a folder this user may not look in */
		return hp_error_set(err, HP_EIO, "cannot read '%s': %s", buf,
				    strerror(errno));
	/* a folder without the job file is not a job (hetpool jobs passes
	 * over it too): say so, not that a file could not be opened */
	{
		char f[HP_DEPLOY_PATH_MAX + 32];
		if (!hp__path(f, sizeof(f), NULL, "%s/%s", buf, HP_JOB_FILE) &&
		    access(f, F_OK) && errno == ENOENT)
			return hp_error_set(err, HP_ENOENT,
					    "no job '%s' in '%s' (its "
					    "folder there holds no %s)",
					    id, d->jobs_dir, HP_JOB_FILE);
	}
	return 0;
}

static int load_refreshed(struct hp_deploy *d, const char *dir, bool refresh,
			  struct hp_job *out, struct hp_error *err)
{
	int rc;

	if ((rc = hp__job_load(dir, out, err)))
		return rc;
	if (!refresh || hp_job_state_terminal(out->state))
		return 0;
	rc = hp__backend(out->backend)->refresh(d, out, err);
	hp_job_release(out);
	if (rc)
		return rc;
	return hp__job_load(dir, out, err);
}

int hp_deploy_status(struct hp_deploy *d, const char *id, bool refresh,
		     struct hp_job *out, struct hp_error *err)
{
	char dir[HP_DEPLOY_PATH_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = job_dir(d, id, dir, sizeof(dir), err)))
		return rc;
	return load_refreshed(d, dir, refresh, out, err);
}

static int by_time(const void *a, const void *b)
{
	const struct hp_job *x = a, *y = b;

	if (x->created_s != y->created_s)
		return x->created_s < y->created_s ? -1 : 1;
	return strcmp(x->id, y->id);
}

int hp_deploy_list(struct hp_deploy *d, bool refresh, struct hp_job **out,
		   int *n, hp_deploy_damaged_fn *damaged, void *ud,
		   struct hp_error *err)
{
	DIR *dir = opendir(d->jobs_dir);
	struct dirent *e;
	struct hp_job *jobs = NULL;
	int cap = 0, rc = 0;

	*out = NULL;
	*n = 0;
	if (!dir)
		return hp_error_set(err, HP_EIO, "cannot read '%s': %s",
				    d->jobs_dir, strerror(errno));
	while ((e = readdir(dir))) {
		char path[HP_DEPLOY_PATH_MAX];
		struct hp_error lerr = {0};
		struct stat st;
		/* only folders are jobs: a stray file is passed over */
		if (!hp_job_id_valid(e->d_name) ||
		    hp__path(path, sizeof(path), NULL, "%s/%s", d->jobs_dir,
			     e->d_name) ||
		    stat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (*n == cap) {
			int nc = cap ? 2 * cap : 32;
			struct hp_job *nj =
			    realloc(jobs, (size_t)nc * sizeof(*nj));
			if (!nj) {
				rc = hp_error_set(err, HP_ENOMEM,
						  "out of memory");
				break;
			}
			jobs = nj;
			cap = nc;
		}
		/* A backend that cannot be asked leaves the state as it was;
		 * a folder that is not a job (no state file) is passed over,
		 * one whose state file is damaged is reported. */
		if (load_refreshed(d, path, refresh, &jobs[*n], &lerr)) {
			struct hp_error perr = {0};
			int prc = hp__job_load(path, &jobs[*n], &perr);
			if (prc == HP_ENOENT)
				continue;
			if (prc) {
				if (damaged)
					damaged(e->d_name, perr.msg, ud);
				continue;
			}
		}
		(*n)++;
	}
	closedir(dir);
	if (rc) {
		hp_job_list_free(jobs, *n);
		*n = 0;
		return rc;
	}
	if (*n)
		qsort(jobs, (size_t)*n, sizeof(*jobs), by_time);
	*out = jobs;
	return 0;
}

int hp_deploy_cancel(struct hp_deploy *d, const char *id, struct hp_error *err)
{
	char dir[HP_DEPLOY_PATH_MAX];
	struct hp_job job;
	int rc;

	if ((rc = job_dir(d, id, dir, sizeof(dir), err)))
		return rc;
	if ((rc = hp__job_load(dir, &job, err)))
		return rc;
	if (hp_job_state_terminal(job.state)) {
		rc = hp_error_set(err, HP_EINVAL, "job '%s' has already %s", id,
				  job.state == HP_JOB_SUCCEEDED ? "succeeded"
				  : job.state == HP_JOB_FAILED
				      ? "failed"
				      : "been cancelled");
		hp_job_release(&job);
		return rc;
	}
	rc = hp__backend(job.backend)->cancel(d, &job, err);
	hp_job_release(&job);
	return rc;
}

int hp_deploy_remove(struct hp_deploy *d, const char *id, struct hp_error *err)
{
	char dir[HP_DEPLOY_PATH_MAX], gone[HP_DEPLOY_PATH_MAX + 64];
	struct hp_job job;
	struct stat st;
	int rc;

	if ((rc = job_dir(d, id, dir, sizeof(dir), err)))
		return rc;
	/* hetpool makes each job's folder: a link in its place was put
	 * there by someone else, and what it points to is not the job's */
	if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
		return hp_error_set(err, HP_EINVAL,
				    "job '%s': '%s' is a symbolic link, not "
				    "a job folder hetpool made: remove it "
				    "yourself",
				    id, dir);
	if ((rc = hp__job_load(dir, &job, err)))
		return rc;
	if (!hp_job_state_terminal(job.state)) {
		rc = hp_error_set(err, HP_ESTATE,
				  "job '%s' is %s: cancel it, and remove it "
				  "once it has ended",
				  id, hp_job_state_name(job.state));
		hp_job_release(&job);
		return rc;
	}
	hp_job_release(&job);
	/* out of the listing at once (a name that is no job id), then
	 * removed: a removal cut short leaves no half job behind */
	if ((size_t)snprintf(gone, sizeof(gone), "%s/.removing-%s-%ld",
			     d->jobs_dir, id, (long)getpid()) >= sizeof(gone))
		return hp_error_set(err, HP_ERANGE,
				    "jobs folder path too long");
	if (rename(dir, gone))
		return hp_error_set(err, HP_EIO, "cannot move '%s' away: %s",
				    dir, strerror(errno));
	remove_tree(gone);
	return 0;
}

int hp_deploy_log_path(const struct hp_deploy *d, const char *id, int rank,
		       char *buf, size_t n, struct hp_error *err)
{
	char dir[HP_DEPLOY_PATH_MAX];
	int rc;

	if ((rc = job_dir(d, id, dir, sizeof(dir), err)))
		return rc;
	if (rank >= 0)
		return hp__path(buf, n, err, "%s/logs/rank-%d.log", dir, rank);
	return hp__path(buf, n, err, "%s/%s", dir, HP_LAUNCHER_LOG);
}
