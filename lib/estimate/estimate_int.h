/*
 * estimate_int.h - internals of the estimator shared by its files: the
 * physical model's parameter vector, the fitted state behind the opaque
 * struct hp_estimator, and the sample set that fitting and validation
 * build from the profiles and the public measurements.
 */
#ifndef HETPOOL_ESTIMATE_INT_H
#define HETPOOL_ESTIMATE_INT_H

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hetpool/device.h"
#include "hetpool/estimate.h"
#include "util/gsl.h"

/* The physical model's parameters (all but kappa are logarithms). */
enum {
	HP__TH_EMAX = 0,    /* 3: peak efficiency per layer class */
	HP__TH_TAU = 3,	    /* 3: half-efficiency time per class, s */
	HP__TH_EM = 6,	    /* memory efficiency on activation traffic */
	HP__TH_T0 = 7,	    /* per-step overhead, s */
	HP__TH_KAPPA = 8,   /* logit: share of the TF32 tensor peak used */
	HP__TH_COMM = 9,    /* all-reduce time / ideal ring time */
	HP__TH_SRC = 10,    /* 2: time scale of Gavel's and Zeus's setups */
	HP__TH_SRC_T0 = 12, /* 2: their extra per-step time (input
			       pipeline, framework), s */
	HP__TH_EMW = 14,    /* memory efficiency on weight traffic */
	HP__TH_CHALF = 15,  /* channels at which a conv runs at half its
			       peak efficiency */
	HP__TH_SRC_TS = 16, /* 2: their per-sample time (data loading), s */
	HP__TH_CACHE = 18,  /* working set (bytes) at which half of a
			       layer's traffic goes to memory, not cache */
	HP__TH_CACHEX = 19, /* how much faster traffic served from cache is */
	HP__TH_SHALF = 20,  /* output pixels (H x W) at which a conv runs at
			       half its peak efficiency */
	HP__TH_KAPPA_AMP = 21, /* logit: share (in log space) of the FP16
				  tensor peak mixed precision reaches */
	HP__TH_IDX = 22,       /* time of a max pooling's activation traffic
				  over streaming traffic's (its backward
				  zero-fills the input's gradient and scatters
				  into it through the forward's indices) */
	HP__TH_KHALF = 23,     /* reduction length (input channels x kernel
				  area) at which a conv runs at half its
				  efficiency */
	HP__NTH = 24
};

/* Where a sample comes from. */
enum hp__src {
	HP__SRC_PROFILE = 0,
	HP__SRC_LAMBDA,
	HP__SRC_GAVEL,
	HP__SRC_ZEUS,
	HP__SRC_N
};
const char *hp__src_name(int src);

/* Profile rows whose threads waited for a CPU (a busy host) more than
 * this share of the time are left out of fits (the profiler's default
 * --max-pressure). */
#define HP__MAX_CPU_PRESSURE 0.05

/* CPU memory bandwidth assumed when the host's is not known (bytes/s);
 * the fitted memory efficiency absorbs the difference. */
#define HP__CPU_NOMINAL_BW 20e9
/* Memory a GPU process holds before the first tensor: the CUDA context
 * and cuDNN/cuBLAS handles (an estimate: 300-800 MiB on recent drivers). */
#define HP__CUDA_CONTEXT_BYTES (512.0 * 1048576)
/* Saved activations held at the peak of a GPU step (PyTorch: the saved
 * tensors; gradients are freed layer by layer).  Checked against the
 * public runs: every one of them must fit (tests/unit/test_estimate.c). */
#define HP__GPU_ACT_FACTOR 1.0

/* A device type's figures as the physical model uses them. */
struct hp__dev_spec {
	bool cpu;
	double fp32;	   /* FLOP/s */
	double tf32;	   /* FLOP/s; 0: none */
	double bw;	   /* bytes/s */
	double link_bw;	   /* bytes/s between devices for the all-reduce */
	bool fuse_bn_relu; /* the backend fuses a relu into the bn before it
			      (hetpool's CPU engine) */
	int chan_block;	   /* channels are padded to a multiple of this in the
			      backend's tensor layouts (oneDNN on AVX-512: 16);
			      1: no padding */
	double fp16;	   /* FLOP/s, dense FP16 (tensor cores where any);
			      0: none */
	int prec;	   /* enum hp_precision of the step */
	double cap;	   /* FLOP/s no layer runs faster than: this host's
			      measured sgemm (a CPU whose peaks were
			      measured); 0: none */
	double compute_scale; /* the type's fitted correction of its
				 compute time (exp(log_scale)), applied
				 before the all-reduce: the network is not
				 the device's; 0: none */
	/* Across nodes (predict --nodes): 0 nodes means one node. */
	int nodes;
	double net_gbps;       /* each node's network link, 10^9 bits/s */
	double net_latency_us; /* one hop */
	enum hp_net_transport net_transport; /* resolved: never AUTO */
};
/* The channel block of a profile row's backend ("... jit:avx512_core"):
 * 16 for AVX-512, 8 for AVX/AVX2, 4 for SSE, 1 otherwise (GPUs). */
int hp__chan_block(const char *backend);
/* Fill d from t; false when the peak is not known. */
bool hp__dev_spec(const struct hp_device_type *t, struct hp__dev_spec *d);
/* The compute peak the model uses on d: FP32 x (TF32/FP32)^kappa in fp32,
 * the TF32 peak in tf32, FP32 x (FP16/FP32)^kappa_amp in amp. */
double hp__peak(const double *th, const struct hp__dev_spec *d);

/* Time of one step on ndev devices (per-device batch w->batch), in the
 * setup of source src; *comm (may be NULL) gets the all-reduce part. */
double hp__phys_time(const double *th, const struct hp__dev_spec *d,
		     const struct hp_workload *w, int src, int ndev,
		     double *comm);
/* The same, with each layer class's share in cls[HP_EST_NCLASS] (may be
 * NULL; the per-step overhead and the all-reduce are in no class). */
double hp__phys_time_cls(const double *th, const struct hp__dev_spec *d,
			 const struct hp_workload *w, int src, int ndev,
			 double *comm, double *cls);

/*
 * The physical model in pieces, shared by hp__phys_time_cls() (one
 * prediction) and the fit (physfit.c), which takes the exp() of the
 * parameters once per evaluation, not per row, and each layer's padded
 * FLOPs and traffic once per fit, not per evaluation.  Both run the same
 * operations in the same order: their times are equal to the bit.
 */
/* The parameters' exponentials (th holds logarithms). */
struct hp__th_exp {
	double emax[HP_EST_NCLASS], tau[HP_EST_NCLASS];
	double em, emw, chalf, shalf, khalf, cache, cachex, t0, comm, idx;
	double src[2], src_t0[2], src_ts[2]; /* Gavel, Zeus */
};
void hp__th_exp_init(struct hp__th_exp *e, const double *th);
/* What one device does at those parameters. */
struct hp__dev_rates {
	double rate[HP_EST_NCLASS]; /* FLOP/s at full efficiency */
	double lat[HP_EST_NCLASS];  /* latency of a layer, s */
	double em_bw, emw_bw;	    /* bytes/s on activations, weights */
	double chalf, shalf, khalf, cache, cachex;
	double idx; /* a max pooling's traffic time factor */
};
void hp__dev_rates_init(struct hp__dev_rates *r, const struct hp__th_exp *e,
			const double *th, const struct hp__dev_spec *d);
/* One layer as the model reads it on a device: FLOPs and activation
 * traffic with the channel padding of its layouts. */
struct hp__layer {
	double flops;  /* forward + backward, padded lanes included */
	double act;    /* activation bytes moved, padded */
	double wbytes; /* weight, gradient and optimizer bytes */
	double width;  /* a conv's output channels; 0: no width term */
	double hw;     /* a conv's output pixels; 0: no spatial term */
	double red;    /* a conv's reduction length; 0: no such term */
	int cls;       /* enum hp_est_class */
	int idx;       /* 1: a max pooling (HP__TH_IDX) */
};
/* Layer i of w on d into L; false when it costs nothing there (a relu
 * fused into its bn). */
bool hp__layer_of(const struct hp_workload *w, int i,
		  const struct hp__dev_spec *d, struct hp__layer *L);
/*
 * A layer's time in parts, so that the fit recomputes only the parts a
 * parameter moves: its compute time at full efficiency (tc0, with the
 * narrow-channel and small-map factors f1, f2), its activation and weight
 * traffic at the memory's speed (ta, tw0) and what the caches take off
 * them (ga, gw).
 */
struct hp__layer_parts {
	double tc0, f1, f2, f3;
	double ta, ga;
	double tw0, gw;
};
enum {
	HP__PART_TC0 = 1,
	HP__PART_F1 = 2,
	HP__PART_F2 = 4,
	HP__PART_TA = 8,
	HP__PART_TW0 = 16,
	HP__PART_CACHE = 32, /* ga and gw */
	HP__PART_F3 = 64,
	HP__PART_ALL = 127
};
/* The parts of L in `which` at rates r into P (the others left). */
static inline void hp__layer_parts(const struct hp__layer *L,
				   const struct hp__dev_rates *r,
				   unsigned which, struct hp__layer_parts *P)
{
	/* efficiency e(F) = emax F / (F + peak tau): the time is F at emax
	 * of the peak plus a latency tau / emax. */
	if (which & HP__PART_TC0)
		P->tc0 = L->flops / r->rate[L->cls] + r->lat[L->cls];
	/* Narrow convolutions fill fewer vector lanes / SMs ... */
	if (which & HP__PART_F1)
		P->f1 = L->width > 0 ? 1 + r->chalf / L->width : 1;
	/* ... and small feature maps fill fewer register blocks. */
	if (which & HP__PART_F2)
		P->f2 = L->hw > 0 ? 1 + r->shalf / L->hw : 1;
	/* ... and short reductions (few input channels, small kernels)
	 * reuse each loaded value less. */
	if (which & HP__PART_F3)
		P->f3 = L->red > 0 ? 1 + r->khalf / L->red : 1;
	if (which & HP__PART_TA)
		P->ta = L->act / r->em_bw * (L->idx ? r->idx : 1);
	if (which & HP__PART_TW0)
		P->tw0 = L->wbytes / r->emw_bw;
	/* Traffic of a small working set is served by the caches: the
	 * share that goes to memory grows with its size. */
	if (which & HP__PART_CACHE) {
		double fa = L->act / (L->act + r->cache);
		double fw = L->wbytes / (L->wbytes + r->cache);
		P->ga = fa + (1 - fa) / r->cachex;
		P->gw = fw + (1 - fw) / r->cachex;
	}
}
/* The layer's time from its parts, s. */
static inline double hp__layer_combine(const struct hp__layer_parts *P)
{
	double tc = P->tc0 * P->f1 * P->f2 * P->f3;
	double tw = P->tw0 * P->gw;
	/* Weights move 8 times a step: 3 in the forward and backward passes
	 * (overlapping their compute), 5 in the optimizer's update, a pass
	 * of its own after backward. */
	double tm = P->ta * P->ga + tw * (3.0 / 8);
	double a = tc > tm ? tc : tm, b = tc > tm ? tm : tc;
	double q = b / a, q2 = q * q;

	/* The smooth max (a^P + b^P)^(1/P) at P = 4, without pow(). */
	return a * sqrt(sqrt(1 + q2 * q2)) + tw * (5.0 / 8);
}
/* Time of layer L at rates r, s. */
static inline double hp__layer_time(const struct hp__layer *L,
				    const struct hp__dev_rates *r)
{
	struct hp__layer_parts P;

	hp__layer_parts(L, r, HP__PART_ALL, &P);
	return hp__layer_combine(&P);
}
/* The step's time from the sum of its layers and overhead (t, s) in the
 * setup of source src, with the all-reduce over ndev devices (*comm, may
 * be NULL, gets that part). */
double hp__step_post(const struct hp__th_exp *e, double t, int src,
		     int64_t batch, int ndev, int64_t params, double link_bw,
		     double *comm);
/* The same across d->nodes nodes (hp__step_post() is one node): the
 * all-reduce of hp_comm_ddp(), intra-node bandwidth link_bw / comm
 * factor, overlapped with the backward share of the step. */
double hp__step_post_net(const struct hp__th_exp *e, double t, int src,
			 int64_t batch, int ndev, int64_t params,
			 const struct hp__dev_spec *d, double *comm);
/* Share of a step's compute that is backward, which the all-reduce's
 * buckets overlap (backward costs twice forward's FLOPs). */
#define HP__BACKWARD_SHARE (2.0 / 3.0)

/* One measured step for the physical fit. */
struct hp__fitpt {
	const struct hp_workload *w;
	struct hp__dev_spec d;
	int src, ndev;
	double t; /* measured step time, s */
	int dev;  /* index of the device type (per-device scales) */
	int grp;  /* its configuration (the set's workload index): repeats
		     share it, and cross-validation keeps them in one fold */
	double tcls[HP_EST_NCLASS]; /* measured time of each layer class
				       (the profiler's split); NaN: none */
};
/* Where a CPU fit whose rows vary the kernel size starts k_half, and the
 * prior it pulls to: a reduction of 4 values halves a conv's
 * efficiency. */
#define HP__KHALF_START 4.0
/* A CPU type's own fit on pts (one host), as 'hetpool fit' fits it: the
 * parameters its rows can see, from two starts, into th. */
int hp__cpu_fit_points(const struct hp__fitpt *pts, int n, double *th,
		       struct hp_error *err);
/* Index of the physical parameter named name (the estimator file's
 * names), -1 when none. */
int hp__th_index(const char *name);
const char *hp__th_name(int j);
/* Default starting point and prior of the parameters for a CPU or a GPU
 * fit. */
void hp__phys_prior(bool cpu, double *th);
/*
 * Fit the free parameters of th (in: the start, and the prior unless
 * prior is given; out: the fit) on n
 * points by robust non-linear least squares of log time (GSL's trust
 * region Levenberg-Marquardt, Huber-reweighted twice).  With scale (nscale
 * entries, may be NULL), a log time scale per device index (pts[i].dev) is
 * fitted with them, pulled to 0 as if `shrink` more rows said 0: a type's
 * own deviation from the shared model does not bend the shared
 * parameters.
 */
int hp__phys_fit(const struct hp__fitpt *pts, int n, double *th,
		 const double *prior, const bool *free_params, int nscale,
		 double *scale, double shrink, struct hp_error *err);
/* The same from a fit of more points (th and scale: its parameters, the
 * start here): one solve with the Huber weights of their residuals, not
 * three passes from the prior.  For the folds of a large fit's inner
 * cross-validation. */
int hp__phys_refit(const struct hp__fitpt *pts, int n, double *th,
		   const double *prior, const bool *free_params, int nscale,
		   double *scale, double shrink, struct hp_error *err);
/* For tests: the largest difference between the Jacobian the fit uses
 * (from cached layer parts) and GSL's forward difference of every residual
 * (gsl_multifit_nlinear_df()) at th and scale (may be NULL), the points
 * weighted by wt (may be NULL: 1); 0 when they are equal to the bit. */
int hp__phys_check_jacobian(const struct hp__fitpt *pts, int n,
			    const double *th, const bool *free_params,
			    int nscale, const double *scale, const double *wt,
			    double *max_diff, struct hp_error *err);
/* The step time of each of pts at th (with the log scale of its device
 * index when scale is given, nscale entries) into out[n]: what
 * hp__phys_time() gives each, equal to the bit, with each distinct
 * configuration computed once.  0 or HP_ENOMEM. */
int hp__phys_times(const struct hp__fitpt *pts, int n, const double *th,
		   int nscale, const double *scale, double *out,
		   struct hp_error *err);

/* Least squares y ~ X beta (n x p, row major); robust: bisquare
 * reweighting (gsl_multifit_robust).  0 or a negative code. */
int hp__linear_fit(const double *X, const double *y, int n, int p, bool robust,
		   double *beta, struct hp_error *err);
/* The linear family's regressors of a workload (HP__LIN_P values, the
 * intercept first). */
#define HP__LIN_P 7
void hp__linear_x(const struct hp_workload *w, double *x);

/* The time a GPU runs kernels in one step of w on d (per-device batch):
 * the layers' compute and memory time without their latencies nor the
 * per-step overhead, in Lambda's setup, s.  Its share of the step is what
 * a GPU's power follows (the power model's u). */
double hp__busy_time(const double *th, const struct hp__dev_spec *d,
		     const struct hp_workload *w);

/* The power model: idle + (tdp - idle) x u^gamma. */
double hp__power_w(const struct hp_device_type *t, double util, double gamma);

/* Per device type: what was fitted on its own measurements. */
struct hp__dev_fit {
	char name[32];
	bool cpu;
	int n;		/* measured rows */
	bool own_theta; /* a CPU: its own physical parameters */
	int chan_block; /* of its backend's layouts (hp__dev_spec) */
	double th[HP__NTH];
	double fit_fp32;   /* the peak FP32 it was fitted against, FLOP/s */
	double ref_time_s; /* CPU: the yardstick's time its rows were scaled
			      to (hp_estimator_ref_time_s); 0: not known */
	/* CPU: the profiled host's own figures, for carrying the fit to
	 * another host by ratios (0: not known; old estimator files). */
	int ref_threads;
	double ref_fp32_meas; /* measured sgemm FLOP/s at ref_threads */
	double ref_bw;	      /* measured triad bytes/s at ref_threads */
	double ref_cache;     /* L2 + L3 bytes the threads used hold */
	double log_scale;     /* GPU: correction of the shared model */
	double q_lo, q_hi;    /* log(measured / predicted), 10th and 90th pct */
	/* Linear family. */
	bool has_linear;
	int lin_n;
	double beta[HP__LIN_P];
	double lin_q_lo, lin_q_hi;
	double range_lo[5], range_hi[5]; /* of the structural variables */
};

struct hp_estimator {
	int version;
	enum hp_est_family family;
	char created[32];
	/* GPU types: one shared set of physical parameters. */
	bool has_gpu;
	int gpu_n;
	int gpu_amp_n; /* of them, mixed-precision rows (kappa_amp's) */
	double gpu_th[HP__NTH];
	double gpu_q_lo, gpu_q_hi;	 /* k-fold, measured types */
	double gpu_lodo_lo, gpu_lodo_hi; /* leave-device-out: unmeasured */
	struct hp__dev_fit *dev;
	int ndev;
	/* Memory: state + act_factor x activations + workspace. */
	double mem_act_factor, mem_workspace_bytes, mem_cuda_context_bytes;
	double mem_gpu_act_factor; /* PyTorch frees each activation's
				      gradient as backward goes: 1x */
	int mem_n;
	/* Power. */
	double power_gamma;
	bool power_busy; /* u is the busy share of the step (hp__busy_time);
			    false: FLOP utilisation (files before it) */
	int power_n;
	double power_mape; /* % on the rows it was fitted on */
	/* Provenance. */
	int profile_rows, public_rows;
	char datasets[512];
	char public_dir[256];
	char provenance[384];
};

/* A measured configuration, from a profile row or a public record. */
struct hp__sample {
	char device[32];
	char family[48]; /* architecture family: "c2-f3", "resnet50" */
	int src;
	int ndev;
	int wl;	  /* index of its workload in the set */
	double t; /* measured step time, s */
	/* The yardstick (profiles): t and tcls are scaled to the device's
	 * reference speed ref_fit_s (the median ref_time_s of its rows) as
	 * t_abs x ref_fit_s / ref_row_s; without one, t == t_abs and the
	 * ref fields are NaN.  cfg_hash: the configuration measured (its
	 * config_id, host, threads, optimizer): rows that share it are
	 * repeats, for the noise floor. */
	double t_abs, ref_row_s, ref_fit_s;
	uint64_t cfg_hash;
	double power_w;		/* measured average power per device; NaN */
	int64_t peak_mem_bytes; /* measured (profiles); 0: not */
	bool structural;	/* a generated CNN (linear family applies) */
	int chan_block;		/* hp__chan_block() of its backend */
	double tcls[HP_EST_NCLASS]; /* measured per class; NaN: not */
	int prec;		    /* enum hp_precision it ran in */
	/* CPU rows: the figures of the host that measured it (profile
	 * columns host_*, in FLOP/s, bytes/s, bytes); NaN: not recorded. */
	double host_isa, host_sgemm, host_triad, host_cache;
	int threads; /* profile rows: the threads it ran on; 0 not known */
};

struct hp__set {
	struct hp__sample *s;
	int n, alloc;
	struct hp_workload *wl;
	int nwl, awl;
	char notes[8][224];
	int nnotes;
	int profile_rows, public_rows;
};
int hp__set_load(struct hp__set *set, const struct hp_fit_options *o,
		 const struct hp_catalog *cat, struct hp_error *err);
void hp__set_release(struct hp__set *set);
/* The k-fold scheme's fold of row i of set (of folds): by configuration
 * (its workload: model and batch) and device, so that repeats of one
 * measurement are held out together; a row's twin in the training folds
 * would predict it as well as the noise lets it, which flatters every
 * family. */
int hp__kfold_of(const struct hp__set *set, int i, int folds);
/* The median absolute percentage difference between a measurement of a
 * configuration and its next repeat (200 |a - b| / (a + b), in the order
 * measured) among the samples in[] (NULL: all): of the absolute
 * times (*abs_pct) and of the times relative to the yardstick (*rel_pct,
 * NaN where the repeats carry none); NaN and 0 pairs where nothing was
 * measured twice.  Returns the number of pairs of repeats. */
int hp__noise_floor(const struct hp__set *set, const bool *in, double *abs_pct,
		    double *rel_pct);

/* Progress of a fit or a validation: solver runs done of total. */
struct hp__progress {
	hp_progress_fn fn; /* NULL: none */
	void *ud;
	const char *stage;
	int64_t done, total;
	/* this fit's or validation's own: fits side by side do not wait for
	 * each other's callbacks (PTHREAD_MUTEX_INITIALIZER) */
	pthread_mutex_t mu;
};
/* n more units done: tell fn (from any thread of this fit: the calls are
 * serialised). */
void hp__progress_add(struct hp__progress *p, int64_t n);

/* The interval's inner cross-validation runs on at most this many rows
 * of a device (a fixed subsample beyond): its 10th and 90th percentiles
 * are known well from fewer rows than a large fit has.  The linear
 * baseline's 7 coefficients are fitted on as many. */
#define HP__CV_MAX_ROWS 10000
/* Beyond this many rows of a device, each fold of that cross-validation
 * is refitted from the whole fit (hp__phys_refit: one solve from there,
 * not two starts of three passes from the prior): a fold of 80% of many
 * rows is near the whole fit, whose start already chose between the
 * cache term's two minima. */
#define HP__CV_WARM_ROWS 2000

/* Fit an estimator on the samples whose flags in use[] are set (all when
 * use is NULL); inner: size the intervals by inner cross-validation, its
 * fits on up to `threads` threads.
 * prog (may be NULL) counts its model fits (its total set here when 0). */
struct hp_estimator *hp__fit_set(const struct hp__set *set, const bool *use,
				 const struct hp_catalog *cat, bool inner,
				 int threads, struct hp__progress *prog,
				 struct hp_error *err);
const struct hp__dev_fit *hp__est_dev(const struct hp_estimator *est,
				      const char *name);

/* hp_estimator_predict() for a sample measured in source src's setup. */
int hp__predict(const struct hp_estimator *est, const struct hp_catalog *cat,
		const struct hp_workload *w, const char *device, int ndevices,
		int family, int src, int prec, struct hp_prediction *out,
		struct hp_error *err);

/*
 * CPU hosts (host.c): carry a CPU fit df to the catalog's type t (this
 * host at its threads): d's peak by the ratio of t's FLOP/s at its threads
 * to the profiled host's, its bandwidth by the triad ratio, th's cache
 * size by the cache ratio (th: df->th copied and adjusted).  what (n
 * bytes) gets the words for the basis: "carried to this host ...", or ""
 * when t is not a detected host.
 */
void hp__cpu_transfer(const struct hp__dev_fit *df,
		      const struct hp_device_type *t, struct hp__dev_spec *d,
		      double *th, char *what, size_t n);
/* The rate no layer outruns on CPU type t (struct hp__dev_spec's cap):
 * its measured sgemm FLOP/s, 0 when its peaks were not measured.
 * hp__cpu_transfer() sets it. */
double hp__cpu_cap(const struct hp_device_type *t);
/* Record the profiled host's measured figures from a row that carries
 * them (profile columns host_sgemm_gflops, host_triad_gbs,
 * host_cache_bytes); a row without them records nothing. */
void hp__cpu_ref_from_row(struct hp__dev_fit *df, const struct hp__sample *s);
/* A CPU fit on rows that do not say which host measured them (older
 * datasets): record the profiled host's figures from t (this host at its
 * threads, when its peaks are measured and its ISA's channel block is the
 * rows' chan_block: the rows were likely profiled here). */
void hp__cpu_ref_record(struct hp__dev_fit *df, const struct hp_device_type *t,
			int chan_block);
/* The calibration's factor on layer class k's time (the last class's for
 * classes beyond the calibration's). */
double hp__cpu_calib_factor(const struct hp_host_calib *c, int k);
/* A step time with t's calibration applied: cls (the layer classes'
 * times, HP_EST_NCLASS) and the rest (overhead) of step t_raw. */
double hp__cpu_calibrated(const struct hp_host_calib *c, double t_raw,
			  const double *cls);

/* The calibration's fit: log factors c[3] minimising the squared log
 * error of sum_k exp(c_k) a[i][k] against y[i] (n rows; a: the classes'
 * predicted times, the overhead in k = 2) plus ridge x |c|^2. */
int hp__host_calib_fit(const double *a, const double *y, int n, double ridge,
		       double *c);

/* Quantile q (0..1) of v[0..n) (sorted in place). */
double hp__quantile(double *v, int n, double q);

#endif
