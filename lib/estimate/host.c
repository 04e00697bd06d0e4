/*
 * host.c - CPU hosts in the estimator: a CPU fit carried from the host
 * that was profiled to this one by the ratio of their figures (measured
 * FLOP/s at the threads used, triad bandwidth, cache sizes), and this
 * host's calibration: a log factor per layer class fitted on a few
 * configurations profiled here, pulled to no correction by a ridge.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"

double hp__cpu_cap(const struct hp_device_type *t)
{
	return t->peaks_measured && t->fp32_tflops > 0 ? t->fp32_tflops * 1e12
						       : 0;
}

void hp__cpu_transfer(const struct hp__dev_fit *df,
		      const struct hp_device_type *t, struct hp__dev_spec *d,
		      double *th, char *what, size_t n)
{
	double here_bw = t->mem_bw_gbs * 1e9;
	double here_fp = t->fp32_tflops * 1e12;
	double est = t->fp32_est_tflops * 1e12, ref_bw;

	memcpy(th, df->th, sizeof(df->th));
	/* no layer outruns this host's measured sgemm (model.c) */
	d->cap = hp__cpu_cap(t);
	if (n)
		what[0] = '\0';
	if (!t->detected || t->threads < 1)
		return;
	/*
	 * Compute: the fit's efficiencies are against fit_fp32 on the
	 * profiled host; a host that runs sgemm r times as fast runs the
	 * same layers r times as fast.  Without the profiled host's measured
	 * FLOP/s, its peak is the one the fit used (its ISA estimate) and
	 * this host's is its measured one, else its ISA estimate, at the
	 * threads used.
	 */
	if (t->peaks_measured && here_fp > 0)
		d->fp32 = df->ref_fp32_meas > 0
			      ? df->fit_fp32 * here_fp / df->ref_fp32_meas
			      : here_fp;
	else if (est > 0)
		d->fp32 = est;
	/*
	 * Memory: the fit saw the nominal bandwidth; scale it by this host's
	 * triad over the profiled host's (when that was not measured, the
	 * nominal figure stands for it).
	 */
	ref_bw = df->ref_bw > 0 ? df->ref_bw : HP__CPU_NOMINAL_BW;
	if (t->peaks_measured && here_bw > 0)
		d->bw = HP__CPU_NOMINAL_BW * here_bw / ref_bw;
	else
		d->bw = HP__CPU_NOMINAL_BW;
	/* Caches: the working set served from cache grows with them. */
	if (df->ref_cache > 0 && t->cache_bytes > 0)
		th[HP__TH_CACHE] += log(t->cache_bytes / df->ref_cache);
	if (!n)
		return;
	if (t->peaks_measured)
		snprintf(
		    what, n,
		    "carried to this host (%d thread%s) by its measured "
		    "%.0f GFLOP/s and %.1f GB/s triad (profiled host: "
		    "%.0f GFLOP/s %s, %.0f GB/s %s)",
		    t->threads, t->threads == 1 ? "" : "s", here_fp / 1e9,
		    here_bw / 1e9,
		    (df->ref_fp32_meas > 0 ? df->ref_fp32_meas : df->fit_fp32) /
			1e9,
		    df->ref_fp32_meas > 0 ? "measured" : "ISA", ref_bw / 1e9,
		    df->ref_bw > 0 ? "measured" : "nominal");
	else
		snprintf(what, n,
			 "carried to this host (%d thread%s) by its ISA peak "
			 "%.0f GFLOP/s (peaks not measured: 'hetpool host "
			 "--measure')",
			 t->threads, t->threads == 1 ? "" : "s", d->fp32 / 1e9);
}

/* The channel block of this host's oneDNN layouts, from its ISA (in its
 * host file's key). */
static int host_chan_block(const struct hp_device_type *t)
{
	const char *isa = strstr(t->key, "-avx512-") ? "avx512"
			  : strstr(t->key, "-avx")   ? "avx"
			  : strstr(t->key, "-sse")   ? "sse"
						     : "";
	return hp__chan_block(isa);
}

void hp__cpu_ref_record(struct hp__dev_fit *df, const struct hp_device_type *t,
			int chan_block)
{
	if (!t->detected || !t->peaks_measured || t->threads < 1 ||
	    host_chan_block(t) != chan_block)
		return;
	df->ref_threads = t->threads;
	df->ref_fp32_meas = t->fp32_tflops * 1e12;
	df->ref_bw = t->mem_bw_gbs * 1e9;
	df->ref_cache = t->cache_bytes > 0 ? t->cache_bytes : 0;
}

int hp_estimator_cpu_fit_id(const struct hp_estimator *est, const char *device,
			    char *buf, size_t n)
{
	const struct hp__dev_fit *df = hp__est_dev(est, device);
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	const unsigned char *p;

	if (n)
		buf[0] = '\0';
	if (!df || !df->cpu || !df->own_theta)
		return HP_ENOENT;
	double off[HP__NTH];
	hp__phys_prior(false, off);
	/* the parameters in order; those added since 2026-12-01
	 * (HP__TH_IDX on) only when their term is on, so that a fit
	 * without them keeps the identity it had before (and the
	 * calibrations made against it) */
	for (int j = 0; j < HP__NTH; j++) {
		if (j >= HP__TH_IDX && df->th[j] == off[j])
			continue;
		p = (const unsigned char *)&df->th[j];
		for (size_t i = 0; i < sizeof(df->th[j]); i++)
			h = (h ^ p[i]) * 0x100000001b3ull;
	}
	p = (const unsigned char *)&df->fit_fp32;
	for (size_t i = 0; i < sizeof(df->fit_fp32); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	snprintf(buf, n, "%016llx", (unsigned long long)h);
	return 0;
}

void hp__cpu_ref_from_row(struct hp__dev_fit *df, const struct hp__sample *s)
{
	if (!(s->host_sgemm > 0) || !(s->host_triad > 0) || s->threads < 1)
		return;
	df->ref_threads = s->threads;
	df->ref_fp32_meas = s->host_sgemm;
	df->ref_bw = s->host_triad;
	df->ref_cache = s->host_cache > 0 ? s->host_cache : 0;
}

double hp__cpu_calib_factor(const struct hp_host_calib *c, int k)
{
	return exp(
	    c->log_scale[k < HP_HOST_CALIB_NCLASS ? k
						  : HP_HOST_CALIB_NCLASS - 1]);
}

double hp__cpu_calibrated(const struct hp_host_calib *c, double t_raw,
			  const double *cls)
{
	double sum = 0, t = 0;

	for (int k = 0; k < HP_EST_NCLASS; k++)
		sum += cls[k];
	/* the overhead goes with the last class ("other") */
	for (int k = 0; k < HP_EST_NCLASS; k++) {
		double a = cls[k] + (k == HP_EST_NCLASS - 1 ? t_raw - sum : 0);
		t += hp__cpu_calib_factor(c, k) * a;
	}
	return t;
}

/* Solve the 3 x 3 system A x = b (Gaussian elimination with pivoting);
 * false when singular. */
static bool solve3(double A[3][3], double *b, double *x)
{
	for (int c = 0; c < 3; c++) {
		int p = c;
		for (int r = c + 1; r < 3; r++)
			if (fabs(A[r][c]) > fabs(A[p][c]))
				p = r;
		if (!(fabs(A[p][c]) > 1e-300))
			return false;
		if (p != c) {
			for (int k = 0; k < 3; k++) {
				double tmp = A[c][k];
				A[c][k] = A[p][k];
				A[p][k] = tmp;
			}
			double tb = b[c];
			b[c] = b[p];
			b[p] = tb;
		}
		for (int r = c + 1; r < 3; r++) {
			double f = A[r][c] / A[c][c];
			for (int k = c; k < 3; k++)
				A[r][k] -= f * A[c][k];
			b[r] -= f * b[c];
		}
	}
	for (int r = 2; r >= 0; r--) {
		double s = b[r];
		for (int k = r + 1; k < 3; k++)
			s -= A[r][k] * x[k];
		x[r] = s / A[r][r];
	}
	return true;
}

/* Sum of squared log residuals plus the ridge. */
static double objective(const double *a, const double *y, int n,
			const double *c, double ridge)
{
	double f = 0;

	for (int i = 0; i < n; i++) {
		double p = 0;
		for (int k = 0; k < 3; k++)
			p += exp(c[k]) * a[i * 3 + k];
		f += (log(p) - log(y[i])) * (log(p) - log(y[i]));
	}
	for (int k = 0; k < 3; k++)
		f += ridge * c[k] * c[k];
	return f;
}

int hp__host_calib_fit(const double *a, const double *y, int n, double ridge,
		       double *c)
{
	double f;

	for (int k = 0; k < 3; k++)
		c[k] = 0;
	f = objective(a, y, n, c, ridge);
	for (int it = 0; it < 100; it++) {
		double A[3][3] = {{0}}, g[3] = {0}, step[3], trial[3], ft;
		double lm = 1e-9, scale = 1;
		for (int i = 0; i < n; i++) {
			double p = 0, J[3];
			for (int k = 0; k < 3; k++)
				p += exp(c[k]) * a[i * 3 + k];
			double r = log(p) - log(y[i]);
			for (int k = 0; k < 3; k++)
				J[k] = exp(c[k]) * a[i * 3 + k] / p;
			for (int k = 0; k < 3; k++) {
				g[k] += J[k] * r;
				for (int m = 0; m < 3; m++)
					A[k][m] += J[k] * J[m];
			}
		}
		for (int k = 0; k < 3; k++) {
			A[k][k] += ridge + lm;
			g[k] = -(g[k] + ridge * c[k]);
		}
		if (!solve3(A, g, step))
			return HP_EINTERNAL;
		/* halve the step until the objective falls */
		for (int h = 0; h < 30; h++, scale /= 2) {
			for (int k = 0; k < 3; k++) {
				trial[k] = c[k] + scale * step[k];
				if (trial[k] > 3)
					trial[k] = 3;
				if (trial[k] < -3)
					trial[k] = -3;
			}
			ft = objective(a, y, n, trial, ridge);
			if (ft <= f)
				break;
		}
		if (!(ft <= f))
			break;
		double moved = 0;
		for (int k = 0; k < 3; k++) {
			moved += fabs(trial[k] - c[k]);
			c[k] = trial[k];
		}
		f = ft;
		if (moved < 1e-10)
			break;
	}
	return 0;
}

/* This host's own fit on the calibration's configurations into c (its
 * in-sample MAPE after and interval too). */
static int own_fit(const struct hp_device_type *t,
		   const struct hp_workload *const *w, const double *step_s,
		   const double *cls_s, int n, struct hp_host_calib *c,
		   struct hp_error *err)
{
	struct hp__fitpt *pts = calloc((size_t)n, sizeof(*pts));
	double *p = calloc((size_t)n, sizeof(*p));
	double *res = calloc((size_t)n, sizeof(*res));
	double th[HP__NTH], after = 0;
	struct hp__dev_spec d;
	int rc = 0;

	if (!pts || !p || !res) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	/* as a profile of this host records it: its ISA peak at these
	 * threads (else its measured one), the nominal bandwidth */
	if (!hp__dev_spec(t, &d)) {
		rc = hp_error_set(err, HP_EUNSUPP,
				  "this host has no peak to fit against");
		goto out;
	}
	d.chan_block = host_chan_block(t);
	d.cap = hp__cpu_cap(t); /* as predictions will see it */
	for (int i = 0; i < n; i++) {
		pts[i].w = w[i];
		pts[i].d = d;
		pts[i].src = HP__SRC_PROFILE;
		pts[i].ndev = 1;
		pts[i].t = step_s[i];
		for (int k = 0; k < HP_EST_NCLASS; k++)
			pts[i].tcls[k] = cls_s && cls_s[3 * i + k] > 0
					     ? cls_s[3 * i + k]
					     : NAN;
	}
	if ((rc = hp__cpu_fit_points(pts, n, th, err)) ||
	    (rc = hp__phys_times(pts, n, th, 0, NULL, p, err)))
		goto out;
	for (int i = 0; i < n; i++) {
		after += fabs(p[i] - step_s[i]) / step_s[i];
		res[i] = log(step_s[i] / p[i]);
	}
	c->nparams = 0;
	for (int j = 0; j < HP__NTH && j < HP_HOST_CALIB_MAXPARAMS; j++) {
		snprintf(c->param_names[c->nparams], sizeof(c->param_names[0]),
			 "%s", hp__th_name(j));
		c->params[c->nparams++] = th[j];
	}
	c->fit_gflops = d.fp32 / 1e9;
	c->chan_block = d.chan_block;
	c->mape_after = 100 * after / n;
	c->q_lo = hp__quantile(res, n, 0.1);
	c->q_hi = hp__quantile(res, n, 0.9);
out:
	free(pts);
	free(p);
	free(res);
	return rc;
}

int hp_estimator_calibrate_host(const struct hp_estimator *est,
				const struct hp_catalog *cat,
				const char *device,
				const struct hp_workload *const *w,
				const double *step_s, int n, double ridge,
				struct hp_host_calib *out, struct hp_error *err)
{
	return hp_estimator_calibrate_host_fit(est, cat, device, w, step_s,
					       NULL, n, ridge, out, err);
}

int hp_estimator_calibrate_host_fit(
    const struct hp_estimator *est, const struct hp_catalog *cat,
    const char *device, const struct hp_workload *const *w,
    const double *step_s, const double *cls_s, int n, double ridge,
    struct hp_host_calib *out, struct hp_error *err)
{
	const struct hp_device_type *t;
	const struct hp__dev_fit *df;
	double *a = NULL, *res = NULL, th[HP__NTH], c[3];
	double before = 0, after = 0;
	struct hp__dev_spec d;
	int rc = 0;

	if (!est || !cat || !w || !step_s || !out)
		return hp_error_set(err, HP_EINVAL, "no estimator or data");
	if (n < 1)
		return hp_error_set(err, HP_EINVAL, "no configurations");
	if (!(ridge >= 0))
		return hp_error_set(err, HP_EINVAL, "ridge %g below 0", ridge);
	if (!device || !(t = hp_catalog_find(cat, device)) ||
	    t->kind != HP_DEVICE_CPU)
		return hp_error_set(err, HP_EINVAL,
				    "'%s' is not a CPU type of the catalog",
				    device ? device : "");
	df = hp__est_dev(est, t->name);
	if (!df || !df->own_theta)
		return hp_error_set(err, HP_EUNSUPP,
				    "no fit of '%s' in the estimator", t->name);
	hp__dev_spec(t, &d);
	if (df->chan_block > 1)
		d.chan_block = df->chan_block;
	hp__cpu_transfer(df, t, &d, th, NULL, 0);
	if (t->fp32_est_tflops > 0 && !t->peaks_measured && !(d.fp32 > 0))
		d.fp32 = t->fp32_est_tflops * 1e12;
	if (!(d.fp32 > 0) && df->fit_fp32 > 0)
		d.fp32 = df->fit_fp32;
	if (!(a = calloc((size_t)n * 3, sizeof(*a))))
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		double cls[HP_EST_NCLASS], raw, sum = 0;
		if (!(step_s[i] > 0) || !w[i]) {
			rc = hp_error_set(err, HP_EINVAL,
					  "configuration %d has no step time",
					  i);
			goto out;
		}
		raw = hp__phys_time_cls(th, &d, w[i], HP__SRC_PROFILE, 1, NULL,
					cls);
		for (int k = 0; k < HP_EST_NCLASS; k++) {
			a[i * 3 + (k < 3 ? k : 2)] += cls[k];
			sum += cls[k];
		}
		a[i * 3 + 2] += raw - sum;
		if (!(raw > 0) || !isfinite(raw)) {
			rc = hp_error_set(err, HP_EINTERNAL,
					  "the model gave no step time");
			goto out;
		}
		before += fabs(raw - step_s[i]) / step_s[i];
	}
	if ((rc = hp__host_calib_fit(a, step_s, n, ridge, c))) {
		rc = hp_error_set(err, rc, "calibration fit failed");
		goto out;
	}
	if (!(res = calloc((size_t)n, sizeof(*res)))) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		double p = 0;
		for (int k = 0; k < 3; k++)
			p += exp(c[k]) * a[i * 3 + k];
		after += fabs(p - step_s[i]) / step_s[i];
		res[i] = log(step_s[i] / p);
	}
	memset(out, 0, sizeof(*out));
	out->has = true;
	out->n = n;
	snprintf(out->estimator, sizeof(out->estimator), "%s", est->created);
	hp_estimator_cpu_fit_id(est, device, out->cpu_fit,
				sizeof(out->cpu_fit));
	out->threads = t->threads;
	for (int k = 0; k < 3; k++)
		out->log_scale[k] = c[k];
	out->mape_before = 100 * before / n;
	out->mape_after = 100 * after / n;
	out->ref_time_s = NAN;
	out->q_lo = hp__quantile(res, n, 0.1);
	out->q_hi = hp__quantile(res, n, 0.9);
	/* with enough configurations (and class times, from the CLI), this
	 * host's own fit; hp_estimator_calibrate_host() keeps the factors
	 * alone */
	if (cls_s && n >= HP_HOST_OWN_FIT_MIN)
		rc = own_fit(t, w, step_s, cls_s, n, out, err);
out:
	free(res);
	free(a);
	return rc;
}
