/*
 * recommend.c - hp_recommend(): check the job, build the per-type tables
 * once (the estimator at a grid of local batches), search each candidate
 * global batch and keep the best, and state the learning-rate rule.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/recommend_int.h"
#include "util/banned.h"

void hp_rec_config_release(struct hp_rec_config *c)
{
	if (!c)
		return;
	free(c->groups);
	memset(c, 0, sizeof(*c));
}

void hp_rec_result_release(struct hp_rec_result *r)
{
	if (!r)
		return;
	hp_rec_config_release(&r->choice);
	for (int i = 0; i < r->npareto; i++)
		hp_rec_config_release(&r->pareto[i]);
	free(r->pareto);
	for (int i = 0; i < r->nrejected; i++)
		hp_rec_config_release(&r->rejected[i].cfg);
	free(r->rejected);
	memset(r, 0, sizeof(*r));
}

static void fill_lr(struct hp_rec_config *c, const struct hp_rec_job *job)
{
	int64_t ref = job->ref_batch > 0 ? job->ref_batch : c->global_batch;
	double r = (double)c->global_batch / (double)ref;

	if (!c->global_batch)
		return;
	c->lr_scale = job->lr_rule == HP_LR_LINEAR ? r
		      : job->lr_rule == HP_LR_SQRT ? sqrt(r)
						   : 1.0;
	c->warmup_steps = 0;
	if (c->lr_scale > 1) {
		/* Goyal et al.: ramp linearly over the first 5 epochs. */
		int64_t spe =
		    job->samples > 0
			? (job->samples + c->global_batch - 1) / c->global_batch
			: 0;
		int64_t w = spe * HP_REC_WARMUP_EPOCHS;
		if (w > c->steps / 2)
			w = c->steps / 2;
		c->warmup_steps = w;
	}
}

static void fill_lr_all(struct hp_rec_result *r, const struct hp_rec_job *job)
{
	fill_lr(&r->choice, job);
	for (int i = 0; i < r->npareto; i++)
		fill_lr(&r->pareto[i], job);
	for (int i = 0; i < r->nrejected; i++)
		fill_lr(&r->rejected[i].cfg, job);
}

int hp_rec_batches(const struct hp_rec_job *job, int64_t *out)
{
	int n = 0;

	if (job->batch > 0) {
		out[n++] = job->batch;
		return n;
	}
	for (int64_t b = 1; b <= job->batch_max && n < HP_REC_MAX_BATCHES;
	     b *= 2)
		if (b >= job->batch_min)
			out[n++] = b;
	return n;
}

/* The largest power of two at most x (x >= 1). */
static int64_t pow2_floor(int64_t x)
{
	int64_t p = 1;

	while (p <= x / 2)
		p *= 2;
	return p;
}

static int check_job(const struct hp_rec_job *j, struct hp_error *err)
{
	int64_t bs[HP_REC_MAX_BATCHES];

	if (j->samples < 1)
		return hp_error_set(err, HP_EINVAL, "samples: give at least 1");
	if ((j->epochs > 0) == (j->steps > 0))
		return hp_error_set(err, HP_EINVAL,
				    "give epochs or steps (one of them)");
	if (j->epochs < 0 || j->steps < 0)
		return hp_error_set(err, HP_EINVAL,
				    "epochs and steps cannot be negative");
	if (j->batch < 0 || j->batch_min < 0 || j->batch_max < 0 ||
	    j->ref_batch < 0)
		return hp_error_set(err, HP_EINVAL,
				    "batch sizes cannot be negative");
	if (!j->batch && (j->batch_min < 1 || j->batch_max < j->batch_min))
		return hp_error_set(err, HP_EINVAL,
				    "give a global batch, or bounds with "
				    "1 <= batch_min <= batch_max");
	if ((j->batch ? j->batch : j->batch_max) > (1 << 24))
		return hp_error_set(err, HP_ERANGE, "batch: at most %d",
				    1 << 24);
	if (!j->batch && hp_rec_batches(j, bs) == 0)
		return hp_error_set(
		    err, HP_EINVAL,
		    "batch bounds [%lld, %lld] hold no power of two (the "
		    "powers of two within them are searched; the nearest are "
		    "%lld and %lld)",
		    (long long)j->batch_min, (long long)j->batch_max,
		    (long long)pow2_floor(j->batch_min),
		    (long long)pow2_floor(j->batch_min) * 2);
	if ((j->batch ? j->batch : j->batch_max) > j->samples)
		return hp_error_set(
		    err, HP_EINVAL,
		    "%s %lld is more than samples %lld: a "
		    "step would take more samples than the "
		    "data holds",
		    j->batch ? "batch" : "batch_max",
		    (long long)(j->batch ? j->batch : j->batch_max),
		    (long long)j->samples);
	if (!(j->deadline_s > 0) || !isfinite(j->deadline_s))
		return hp_error_set(err, HP_EINVAL,
				    "deadline: must be more than zero");
	if (j->ndevices < 0 || j->nnodes < 0)
		return hp_error_set(err, HP_EINVAL,
				    "device and node counts cannot be "
				    "negative");
	if (j->max_mix < 0 || j->max_mix > HP_REC_MAX_MIX)
		return hp_error_set(err, HP_EINVAL, "max_mix: give 0 to %d",
				    HP_REC_MAX_MIX);
	if (!(j->input_sample_s >= 0) || !isfinite(j->input_sample_s))
		return hp_error_set(err, HP_EINVAL,
				    "input_sample_s: give 0 (no input "
				    "pipeline) or a core's seconds a sample");
	if (j->confidence != 0 && !(j->confidence > 0 && j->confidence < 1))
		return hp_error_set(err, HP_EINVAL,
				    "confidence: give a probability between 0 "
				    "and 1 (exclusive), e.g. 0.9");
	if (j->front < 0 || j->front == 1 || j->front > HP_REC_FRONT_MAX)
		return hp_error_set(err, HP_EINVAL,
				    "front: give 0 or 2 to %d deadlines",
				    HP_REC_FRONT_MAX);
	return 0;
}

/* Every configuration of out back to its point predictions, with how
 * likely it is to meet the deadline (the search ran on the quantile). */
static void judge_all(struct hp_rec_result *out, const struct hp__rec_model *m)
{
	out->confidence = m->confidence;
	out->comm_log_q90 =
	    m->comm_log_q90 > 0 ? m->comm_log_q90 : HP_REC_COMM_LOG_Q90;
	if (out->found)
		hp__rec_config_judge(m, &out->choice, out->deadline_s);
	for (int i = 0; i < out->npareto; i++)
		hp__rec_config_judge(m, &out->pareto[i], out->deadline_s);
	for (int i = 0; i < out->nrejected; i++)
		hp__rec_config_judge(m, &out->rejected[i].cfg, out->deadline_s);
}

static int by_time_then_energy(const void *a, const void *b)
{
	const struct hp_rec_config *x = a, *y = b;

	if (x->time_s != y->time_s)
		return x->time_s < y->time_s ? -1 : 1;
	return (x->energy_j > y->energy_j) - (x->energy_j < y->energy_j);
}

/*
 * The front as it is printed, on the point predictions.  The searches
 * built it on the judged time (a quantile); back on the point times a
 * point can be both slower and hungrier than another (its interval was
 * narrower).  Such a point is dropped, never the choice (which the
 * deadline picks on its judged time), and the rest sorted by time.
 */
static void front_on_points(struct hp_rec_result *out)
{
	struct hp_rec_config *p = out->pareto;
	int n = 0;

	for (int i = 0; i < out->npareto; i++) {
		bool choice = out->found && p[i].time_s == out->choice.time_s &&
			      p[i].energy_j == out->choice.energy_j,
		     beaten = false;
		for (int j = 0; j < out->npareto && !choice && !beaten; j++)
			beaten = j != i && p[j].time_s <= p[i].time_s &&
				 p[j].energy_j <= p[i].energy_j &&
				 (p[j].time_s < p[i].time_s ||
				  p[j].energy_j < p[i].energy_j);
		if (beaten)
			hp_rec_config_release(&p[i]);
		else
			p[n++] = p[i];
	}
	out->npareto = n;
	if (n > 1)
		qsort(p, (size_t)n, sizeof(*p), by_time_then_energy);
}

/* The distinct device types with free devices in the pool. */
static int pool_types(const struct hp_pool *pool, const char ***out)
{
	const char **v = NULL;
	int n = 0, a = 0;

	for (int i = 0; i < pool->n; i++)
		for (int d = 0; d < pool->nodes[i].ndevs; d++) {
			const char *t = pool->nodes[i].devs[d].type;
			bool seen = false;
			if (pool->nodes[i].devs[d].free < 1)
				continue;
			for (int k = 0; k < n && !seen; k++)
				seen = !strcmp(v[k], t);
			if (seen)
				continue;
			if (n == a) {
				int na = a ? a * 2 : 16;
				void *p = realloc(v, (size_t)na * sizeof(*v));
				if (!p) {
					free(v);
					return -1;
				}
				v = p;
				a = na;
			}
			v[n++] = t;
		}
	*out = v;
	return n;
}

/* The host cores feeding each device of types[i]: the fewest over the
 * nodes holding it (a node's cpu_cores over all its devices); 0 where no
 * node holding it gives cpu_cores. */
static void pool_input_cores(const struct hp_pool *pool,
			     const char *const *types, int ntypes, double *out)
{
	for (int k = 0; k < ntypes; k++) {
		out[k] = 0;
		for (int i = 0; i < pool->n; i++) {
			const struct hp_pool_node *nd = &pool->nodes[i];
			int total = 0;
			bool holds = false;
			for (int d = 0; d < nd->ndevs; d++) {
				total += nd->devs[d].count;
				holds = holds ||
					!strcmp(nd->devs[d].type, types[k]);
			}
			if (!holds || nd->cpu_cores < 1 || total < 1)
				continue;
			double c = (double)nd->cpu_cores / total;
			if (out[k] == 0 || c < out[k])
				out[k] = c;
		}
	}
}

int hp_recommend(const struct hp_estimator *est, const struct hp_catalog *cat,
		 const struct hp_workload *w1, const struct hp_pool *pool,
		 const struct hp_rec_job *job, struct hp_rec_result *out,
		 struct hp_error *err)
{
	struct hp__rec_model m = {0};
	const char **types = NULL;
	const char *only = NULL;
	double *cores = NULL; /* the input pipeline's; NULL: not modelled */
	int ntypes, rc;
	struct hp__rec_session *S = NULL, *Sbest = NULL;
	int64_t bs[HP_REC_MAX_BATCHES];
	int nb;

	memset(out, 0, sizeof(*out));
	if (!est || !cat || !w1 || !pool || !job)
		return hp_error_set(err, HP_EINVAL, "missing argument");
	if ((rc = check_job(job, err)))
		return rc;
	if (job->device_type) {
		const struct hp_device_type *t =
		    hp_catalog_find(cat, job->device_type);
		if (!t)
			return hp_error_set(err, HP_EINVAL,
					    "device type '%s' is not in the "
					    "catalog",
					    job->device_type);
		only = t->name;
	}
	nb = hp_rec_batches(job, bs); /* at least one: check_job() */
	ntypes = pool_types(pool, &types);
	if (ntypes < 0)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	/* the input pipeline's cores per device, each type's */
	if (job->input_sample_s > 0) {
		if (!(cores = calloc((size_t)(ntypes ? ntypes : 1),
				     sizeof(*cores)))) {
			free(types);
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		}
		pool_input_cores(pool, types, ntypes, cores);
	}
	rc = hp__rec_model_build_in(est, cat, w1, types, ntypes, bs[nb - 1],
				    cores, job->input_sample_s, &m, err);
	free(cores);
	free(types);
	if (!rc)
		hp__rec_model_pool(&m, pool);
	if (!rc)
		rc = hp__rec_model_judge(
		    &m,
		    job->confidence > 0 ? job->confidence : HP_REC_CONFIDENCE,
		    err);
	if (rc) {
		hp__rec_model_release(&m);
		return rc;
	}
	for (int bi = 0; bi < nb; bi++) {
		struct hp__rec_params q = {0};
		struct hp_rec_result r;
		bool better;

		q.global_batch = bs[bi];
		q.steps = job->steps > 0 ? job->steps
					 : (job->samples + q.global_batch - 1) /
					       q.global_batch * job->epochs;
		q.deadline_s = job->deadline_s;
		q.only_type = -1;
		if (only) {
			q.only_type = hp__rec_type_index(&m, only);
			if (q.only_type < 0) {
				out->deadline_s = job->deadline_s;
				snprintf(out->reason, sizeof(out->reason),
					 "no free %s devices in the pool",
					 only);
				break;
			}
		}
		q.ndevices = job->ndevices;
		q.nnodes = job->nnodes;
		q.max_mix = job->max_mix ? job->max_mix : HP_REC_MAX_MIX;
		if (q.nnodes > 0 && q.ndevices > 0 && q.nnodes > q.ndevices) {
			out->deadline_s = job->deadline_s;
			snprintf(out->reason, sizeof(out->reason),
				 "%d nodes for %d devices: each node used "
				 "takes at least one device",
				 q.nnodes, q.ndevices);
			break;
		}
		if ((rc = hp__rec_session_new(&m, pool, &q, NULL, &S, err)))
			goto fail;
		if ((rc = hp__rec_session_search(S, q.deadline_s, &r, err))) {
			hp__rec_session_free(S);
			goto fail;
		}
		if (bi == 0) {
			*out = r;
			Sbest = S;
			continue;
		}
		better =
		    r.found &&
		    (!out->found || (r.feasible && !out->feasible) ||
		     (r.feasible == out->feasible &&
		      (r.feasible ? r.choice.energy_j < out->choice.energy_j
				  : r.choice.time_s < out->choice.time_s)));
		if (better) {
			hp_rec_result_release(out);
			*out = r;
			hp__rec_session_free(Sbest);
			Sbest = S;
		} else {
			hp_rec_result_release(&r);
			hp__rec_session_free(S);
		}
	}
	if (!out->found && m.ntypes == 0 && !only) {
		/* no type has a free device: say so, not just that nothing
		 * can run */
		int64_t all = 0;
		for (int i = 0; i < pool->n; i++)
			for (int d = 0; d < pool->nodes[i].ndevs; d++)
				all += pool->nodes[i].devs[d].count;
		if (all)
			snprintf(out->reason, sizeof(out->reason),
				 "no free devices in the pool: its %lld "
				 "device%s are all allocated, reserved or "
				 "drained",
				 (long long)all, all == 1 ? "" : "s");
		else
			snprintf(out->reason, sizeof(out->reason),
				 "the pool has no devices");
	}
	if (!out->nnotes)
		for (int i = 0; i < m.ntypes; i++)
			if (!m.tt[i].ok && out->nnotes < 4)
				snprintf(out->notes[out->nnotes++],
					 sizeof(out->notes[0]),
					 "%s left out: %.110s", m.tt[i].name,
					 m.tt[i].why);
	/* The front of the chosen batch: its session's classes and
	 * candidates serve every deadline. */
	if (job->front >= 2 && out->found && Sbest &&
	    (rc = hp__rec_front(Sbest, job->front, out, err)))
		goto fail;
	hp__rec_session_free(Sbest);
	judge_all(out, &m);
	front_on_points(out);
	fill_lr_all(out, job);
	hp__rec_model_release(&m);
	return 0;
fail:
	hp__rec_session_free(Sbest);
	hp__rec_model_release(&m);
	hp_rec_result_release(out);
	return rc;
}
