/*
 * fit.c - fit an estimator on a sample set: the physical model per CPU
 * host and once for all GPU types, per-GPU-type corrections, the linear
 * baseline per device type, the memory model and the power curve, and the
 * residual quantiles (by inner cross-validation) that size the intervals.
 */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"
#include "util/par.h"

#define INNER_FOLDS 5
#define MIN_CPU_ROWS 8
#define MIN_LINEAR_ROWS 10
/* Shrinkage of a GPU type's correction toward the shared model: as if
 * this many extra rows said "no correction". */
#define SCALE_SHRINK 2.0

const char *hp_est_family_name(enum hp_est_family f)
{
	switch (f) {
	case HP_EST_PHYSICAL:
		return "physical";
	case HP_EST_LINEAR:
		return "linear";
	case HP_EST_ROOFLINE:
		return "roofline";
	}
	return "?";
}

int hp_est_family_parse(const char *s, enum hp_est_family *out)
{
	for (int f = HP_EST_PHYSICAL; f <= HP_EST_ROOFLINE; f++)
		if (s && !strcmp(s, hp_est_family_name(f))) {
			*out = f;
			return 0;
		}
	return HP_EINVAL;
}

const char *hp_precision_name(enum hp_precision p)
{
	switch (p) {
	case HP_PREC_FP32:
		return "fp32";
	case HP_PREC_TF32:
		return "tf32";
	case HP_PREC_AMP:
		return "amp";
	}
	return "?";
}

int hp_precision_parse(const char *s, enum hp_precision *out)
{
	for (int p = HP_PREC_FP32; p <= HP_PREC_AMP; p++)
		if (s && !strcmp(s, hp_precision_name(p))) {
			*out = p;
			return 0;
		}
	return HP_EINVAL;
}

enum hp_est_family hp_estimator_family(const struct hp_estimator *est)
{
	return est->family;
}

const char *hp_estimator_provenance(const struct hp_estimator *est)
{
	return est->provenance;
}

void hp_estimator_free(struct hp_estimator *est)
{
	if (!est)
		return;
	free(est->dev);
	free(est);
}

const struct hp__dev_fit *hp__est_dev(const struct hp_estimator *est,
				      const char *name)
{
	for (int i = 0; i < est->ndev; i++)
		if (!strcmp(est->dev[i].name, name))
			return &est->dev[i];
	return NULL;
}

void hp__progress_add(struct hp__progress *p, int64_t n)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->done += n;
	if (p->fn)
		p->fn(p->stage, p->done, p->total, p->ud);
	pthread_mutex_unlock(&p->mu);
}

/* A stable pseudo-random fold for item i: a configuration's index
 * (fitpt.grp), so that its repeats, and the same model at the same batch
 * in another setup, are held out together (a repeat in the training folds
 * predicts its twin as well as the noise lets it: intervals from such
 * folds come out too narrow). */
static int fold_of(int i, int k)
{
	uint32_t h = (uint32_t)i * 2654435761u;
	h ^= h >> 15;
	return (int)(h % (uint32_t)k);
}

/* Whether item i of k is in the inner cross-validation's subsample: all
 * of them up to HP__CV_MAX_ROWS, beyond a fixed pseudo-random share of
 * HP__CV_MAX_ROWS / k. */
static bool in_cv(int i, int k)
{
	uint32_t h = (uint32_t)i * 2246822519u;

	if (k <= HP__CV_MAX_ROWS)
		return true;
	h ^= h >> 13;
	h *= 3266489917u;
	h ^= h >> 16;
	return (uint64_t)h * (uint64_t)k < (uint64_t)HP__CV_MAX_ROWS << 32;
}

/* The GPU model: shared parameters and a correction per device index. */
struct gpu_model {
	double th[HP__NTH];
	double *scale; /* per device index */
};

/* The GPU fit of pts in use[] (all when NULL) into m, from the prior or,
 * for a fold of a large fit, refitted from the whole fit (start, may be
 * NULL). */
static int gpu_fit(const struct hp__fitpt *pts, int n, const bool *use,
		   int ndev, const struct gpu_model *start, struct gpu_model *m,
		   struct hp__progress *prog, struct hp_error *err)
{
	struct hp__fitpt *sub;
	bool fr[HP__NTH] = {0};
	double prior[HP__NTH];
	int k = 0, rc;

	sub = malloc((size_t)(n ? n : 1) * sizeof(*sub));
	if (!sub)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		if (!use || use[i])
			sub[k++] = pts[i];
	hp__phys_prior(false, prior);
	memcpy(m->th, start ? start->th : prior, sizeof(prior));
	for (int j = 0; j <= HP__TH_T0; j++)
		fr[j] = true;
	fr[HP__TH_EMW] = false;
	/* The public models have one small classifier each: nothing to
	 * learn fully connected layers from, so they keep the prior. */
	fr[HP__TH_EMAX + HP_EST_FC] = fr[HP__TH_TAU + HP_EST_FC] = false;
	for (int i = 0; i < k; i++) {
		if (sub[i].d.tf32 > 0 && sub[i].d.prec == HP_PREC_FP32)
			fr[HP__TH_KAPPA] = true;
		if (sub[i].d.fp16 > sub[i].d.fp32 &&
		    sub[i].d.prec == HP_PREC_AMP)
			fr[HP__TH_KAPPA_AMP] = true;
		if (sub[i].ndev > 1)
			fr[HP__TH_COMM] = true;
		if (sub[i].src == HP__SRC_GAVEL)
			fr[HP__TH_SRC] = fr[HP__TH_SRC_T0] = fr[HP__TH_SRC_TS] =
			    true;
		if (sub[i].src == HP__SRC_ZEUS)
			fr[HP__TH_SRC + 1] = fr[HP__TH_SRC_T0 + 1] =
			    fr[HP__TH_SRC_TS + 1] = true;
	}
	if (start) {
		memcpy(m->scale, start->scale, (size_t)ndev * sizeof(double));
		rc = hp__phys_refit(sub, k, m->th, prior, fr, ndev, m->scale,
				    SCALE_SHRINK, err);
	} else {
		rc = hp__phys_fit(sub, k, m->th, prior, fr, ndev, m->scale,
				  SCALE_SHRINK, err);
	}
	free(sub);
	hp__progress_add(prog, 1);
	return rc;
}

static void quantiles(double *r, int n, double *lo, double *hi)
{
	if (n < 3) {
		*lo = -0.3;
		*hi = 0.3;
		return;
	}
	*lo = hp__quantile(r, n, 0.1);
	*hi = hp__quantile(r, n, 0.9);
}

/*
 * Append to res the log residuals log(measured / predicted) of the points
 * of pts not in use[] and in the cross-validation subsample, predicted by
 * th with scale (may be NULL; nscale entries).  ho and t: scratch of n.
 */
static int held_out_res(const struct hp__fitpt *pts, int n, const bool *use,
			const double *th, int nscale, const double *scale,
			struct hp__fitpt *ho, double *t, double *res, int *nres,
			struct hp_error *err)
{
	int m = 0, rc;

	for (int i = 0; i < n; i++)
		if (!use[i] && in_cv(i, n))
			ho[m++] = pts[i];
	if ((rc = hp__phys_times(ho, m, th, nscale, scale, t, err)))
		return rc;
	for (int i = 0; i < m; i++)
		res[(*nres)++] = log(ho[i].t / t[i]);
	return 0;
}

/* Run the tasks; on failure, err gets the lowest failed task's error
 * (errs[i], stride bytes apart). */
static int run_tasks(int n, int threads, hp__task_fn fn, void *ud,
		     const struct hp_error *errs, size_t stride,
		     struct hp_error *err)
{
	int rc = hp__par_run(n, threads, fn, ud);

	if (!rc)
		return 0;
	for (int i = 0; i < n; i++) {
		const struct hp_error *e =
		    (const struct hp_error *)((const char *)errs +
					      (size_t)i * stride);
		if (e->code) {
			if (err)
				*err = *e;
			return e->code;
		}
	}
	return hp_error_set(err, rc, "%s", hp_strerror(rc));
}

/* The GPU fit's inner cross-validation: INNER_FOLDS k-fold tasks, then
 * one task per GPU type left out. */
struct gpu_cv {
	const struct hp__fitpt *pts;
	int n, ndev;
	const struct gpu_model *warm; /* start from the whole fit, or NULL */
	struct hp__progress *prog;
	int *lodo_dev; /* task INNER_FOLDS + j leaves out type lodo_dev[j] */
	double *res;   /* task i's held-out residuals at res + i * n */
	int *nres;     /* per task */
	struct hp_error *err; /* per task */
};

static int gpu_cv_task(int task, void *ud)
{
	struct gpu_cv *cv = ud;
	int n = cv->n, rc, d = -1;
	struct gpu_model mf;
	bool *use = calloc((size_t)n + 1, sizeof(*use));
	double *t = malloc((size_t)n * sizeof(*t) + 1);
	struct hp__fitpt *ho = malloc((size_t)n * sizeof(*ho) + 1);
	struct hp_error *err = &cv->err[task];

	mf.scale = calloc((size_t)cv->ndev + 1, sizeof(double));
	if (!use || !t || !ho || !mf.scale) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if (task < INNER_FOLDS) { /* k-fold: residuals of measured types */
		for (int i = 0; i < n; i++)
			use[i] = in_cv(i, n) &&
				 fold_of(cv->pts[i].grp, INNER_FOLDS) != task;
	} else { /* one type left out: residuals of unmeasured types */
		d = cv->lodo_dev[task - INNER_FOLDS];
		for (int i = 0; i < n; i++)
			use[i] = in_cv(i, n) && cv->pts[i].dev != d;
	}
	if ((rc = gpu_fit(cv->pts, n, use, cv->ndev, cv->warm, &mf, cv->prog,
			  err)))
		goto out;
	if (d >= 0) {
		mf.scale[d] = 0;
		/* the subsample's other rows are in use: only d's are out */
		for (int i = 0; i < n; i++)
			use[i] = cv->pts[i].dev != d;
	}
	rc = held_out_res(cv->pts, n, use, mf.th, cv->ndev, mf.scale, ho, t,
			  cv->res + (size_t)task * (size_t)n, &cv->nres[task],
			  err);
out:
	free(use);
	free(t);
	free(ho);
	free(mf.scale);
	return rc;
}

/* Gather tasks [from, to)'s residuals, in task order, into out. */
static int gather_res(const struct gpu_cv *cv, int from, int to, double *out)
{
	int m = 0;

	for (int i = from; i < to; i++)
		for (int j = 0; j < cv->nres[i]; j++)
			out[m++] =
			    cv->res[(size_t)i * (size_t)cv->n + (size_t)j];
	return m;
}

/* Fit the GPU part of est from the GPU points; with inner, size its
 * intervals from folds and types left out, fitted on up to `threads`
 * threads. */
static int fit_gpus(struct hp_estimator *est, const struct hp__fitpt *pts,
		    int n, bool inner, int threads, struct hp__progress *prog,
		    struct hp_error *err)
{
	struct gpu_model m;
	struct gpu_cv cv = {0};
	double *res = NULL;
	int nres, ntasks = INNER_FOLDS, rc;

	m.scale = calloc((size_t)est->ndev + 1, sizeof(double));
	cv.lodo_dev = calloc((size_t)est->ndev + 1, sizeof(int));
	if (!m.scale || !cv.lodo_dev) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = gpu_fit(pts, n, NULL, est->ndev, NULL, &m, prog, err)))
		goto out;
	memcpy(est->gpu_th, m.th, sizeof(m.th));
	est->has_gpu = true;
	est->gpu_n = n;
	est->gpu_amp_n = 0;
	for (int i = 0; i < n; i++)
		est->gpu_amp_n += pts[i].d.prec == HP_PREC_AMP;
	for (int d = 0; d < est->ndev; d++)
		if (!est->dev[d].cpu) {
			est->dev[d].log_scale = m.scale[d];
			memcpy(est->dev[d].th, m.th, sizeof(m.th));
		}
	est->gpu_q_lo = est->gpu_lodo_lo = -0.3;
	est->gpu_q_hi = est->gpu_lodo_hi = 0.3;
	if (!inner)
		goto out;
	/* the types with a held-out point in the subsample */
	for (int d = 0; d < est->ndev; d++) {
		bool any = false;
		if (est->dev[d].cpu)
			continue;
		for (int i = 0; i < n && !any; i++)
			any = in_cv(i, n) && pts[i].dev == d;
		if (any)
			cv.lodo_dev[ntasks++ - INNER_FOLDS] = d;
	}
	cv.pts = pts;
	cv.n = n;
	cv.ndev = est->ndev;
	/* beyond HP__CV_WARM_ROWS, each fold starts from the whole fit */
	cv.warm = n > HP__CV_WARM_ROWS ? &m : NULL;
	cv.prog = prog;
	cv.res = malloc((size_t)ntasks * (size_t)n * sizeof(double) + 1);
	cv.nres = calloc((size_t)ntasks, sizeof(int));
	cv.err = calloc((size_t)ntasks, sizeof(*cv.err));
	res = malloc((size_t)ntasks * (size_t)n * sizeof(double) + 1);
	if (!cv.res || !cv.nres || !cv.err || !res) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = run_tasks(ntasks, threads, gpu_cv_task, &cv, cv.err,
			    sizeof(cv.err[0]), err)))
		goto out;
	nres = gather_res(&cv, 0, INNER_FOLDS, res);
	quantiles(res, nres, &est->gpu_q_lo, &est->gpu_q_hi);
	nres = gather_res(&cv, INNER_FOLDS, ntasks, res);
	quantiles(res, nres, &est->gpu_lodo_lo, &est->gpu_lodo_hi);
out:
	free(m.scale);
	free(cv.lodo_dev);
	free(cv.res);
	free(cv.nres);
	free(cv.err);
	free(res);
	return rc;
}

/* Mean absolute log residual of th on pts (t: scratch of n). */
static int mean_abs_res(const double *th, const struct hp__fitpt *pts, int n,
			double *t, double *out, struct hp_error *err)
{
	double s = 0;
	int rc;

	if ((rc = hp__phys_times(pts, n, th, 0, NULL, t, err)))
		return rc;
	for (int i = 0; i < n; i++)
		s += fabs(log(t[i] / pts[i].t));
	*out = n ? s / n : 0;
	return 0;
}

/*
 * A CPU fit from two starts, keeping the better: the cache term makes the
 * problem non-convex (a cache that speeds small working sets up, or one
 * that does little), and Levenberg-Marquardt finds the minimum nearest
 * its start.  Both use the same prior.  With start (may be NULL): a fold
 * of a large fit, near the whole fit, refitted from it (hp__phys_refit).
 */
static int cpu_fit(const struct hp__fitpt *pts, int n, double *th,
		   const bool *fr, const double *start,
		   struct hp__progress *prog, struct hp_error *err)
{
	double prior[HP__NTH], alt[HP__NTH], ra, rt, *t;
	int rc;

	if (!(t = malloc((size_t)(n ? n : 1) * sizeof(*t))))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	hp__phys_prior(true, prior);
	if (fr[HP__TH_KHALF])
		prior[HP__TH_KHALF] = log(HP__KHALF_START);
	if (start) {
		memcpy(th, start, sizeof(prior));
		rc = hp__phys_refit(pts, n, th, prior, fr, 0, NULL, 0, err);
		goto out;
	}
	memcpy(th, prior, sizeof(prior));
	if ((rc = hp__phys_fit(pts, n, th, prior, fr, 0, NULL, 0, err)))
		goto out;
	memcpy(alt, prior, sizeof(prior));
	alt[HP__TH_CACHE] = log(64e3);
	alt[HP__TH_CACHEX] = log(0.25);
	if ((rc = hp__phys_fit(pts, n, alt, prior, fr, 0, NULL, 0, err)) ||
	    (rc = mean_abs_res(alt, pts, n, t, &ra, err)) ||
	    (rc = mean_abs_res(th, pts, n, t, &rt, err)))
		goto out;
	if (ra < rt)
		memcpy(th, alt, sizeof(alt));
out:
	free(t);
	hp__progress_add(prog, 1);
	return rc;
}

/*
 * The terms a CPU fit's rows can see.  x_max (a max pooling's traffic)
 * is fitted only when the rows hold both max- and average-pooling nets,
 * k_half (the reduction length) only when they hold at least two kernel
 * sizes, each in at least a tenth of the rows (and 3): otherwise the
 * term trades off against others (e_a against a max pooling every net
 * has; c_half against a reduction that grows with the channels) and a
 * fit on a profile of 3x3 max-pooling nets took x_max 0.07, which made
 * real architectures 9 points worse.  A term not fitted stays at the
 * value that turns it off.
 */
static void cpu_free_terms(const struct hp__fitpt *pts, int n, bool *fr)
{
	enum { NAREA = 16 };
	double area[NAREA];
	int acount[NAREA] = {0}, na = 0, nmax = 0, navg = 0, need, sizes = 0;

	for (int i = 0; i < n; i++) {
		const struct hp_workload *w = pts[i].w;
		bool mx = false, av = false, seen[NAREA] = {false};
		for (int l = 0; l < w->nlayers; l++) {
			int a;
			if (w->pool) {
				mx |= w->pool[l] == HP_POOL_MAX;
				av |= w->pool[l] == HP_POOL_AVG;
			}
			if (!w->karea || !(w->karea[l] > 0))
				continue;
			for (a = 0; a < na && area[a] != w->karea[l]; a++)
				;
			if (a == na) {
				if (na == NAREA)
					continue;
				area[na++] = w->karea[l];
			}
			if (!seen[a]) {
				seen[a] = true;
				acount[a]++;
			}
		}
		nmax += mx;
		navg += av;
	}
	need = (n + 9) / 10 > 3 ? (n + 9) / 10 : 3;
	for (int a = 0; a < na; a++)
		sizes += acount[a] >= need;
	fr[HP__TH_IDX] = nmax >= need && navg >= need;
	fr[HP__TH_KHALF] = sizes >= 2;
}

/* The parameters a CPU fit on pts frees. */
static void cpu_free_params(const struct hp__fitpt *pts, int n, bool *fr)
{
	memset(fr, 0, HP__NTH * sizeof(*fr));
	for (int j = 0; j <= HP__TH_T0; j++)
		fr[j] = true;
	fr[HP__TH_EMW] = fr[HP__TH_CHALF] = true;
	fr[HP__TH_CACHE] = fr[HP__TH_CACHEX] = true;
	fr[HP__TH_SHALF] = true;
	cpu_free_terms(pts, n, fr);
}

int hp__cpu_fit_points(const struct hp__fitpt *pts, int n, double *th,
		       struct hp_error *err)
{
	bool fr[HP__NTH];

	cpu_free_params(pts, n, fr);
	return cpu_fit(pts, n, th, fr, NULL, NULL, err);
}

/* The inner cross-validation of a CPU type's fit: each fold a task. */
struct cpu_cv {
	const struct hp__fitpt *sub; /* the type's points */
	int k;
	const bool *fr;
	const double *warm; /* start folds from the whole fit, or NULL */
	struct hp__progress *prog;
	double *res; /* fold f's held-out residuals at res + f * k */
	int nres[INNER_FOLDS];
	struct hp_error err[INNER_FOLDS];
};

static int cpu_cv_fold(int f, void *ud)
{
	struct cpu_cv *cv = ud;
	int k = cv->k, m = 0, rc;
	struct hp__fitpt *tr = malloc((size_t)k * sizeof(*tr));
	double *t = malloc((size_t)k * sizeof(*t)), th[HP__NTH];
	bool *use = malloc((size_t)k * sizeof(*use));

	if (!tr || !t || !use) {
		rc = hp_error_set(&cv->err[f], HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < k; i++) {
		use[i] =
		    !in_cv(i, k) || fold_of(cv->sub[i].grp, INNER_FOLDS) != f;
		if (in_cv(i, k) && use[i])
			tr[m++] = cv->sub[i];
	}
	if ((rc = cpu_fit(tr, m, th, cv->fr, cv->warm, cv->prog,
			  &cv->err[f])) == 0)
		rc = held_out_res(cv->sub, k, use, th, 0, NULL, tr, t,
				  cv->res + (size_t)f * (size_t)k, &cv->nres[f],
				  &cv->err[f]);
out:
	free(tr);
	free(t);
	free(use);
	return rc;
}

/* Fit a CPU type's own parameters on its points (pts[i].dev == d); with
 * inner, size its interval from INNER_FOLDS folds fitted on up to
 * `threads` threads. */
static int fit_cpu(struct hp__dev_fit *df, const struct hp__fitpt *all, int n,
		   int d, bool inner, int threads, struct hp__progress *prog,
		   struct hp_error *err)
{
	struct hp__fitpt *sub = malloc((size_t)n * sizeof(*sub));
	struct cpu_cv cv = {0};
	bool fr[HP__NTH] = {0};
	double *res = NULL;
	int k = 0, nres = 0, rc = 0;

	if (!sub) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (all[i].dev == d)
			sub[k++] = all[i];
	cpu_free_params(sub, k, fr);
	if ((rc = cpu_fit(sub, k, df->th, fr, NULL, prog, err)))
		goto out;
	df->own_theta = true;
	df->fit_fp32 = sub[0].d.fp32;
	df->q_lo = -0.2;
	df->q_hi = 0.2;
	if (!inner)
		goto out;
	cv.sub = sub;
	cv.k = k;
	cv.fr = fr;
	/* beyond HP__CV_WARM_ROWS, each fold starts from the whole fit (one
	 * start, not two) */
	cv.warm = k > HP__CV_WARM_ROWS ? df->th : NULL;
	cv.prog = prog;
	cv.res = res = malloc((size_t)INNER_FOLDS * (size_t)k * sizeof(*res));
	if (!res) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = run_tasks(INNER_FOLDS, threads, cpu_cv_fold, &cv, cv.err,
			    sizeof(cv.err[0]), err)))
		goto out;
	/* the folds' residuals in fold order, as one run in order gives */
	for (int f = 0; f < INNER_FOLDS; f++)
		for (int i = 0; i < cv.nres[f]; i++)
			res[nres++] = res[(size_t)f * (size_t)k + (size_t)i];
	quantiles(res, nres, &df->q_lo, &df->q_hi);
out:
	free(sub);
	free(res);
	return rc;
}

/* The linear family for device d on its structural samples. */
static int fit_linear(struct hp__dev_fit *df, const struct hp__set *set,
		      const bool *use, bool inner, struct hp_error *err)
{
	double *X, *y, *res;
	int *grp; /* each row's configuration (fold_of) */
	int n = 0, nres = 0, rc = 0;

	X = malloc((size_t)set->n * HP__LIN_P * sizeof(*X) + 1);
	y = malloc((size_t)set->n * sizeof(*y) + 1);
	res = malloc((size_t)set->n * sizeof(*res) + 1);
	grp = malloc((size_t)set->n * sizeof(*grp) + 1);
	if (!X || !y || !res || !grp) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int j = 0; j < 5; j++) {
		df->range_lo[j] = INFINITY;
		df->range_hi[j] = -INFINITY;
	}
	for (int i = 0, k = 0; i < set->n; i++) {
		const struct hp__sample *s = &set->s[i];
		const struct hp_workload *w = &set->wl[s->wl];
		double v[5] = {w->conv_layers, w->fc_layers, (double)w->filters,
			       (double)w->fc_width, (double)w->input_size};
		if ((use && !use[i]) || !s->structural || s->ndev != 1 ||
		    strcmp(s->device, df->name))
			continue;
		/* 7 coefficients: beyond HP__CV_MAX_ROWS rows of the device,
		 * a fixed subsample of them */
		if (!in_cv(k++, df->n))
			continue;
		hp__linear_x(w, &X[(size_t)n * HP__LIN_P]);
		grp[n] = s->wl;
		y[n++] = log(s->t);
		for (int j = 0; j < 5; j++) {
			if (v[j] < df->range_lo[j])
				df->range_lo[j] = v[j];
			if (v[j] > df->range_hi[j])
				df->range_hi[j] = v[j];
		}
	}
	if (n < MIN_LINEAR_ROWS)
		goto out;
	if ((rc = hp__linear_fit(X, y, n, HP__LIN_P, true, df->beta, err)))
		goto out;
	df->has_linear = true;
	df->lin_n = n;
	df->lin_q_lo = -0.3;
	df->lin_q_hi = 0.3;
	if (!inner)
		goto out;
	for (int f = 0; f < INNER_FOLDS; f++) {
		double *Xt = malloc((size_t)n * HP__LIN_P * sizeof(*Xt));
		double *yt = malloc((size_t)n * sizeof(*yt));
		double b[HP__LIN_P];
		int m = 0;
		if (!Xt || !yt) {
			free(Xt);
			free(yt);
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		for (int i = 0; i < n; i++)
			if (in_cv(i, n) && fold_of(grp[i], INNER_FOLDS) != f) {
				memcpy(&Xt[(size_t)m * HP__LIN_P],
				       &X[(size_t)i * HP__LIN_P],
				       HP__LIN_P * sizeof(*X));
				yt[m++] = y[i];
			}
		rc = hp__linear_fit(Xt, yt, m, HP__LIN_P, true, b, err);
		free(Xt);
		free(yt);
		if (rc)
			goto out;
		for (int i = 0; i < n; i++)
			if (in_cv(i, n) && fold_of(grp[i], INNER_FOLDS) == f) {
				double p = 0;
				for (int j = 0; j < HP__LIN_P; j++)
					p +=
					    b[j] * X[(size_t)i * HP__LIN_P + j];
				res[nres++] = y[i] - p;
			}
	}
	quantiles(res, nres, &df->lin_q_lo, &df->lin_q_hi);
out:
	free(X);
	free(y);
	free(res);
	free(grp);
	return rc;
}

/* Memory: measured peak - state - input ~ a x activations + b. */
static void fit_memory(struct hp_estimator *est, const struct hp__set *set,
		       const bool *use)
{
	double sxx = 0, sx = 0, sy = 0, sxy = 0;
	int n = 0;

	est->mem_act_factor = 2.0;
	est->mem_workspace_bytes = 64.0 * 1048576;
	est->mem_cuda_context_bytes = HP__CUDA_CONTEXT_BYTES;
	est->mem_gpu_act_factor = HP__GPU_ACT_FACTOR;
	for (int i = 0; i < set->n; i++) {
		const struct hp__sample *s = &set->s[i];
		const struct hp_workload *w = &set->wl[s->wl];
		double x, y;
		if ((use && !use[i]) || s->peak_mem_bytes <= 0)
			continue;
		x = (double)w->activations_bytes;
		y = (double)(s->peak_mem_bytes - w->state_bytes -
			     w->input_bytes);
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		n++;
	}
	est->mem_n = n;
	if (n >= 3 && n * sxx - sx * sx > 0) {
		double a = (n * sxy - sx * sy) / (n * sxx - sx * sx);
		double b = (sy - a * sx) / n;
		est->mem_act_factor = a > 0.5 ? a : 0.5;
		est->mem_workspace_bytes = b > 0 ? b : 0;
	}
}

/* The busy share of a measured step: the model's kernel time (with the
 * type's correction) over the measured time, at most 1. */
static double busy_share(const struct hp_estimator *est,
			 const struct hp__fitpt *p)
{
	double b =
	    hp__busy_time(est->gpu_th, &p->d, p->w) *
	    exp(p->dev >= 0 && p->dev < est->ndev ? est->dev[p->dev].log_scale
						  : 0);
	return b < p->t ? b / p->t : 1;
}

/* Power: gamma minimising the squared log error over the GPU rows with a
 * measured power (golden-section search), u the busy share of each
 * measured step: a GPU's power follows the time it runs kernels, not
 * their FLOP rate (Zeus's ShuffleNetV2 at batch 1,024 draws 225 W of an
 * RTX 6000's 260 at 8% of its FP32 peak).  On the 59 Zeus rows: MAPE
 * 12.9% (17.2% each GPU type left out) against 23.2% (27.1%) with FLOP
 * utilisation. */
static void fit_power(struct hp_estimator *est, const struct hp__fitpt *pts,
		      const double *pw, const struct hp_device_type **types,
		      int n)
{
	const double g = 0.6180339887;
	double a = 0.02, b = 3, mape = 0;
	int m = 0;

	est->power_gamma = 0.5;
	est->power_busy = true;
	est->power_n = 0;
	est->power_mape = NAN;
	for (int i = 0; i < n; i++)
		m += pw[i] > 0 && types[i]->tdp_w > 0;
	if (m < 3)
		return;
	for (int it = 0; it < 60; it++) {
		double c = b - g * (b - a), d = a + g * (b - a), fc = 0, fd = 0;
		for (int i = 0; i < n; i++) {
			double u, pc, pd;
			if (!(pw[i] > 0) || !(types[i]->tdp_w > 0))
				continue;
			u = busy_share(est, &pts[i]);
			pc = hp__power_w(types[i], u, c);
			pd = hp__power_w(types[i], u, d);
			fc += pow(log(pc / pw[i]), 2);
			fd += pow(log(pd / pw[i]), 2);
		}
		if (fc < fd)
			b = d;
		else
			a = c;
	}
	est->power_gamma = (a + b) / 2;
	for (int i = 0; i < n; i++) {
		double u;
		if (!(pw[i] > 0) || !(types[i]->tdp_w > 0))
			continue;
		u = busy_share(est, &pts[i]);
		mape += fabs(
		    hp__power_w(types[i], u, est->power_gamma) / pw[i] - 1);
	}
	est->power_n = m;
	est->power_mape = 100 * mape / m;
}

/* The index of device type t in est->dev, added when new; -1 on ENOMEM. */
static int est_dev_index(struct hp_estimator *est, int *alloc,
			 const struct hp_device_type *t, bool cpu)
{
	int d;

	for (d = 0; d < est->ndev; d++)
		if (!strcmp(est->dev[d].name, t->name))
			return d;
	if (est->ndev == *alloc) {
		int na = *alloc ? 2 * *alloc : 16;
		struct hp__dev_fit *nd =
		    realloc(est->dev, (size_t)na * sizeof(*nd));
		if (!nd)
			return -1;
		est->dev = nd;
		*alloc = na;
	}
	memset(&est->dev[d], 0, sizeof(est->dev[d]));
	snprintf(est->dev[d].name, sizeof(est->dev[d].name), "%s", t->name);
	est->dev[d].cpu = cpu;
	est->ndev++;
	return d;
}

struct hp_estimator *hp__fit_set(const struct hp__set *set, const bool *use,
				 const struct hp_catalog *cat, bool inner,
				 int threads, struct hp__progress *prog,
				 struct hp_error *err)
{
	struct hp_estimator *est = calloc(1, sizeof(*est));
	struct hp__fitpt *cpu = NULL, *gpu = NULL;
	const struct hp_device_type **gtypes = NULL;
	const struct hp_device_type *t = NULL;
	double *gpw = NULL;
	int ncpu = 0, ngpu = 0, rc = 0, adev = 0;

	if (!est)
		goto nomem;
	est->version = HP_ESTIMATOR_VERSION;
	est->family = HP_EST_PHYSICAL;
	est->power_gamma = 0.5;
	hp_utc_iso8601(time(NULL), est->created, sizeof(est->created));
	/* how many points of each kind (a million CPU rows need no room
	 * for a million GPU points) */
	for (int i = 0; i < set->n; i++) {
		if (use && !use[i])
			continue;
		if (!t || strcmp(t->name, set->s[i].device))
			t = hp_catalog_find(cat, set->s[i].device);
		if (t && t->kind == HP_DEVICE_CPU)
			ncpu++;
		else if (t)
			ngpu++;
	}
	cpu = calloc((size_t)ncpu + 1, sizeof(*cpu));
	gpu = calloc((size_t)ngpu + 1, sizeof(*gpu));
	gtypes = calloc((size_t)ngpu + 1, sizeof(*gtypes));
	gpw = calloc((size_t)ngpu + 1, sizeof(*gpw));
	if (!cpu || !gpu || !gtypes || !gpw)
		goto nomem;
	ncpu = ngpu = 0;
	t = NULL;
	for (int i = 0; i < set->n; i++) {
		const struct hp__sample *s = &set->s[i];
		struct hp__fitpt p;
		int d;
		if (use && !use[i])
			continue;
		/* rows come in runs of one device */
		if (!t || strcmp(t->name, s->device))
			t = hp_catalog_find(cat, s->device);
		if (!t || !hp__dev_spec(t, &p.d))
			continue;
		if ((d = est_dev_index(est, &adev, t, p.d.cpu)) < 0)
			goto nomem;
		p.d.chan_block = s->chan_block > 1 ? s->chan_block : 1;
		p.d.prec = p.d.cpu ? HP_PREC_FP32 : s->prec;
		if (est->dev[d].chan_block < p.d.chan_block)
			est->dev[d].chan_block = p.d.chan_block;
		if (s->ref_fit_s > 0) /* the yardstick's speed (data.c) */
			est->dev[d].ref_time_s = s->ref_fit_s;
		est->dev[d].n++;
		if (p.d.cpu && s->host_isa > 0) {
			/* the row says which host measured it: its peak is
			 * what the fit's efficiencies are against, whatever
			 * host the fit runs on */
			p.d.fp32 = s->host_isa;
			hp__cpu_ref_from_row(&est->dev[d], s);
		} else if (p.d.cpu) {
			hp__cpu_ref_record(&est->dev[d], t, p.d.chan_block);
		}
		p.w = &set->wl[s->wl];
		p.src = s->src;
		p.ndev = s->ndev;
		p.t = s->t;
		p.dev = d;
		p.grp = s->wl;
		memcpy(p.tcls, s->tcls, sizeof(p.tcls));
		if (p.d.cpu) {
			cpu[ncpu++] = p;
		} else {
			gtypes[ngpu] = t;
			gpw[ngpu] = s->power_w;
			gpu[ngpu++] = p;
		}
	}
	if (prog && !prog->total) {
		/* model fits: per CPU host 1 (+ folds), GPUs 1 (+ folds and
		 * one per type left out) */
		int64_t total = 0, ngtypes = 0;
		for (int d = 0; d < est->ndev; d++) {
			if (est->dev[d].cpu && est->dev[d].n >= MIN_CPU_ROWS)
				total += 1 + (inner ? INNER_FOLDS : 0);
			ngtypes += !est->dev[d].cpu;
		}
		if (ngpu)
			total += 1 + (inner ? INNER_FOLDS + ngtypes : 0);
		prog->total = total;
	}
	for (int d = 0; d < est->ndev; d++) {
		struct hp__dev_fit *df = &est->dev[d];
		if (df->cpu && df->n >= MIN_CPU_ROWS &&
		    (rc = fit_cpu(df, cpu, ncpu, d, inner, threads, prog, err)))
			goto fail;
		if ((rc = fit_linear(df, set, use, inner, err)))
			goto fail;
	}
	if (ngpu && (rc = fit_gpus(est, gpu, ngpu, inner, threads, prog, err)))
		goto fail;
	if (!est->has_gpu)
		hp__phys_prior(false, est->gpu_th);
	fit_memory(est, set, use);
	fit_power(est, gpu, gpw, gtypes, ngpu);
	est->profile_rows = 0;
	est->public_rows = 0;
	for (int i = 0; i < set->n; i++) {
		if (use && !use[i])
			continue;
		if (set->s[i].src == HP__SRC_PROFILE)
			est->profile_rows++;
		else
			est->public_rows++;
	}
	snprintf(est->provenance, sizeof(est->provenance),
		 "fitted %s on %d profile rows and %d public rows (%d device "
		 "types)",
		 est->created, est->profile_rows, est->public_rows, est->ndev);
	free(cpu);
	free(gpu);
	free(gtypes);
	free(gpw);
	return est;
nomem:
	hp_error_set(err, HP_ENOMEM, "out of memory");
fail:
	free(cpu);
	free(gpu);
	free(gtypes);
	free(gpw);
	hp_estimator_free(est);
	return NULL;
}

struct hp_estimator *hp_estimator_fit(const struct hp_fit_options *o,
				      const struct hp_catalog *cat,
				      struct hp_error *err)
{
	struct hp__progress prog = {.fn = o->progress,
				    .ud = o->progress_ud,
				    .stage = "fitting",
				    .mu = PTHREAD_MUTEX_INITIALIZER};
	struct hp__set set;
	struct hp_estimator *est;
	size_t off = 0;

	if (hp__set_load(&set, o, cat, err))
		return NULL;
	est =
	    hp__fit_set(&set, NULL, cat, !o->no_intervals,
			o->threads > 0 ? o->threads : hp__par_default_threads(),
			&prog, err);
	if (est && o->report) {
		struct hp_fit_report *rp = o->report;
		/* what the data left out (not the plain row counts) */
		for (int i = 0; i < set.nnotes && rp->nnotes < 8; i++)
			if (!strstr(set.notes[i], " rows from "))
				snprintf(rp->notes[rp->nnotes++],
					 sizeof(rp->notes[0]), "%s",
					 set.notes[i]);
		for (int d = 0; d < est->ndev && rp->nnotes < 8; d++)
			if (est->dev[d].cpu && est->dev[d].n > 0 &&
			    est->dev[d].n < MIN_CPU_ROWS)
				snprintf(
				    rp->notes[rp->nnotes++],
				    sizeof(rp->notes[0]),
				    "%s: %d profile rows, fewer than %d: no "
				    "model of it was fitted (profile more "
				    "configurations)",
				    est->dev[d].name, est->dev[d].n,
				    MIN_CPU_ROWS);
	}
	if (est) {
		est->family = o->family == HP_EST_LINEAR ? HP_EST_LINEAR
							 : HP_EST_PHYSICAL;
		for (int i = 0; i < o->ndatasets && off < sizeof(est->datasets);
		     i++)
			off += (size_t)snprintf(
			    est->datasets + off, sizeof(est->datasets) - off,
			    "%s%s", i ? ";" : "", o->datasets[i]);
		snprintf(est->public_dir, sizeof(est->public_dir), "%s",
			 o->public_dir ? o->public_dir : "");
	}
	hp__set_release(&set);
	return est;
}
