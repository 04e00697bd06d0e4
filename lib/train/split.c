/*
 * split.c - a global batch over ranks: the even split, a split in
 * proportion to throughput, and the run-time rebalancer that asks for one
 * when the ranks' step times drift apart.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/train.h"
#include "util/banned.h"

void hp_split_even(int64_t global, int ranks, int64_t *local)
{
	for (int r = 0; r < ranks; r++)
		local[r] = global / ranks + (r < global % ranks ? 1 : 0);
}

int hp_split_proportional(int64_t global, int ranks, const double *weight,
			  int64_t min_local, int64_t *local)
{
	double sum = 0, *share;
	int64_t given = 0;

	if (ranks < 1 || min_local < 0 || global < (int64_t)ranks * min_local)
		return HP_EINVAL;
	for (int r = 0; r < ranks; r++) {
		if (!isfinite(weight[r]) || !(weight[r] > 0))
			return HP_EINVAL;
		sum += weight[r];
	}
	share = calloc((size_t)ranks, sizeof(*share));
	if (!share)
		return HP_ENOMEM;
	/* the exact shares, rounded down, but never under the floor */
	for (int r = 0; r < ranks; r++) {
		share[r] = (double)global * weight[r] / sum;
		local[r] = (int64_t)floor(share[r]);
		if (local[r] < min_local)
			local[r] = min_local;
		given += local[r];
	}
	/* then one at a time to whoever is furthest below its share (ties
	 * to the lower rank), or from whoever is furthest above it */
	while (given != global) {
		int best = -1;
		for (int r = 0; r < ranks; r++) {
			double gap = share[r] - (double)local[r];
			if (given > global && local[r] <= min_local)
				continue;
			if (best < 0 ||
			    (given < global
				 ? gap > share[best] - (double)local[best]
				 : gap < share[best] - (double)local[best]))
				best = r;
		}
		local[best] += given < global ? 1 : -1;
		given += given < global ? 1 : -1;
	}
	free(share);
	return 0;
}

void hp_split_offsets(const int64_t *local, int ranks, int64_t *offset)
{
	int64_t o = 0;

	for (int r = 0; r < ranks; r++) {
		offset[r] = o;
		o += local[r];
	}
}

int hp_split_parse(const char *s, int ranks, int64_t global, int64_t *local,
		   struct hp_error *err)
{
	char tok[32];
	int64_t sum = 0;
	int r = 0;
	const char *p = s;

	if (!s || !*s)
		return hp_error_set(err, HP_EINVAL, "empty list");
	for (;;) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (n == 0 || n >= sizeof(tok))
			return hp_error_set(err, HP_EINVAL,
					    "item %d is empty or too long",
					    r + 1);
		memcpy(tok, p, n);
		tok[n] = '\0';
		if (r >= ranks)
			return hp_error_set(err, HP_EINVAL,
					    "more than %d items (one per rank)",
					    ranks);
		if (hp_parse_i64(tok, 1, (int64_t)1 << 31, &local[r]))
			return hp_error_set(err, HP_EINVAL,
					    "item %d is not a positive whole "
					    "number",
					    r + 1);
		sum += local[r++];
		if (!c)
			break;
		p = c + 1;
	}
	if (r != ranks)
		return hp_error_set(err, HP_EINVAL,
				    "%d items for %d ranks (one per rank)", r,
				    ranks);
	if (sum != global)
		return hp_error_set(err, HP_EINVAL,
				    "the local batches sum to %lld, not the "
				    "global batch %lld",
				    (long long)sum, (long long)global);
	return 0;
}

double hp_time_spread(const double *t, int n)
{
	double lo, hi;

	if (n < 2)
		return 0;
	lo = hi = t[0];
	for (int i = 1; i < n; i++) {
		lo = t[i] < lo ? t[i] : lo;
		hi = t[i] > hi ? t[i] : hi;
	}
	if (!(lo > 0))
		return HUGE_VAL;
	return hi / lo - 1;
}

int hp_rebalance_init(struct hp_rebalance *rb, int ranks, int window,
		      double threshold, int settle)
{
	memset(rb, 0, sizeof(*rb));
	if (ranks < 1 || window < 1 || window > 100000 || settle < 0 ||
	    !(threshold >= 0))
		return HP_EINVAL;
	rb->times = calloc((size_t)ranks * (size_t)window, sizeof(double));
	rb->dev = calloc((size_t)window, sizeof(double));
	rb->per_sample = calloc((size_t)ranks, sizeof(double));
	rb->err2 = calloc((size_t)ranks, sizeof(double));
	rb->weight2 = calloc((size_t)ranks, sizeof(double));
	rb->between2 = calloc((size_t)ranks, sizeof(double));
	rb->local = calloc((size_t)ranks, sizeof(int64_t));
	rb->windows = calloc((size_t)ranks, sizeof(int));
	if (!rb->times || !rb->dev || !rb->per_sample || !rb->err2 ||
	    !rb->weight2 || !rb->between2 || !rb->local || !rb->windows) {
		hp_rebalance_release(rb);
		return HP_ENOMEM;
	}
	rb->ranks = ranks;
	rb->window = window;
	rb->threshold = threshold;
	rb->settle = settle;
	rb->memory = HP_REBALANCE_MEMORY;
	rb->jump = HP_REBALANCE_JUMP;
	rb->z = HP_REBALANCE_Z;
	rb->skip = settle;
	return 0;
}

void hp_rebalance_release(struct hp_rebalance *rb)
{
	if (!rb)
		return;
	free(rb->times);
	free(rb->dev);
	free(rb->per_sample);
	free(rb->err2);
	free(rb->weight2);
	free(rb->between2);
	free(rb->local);
	free(rb->windows);
	rb->times = rb->dev = rb->per_sample = rb->err2 = rb->weight2 = NULL;
	rb->between2 = NULL;
	rb->local = NULL;
	rb->windows = NULL;
}

void hp_rebalance_reset(struct hp_rebalance *rb)
{
	rb->filled = 0;
	rb->skip = rb->settle;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_sorted(const double *x, int n)
{
	return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* The median of col[0..n) (sorted in place) and the relative standard
 * error of that median: 1.2533 (a median's variance over a mean's, square
 * rooted, for normal data) x 1.4826 x MAD (the MAD of a normal sample in
 * standard deviations) / sqrt(n) / median. */
static double median_err(double *col, double *dev, int n, double *rel_err)
{
	double m, mad;

	qsort(col, (size_t)n, sizeof(double), cmp_double);
	m = median_sorted(col, n);
	for (int i = 0; i < n; i++)
		dev[i] = fabs(col[i] - m);
	qsort(dev, (size_t)n, sizeof(double), cmp_double);
	mad = median_sorted(dev, n);
	*rel_err = m > 0 ? 1.2533 * 1.4826 * mad / sqrt((double)n) / m : 0;
	return m;
}

enum hp_rebalance_verdict hp_rebalance_add(struct hp_rebalance *rb,
					   const double *step_s,
					   const int64_t *local, int64_t global,
					   int64_t min_local, double *med_s,
					   int64_t *new_local)
{
	double *thr, t_now = 0, t_new = 0, lo = HUGE_VAL, hi = 0, e_lo = 0,
		     e_hi = 0;
	bool same = true;
	int w = rb->window, n_lo = 0, n_hi = 0;

	if (rb->skip > 0) {
		rb->skip--;
		return HP_REBALANCE_WAIT;
	}
	for (int r = 0; r < rb->ranks; r++)
		rb->times[(size_t)r * (size_t)w + (size_t)rb->filled] =
		    step_s[r];
	if (++rb->filled < w)
		return HP_REBALANCE_WAIT;
	rb->filled = 0;
	/* each rank's window median and time per sample, averaged over its
	 * windows at its present local batch, and the average's error */
	for (int r = 0; r < rb->ranks; r++) {
		double a, e, p, *avg = &rb->per_sample[r];
		med_s[r] = median_err(rb->times + (size_t)r * (size_t)w,
				      rb->dev, w, &e);
		p = med_s[r] / (double)local[r];
		if (!(p > 0) || !isfinite(p))
			return HP_REBALANCE_BALANCED;
		if (rb->windows[r] == 0 || local[r] != rb->local[r] ||
		    fabs(p / *avg - 1) > rb->jump)
			rb->windows[r] = 0;
		rb->local[r] = local[r];
		rb->windows[r] +=
		    rb->windows[r] < (rb->memory > 0 ? rb->memory : 1);
		a = 1.0 / rb->windows[r];
		/* A window's error is the larger of what its own steps say
		 * and how far windows of the same split differ (a speed that
		 * drifts over tens of steps moves whole windows, which no
		 * window's MAD shows). */
		if (rb->windows[r] > 1) {
			double d = log(p / *avg);
			rb->between2[r] += (d * d - rb->between2[r]) * a;
		} else {
			rb->between2[r] = 0;
		}
		*avg += (p - *avg) * a;
		rb->err2[r] += (e * e - rb->err2[r]) * a;
		/* its variance is err2 x the sum of its squared weights */
		rb->weight2[r] = (1 - a) * (1 - a) * rb->weight2[r] + a * a;
	}
	if (rb->ranks < 2 ||
	    !(hp_time_spread(med_s, rb->ranks) > rb->threshold))
		return HP_REBALANCE_BALANCED;
	/* The averages must say so too, by more than their noise: the
	 * gap between the slowest and the fastest averaged time, in logs,
	 * beyond HP_REBALANCE_Z of its standard error (an average's variance
	 * is its windows' times the sum of their squared weights: 1/k for k
	 * equal windows, 1/(2 memory - 1) in the running average). */
	for (int r = 0; r < rb->ranks; r++) {
		double a = rb->per_sample[r] * (double)local[r],
		       e2 = fmax(rb->err2[r], rb->between2[r]) * rb->weight2[r];
		if (a < lo) {
			lo = a;
			e_lo = e2;
			n_lo = rb->windows[r];
		}
		if (a > hi) {
			hi = a;
			e_hi = e2;
			n_hi = rb->windows[r];
		}
	}
	if (!(hi / lo - 1 > rb->threshold) ||
	    log(hi / lo) <= rb->z * sqrt(e_lo + e_hi))
		return HP_REBALANCE_BALANCED;
	/* One window's own spread is itself a noisy figure: a gap under
	 * HP_REBALANCE_JUMP waits for a second window of the same split. */
	if (hi / lo - 1 <= rb->jump && (n_lo < 2 || n_hi < 2) &&
	    (rb->memory > 1))
		return HP_REBALANCE_BALANCED;
	/* throughput per rank; the times' column is free to reuse */
	thr = rb->times;
	for (int r = 0; r < rb->ranks; r++)
		thr[r] = 1.0 / rb->per_sample[r];
	if (hp_split_proportional(global, rb->ranks, thr, min_local, new_local))
		return HP_REBALANCE_BALANCED;
	/* Worth it only when, by the averaged speeds, the new split's slowest
	 * rank is more than half the threshold faster than the current
	 * one's: a smaller gain is within the noise, and a re-split costs
	 * the settling steps. */
	for (int r = 0; r < rb->ranks; r++) {
		double p = rb->per_sample[r];
		same = same && new_local[r] == local[r];
		t_now = fmax(t_now, (double)local[r] * p);
		t_new = fmax(t_new, (double)new_local[r] * p);
	}
	if (same || !(t_new < t_now * (1 - rb->threshold / 2)))
		return HP_REBALANCE_BALANCED;
	return HP_REBALANCE_RESPLIT;
}
