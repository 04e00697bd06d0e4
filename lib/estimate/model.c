/*
 * model.c - the estimator's models and their fits: the physical step-time
 * model (per layer, compute against peak at a size-dependent efficiency
 * and memory traffic against bandwidth), fitted by robust non-linear least
 * squares in log time with GSL; the linear baseline (GSL least squares);
 * and the power curve.
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"

/* Weight of a layer class's measured time (the profiler's split) against
 * the step's: each class counts half a measurement. */
#define CLASS_WEIGHT 0.5
/* Weight of the prior on each free parameter (log units) against one
 * measurement's log residual: keeps parameters the data cannot see at
 * their physical defaults. */
#define PRIOR_WEIGHT 0.05
/* The smooth max of compute and memory time is the 4-norm. */

const char *hp__src_name(int src)
{
	static const char *const n[] = {"profile", "lambda", "gavel", "zeus"};
	return src >= 0 && src < HP__SRC_N ? n[src] : "?";
}

/* Link bandwidth for the gradient all-reduce, bytes/s per direction:
 * NVLink on SXM parts, PCIe by generation elsewhere (documented defaults,
 * docs/estimator.md). */
static double link_bw(const struct hp_device_type *t)
{
	bool sxm = strstr(t->product, "SXM") != NULL;
	const char *a = t->arch;

	if (sxm) {
		if (!strcmp(a, "pascal"))
			return 80e9;
		if (!strcmp(a, "volta"))
			return 150e9;
		if (!strcmp(a, "ampere"))
			return 300e9;
		return 450e9; /* hopper */
	}
	if (!strcmp(a, "hopper"))
		return 48e9;
	if (!strcmp(a, "ampere") || !strcmp(a, "ada"))
		return 24e9;
	return 12e9;
}

bool hp__dev_spec(const struct hp_device_type *t, struct hp__dev_spec *d)
{
	memset(d, 0, sizeof(*d));
	d->cpu = t->kind == HP_DEVICE_CPU;
	d->fp32 = t->fp32_tflops * 1e12;
	d->tf32 = t->tf32_tflops > t->fp32_tflops ? t->tf32_tflops * 1e12 : 0;
	d->bw = t->mem_bw_gbs > 0 ? t->mem_bw_gbs * 1e9
		: d->cpu	  ? HP__CPU_NOMINAL_BW
				  : NAN;
	d->link_bw = d->cpu ? 10e9 : link_bw(t);
	d->chan_block = 1;
	d->fuse_bn_relu = d->cpu;
	return d->fp32 > 0 && d->bw > 0;
}

int hp__chan_block(const char *backend)
{
	if (!backend)
		return 1;
	if (strstr(backend, "avx512"))
		return 16;
	if (strstr(backend, "avx"))
		return 8;
	if (strstr(backend, "sse"))
		return 4;
	return 1;
}

/* How much a tensor of c channels grows when padded to blocks of b. */
static double pad_factor(double c, int b)
{
	if (b <= 1 || !(c > 0))
		return 1;
	return ceil(c / b) * b / c;
}

double hp__peak(const double *th, const struct hp__dev_spec *d)
{
	double kappa;

	if (!(d->tf32 > d->fp32))
		return d->fp32;
	kappa = 1 / (1 + exp(-th[HP__TH_KAPPA]));
	return d->fp32 * pow(d->tf32 / d->fp32, kappa);
}

double hp__phys_time(const double *th, const struct hp__dev_spec *d,
		     const struct hp_workload *w, int src, int ndev,
		     double *comm)
{
	return hp__phys_time_cls(th, d, w, src, ndev, comm, NULL);
}

double hp__phys_time_cls(const double *th, const struct hp__dev_spec *d,
			 const struct hp_workload *w, int src, int ndev,
			 double *comm, double *cls)
{
	double peak = hp__peak(th, d);
	double em_bw = exp(th[HP__TH_EM]) * d->bw;
	double emw_bw = exp(th[HP__TH_EMW]) * d->bw;
	double chalf = exp(th[HP__TH_CHALF]);
	double shalf = exp(th[HP__TH_SHALF]);
	double cache = exp(th[HP__TH_CACHE]), cachex = exp(th[HP__TH_CACHEX]);
	double rate[HP_EST_NCLASS], lat[HP_EST_NCLASS];
	double t = exp(th[HP__TH_T0]), c = 0;

	if (cls)
		for (int k = 0; k < HP_EST_NCLASS; k++)
			cls[k] = 0;

	for (int k = 0; k < HP_EST_NCLASS; k++) {
		double e = exp(th[HP__TH_EMAX + k]);
		rate[k] = peak * e;
		lat[k] = exp(th[HP__TH_TAU + k]) / e;
	}
	for (int i = 0; i < w->nlayers; i++) {
		int k = w->cls[i];
		/* A relu fused into the bn before it costs nothing more. */
		if (d->fuse_bn_relu && w->after_bn && w->after_bn[i])
			continue;
		/* Blocked layouts pad channels (8 channels take a 16-wide
		 * block on AVX-512): padded lanes are computed and moved. */
		double pin = pad_factor(w->cin ? w->cin[i] : 0, d->chan_block);
		double pout =
		    pad_factor(w->cout ? w->cout[i] : 0, d->chan_block);
		double flops =
		    w->flops[i] * (k == HP_EST_CONV ? pin * pout : 1);
		double act =
		    d->chan_block > 1 && w->in_bytes
			? 3 * w->in_bytes[i] * pin + 2 * w->out_bytes[i] * pout
			: w->bytes[i];
		/* efficiency e(F) = emax F / (F + peak tau): the time is F at
		 * emax of the peak plus a latency tau / emax. */
		double tc = flops / rate[k] + lat[k];
		/* Traffic of a small working set is served by the caches:
		 * the share that goes to memory grows with its size. */
		double fa = act / (act + cache);
		double fw = w->wbytes[i] / (w->wbytes[i] + cache);
		double tw = w->wbytes[i] / emw_bw * (fw + (1 - fw) / cachex);
		/* Weights move 8 times a step: 3 in the forward and backward
		 * passes (overlapping their compute), 5 in the optimizer's
		 * update, a pass of its own after backward. */
		double tm =
		    act / em_bw * (fa + (1 - fa) / cachex) + tw * (3.0 / 8);
		/* Narrow convolutions fill fewer vector lanes / SMs. */
		if (k == HP_EST_CONV && w->width[i] > 0)
			tc *= 1 + chalf / w->width[i];
		/* ... and small feature maps fill fewer register blocks. */
		if (k == HP_EST_CONV && w->hw && w->hw[i] > 0)
			tc *= 1 + shalf / w->hw[i];
		double a = tc > tm ? tc : tm, b = tc > tm ? tm : tc;
		double r = b / a, r2 = r * r;
		/* The smooth max (a^P + b^P)^(1/P) at P = 4, without pow():
		 * it is most of a prediction's time otherwise. */
		double tl = a * sqrt(sqrt(1 + r2 * r2)) + tw * (5.0 / 8);
		t += tl;
		if (cls)
			cls[k] += tl;
	}
	if (src == HP__SRC_GAVEL)
		t = t * exp(th[HP__TH_SRC]) + exp(th[HP__TH_SRC_T0]) +
		    (double)w->batch * exp(th[HP__TH_SRC_TS]);
	else if (src == HP__SRC_ZEUS)
		t = t * exp(th[HP__TH_SRC + 1]) + exp(th[HP__TH_SRC_T0 + 1]) +
		    (double)w->batch * exp(th[HP__TH_SRC_TS + 1]);
	if (ndev > 1) {
		/* Ring all-reduce of FP32 gradients. */
		c = exp(th[HP__TH_COMM]) * 2.0 * (ndev - 1) / ndev * 4.0 *
		    (double)w->params / d->link_bw;
		t += c;
	}
	if (comm)
		*comm = c;
	return t;
}

void hp__phys_prior(bool cpu, double *th)
{
	for (int k = 0; k < HP_EST_NCLASS; k++) {
		th[HP__TH_EMAX + k] = log(0.5);
		th[HP__TH_TAU + k] = log(cpu ? 5e-6 : 2e-5);
	}
	th[HP__TH_EM] = log(0.6);
	th[HP__TH_EMW] = log(0.6);
	th[HP__TH_CHALF] = log(4);
	th[HP__TH_T0] = log(cpu ? 1e-4 : 2e-3);
	th[HP__TH_KAPPA] = 0;
	th[HP__TH_COMM] = 0;
	th[HP__TH_SRC] = 0;
	th[HP__TH_SRC + 1] = 0;
	th[HP__TH_SRC_T0] = log(1e-3);
	th[HP__TH_SRC_T0 + 1] = log(1e-3);
	th[HP__TH_SRC_TS] = log(1e-5);
	th[HP__TH_SRC_TS + 1] = log(1e-5);
	/* CPUs: caches of a few MiB to tens of MiB.  GPUs: no cache term
	 * (a working set of 1 byte: all traffic goes to memory). */
	th[HP__TH_CACHE] = cpu ? log(8e6) : 0;
	th[HP__TH_CACHEX] = cpu ? log(4) : 0;
	/* GPUs: left at a negligible value (the public models' maps are
	 * not varied enough to fit it). */
	th[HP__TH_SHALF] = cpu ? log(4) : log(1e-6);
}

struct nl_ctx {
	const struct hp__fitpt *pts;
	int n;
	const double *wt;
	double th[HP__NTH];
	double prior[HP__NTH];
	int idx[HP__NTH];
	int nfree;
	/* per-device log scales, fitted with the rest (0: none) */
	int nscale;
	double *scale;
	double shrink; /* their ridge: as if this many rows said 0 */
	/* points with measured class times (indices into pts) */
	int *cls_pt;
	int ncls;
};

/* The point's time with its device's scale. */
static double pt_time(const struct nl_ctx *c, const double *th,
		      const double *sc, const struct hp__fitpt *p)
{
	double t = hp__phys_time(th, &p->d, p->w, p->src, p->ndev, NULL);
	if (c->nscale > 0 && p->dev >= 0 && p->dev < c->nscale)
		t *= exp(sc[p->dev]);
	return t;
}

static int nl_f(const gsl_vector *x, void *ud, gsl_vector *f)
{
	struct nl_ctx *c = ud;
	double th[HP__NTH], *sc = c->scale;

	memcpy(th, c->th, sizeof(th));
	for (int j = 0; j < c->nfree; j++) {
		double v = gsl_vector_get(x, (size_t)j);
		/* Keep exp() finite whatever the solver tries. */
		th[c->idx[j]] = v > 30 ? 30 : v < -60 ? -60 : v;
	}
	for (int d = 0; d < c->nscale; d++) {
		double v = gsl_vector_get(x, (size_t)(c->nfree + d));
		sc[d] = v > 20 ? 20 : v < -20 ? -20 : v;
	}
	for (int i = 0; i < c->n; i++) {
		const struct hp__fitpt *p = &c->pts[i];
		double r = log(pt_time(c, th, sc, p)) - log(p->t);
		if (!isfinite(r))
			r = 50;
		gsl_vector_set(f, (size_t)i, sqrt(c->wt[i]) * r);
	}
	/* Where the step went, where measured: each class's own time. */
	for (int i = 0; i < c->ncls; i++) {
		const struct hp__fitpt *p = &c->pts[c->cls_pt[i]];
		double pc[HP_EST_NCLASS];
		hp__phys_time_cls(th, &p->d, p->w, p->src, p->ndev, NULL, pc);
		for (int k = 0; k < HP_EST_NCLASS; k++) {
			double r = 0;
			if (p->tcls[k] > 0 && pc[k] > 0)
				r = log(pc[k]) - log(p->tcls[k]);
			if (!isfinite(r))
				r = 50;
			gsl_vector_set(
			    f, (size_t)(c->n + i * HP_EST_NCLASS + k),
			    CLASS_WEIGHT * sqrt(c->wt[c->cls_pt[i]]) * r);
		}
	}
	for (int j = 0; j < c->nfree; j++)
		gsl_vector_set(f, (size_t)(c->n + c->ncls * HP_EST_NCLASS + j),
			       PRIOR_WEIGHT *
				   (th[c->idx[j]] - c->prior[c->idx[j]]));
	for (int d = 0; d < c->nscale; d++)
		gsl_vector_set(
		    f, (size_t)(c->n + c->ncls * HP_EST_NCLASS + c->nfree + d),
		    sqrt(c->shrink) * sc[d]);
	return GSL_SUCCESS;
}

static int nl_solve(struct nl_ctx *c, struct hp_error *err)
{
	const gsl_multifit_nlinear_type *T = gsl_multifit_nlinear_trust;
	gsl_multifit_nlinear_parameters par =
	    gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_fdf fdf;
	gsl_multifit_nlinear_workspace *ws;
	gsl_vector *x;
	size_t np = (size_t)(c->nfree + c->nscale);
	size_t nres = (size_t)c->n + (size_t)c->ncls * HP_EST_NCLASS + np;
	int info, status;

	x = gsl_vector_alloc(np);
	if (!x)
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	ws = gsl_multifit_nlinear_alloc(T, &par, nres, np);
	if (!ws) {
		gsl_vector_free(x);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	for (int j = 0; j < c->nfree; j++)
		gsl_vector_set(x, (size_t)j, c->th[c->idx[j]]);
	for (int d = 0; d < c->nscale; d++)
		gsl_vector_set(x, (size_t)(c->nfree + d), c->scale[d]);
	memset(&fdf, 0, sizeof(fdf));
	fdf.f = nl_f;
	fdf.df = NULL; /* finite differences */
	fdf.n = nres;
	fdf.p = np;
	fdf.params = c;
	gsl_multifit_nlinear_init(x, &fdf, ws);
	status = gsl_multifit_nlinear_driver(200, 1e-8, 1e-8, 1e-8, NULL, NULL,
					     &info, ws);
	/* GSL_EMAXITER still leaves the best point found. */
	if (status != GSL_SUCCESS && status != GSL_EMAXITER &&
	    status != GSL_ENOPROG) {
		gsl_multifit_nlinear_free(ws);
		gsl_vector_free(x);
		return hp_error_set(err, HP_EINTERNAL,
				    "non-linear fit failed: %s",
				    gsl_strerror(status));
	}
	for (int j = 0; j < c->nfree; j++) {
		double v = gsl_vector_get(ws->x, (size_t)j);
		c->th[c->idx[j]] = v > 30 ? 30 : v < -60 ? -60 : v;
	}
	for (int d = 0; d < c->nscale; d++) {
		double v = gsl_vector_get(ws->x, (size_t)(c->nfree + d));
		c->scale[d] = v > 20 ? 20 : v < -20 ? -20 : v;
	}
	gsl_multifit_nlinear_free(ws);
	gsl_vector_free(x);
	return 0;
}

int hp__phys_fit(const struct hp__fitpt *pts, int n, double *th,
		 const double *prior, const bool *free_params, int nscale,
		 double *scale, double shrink, struct hp_error *err)
{
	struct nl_ctx c;
	double *wt, *r;
	int rc = 0;

	if (n < 1)
		return hp_error_set(err, HP_EINVAL, "no measurements to fit");
	gsl_set_error_handler_off();
	memset(&c, 0, sizeof(c));
	wt = malloc((size_t)n * sizeof(*wt));
	r = malloc((size_t)n * sizeof(*r));
	c.cls_pt = malloc((size_t)n * sizeof(*c.cls_pt));
	if (!wt || !r || !c.cls_pt) {
		free(wt);
		free(r);
		free(c.cls_pt);
		return hp_error_set(err, HP_ENOMEM, "out of memory");
	}
	c.pts = pts;
	c.n = n;
	c.wt = wt;
	memcpy(c.th, th, sizeof(c.th));
	memcpy(c.prior, prior ? prior : th, sizeof(c.prior));
	for (int j = 0; j < HP__NTH; j++)
		if (free_params[j])
			c.idx[c.nfree++] = j;
	c.nscale = scale ? nscale : 0;
	c.scale = scale;
	c.shrink = shrink;
	for (int i = 0; i < n; i++) {
		bool any = false;
		for (int k = 0; k < HP_EST_NCLASS; k++)
			any |= pts[i].tcls[k] > 0;
		if (any)
			c.cls_pt[c.ncls++] = i;
	}
	for (int d = 0; d < c.nscale; d++)
		scale[d] = 0;
	for (int i = 0; i < n; i++)
		wt[i] = 1;
	if (c.nfree + c.nscale == 0)
		goto out;
	/* Huber-reweighted: a few noisy measurements (a busy host) must
	 * not pull the curve. */
	for (int pass = 0; pass < 3; pass++) {
		double s;
		if ((rc = nl_solve(&c, err)))
			goto out;
		if (pass == 2)
			break;
		for (int i = 0; i < n; i++) {
			double t = pt_time(&c, c.th, c.scale, &pts[i]);
			r[i] = fabs(log(t) - log(pts[i].t));
			wt[i] = r[i];
		}
		s = 1.4826 * hp__quantile(wt, n, 0.5);
		if (!(s > 1e-3))
			s = 1e-3;
		for (int i = 0; i < n; i++)
			wt[i] = r[i] <= 1.5 * s ? 1 : 1.5 * s / r[i];
	}
	memcpy(th, c.th, sizeof(c.th));
out:
	free(c.cls_pt);
	free(wt);
	free(r);
	return rc;
}

void hp__linear_x(const struct hp_workload *w, double *x)
{
	x[0] = 1;
	x[1] = w->conv_layers;
	x[2] = w->fc_layers;
	x[3] = log((double)(w->filters > 0 ? w->filters : 1));
	x[4] = log((double)(w->fc_width > 0 ? w->fc_width : 1));
	x[5] = log((double)(w->input_size > 0 ? w->input_size : 1));
	x[6] = log((double)(w->batch > 0 ? w->batch : 1));
}

int hp__linear_fit(const double *X, const double *y, int n, int p, bool robust,
		   double *beta, struct hp_error *err)
{
	gsl_matrix *A = NULL, *cov = NULL;
	gsl_vector *b = NULL, *c = NULL;
	double chisq;
	int rc = 0, st;

	if (n < p)
		return hp_error_set(err, HP_EINVAL,
				    "%d rows for %d coefficients: too few", n,
				    p);
	gsl_set_error_handler_off();
	A = gsl_matrix_alloc((size_t)n, (size_t)p);
	cov = gsl_matrix_alloc((size_t)p, (size_t)p);
	b = gsl_vector_alloc((size_t)n);
	c = gsl_vector_alloc((size_t)p);
	if (!A || !cov || !b || !c) {
		rc = hp_error_set(err, HP_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < p; j++)
			gsl_matrix_set(A, (size_t)i, (size_t)j,
				       X[(size_t)i * p + j]);
		gsl_vector_set(b, (size_t)i, y[i]);
	}
	st = GSL_EFAILED;
	if (robust && n > p + 2) {
		gsl_multifit_robust_workspace *ws = gsl_multifit_robust_alloc(
		    gsl_multifit_robust_bisquare, (size_t)n, (size_t)p);
		if (ws) {
			st = gsl_multifit_robust(A, b, c, cov, ws);
			gsl_multifit_robust_free(ws);
		}
	}
	if (st != GSL_SUCCESS) {
		gsl_multifit_linear_workspace *ws =
		    gsl_multifit_linear_alloc((size_t)n, (size_t)p);
		if (!ws) {
			rc = hp_error_set(err, HP_ENOMEM, "out of memory");
			goto out;
		}
		st = gsl_multifit_linear(A, b, c, cov, &chisq, ws);
		gsl_multifit_linear_free(ws);
	}
	if (st != GSL_SUCCESS) {
		rc = hp_error_set(err, HP_EINTERNAL, "linear fit failed: %s",
				  gsl_strerror(st));
		goto out;
	}
	for (int j = 0; j < p; j++)
		beta[j] = gsl_vector_get(c, (size_t)j);
out:
	gsl_matrix_free(A);
	gsl_matrix_free(cov);
	gsl_vector_free(b);
	gsl_vector_free(c);
	return rc;
}

double hp__power_w(const struct hp_device_type *t, double util, double gamma)
{
	if (!(t->tdp_w > 0) || !(t->idle_w >= 0))
		return NAN;
	if (!(util > 0))
		util = 0;
	if (util > 1)
		util = 1;
	return t->idle_w + (t->tdp_w - t->idle_w) * pow(util, gamma);
}
