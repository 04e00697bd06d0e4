/*
 * perf.h - measuring performance: sweeps of customized CNNs (the design's
 * variables: conv layers, filters, FC layers, FC width, input size, batch
 * size) and the dataset the profiler appends to, row by row.
 *
 * Ownership: hp_sweep_* fill a caller-owned struct hp_sweep released with
 * hp_sweep_release(); dataset rows are caller-owned structs of fixed-size
 * strings.
 */
#ifndef HETPOOL_PERF_H
#define HETPOOL_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "hetpool/model.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The design's variables of one generated CNN (hp_sweep_vars_init() fills
 * the defaults, in brackets): conv_layers [2] times [conv kernel x kernel
 * [3] at stride [1] with pad kernel/2 and `filters` [32] filters, batch
 * norm if bn [true], relu, 2x2 pooling (max [pool_avg false] or average)
 * while the image is 8 or more], then fc_layers [1] - 1 hidden fully
 * connected layers of fc_width [128] units with relu (and dropout [0] if
 * above 0), then one to `classes` [10]; input channels [3] x input_size
 * [32] squared.  The conv layers after the first (they read `filters`
 * channels) take groups [1] groups, or, if separable [false], the
 * depthwise-separable form (MobileNet's): a depthwise conv (groups ==
 * filters) with its bn and relu, then a 1x1 pointwise conv in `groups`
 * groups.  residual [false] makes each conv layer a basic block: a second
 * conv of the same kind at stride 1 and its bn, summed with the first's
 * output (identity shortcut), then relu.
 */
struct hp_sweep_vars {
	int conv_layers;
	int64_t filters;
	int fc_layers;
	int64_t fc_width;
	int64_t input_size;
	int64_t channels, classes;
	bool bn;
	double dropout;
	int kernel; /* odd, 1 to 15 */
	int stride; /* 1 to 4 */
	bool pool_avg;
	int64_t groups; /* divides filters */
	bool separable, residual;
};
void hp_sweep_vars_init(struct hp_sweep_vars *v);

/* One configuration to measure: a spec at a batch size. */
struct hp_sweep_config {
	char id[96];	 /* stable: the same variables give the same id */
	char family[32]; /* architecture family, e.g. "c3-f2" */
	struct hp_spec spec;
	int64_t batch;
	/* The structural variables (0 for explicit specs where unknown). */
	int conv_layers;
	int64_t filters;
	int fc_layers; /* fully connected layers, the classifier included */
	int64_t fc_width;
	int64_t input_size;
	/* All the variables of a generated CNN (zero for explicit specs). */
	struct hp_sweep_vars vars;
};

struct hp_sweep {
	struct hp_sweep_config *configs;
	int n;
};

/*
 * Parse a sweep file:
 *   {"conv_layers": [1,2,3], "filters": [16,32], "fc_layers": [1,2],
 *    "fc_width": [128], "input_size": [32], "batch": [16,64],
 *    "channels": [3], "classes": [10], "bn": true, "dropout": 0,
 *    "kernel": [3], "stride": [1], "pool": "max", "groups": [1],
 *    "separable": false, "residual": false,
 *    "sample": 0, "seed": 1, "specs": ["extra.json"]}
 * Every variable takes one value or a list ("bn": [true, false], "pool":
 * ["max", "avg"], "dropout": [0, 0.5]); every combination of the lists is
 * a configuration ("sample": N keeps N of them, drawn with the seed; the
 * same draw as before for a sweep that leaves kernel, stride, pool,
 * channels, classes, bn, dropout, groups, separable and residual at one
 * value); "specs" adds explicit spec files (paths relative to base_dir)
 * at each batch size.  A list of such objects (at most 16) is their
 * union, in order, a configuration drawn twice kept once.  The text
 * of a built-in sweep's name ("default", "wide", "calibrate":
 * hp_sweep_named_json), or NULL for "default", gives that sweep.
 */
int hp_sweep_parse(const char *json, size_t len, const char *base_dir,
		   struct hp_sweep *out, struct hp_error *err);
int hp_sweep_default(struct hp_sweep *out, struct hp_error *err);
/* Fill c->id ("spec:NAME-HASH:bN", NAME reduced to [A-Za-z0-9._-], HASH of
 * the spec's JSON, so different specs never share an id) and c->family
 * for an explicit spec at batch. */
void hp_sweep_spec_ids(const struct hp_spec *sp, int64_t batch,
		       struct hp_sweep_config *c);
void hp_sweep_release(struct hp_sweep *s);
/* The JSON text of the built-in default sweep (static). */
const char *hp_sweep_default_json(void);
/* The JSON text (static) of a built-in sweep by name, NULL for another:
 * "default" (360 configurations of the classic grid), "wide" (400 drawn
 * from every variable: kernels 1-7, strides, pooling, channels, batch
 * norm, dropout, classes; then 100 with grouped, depthwise-separable and
 * residual convs) and "calibrate" (24 plain ones that span them and 6
 * whose 3x3 convs reach 2x2-4x4 maps, a few seconds each: a quick
 * profile of a new host). */
const char *hp_sweep_named_json(const char *name);

/*
 * Build the customized CNN for the structural variables: conv_layers times
 * [conv 3x3 pad 1 with `filters` filters, bn (if bn), relu, 2x2 max pool
 * while the image is 8 or more], then fc_layers - 1 hidden fc layers of
 * fc_width units with relu (and dropout if > 0), then fc to classes.
 */
int hp_sweep_make_spec(int conv_layers, int64_t filters, int fc_layers,
		       int64_t fc_width, int64_t input_size, int64_t channels,
		       int64_t classes, bool bn, double dropout,
		       struct hp_spec *out, struct hp_error *err);
/* The same for all the variables (struct hp_sweep_vars); its name is
 * "cnn-cL-kF-fN-wW-sS" with "-ksK", "-stT", "-avg" added for a kernel,
 * stride or pooling off the defaults, and "-gG", "-sep", "-res" for
 * groups, separable and residual.  HP_EINVAL out of range (groups that
 * do not divide filters among it). */
int hp_sweep_make_spec_vars(const struct hp_sweep_vars *v, struct hp_spec *out,
			    struct hp_error *err);

/* One measured configuration: a row of the dataset CSV. */
struct hp_profile_row {
	char config_id[96];
	char family[32];
	char spec_json[65536]; /* a DenseNet-201 takes 29 KB */
	int64_t batch;
	int conv_layers;
	int64_t filters;
	int fc_layers;
	int64_t fc_width;
	int64_t input_size;
	/* From the analysis. */
	int64_t params;
	int64_t macs_per_sample;
	double flops_fwd, flops_bwd; /* whole batch */
	int64_t activations_bytes;
	/* The measurement. */
	char device[32];       /* device type: "cpu" or a catalog id */
	char device_name[128]; /* CPU model or GPU name */
	char backend[128];     /* e.g. "oneDNN 2.6.3 avx2, 2 threads" */
	char host[64];
	char driver[64]; /* GPU driver, "" on the CPU */
	int threads;
	char optimizer[8];
	double step_time_s;  /* median */
	double step_time_cv; /* stdev / mean of the timed steps */
	double step_time_min_s, step_time_p90_s;
	/* Where the step's time went, from timing every layer (CPU; NaN: not
	 * measured): the mean per step of the conv layers, the fully
	 * connected layers, the others (norm, activation, pool, dropout),
	 * each with its parameters' update, and of the loss. */
	double time_conv_s, time_fc_s, time_other_s, time_loss_s;
	/* Share of the timed interval the profiler's threads waited for a
	 * CPU (run-queue delay / (threads x time)): near 0 on a quiet host;
	 * NaN: not known.  Of the last of `attempts` measurements (a busy
	 * host is measured again). */
	double cpu_pressure;
	int attempts;
	/* The yardstick: median seconds of a fixed reference training step
	 * (engine/profile.c) timed between this row's steps on the same
	 * threads, the spread (stdev / mean) and count of its samples; the
	 * host's speed while the row was measured.  NaN (0 steps): not
	 * measured (older datasets, a backend that could not run it). */
	double ref_time_s, ref_time_cv;
	int ref_steps;
	/* The CPU host's figures at the threads used, so a fit made on
	 * another machine knows the host these times belong to: its ISA
	 * FP32 peak estimate (GFLOP/s), and from its host file the measured
	 * sgemm GFLOP/s, STREAM triad GB/s and cache bytes (L2 + L3).  NaN:
	 * not known (GPU rows, older datasets, peaks not measured). */
	double host_isa_gflops, host_sgemm_gflops, host_triad_gbs;
	double host_cache_bytes;
	int steps, warmup_steps;
	int64_t peak_mem_bytes;	  /* allocated by the engine */
	int64_t peak_rss_bytes;	  /* the process, from getrusage */
	double energy_per_step_j; /* NaN: not measured */
	double power_w;		  /* NaN: not measured */
	char energy_source[32];	  /* "nvml", or "not measured" */
	char timestamp[32];	  /* UTC, ISO 8601 */
	char hetpool_version[16];
};

/* The dataset's columns, in order, and the header line (no newline). */
const char *hp_dataset_header(void);
/* Append one row as a CSV line (with the newline) to b. */
int hp_dataset_format_row(const struct hp_profile_row *r, struct hp_buf *b);
/*
 * Read a dataset file: calls fn for each complete row.  The last record
 * of a file that does not end in a newline is a row when it is complete;
 * when it is not (an open quote, fewer fields than the header: a kill
 * mid-write) it is left out and its size reported through *torn_bytes so
 * the caller can cut it.  Returns 0 or a negative code (err names the
 * line).
 */
/* Called for each row with the line it starts on; a negative return stops
 * the read, which returns it with err's message (set by fn, or the code's)
 * after "line N: ". */
typedef int (*hp_dataset_row_fn)(const struct hp_profile_row *r, int line,
				 void *ud, struct hp_error *err);
int hp_dataset_read(const char *path, hp_dataset_row_fn fn, void *ud,
		    int64_t *torn_bytes, struct hp_error *err);
/* The same on text in memory (len bytes, need not be NUL-terminated). */
int hp_dataset_parse(const char *text, size_t len, hp_dataset_row_fn fn,
		     void *ud, int64_t *torn_bytes, struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_PERF_H */
