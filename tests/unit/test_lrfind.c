/*
 * test_lrfind.c - the range-test analysis against independent references:
 * the smoothers against naive implementations (the EWMA's closed form, a
 * sort per window, a sum per window); the cross-validated degree recovers
 * the true degree of noiseless polynomials; the log fit recovers known a
 * and b and matches the textbook regression formulas; on synthetic range
 * tests built from a known function plus seeded noise (and spikes) the
 * suggestion lands in the known good region and the steepest point near
 * the true one; divergence, refusals and warnings; the metrics parser;
 * the SVG is well-formed XML (a small independent checker) with its text
 * escaped and no NaN in it; the JSON carries the contract's keys.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetpool/lrfind.h"
#include "lrfind/lrfind_int.h"
#include "test.h"

/* A seeded generator (xorshift64*) and normal deviates (Box-Muller). */
struct rng {
	uint64_t s;
};

static double uniform(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return ((r->s * 2685821657736338717ULL) >> 11) *
	       (1.0 / 9007199254740992.0);
}

static double normal(struct rng *r)
{
	double u = uniform(r), v = uniform(r);

	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* ---- smoothers against naive references ---- */

HP_TEST(lrfind_ewma_matches_closed_form)
{
	struct rng g = {42};
	double y[300], out[300];
	const double betas[] = {0.5, 0.9, 0.98};

	for (int i = 0; i < 300; i++)
		y[i] = 2 + normal(&g);
	for (int b = 0; b < 3; b++) {
		double beta = betas[b];
		hp__lrfind_ewma(y, 300, beta, out);
		for (int t = 0; t < 300; t++) {
			/* sum_j (1-beta) beta^(t-j) y_j / (1 - beta^(t+1)) */
			double num = 0;
			for (int j = 0; j <= t; j++)
				num += (1 - beta) * pow(beta, t - j) * y[j];
			ASSERT_NEAR(out[t], num / (1 - pow(beta, t + 1)),
				    1e-12);
		}
	}
	/* The first value is the first loss (bias correction). */
	ASSERT_NEAR(out[0], y[0], 1e-15);
	y[100] = NAN;
	hp__lrfind_ewma(y, 300, 0.98, out);
	ASSERT(isfinite(out[99]));
	for (int t = 100; t < 300; t++)
		ASSERT(isnan(out[t]));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

HP_TEST(lrfind_median_matches_sorting)
{
	struct rng g = {7};
	enum { N = 257 };
	double y[N], out[N], win[N];
	const int widths[] = {1, 3, 5, 9, 21, 51, 257, 301};

	for (int i = 0; i < N; i++) {
		y[i] = floor(10 * uniform(&g)); /* many ties */
		if (uniform(&g) < 0.05)
			y[i] += 1000; /* spikes */
	}
	for (size_t k = 0; k < sizeof(widths) / sizeof(widths[0]); k++) {
		int h = widths[k] / 2;
		ASSERT_EQ_INT(hp__lrfind_median(y, N, widths[k], out), 0);
		for (int i = 0; i < N; i++) {
			int lo = i - h < 0 ? 0 : i - h;
			int hi = i + h > N - 1 ? N - 1 : i + h;
			size_t len = (size_t)(hi - lo + 1);
			memcpy(win, y + lo, len * sizeof(*win));
			qsort(win, len, sizeof(*win), cmp_double);
			if (out[i] != win[(len - 1) / 2])
				HP_FAIL("width %d, i %d: %g, sorted %g",
					widths[k], i, out[i],
					win[(len - 1) / 2]);
		}
	}
}

HP_TEST(lrfind_mean_matches_sums)
{
	struct rng g = {9};
	enum { N = 10000 }; /* past the re-summing period */
	double *y = malloc(N * sizeof(*y)), *out = malloc(N * sizeof(*out));

	for (int i = 0; i < N; i++)
		y[i] = 1e3 * normal(&g) + 5;
	for (int w = 1; w <= 41; w += 8) {
		hp__lrfind_mean(y, N, w, out);
		for (int i = 0; i < N; i++) {
			int r = w / 2;
			double sum = 0;
			if (i < r)
				r = i;
			if (N - 1 - i < r)
				r = N - 1 - i;
			for (int j = i - r; j <= i + r; j++)
				sum += y[j];
			ASSERT_NEAR(out[i], sum / (2 * r + 1), 1e-9);
		}
	}
	free(y);
	free(out);
}

/* A straight line comes through both smoothers unchanged, and the median
 * removes isolated spikes entirely. */
HP_TEST(lrfind_smoothers_keep_lines_drop_spikes)
{
	enum { N = 100 };
	double y[N], med[N], mean[N];

	for (int i = 0; i < N; i++)
		y[i] = 3 - 0.02 * i;
	hp__lrfind_mean(y, N, 9, mean);
	for (int i = 0; i < N; i++)
		ASSERT_NEAR(mean[i], y[i], 1e-12);
	ASSERT_EQ_INT(hp__lrfind_median(y, N, 9, med), 0);
	for (int i = 4; i < N - 4; i++)
		ASSERT_NEAR(med[i], y[i], 1e-12);
	/* A spike moves the median by at most one neighbour's value, at
	 * the ends too. */
	y[0] += 50;
	y[20] += 50;
	y[60] -= 50;
	y[N - 1] += 50;
	ASSERT_EQ_INT(hp__lrfind_median(y, N, 9, med), 0);
	for (int i = 4; i < N - 4; i++)
		ASSERT(fabs(med[i] - (3 - 0.02 * i)) <= 0.02 + 1e-12);
	ASSERT(med[0] < 3 && med[N - 1] > 3 - 0.02 * N);
}

/* ---- the fits ---- */

HP_TEST(lrfind_cv_recovers_true_degree_noiseless)
{
	enum { N = 120 };
	double t[N], y[N];

	for (int deg = 1; deg <= 7; deg++) {
		struct hp_lrfind_poly p = {0};
		struct hp_error err = {0};
		double c[8];

		for (int k = 0; k <= deg; k++)
			c[k] = (k % 2 ? -1.0 : 1.0) * (0.5 + 0.3 * k);
		for (int i = 0; i < N; i++) {
			t[i] = -1 + 2.0 * i / (N - 1);
			y[i] = 0;
			for (int k = deg; k >= 0; k--)
				y[i] = y[i] * t[i] + c[k];
		}
		if (hp__lrfind_cv_poly(t, y, N, 5, 1, 8, &p, &err))
			HP_FAIL("degree %d: %s", deg, err.msg);
		if (p.degree != deg)
			HP_FAIL("true degree %d, chose %d (cv mse %g vs %g)",
				deg, p.degree, p.cv_mse[p.degree],
				p.cv_mse[deg]);
		for (int k = 0; k <= deg; k++)
			ASSERT_NEAR(p.coef[k], c[k], 1e-8);
		ASSERT(p.rmse < 1e-9);
		ASSERT_EQ_INT(p.max_tried, 8);
	}
}

/*
 * A steep step (a drop of 2) with a little noise (0.01), held out in
 * blocks as the analysis does: the chosen degree follows the step, its fit
 * within 0.06 of the true function all along.  Held-out end blocks would
 * score each degree on extrapolating past the data, where high degrees
 * swing most, and pick one too low to follow the step (degree 6, 0.09 off,
 * in 4 of these 10 seeds).
 */
HP_TEST(lrfind_cv_follows_a_steep_step)
{
	enum { N = 90 };
	double t[N], y[N];

	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct rng g = {seed * 104729};
		struct hp_lrfind_poly p = {0};
		struct hp_error err = {0};
		double worst = 0;

		for (int i = 0; i < N; i++) {
			t[i] = -1 + 2.0 * i / (N - 1);
			y[i] = 1 - tanh(4 * (t[i] - 0.2)) + 0.01 * normal(&g);
		}
		ASSERT_EQ_INT(hp__lrfind_cv_poly(t, y, N, 5, 7, 8, &p, &err),
			      0);
		for (int i = 0; i < N; i++) {
			double e =
			    fabs(hp__lrfind_poly_t(p.coef, p.degree, t[i]) -
				 (1 - tanh(4 * (t[i] - 0.2))));
			if (e > worst)
				worst = e;
		}
		if (worst > 0.06)
			HP_FAIL("seed %llu: degree %d misses the step by %g",
				(unsigned long long)seed, p.degree, worst);
	}
}

HP_TEST(lrfind_cv_noisy_cubic_not_overfitted)
{
	enum { N = 200 };
	double t[N], y[N];
	int hits = 0;

	/* A cubic with noise: the one-standard-error rule picks 3 (a
	 * higher degree is no better beyond noise; a lower one is worse). */
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct rng g = {seed * 7919};
		struct hp_lrfind_poly p = {0};
		struct hp_error err = {0};
		for (int i = 0; i < N; i++) {
			t[i] = -1 + 2.0 * i / (N - 1);
			y[i] = 1 - 2 * t[i] + 0.5 * t[i] * t[i] +
			       1.5 * t[i] * t[i] * t[i] + 0.05 * normal(&g);
		}
		ASSERT_EQ_INT(hp__lrfind_cv_poly(t, y, N, 5, 1, 8, &p, &err),
			      0);
		ASSERT(p.degree >= 3);
		hits += p.degree == 3;
	}
	ASSERT(hits >= 8);
}

HP_TEST(lrfind_logfit_recovers_a_b)
{
	enum { N = 60 };
	double lr[N], y[N], sx = 0, sy = 0, sxx = 0, sxy = 0;
	struct hp_lrfind_logfit f = {0};
	struct hp_error err = {0};
	struct rng g = {3};

	for (int i = 0; i < N; i++) {
		lr[i] = 1e-4 * pow(10, 3.0 * i / (N - 1));
		y[i] = 0.4 - 0.25 * log(lr[i]);
	}
	ASSERT_EQ_INT(hp__lrfind_logfit(lr, y, N, &f, &err), 0);
	ASSERT_NEAR(f.a, 0.4, 1e-10);
	ASSERT_NEAR(f.b, -0.25, 1e-10);
	ASSERT_NEAR(f.r2, 1, 1e-12);
	ASSERT_NEAR(f.lr_lo, 1e-4, 1e-12);
	ASSERT_NEAR(f.lr_hi, 1e-1, 1e-12);
	/* With noise: the textbook formulas b = Sxy / Sxx, a = ybar - b
	 * xbar. */
	for (int i = 0; i < N; i++)
		y[i] += 0.05 * normal(&g);
	for (int i = 0; i < N; i++) {
		double x = log(lr[i]);
		sx += x;
		sy += y[i];
	}
	for (int i = 0; i < N; i++) {
		double dx = log(lr[i]) - sx / N;
		sxx += dx * dx;
		sxy += dx * (y[i] - sy / N);
	}
	ASSERT_EQ_INT(hp__lrfind_logfit(lr, y, N, &f, &err), 0);
	ASSERT_NEAR(f.b, sxy / sxx, 1e-10);
	ASSERT_NEAR(f.a, sy / N - sxy / sxx * sx / N, 1e-10);
	ASSERT(f.r2 > 0.9 && f.r2 < 1);
	ASSERT(hp__lrfind_logfit(lr, y, 2, &f, &err) == HP_EINVAL);
}

/* ---- synthetic range tests ---- */

/* A range test's loss: a plateau at l0 falling by drop around 10^xc
 * (a logistic in log10 lr of width w), then blowing up from 10^xd.
 * Optionally an episode of instability: a bump of height hb around 10^xb
 * (a Gaussian in log10 lr of width wb), after which the loss falls by
 * drop2 more around 10^xc2 (width w2) -- training that goes on making
 * progress through the instability, as the range tests of a CNN with
 * SGD-momentum do. */
struct curve {
	double l0, drop, xc, w, blow, xd, v;
	double hb, xb, wb, drop2, xc2, w2;
};

static double curve_loss(const struct curve *c, double x)
{
	double l = c->l0 - c->drop / (1 + exp(-(x - c->xc) / c->w)) +
		   c->blow * exp((x - c->xd) / c->v);

	if (c->hb > 0)
		l += c->hb * exp(-(x - c->xb) * (x - c->xb) / (c->wb * c->wb));
	if (c->drop2 > 0)
		l -= c->drop2 / (1 + exp(-(x - c->xc2) / c->w2));
	return l;
}

/* Where the noiseless curve falls fastest and where it is lowest (a fine
 * grid: independent of the library's polynomial). */
static void curve_truth(const struct curve *c, double x0, double x1,
			double *x_steep, double *x_min)
{
	double best_slope = INFINITY, best = INFINITY;

	for (int k = 0; k <= 100000; k++) {
		double x = x0 + (x1 - x0) * k / 100000;
		if (curve_loss(c, x) < best) {
			best = curve_loss(c, x);
			*x_min = x;
		}
	}
	for (int k = 0; k <= 100000; k++) {
		double x = x0 + (x1 - x0) * k / 100000, h = 1e-5;
		double s =
		    (curve_loss(c, x + h) - curve_loss(c, x - h)) / (2 * h);
		if (x < *x_min && s < best_slope) {
			best_slope = s;
			*x_steep = x;
		}
	}
}

/* n steps from 10^x0 to 10^x1 with multiplicative noise sd and a few
 * spikes; the loss turns non-finite where it passes 1e6 (as a trainer's
 * would overflow).  With stop, the series ends where the trainer's
 * --stop-on-divergence 4 would end it (the EWMA past 4 x its lowest). */
static void make_series(struct hp_lrfind_series *s, const struct curve *c,
			int n, double x0, double x1, double sd, uint64_t seed,
			bool stop)
{
	struct rng g = {seed};
	struct hp_error err = {0};
	double v = 0, bp = 1, best = INFINITY;

	hp_lrfind_series_init(s);
	for (int i = 0; i < n; i++) {
		double x = x0 + (x1 - x0) * i / (n - 1);
		double l = curve_loss(c, x) * (1 + sd * normal(&g));
		if (uniform(&g) < 0.02)
			l *= 2.5;
		if (l > 1e6)
			l = INFINITY;
		double acc = 0.1 + 0.8 * (c->l0 - curve_loss(c, x)) / c->drop;
		if (hp_lrfind_series_add(s, i + 1, pow(10, x), l,
					 acc < 0   ? 0
					 : acc > 1 ? 1
						   : acc,
					 &err))
			HP_FAIL("%s", err.msg);
		if (stop) {
			if (!isfinite(l))
				break;
			v = 0.98 * v + 0.02 * l;
			bp *= 0.98;
			if (v / (1 - bp) < best)
				best = v / (1 - bp);
			if (v / (1 - bp) > 4 * best)
				break;
		}
	}
}

static const struct curve shapes[] = {
    /* l0  drop  xc    w     blow  xd    v */
    {2.3, 2.0, -2.0, 0.35, 0.05, -0.3, 0.15},
    {2.3, 1.6, -3.5, 0.25, 0.02, -1.5, 0.20},
    {1.0, 0.9, -1.0, 0.50, 0.01, 0.6, 0.10},
    {4.6, 3.0, -2.5, 0.20, 0.10, -1.2, 0.25},
};

HP_TEST(lrfind_suggestion_lands_in_known_region)
{
	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		double xs, xm;
		curve_truth(&shapes[k], -5, 1, &xs, &xm);
		for (uint64_t seed = 1; seed <= 40; seed++) {
			struct hp_lrfind_series s;
			struct hp_lrfind_result r;
			struct hp_error err = {0};
			double lo = pow(10, xs - 0.5), hi = pow(10, xm);

			make_series(&s, &shapes[k], 200, -5, 1, 0.05,
				    seed * 1000 + k, seed % 2);
			if (hp_lrfind_analyse(&s, NULL, &r, &err))
				HP_FAIL("shape %zu seed %llu: %s", k,
					(unsigned long long)seed, err.msg);
			if (!(r.suggested.lr >= lo && r.suggested.lr <= hi))
				HP_FAIL("shape %zu seed %llu: suggested %g "
					"outside the known region %g..%g (%s)",
					k, (unsigned long long)seed,
					r.suggested.lr, lo, hi,
					r.suggested.how);
			/* The steepest point of the fit is near the true
			 * one; the interval holds the suggestion and lies
			 * below the true minimum. */
			if (fabs(log10(r.steepest.lr) - xs) > 0.3)
				HP_FAIL("shape %zu seed %llu: steepest %g, "
					"true %g",
					k, (unsigned long long)seed,
					r.steepest.lr, pow(10, xs));
			ASSERT(r.low.lr <= r.suggested.lr &&
			       r.suggested.lr <= r.high.lr);
			/* The fitted minimum is on the true valley's floor:
			 * the true loss there within 5% of the drop of its
			 * lowest (a flat floor leaves its place vague). */
			if (curve_loss(&shapes[k], log10(r.high.lr)) -
				curve_loss(&shapes[k], xm) >
			    0.05 * shapes[k].drop)
				HP_FAIL("shape %zu seed %llu: fitted minimum "
					"%g is off the floor (true minimum %g)",
					k, (unsigned long long)seed, r.high.lr,
					pow(10, xm));
			ASSERT(r.logfit.b < 0);
			/* The suggestion is the knee, exp((floor - a) / b),
			 * kept inside the interval; the floor is the
			 * polynomial's value at the interval's high end. */
			{
				double knee = exp((r.loss_floor - r.logfit.a) /
						  r.logfit.b);
				double want = knee < r.low.lr	 ? r.low.lr
					      : knee > r.high.lr ? r.high.lr
								 : knee;
				ASSERT_NEAR(r.suggested.lr, want, 1e-12);
				ASSERT_NEAR(r.knee.lr, knee, 1e-12);
				ASSERT_NEAR(
				    hp_lrfind_poly_eval(&r.poly, r.high.lr),
				    r.loss_floor, 1e-9);
				ASSERT_NEAR(r.low.lr, r.high.lr / 10, 1e-12);
			}
			ASSERT(r.low.how[0] && r.high.how[0] &&
			       r.suggested.how[0]);
			ASSERT(r.smooth_acc != NULL);
			ASSERT(r.accuracy_at_suggested > 0.1 &&
			       r.accuracy_at_suggested <= 1);
			hp_lrfind_result_release(&r);
			hp_lrfind_series_release(&s);
		}
	}
}

/*
 * The unit of the loss does not change the answer: the same range test
 * with its losses times 1e-300 to 1e300 (a loss may be any finite number
 * from 0) gets the same suggestion and degree, and a floor and log fit in
 * the same proportion.  The reference is the series as made.  Until 4
 * December the cross-validation squared the folds' squared errors, which
 * overflowed above about 1e77 and underflowed below 1e-77: degree 1 and a
 * suggestion of 1.08 (the true region is 3e-3 to 0.3), with exit 0.
 */
HP_TEST(lrfind_loss_scale_does_not_matter)
{
	static const double factors[] = {1e-300, 1e-200, 1e-100, 1e-10,
					 1e10,	 1e80,	 1e150,	 1e300};
	struct hp_lrfind_series base;
	struct hp_lrfind_result ref;
	struct hp_error err = {0};

	make_series(&base, &shapes[0], 200, -5, 1, 0.05, 11, true);
	ASSERT_EQ_INT(hp_lrfind_analyse(&base, NULL, &ref, &err), 0);
	for (size_t k = 0; k < sizeof(factors) / sizeof(factors[0]); k++) {
		double f = factors[k];
		struct hp_lrfind_series s;
		struct hp_lrfind_result r;

		hp_lrfind_series_init(&s);
		for (int i = 0; i < base.n; i++)
			ASSERT_EQ_INT(hp_lrfind_series_add(
					  &s, base.pts[i].step, base.pts[i].lr,
					  base.pts[i].loss * f,
					  base.pts[i].accuracy, &err),
				      0);
		if (hp_lrfind_analyse(&s, NULL, &r, &err))
			HP_FAIL("x %g: %s", f, err.msg);
		if (r.poly.degree != ref.poly.degree ||
		    fabs(r.suggested.lr / ref.suggested.lr - 1) > 1e-6)
			HP_FAIL("x %g: degree %d, suggested %.9g; unscaled: "
				"degree %d, suggested %.9g",
				f, r.poly.degree, r.suggested.lr,
				ref.poly.degree, ref.suggested.lr);
		ASSERT_NEAR(r.low.lr / ref.low.lr, 1, 1e-6);
		ASSERT_NEAR(r.high.lr / ref.high.lr, 1, 1e-6);
		ASSERT_NEAR(r.loss_floor / (ref.loss_floor * f), 1, 1e-6);
		ASSERT_NEAR(r.logfit.b / (ref.logfit.b * f), 1, 1e-6);
		ASSERT_NEAR(r.noise / (ref.noise * f), 1, 1e-6);
		hp_lrfind_result_release(&r);
		hp_lrfind_series_release(&s);
	}
	hp_lrfind_result_release(&ref);
	hp_lrfind_series_release(&base);
}

/* On a noiseless curve the fitted minimum is where the curve is lowest,
 * and the EWMA's lag drags its minimum to higher rates while the centred
 * smoother's stays put: why the centred one is the default. */
HP_TEST(lrfind_centred_smoother_has_no_lag)
{
	const struct curve *c = &shapes[0];
	struct hp_lrfind_series s;
	struct hp_lrfind_result med, ew;
	struct hp_lrfind_options o = {0};
	struct hp_error err = {0};
	double xs, xm;

	curve_truth(c, -5, 1, &xs, &xm);
	make_series(&s, c, 300, -5, 1, 0, 5, false);
	/* make_series adds spikes; take them out for this one. */
	for (int i = 0; i < s.n; i++)
		s.pts[i].loss = curve_loss(c, log10(s.pts[i].lr));
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, NULL, &med, &err), 0);
	o.smoother = HP_LRFIND_SMOOTH_EWMA;
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, &o, &ew, &err), 0);
	ASSERT(fabs(log10(med.lr_smooth_min) - xm) < 0.05);
	ASSERT(fabs(log10(med.lr_fit_min) - xm) < 0.1);
	ASSERT(fabs(log10(med.steepest.lr) - xs) < 0.1);
	ASSERT(log10(ew.lr_smooth_min) - xm > 0.15);
	hp_lrfind_result_release(&med);
	hp_lrfind_result_release(&ew);
	hp_lrfind_series_release(&s);
}

/* Where a noiseless curve first stops falling, searched on a fine grid
 * from x0 (a point on its descent). */
static double curve_first_min(const struct curve *c, double x0, double x1)
{
	double prev = curve_loss(c, x0);

	for (int k = 1; k <= 100000; k++) {
		double x = x0 + (x1 - x0) * k / 100000, l = curve_loss(c, x);
		if (l >= prev)
			return x0 + (x1 - x0) * (k - 1) / 100000;
		prev = l;
	}
	return x1;
}

/*
 * A bump beyond noise but small against the drop (a few hundredths of it,
 * as slow range tests show in their ragged descent) is not instability:
 * the first minimum is the lower one past it.
 */
HP_TEST(lrfind_small_bump_is_not_instability)
{
	struct curve small = {2.3, 1.2,	 -2.0, 0.12, 0.05, -0.4, 0.12,
			      0.2, -1.4, 0.2,  0.6,  -0.9, 0.15};
	double x1 = curve_first_min(&small, small.xc, 1), xm, xsm, top, lo;
	double rise = 0;

	curve_truth(&small, -5, 1, &xsm, &xm);
	/* the noiseless bump: how far it climbs above the first minimum */
	lo = curve_loss(&small, x1);
	for (int k = 1; k <= 10000; k++) {
		double x = x1 + (xm - x1) * k / 10000;
		rise = fmax(rise, curve_loss(&small, x) - lo);
	}
	top = curve_loss(&small, -5) - curve_loss(&small, xm);
	/* beyond 2 x noise (0.005 a step), under a tenth of the drop */
	ASSERT(rise > 4 * 0.005 && rise < 0.06 * top);
	ASSERT(xm > x1 + 0.8);
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct hp_lrfind_series ser;
		struct hp_lrfind_result r;
		struct hp_error err = {0};

		make_series(&ser, &small, 800, -5, 1, 0.005, seed * 31 + 7,
			    true);
		if (hp_lrfind_analyse(&ser, NULL, &r, &err))
			HP_FAIL("seed %llu: %s", (unsigned long long)seed,
				err.msg);
		if (fabs(log10(r.lr_first_min) - xm) > 0.15)
			HP_FAIL("seed %llu: first minimum %g; the lowest "
				"%g, the bump's %g",
				(unsigned long long)seed, r.lr_first_min,
				pow(10, xm), pow(10, x1));
		hp_lrfind_result_release(&r);
		hp_lrfind_series_release(&ser);
	}
}

/*
 * An episode of instability: the loss falls, rises by several times its
 * noise, then falls lower at higher rates.  The interval ends at the first
 * minimum, not at the lower one past the rise, and the suggestion lies
 * below it; a shoulder where the loss only slows down moves nothing.
 */
HP_TEST(lrfind_interval_ends_at_first_minimum)
{
	/* l0 drop xc w blow xd v, hb xb wb drop2 xc2 w2 */
	const struct curve bump = {2.3, 1.2,  -2.0, 0.12, 0.05, -0.4, 0.12,
				   0.6, -1.4, 0.2,  0.6,  -0.9, 0.15};
	struct curve shoulder = bump;
	double x1 = curve_first_min(&bump, bump.xc, 1), xs = bump.xc, xm, xsm;
	double best = 0;

	/* The steepest point before the first minimum. */
	for (int k = 0; k <= 10000; k++) {
		double x = -5 + (x1 + 5) * k / 10000, h = 1e-5;
		double sl =
		    (curve_loss(&bump, x + h) - curve_loss(&bump, x - h)) /
		    (2 * h);
		if (sl < best) {
			best = sl;
			xs = x;
		}
	}
	curve_truth(&bump, -5, 1, &xsm, &xm);
	ASSERT(x1 < -1.6 && x1 > -1.8 && xm > x1 + 0.8);
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct hp_lrfind_series s;
		struct hp_lrfind_result r;
		struct hp_error err = {0};

		make_series(&s, &bump, 200, -5, 1, 0.03, seed * 31 + 7, true);
		if (hp_lrfind_analyse(&s, NULL, &r, &err))
			HP_FAIL("seed %llu: %s", (unsigned long long)seed,
				err.msg);
		if (fabs(log10(r.lr_first_min) - x1) > 0.15 ||
		    fabs(log10(r.high.lr) - x1) > 0.15)
			HP_FAIL("seed %llu: first minimum %g, high %g; true "
				"first minimum %g",
				(unsigned long long)seed, r.lr_first_min,
				r.high.lr, pow(10, x1));
		/* The rise was seen between the first minimum and the
		 * bump's top; the lower minimum past it was seen too. */
		ASSERT(r.rise_idx >= 0);
		ASSERT(log10(s.pts[r.rise_idx].lr) > x1 &&
		       log10(s.pts[r.rise_idx].lr) <= bump.xb + 0.05);
		ASSERT(log10(r.lr_smooth_min) > x1 + 0.5);
		ASSERT(strstr(r.high.how, "unstable") != NULL);
		if (!(r.suggested.lr >= pow(10, xs - 0.5) &&
		      r.suggested.lr <= r.high.lr))
			HP_FAIL("seed %llu: suggested %g outside %g..%g (%s)",
				(unsigned long long)seed, r.suggested.lr,
				pow(10, xs - 0.5), r.high.lr, r.suggested.how);
		hp_lrfind_result_release(&r);
		hp_lrfind_series_release(&s);
	}

	/* Without the bump's rise, only a shoulder: the interval ends at the
	 * lowest point, as on a curve without one. */
	shoulder.hb = 0.02;
	curve_truth(&shoulder, -5, 1, &xsm, &xm);
	ASSERT(curve_first_min(&shoulder, shoulder.xc, 1) == xm ||
	       fabs(curve_first_min(&shoulder, shoulder.xc, 1) - xm) < 1e-3);
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct hp_lrfind_series s;
		struct hp_lrfind_result r;
		struct hp_error err = {0};

		make_series(&s, &shoulder, 200, -5, 1, 0.03, seed * 31 + 7,
			    true);
		if (hp_lrfind_analyse(&s, NULL, &r, &err))
			HP_FAIL("seed %llu: %s", (unsigned long long)seed,
				err.msg);
		ASSERT_NEAR(r.lr_first_min, r.lr_smooth_min, 0);
		if (curve_loss(&shoulder, log10(r.high.lr)) -
			curve_loss(&shoulder, xm) >
		    0.05 * (shoulder.drop + shoulder.drop2))
			HP_FAIL("seed %llu: high %g is off the floor (true "
				"minimum %g)",
				(unsigned long long)seed, r.high.lr,
				pow(10, xm));
		hp_lrfind_result_release(&r);
		hp_lrfind_series_release(&s);
	}
}

HP_TEST(lrfind_divergence_found)
{
	const struct curve *c = &shapes[0];
	struct hp_lrfind_series s;
	struct hp_lrfind_result r;
	struct hp_error err = {0};
	double ew[400], best = INFINITY, y[400];
	int want = -1;

	/* Without stopping: the series runs into the blow-up; the analysis
	 * stops where the naive rule (EWMA past 4 x its lowest, or a
	 * non-finite loss) says. */
	make_series(&s, c, 400, -5, 1, 0.05, 11, false);
	for (int i = 0; i < s.n; i++)
		y[i] = s.pts[i].loss;
	hp__lrfind_ewma(y, s.n, 0.98, ew);
	for (int i = 0; i < s.n && want < 0; i++) {
		if (!isfinite(y[i])) {
			want = i;
			break;
		}
		if (ew[i] < best)
			best = ew[i];
		if (ew[i] > 4 * best)
			want = i;
	}
	ASSERT(want > 0);
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, NULL, &r, &err), 0);
	ASSERT_EQ_INT(r.diverged_at, want);
	ASSERT_EQ_INT(r.analysed, want);
	ASSERT(r.fit_end <= r.analysed);
	hp_lrfind_result_release(&r);

	/* A NaN loss mid-way ends the analysis there. */
	s.pts[300].loss = NAN;
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, NULL, &r, &err), 0);
	ASSERT(r.diverged_at <= 300);
	hp_lrfind_result_release(&r);
	hp_lrfind_series_release(&s);
}

static int analyse_curve(const struct curve *c, double x0, double x1, int n,
			 struct hp_lrfind_result *r, struct hp_error *err)
{
	struct hp_lrfind_series s;
	int rc;

	make_series(&s, c, n, x0, x1, 0.03, 99, true);
	rc = hp_lrfind_analyse(&s, NULL, r, err);
	hp_lrfind_series_release(&s);
	return rc;
}

HP_TEST(lrfind_refuses_what_it_cannot_analyse)
{
	struct hp_lrfind_result r;
	struct hp_error err = {0};
	const struct curve flat = {2.3, 0, -2, 0.3, 0, 10, 1};
	const struct curve rising = {2.3, 0, -2, 0.3, 0.5, -5, 1.0};
	struct hp_lrfind_series s;

	ASSERT_EQ_INT(analyse_curve(&flat, -5, 1, 200, &r, &err), HP_EINVAL);
	ASSERT(strstr(err.msg, "does not fall") != NULL);
	hp_lrfind_result_release(&r);
	ASSERT_EQ_INT(analyse_curve(&rising, -5, 1, 200, &r, &err), HP_EINVAL);
	hp_lrfind_result_release(&r);
	/* Diverging at once. */
	ASSERT_EQ_INT(analyse_curve(&shapes[0], 0, 3, 200, &r, &err),
		      HP_EINVAL);
	ASSERT(strstr(err.msg, "diverged") || strstr(err.msg, "fall"));
	hp_lrfind_result_release(&r);
	/* Too few steps. */
	ASSERT_EQ_INT(analyse_curve(&shapes[0], -5, 1, 6, &r, &err), HP_EINVAL);
	hp_lrfind_result_release(&r);
	/* ... because the trainer stopped it diverging: said so */
	hp_lrfind_series_init(&s);
	ASSERT_EQ_INT(hp_lrfind_series_add(&s, 1, 10, 2.3, NAN, &err), 0);
	ASSERT_EQ_INT(hp_lrfind_series_add(&s, 2, 20, INFINITY, NAN, &err), 0);
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, NULL, &r, &err), HP_EINVAL);
	ASSERT(strstr(err.msg, "diverged at step 2") &&
	       strstr(err.msg, "start the range lower"));
	hp_lrfind_result_release(&r);
	hp_lrfind_series_release(&s);
	/* Bad options. */
	make_series(&s, &shapes[0], 100, -5, 1, 0.03, 1, true);
	{
		struct hp_lrfind_options o = {.window = 4};
		ASSERT_EQ_INT(hp_lrfind_analyse(&s, &o, &r, &err), HP_EINVAL);
		o = (struct hp_lrfind_options){.beta = 1};
		ASSERT_EQ_INT(hp_lrfind_analyse(&s, &o, &r, &err), HP_EINVAL);
		o = (struct hp_lrfind_options){.max_degree = 11};
		ASSERT_EQ_INT(hp_lrfind_analyse(&s, &o, &r, &err), HP_EINVAL);
		o = (struct hp_lrfind_options){.folds = 1};
		ASSERT_EQ_INT(hp_lrfind_analyse(&s, &o, &r, &err), HP_EINVAL);
	}
	hp_lrfind_result_release(&r);
	hp_lrfind_series_release(&s);
	/* The rate must rise. */
	hp_lrfind_series_init(&s);
	ASSERT_EQ_INT(hp_lrfind_series_add(&s, 1, 0.1, 1, NAN, &err), 0);
	ASSERT_EQ_INT(hp_lrfind_series_add(&s, 2, 0.05, 1, NAN, &err),
		      HP_EINVAL);
	ASSERT_EQ_INT(hp_lrfind_series_add(&s, 1, 0.2, 1, NAN, &err),
		      HP_EINVAL);
	ASSERT_EQ_INT(hp_lrfind_series_add(&s, 3, NAN, 1, NAN, &err),
		      HP_EINVAL);
	ASSERT_EQ_INT(hp_lrfind_series_add(&s, 3, 0, 1, NAN, &err), HP_EINVAL);
	hp_lrfind_series_release(&s);
}

/* Pure noise is no descent: 40 flat series of 100 steps (Gaussian, sd 2%
 * of the loss: the multiplicative noise of make_series, without its
 * spikes).  The noise measured about a 5-step smoother alone (0.74 of the
 * true noise) let 12 of 40 such series through, the second differences
 * (6 times the noise's variance whatever the trend) keep it honest; and
 * with the EWMA as the curve read, a clear descent is still one (its
 * noise is measured about the centred smoother, not about the lagging
 * curve, which counted the descent itself as noise). */
HP_TEST(lrfind_pure_noise_is_no_descent)
{
	struct hp_lrfind_result r;
	struct hp_error err = {0};
	struct hp_lrfind_series s;
	struct hp_lrfind_options o = {.smoother = HP_LRFIND_SMOOTH_EWMA};
	int passed = 0;

	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct rng g = {seed * 7919};
		hp_lrfind_series_init(&s);
		for (int i = 0; i < 100; i++)
			ASSERT_EQ_INT(hp_lrfind_series_add(
					  &s, i + 1, 1e-5 * pow(1e6, i / 99.0),
					  2.3 * (1 + 0.02 * normal(&g)), NAN,
					  &err),
				      0);
		if (hp_lrfind_analyse(&s, NULL, &r, &err) == 0)
			passed++;
		hp_lrfind_result_release(&r);
		hp_lrfind_series_release(&s);
	}
	ASSERT(passed <= 4);
	make_series(&s, &shapes[0], 100, -5, 1, 0.03, 5, true);
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, &o, &r, &err), 0);
	ASSERT(r.suggested.lr > 1e-5 && r.suggested.lr < 10);
	hp_lrfind_result_release(&r);
	hp_lrfind_series_release(&s);
}

HP_TEST(lrfind_warns_when_range_cuts_the_curve)
{
	struct hp_lrfind_result r;
	struct hp_error err = {0};

	/* Stops at 1e-2 while the loss still falls fast. */
	ASSERT_EQ_INT(analyse_curve(&shapes[0], -4, -2, 150, &r, &err), 0);
	ASSERT(r.nwarnings >= 1);
	ASSERT(strstr(r.warnings[0], "still falling") != NULL);
	ASSERT(r.diverged_at < 0);
	hp_lrfind_result_release(&r);

	/* Starts at 10^-2.2, where the loss already falls fast. */
	ASSERT_EQ_INT(analyse_curve(&shapes[0], -2.2, 1, 150, &r, &err), 0);
	ASSERT(r.nwarnings >= 1);
	ASSERT(strstr(r.warnings[0], "already falling") != NULL);
	hp_lrfind_result_release(&r);

	/* A range that holds the whole curve draws no warning. */
	ASSERT_EQ_INT(analyse_curve(&shapes[0], -5, 1, 200, &r, &err), 0);
	ASSERT_EQ_INT(r.nwarnings, 0);
	hp_lrfind_result_release(&r);

	/* Falls, then stays at its floor to the top with no blow-up: not
	 * "still falling" (the data is flat there), but no rise was seen */
	{
		const struct curve flat_end = {2.3, 2.0, -3.0, 0.3, 0, 10, 1};
		ASSERT_EQ_INT(analyse_curve(&flat_end, -5, 1, 200, &r, &err),
			      0);
		ASSERT(r.nwarnings >= 1);
		ASSERT(strstr(r.warnings[0], "stayed at its floor") != NULL);
		for (int i = 0; i < r.nwarnings; i++)
			ASSERT(strstr(r.warnings[i], "still falling") == NULL);
		hp_lrfind_result_release(&r);
	}
}

/* ---- metrics.jsonl ---- */

HP_TEST(lrfind_parse_metrics)
{
	const char text[] =
	    "{\"step\": 1, \"lr\": 1e-5, \"loss\": 2.3, \"accuracy\": 0.1}\n"
	    "\n"
	    "{\"event\": \"rebalance\"}\r\n"
	    "{\"step\": 2, \"lr\": 2e-5, \"loss\": 2.2, \"accuracy\": null, "
	    "\"local_batches\": [32, 32]}\n"
	    "{\"step\": 3, \"lr\": 4e-5, \"loss\": null}\n"
	    "{\"step\": 4, \"lr\": 8e-5, \"loss\": \"inf\"}\n"
	    "{\"step\": 5, \"lr\": 1.6e-4, \"lo";
	struct hp_lrfind_series s;
	struct hp_error err = {0};
	size_t used;

	hp_lrfind_series_init(&s);
	ASSERT_EQ_INT(
	    hp_lrfind_parse_metrics(&s, text, sizeof(text) - 1, "m.jsonl", 1,
				    HP_LRFIND_PARSE_PARTIAL, &used, &err),
	    0);
	ASSERT_EQ_INT(s.n, 4);
	ASSERT_EQ_INT(s.skipped, 1);
	ASSERT_EQ_INT(used, strstr(text, "{\"step\": 5") - text);
	ASSERT_NEAR(s.pts[0].accuracy, 0.1, 1e-15);
	ASSERT(isnan(s.pts[1].accuracy));
	ASSERT(isnan(s.pts[2].loss));
	ASSERT(isinf(s.pts[3].loss));
	ASSERT_EQ_INT(s.pts[3].step, 4);
	/* Read whole, the cut line is an error naming its line. */
	hp_lrfind_series_release(&s);
	ASSERT_EQ_INT(hp_lrfind_parse_metrics(&s, text, sizeof(text) - 1,
					      "m.jsonl", 1, 0, &used, &err),
		      HP_EPARSE);
	ASSERT(strncmp(err.msg, "m.jsonl line 7: not JSON", 24) == 0);
	hp_lrfind_series_release(&s);

	{
		static const struct {
			const char *text, *msg;
		} bad[] = {
		    {"[1, 2]\n", "line 1: not a JSON object"},
		    {"{\"step\": 1, \"loss\": 2}\n", "'lr' is missing"},
		    {"{\"step\": 1, \"lr\": \"x\", \"loss\": 2}\n",
		     "'lr' is not a number"},
		    {"{\"step\": 1, \"lr\": 0.1}\n", "'loss' is missing"},
		    {"{\"step\": 1.5, \"lr\": 0.1, \"loss\": 1}\n",
		     "'step' is not an integer"},
		    {"{\"step\": 1, \"lr\": 0.1, \"loss\": \"low\"}\n",
		     "'loss' is not a number"},
		    {"{\"step\": 1, \"lr\": 0.1, \"loss\": 1, \"accuracy\": "
		     "\"hi\"}\n",
		     "'accuracy' is not"},
		    {"{\"step\": 1, \"lr\": -0.1, \"loss\": 1}\n",
		     "not a positive number"},
		    {"{\"step\": 2, \"lr\": 0.1, \"loss\": 1}\n"
		     "{\"step\": 2, \"lr\": 0.2, \"loss\": 1}\n",
		     "line 2: step 2 does not follow step 2"},
		    {"{\"step\": 1, \"step\": 2, \"lr\": 0.1, \"loss\": 1}\n",
		     "not JSON: duplicate object key"},
		    /* forged or broken rows the fit cannot use (until 4
		     * December they were analysed, exit 0) */
		    {"{\"step\": 1, \"lr\": 0.1, \"loss\": 1}\n"
		     "{\"step\": 2, \"lr\": 0.2, \"loss\": -3}\n",
		     "m line 2: step 2: loss -3 is negative"},
		    {"{\"step\": 1, \"lr\": 0.1, \"loss\": -1e-300}\n",
		     "loss -1e-300 is negative"},
		    {"{\"step\": 1, \"lr\": 0.1, \"loss\": 1, \"accuracy\": "
		     "1e308}\n",
		     "line 1: step 1: accuracy 1e+308 is not between 0 and 1"},
		    {"{\"step\": 1, \"lr\": 0.1, \"loss\": 1, \"accuracy\": "
		     "-0.5}\n",
		     "accuracy -0.5 is not between 0 and 1"},
		    {"{\"step\": 1, \"lr\": 0, \"loss\": 1}\n",
		     "lr 0 is not a positive number"},
		    {"{\"step\": 1, \"lr\": 1e-5, \"loss\": 1}\n"
		     "{\"step\": 2, \"lr\": 1e-6, \"loss\": 1}\n",
		     "line 2: step 2: lr 9.99"},
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			hp_lrfind_series_init(&s);
			if (!hp_lrfind_parse_metrics(&s, bad[i].text,
						     strlen(bad[i].text), "m",
						     1, 0, NULL, &err))
				HP_FAIL("accepted %s", bad[i].text);
			if (!strstr(err.msg, bad[i].msg))
				HP_FAIL("'%s' lacks '%s'", err.msg, bad[i].msg);
			hp_lrfind_series_release(&s);
		}
	}
	{
		/* the edges of what a loss and an accuracy may be */
		static const char ok[] =
		    "{\"step\": 1, \"lr\": 0.1, \"loss\": 0, \"accuracy\": 1}\n"
		    "{\"step\": 2, \"lr\": 0.2, \"loss\": 1.7e308, "
		    "\"accuracy\": 0}\n"
		    "{\"step\": 3, \"lr\": 0.2, \"loss\": \"-inf\"}\n";
		hp_lrfind_series_init(&s);
		ASSERT_EQ_INT(hp_lrfind_parse_metrics(&s, ok, strlen(ok), "m",
						      1, 0, NULL, &err),
			      0);
		ASSERT_EQ_INT(s.n, 3);
		ASSERT(s.pts[1].loss == 1.7e308 && s.pts[1].accuracy == 0);
		hp_lrfind_series_release(&s);
		/* the API refuses what the parser does */
		hp_lrfind_series_init(&s);
		ASSERT_EQ_INT(hp_lrfind_series_add(&s, 1, 0.1, -0.5, NAN, &err),
			      HP_EINVAL);
		ASSERT_EQ_INT(hp_lrfind_series_add(&s, 1, 0.1, 1, 1.5, &err),
			      HP_EINVAL);
		ASSERT_EQ_INT(
		    hp_lrfind_series_add(&s, 1, 0.1, 1, INFINITY, &err),
		    HP_EINVAL);
		ASSERT_EQ_INT(s.n, 0);
		hp_lrfind_series_release(&s);
	}
}

/* ---- the plot ---- */

/*
 * A small well-formedness check, independent of the writer: after the XML
 * declaration, tags nest and close in order, attribute values are quoted,
 * '&' starts one of the five entities, no '<' inside text or attributes,
 * and exactly one root element.  Returns NULL or what is wrong.
 */
static const char *xml_check(const char *p)
{
	static char why[128];
	char stack[64][32];
	int depth = 0, roots = 0;

	if (strncmp(p, "<?xml ", 6) || !(p = strstr(p, "?>")))
		return "no XML declaration";
	p += 2;
	while (*p) {
		if (*p == '&') {
			static const char *const ents[] = {
			    "&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
			bool ok = false;
			for (int i = 0; i < 5; i++)
				ok |= !strncmp(p, ents[i], strlen(ents[i]));
			if (!ok)
				return "bare '&'";
			p++;
		} else if (*p == '<') {
			bool closing = p[1] == '/';
			const char *q = p + 1 + closing;
			size_t n = strspn(q, "abcdefghijklmnopqrstuvwxyzA"
					     "BCDEFGHIJKLMNOPQRSTUVWXYZ-");
			char name[32];
			if (n == 0 || n >= sizeof(name))
				return "bad tag name";
			memcpy(name, q, n);
			name[n] = '\0';
			q += n;
			/* attributes */
			while (*q && *q != '>' && *q != '/') {
				if (*q == ' ' || *q == '\n') {
					q++;
					continue;
				}
				size_t an =
				    strspn(q, "abcdefghijklmnopqrstuvwxyz"
					      "ABCDEFGHIJKLMNOPQRSTUVWXYZ-:"
					      "0123456789");
				if (an == 0)
					return "bad attribute name";
				q += an;
				if (q[0] != '=' || q[1] != '"')
					return "unquoted attribute";
				q += 2;
				while (*q && *q != '"') {
					if (*q == '<')
						return "'<' in an attribute";
					q++;
				}
				if (!*q)
					return "unterminated attribute";
				q++;
			}
			if (closing) {
				if (!depth || strcmp(stack[depth - 1], name)) {
					snprintf(why, sizeof(why),
						 "</%s> closes nothing open",
						 name);
					return why;
				}
				depth--;
			} else if (*q == '/') {
				q++;
				if (!depth)
					roots++;
			} else {
				if (depth == 64)
					return "too deep";
				if (!depth)
					roots++;
				memcpy(stack[depth++], name, n + 1);
			}
			if (*q != '>')
				return "tag not closed";
			p = q + 1;
		} else {
			if (!depth && *p != '\n' && *p != ' ')
				return "text outside the root";
			p++;
		}
	}
	if (depth)
		return "element left open";
	return roots == 1 ? NULL : "not one root element";
}

HP_TEST(lrfind_xml_checker_catches_errors)
{
	ASSERT(xml_check("<?xml version=\"1.0\"?>\n<a><b x=\"1\"/></a>\n") ==
	       NULL);
	ASSERT(xml_check("<?xml version=\"1.0\"?>\n<a><b></a>\n") != NULL);
	ASSERT(xml_check("<?xml version=\"1.0\"?>\n<a>x & y</a>\n") != NULL);
	ASSERT(xml_check("<?xml version=\"1.0\"?>\n<a t=\"<\"></a>\n") != NULL);
	ASSERT(xml_check("<?xml version=\"1.0\"?>\n<a></a><a></a>\n") != NULL);
}

HP_TEST(lrfind_xml_text_escapes)
{
	struct hp_buf b;

	hp_buf_init(&b, 1 << 16);
	ASSERT_EQ_INT(hp__lrfind_xml_text(&b, "a<b>&\"c'\x01\xff\xef\xbf\xbe"
					      "d"),
		      0);
	ASSERT_STR_EQ(hp_buf_str(&b),
		      "a&lt;b&gt;&amp;&quot;c&apos;\\x01\\xff?d");
	hp_buf_release(&b);
}

static bool has_nonfinite_number(const char *svg)
{
	return strstr(svg, "nan") || strstr(svg, "inf") || strstr(svg, "NaN") ||
	       strstr(svg, "e+");
}

HP_TEST(lrfind_svg_well_formed_and_escaped)
{
	struct hp_lrfind_series s;
	struct hp_lrfind_result r;
	struct hp_error err = {0};
	struct hp_buf b;
	struct hp_lrfind_run run = {.title = "cnn <a&b> \"q\" \x1b[31m"};
	const char *svg, *why;

	make_series(&s, &shapes[0], 200, -5, 1, 0.05, 3, false);
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, NULL, &r, &err), 0);
	ASSERT(r.diverged_at > 0);
	hp_buf_init(&b, 4 << 20);
	ASSERT_EQ_INT(hp_lrfind_svg(&s, &r, &run, &b, &err), 0);
	svg = hp_buf_str(&b);
	if ((why = xml_check(svg)))
		HP_FAIL("not well-formed: %s", why);
	ASSERT(strstr(svg, "cnn &lt;a&amp;b&gt; &quot;q&quot; \\x1b[31m"));
	ASSERT(!strchr(svg, '\x1b'));
	ASSERT(!has_nonfinite_number(svg));
	/* The pieces: raw, smoothed, two fits, accuracy; the band, the
	 * suggestion, the divergence, the decade labels. */
	{
		int lines = 0;
		for (const char *p = svg; (p = strstr(p, "<polyline")); p++)
			lines++;
		ASSERT(lines >= 5);
	}
	ASSERT(strstr(svg, "fill-opacity=\"0.15\""));
	ASSERT(strstr(svg, ">suggested "));
	ASSERT(strstr(svg, ">diverged (step "));
	ASSERT(strstr(svg, ">1e-5<") && strstr(svg, ">0.01<") &&
	       strstr(svg, ">1<"));
	ASSERT(strstr(svg, ">learning rate (log scale)<"));
	hp_buf_release(&b);

	/* A cap too small is an error, not a cut document. */
	hp_buf_init(&b, 1000);
	ASSERT_EQ_INT(hp_lrfind_svg(&s, &r, &run, &b, &err), HP_ETOOBIG);
	hp_buf_release(&b);
	hp_lrfind_result_release(&r);
	hp_lrfind_series_release(&s);
}

/* Many steps: the raw loss is drawn as a per-pixel envelope, so the file
 * stays small; an analysis that failed still plots the raw loss. */
HP_TEST(lrfind_svg_many_steps_and_no_fits)
{
	struct hp_lrfind_series s;
	struct hp_lrfind_result r;
	struct hp_error err = {0};
	struct hp_buf b;
	const char *why;

	make_series(&s, &shapes[1], 50000, -5, 1, 0.05, 8, true);
	ASSERT(s.n > 20000);
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, NULL, &r, &err), 0);
	hp_buf_init(&b, 4 << 20);
	ASSERT_EQ_INT(hp_lrfind_svg(&s, &r, NULL, &b, &err), 0);
	ASSERT(b.len < 200000);
	if ((why = xml_check(hp_buf_str(&b))))
		HP_FAIL("not well-formed: %s", why);
	hp_buf_release(&b);
	hp_lrfind_result_release(&r);

	memset(&r, 0, sizeof(r));
	r.diverged_at = -1;
	hp_buf_init(&b, 4 << 20);
	ASSERT_EQ_INT(hp_lrfind_svg(&s, &r, NULL, &b, &err), 0);
	if ((why = xml_check(hp_buf_str(&b))))
		HP_FAIL("not well-formed without fits: %s", why);
	ASSERT(!has_nonfinite_number(hp_buf_str(&b)));
	hp_buf_release(&b);
	hp_lrfind_series_release(&s);
}

/* A flat loss too large for +-0.5 to widen (2e85 + 0.5 is 2e85), losses
 * from 0 to near the largest double, and a flat loss too small for +-0.5
 * to show: the plot's scale stays finite (the fuzzer found a NaN in the
 * first).  (A negative loss, -1.79e308 here until 3 December, is refused
 * by the parser.) */
HP_TEST(lrfind_svg_huge_losses)
{
	static const char *const cases[] = {
	    "{\"step\":1,\"lr\":1e-5,\"loss\":2.2e85}\n",
	    "{\"step\":1,\"lr\":1e-5,\"loss\":1.79e308}\n"
	    "{\"step\":2,\"lr\":1e-4,\"loss\":0}\n",
	    "{\"step\":1,\"lr\":1e-5,\"loss\":3e-300}\n"};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct hp_lrfind_series s;
		struct hp_lrfind_result r;
		struct hp_error err = {0};
		struct hp_buf b;
		size_t used = 0;
		const char *why;

		hp_lrfind_series_init(&s);
		ASSERT_EQ_INT(hp_lrfind_parse_metrics(&s, cases[k],
						      strlen(cases[k]), "t", 1,
						      0, &used, &err),
			      0);
		/* too few steps to analyse: the plot shows the raw loss */
		ASSERT(hp_lrfind_analyse(&s, NULL, &r, &err) != 0);
		hp_buf_init(&b, 4 << 20);
		ASSERT_EQ_INT(hp_lrfind_svg(&s, &r, NULL, &b, &err), 0);
		if ((why = xml_check(hp_buf_str(&b))))
			HP_FAIL("case %zu not well-formed: %s", k, why);
		/* (tick labels such as 2.2e+85 are fine: no "e+" check) */
		if (strstr(hp_buf_str(&b), "nan") ||
		    strstr(hp_buf_str(&b), "inf"))
			HP_FAIL("case %zu: a non-finite number in the plot", k);
		hp_buf_release(&b);
		hp_lrfind_result_release(&r);
		hp_lrfind_series_release(&s);
	}
}

/* ---- JSON ---- */

HP_TEST(lrfind_json_contract)
{
	struct hp_lrfind_series s;
	struct hp_lrfind_result r;
	struct hp_error err = {0};
	struct hp_lrfind_run run = {.steps_requested = 400,
				    .metrics = "d/metrics.jsonl",
				    .plot = "d/lr-find.svg"};
	json_error_t jerr;
	json_t *o, *iv;
	char *text;

	make_series(&s, &shapes[0], 400, -5, 1, 0.05, 21, true);
	ASSERT(s.n < 400);
	ASSERT_EQ_INT(hp_lrfind_analyse(&s, NULL, &r, &err), 0);
	text = hp_lrfind_result_json(&s, &r, &run);
	ASSERT(text != NULL);
	o = json_loads(text, 0, &jerr);
	ASSERT(o != NULL);
	ASSERT_NEAR(json_real_value(json_object_get(o, "suggested_lr")),
		    r.suggested.lr, 1e-12);
	iv = json_object_get(o, "interval");
	ASSERT_EQ_INT(json_array_size(iv), 2);
	ASSERT_NEAR(json_real_value(json_array_get(iv, 0)), r.low.lr, 1e-12);
	ASSERT_NEAR(json_real_value(json_array_get(iv, 1)), r.high.lr, 1e-12);
	ASSERT(json_is_true(json_object_get(o, "stopped_early")));
	ASSERT_EQ_INT(json_integer_value(json_object_get(o, "steps_run")), s.n);
	ASSERT_EQ_INT(json_integer_value(json_object_get(
			  json_object_get(o, "polynomial"), "degree")),
		      r.poly.degree);
	ASSERT_EQ_INT(json_array_size(json_object_get(
			  json_object_get(o, "polynomial"), "coefficients")),
		      r.poly.degree + 1);
	ASSERT_NEAR(json_real_value(
			json_object_get(json_object_get(o, "log_fit"), "b")),
		    r.logfit.b, 1e-12);
	ASSERT(json_is_string(json_object_get(o, "suggested_how")));
	ASSERT(json_is_string(
	    json_object_get(json_object_get(o, "interval_how"), "low")));
	ASSERT_STR_EQ(json_string_value(json_object_get(o, "plot")),
		      "d/lr-find.svg");
	json_decref(o);
	free(text);
	hp_lrfind_result_release(&r);
	hp_lrfind_series_release(&s);
}
