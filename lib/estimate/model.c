/*
 * model.c - the estimator's models: the physical step-time model (per
 * layer, compute against peak at a size-dependent efficiency and memory
 * traffic against bandwidth; fitted in physfit.c), the linear baseline
 * (GSL least squares) and the power curve.
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "estimate/estimate_int.h"
#include "util/banned.h"

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
	/* A detected host: its ISA estimate at the threads used, and the
	 * nominal bandwidth the CPU fits assume (its measured figures enter
	 * by ratios: hp__cpu_transfer()). */
	if (d->cpu && t->detected && t->fp32_est_tflops > 0)
		d->fp32 = t->fp32_est_tflops * 1e12;
	if (d->cpu && t->detected)
		d->bw = HP__CPU_NOMINAL_BW;
	d->link_bw = d->cpu ? 10e9 : link_bw(t);
	d->fp16 = t->fp16_tflops > t->fp32_tflops ? t->fp16_tflops * 1e12 : 0;
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

	if (d->prec == HP_PREC_TF32)
		return d->tf32 > d->fp32 ? d->tf32 : d->fp32;
	if (d->prec == HP_PREC_AMP) {
		/* Mixed precision: FP16 tensor cores (packed half2 on a
		 * P100; none on a K80: the FP32 peak). */
		if (!(d->fp16 > d->fp32))
			return d->fp32;
		kappa = 1 / (1 + exp(-th[HP__TH_KAPPA_AMP]));
		return d->fp32 * pow(d->fp16 / d->fp32, kappa);
	}
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

void hp__th_exp_init(struct hp__th_exp *e, const double *th)
{
	for (int k = 0; k < HP_EST_NCLASS; k++) {
		e->emax[k] = exp(th[HP__TH_EMAX + k]);
		e->tau[k] = exp(th[HP__TH_TAU + k]);
	}
	e->em = exp(th[HP__TH_EM]);
	e->emw = exp(th[HP__TH_EMW]);
	e->chalf = exp(th[HP__TH_CHALF]);
	e->shalf = exp(th[HP__TH_SHALF]);
	e->khalf = exp(th[HP__TH_KHALF]);
	e->cache = exp(th[HP__TH_CACHE]);
	e->cachex = exp(th[HP__TH_CACHEX]);
	e->idx = exp(th[HP__TH_IDX]);
	e->t0 = exp(th[HP__TH_T0]);
	e->comm = exp(th[HP__TH_COMM]);
	for (int s = 0; s < 2; s++) {
		e->src[s] = exp(th[HP__TH_SRC + s]);
		e->src_t0[s] = exp(th[HP__TH_SRC_T0 + s]);
		e->src_ts[s] = exp(th[HP__TH_SRC_TS + s]);
	}
}

void hp__dev_rates_init(struct hp__dev_rates *r, const struct hp__th_exp *e,
			const double *th, const struct hp__dev_spec *d)
{
	double peak = hp__peak(th, d);

	for (int k = 0; k < HP_EST_NCLASS; k++) {
		r->rate[k] = peak * e->emax[k];
		r->lat[k] = e->tau[k] / e->emax[k];
		/* no layer outruns the host's measured sgemm: efficiencies
		 * fitted against an ISA estimate below it may exceed 1,
		 * but not the hardware */
		if (d->cap > 0 && r->rate[k] > d->cap)
			r->rate[k] = d->cap;
	}
	r->em_bw = e->em * d->bw;
	r->emw_bw = e->emw * d->bw;
	r->chalf = e->chalf;
	r->shalf = e->shalf;
	r->khalf = e->khalf;
	r->cache = e->cache;
	r->cachex = e->cachex;
	r->idx = e->idx;
}

bool hp__layer_of(const struct hp_workload *w, int i,
		  const struct hp__dev_spec *d, struct hp__layer *L)
{
	int k = w->cls[i];
	double pin, pout;

	/* A relu fused into the bn before it costs nothing more. */
	if (d->fuse_bn_relu && w->after_bn && w->after_bn[i])
		return false;
	/* Blocked layouts pad channels (8 channels take a 16-wide block on
	 * AVX-512): padded lanes are computed and moved. */
	pin = pad_factor(w->cin ? w->cin[i] : 0, d->chan_block);
	pout = pad_factor(w->cout ? w->cout[i] : 0, d->chan_block);
	L->flops = w->flops[i] * (k == HP_EST_CONV ? pin * pout : 1);
	/* The CPU engine's convolutions (oneDNN's direct kernels) skip the
	 * kernel taps that fall on padding, which the analysis counts: a
	 * 5x5 conv padded by 2 on a 14x14 map does 84% of its counted
	 * FLOPs, a 3x3 padded by 1 on 2x2 44%.  GPU rows keep every tap
	 * (implicit GEMM computes them). */
	if (d->cpu && k == HP_EST_CONV && w->valid && w->valid[i] > 0)
		L->flops *= w->valid[i];
	L->act = d->chan_block > 1 && w->in_bytes
		     ? 3 * w->in_bytes[i] * pin + 2 * w->out_bytes[i] * pout
		     : w->bytes[i];
	/* Mixed precision keeps activations (and their gradients) in FP16;
	 * the FP32 master weights and optimizer state move as before. */
	if (d->prec == HP_PREC_AMP)
		L->act *= 0.5;
	L->wbytes = w->wbytes[i];
	L->width = k == HP_EST_CONV && w->width[i] > 0 ? w->width[i] : 0;
	L->hw = k == HP_EST_CONV && w->hw && w->hw[i] > 0 ? w->hw[i] : 0;
	L->red = k == HP_EST_CONV && w->red && w->red[i] > 0 ? w->red[i] : 0;
	L->cls = k;
	L->idx = w->pool && w->pool[i] == HP_POOL_MAX;
	return true;
}

double hp__step_post_net(const struct hp__th_exp *e, double t, int src,
			 int64_t batch, int ndev, int64_t params,
			 const struct hp__dev_spec *d, double *comm)
{
	double c = 0;

	if (src == HP__SRC_GAVEL)
		t = t * e->src[0] + e->src_t0[0] + (double)batch * e->src_ts[0];
	else if (src == HP__SRC_ZEUS)
		t = t * e->src[1] + e->src_t0[1] + (double)batch * e->src_ts[1];
	if (ndev > 1) {
		/* DDP's bucketed all-reduce of FP32 gradients (comm.c); the
		 * fitted factor scales the intra-node link's ideal time. */
		int nodes = d->nodes > 1 ? d->nodes : 1;
		struct hp_comm_net n;
		struct hp_comm_time ct;

		hp_comm_net_default(&n, (ndev + nodes - 1) / nodes, nodes,
				    d->link_bw / e->comm, d->net_gbps,
				    d->net_latency_us);
		if (nodes > 1)
			hp_comm_net_transport(&n, d->net_transport);
		hp_comm_ddp(&n, 4.0 * (double)params, HP__BACKWARD_SHARE * t,
			    &ct);
		c = ct.exposed_s;
		t += c;
	}
	if (comm)
		*comm = c;
	return t;
}

double hp__step_post(const struct hp__th_exp *e, double t, int src,
		     int64_t batch, int ndev, int64_t params, double link_bw,
		     double *comm)
{
	struct hp__dev_spec d;

	memset(&d, 0, sizeof(d));
	d.link_bw = link_bw;
	return hp__step_post_net(e, t, src, batch, ndev, params, &d, comm);
}

double hp__phys_time_cls(const double *th, const struct hp__dev_spec *d,
			 const struct hp_workload *w, int src, int ndev,
			 double *comm, double *cls)
{
	struct hp__th_exp e;
	struct hp__dev_rates r;
	double t;

	hp__th_exp_init(&e, th);
	hp__dev_rates_init(&r, &e, th, d);
	if (cls)
		for (int k = 0; k < HP_EST_NCLASS; k++)
			cls[k] = 0;
	t = e.t0;
	for (int i = 0; i < w->nlayers; i++) {
		struct hp__layer L;
		double tl;
		if (!hp__layer_of(w, i, d, &L))
			continue;
		tl = hp__layer_time(&L, &r);
		t += tl;
		if (cls)
			cls[L.cls] += tl;
	}
	if (d->compute_scale > 0) {
		t *= d->compute_scale;
		for (int k = 0; cls && k < HP_EST_NCLASS; k++)
			cls[k] *= d->compute_scale;
	}
	return hp__step_post_net(&e, t, src, w->batch, ndev, w->params, d,
				 comm);
}

double hp__busy_time(const double *th, const struct hp__dev_spec *d,
		     const struct hp_workload *w)
{
	double t0[HP__NTH];

	memcpy(t0, th, sizeof(t0));
	for (int k = 0; k < HP_EST_NCLASS; k++)
		t0[HP__TH_TAU + k] = -60; /* no latencies: e^-60 s */
	t0[HP__TH_T0] = -60;
	return hp__phys_time(t0, d, w, HP__SRC_LAMBDA, 1, NULL);
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
	/* kappa_amp = 0.5: mixed precision reaches the geometric mean of the
	 * FP32 and FP16 tensor peaks (a V100 runs ResNet-50 2.3x faster in
	 * amp, against 8x the peak). */
	th[HP__TH_KAPPA_AMP] = 0;
	/* A max pooling's traffic as fast as streaming unless a CPU fit's
	 * rows hold both max- and average-pooling nets (fit.c). */
	th[HP__TH_IDX] = 0;
	/* Off (negligible) unless a CPU fit's rows vary the kernel size:
	 * then it starts from HP__KHALF_START (fit.c). */
	th[HP__TH_KHALF] = log(1e-6);
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
	hp__gsl_quiet();
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
