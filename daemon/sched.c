/*
 * sched.c - the jobs' life in hetpoold: plan a job with the recommender
 * against the devices free now, take them in one transaction, launch it
 * through lib/deploy, follow it to its end, release its devices, and
 * start what waits in the queue when devices free up.
 *
 * Who does what:
 *   - a request (POST /v1/jobs) validates the job, commits it queued,
 *     and tries to start it at once (hp_store_job_start: the devices and
 *     the state in one transaction; a device taken meanwhile by another
 *     request makes it plan again);
 *   - the scheduler thread, every poll_s or when kicked: launches the
 *     jobs that hold devices but have no deployment yet, follows each
 *     started job through hp_deploy_status() and moves it to its
 *     backend's state (an ended job releases its devices in the same
 *     transaction), records a finished job's measured step time, then
 *     walks the queue in order and starts every job that can start now
 *     (later jobs may start before an earlier one that waits for more
 *     devices), and predicts when the others will;
 *   - the canceller thread stops started jobs (hp_deploy_cancel() waits
 *     for their processes), one at a time.
 *
 * Crash safety: a job exists once its submission committed; its devices
 * are taken and released only by store transactions.  At start,
 * hp_store_recover() releases what ended or queued jobs still hold; a
 * started job with a deployment is followed again (re-attached: its
 * supervisor outlives hetpoold, and one that died meanwhile makes the
 * job fail with that reason); one without is looked for among the
 * deployments by its label (hetpoold-ID: a crash between launching it
 * and recording it) and otherwise launched.
 *
 * Which devices a backend can reach: local runs on this host only, so
 * jobs are planned on its node alone; mpi, slurm and kubernetes on every
 * node.  The recommender cannot weigh a CPU (no power figure), so a job
 * for the local backend that finds no configuration runs on this host's
 * CPU when it is free (as `hetpool run` does), with training.ranks ranks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hetpool/model.h"
#include "hetpool/train.h"
#include "hetpoold.h"

#define LABEL_PREFIX "hetpoold-"
#define MAX_CANCELS 256
#define MAX_PREDICT_QUEUED 16
#define QUEUE_RETRY_S 10.0 /* walk the queue at least this often */
#define QUEUE_WALK_MAX 64  /* queued jobs tried per walk */

struct hd_sched {
	pthread_t thread, canceller;
	bool running, cancel_running;
	pthread_mutex_t mu;
	pthread_cond_t cv, ccv;
	atomic_bool stop; /* read by the threads between steps */
	bool kicked;
	int64_t cancels[MAX_CANCELS]; /* to stop, in order */
	int ncancels;
	int64_t sent[MAX_CANCELS]; /* ring of ids already told to stop */
	int nsent;
	uint64_t predicted_gen; /* pool generation the predictions used */
	double predicted_at;
	uint64_t queue_gen; /* pool generation the last queue walk saw */
	double queue_at;
	int64_t walk_after;  /* a walk cut at QUEUE_WALK_MAX goes on after
				this job id at the next tick; 0: none */
	double retention_at; /* when ended jobs were last looked for */
};

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Writes to a job, each followed by dropping its cached document. */
static int job_update(struct hd *d, int64_t id,
		      const struct hp_store_job_patch *p, struct hp_error *err)
{
	int rc = hp_store_job_update(d->store, id, p, err);

	hd_job_changed(id);
	return rc;
}

static int job_transition(struct hd *d, int64_t id, enum hp_job_state to,
			  const char *reason, struct hp_error *err)
{
	int rc = hp_store_job_transition(d->store, id, to, reason, err);

	hd_job_changed(id);
	return rc;
}

void hd_sched_kick(struct hd *d)
{
	struct hd_sched *s = d->sched;

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->kicked = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* ---- pools */

static struct hp_pool *pool_dup(const struct hp_pool *p)
{
	struct hp_pool *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->path = hp_strdup(p->path ? p->path : "");
	if (p->n && !(q->nodes = calloc((size_t)p->n, sizeof(*q->nodes))))
		goto fail;
	for (int i = 0; i < p->n; i++) {
		const struct hp_pool_node *a = &p->nodes[i];
		struct hp_pool_node *b = &q->nodes[q->n++];
		*b = *a;
		b->name = hp_strdup(a->name);
		b->devs = NULL;
		b->ndevs = 0;
		if (!b->name)
			goto fail;
		if (a->ndevs) {
			if (!(b->devs =
				  calloc((size_t)a->ndevs, sizeof(*b->devs))))
				goto fail;
			memcpy(b->devs, a->devs,
			       (size_t)a->ndevs * sizeof(*b->devs));
			b->ndevs = a->ndevs;
		}
	}
	if (!q->path)
		goto fail;
	return q;
fail:
	hp_pool_free(q);
	return NULL;
}

/* Keep only the nodes the backend reaches (local: this host's). */
static void pool_reach(struct hd *d, struct hp_pool *p)
{
	int k = 0;

	if (d->cfg.backend != HP_BACKEND_LOCAL)
		return;
	for (int i = 0; i < p->n; i++) {
		if (d->self_name[0] &&
		    !strcmp(p->nodes[i].name, d->self_name)) {
			p->nodes[k++] = p->nodes[i];
		} else {
			free(p->nodes[i].name);
			free(p->nodes[i].devs);
		}
	}
	p->n = k;
}

/* Free devices of a node and type in p (-1 if absent). */
static struct hp_pool_dev *pool_dev(struct hp_pool *p, const char *node,
				    const char *type)
{
	for (int i = 0; i < p->n; i++) {
		if (strcmp(p->nodes[i].name, node))
			continue;
		for (int k = 0; k < p->nodes[i].ndevs; k++)
			if (!strcmp(p->nodes[i].devs[k].type, type))
				return &p->nodes[i].devs[k];
	}
	return NULL;
}

/* The pool as the job may have it: free now, or (all) every device not
 * drained or reserved counted free; reachable nodes only; owned. */
static struct hp_pool *job_pool(struct hd *d, bool all, struct hp_error *err)
{
	struct hd_pool *hp = NULL;
	struct hp_pool *p;
	struct hp_store_node *nodes = NULL;
	int n = 0, rc;

	if ((rc = hd_pool_get(d, &hp, err)))
		return NULL;
	p = pool_dup(hp->pool);
	hd_pool_put(hp);
	if (!p) {
		hp_error_set(err, HP_ENOMEM, "out of memory");
		return NULL;
	}
	if (all) {
		if (hp_store_node_list(d->store, &nodes, &n, err)) {
			hp_pool_free(p);
			return NULL;
		}
		for (int i = 0; i < n; i++)
			for (int k = 0; k < nodes[i].ndevices; k++) {
				const struct hp_store_device *dv =
				    &nodes[i].devices[k];
				struct hp_pool_dev *pd;
				if (dv->state != HP_DEV_ALLOCATED)
					continue;
				pd = pool_dev(p, nodes[i].pool.name, dv->type);
				if (pd && pd->free < pd->count)
					pd->free++;
			}
		hp_store_node_list_free(nodes, n);
	}
	pool_reach(d, p);
	return p;
}

/* ---- planning */

/* What a job's plan is: the recommender's, or this host's CPU. */
struct plan {
	bool found, feasible, cpu;
	struct hp_rec_result res; /* the recommender's (not cpu) */
	char *json;		  /* the plan as stored (owned) */
	double time_s, step_time_s;
	struct hp_store_devreq req[64];
	char nodes[64][HP_NAME_MAX]; /* what req points to */
	char types[64][HP_TYPE_MAX];
	int nreq;
	char reason[256];
};

static void plan_release(struct plan *p)
{
	hp_rec_result_release(&p->res);
	free(p->json);
	memset(p, 0, sizeof(*p));
}

/* Whether the local backend can fall back to this host's CPU for j. */
static bool cpu_fallback_ok(struct hd *d, const struct hp_api_job *j)
{
	return d->cfg.backend == HP_BACKEND_LOCAL && d->self_name[0] &&
	       (!j->device_type[0] || !strcmp(j->device_type, "cpu")) &&
	       j->nodes <= 1 && j->devices <= 1; /* the host's CPU is one */
}

/* The CPU plan on this host: its predicted step, and the stored form. */
static int plan_cpu(struct hd *d, const struct hp_api_job *j,
		    const struct hp_workload *w1, struct plan *p,
		    struct hp_error *err)
{
	int ranks = j->training.ranks > 0 ? j->training.ranks : 1;
	int64_t local = j->batch / ranks + (j->batch % ranks != 0);
	int64_t steps = j->steps;
	struct hp_workload w = {0};
	struct hp_prediction pr;
	json_t *o;

	if (ranks > j->batch)
		return hp_error_set(err, HP_EINVAL,
				    "training.ranks %d is more than the batch "
				    "%lld",
				    ranks, (long long)j->batch);
	if (!steps) {
		int64_t per = (j->samples + j->batch - 1) / j->batch;
		if (!hp_mul_i64(per, j->epochs, &steps))
			return hp_error_set(err, HP_ERANGE, "too many steps");
	}
	p->step_time_s = NAN;
	if (!hp_workload_at_batch(w1, local, &w, NULL)) {
		if (!hp_ctx_predict(d->ctx, &w, "cpu", ranks, -1, &pr, NULL))
			p->step_time_s = pr.step_time_s;
		hp_workload_release(&w);
	}
	p->time_s = isfinite(p->step_time_s)
			? HP_REC_STARTUP_S + p->step_time_s * (double)steps
			: NAN;
	p->cpu = true;
	p->found = true;
	p->feasible = !isfinite(p->time_s) || p->time_s <= j->deadline_s;
	snprintf(p->nodes[0], sizeof(p->nodes[0]), "%s", d->self_name);
	snprintf(p->types[0], sizeof(p->types[0]), "cpu");
	p->req[0] = (struct hp_store_devreq){p->nodes[0], p->types[0], 1, -1};
	p->nreq = 1;
	o = json_pack("{s:s, s:s, s:i, s:I, s:I, s:o, s:o, s:s}", "source",
		      "cpu-host", "node", d->self_name, "ranks", ranks,
		      "global_batch", (json_int_t)j->batch, "steps",
		      (json_int_t)steps, "predicted_step_time_s",
		      hd_jnum(p->step_time_s), "predicted_time_s",
		      hd_jnum(p->time_s), "note",
		      "the recommender cannot weigh a CPU (no power figure): "
		      "this host's CPU, the batch split evenly");
	p->json = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return p->json ? 0 : hp_error_set(err, HP_ENOMEM, "out of memory");
}

/* The workload of a job's model at batch 1 (the caller releases it with
 * *m or w). */
static int job_workload(struct hd *d, const struct hp_api_job *j,
			struct hd_model **m, struct hp_workload *w,
			const struct hp_workload **w1, struct hp_error *err)
{
	int rc;

	*m = NULL;
	memset(w, 0, sizeof(*w));
	if (j->model_id) {
		if ((rc = hd_model_get(d, j->model_id, m, err)))
			return rc;
		*w1 = &(*m)->w1;
		return 0;
	}
	if ((rc = hd_spec_workload(j->spec, w, err)))
		return rc;
	*w1 = w;
	return 0;
}

/*
 * Plan j on pool p with deadline_s left: the recommender's configuration,
 * or this host's CPU (local backend).  0 with *pl filled (found false:
 * nothing can run it on p, reason says why).
 */
static int plan_job(struct hd *d, const struct hp_api_job *j,
		    const struct hp_workload *w1, const struct hp_pool *p,
		    double deadline_s, struct plan *pl, struct hp_error *err)
{
	struct hp_rec_job rj;
	struct hp_api_job jj = *j;
	int rc;

	memset(pl, 0, sizeof(*pl));
	jj.deadline_s = deadline_s > 1 ? deadline_s : 1;
	hp_api_job_rec(&jj, &rj);
	rj.front = 0;
	if ((rc = hp_ctx_recommend(d->ctx, w1, p, &rj, &pl->res, err)))
		return rc;
	if (pl->res.found) {
		const struct hp_rec_config *c = &pl->res.choice;
		pl->found = true;
		pl->feasible = pl->res.feasible;
		pl->time_s = c->time_s;
		pl->step_time_s = c->step_time_s;
		if (c->ngroups > 64)
			return hp_error_set(err, HP_EUNSUPP,
					    "the plan spans %d groups of "
					    "devices; at most 64",
					    c->ngroups);
		for (int i = 0; i < c->ngroups; i++) {
			int k = pl->nreq++;
			snprintf(pl->nodes[k], sizeof(pl->nodes[k]), "%s",
				 p->nodes[c->groups[i].node].name);
			snprintf(pl->types[k], sizeof(pl->types[k]), "%s",
				 c->groups[i].type);
			pl->req[k] = (struct hp_store_devreq){
			    pl->nodes[k], pl->types[k], c->groups[i].count, -1};
		}
		if (!(pl->json = hp_rec_result_json(&pl->res, &rj, p)))
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		return 0;
	}
	snprintf(pl->reason, sizeof(pl->reason), "%s", pl->res.reason);
	if (cpu_fallback_ok(d, j)) {
		struct hp_pool_dev *dv =
		    pool_dev((struct hp_pool *)p, d->self_name, "cpu");
		if (dv && dv->free >= 1) {
			hp_rec_result_release(&pl->res);
			return plan_cpu(d, &jj, w1, pl, err);
		}
		if (dv) {
			struct hp_store_node sn = {0};
			bool drained = !hp_store_node_get(
					   d->store, d->self_name, &sn, NULL) &&
				       sn.drained;
			hp_store_node_release(&sn);
			if (drained)
				snprintf(pl->reason, sizeof(pl->reason),
					 "this host's node '%s' is drained "
					 "(PATCH /v1/nodes/%s with "
					 "{\"state\": \"active\"} resumes it)",
					 d->self_name, d->self_name);
			else
				snprintf(pl->reason, sizeof(pl->reason),
					 "this host's CPU is taken by another "
					 "job");
		}
	}
	return 0;
}

/* ---- starting a job */

static int job_desc(const struct hp_store_job *sj, struct hp_api_job *j,
		    struct hp_error *err)
{
	struct hp_api_problem pb = {0};

	if (!sj->description ||
	    hp_api_job_parse(sj->description, strlen(sj->description),
			     HP_API_JOB, j, &pb))
		return hp_error_set(err, HP_EPARSE,
				    "job %lld: its stored description cannot "
				    "be read: %s",
				    (long long)sj->id, pb.detail);
	return 0;
}

static void set_reason(struct hd *d, int64_t id, const char *old,
		       const char *reason)
{
	struct hp_store_job_patch pt = {0};

	if (old && reason && !strcmp(old, reason))
		return;
	pt.fields = HP_JOB_F_REASON;
	pt.reason = reason;
	job_update(d, id, &pt, NULL);
}

/*
 * Try to start queued job sj now: plan on the free devices; start when a
 * configuration meets what is left of the deadline (or when none ever
 * could, with the fastest); otherwise leave it queued with the reason.
 * *started says which.  0, or an error for a job that cannot be read.
 */
static int try_start(struct hd *d, const struct hp_store_job *sj, bool *started,
		     struct hp_error *err)
{
	struct hp_api_job j = {0};
	struct hd_model *m = NULL;
	struct hp_workload w = {0};
	const struct hp_workload *w1;
	double left;
	int rc;

	*started = false;
	if ((rc = job_desc(sj, &j, err)))
		return rc;
	if ((rc = job_workload(d, &j, &m, &w, &w1, err)))
		goto out;
	left = sj->deadline_at_s > 0 ? sj->deadline_at_s - wall_now()
				     : j.deadline_s;
	for (int attempt = 0; attempt < 4; attempt++) {
		struct plan pl, all;
		struct hp_pool *p = job_pool(d, false, err);
		bool go = false;
		char why[512] = "";

		if (!p) {
			rc = err->code ? err->code : HP_EIO;
			goto out;
		}
		rc = plan_job(d, &j, w1, p, left, &pl, err);
		hp_pool_free(p);
		if (rc)
			goto out;
		if (pl.found && pl.feasible) {
			go = true;
		} else if (pl.found) {
			/* Would waiting for more devices help? */
			struct hp_pool *pa = job_pool(d, true, err);
			memset(&all, 0, sizeof(all));
			if (pa && !plan_job(d, &j, w1, pa, left, &all, NULL) &&
			    all.found && all.feasible) {
				snprintf(why, sizeof(why),
					 "waiting for devices: the free ones "
					 "would take %.0f s, more than the "
					 "%.0f s left before its deadline",
					 pl.time_s, left);
			} else {
				go = true;
				snprintf(why, sizeof(why),
					 "its deadline can no longer be met: "
					 "started on the fastest configuration "
					 "free now (predicted %.0f s, %.0f s "
					 "left)",
					 pl.time_s, left);
			}
			plan_release(&all);
			hp_pool_free(pa);
		} else {
			snprintf(why, sizeof(why), "waiting for devices: %s",
				 pl.reason);
		}
		if (!go) {
			set_reason(d, sj->id, sj->reason, why);
			plan_release(&pl);
			goto out;
		}
		rc = hp_store_job_start(d->store, sj->id, pl.req, pl.nreq,
					pl.json, NULL, NULL, err);
		hd_job_changed(sj->id);
		if (rc == HP_EBUSY) {
			/* taken meanwhile: plan again on what is left */
			plan_release(&pl);
			hd_pool_changed(d);
			rc = 0;
			continue;
		}
		if (rc == HP_ESTATE) {
			/* no longer queued: the request that submitted it
			 * started it meanwhile (or it was cancelled), from
			 * the queue this tick had read; not a failure */
			plan_release(&pl);
			hp_error_clear(err);
			rc = 0;
			goto out;
		}
		if (!rc) {
			struct hp_store_job_patch pt = {0};
			double now = wall_now();
			*started = true;
			hd_pool_changed(d);
			pt.fields = HP_JOB_F_PREDICTED | HP_JOB_F_REASON;
			pt.predicted_start_at_s = now;
			pt.predicted_end_at_s =
			    isfinite(pl.time_s) ? now + pl.time_s : 0;
			pt.reason = why[0] ? why : NULL;
			job_update(d, sj->id, &pt, NULL);
			hd_log(HP_LOG_INFO, "job started", "job",
			       "i:", (long long)sj->id, "devices",
			       "i:", (long long)pl.nreq, "predicted_time_s",
			       "f:", pl.time_s, NULL);
		}
		plan_release(&pl);
		goto out;
	}
out:
	hd_model_put(m);
	hp_workload_release(&w);
	hp_api_job_release(&j);
	return rc;
}

/*
 * What the trainer would refuse at its launch, refused at submission (a
 * 422, no job made, no devices held): the model as the trainer reads it
 * (a spec, or an ONNX CNN converted for training: ops it does not run are
 * named), a classifier of at least 2 classes, and for Fashion-MNIST an
 * input of 1x28x28.  A registered dataset's shape is the trainer's to
 * check.
 */
static int check_trainable(struct hd *d, const struct hp_api_job *j,
			   struct hp_error *err)
{
	struct hp_store_model sm = {0};
	struct hp_spec spec;
	int rc;

	memset(&spec, 0, sizeof(spec));
	if (!j->model_id) {
		rc = hp_spec_for_training(j->spec, strlen(j->spec), NULL, &spec,
					  err);
	} else if ((rc = hp_store_model_get(d->store, j->model_id, true, &sm,
					    err)) == 0) {
		rc = hp_spec_for_training(sm.data, (size_t)sm.size, NULL, &spec,
					  err);
		if (rc)
			hp_error_prefix(err,
					"the trainer cannot train model %lld",
					(long long)j->model_id);
		hp_store_model_release(&sm);
	}
	if (!rc && !strcmp(j->data, "fashion-mnist") &&
	    (spec.input[0] != 1 || spec.input[1] != 28 || spec.input[2] != 28))
		rc = hp_error_set(err, HP_ESHAPE,
				  "fashion-mnist's samples are 1x28x28, the "
				  "model's input is %lldx%lldx%lld",
				  (long long)spec.input[0],
				  (long long)spec.input[1],
				  (long long)spec.input[2]);
	hp_spec_release(&spec);
	return rc;
}

int hd_sched_submit(struct hd *d, const struct hp_api_job *j,
		    const struct hd_who *who, int64_t *id, struct hp_error *err)
{
	struct hp_store_job_new in = {0};
	struct hp_store_job sj = {0};
	struct hd_model *m = NULL;
	struct hp_workload w = {0};
	const struct hp_workload *w1;
	struct hp_pool *pa = NULL;
	struct plan all = {0};
	char *desc = NULL, *settings = NULL;
	int64_t nsamples;
	bool started;
	int rc;

	if (strcmp(j->data, "fashion-mnist") && strcmp(j->data, "synthetic")) {
		struct hp_store_dataset ds = {0};
		if ((rc = hp_store_dataset_get(d->store, j->data, &ds, err))) {
			if (rc == HP_ENOENT)
				hp_error_set(err, HP_EINVAL,
					     "data '%s' is not fashion-mnist, "
					     "synthetic or a registered "
					     "dataset",
					     j->data);
			return rc == HP_ENOENT ? HP_EINVAL : rc;
		}
		nsamples = hp_train_data_samples(ds.path);
		hp_store_dataset_release(&ds);
	} else {
		nsamples = hp_train_data_samples(j->data);
	}
	/* the trainer refuses a global batch larger than its data at its
	 * start, after the job has waited for its devices */
	if (nsamples > 0 && j->batch > nsamples)
		return hp_error_set(err, HP_EINVAL,
				    "batch %lld is more than the %lld "
				    "training samples of data '%s'",
				    (long long)j->batch, (long long)nsamples,
				    j->data);
	if ((rc = job_workload(d, j, &m, &w, &w1, err)) ||
	    (rc = check_trainable(d, j, err)))
		goto out;
	/* A job no configuration of the whole pool can run is refused. */
	if (!(pa = job_pool(d, true, err))) {
		rc = err->code ? err->code : HP_EIO;
		goto out;
	}
	if ((rc = plan_job(d, j, w1, pa, j->deadline_s, &all, err)))
		goto out;
	if (!all.found && d->cfg.backend == HP_BACKEND_LOCAL &&
	    !d->self_name[0]) {
		rc = hp_error_set(err, HP_EINVAL,
				  "the local backend runs jobs on this host's "
				  "node, and none is registered: start "
				  "hetpoold with --register-self (or another "
				  "--backend for the pool's nodes)");
		goto out;
	}
	if (!all.found) {
		rc = hp_error_set(err, HP_EINVAL,
				  "no configuration of the %s can run this "
				  "job: %s",
				  d->cfg.backend == HP_BACKEND_LOCAL
				      ? "devices the local backend reaches "
					"(this host)"
				      : "pool",
				  all.reason[0] ? all.reason : "none found");
		goto out;
	}
	if (!(desc = hp_api_job_json(j, HP_API_JOB))) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	in.owner = who->token_id;
	in.name = j->name[0] ? j->name : NULL;
	in.description = desc;
	in.model_id = j->model_id;
	in.data = j->data;
	in.backend = d->cfg.backend;
	in.deadline_at_s = wall_now() + j->deadline_s;
	in.reason = "waiting for the scheduler";
	if ((rc = hp_store_job_add(d->store, &in, id, err)))
		goto out;
	hd_log(HP_LOG_INFO, "job submitted", "job", "i:", (long long)*id, "who",
	       "s:", who->name, NULL);
	/* Committed: from here on the job exists whatever happens. */
	if (!hp_store_job_get(d->store, *id, &sj, NULL)) {
		struct hp_error e2 = {0};
		if (try_start(d, &sj, &started, &e2))
			hd_log(HP_LOG_WARN, "job stays queued", "job",
			       "i:", (long long)*id, "error", "s:", e2.msg,
			       NULL);
		hp_store_job_release(&sj);
	}
	hd_sched_kick(d);
	rc = 0;
out:
	free(settings);
	free(desc);
	plan_release(&all);
	hp_pool_free(pa);
	hd_model_put(m);
	hp_workload_release(&w);
	return rc;
}

/* ---- launching */

/* The model file the trainer reads: the stored model's bytes, or the
 * inline spec, under the data folder. */
static int model_file(struct hd *d, const struct hp_store_job *sj,
		      const struct hp_api_job *j, char *path, size_t n,
		      struct hp_error *err)
{
	struct hp_store_model sm = {0};
	int rc;

	if (j->model_id) {
		if ((rc = hp_store_model_get(d->store, j->model_id, false, &sm,
					     err)))
			return rc;
		snprintf(path, n, "%s/models/%lld.%s", d->cfg.data_dir,
			 (long long)j->model_id,
			 sm.kind == HP_MODEL_ONNX ? "onnx" : "json");
		hp_store_model_release(&sm);
		if (access(path, R_OK) == 0)
			return 0;
		if ((rc = hp_store_model_get(d->store, j->model_id, true, &sm,
					     err)))
			return rc;
		rc = hp_write_file_atomic(path, sm.data, (size_t)sm.size, 0666,
					  err);
		hp_store_model_release(&sm);
		return rc;
	}
	snprintf(path, n, "%s/models/job-%lld.json", d->cfg.data_dir,
		 (long long)sj->id);
	return hp_write_file_atomic(path, j->spec, strlen(j->spec), 0666, err);
}

/* The deployment of job id made before a crash, by its label: 0 with
 * its id, or HP_ENOENT. */
static int find_deployment(struct hd *d, int64_t id, char *dep, size_t n,
			   char *dir, size_t ndir)
{
	struct hp_job *jobs = NULL;
	char label[HP_NAME_MAX];
	int k = 0, rc = HP_ENOENT;

	snprintf(label, sizeof(label), LABEL_PREFIX "%lld", (long long)id);
	if (hp_deploy_list(d->deploy, false, &jobs, &k, NULL, NULL, NULL))
		return HP_EIO;
	for (int i = 0; i < k; i++)
		if (!strcmp(jobs[i].name, label)) {
			snprintf(dep, n, "%s", jobs[i].id);
			snprintf(dir, ndir, "%s", jobs[i].dir);
			rc = 0;
		}
	hp_job_list_free(jobs, k);
	return rc;
}

static void record_deployment(struct hd *d, int64_t id, const char *dep,
			      const char *dir)
{
	struct hp_store_job_patch pt = {0};
	struct hp_error err = {0};

	pt.fields = HP_JOB_F_DEPLOY;
	pt.deploy_id = dep;
	pt.deploy_dir = dir;
	if (job_update(d, id, &pt, &err))
		hd_log(HP_LOG_ERROR, "recording a deployment", "job",
		       "i:", (long long)id, "deployment", "s:", dep, "error",
		       "s:", err.msg, NULL);
}

static void fail_job(struct hd *d, int64_t id, const char *reason)
{
	struct hp_error err = {0};

	if (job_transition(d, id, HP_JOB_FAILED, reason, &err))
		hd_log(HP_LOG_WARN, "failing a job", "job", "i:", (long long)id,
		       "error", "s:", err.msg, NULL);
	else
		hd_log(HP_LOG_INFO, "job failed", "job", "i:", (long long)id,
		       "reason", "s:", reason, NULL);
	hd_pool_changed(d);
}

/* Launch a starting job that has no deployment yet. */
static void launch(struct hd *d, const struct hp_store_job *sj)
{
	struct hp_api_job j = {0};
	struct hp_plan plan = {0};
	struct hp_train_opts t;
	struct hp_submit_opts o;
	struct hp_error err = {0};
	char dep[HP_JOB_ID_MAX] = "", dir[HP_DEPLOY_PATH_MAX] = "";
	char model[HP_DEPLOY_PATH_MAX], label[HP_NAME_MAX], reason[600];
	char datapath[HP_DEPLOY_PATH_MAX];
	json_t *pj = NULL;
	int rc;

	if (sj->cancel_requested) {
		job_transition(d, sj->id, HP_JOB_CANCELLED,
			       "cancelled before it was launched", NULL);
		hd_pool_changed(d);
		return;
	}
	/* launched before a crash, not recorded? */
	if (!find_deployment(d, sj->id, dep, sizeof(dep), dir, sizeof(dir))) {
		hd_log(HP_LOG_INFO, "job re-attached to its deployment", "job",
		       "i:", (long long)sj->id, "deployment", "s:", dep, NULL);
		record_deployment(d, sj->id, dep, dir);
		return;
	}
	if ((rc = job_desc(sj, &j, &err)))
		goto fail;
	if ((rc = model_file(d, sj, &j, model, sizeof(model), &err)))
		goto fail;
	pj = sj->plan ? json_loads(sj->plan, 0, NULL) : NULL;
	if (!pj) {
		rc = hp_error_set(&err, HP_EPARSE, "the job has no plan");
		goto fail;
	}
	if (json_is_string(json_object_get(pj, "source")) &&
	    !strcmp(json_string_value(json_object_get(pj, "source")),
		    "cpu-host")) {
		rc = hp_plan_cpu_host(
		    json_string_value(json_object_get(pj, "node")),
		    (int)json_integer_value(json_object_get(pj, "ranks")),
		    json_integer_value(json_object_get(pj, "global_batch")),
		    &plan, &err);
		if (!rc)
			plan.steps =
			    json_integer_value(json_object_get(pj, "steps"));
	} else {
		rc = hp_plan_parse(sj->plan, strlen(sj->plan), "the job's plan",
				   &plan, &err);
	}
	if (rc)
		goto fail;
	hp_train_opts_init(&t);
	t.model = model;
	t.data = j.data;
	if (strcmp(j.data, "fashion-mnist") && strcmp(j.data, "synthetic")) {
		struct hp_store_dataset ds = {0};
		if ((rc = hp_store_dataset_get(d->store, j.data, &ds, &err)))
			goto fail;
		snprintf(datapath, sizeof(datapath), "%s", ds.path);
		hp_store_dataset_release(&ds);
		t.data = datapath;
	}
	t.steps = j.steps;
	t.epochs = j.epochs;
	/* E passes over the job's samples, the work it was planned on,
	 * not E epochs of the trainer's own data set */
	{
		int64_t steps;
		if (!t.steps && t.epochs && j.samples > 0 && j.batch > 0 &&
		    hp_mul_i64((j.samples + j.batch - 1) / j.batch, j.epochs,
			       &steps)) {
			t.steps = steps;
			t.epochs = 0;
		}
	}
	t.lr = j.training.lr;
	t.lr_range_min = j.training.lr_range_min;
	t.lr_range_max = j.training.lr_range_max;
	t.lr_rule = hp_lr_rule_name(j.lr_rule);
	t.ref_batch = j.ref_batch;
	t.warmup_steps = j.training.warmup_steps;
	t.optimizer = j.training.optimizer[0] ? j.training.optimizer : NULL;
	t.seed = j.training.seed;
	t.checkpoint_every = j.training.checkpoint_every;
	t.max_seconds = j.training.max_seconds;
	t.stall_timeout_s = j.training.stall_timeout_s;
	t.threads = j.training.threads;
	hp_submit_opts_init(&o);
	snprintf(label, sizeof(label), LABEL_PREFIX "%lld", (long long)sj->id);
	o.backend = d->cfg.backend;
	o.name = label;
	o.trainer = d->cfg.trainer;
	o.recommendation = sj->plan;
	o.k8s_no_apply = d->cfg.no_apply;
	o.k8s_volume = d->cfg.k8s_volume;
	{
		const struct hp_snap *snap = hp_ctx_acquire(d->ctx);
		o.cat = hp_snap_catalog(snap);
		rc = hp_deploy_submit(d->deploy, &plan, &t, &o, dep, &err);
		hp_snap_release(snap);
	}
	if (dep[0]) {
		char jd[HP_DEPLOY_PATH_MAX + 64];
		snprintf(jd, sizeof(jd), "%s/%s", hp_deploy_jobs_dir(d->deploy),
			 dep);
		record_deployment(d, sj->id, dep, jd);
		hd_log(HP_LOG_INFO, "job launched", "job",
		       "i:", (long long)sj->id, "deployment", "s:", dep,
		       "backend", "s:", hp_backend_name(d->cfg.backend), NULL);
	}
	if (rc && !dep[0])
		goto fail;
	/* a failed deployment is followed like any other: the poller moves
	 * the job to failed with the backend's reason */
	goto out;
fail:
	snprintf(reason, sizeof(reason), "launching it: %s", err.msg);
	fail_job(d, sj->id, reason);
out:
	json_decref(pj);
	hp_plan_release(&plan);
	hp_api_job_release(&j);
}

/* ---- following jobs */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A finished job's measured step: the median of the trainer's step_s
 * (the first steps, warming up, left out when there are enough). */
static void record_measurement(struct hd *d, const struct hp_store_job *sj,
			       const struct hp_job *dj)
{
	struct hp_store_measurement m = {0};
	char path[HP_DEPLOY_PATH_MAX + 64], *text = NULL, cfg[512];
	double *v = NULL;
	size_t len, n = 0, cap = 0;
	json_t *pj, *res;
	const char *type = "cpu";
	int ndev = 1;
	int64_t batch = 0;

	snprintf(path, sizeof(path), "%s/out/metrics.jsonl", dj->dir);
	if (hp_read_file(path, 64u << 20, &text, &len, NULL))
		return;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		json_t *o = json_loadb(
		    line, nl ? (size_t)(nl - line) : strlen(line), 0, NULL);
		json_t *st = json_object_get(o, "step_s");
		if (json_is_number(st) && !json_object_get(o, "event")) {
			if (n == cap) {
				double *nv;
				cap = cap ? 2 * cap : 256;
				if (!(nv = realloc(v, cap * sizeof(*v)))) {
					json_decref(o);
					break;
				}
				v = nv;
			}
			v[n++] = json_number_value(st);
		}
		json_decref(o);
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	if (n == 0) {
		free(v);
		return;
	}
	{
		size_t skip = n >= 20 ? 5 : 0;
		qsort(v + skip, n - skip, sizeof(*v), cmp_double);
		m.step_time_s = v[skip + (n - skip) / 2];
	}
	free(v);
	pj = sj->plan ? json_loads(sj->plan, 0, NULL) : NULL;
	m.predicted_step_time_s = NAN;
	if (pj) {
		json_t *c = json_object_get(pj, "choice");
		json_t *p = json_object_get(
		    c ? c : pj, c ? "step_time_s" : "predicted_step_time_s");
		json_t *ty = json_object_get(
		    json_array_get(json_object_get(c, "types"), 0), "type");
		if (json_is_number(p))
			m.predicted_step_time_s = json_number_value(p);
		if (json_is_string(ty))
			type = json_string_value(ty);
		ndev =
		    c ? (int)json_integer_value(
			    json_object_get(c, "device_count"))
		      : (int)json_integer_value(json_object_get(pj, "ranks"));
		batch = json_integer_value(
		    json_object_get(c ? c : pj, "global_batch"));
	}
	res = dj->results ? json_loads(dj->results, 0, NULL) : NULL;
	m.kind = HP_MEAS_JOB;
	m.job_id = sj->id;
	m.device_type = (char *)type;
	m.ndevices = ndev > 0 ? ndev : 1;
	m.batch = batch > 0 && m.ndevices ? batch / m.ndevices : 0;
	m.energy_per_step_j = NAN;
	m.power_w = NAN;
	if (res && json_is_number(json_object_get(res, "energy_j")) &&
	    json_is_string(json_object_get(res, "energy_basis")) &&
	    !strncmp(json_string_value(json_object_get(res, "energy_basis")),
		     "measured", 8)) {
		json_int_t steps =
		    json_integer_value(json_object_get(res, "steps"));
		if (steps > 0)
			m.energy_per_step_j = json_number_value(json_object_get(
						  res, "energy_j")) /
					      (double)steps;
	}
	snprintf(cfg, sizeof(cfg),
		 "{\"job\":%lld,\"deployment\":\"%s\",\"device_type\":\"%s\","
		 "\"devices\":%d}",
		 (long long)sj->id, dj->id, type, m.ndevices);
	m.config = cfg;
	snprintf(path, sizeof(path), "job %lld", (long long)sj->id);
	m.source = path;
	if (m.step_time_s > 0)
		hp_store_measurement_add(d->store, &m, NULL, NULL);
	json_decref(pj);
	json_decref(res);
}

static bool cancel_sent(struct hd_sched *s, int64_t id)
{
	for (int i = 0; i < s->nsent && i < MAX_CANCELS; i++)
		if (s->sent[i] == id)
			return true;
	return false;
}

static void queue_cancel(struct hd *d, int64_t id)
{
	struct hd_sched *s = d->sched;

	pthread_mutex_lock(&s->mu);
	if (!cancel_sent(s, id) && s->ncancels < MAX_CANCELS) {
		s->cancels[s->ncancels++] = id;
		s->sent[s->nsent++ % MAX_CANCELS] = id;
		pthread_cond_signal(&s->ccv);
	}
	pthread_mutex_unlock(&s->mu);
}

/*
 * A started job the jobs folder does not know: true when the folder
 * recorded at its launch is still there (another --jobs-dir than the
 * one it was launched under, or a jobs volume mounted elsewhere), so its
 * supervisor and trainer may well be running: the job is left as it is,
 * its devices held, with the reason said once (in the log and on the
 * job) until hetpoold runs with that jobs folder again.  Only a job
 * whose folder is really gone is failed.
 */
#define ELSEWHERE                                                              \
	"left as it is (run hetpoold with the --jobs-dir it was launched "     \
	"under)"

static bool folder_still_there(struct hd *d, const struct hp_store_job *sj)
{
	char why[HP_DEPLOY_PATH_MAX * 2 + 160];
	struct stat st;

	if (!sj->deploy_dir || stat(sj->deploy_dir, &st) ||
	    !S_ISDIR(st.st_mode))
		return false;
	snprintf(why, sizeof(why),
		 "the jobs folder '%s' does not hold it, but its folder '%s' "
		 "is still there: " ELSEWHERE,
		 hp_deploy_jobs_dir(d->deploy), sj->deploy_dir);
	if (sj->reason && !strcmp(sj->reason, why))
		return true;
	hd_log(HP_LOG_ERROR,
	       "a running job's folder is outside the jobs folder", "job",
	       "i:", (long long)sj->id, "dir", "s:", sj->deploy_dir, "jobs_dir",
	       "s:", hp_deploy_jobs_dir(d->deploy), NULL);
	set_reason(d, sj->id, sj->reason, why);
	return true;
}

/* Move a started job to its deployment's state. */
static void follow(struct hd *d, const struct hp_store_job *sj)
{
	struct hp_job dj = {0};
	struct hp_error err = {0};
	int rc;

	if (sj->cancel_requested)
		queue_cancel(d, sj->id);
	rc = hp_deploy_status(d->deploy, sj->deploy_id, true, &dj, &err);
	if (rc == HP_ENOENT && folder_still_there(d, sj))
		return;
	if (rc == HP_ENOENT) {
		fail_job(d, sj->id,
			 "its deployment is gone (the job folder was "
			 "removed)");
		return;
	}
	if (rc) {
		hd_log(HP_LOG_WARN, "following a job", "job",
		       "i:", (long long)sj->id, "error", "s:", err.msg, NULL);
		return;
	}
	if (sj->reason && strstr(sj->reason, ELSEWHERE))
		set_reason(d, sj->id, sj->reason, NULL); /* found again */
	if (dj.state == HP_JOB_RUNNING && sj->state == HP_JOB_STARTING)
		job_transition(d, sj->id, HP_JOB_RUNNING, NULL, NULL);
	/* why the backend waits, unless a cancel was asked for: its
	 * "cancelled by NAME" stays (a backend's "apply the manifests" on a
	 * cancelled job would tell the operator to start it) */
	if ((dj.state == HP_JOB_QUEUED || dj.state == HP_JOB_STARTING) &&
	    dj.reason[0] && !sj->cancel_requested)
		set_reason(d, sj->id, sj->reason, dj.reason);
	if (hp_job_state_terminal(dj.state)) {
		if (dj.state == HP_JOB_SUCCEEDED) {
			if (sj->state == HP_JOB_STARTING)
				job_transition(d, sj->id, HP_JOB_RUNNING, NULL,
					       NULL);
			record_measurement(d, sj, &dj);
		}
		/* a cancel asked for here keeps its reason ("cancelled by
		 * NAME") */
		const char *why = dj.state == HP_JOB_CANCELLED &&
					  sj->cancel_requested && sj->reason
				      ? NULL
				  : dj.reason[0] ? dj.reason
				  : dj.state == HP_JOB_FAILED
				      ? "its deployment failed without saying "
					"why: see the job's launcher log"
				      : NULL;
		if (job_transition(d, sj->id, dj.state, why, &err))
			hd_log(HP_LOG_WARN, "ending a job", "job",
			       "i:", (long long)sj->id, "error", "s:", err.msg,
			       NULL);
		else
			hd_log(HP_LOG_INFO, "job ended", "job",
			       "i:", (long long)sj->id, "state",
			       "s:", hp_job_state_name(dj.state), "reason",
			       "s:", dj.reason, NULL);
		hd_pool_changed(d);
	}
	hp_job_release(&dj);
}

/* Predict when queued jobs start: the started jobs end at their
 * predicted ends, giving their devices back; a queued job starts at the
 * first end after which the devices free then can run it in time (the
 * jobs ahead of it in the queue are not counted). */
static void predict_queue(struct hd *d, struct hp_store_job *q, int nq)
{
	struct hp_store_job *act = NULL;
	struct hp_store_job_filter f = {0};
	int na = 0;

	f.states = 1u << HP_JOB_STARTING | 1u << HP_JOB_RUNNING;
	if (hp_store_job_list(d->store, &f, &act, &na, NULL))
		return;
	/* by predicted end */
	for (int i = 1; i < na; i++)
		for (int k = i; k > 0 && act[k].predicted_end_at_s <
					     act[k - 1].predicted_end_at_s;
		     k--) {
			struct hp_store_job t = act[k];
			act[k] = act[k - 1];
			act[k - 1] = t;
		}
	for (int i = 0; i < nq && i < MAX_PREDICT_QUEUED; i++) {
		struct hp_api_job j = {0};
		struct hd_model *m = NULL;
		struct hp_workload w = {0};
		const struct hp_workload *w1;
		struct hp_pool *p = NULL;
		double at = 0, left0 = q[i].deadline_at_s - wall_now(), end = 0;

		if (job_desc(&q[i], &j, NULL) ||
		    job_workload(d, &j, &m, &w, &w1, NULL) ||
		    !(p = job_pool(d, false, NULL)))
			goto next;
		for (int k = 0; k < na && k < 64; k++) {
			struct hp_store_alloc *al = NULL;
			struct plan pl;
			int nal = 0;
			double t = act[k].predicted_end_at_s;
			if (!(t > 0))
				continue;
			if (hp_store_job_devices(d->store, act[k].id, true, &al,
						 &nal, NULL))
				continue;
			for (int a = 0; a < nal; a++) {
				struct hp_pool_dev *dv =
				    pool_dev(p, al[a].node, al[a].type);
				if (dv && dv->free < dv->count)
					dv->free++;
			}
			hp_store_alloc_list_free(al, nal);
			if (plan_job(d, &j, w1, p, left0 - (t - wall_now()),
				     &pl, NULL) == 0 &&
			    pl.found) {
				at = t > wall_now() ? t : wall_now();
				end = isfinite(pl.time_s) ? at + pl.time_s : 0;
				plan_release(&pl);
				break;
			}
			plan_release(&pl);
		}
		if (at > 0 && (fabs(at - q[i].predicted_start_at_s) > 1 ||
			       fabs(end - q[i].predicted_end_at_s) > 1)) {
			struct hp_store_job_patch pt = {0};
			pt.fields = HP_JOB_F_PREDICTED;
			pt.predicted_start_at_s = at;
			pt.predicted_end_at_s = end;
			job_update(d, q[i].id, &pt, NULL);
		}
	next:
		hp_pool_free(p);
		hd_model_put(m);
		hp_workload_release(&w);
		hp_api_job_release(&j);
	}
	hp_store_job_list_free(act, na);
}

/* --keep-ended: jobs that ended more than keep_ended_s ago go, with
 * their folders; a few a tick, looked for at most once a minute (or
 * twice in keep_ended_s, when that is shorter). */
static void retention(struct hd *d)
{
	struct hd_sched *s = d->sched;
	int64_t ids[16];
	int n = 0;

	if (!(d->cfg.keep_ended_s > 0) ||
	    hp_now_s() - s->retention_at < fmin(60, d->cfg.keep_ended_s / 2))
		return;
	s->retention_at = hp_now_s();
	if (hp_store_jobs_ended_before(
		d->store, wall_now() - d->cfg.keep_ended_s, 16, ids, &n, NULL))
		return;
	for (int i = 0; i < n && !atomic_load(&s->stop); i++) {
		struct hp_error err = {0};
		if (hd_job_remove(d, ids[i], 0, &err))
			hd_log(HP_LOG_WARN, "retention: job not removed", "job",
			       "i:", (long long)ids[i], "error", "s:", err.msg,
			       NULL);
		else
			hd_log(HP_LOG_INFO, "retention: job removed", "job",
			       "i:", (long long)ids[i], "kept_s",
			       "f:", d->cfg.keep_ended_s, NULL);
	}
	if (n == 16)
		s->retention_at = 0; /* more: the next tick goes on */
}

static void tick(struct hd *d)
{
	struct hd_sched *s = d->sched;
	struct hp_store_job_filter f = {0};
	struct hp_store_job *jobs = NULL, *q = NULL;
	int n = 0, nq = 0;
	int64_t after, last = 0;
	uint64_t gen;

	/* launch and follow the started jobs */
	f.states = 1u << HP_JOB_STARTING | 1u << HP_JOB_RUNNING;
	if (!hp_store_job_list(d->store, &f, &jobs, &n, NULL)) {
		for (int i = 0; i < n && !atomic_load(&s->stop); i++) {
			if (!jobs[i].deploy_id)
				launch(d, &jobs[i]);
			else
				follow(d, &jobs[i]);
		}
		hp_store_job_list_free(jobs, n);
	}
	retention(d);
	/* Start what can start.  The queue is walked again only when the
	 * devices changed (or every QUEUE_RETRY_S, as deadlines draw near):
	 * a job that could not start on these devices cannot now either. */
	gen = atomic_load(&d->pool_gen);
	if (gen != s->queue_gen)
		s->walk_after = 0; /* the devices changed: from the head */
	else if (!s->walk_after && hp_now_s() - s->queue_at < QUEUE_RETRY_S)
		return;
	if (!s->walk_after) {
		s->queue_gen = gen;
		s->queue_at = hp_now_s();
	}
	if (hp_store_queue(d->store, &q, &nq, NULL))
		return;
	/* At most QUEUE_WALK_MAX jobs a tick (each is a recommendation); a
	 * longer queue goes on at the next tick, at once, after the last one
	 * tried, so that every queued job is tried (until 3 December each
	 * walk began at the head, and a job behind 64 that could not start
	 * was never tried). */
	after = s->walk_after;
	s->walk_after = 0;
	for (int i = 0, tried = 0; i < nq && !atomic_load(&s->stop); i++) {
		bool started = false;
		struct hp_error err = {0};
		if (q[i].cancel_requested || q[i].id <= after)
			continue;
		if (tried == QUEUE_WALK_MAX) {
			s->walk_after = last;
			hd_sched_kick(d);
			break;
		}
		tried++;
		last = q[i].id;
		if (try_start(d, &q[i], &started, &err)) {
			char reason[400];
			snprintf(reason, sizeof(reason), "%s", err.msg);
			fail_job(d, q[i].id, reason);
		}
		if (started) {
			/* launch it now rather than at the next tick */
			struct hp_store_job sj = {0};
			if (!hp_store_job_get(d->store, q[i].id, &sj, NULL) &&
			    sj.state == HP_JOB_STARTING && !sj.deploy_id)
				launch(d, &sj);
			hp_store_job_release(&sj);
		}
	}
	gen = atomic_load(&d->pool_gen);
	if (nq &&
	    (gen != s->predicted_gen || hp_now_s() - s->predicted_at > 10)) {
		hp_store_job_list_free(q, nq);
		q = NULL;
		nq = 0;
		if (!hp_store_queue(d->store, &q, &nq, NULL))
			predict_queue(d, q, nq);
		s->predicted_gen = gen;
		s->predicted_at = hp_now_s();
	}
	hp_store_job_list_free(q, nq);
}

static void *sched_main(void *arg)
{
	struct hd *d = arg;
	struct hd_sched *s = d->sched;

	pthread_mutex_lock(&s->mu);
	while (!atomic_load(&s->stop)) {
		struct timespec ts;
		double wait = d->cfg.poll_s;
		s->kicked = false;
		pthread_mutex_unlock(&s->mu);
		tick(d);
		pthread_mutex_lock(&s->mu);
		if (atomic_load(&s->stop) || s->kicked)
			continue;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)wait;
		ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void *cancel_main(void *arg)
{
	struct hd *d = arg;
	struct hd_sched *s = d->sched;

	pthread_mutex_lock(&s->mu);
	while (!atomic_load(&s->stop)) {
		int64_t id;
		struct hp_store_job sj = {0};
		struct hp_error err = {0};
		if (s->ncancels == 0) {
			pthread_cond_wait(&s->ccv, &s->mu);
			continue;
		}
		id = s->cancels[0];
		memmove(s->cancels, s->cancels + 1,
			(size_t)--s->ncancels * sizeof(*s->cancels));
		pthread_mutex_unlock(&s->mu);
		if (!hp_store_job_get(d->store, id, &sj, NULL) &&
		    !hp_job_state_terminal(sj.state)) {
			if (sj.deploy_id) {
				if (hp_deploy_cancel(d->deploy, sj.deploy_id,
						     &err) &&
				    err.code != HP_EINVAL)
					hd_log(HP_LOG_WARN, "cancelling a job",
					       "job", "i:", (long long)id,
					       "error", "s:", err.msg, NULL);
			} else {
				job_transition(
				    d, id, HP_JOB_CANCELLED,
				    "cancelled before it was launched", NULL);
				hd_pool_changed(d);
			}
		}
		hp_store_job_release(&sj);
		hd_sched_kick(d);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* At start: what a crash left. */
static void recover(struct hd *d)
{
	struct hp_store_recovery r = {0};
	struct hp_error err = {0};

	if (hp_store_recover(d->store, &r, &err)) {
		hd_log(HP_LOG_ERROR, "recovering the store", "error",
		       "s:", err.msg, NULL);
		return;
	}
	hd_log(HP_LOG_INFO, "recovered", "released",
	       "i:", (long long)r.released, "active_jobs",
	       "i:", (long long)r.nactive, NULL);
	for (int i = 0; i < r.nactive; i++) {
		const struct hp_store_job *j = &r.active[i];
		if (j->deploy_id)
			hd_log(HP_LOG_INFO, "following a job again", "job",
			       "i:", (long long)j->id, "deployment",
			       "s:", j->deploy_id, NULL);
	}
	hp_store_recovery_release(&r);
	hd_pool_changed(d);
}

int hd_sched_start(struct hd *d, struct hp_error *err)
{
	struct hd_sched *s = calloc(1, sizeof(*s));

	if (!s)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->ccv, NULL);
	d->sched = s;
	recover(d);
	if (pthread_create(&s->thread, NULL, sched_main, d))
		return hp_error_set(err, HP_EIO, "cannot start a thread");
	s->running = true;
	if (pthread_create(&s->canceller, NULL, cancel_main, d))
		return hp_error_set(err, HP_EIO, "cannot start a thread");
	s->cancel_running = true;
	return 0;
}

void hd_sched_stop(struct hd *d)
{
	struct hd_sched *s = d->sched;

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	atomic_store(&s->stop, true);
	pthread_cond_broadcast(&s->cv);
	pthread_cond_broadcast(&s->ccv);
	pthread_mutex_unlock(&s->mu);
	if (s->running)
		pthread_join(s->thread, NULL);
	if (s->cancel_running)
		pthread_join(s->canceller, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->ccv);
	free(s);
	d->sched = NULL;
}

/* ---- the API's view of a job */

/* Whether text is JSON the store holds as we wrote it: an object. */
static bool raw_ok(const char *text)
{
	return text && text[0] == '{';
}

int hd_job_render(struct hd *d, const struct hp_store_job *j,
		  struct hp_buf *out)
{
	json_t *o = json_object(), *devs = json_array(), *dl;
	struct hp_store_alloc *al = NULL;
	double dur = j->predicted_end_at_s - j->predicted_start_at_s;
	int nal = 0, rc = HP_ENOMEM;
	char *s = NULL;
	size_t n;

	if (!o || !devs)
		goto out;
	json_object_set_new(o, "id", json_integer(j->id));
	json_object_set_new(o, "name", hd_jstr(j->name));
	json_object_set_new(o, "state",
			    json_string(hp_job_state_name(j->state)));
	json_object_set_new(o, "reason", hd_jstr(j->reason));
	json_object_set_new(o, "owner",
			    j->owner ? json_integer(j->owner) : json_null());
	json_object_set_new(o, "backend",
			    json_string(hp_backend_name(j->backend)));
	json_object_set_new(o, "data", hd_jstr(j->data));
	json_object_set_new(o, "model_id",
			    j->model_id ? json_integer(j->model_id)
					: json_null());
	json_object_set_new(o, "created_s", json_real(j->created_s));
	json_object_set_new(o, "started_s",
			    hd_jnum(j->started_s > 0 ? j->started_s : NAN));
	json_object_set_new(o, "ended_s",
			    hd_jnum(j->ended_s > 0 ? j->ended_s : NAN));
	json_object_set_new(o, "predicted_start_s",
			    hd_jnum(j->predicted_start_at_s > 0
					? j->predicted_start_at_s
					: NAN));
	json_object_set_new(
	    o, "predicted_end_s",
	    hd_jnum(j->predicted_end_at_s > 0 ? j->predicted_end_at_s : NAN));
	dl = json_object();
	json_object_set_new(
	    dl, "at_s", hd_jnum(j->deadline_at_s > 0 ? j->deadline_at_s : NAN));
	if (hp_job_state_terminal(j->state)) {
		json_object_set_new(
		    dl, "met",
		    j->state == HP_JOB_SUCCEEDED && j->deadline_at_s > 0
			? json_boolean(j->ended_s <= j->deadline_at_s)
			: json_null());
	} else {
		double end = j->predicted_end_at_s;
		if (j->state == HP_JOB_QUEUED && j->predicted_start_at_s > 0 &&
		    dur > 0 && j->predicted_start_at_s < wall_now())
			end = wall_now() + dur; /* late: starts now at best */
		json_object_set_new(dl, "can_be_met",
				    end > 0 && j->deadline_at_s > 0
					? json_boolean(end <= j->deadline_at_s)
					: json_null());
	}
	json_object_set_new(o, "deadline", dl);
	json_object_set_new(o, "cancel_requested",
			    json_boolean(j->cancel_requested));
	if (!hp_store_job_devices(d->store, j->id, false, &al, &nal, NULL)) {
		for (int i = 0; i < nal; i++)
			json_array_append_new(
			    devs, json_pack("{s:s, s:s, s:i, s:b}", "node",
					    al[i].node, "type", al[i].type,
					    "index", al[i].index, "held",
					    al[i].released_s <= 0));
		hp_store_alloc_list_free(al, nal);
	}
	json_object_set_new(o, "devices", devs);
	devs = NULL;
	json_object_set_new(o, "deployment",
			    j->deploy_id
				? json_pack("{s:s, s:o}", "id", j->deploy_id,
					    "dir", hd_jstr(j->deploy_dir))
				: json_null());
	/* The description and the plan are JSON this server wrote: spliced
	 * in as text rather than parsed and written again. */
	if (!raw_ok(j->description))
		json_object_set_new(o, "description", hd_jtext(j->description));
	if (!raw_ok(j->plan))
		json_object_set_new(o, "plan", hd_jtext(j->plan));
	if (!(s = json_dumps(o, JSON_COMPACT)))
		goto out;
	n = strlen(s);
	s[n - 1] = '\0'; /* the closing brace */
	rc = hp_buf_add(out, s, n - 1);
	if (!rc && raw_ok(j->description))
		rc = hp_buf_printf(out, ",\"description\":%s", j->description);
	if (!rc && raw_ok(j->plan))
		rc = hp_buf_printf(out, ",\"plan\":%s", j->plan);
	if (!rc)
		rc = hp_buf_add(out, "}", 1);
out:
	free(s);
	json_decref(o);
	json_decref(devs);
	return rc;
}

int hd_recommend(struct hd *d, const struct hp_api_job *j,
		 struct hp_rec_result *res, struct hd_pool **pool,
		 struct hp_error *err)
{
	struct hd_model *m = NULL;
	struct hp_workload w = {0};
	const struct hp_workload *w1;
	struct hp_rec_job rj;
	int rc;

	*pool = NULL;
	memset(res, 0, sizeof(*res));
	if ((rc = job_workload(d, j, &m, &w, &w1, err)))
		return rc;
	if ((rc = hd_pool_get(d, pool, err)))
		goto out;
	hp_api_job_rec(j, &rj);
	rc = hp_ctx_recommend(d->ctx, w1, (*pool)->pool, &rj, res, err);
	if (rc) {
		hd_pool_put(*pool);
		*pool = NULL;
	}
out:
	hd_model_put(m);
	hp_workload_release(&w);
	return rc;
}
