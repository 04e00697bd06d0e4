/*
 * analyse.c - the range test's analysis: smoothing, divergence, the
 * cross-validated polynomial and the logarithmic fit (GSL), and the rule
 * that turns them into an interval of good rates and a suggested rate.
 * docs/lr-find.md explains each choice.
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/lrfind.h"
#include "lrfind/lrfind_int.h"
#include "util/banned.h"
#include "util/gsl.h"

/* Fewest steps worth fitting. */
#define MIN_FIT_POINTS 10
/* Points on which the fitted polynomial is searched. */
#define GRID 2001
/* Share of the drop from plateau to minimum after which the descent is
 * said to have begun. */
#define DESCENT_BEGUN 0.05
/* A fitted drop smaller than this share of the starting loss, or than
 * NOISE_DROP times the step-to-step noise of the loss, is no descent. */
#define MIN_DROP 0.02
#define NOISE_DROP 2.0
/* A rise of the smoothed loss above its lowest so far by more than this
 * many times the step-to-step noise is no wiggle: the rate has passed
 * where it lowers the loss.  The same factor as NOISE_DROP: what counts as
 * beyond noise going down counts going up. */
#define NOISE_RISE 2.0
/* ... and by more than this share of the drop from the plateau: the loss
 * has climbed back as far toward the plateau as it had to fall for the
 * descent to count as begun (LEAVES_PLATEAU).  In 800-step tests the
 * bumps that the loss then fell past were 2-4% of the drop (2-3.5 times
 * the noise), the rises that were the blow-up 13% and more; in 200-step
 * tests the rises through which the loss fell on to a lower minimum were
 * 12-30% of the drop, and those stay the first minimum's end. */
#define RISE_OF_DROP 0.1
/* The fit starts this many decades before the smoothed loss has fallen
 * LEAVES_PLATEAU of the way from its plateau to its minimum, and stops
 * where, past its first minimum, it has climbed CLIMB_BACK of the way back
 * (or at the top of its rise beyond noise, when it stops climbing first). */
#define PLATEAU_KEPT_DECADES 1.0
#define LEAVES_PLATEAU 0.1
#define CLIMB_BACK 0.25
/* A descent that begins within this many decades of the lowest rate tried
 * had no plateau before it: the range started too high. */
#define NO_PLATEAU_DECADES 0.25

const char *hp_lrfind_smoother_name(enum hp_lrfind_smoother m)
{
	return m == HP_LRFIND_SMOOTH_EWMA ? "ewma" : "median";
}

int hp_lrfind_smoother_parse(const char *s, enum hp_lrfind_smoother *out)
{
	if (!strcmp(s, "median"))
		*out = HP_LRFIND_SMOOTH_MEDIAN;
	else if (!strcmp(s, "ewma"))
		*out = HP_LRFIND_SMOOTH_EWMA;
	else
		return HP_EINVAL;
	return 0;
}

void hp__lrfind_ewma(const double *y, int n, double beta, double *out)
{
	double v = 0, beta_pow = 1;
	int i;

	for (i = 0; i < n && isfinite(y[i]); i++) {
		v = beta * v + (1 - beta) * y[i];
		beta_pow *= beta;
		out[i] = v / (1 - beta_pow);
	}
	for (; i < n; i++)
		out[i] = NAN;
}

static void swap(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

/* The k-th smallest of v[0..n) (Hoare's selection; v is reordered). */
static double select_kth(double *v, int n, int k)
{
	int lo = 0, hi = n - 1;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, i = lo, j = hi;
		double pivot;

		/* Median of three as the pivot. */
		if (v[mid] < v[lo])
			swap(&v[mid], &v[lo]);
		if (v[hi] < v[lo])
			swap(&v[hi], &v[lo]);
		if (v[hi] < v[mid])
			swap(&v[hi], &v[mid]);
		pivot = v[mid];
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				swap(&v[i], &v[j]);
				i++;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

static int min3(int a, int b, int c)
{
	int m = a < b ? a : b;

	return m < c ? m : c;
}

int hp__lrfind_median(const double *y, int n, int w, double *out)
{
	int h = w / 2;
	double *buf = malloc((size_t)(2 * h + 1) * sizeof(*buf));

	if (!buf)
		return HP_ENOMEM;
	for (int i = 0; i < n; i++) {
		int lo = i - h < 0 ? 0 : i - h,
		    hi = i + h > n - 1 ? n - 1 : i + h;
		int len = hi - lo + 1;

		memcpy(buf, y + lo, (size_t)len * sizeof(*buf));
		/* The lower median when the window holds an even count. */
		out[i] = select_kth(buf, len, (len - 1) / 2);
	}
	free(buf);
	return 0;
}

void hp__lrfind_mean(const double *y, int n, int w, double *out)
{
	int h = w / 2;
	double sum = 0;
	int lo = 0, hi = -1; /* the window [lo, hi] summed */

	for (int i = 0; i < n; i++) {
		int k = min3(h, i, n - 1 - i);

		/* Windows only move right: add on the right, drop on the
		 * left.  Re-sum now and then so rounding cannot build up. */
		if (i % 4096 == 0) {
			sum = 0;
			for (int j = i - k; j <= i + k; j++)
				sum += y[j];
		} else {
			while (hi < i + k)
				sum += y[++hi];
			while (lo < i - k)
				sum -= y[lo++];
		}
		lo = i - k;
		hi = i + k;
		out[i] = sum / (2 * k + 1);
	}
}

int hp__lrfind_polyfit(const double *t, const double *y, int n, int degree,
		       double *coef, double *rss, struct hp_error *err)
{
	size_t p = (size_t)degree + 1;
	gsl_matrix *X = NULL, *cov = NULL;
	gsl_vector *yv = NULL, *c = NULL;
	gsl_multifit_linear_workspace *ws = NULL;
	double chisq = 0;
	int rc = 0, st;

	if (n < degree + 1)
		return hp_error_set(err, HP_EINVAL,
				    "%d points for a polynomial of degree %d",
				    n, degree);
	hp__gsl_quiet();
	X = gsl_matrix_alloc((size_t)n, p);
	cov = gsl_matrix_alloc(p, p);
	yv = gsl_vector_alloc((size_t)n);
	c = gsl_vector_alloc(p);
	ws = gsl_multifit_linear_alloc((size_t)n, p);
	if (!X || !cov || !yv || !c || !ws) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		double v = 1;

		for (size_t j = 0; j < p; j++) {
			gsl_matrix_set(X, (size_t)i, j, v);
			v *= t[i];
		}
		gsl_vector_set(yv, (size_t)i, y[i]);
	}
	st = gsl_multifit_linear(X, yv, c, cov, &chisq, ws);
	if (st != GSL_SUCCESS) {
		rc = hp_error_set(err, HP_EINTERNAL,
				  "polynomial fit of degree %d failed: %s",
				  degree, gsl_strerror(st));
		goto out;
	}
	for (size_t j = 0; j < p; j++)
		coef[j] = gsl_vector_get(c, j);
	if (rss)
		*rss = chisq;
out:
	gsl_multifit_linear_free(ws);
	gsl_matrix_free(X);
	gsl_matrix_free(cov);
	gsl_vector_free(yv);
	gsl_vector_free(c);
	return rc;
}

double hp__lrfind_poly_t(const double *coef, int degree, double t)
{
	double v = coef[degree];

	for (int k = degree - 1; k >= 0; k--)
		v = v * t + coef[k];
	return v;
}

double hp__lrfind_dpoly_t(const double *coef, int degree, double t)
{
	double v = 0;

	for (int k = degree; k >= 1; k--)
		v = v * t + k * coef[k];
	return v;
}

double hp_lrfind_poly_eval(const struct hp_lrfind_poly *p, double lr)
{
	if (!(lr > 0) || !(p->scale > 0))
		return NAN;
	return hp__lrfind_poly_t(p->coef, p->degree,
				 (log10(lr) - p->center) / p->scale);
}

/*
 * Fold of point i of n: blocks of `block` neighbours dealt round k folds,
 * or -1 for the first and the last block, which every fold trains on.  The
 * polynomial is only ever read inside the rates it was fitted over, so its
 * held-out error should measure interpolation: holding out an end block
 * would score each degree on extrapolating past the data, where a higher
 * degree swings furthest, and push the choice to degrees too low to follow
 * the curve.
 */
static int fold_of(int i, int n, int block, int k)
{
	int nblocks = (n + block - 1) / block, b = i / block;

	if (b == 0 || b == nblocks - 1)
		return -1;
	return (b - 1) % k;
}

/* Held-out mean squared error of degree d in each of k folds. */
static int cv_degree(const double *t, const double *y, int n, int k, int block,
		     int d, double *tt, double *ty, double *mse_fold,
		     struct hp_error *err)
{
	double coef[HP_LRFIND_MAX_DEGREE + 1];

	for (int f = 0; f < k; f++) {
		int m = 0, nt = 0;
		double sse = 0;
		int rc;

		for (int i = 0; i < n; i++)
			if (fold_of(i, n, block, k) != f) {
				tt[m] = t[i];
				ty[m++] = y[i];
			}
		if ((rc = hp__lrfind_polyfit(tt, ty, m, d, coef, NULL, err)))
			return rc;
		for (int i = 0; i < n; i++) {
			double e;
			if (fold_of(i, n, block, k) != f)
				continue;
			e = hp__lrfind_poly_t(coef, d, t[i]) - y[i];
			sse += e * e;
			nt++;
		}
		mse_fold[f] = nt ? sse / nt : 0;
	}
	return 0;
}

/* hp__lrfind_cv_poly() on losses near 1 (see loss_exponent). */
static int cv_poly(const double *t, const double *y, int n, int folds,
		   int block, int max_degree, struct hp_lrfind_poly *p,
		   struct hp_error *err)
{
	double *tt = NULL, *ty = NULL, mse_fold[20];
	double mean = 0, var = 0, thr, rss;
	int best = 1, rc = 0, dmax;

	if (folds < 2 || folds > 20 || n < folds + 2)
		return hp_error_set(err, HP_EINVAL, "%d folds for %d points",
				    folds, n);
	/* Every fold gets at least one block besides the two end blocks. */
	if (block > n / (folds + 2))
		block = n / (folds + 2);
	if (block < 1)
		block = 1;
	/* Each training set must hold comfortably more points than the
	 * degree has coefficients. */
	dmax = n / 3 - 1;
	if (dmax > max_degree)
		dmax = max_degree;
	if (dmax < 1)
		dmax = 1;
	tt = malloc((size_t)n * sizeof(*tt));
	ty = malloc((size_t)n * sizeof(*ty));
	if (!tt || !ty) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int d = 0; d <= HP_LRFIND_MAX_DEGREE; d++)
		p->cv_mse[d] = p->cv_se[d] = NAN;
	for (int d = 1; d <= dmax; d++) {
		double m = 0, s = 0;

		if ((rc = cv_degree(t, y, n, folds, block, d, tt, ty, mse_fold,
				    err)))
			goto out;
		for (int f = 0; f < folds; f++)
			m += mse_fold[f];
		m /= folds;
		for (int f = 0; f < folds; f++)
			s += (mse_fold[f] - m) * (mse_fold[f] - m);
		p->cv_mse[d] = m;
		p->cv_se[d] = sqrt(s / (folds - 1) / folds);
		if (m < p->cv_mse[best])
			best = d;
	}
	/* One-standard-error rule (Hastie, Tibshirani and Friedman, ESL
	 * 7.10): the simplest degree within one standard error of the best.
	 * The term in the variance of y makes errors at rounding level
	 * (noiseless data) count as equal. */
	for (int i = 0; i < n; i++)
		mean += y[i];
	mean /= n;
	for (int i = 0; i < n; i++)
		var += (y[i] - mean) * (y[i] - mean);
	var /= n;
	thr = p->cv_mse[best] + p->cv_se[best] + 1e-12 * var;
	p->degree = best;
	for (int d = 1; d < best; d++)
		if (p->cv_mse[d] <= thr) {
			p->degree = d;
			break;
		}
	p->folds = folds;
	p->cv_block = block;
	p->max_tried = dmax;
	for (int d = 0; d <= HP_LRFIND_MAX_DEGREE; d++)
		p->coef[d] = 0;
	if ((rc = hp__lrfind_polyfit(t, y, n, p->degree, p->coef, &rss, err)))
		goto out;
	p->rmse = sqrt(rss / n);
out:
	free(tt);
	free(ty);
	return rc;
}

/* hp__lrfind_logfit() on losses near 1 (see loss_exponent). */
static int logfit(const double *lr, const double *y, int n,
		  struct hp_lrfind_logfit *out, struct hp_error *err)
{
	gsl_matrix *X = NULL, *cov = NULL;
	gsl_vector *yv = NULL, *c = NULL;
	gsl_multifit_linear_workspace *ws = NULL;
	double chisq, mean = 0, tss = 0;
	int rc = 0, st;

	if (n < 3)
		return hp_error_set(err, HP_EINVAL,
				    "%d points for the logarithmic fit", n);
	hp__gsl_quiet();
	X = gsl_matrix_alloc((size_t)n, 2);
	cov = gsl_matrix_alloc(2, 2);
	yv = gsl_vector_alloc((size_t)n);
	c = gsl_vector_alloc(2);
	ws = gsl_multifit_linear_alloc((size_t)n, 2);
	if (!X || !cov || !yv || !c || !ws) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	out->lr_lo = out->lr_hi = lr[0];
	for (int i = 0; i < n; i++) {
		gsl_matrix_set(X, (size_t)i, 0, 1);
		gsl_matrix_set(X, (size_t)i, 1, log(lr[i]));
		gsl_vector_set(yv, (size_t)i, y[i]);
		mean += y[i];
		if (lr[i] < out->lr_lo)
			out->lr_lo = lr[i];
		if (lr[i] > out->lr_hi)
			out->lr_hi = lr[i];
	}
	st = gsl_multifit_linear(X, yv, c, cov, &chisq, ws);
	if (st != GSL_SUCCESS) {
		rc = hp_error_set(err, HP_EINTERNAL,
				  "logarithmic fit failed: %s",
				  gsl_strerror(st));
		goto out;
	}
	mean /= n;
	for (int i = 0; i < n; i++)
		tss += (y[i] - mean) * (y[i] - mean);
	out->a = gsl_vector_get(c, 0);
	out->b = gsl_vector_get(c, 1);
	out->r2 = tss > 0 ? 1 - chisq / tss : 1;
	out->points = n;
out:
	gsl_multifit_linear_free(ws);
	gsl_matrix_free(X);
	gsl_matrix_free(cov);
	gsl_vector_free(yv);
	gsl_vector_free(c);
	return rc;
}

/*
 * The fits square their residuals, and the cross-validation squares its
 * folds' mean squared errors again (their standard error): with losses
 * far from 1 (above about 1e77 or below 1e-77, which a loss may be) those
 * over- or underflow, and the degree chosen, the fit and the suggestion
 * came out wrong with exit 0.  So the fits see the losses times 2^-e,
 * which is exact, with e the binary exponent of the largest |y| (0 when
 * that is within 2^-100..2^100: ordinary losses are fitted as they are),
 * and their results are scaled back by 2^e.  NULL *scaled: no scaling
 * (e is 0); else the caller frees it.
 */
static int loss_exponent(const double *y, int n, double **scaled)
{
	double top = 0;
	int e;

	*scaled = NULL;
	for (int i = 0; i < n; i++)
		if (fabs(y[i]) > top && isfinite(y[i]))
			top = fabs(y[i]);
	if (!(top > 0))
		return 0;
	frexp(top, &e);
	if (e >= -100 && e <= 100)
		return 0;
	if (!(*scaled = malloc((size_t)n * sizeof(**scaled))))
		return INT_MIN;
	for (int i = 0; i < n; i++)
		(*scaled)[i] = ldexp(y[i], -e);
	return e;
}

int hp__lrfind_cv_poly(const double *t, const double *y, int n, int folds,
		       int block, int max_degree, struct hp_lrfind_poly *p,
		       struct hp_error *err)
{
	double *ys;
	int e = loss_exponent(y, n, &ys), rc;

	if (e == INT_MIN)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	rc = cv_poly(t, ys ? ys : y, n, folds, block, max_degree, p, err);
	free(ys);
	if (rc || !e)
		return rc;
	for (int d = 0; d <= HP_LRFIND_MAX_DEGREE; d++) {
		p->coef[d] = ldexp(p->coef[d], e);
		p->cv_mse[d] = ldexp(p->cv_mse[d], 2 * e);
		p->cv_se[d] = ldexp(p->cv_se[d], 2 * e);
	}
	p->rmse = ldexp(p->rmse, e);
	return 0;
}

int hp__lrfind_logfit(const double *lr, const double *y, int n,
		      struct hp_lrfind_logfit *out, struct hp_error *err)
{
	double *ys;
	int e = loss_exponent(y, n, &ys), rc;

	if (e == INT_MIN)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	rc = logfit(lr, ys ? ys : y, n, out, err);
	free(ys);
	if (rc || !e)
		return rc;
	out->a = ldexp(out->a, e);
	out->b = ldexp(out->b, e);
	return 0;
}

void hp_lrfind_result_release(struct hp_lrfind_result *r)
{
	if (!r)
		return;
	free(r->smooth);
	free(r->ewma);
	free(r->smooth_acc);
	memset(r, 0, sizeof(*r));
}

static void warn(struct hp_lrfind_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(struct hp_lrfind_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nwarnings >= HP_LRFIND_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(r->warnings[r->nwarnings++], sizeof(r->warnings[0]), fmt, ap);
	va_end(ap);
}

static void pick(struct hp_lrfind_pick *p, double lr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void pick(struct hp_lrfind_pick *p, double lr, const char *fmt, ...)
{
	va_list ap;

	p->lr = lr;
	va_start(ap, fmt);
	vsnprintf(p->how, sizeof(p->how), fmt, ap);
	va_end(ap);
}

static int check_options(const struct hp_lrfind_options *o,
			 struct hp_error *err)
{
	if (o->window < 0 || (o->window > 0 && o->window % 2 == 0) ||
	    o->window > 10001)
		return hp_error_set(err, HP_EINVAL,
				    "smoothing window %d: give an odd number "
				    "of steps up to 10001",
				    o->window);
	if (o->beta < 0 || o->beta >= 1 || isnan(o->beta))
		return hp_error_set(err, HP_EINVAL,
				    "EWMA factor %g: give a number in (0, 1)",
				    o->beta);
	if (!(o->diverge_factor == 0 || o->diverge_factor > 1) ||
	    !isfinite(o->diverge_factor))
		return hp_error_set(err, HP_EINVAL,
				    "divergence factor %g: give a number "
				    "above 1",
				    o->diverge_factor);
	if (o->folds != 0 && (o->folds < 2 || o->folds > 20))
		return hp_error_set(err, HP_EINVAL,
				    "%d cross-validation folds: give 2 to 20",
				    o->folds);
	if (o->max_degree < 0 || o->max_degree > HP_LRFIND_MAX_DEGREE)
		return hp_error_set(err, HP_EINVAL,
				    "polynomial degree %d: give 1 to %d",
				    o->max_degree, HP_LRFIND_MAX_DEGREE);
	return 0;
}

/* Index of the first step judged diverged (a non-finite loss, or the EWMA
 * loss past factor times its lowest so far), or -1. */
static int find_divergence(const struct hp_lrfind_series *s, const double *ewma,
			   double factor)
{
	double best = INFINITY;

	for (int i = 0; i < s->n; i++) {
		if (!isfinite(s->pts[i].loss) || !isfinite(ewma[i]))
			return i;
		if (ewma[i] < best)
			best = ewma[i];
		if (best > 0 && ewma[i] > factor * best)
			return i;
	}
	return -1;
}

static int smooth_series(const double *y, int n, const double *ewma,
			 enum hp_lrfind_smoother m, int w, double *out)
{
	double *tmp;
	int rc;

	if (m == HP_LRFIND_SMOOTH_EWMA) {
		memcpy(out, ewma, (size_t)n * sizeof(*out));
		return 0;
	}
	if (!(tmp = malloc((size_t)n * sizeof(*tmp))))
		return HP_ENOMEM;
	rc = hp__lrfind_median(y, n, w, tmp);
	if (!rc)
		hp__lrfind_mean(tmp, n, w, out);
	free(tmp);
	return rc;
}

/* The smoothed accuracy at a rate, interpolated on log(lr). */
static double acc_at(const struct hp_lrfind_series *s,
		     const struct hp_lrfind_result *r, double lr)
{
	int m = r->analysed;

	if (!r->smooth_acc || !(lr > 0) || m < 1)
		return NAN;
	if (lr <= s->pts[0].lr)
		return r->smooth_acc[0];
	for (int i = 1; i < m; i++)
		if (s->pts[i].lr >= lr) {
			double x0 = log(s->pts[i - 1].lr),
			       x1 = log(s->pts[i].lr);
			double f = x1 > x0 ? (log(lr) - x0) / (x1 - x0) : 1;
			return r->smooth_acc[i - 1] +
			       f * (r->smooth_acc[i] - r->smooth_acc[i - 1]);
		}
	return r->smooth_acc[m - 1];
}

/* x = log10(lr) of grid point g of the fit region. */
static double grid_x(const struct hp_lrfind_poly *p, int g)
{
	return p->center + p->scale * (-1 + 2.0 * g / (GRID - 1));
}

static double grid_lr(const struct hp_lrfind_poly *p, int g)
{
	return pow(10, grid_x(p, g));
}

/*
 * From the fitted polynomial and the smoothed loss: the descent, the log
 * fit over it, the interval and the candidates.
 */
static int read_fits(const struct hp_lrfind_series *s,
		     struct hp_lrfind_result *r, double *val, double *slope,
		     double *lrs, struct hp_error *err)
{
	const struct hp_lrfind_poly *p = &r->poly;
	int g0, gm, gs, gp, ga, i0, i1, rc;
	double drop, floor_loss, first, knee;

	/* The search starts half a window before the smoothed loss left its
	 * plateau: the polynomial's slope on the plateau before that is
	 * noise, and at the fit's left edge it can wiggle steeply. */
	i0 = r->descent_idx - r->window / 2;
	if (i0 < r->fit_start)
		i0 = r->fit_start;
	g0 = (int)lround((log10(s->pts[i0].lr) - (p->center - p->scale)) /
			 (2 * p->scale) * (GRID - 1));
	if (g0 < 0)
		g0 = 0;
	if (g0 > GRID - 1)
		g0 = GRID - 1;
	for (int g = 0; g < GRID; g++) {
		double t = -1 + 2.0 * g / (GRID - 1);
		val[g] = hp__lrfind_poly_t(p->coef, p->degree, t);
		slope[g] = hp__lrfind_dpoly_t(p->coef, p->degree, t) / p->scale;
	}
	gm = gs = gp = g0;
	for (int g = g0; g < GRID; g++)
		if (val[g] < val[gm])
			gm = g;
	for (int g = g0; g <= gm; g++)
		if (slope[g] < slope[gs])
			gs = g;
	for (int g = g0; g <= gs; g++)
		if (val[g] > val[gp])
			gp = g;
	drop = val[gp] - val[gm];
	if (gm == g0 || !(slope[gs] < 0) ||
	    !(drop > MIN_DROP * fabs(val[gp])) ||
	    !(drop > NOISE_DROP * r->noise))
		return hp_error_set(
		    err, HP_EINVAL,
		    "the loss does not fall over lr %.3g..%.3g: the fitted "
		    "loss drops only %.2g from %.3g (noise %.2g per step); "
		    "widen the range (a higher --lr-max if the loss never "
		    "moved, a lower --lr-min if it was low from the start) "
		    "or train longer",
		    s->pts[r->fit_start].lr, s->pts[r->fit_end - 1].lr,
		    drop > 0 ? drop : 0, val[gp], r->noise);
	for (ga = gp; ga < gs && val[ga] > val[gp] - DESCENT_BEGUN * drop; ga++)
		;
	r->lr_fit_min = grid_lr(p, gm);
	r->lr_descent = grid_lr(p, ga);

	/* The log fit over the steps of the descent [ga, gm], widened to
	 * at least 3 steps. */
	for (i0 = r->fit_start;
	     i0 < r->fit_end - 1 && s->pts[i0].lr < r->lr_descent; i0++)
		;
	for (i1 = i0; i1 < r->fit_end - 1 && s->pts[i1 + 1].lr <= r->lr_fit_min;
	     i1++)
		;
	while (i1 - i0 + 1 < 3) {
		if (i0 > r->fit_start)
			i0--;
		if (i1 - i0 + 1 < 3 && i1 < r->fit_end - 1)
			i1++;
	}
	for (int i = i0; i <= i1; i++)
		lrs[i - i0] = s->pts[i].lr;
	if ((rc = hp__lrfind_logfit(lrs, r->smooth + i0, i1 - i0 + 1,
				    &r->logfit, err)))
		return rc;

	/*
	 * The interval: from a decade below the fitted minimum (fastai's
	 * minimum/10) to the fitted minimum, where a larger rate stops
	 * lowering the loss.  The suggestion: the knee, where the log fit of
	 * the descent reaches the fitted floor -- the rate at which the loss,
	 * falling at its average pace, would have reached its lowest.
	 */
	floor_loss = r->loss_floor = val[gm];
	first = s->pts[r->fit_start].lr;
	if (r->lr_smooth_min > r->lr_first_min && r->rise_idx >= 0)
		pick(&r->high, r->lr_fit_min,
		     "where the fitted polynomial (degree %d, chosen by "
		     "%d-fold cross-validation) is lowest, %.3g: a larger "
		     "rate stops lowering the loss (at lr %.3g it rose beyond "
		     "noise; its lower minimum at %.3g came through unstable "
		     "training)",
		     p->degree, p->folds, floor_loss, s->pts[r->rise_idx].lr,
		     r->lr_smooth_min);
	else
		pick(&r->high, r->lr_fit_min,
		     "where the fitted polynomial (degree %d, chosen by "
		     "%d-fold cross-validation) is lowest, %.3g: a larger "
		     "rate stops lowering the loss",
		     p->degree, p->folds, floor_loss);
	if (r->lr_fit_min / 10 >= first)
		pick(&r->low, r->lr_fit_min / 10,
		     "a decade below the fitted minimum (fastai's "
		     "minimum/10)");
	else
		pick(&r->low, first,
		     "the lowest rate fitted (a decade below the fitted "
		     "minimum, %.3g, lies below it)",
		     r->lr_fit_min / 10);
	pick(&r->steepest, grid_lr(p, gs),
	     "steepest descent of the fitted polynomial: %.3g per decade of "
	     "lr",
	     slope[gs]);
	pick(&r->min_div10, r->lr_fit_min / 10,
	     "a tenth of the rate where the fitted polynomial is lowest "
	     "(%.3g)",
	     r->lr_fit_min);
	knee = r->logfit.b < 0 ? exp((floor_loss - r->logfit.a) / r->logfit.b)
			       : NAN;
	if (isfinite(knee) && knee > 0)
		pick(&r->knee, knee,
		     "where the log fit of the descent, %.3g %s %.3g ln(lr), "
		     "reaches the fitted floor %.3g",
		     r->logfit.a, r->logfit.b < 0 ? "-" : "+",
		     fabs(r->logfit.b), floor_loss);
	else
		pick(&r->knee, NAN,
		     "none: the log fit of the descent does not fall (b = "
		     "%.3g)",
		     r->logfit.b);
	if (!isfinite(r->knee.lr))
		pick(&r->suggested, sqrt(r->low.lr * r->high.lr),
		     "the middle of the interval on the log axis: the log fit "
		     "of the descent does not fall, so it has no knee");
	else if (r->knee.lr < r->low.lr)
		pick(&r->suggested, r->low.lr,
		     "the interval's low end: the knee of the log fit (where "
		     "it reaches the fitted floor %.3g), %.3g, lies below it",
		     floor_loss, r->knee.lr);
	else if (r->knee.lr > r->high.lr)
		pick(&r->suggested, r->high.lr,
		     "the interval's high end: the knee of the log fit (where "
		     "it reaches the fitted floor %.3g), %.3g, lies above it",
		     floor_loss, r->knee.lr);
	else
		pick(&r->suggested, r->knee.lr,
		     "the knee: where the log fit of the descent, %.3g %s %.3g "
		     "ln(lr), reaches the fitted floor %.3g, i.e. the rate at "
		     "which the loss, falling at its average pace, reaches "
		     "its lowest",
		     r->logfit.a, r->logfit.b < 0 ? "-" : "+",
		     fabs(r->logfit.b), floor_loss);

	if (r->fit_end == r->analysed && r->diverged_at < 0) {
		/* No rise seen up to the highest rate.  Whether the loss was
		 * still falling there is the data's to say (the smoothed loss
		 * lowest at the end, and lower by more than the noise than a
		 * decade before), not the polynomial's: at a flat end its
		 * minimum lands at the edge, and a loss still falling can
		 * have the fit dip below it inside the range. */
		const double *sm = r->smooth;
		int last = r->analysed - 1, j0 = last, lo = 0;
		bool at_end, falling;
		for (int i = 1; i <= last; i++)
			if (sm[i] < sm[lo])
				lo = i;
		while (j0 > 0 && s->pts[j0 - 1].lr >= s->pts[last].lr / 10)
			j0--;
		at_end = lo >= last - r->window / 2;
		falling = at_end && sm[j0] - sm[lo] > NOISE_DROP * r->noise;
		if (falling)
			warn(r,
			     "the loss was still falling at the highest rate "
			     "tried (%.3g): its minimum may lie beyond; widen "
			     "the range",
			     s->pts[last].lr);
		else if (gm == GRID - 1 || at_end)
			warn(r,
			     "the loss stayed at its floor up to the highest "
			     "rate tried (%.3g): no rise was seen, so where "
			     "larger rates stop helping is not known; a wider "
			     "range would show it",
			     s->pts[last].lr);
	}
	if (log10(s->pts[r->descent_idx].lr) - log10(s->pts[0].lr) <
	    NO_PLATEAU_DECADES)
		warn(r,
		     "the loss was already falling fast at the lowest rate "
		     "tried (%.3g); start the range lower",
		     s->pts[0].lr);
	return 0;
}

/*
 * The steps to fit, [fit_start, fit_end): from a decade before the
 * smoothed loss leaves its plateau (a long plateau says nothing about good
 * rates, and spends the polynomial's degrees on flatness with wiggles at
 * its edge) to just past its *first* minimum: the lowest point before the
 * smoothed loss first rises by more than NOISE_RISE times the noise and
 * RISE_OF_DROP of the drop from its plateau (a bump of a few hundredths of
 * the drop that the loss then falls past is the ragged descent of a slow
 * ramp, not instability).  A
 * larger rate there stops lowering the loss: training has turned unstable
 * (Smith's maximum rate).  A range test can fall again after such a rise,
 * to a lower minimum at a higher rate, because the steps taken in between
 * still make progress on average; but that is training through
 * instability, which a run at one of those rates for many steps cannot
 * count on.  Past the first minimum the fit runs to where the smoothed loss
 * has climbed back a quarter of the way to the plateau (enough to hold the
 * minimum inside the fit, not so much that the blow-up's sharp rise, which
 * no low-degree polynomial follows, drags it), or to the top of the rise
 * beyond noise when the loss stops climbing before that (it wanders on a
 * floor, or falls again: either would bury the first minimum in a flat or
 * lower stretch).
 */
static int fit_region(const struct hp_lrfind_series *s,
		      struct hp_lrfind_result *r, struct hp_error *err)
{
	const double *sm = r->smooth;
	int m = r->analysed, imin = 0, ia, j, full = r->window / 2;
	double top = -INFINITY, drop, rise;

	for (int i = 1; i < m; i++)
		if (sm[i] < sm[imin])
			imin = i;
	r->lr_smooth_min = s->pts[imin].lr;
	/* The plateau's level, from points whose window was whole. */
	for (int i = imin > full ? full : 0; i <= imin; i++)
		if (sm[i] > top)
			top = sm[i];
	drop = top - sm[imin];
	if (imin == 0 || !(drop > 0))
		return hp_error_set(err, HP_EINVAL,
				    "the loss does not fall: the smoothed "
				    "loss is lowest at the first step (lr "
				    "%.3g); start the range lower",
				    s->pts[0].lr);
	for (ia = imin; ia > 0 && sm[ia - 1] < top - LEAVES_PLATEAU * drop;
	     ia--)
		;
	r->descent_idx = ia;

	/* The first minimum: from where the descent began, follow the
	 * lowest point so far until the loss rises above it beyond noise
	 * and by a tenth of the drop.  Without such a rise it is the lowest
	 * point.  (The rounding term keeps a noiseless curve's last-bit
	 * wiggles from counting.) */
	rise = fmax(NOISE_RISE * r->noise, RISE_OF_DROP * drop) + 1e-9 * drop;
	for (int i = j = ia; i < m; i++) {
		if (sm[i] < sm[j])
			j = i;
		else if (sm[i] > sm[j] + rise)
			break;
	}
	/* where, past it, the loss first rises beyond noise: the fit ends at
	 * the top of that rise when it stops climbing there */
	rise = NOISE_RISE * r->noise + 1e-9 * drop;
	r->rise_idx = -1;
	for (int i = j + 1; i < m; i++)
		if (sm[i] > sm[j] + rise) {
			r->rise_idx = i;
			break;
		}
	r->first_min_idx = j;
	r->lr_first_min = s->pts[j].lr;

	r->fit_start = ia;
	while (r->fit_start > 0 &&
	       log10(s->pts[r->fit_start - 1].lr) >=
		   log10(s->pts[ia].lr) - PLATEAU_KEPT_DECADES)
		r->fit_start--;
	r->fit_end = m;
	for (int i = j + 1; i < m; i++) {
		if (sm[i] > sm[j] + CLIMB_BACK * (top - sm[j]) ||
		    (r->rise_idx >= 0 && i > r->rise_idx &&
		     sm[i] < sm[i - 1] - 1e-9 * drop)) {
			r->fit_end = i;
			break;
		}
	}
	while (r->fit_end - r->fit_start < MIN_FIT_POINTS && r->fit_start > 0)
		r->fit_start--;
	while (r->fit_end - r->fit_start < MIN_FIT_POINTS && r->fit_end < m)
		r->fit_end++;
	return 0;
}

static int auto_window(int m)
{
	int w = (int)lround(m / 25.0);

	if (w < 5)
		w = 5;
	if (w > 51)
		w = 51;
	if (w % 2 == 0)
		w++;
	return w;
}

int hp_lrfind_analyse(const struct hp_lrfind_series *s,
		      const struct hp_lrfind_options *opt,
		      struct hp_lrfind_result *r, struct hp_error *err)
{
	struct hp_lrfind_options o = {0};
	double *y = NULL, *acc = NULL, *t = NULL, *val = NULL, *slope = NULL;
	int rc = 0, m, fs, nf;
	bool have_acc = true;

	memset(r, 0, sizeof(*r));
	r->diverged_at = -1;
	r->accuracy_at_suggested = NAN;
	if (opt)
		o = *opt;
	if ((rc = check_options(&o, err)))
		return rc;
	r->smoother = o.smoother;
	r->beta = o.beta > 0 ? o.beta : 0.98;
	r->diverge_factor = o.diverge_factor > 0 ? o.diverge_factor : 4;
	r->n = s->n;
	if (s->n < MIN_FIT_POINTS) {
		/* a series the trainer cut short because it diverged says
		 * so: the fix is a lower start, not more steps */
		const struct hp_lrfind_point *e =
		    s->n > 0 ? &s->pts[s->n - 1] : NULL;
		if (e && (!isfinite(e->loss) ||
			  e->loss > r->diverge_factor * s->pts[0].loss))
			return hp_error_set(
			    err, HP_EINVAL,
			    "the loss diverged at step %lld (lr %.3g), %d "
			    "steps in: too few to analyse (a range test needs "
			    "at least %d); start the range lower",
			    (long long)e->step, e->lr, s->n, MIN_FIT_POINTS);
		return hp_error_set(err, HP_EINVAL,
				    "%d steps: a range test needs at least %d",
				    s->n, MIN_FIT_POINTS);
	}
	y = malloc((size_t)s->n * sizeof(*y));
	acc = malloc((size_t)s->n * sizeof(*acc));
	r->ewma = malloc((size_t)s->n * sizeof(*r->ewma));
	r->smooth = malloc((size_t)s->n * sizeof(*r->smooth));
	t = malloc((size_t)s->n * sizeof(*t));
	val = malloc(GRID * sizeof(*val));
	slope = malloc(GRID * sizeof(*slope));
	if (!y || !acc || !r->ewma || !r->smooth || !t || !val || !slope) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < s->n; i++) {
		y[i] = s->pts[i].loss;
		acc[i] = s->pts[i].accuracy;
	}
	hp__lrfind_ewma(y, s->n, r->beta, r->ewma);
	r->diverged_at = find_divergence(s, r->ewma, r->diverge_factor);
	m = r->analysed = r->diverged_at >= 0 ? r->diverged_at : s->n;
	if (m < MIN_FIT_POINTS) {
		rc = hp_error_set(err, HP_EINVAL,
				  "the loss diverged at step %lld (lr %.3g), "
				  "%d steps in: too few to analyse; start the "
				  "range lower",
				  (long long)s->pts[r->diverged_at].step,
				  s->pts[r->diverged_at].lr, m);
		goto out;
	}
	/* A range test's rate rises from step to step (or in short
	 * stairs): a quarter of the steps at one rate is a training run's
	 * warm-up and constant rate, or a few rates, which the fits would
	 * read as a curve through rates never tried. */
	{
		int at = 0, most = 0;
		for (int i = 0, run = 0; i < m; i++) {
			run = i > 0 && s->pts[i].lr == s->pts[i - 1].lr
				  ? run + 1
				  : 1;
			if (run > most) {
				most = run;
				at = i;
			}
		}
		if (4 * most > m) {
			rc = hp_error_set(
			    err, HP_EINVAL,
			    "%d of the %d steps analysed (steps %lld to "
			    "%lld) share one rate, %.6g: not a range test, "
			    "whose rate rises from step to step",
			    most, m, (long long)s->pts[at - most + 1].step,
			    (long long)s->pts[at].step, s->pts[at].lr);
			goto out;
		}
	}
	r->window = o.window > 0 ? o.window : auto_window(m);
	if (r->window > m)
		r->window = m % 2 ? m : m - 1;
	if ((rc = smooth_series(y, m, r->ewma, o.smoother, r->window,
				r->smooth))) {
		rc = hp_error_set(err, rc, "out of memory");
		goto out;
	}
	for (int i = 0; i < m; i++)
		if (!isfinite(acc[i]))
			have_acc = false;
	if (have_acc) {
		double *ea = malloc((size_t)m * sizeof(*ea));
		r->smooth_acc = malloc((size_t)m * sizeof(*r->smooth_acc));
		if (!ea || !r->smooth_acc) {
			free(ea);
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		hp__lrfind_ewma(acc, m, r->beta, ea);
		rc = smooth_series(acc, m, ea, o.smoother, r->window,
				   r->smooth_acc);
		free(ea);
		if (rc) {
			rc = hp_error_set(err, rc, "out of memory");
			goto out;
		}
	}

	/* The noise: the spread of the raw loss about the centred smoother,
	 * over the steps analysed (a robust scale: 1.4826 x the median
	 * absolute deviation, which a few spikes do not move).  About the
	 * centred smoother also when the curve read is the EWMA: about a
	 * curve that lags, the descent itself would count as noise (a clear
	 * range test was refused as "does not fall").  And at least what
	 * the second differences say (y[i-1] - 2 y[i] + y[i+1] has 6 times
	 * the variance of white noise, whatever the slow trend): a smoother
	 * a few steps wide follows part of the noise, so the spread about it
	 * is short of the noise (0.74 of it at 5 steps, a 100-step test),
	 * and a flat series of pure noise then passed for a descent 12 times
	 * in 40; at 800 steps (31 wide) the two agree. */
	if (o.smoother == HP_LRFIND_SMOOTH_EWMA) {
		double *cs = malloc((size_t)m * sizeof(*cs));
		if (!cs || smooth_series(y, m, NULL, HP_LRFIND_SMOOTH_MEDIAN,
					 r->window, cs)) {
			free(cs);
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		for (int i = 0; i < m; i++)
			t[i] = fabs(y[i] - cs[i]);
		free(cs);
	} else {
		for (int i = 0; i < m; i++)
			t[i] = fabs(y[i] - r->smooth[i]);
	}
	r->noise = 1.4826 * select_kth(t, m, m / 2);
	if (m >= 3) {
		for (int i = 1; i + 1 < m; i++)
			t[i - 1] = fabs(y[i - 1] - 2 * y[i] + y[i + 1]);
		r->noise =
		    fmax(r->noise, 1.4826 * select_kth(t, m - 2, (m - 2) / 2) /
				       sqrt(6.0));
	}

	if ((rc = fit_region(s, r, err)))
		goto out;
	fs = r->fit_start;
	nf = r->fit_end - fs;

	r->poly.center =
	    (log10(s->pts[fs].lr) + log10(s->pts[r->fit_end - 1].lr)) / 2;
	r->poly.scale =
	    (log10(s->pts[r->fit_end - 1].lr) - log10(s->pts[fs].lr)) / 2;
	if (!(r->poly.scale > 1e-9)) {
		rc = hp_error_set(err, HP_EINVAL,
				  "the rate does not rise over the steps "
				  "analysed (%.3g to %.3g): not a range test",
				  s->pts[fs].lr, s->pts[r->fit_end - 1].lr);
		goto out;
	}
	for (int i = 0; i < nf; i++)
		t[i] =
		    (log10(s->pts[fs + i].lr) - r->poly.center) / r->poly.scale;
	/* Blocks as wide as the smoothing window: a held-out point is not
	 * predicted from neighbours that were smoothed together with it. */
	if ((rc = hp__lrfind_cv_poly(
		 t, r->smooth + fs, nf, o.folds ? o.folds : 5,
		 o.smoother == HP_LRFIND_SMOOTH_EWMA
		     ? (int)lround(1 / (1 - r->beta))
		     : r->window,
		 o.max_degree ? o.max_degree : 8, &r->poly, err)))
		goto out;
	/* t is free again: read_fits uses it for the log fit's rates. */
	if ((rc = read_fits(s, r, val, slope, t, err)))
		goto out;
	r->accuracy_at_suggested = acc_at(s, r, r->suggested.lr);
	if (nf < 40)
		warn(r,
		     "only %d steps fitted: the fits are rough; give more "
		     "steps",
		     nf);
out:
	free(y);
	free(acc);
	free(t);
	free(val);
	free(slope);
	return rc;
}
