/*
 * estimate.h - the estimator: fitted models of a training step's time,
 * peak device memory and energy, for any model on any device type of the
 * catalog, each prediction with an interval from the fit's residuals.
 *
 * Families of step-time models:
 *   - "physical" (the default): per layer, the time of its FLOPs against
 *     the device's peak at an efficiency that grows with the layer's size,
 *     and of its memory traffic against the device's bandwidth, a smooth
 *     max of the two, plus a per-step overhead.  Fitted per CPU host on
 *     the project's profiles, and once for all GPU types (relative to each
 *     type's catalog peak and bandwidth) on public measurements, so a GPU
 *     type with no measurements is predicted from its specs.
 *   - "linear" (the design's baseline): least squares of log step time on
 *     the customized CNN's structural variables, per device type.
 *   - "roofline" (validation baseline only): FLOPs / peak FP32, no fit.
 * docs/estimator.md describes the models and the numbers they reach.
 *
 * Ownership: hp_estimator_fit() and hp_estimator_load*() return an
 * estimator the caller frees with hp_estimator_free().  A struct
 * hp_workload is caller-owned, filled by hp_workload_from_graph() and
 * released with hp_workload_release().  Predictions and validation rows
 * hold no heap memory, except struct hp_validation (hp_validation_release).
 */
#ifndef HETPOOL_ESTIMATE_H
#define HETPOOL_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

#include "hetpool/device.h"
#include "hetpool/model.h"
#include "hetpool/pool.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

enum hp_est_family {
	HP_EST_PHYSICAL = 0,
	HP_EST_LINEAR = 1,
	HP_EST_ROOFLINE = 2, /* validation baseline; not stored */
};
/* "physical", "linear", "roofline". */
const char *hp_est_family_name(enum hp_est_family f);
/* 0 and *out, or HP_EINVAL for another name. */
int hp_est_family_parse(const char *s, enum hp_est_family *out);

/* The arithmetic a GPU training step runs in.  fp32: PyTorch's default,
 * in which cuDNN already uses TF32 tensor cores for convolutions on Ampere
 * and later (modelled by the fitted share kappa of the TF32 peak); tf32:
 * TF32 everywhere (matmuls too), at the catalog's dense TF32 peak; amp:
 * automatic mixed precision, FP16 tensor cores (the catalog's dense FP16
 * peak, a fitted share of it) and FP16 activations.  A CPU runs fp32. */
enum hp_precision {
	HP_PREC_FP32 = 0,
	HP_PREC_TF32 = 1,
	HP_PREC_AMP = 2,
};
/* "fp32", "tf32", "amp". */
const char *hp_precision_name(enum hp_precision p);
/* 0 and *out, or HP_EINVAL for another name. */
int hp_precision_parse(const char *s, enum hp_precision *out);

/* Layer classes of the physical model. */
enum hp_est_class {
	HP_EST_CONV = 0,
	HP_EST_FC = 1,
	HP_EST_OTHER = 2,
	HP_EST_NCLASS
};

/* What a layer of a workload pools (hp_workload.pool). */
enum hp_pool_kind {
	HP_POOL_NONE = 0,
	HP_POOL_MAX = 1, /* MaxPool, GlobalMaxPool */
	HP_POOL_AVG = 2, /* AveragePool, GlobalAveragePool, LpPool */
};

/*
 * What a training step on one device does, per layer, at one batch size:
 * the layer's class, its FLOPs (forward and both backward passes) and its
 * memory traffic in bytes, plus the totals the memory and linear models
 * use.  Layers that move no data (reshapes, constants) are left out.
 */
struct hp_workload {
	int64_t batch; /* per device */
	int nlayers;
	unsigned char *cls;  /* enum hp_est_class, one per layer */
	double *flops;	     /* forward + backward FLOPs, whole batch */
	double *bytes;	     /* activation bytes read and written, whole
				batch */
	double *wbytes;	     /* weight, gradient and optimizer-state bytes
				read and written (batch-independent) */
	double *width;	     /* output channels (conv) or units (fc) */
	double *in_bytes;    /* activation input bytes, whole batch */
	double *out_bytes;   /* output bytes, whole batch */
	double *cin;	     /* channels of a 4-D input another layer wrote
				(through reshapes); 0: none (the model's
				input, or 2-D) */
	double *cout;	     /* channels of a 4-D output; 0: not 4-D */
	double *hw;	     /* pixels (H x W) of a 4-D output; 0: not 4-D */
	double *red;	     /* a conv's reduction length: input channels
				per group x kernel area (its GEMM's K);
				0: not a conv (or not known) */
	double *karea;	     /* a conv's kernel area (3x3: 9); 0: not a
				conv */
	double *valid;	     /* a conv's share of kernel taps inside the
				input (the rest fall on padding); 0: not
				known */
	unsigned char *pool; /* enum hp_pool_kind: a max pooling's backward
				scatters the gradient through the indices
				its forward kept; an average pooling's
				streams */
	unsigned char *after_bn; /* 1: a Relu whose input is a
				    BatchNormalization's output read by
				    nothing else (engines fuse the two) */
	double flops_total;
	int64_t params;
	int64_t state_bytes; /* weights, gradients, buffers, momentum */
	int64_t activations_bytes;
	int64_t input_bytes;
	int64_t peak_act_bytes;
	/* The structural variables (the linear family). */
	int conv_layers, fc_layers;
	int64_t filters, fc_width, input_size;
};

/*
 * Analyse g at batch (per device; input_shape as hp_analyze) into w.
 * The graph's shapes are updated in place.  On success w owns its arrays
 * (hp_workload_release()).
 */
int hp_workload_from_graph(struct hp_graph *g, int64_t batch,
			   const int64_t *input_shape, int input_rank,
			   struct hp_workload *w, struct hp_error *err);
/* The same from features already computed on g. */
int hp_workload_from_features(const struct hp_graph *g,
			      const struct hp_features *f,
			      struct hp_workload *w, struct hp_error *err);
void hp_workload_release(struct hp_workload *w);
/*
 * A workload analysed at batch 1 (w1) scaled to another per-device batch
 * into out, without re-analysing the graph: per-layer FLOPs and activation
 * bytes, activations_bytes, input_bytes and peak_act_bytes scale with the
 * batch; weight bytes, params and state_bytes do not.  Normalisation
 * layers also read per-channel tensors counted as activation traffic that
 * do not grow with the batch: they are scaled too (a few percent of those
 * layers' traffic; on the shipped models the step time predicted moves by
 * at most 0.2% against hp_workload_from_graph()).  HP_EINVAL when w1
 * is not at batch 1, HP_ERANGE on overflow.  On success out owns its
 * arrays (hp_workload_release()).
 */
int hp_workload_at_batch(const struct hp_workload *w1, int64_t batch,
			 struct hp_workload *out, struct hp_error *err);

/*
 * Progress of a long fit or validation, for a display: `stage` says what
 * is being done ("reading 'x.csv'", "fitting", "validating"), `done` of
 * `total` units of it (total 0: not known beforehand, for rows being
 * read).  Called from the fitting thread every 4,096 rows read and after
 * every model fit (a CPU host's or the GPU types', each a few solver
 * runs): from a few times to a few hundred times a fit.  The callback
 * decides what to show and how often.
 */
typedef void (*hp_progress_fn)(const char *stage, int64_t done, int64_t total,
			       void *ud);

/* What a fit or validation read, filled when hp_fit_options.report is
 * given. */
struct hp_fit_report {
	int64_t profile_rows;	  /* profile rows used */
	int64_t bad_rows_skipped; /* with skip_bad_rows */
	char first_bad[224];	  /* the first of them: file, row, column,
				     what is wrong */
	/* what was left out of the data or the fit, and why (rows of busy
	 * hosts or unknown types, a torn last line, a CPU with too few rows
	 * for a model of its own) */
	char notes[8][224];
	int nnotes;
};

/*
 * Physical ranges of a profile row's values; a row outside them is bad
 * (docs/estimator.md, "Bad rows").  Empty time and power columns mean
 * "not measured".
 */
#define HP_FIT_MAX_STEP_TIME_S 86400.0		     /* step time: (0, a day) */
#define HP_FIT_MAX_BATCH ((int64_t)1 << 20)	     /* batch: 1 .. 2^20 */
#define HP_FIT_MAX_PEAK_MEM_BYTES ((int64_t)1 << 50) /* 0 .. 1 PiB */
#define HP_FIT_MAX_POWER_W 100e3		     /* power: (0, 100 kW) */

/* What to fit on. */
struct hp_fit_options {
	const char *const *datasets; /* profiler CSVs (docs/dataset.md) */
	int ndatasets;
	const char *public_dir;	   /* data/measurements, or NULL: none */
	const char *models_dir;	   /* data/models: the ONNX files the public
				      measurements' models are analysed from */
	enum hp_est_family family; /* the family predict uses by default */
	bool no_intervals; /* skip the inner cross-validation that sizes the
			      intervals (validation fits) */
	/* A profile row with a value outside its physical range (or a spec
	 * that cannot be analysed) is refused with HP_EINVAL naming the
	 * file, its line and the column; with skip_bad_rows it is left out
	 * and counted in the report.  Rows measured on a busy host and rows
	 * of a device type not in the catalog are left out either way. */
	bool skip_bad_rows;
	hp_progress_fn progress; /* may be NULL */
	void *progress_ud;
	struct hp_fit_report *report; /* the caller's; may be NULL */
	/* Threads for the fits that do not depend on each other (the folds
	 * of a cross-validation); 0: the CPUs this process may run on.  The
	 * result is the same for any count. */
	int threads;
	/* Fit the profiles' absolute step times.  By default a row that
	 * carries the profiler's yardstick (ref_time_s) has its times scaled
	 * to its device type's reference speed (the median ref_time_s of its
	 * rows): t x median / ref_time_s, so that drift of the host's speed
	 * while it was profiled cancels (docs/profiler.md). */
	bool absolute_times;
};

struct hp_estimator;

/*
 * Fit every model on the options' data against cat (whose CPU type should
 * carry the host's figures: hp_host_apply()).  Both families are fitted;
 * o->family is the one predictions use.  NULL with err set when there is
 * nothing to fit, an input cannot be read, holds a bad row (see
 * skip_bad_rows), or is given twice (the same file, or two files with the
 * same bytes: each row would count twice).
 */
struct hp_estimator *hp_estimator_fit(const struct hp_fit_options *o,
				      const struct hp_catalog *cat,
				      struct hp_error *err);
void hp_estimator_free(struct hp_estimator *est);

/*
 * The yardstick's time (seconds of the profiler's reference step,
 * ref_time_s in docs/dataset.md) that the CPU device type `device`'s
 * predictions are for: the median over the rows it was fitted on.  0 when
 * not known (its rows carried none, an estimator file written before).
 */
double hp_estimator_ref_time_s(const struct hp_estimator *est,
			       const char *device);
/*
 * A CPU step time t_s predicted at the reference speed ref_fit_s
 * (hp_estimator_ref_time_s), for a host whose yardstick now measures
 * ref_now_s: t_s x ref_now_s / ref_fit_s.  t_s unchanged when either is
 * not a positive number (not known).
 */
double hp_est_rescale_ref(double t_s, double ref_fit_s, double ref_now_s);
/* The median of the finite values of v[0..n) (v unchanged); NaN when
 * there are none or on ENOMEM.  Thread-safe. */
double hp_est_median(const double *v, int n);
/*
 * n measurements, each taken beside the profiler's yardstick, to one
 * speed (hetpool calibrate): the speed is the median over the measurements
 * with a yardstick (ref_s[i] > 0) of ref_s[i] x share[i], the share of its
 * wall time the thread ran (share NULL, or a share outside (0, 1]: 1);
 * each of those gets t[i] = wall_s[i] x median / ref_s[i], and its ncls
 * class times cls[i * ncls + k] (cls may be NULL) the same factor over
 * t[i]'s old value.  The rest keep their t and cls.  Returns the median;
 * NaN when no measurement has a yardstick (nothing changed) or on ENOMEM.
 * Thread-safe; writes only t and cls.
 */
double hp_est_to_ref_speed(int n, const double *wall_s, const double *ref_s,
			   const double *share, double *t, double *cls,
			   int ncls);

/* Largest estimator file read (bytes). */
#define HP_ESTIMATOR_MAX_BYTES (4u << 20)
#define HP_ESTIMATOR_VERSION 2

/* Save as JSON (versioned; see docs/estimator.md), atomically: written to
 * a temporary file beside path, flushed to disk, renamed over path. */
int hp_estimator_save(const struct hp_estimator *est, const char *path,
		      struct hp_error *err);
/*
 * The same in two steps, so that a path that cannot be written is known
 * before a long fit: hp_estimator_save_open() creates the temporary file
 * beside path (HP_EIO with the system's reason, e.g. "cannot write
 * '/nonexistent/x.json': No such file or directory"; HP_EINVAL when path
 * is a directory); hp_estimator_save_commit() writes est into it, flushes
 * it and renames it over path; hp_estimator_save_abort() removes it.
 * Either ends the struct's use.  The temporary is an hp_atomic_file
 * (hetpool/util.h); its name is in af.tmp while it exists.
 */
struct hp_estimator_file {
	struct hp_atomic_file af;
};
int hp_estimator_save_open(struct hp_estimator_file *f, const char *path,
			   struct hp_error *err);
int hp_estimator_save_commit(struct hp_estimator_file *f,
			     const struct hp_estimator *est,
			     struct hp_error *err);
void hp_estimator_save_abort(struct hp_estimator_file *f);
/* The JSON text; caller frees; NULL on ENOMEM. */
char *hp_estimator_dumps(const struct hp_estimator *est);
/* Load from a file or from text; bad input is refused with HP_EPARSE and a
 * message naming the field.  The result is the caller's. */
struct hp_estimator *hp_estimator_load(const char *path, struct hp_error *err);
struct hp_estimator *hp_estimator_loads(const char *text, size_t len,
					struct hp_error *err);

enum hp_est_family hp_estimator_family(const struct hp_estimator *est);
/* Provenance line, e.g. "fitted 2026-11-30T05:10:00Z on 180 profile rows
 * and 160 public rows" (static storage of the estimator). */
const char *hp_estimator_provenance(const struct hp_estimator *est);

struct hp_prediction {
	char device[32];
	int ndevices;
	int64_t batch; /* global: per-device batch x ndevices */
	enum hp_est_family family;
	enum hp_precision precision; /* what the step was predicted in */
	double step_time_s;
	double step_time_lo_s, step_time_hi_s; /* interval (10th-90th pct) */
	double samples_per_s;
	double utilisation;	  /* achieved FLOP/s / effective peak */
	double power_w;		  /* per device; NaN: not known */
	double energy_per_step_j; /* all devices; NaN: not known */
	double comm_time_s;	  /* gradient all-reduce part of the step */
	enum hp_net_transport net_transport; /* across nodes (resolved);
						HP_NET_AUTO on one node */
	/* The physical family's step by layer class (enum hp_est_class:
	 * conv, fc, other), scaled as the step is; the rest of the step is
	 * the per-step overhead and the all-reduce.  NaN for the linear and
	 * roofline families (no layers). */
	double class_time_s[HP_EST_NCLASS];
	/* The input pipeline (struct hp_predict_opts): its time for one
	 * device's share of the batch (NaN: not modelled), and whether the
	 * step waits for it (step_time_s is then that time). */
	double input_time_s;
	bool input_bound;
	int64_t peak_memory_bytes;  /* per device */
	double device_memory_bytes; /* NaN: not known */
	bool memory_known;	    /* the device's memory is known */
	bool fits_in_memory;	    /* known, and the peak is within it */
	bool measured;	 /* the device type had measurements in the fit */
	char basis[320]; /* what the step time rests on */
	char energy_basis[160]; /* what the power rests on, or why none */
	char memory_basis[128];
};

/*
 * This host's calibration (hetpool calibrate): on n configurations w[i]
 * measured here in step_s[i] seconds on the catalog's CPU type `device`
 * (this host at its threads), fit a log factor per layer class on what
 * the estimator predicts without calibration, pulled to 0 by ridge (as
 * if each factor had `ridge` more rows saying 0; 1 is a fair default).
 * Fills out (with its MAPE before and after, in %); the caller stamps
 * `when` and stores it (hp_host_file_save()).
 */
int hp_estimator_calibrate_host(const struct hp_estimator *est,
				const struct hp_catalog *cat,
				const char *device,
				const struct hp_workload *const *w,
				const double *step_s, int n, double ridge,
				struct hp_host_calib *out,
				struct hp_error *err);
/*
 * The same, and this host's own fit of the physical model on those
 * configurations when there are at least HP_HOST_OWN_FIT_MIN of them:
 * the parameters a profile of this host would fit (as 'hetpool fit'), on
 * the step times and the profiler's class times cls_s[3 i + k] (conv,
 * fc, other; NaN where not measured; cls_s may be NULL).  Predictions
 * then use it in place of the carried fit and the factors; the MAPE after
 * and the interval are its.  Fewer configurations: the factors alone.
 */
#define HP_HOST_OWN_FIT_MIN 12
int hp_estimator_calibrate_host_fit(
    const struct hp_estimator *est, const struct hp_catalog *cat,
    const char *device, const struct hp_workload *const *w,
    const double *step_s, const double *cls_s, int n, double ridge,
    struct hp_host_calib *out, struct hp_error *err);
/*
 * The identity of a CPU device type's fit in est (a hash of its fitted
 * parameters and peak, 16 hex digits) into buf: what a host's calibration
 * is bound to.  HP_ENOENT (buf "") when est has no own fit of device.
 */
int hp_estimator_cpu_fit_id(const struct hp_estimator *est, const char *device,
			    char *buf, size_t n);
/*
 * Predict a training step of w (analysed at the per-device batch) on
 * ndevices devices of type `device` (data parallel), with the given family
 * (or the estimator's own when family < 0).  HP_ENOENT: the device type is
 * not in cat; HP_EUNSUPP: the family cannot apply (the linear family on a
 * model outside its structural range or on a device it has no fit for).
 * A plan that does not fit in memory is still predicted (fits_in_memory
 * false): the caller decides.
 */
int hp_estimator_predict(const struct hp_estimator *est,
			 const struct hp_catalog *cat,
			 const struct hp_workload *w, const char *device,
			 int ndevices, int family, struct hp_prediction *out,
			 struct hp_error *err);
/* The same in a given precision (hp_estimator_predict(): fp32).
 * HP_EUNSUPP for tf32 or amp on a CPU, and for tf32 on a GPU type whose
 * catalog row has no TF32 peak. */
int hp_estimator_predict_prec(const struct hp_estimator *est,
			      const struct hp_catalog *cat,
			      const struct hp_workload *w, const char *device,
			      int ndevices, int family,
			      enum hp_precision precision,
			      struct hp_prediction *out, struct hp_error *err);

/*
 * The data-parallel gradient all-reduce (docs/estimator.md, "Multi-GPU"),
 * one model for the estimator and the recommender: the gradients in
 * buckets of bucket_bytes (PyTorch DDP's 25 MiB), each all-reduced
 * hierarchically: a ring inside each node (2 (k-1) messages over the
 * devices' link), then across the nodes the better of a ring (2 (m-1)
 * messages, 2 (m-1)/m of the bucket over each node's link) and a tree
 * (recursive doubling: ceil(log2 m) messages, each the whole bucket);
 * every message pays its latency and overhead; bandwidths are the
 * slowest link's.  The NET constants were fitted on Open MPI all-reduces
 * between network namespaces over veth links shaped by tc
 * (benchmarks/allreduce_netns.sh) and checked out of sample there.
 */
#define HP_COMM_BUCKET_BYTES (25.0 * 1048576) /* DDP's bucket_cap_mb */
#define HP_COMM_INTRA_MSG_S 5e-6	      /* per message inside a node */
/* Across nodes, fitted on 3-namespace rings (1-64 MB, 200 and 1000
 * Mbit/s, two TCP connections a peer as hetpool-train opens them) and
 * tested on 4 (MAPE 7.9%, worst 22.3%) and 2 (MAPE 4.6%, worst 13.0%): */
#define HP_COMM_NET_MSG_S 0.40e-3   /* per message: TCP and MPI per step */
#define HP_COMM_NET_EFFICIENCY 0.90 /* payload / line rate achieved */
/*
 * Those are MPI over TCP (HP_NET_TCP).  NCCL's transports get other
 * shares of the line rate, from public nccl-tests figures (bus bandwidth
 * over the line rate at large buffers; docs/estimator.md, "Transports"):
 * the geometric mean of each transport's figures, one per source, and
 * the 90th percentile of the log error a prediction with it carries (the
 * sources' spread and HP_REC_COMM_LOG_Q90's, the host's, together).
 */
#define HP_COMM_SOCKET_EFFICIENCY 0.43 /* 4 sources, 0.22-0.60 */
#define HP_COMM_SOCKET_MSG_S 0.40e-3   /* not measured: TCP's */
#define HP_COMM_SOCKET_LOG_Q90 0.71
#define HP_COMM_RDMA_EFFICIENCY 0.84 /* 3 figures, 0.64-0.98 */
#define HP_COMM_RDMA_MSG_S 15e-6     /* a 2-node 8 KB all-reduce, 35 us */
#define HP_COMM_RDMA_LOG_Q90 0.50
#define HP_COMM_TCP_LOG_Q90 0.40 /* = HP_REC_COMM_LOG_Q90 */

struct hp_comm_net {
	int per_node;		 /* devices per node, k */
	int nodes;		 /* m */
	double intra_bw_bytes_s; /* between a node's devices, per direction */
	double intra_msg_s;	 /* latency + overhead of one message */
	double net_bw_bytes_s;	 /* the slowest node's network link, line
				    rate per direction */
	double net_latency_s;	 /* one hop, node to switch */
	double net_msg_s;	 /* software overhead of one message */
	double net_efficiency;	 /* payload / line rate */
	double bucket_bytes;	 /* 0: HP_COMM_BUCKET_BYTES */
};
/* The defaults above for k devices per node on m nodes (HP_NET_TCP). */
void hp_comm_net_default(struct hp_comm_net *n, int per_node, int nodes,
			 double intra_bw_bytes_s, double net_bw_gbps,
			 double net_latency_us);
/* Set n's per-message overhead and efficiency to transport t's
 * (HP_NET_AUTO is HP_NET_TCP's: resolve it first). */
void hp_comm_net_transport(struct hp_comm_net *n, enum hp_net_transport t);
/* Transport t's efficiency, and the 90th percentile of its all-reduce
 * times' log error (as above; HP_NET_AUTO: HP_NET_TCP's). */
double hp_comm_transport_efficiency(enum hp_net_transport t);
double hp_comm_transport_log_q90(enum hp_net_transport t);
/* One all-reduce of `bytes` inside a node (0 for one device), and across
 * the nodes (0 for one node; *tree, may be NULL: the tree won). */
double hp_comm_intra_s(const struct hp_comm_net *n, double bytes);
double hp_comm_inter_s(const struct hp_comm_net *n, double bytes, bool *tree);

struct hp_comm_time {
	double intra_s, inter_s; /* all buckets, one after another */
	double total_s;		 /* intra_s + inter_s */
	double exposed_s;	 /* what backward does not hide: the last bucket
				    starts when backward ends */
	int buckets, tree_buckets;
};
/* A step's all-reduce of grad_bytes, overlapped with backward_s of
 * backward (0: none; bucket i starts once backward has produced its
 * share of the gradients and the bucket before it is done). */
void hp_comm_ddp(const struct hp_comm_net *n, double grad_bytes,
		 double backward_s, struct hp_comm_time *out);

/*
 * The same on ndevices spread evenly over `nodes` nodes (a divisor of
 * ndevices), each node joined to the network by a link of net_gbps
 * (10^9 bits/s, line rate) and net_latency_us per hop: the all-reduce of
 * hp_comm_ddp() inside and across nodes, overlapped with backward
 * (comm_time_s is the part backward does not hide).  nodes 1 is
 * hp_estimator_predict().  HP_EINVAL for a node count or link out of
 * range.
 */
int hp_estimator_predict_nodes(const struct hp_estimator *est,
			       const struct hp_catalog *cat,
			       const struct hp_workload *w, const char *device,
			       int ndevices, int nodes, double net_gbps,
			       double net_latency_us, int family,
			       struct hp_prediction *out, struct hp_error *err);

/* Everything a prediction may be asked beyond the device type and count;
 * hp_predict_opts_init() gives: the estimator's family, fp32, one node. */
struct hp_predict_opts {
	int family;		     /* < 0: the estimator's own */
	enum hp_precision precision; /* HP_PREC_FP32 */
	int nodes;		     /* the devices spread over this many
					nodes (a divisor of ndevices); 1 */
	double net_gbps;	     /* nodes > 1: each node's link */
	double net_latency_us;	     /* ... and its latency per hop */
	enum hp_net_transport net_transport; /* ... and how the all-reduce
						crosses it; HP_NET_AUTO:
						socket for a GPU, tcp for a
						CPU */
	/* The input pipeline on the host (0, the default: not modelled):
	 * the CPU cores that prepare each GPU's samples (its data-loader
	 * workers), and one core's CPU seconds a sample
	 * (hp_loader_sample_s() of the host's measured figures, or the
	 * user's own).  A GPU's step is then at least
	 * per-device batch x input_sample_s / input_cores. */
	double input_cores;
	double input_sample_s;
};
void hp_predict_opts_init(struct hp_predict_opts *o);
/* hp_estimator_predict() with o (NULL: the defaults); the functions
 * above are this with one option each. */
int hp_estimator_predict_opts(const struct hp_estimator *est,
			      const struct hp_catalog *cat,
			      const struct hp_workload *w, const char *device,
			      int ndevices, const struct hp_predict_opts *o,
			      struct hp_prediction *out, struct hp_error *err);

/* The roofline baseline: total FLOPs / peak FP32 of t; NaN if unknown. */
double hp_roofline_time_s(const struct hp_workload *w,
			  const struct hp_device_type *t);

/* One line of the validation table. */
struct hp_validation_row {
	char data[16];	 /* "cpu-profiles", "public-gpu" */
	char family[16]; /* "physical", "linear", "roofline" */
	char scheme[32]; /* "k-fold", "leave-family-out",
			    "leave-device-out" */
	int n;		 /* predictions scored */
	double mape;	 /* mean absolute percentage error, % */
	double worst;	 /* largest absolute percentage error, % */
	double median;	 /* median absolute percentage error, % */
	char note[128];
	/* The noise floor of the rows scored: the median absolute
	 * percentage difference between a measurement of a configuration
	 * and its next repeat, of the absolute step times and of
	 * the times relative to the yardstick; NaN and 0 pairs: nothing was
	 * measured twice (not measured). */
	double noise_abs, noise_rel;
	int noise_pairs;
};
struct hp_validation {
	struct hp_validation_row *rows;
	int n;
	char notes[8][224]; /* what was left out of the data, and why */
	int nnotes;
};

/*
 * Cross-validate every family on the options' data: k-fold (folds),
 * leave-one-architecture-family-out on the profiles, and
 * leave-one-device-type-out on the public GPU measurements.  out is the
 * caller's (hp_validation_release()).
 */
int hp_estimator_validate(const struct hp_fit_options *o,
			  const struct hp_catalog *cat, int folds,
			  struct hp_validation *out, struct hp_error *err);
void hp_validation_release(struct hp_validation *v);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_ESTIMATE_H */
