/*
 * model.c - the recommender's model of one configuration's compute: the
 * estimator's step time, interval and power per device type at each local
 * batch (a grid of predictions, linear in between), the largest local
 * batch that fits in memory, and the split of the global batch that
 * equalises the types' step times.
 */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recommend/recommend_int.h"
#include "util/banned.h"

void hp__rec_model_release(struct hp__rec_model *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->ntypes; i++) {
		free(m->tt[i].step_s);
		free(m->tt[i].step_lo_s);
		free(m->tt[i].step_hi_s);
		free(m->tt[i].power_w);
		free(m->tt[i].step_pt_s);
	}
	free(m->tt);
	memset(m, 0, sizeof(*m));
}

int hp__rec_type_index(const struct hp__rec_model *m, const char *name)
{
	for (int i = 0; i < m->ntypes; i++)
		if (!strcmp(m->tt[i].name, name))
			return i;
	return -1;
}

double hp__rec_tt_memory(const struct hp__rec_tt *tt, int64_t b)
{
	if (!(tt->mem1_bytes > 0) || !(tt->mem_slope_bytes >= 0) || b < 1)
		return NAN;
	return tt->mem1_bytes + tt->mem_slope_bytes * (double)(b - 1);
}

/* Rescale w1 (batch 1) into w (arrays already sized) at batch b. */
static void scale_into(const struct hp_workload *w1, int64_t b,
		       struct hp_workload *w)
{
	double k = (double)b;

	w->flops_total = 0;
	for (int i = 0; i < w1->nlayers; i++) {
		w->flops[i] = w1->flops[i] * k;
		w->bytes[i] = w1->bytes[i] * k;
		w->flops_total += w->flops[i];
	}
	w->batch = b;
	w->activations_bytes = w1->activations_bytes * b;
	w->input_bytes = w1->input_bytes * b;
	w->peak_act_bytes = w1->peak_act_bytes * b;
}

struct pt {
	double t, lo, hi, p;
	bool fits;
	bool mem_known; /* the device's memory is known (the estimator says
			   "fits" when it is not) */
};

static int predict_at(const struct hp_estimator *est,
		      const struct hp_catalog *cat,
		      const struct hp_workload *w1, struct hp_workload *w,
		      struct hp__rec_tt *tt, int64_t b, struct pt *out,
		      struct hp_error *err)
{
	struct hp_prediction p;
	struct hp_predict_opts o;
	int rc;

	scale_into(w1, b, w);
	hp_predict_opts_init(&o);
	o.input_cores = tt->input_cores;
	o.input_sample_s = tt->input_sample_s;
	rc = hp_estimator_predict_opts(est, cat, w, tt->name, 1, &o, &p, err);
	tt->npred++;
	if (rc)
		return rc;
	out->t = p.step_time_s;
	out->lo = p.step_time_lo_s;
	out->hi = p.step_time_hi_s;
	out->p = p.power_w;
	out->fits = p.fits_in_memory;
	out->mem_known = p.memory_known && p.device_memory_bytes > 0;
	return 0;
}

/* Largest b in [1, cap] that fits, knowing 1 fits: the estimator's memory
 * is affine in b, so guess from b = 1 and 2, then check around. */
static int find_bmem(const struct hp_estimator *est,
		     const struct hp_catalog *cat, const struct hp_workload *w1,
		     struct hp_workload *w, struct hp__rec_tt *tt, int64_t cap,
		     int64_t *out, struct hp_error *err)
{
	struct hp_prediction p1, p2;
	struct pt q;
	int64_t lo = 1, hi = cap + 1, guess;
	double slope, room;
	int rc;

	scale_into(w1, 1, w);
	if ((rc = hp_estimator_predict(est, cat, w, tt->name, 1, -1, &p1, err)))
		return rc;
	scale_into(w1, 2, w);
	if ((rc = hp_estimator_predict(est, cat, w, tt->name, 1, -1, &p2, err)))
		return rc;
	tt->npred += 2;
	slope = (double)(p2.peak_memory_bytes - p1.peak_memory_bytes);
	tt->mem1_bytes = (double)p1.peak_memory_bytes;
	tt->mem_slope_bytes = isfinite(slope) ? fmax(slope, 0) : NAN;
	room = p1.device_memory_bytes - (double)p1.peak_memory_bytes;
	if (isnan(p1.device_memory_bytes) || !(slope > 0))
		guess = cap;
	else
		guess = 1 + (int64_t)fmin(floor(room / slope), (double)cap);
	if (guess < 1)
		guess = 1;
	if (guess > cap)
		guess = cap;
	/* Check guess and guess + 1; fall back to bisection. */
	if ((rc = predict_at(est, cat, w1, w, tt, guess, &q, err)))
		return rc;
	if (q.fits) {
		lo = guess;
		if (guess == cap) {
			*out = cap;
			return 0;
		}
		if ((rc = predict_at(est, cat, w1, w, tt, guess + 1, &q, err)))
			return rc;
		if (!q.fits) {
			*out = guess;
			return 0;
		}
		lo = guess + 1;
	} else {
		hi = guess;
	}
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		if ((rc = predict_at(est, cat, w1, w, tt, mid, &q, err)))
			return rc;
		if (q.fits)
			lo = mid;
		else
			hi = mid;
	}
	*out = lo;
	return 0;
}

static int build_type(const struct hp_estimator *est,
		      const struct hp_catalog *cat,
		      const struct hp_workload *w1, struct hp_workload *w,
		      struct hp__rec_tt *tt, int64_t cap, struct hp_error *err)
{
	struct hp_error e2 = {0};
	struct pt q, prev = {0};
	int64_t bmem, gb, prevb = 0;
	int rc;

	rc = predict_at(est, cat, w1, w, tt, 1, &q, &e2);
	if (rc == HP_ENOMEM)
		return hp_error_set(err, rc, "%s", e2.msg);
	if (rc) {
		snprintf(tt->why, sizeof(tt->why), "not predicted: %.100s",
			 e2.msg);
		return 0;
	}
	if (isnan(q.p)) {
		snprintf(tt->why, sizeof(tt->why),
			 "power not known: it cannot be chosen on energy");
		return 0;
	}
	/* Unknown memory is not unlimited memory: a type whose memory the
	 * catalog does not know (a host whose /proc/meminfo could not be
	 * read) cannot be given a local batch. */
	if (!q.mem_known) {
		snprintf(tt->why, sizeof(tt->why),
			 "memory not known: what fits cannot be judged");
		return 0;
	}
	if (!q.fits) {
		snprintf(tt->why, sizeof(tt->why),
			 "does not fit in memory at local batch 1");
		return 0;
	}
	rc = find_bmem(est, cat, w1, w, tt, cap, &bmem, &e2);
	if (rc) {
		if (rc == HP_ENOMEM)
			return hp_error_set(err, rc, "%s", e2.msg);
		snprintf(tt->why, sizeof(tt->why), "not predicted: %.100s",
			 e2.msg);
		return 0;
	}
	tt->local_fit_max = bmem;
	tt->local_max = bmem;
	tt->step_s = calloc((size_t)bmem + 1, sizeof(double));
	tt->step_lo_s = calloc((size_t)bmem + 1, sizeof(double));
	tt->step_hi_s = calloc((size_t)bmem + 1, sizeof(double));
	tt->power_w = calloc((size_t)bmem + 1, sizeof(double));
	if (!tt->step_s || !tt->step_lo_s || !tt->step_hi_s || !tt->power_w)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	/* Grid: every b up to 8, then 4 per octave, and bmem. */
	gb = 1;
	tt->power_min_w = INFINITY;
	for (;;) {
		int64_t b = gb > bmem ? bmem : gb;
		if ((rc = predict_at(est, cat, w1, w, tt, b, &q, &e2))) {
			if (rc == HP_ENOMEM)
				return hp_error_set(err, rc, "%s", e2.msg);
			snprintf(tt->why, sizeof(tt->why),
				 "not predicted at local batch %lld: %.80s",
				 (long long)b, e2.msg);
			return 0;
		}
		if (isnan(q.p) || !(q.t > 0)) {
			snprintf(tt->why, sizeof(tt->why),
				 "no step time or power at local batch %lld",
				 (long long)b);
			return 0;
		}
		tt->step_s[b] = q.t;
		tt->step_lo_s[b] = q.lo;
		tt->step_hi_s[b] = q.hi;
		tt->power_w[b] = q.p;
		if (prevb)
			for (int64_t x = prevb + 1; x < b; x++) {
				double f =
				    (double)(x - prevb) / (double)(b - prevb);
				tt->step_s[x] = prev.t + f * (q.t - prev.t);
				tt->step_lo_s[x] =
				    prev.lo + f * (q.lo - prev.lo);
				tt->step_hi_s[x] =
				    prev.hi + f * (q.hi - prev.hi);
				tt->power_w[x] = prev.p + f * (q.p - prev.p);
			}
		if (q.p < tt->power_min_w)
			tt->power_min_w = q.p;
		prev = q;
		prevb = b;
		if (b == bmem)
			break;
		if (gb < 8) {
			gb++;
		} else {
			int64_t oct = 8;
			while (oct * 2 <= gb)
				oct *= 2;
			gb += oct / 4;
		}
	}
	/* A larger local batch is never faster: keep the running maximum
	 * (a no-op on the physical family, whose time grows with the
	 * batch; the split and the bounds of the search rely on it). */
	for (int64_t b = 2; b <= bmem; b++) {
		tt->step_s[b] = fmax(tt->step_s[b], tt->step_s[b - 1]);
		tt->step_lo_s[b] = fmax(tt->step_lo_s[b], tt->step_lo_s[b - 1]);
		tt->step_hi_s[b] = fmax(tt->step_hi_s[b], tt->step_hi_s[b - 1]);
	}
	tt->ok = true;
	return 0;
}

int hp__rec_model_build(const struct hp_estimator *est,
			const struct hp_catalog *cat,
			const struct hp_workload *w1, const char *const *types,
			int ntypes, int64_t cap, struct hp__rec_model *m,
			struct hp_error *err)
{
	return hp__rec_model_build_in(est, cat, w1, types, ntypes, cap, NULL, 0,
				      m, err);
}

int hp__rec_model_build_in(const struct hp_estimator *est,
			   const struct hp_catalog *cat,
			   const struct hp_workload *w1,
			   const char *const *types, int ntypes, int64_t cap,
			   const double *input_cores, double input_sample_s,
			   struct hp__rec_model *m, struct hp_error *err)
{
	struct hp_workload w = {0};
	struct hp_error e2 = {0};
	int rc = 0;

	memset(m, 0, sizeof(*m));
	if (cap > HP__REC_MAX_LOCAL)
		cap = HP__REC_MAX_LOCAL;
	if (cap < 1)
		cap = 1;
	m->tt = calloc((size_t)(ntypes ? ntypes : 1), sizeof(*m->tt));
	if (!m->tt)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	m->ntypes = ntypes;
	m->grad_bytes = 4.0 * (double)w1->params;
	m->comm_scale = m->net_scale = 1;
	m->confidence = 0.5;
	m->cat = cat;
	for (int i = 0; i < ntypes; i++) {
		snprintf(m->tt[i].name, sizeof(m->tt[i].name), "%s", types[i]);
		if (input_cores && input_cores[i] > 0 && input_sample_s > 0) {
			m->tt[i].input_cores = input_cores[i];
			m->tt[i].input_sample_s = input_sample_s;
		}
	}
	/* One scratch workload, rescaled in place for every prediction. */
	if ((rc = hp_workload_at_batch(w1, 1, &w, &e2))) {
		hp__rec_model_release(m);
		return hp_error_set(err, rc, "%s", e2.msg);
	}
	for (int i = 0; i < ntypes && !rc; i++)
		rc = build_type(est, cat, w1, &w, &m->tt[i], cap, err);
	hp_workload_release(&w);
	if (rc)
		hp__rec_model_release(m);
	return rc;
}

double hp__rec_intra_s(double bw_gbps, int k, double g)
{
	struct hp_comm_net n;
	struct hp_comm_time t;

	if (k <= 1)
		return 0;
	hp_comm_net_default(&n, k, 1, bw_gbps * 1e9 / 8, 0, 0);
	n.intra_msg_s = HP_REC_INTRA_LATENCY_S;
	hp_comm_ddp(&n, g, 0, &t);
	return t.intra_s;
}

double hp__rec_inter_s(double payload_gbps, double msg_s, int m, double g)
{
	struct hp_comm_net n;
	struct hp_comm_time t;

	if (m <= 1)
		return 0;
	hp_comm_net_default(&n, 1, m, 0, payload_gbps, 0);
	n.net_efficiency = 1;
	n.net_msg_s = msg_s;
	hp_comm_ddp(&n, g, 0, &t);
	return t.inter_s;
}

void hp__rec_node_net(const struct hp__rec_model *m,
		      const struct hp_pool_node *nd, double *payload_gbps,
		      double *msg_s)
{
	struct hp_comm_net n;

	hp_comm_net_default(&n, 1, 2, 0, nd->net_bw_gbps, nd->net_latency_us);
	hp_comm_net_transport(&n, hp_pool_node_transport(nd, m->cat));
	*payload_gbps = nd->net_bw_gbps * n.net_efficiency;
	*msg_s = 2 * n.net_latency_s + n.net_msg_s; /* two hops a message */
}

void hp__rec_model_pool(struct hp__rec_model *m, const struct hp_pool *pool)
{
	double q = 0;

	for (int i = 0; pool && i < pool->n; i++) {
		double x = hp_comm_transport_log_q90(
		    hp_pool_node_transport(&pool->nodes[i], m->cat));
		if (x > q)
			q = x;
	}
	m->comm_log_q90 = q;
}

static double comm_log_q90(const struct hp__rec_model *m)
{
	return m->comm_log_q90 > 0 ? m->comm_log_q90 : HP_REC_COMM_LOG_Q90;
}

/* Type j's step time when it takes s samples over n devices. */
static double tshare(const struct hp__rec_tt *tt, int64_t s, int n)
{
	return tt->step_s[(s + n - 1) / n];
}

static void fill_type(const struct hp__rec_tt *tt, int j, int64_t s, int n,
		      struct hp__rec_comp *o)
{
	int64_t bhi = (s + n - 1) / n;
	int nhi = (int)(s - (bhi - 1) * n); /* devices at bhi */

	o->samples[j] = s;
	o->local_hi[j] = bhi;
	o->n_at_hi[j] = nhi;
	o->step_s[j] = tt->step_s[bhi];
	o->power_w[j] = nhi * tt->power_w[bhi] +
			(n - nhi) * (bhi > 1 ? tt->power_w[bhi - 1] : 0);
	if (tt->step_s[bhi] > o->compute_s) {
		o->compute_s = tt->step_s[bhi];
	}
	if (tt->step_lo_s[bhi] > o->compute_lo_s)
		o->compute_lo_s = tt->step_lo_s[bhi];
	if (tt->step_hi_s[bhi] > o->compute_hi_s)
		o->compute_hi_s = tt->step_hi_s[bhi];
	o->devices_power_w += o->power_w[j];
}

int hp__rec_compute(const struct hp__rec_model *m, const int *ty, const int *n,
		    int k, int64_t B, struct hp__rec_comp *out)
{
	const struct hp__rec_tt *a, *b;
	int64_t lo, hi, s, best;

	memset(out, 0, sizeof(*out));
	if (k == 1) {
		a = &m->tt[ty[0]];
		if (!a->ok || n[0] < 1 || n[0] > B ||
		    (B + n[0] - 1) / n[0] > a->local_max)
			return -1;
		fill_type(a, 0, B, n[0], out);
		return 0;
	}
	if (k != 2)
		return -1;
	a = &m->tt[ty[0]];
	b = &m->tt[ty[1]];
	if (!a->ok || !b->ok || n[0] < 1 || n[1] < 1 ||
	    (int64_t)n[0] + n[1] > B)
		return -1;
	/* Type 0 takes s samples: at least one per device, within memory. */
	lo = n[0];
	if (B - (int64_t)n[1] * b->local_max > lo)
		lo = B - (int64_t)n[1] * b->local_max;
	hi = B - n[1];
	if ((int64_t)n[0] * a->local_max < hi)
		hi = (int64_t)n[0] * a->local_max;
	if (lo > hi)
		return -1;
	/* f0(s) grows with s, f1(s) shrinks: the smallest s with f0 >= f1
	 * and the one before it hold the least max. */
	{
		int64_t l = lo, h = hi + 1;
		while (l < h) {
			int64_t mid = l + (h - l) / 2;
			if (tshare(a, mid, n[0]) >= tshare(b, B - mid, n[1]))
				h = mid;
			else
				l = mid + 1;
		}
		s = l;
	}
	best = -1;
	{
		double bm = INFINITY, bd = INFINITY;
		for (int64_t c = s - 1; c <= s; c++) {
			double x, y, mx, d;
			if (c < lo || c > hi)
				continue;
			x = tshare(a, c, n[0]);
			y = tshare(b, B - c, n[1]);
			mx = x > y ? x : y;
			d = fabs(x - y);
			if (mx < bm || (mx == bm && d < bd)) {
				bm = mx;
				bd = d;
				best = c;
			}
		}
	}
	fill_type(a, 0, best, n[0], out);
	fill_type(b, 1, B - best, n[1], out);
	return 0;
}

/* The 90th percentile of the standard normal. */
#define Z90 1.2815515655446004

double hp__rec_z(double p)
{
	return gsl_cdf_ugaussian_Pinv(p);
}

/* log(quantile / point) at z of a split normal whose 10th and 90th
 * percentiles are lo and hi around the point pt. */
static double split_log(double pt, double lo, double hi, double z)
{
	double u;

	if (!(pt > 0))
		return 0;
	if (z >= 0)
		u = hi > pt ? log(hi / pt) : 0;
	else
		u = lo > 0 && lo < pt ? log(pt / lo) : 0;
	return u / Z90 * z;
}

int hp__rec_model_judge(struct hp__rec_model *m, double confidence,
			struct hp_error *err)
{
	double z = hp__rec_z(confidence);

	for (int i = 0; i < m->ntypes; i++) {
		struct hp__rec_tt *tt = &m->tt[i];
		if (!tt->ok)
			continue;
		tt->step_pt_s =
		    malloc(((size_t)tt->local_max + 1) * sizeof(double));
		if (!tt->step_pt_s)
			return hp_error_set(err, HP_ENOMEM, "out of memory");
		memcpy(tt->step_pt_s, tt->step_s,
		       ((size_t)tt->local_max + 1) * sizeof(double));
		for (int64_t b = 1; b <= tt->local_max; b++)
			tt->step_s[b] =
			    tt->step_pt_s[b] *
			    exp(split_log(tt->step_pt_s[b], tt->step_lo_s[b],
					  tt->step_hi_s[b], z));
		/* Still never faster at a larger local batch. */
		for (int64_t b = 2; b <= tt->local_max; b++)
			tt->step_s[b] = fmax(tt->step_s[b], tt->step_s[b - 1]);
	}
	m->comm_scale = exp(HP_REC_COMM_LOG_Q90 / Z90 * z);
	m->net_scale = exp(comm_log_q90(m) / Z90 * z);
	m->confidence = confidence;
	return 0;
}

/* The job's time if every part of c is at its z-quantile. */
struct jparts {
	double pt[HP_REC_MAX_MIX], lo[HP_REC_MAX_MIX], hi[HP_REC_MAX_MIX];
	int n;
	double intra_s, inter_s, steps, startup_s; /* intra and inter: the
						      parts of a step */
	double net_q90; /* the across-node all-reduce's log error, 90th
			   percentile (inside a node: HP_REC_COMM_LOG_Q90) */
};

static double time_at(const struct jparts *J, double z)
{
	double c = 0;

	for (int j = 0; j < J->n; j++) {
		double t =
		    J->pt[j] * exp(split_log(J->pt[j], J->lo[j], J->hi[j], z));
		if (t > c)
			c = t;
	}
	c += J->intra_s * exp(HP_REC_COMM_LOG_Q90 / Z90 * z) +
	     J->inter_s * exp(J->net_q90 / Z90 * z);
	return J->steps * c + J->startup_s;
}

void hp__rec_config_judge(const struct hp__rec_model *m,
			  struct hp_rec_config *c, double deadline_s)
{
	struct jparts J = {0};
	double cs = m->comm_scale > 0 ? m->comm_scale : 1;
	double ns = m->net_scale > 0 ? m->net_scale : 1;
	double comp = 0, clo = 0, chi = 0, zl = -8, zh = 8;

	c->time_judged_s = c->time_s;
	/* a front's point or a rejected set was costed in a search of its
	 * own deadline (the front's, the fastest's): judged on the job's */
	c->meets_deadline = c->time_judged_s <= deadline_s;
	for (int j = 0; j < c->ntypes; j++) {
		int i = hp__rec_type_index(m, c->types[j].type);
		int64_t b = c->types[j].local_max;
		const struct hp__rec_tt *tt;
		if (i < 0 || b < 1 || b > m->tt[i].local_max)
			continue;
		tt = &m->tt[i];
		J.pt[J.n] = tt->step_pt_s ? tt->step_pt_s[b] : tt->step_s[b];
		J.lo[J.n] = tt->step_lo_s[b];
		J.hi[J.n] = tt->step_hi_s[b];
		c->types[j].step_time_s = J.pt[J.n];
		comp = fmax(comp, J.pt[J.n]);
		clo = fmax(clo, J.lo[J.n]);
		chi = fmax(chi, J.hi[J.n]);
		J.n++;
	}
	if (J.n == 0) {
		c->deadline_probability = NAN;
		return;
	}
	/* Back to the point predictions. */
	c->intra_time_s /= cs;
	c->inter_time_s /= ns;
	c->comm_time_s =
	    (c->intra_time_s + c->inter_time_s) * (1 - HP_REC_OVERLAP);
	c->compute_time_s = comp;
	c->step_time_s = comp + c->comm_time_s;
	c->step_time_lo_s = clo + c->comm_time_s;
	c->step_time_hi_s = chi + c->comm_time_s;
	c->time_s = (double)c->steps * c->step_time_s + c->startup_s;
	c->time_lo_s = (double)c->steps * c->step_time_lo_s + c->startup_s;
	c->time_hi_s = (double)c->steps * c->step_time_hi_s + c->startup_s;
	c->energy_j = c->time_s * c->power_w;
	c->energy_lo_j = c->time_lo_s * c->power_w;
	c->energy_hi_j = c->time_hi_s * c->power_w;
	/* P(time <= deadline): the z where the time reaches it. */
	J.intra_s = c->intra_time_s * (1 - HP_REC_OVERLAP);
	J.inter_s = c->inter_time_s * (1 - HP_REC_OVERLAP);
	J.steps = (double)c->steps;
	J.startup_s = c->startup_s;
	J.net_q90 = comm_log_q90(m);
	if (time_at(&J, zl) > deadline_s) {
		c->deadline_probability = 0;
		return;
	}
	if (time_at(&J, zh) <= deadline_s) {
		c->deadline_probability = 1;
		return;
	}
	for (int it = 0; it < 60; it++) {
		double z = (zl + zh) / 2;
		if (time_at(&J, z) <= deadline_s)
			zl = z;
		else
			zh = z;
	}
	c->deadline_probability = gsl_cdf_ugaussian_P((zl + zh) / 2);
}
