/*
 * train.h - the parts of data-parallel training that need neither the
 * engine nor MPI, so they can be tested (and fuzzed) on their own: the IDX
 * data files (gzipped or not) and datasets in memory, the seeded shuffle,
 * the split of a global batch over ranks and its run-time rebalancing,
 * learning-rate rules and schedules, the checkpoint file and the metrics
 * lines.  The trainer (trainer/, the hetpool-train program) puts them
 * together with the engine and a communicator; docs/trainer.md describes
 * the whole.
 *
 * Ownership: structs are caller-owned and released with their *_release();
 * functions that return heap memory say so.  Nothing here prints.
 */
#ifndef HETPOOL_TRAIN_H
#define HETPOOL_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/recommend.h" /* enum hp_lr_rule, shared with plans */
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- IDX files ---------------------------------------------------------- */

/* Largest IDX data read, after decompression (bytes). */
#define HP_IDX_MAX_BYTES ((size_t)1 << 31)
#define HP_IDX_MAX_RANK 4

/*
 * An IDX file (LeCun's format, as MNIST and Fashion-MNIST ship): two zero
 * bytes, the element type (0x08 unsigned byte, 0x09 signed byte, 0x0B
 * int16, 0x0C int32, 0x0D float32, 0x0E float64), the rank, then each
 * dimension as a big-endian uint32, then the elements, big-endian.
 */
struct hp_idx {
	int type;
	int rank;
	int64_t dims[HP_IDX_MAX_RANK];
	int64_t count;	/* elements */
	int elem_bytes; /* 1, 2, 4 or 8 */
	void *data;	/* count * elem_bytes, as in the file */
};

/*
 * Parse an IDX file held in buf; gzip data (the magic 1f 8b) is inflated
 * first.  A wrong magic, a rank of 0 or above HP_IDX_MAX_RANK, a zero or
 * huge dimension, or a size that disagrees with the dimensions (short or
 * with bytes left over) is refused with HP_EPARSE and a message that says
 * which.  On success out->data is the caller's (hp_idx_release()).
 */
int hp_idx_parse(const void *buf, size_t len, struct hp_idx *out,
		 struct hp_error *err);
/* The same from a file; err's message does not name the file. */
int hp_idx_load(const char *path, struct hp_idx *out, struct hp_error *err);
void hp_idx_release(struct hp_idx *x);

/*
 * Inflate gzip data (one or more members) into a new buffer of at most
 * max_out bytes (HP_ETOOBIG beyond), *out the caller's (free()).
 */
int hp_gunzip(const void *in, size_t len, size_t max_out, void **out,
	      size_t *out_len, struct hp_error *err);

/* ---- datasets ----------------------------------------------------------- */

/*
 * A classification dataset in memory: n samples of C x H x W bytes and a
 * label each.  Batches are handed to the engine as floats
 * (x / 255 - mean) / std, with mean and std those of a training set's
 * pixels (hp_dataset_stats()).
 */
struct hp_dataset {
	int64_t n;
	int64_t shape[3]; /* C, H, W */
	int64_t classes;  /* largest label + 1 */
	uint8_t *x;	  /* n * C * H * W */
	uint16_t *y;	  /* n labels (an IDX file's are bytes) */
	double mean, std; /* of x / 255 */
};

/* Largest dataset held (bytes of pixels). */
#define HP_DATASET_MAX_BYTES ((size_t)4 << 30)
/* Most classes synthetic data draws (ImageNet models have 1,000). */
#define HP_DATASET_MAX_CLASSES 65536

/*
 * A dataset from an images file (unsigned bytes, N x H x W or N x C x H x
 * W) and a labels file (unsigned bytes, N).  Counts that disagree are
 * refused (HP_EPARSE).  The idx structs are left as they were.
 */
int hp_dataset_from_idx(const struct hp_idx *images,
			const struct hp_idx *labels, struct hp_dataset *out,
			struct hp_error *err);
/*
 * The Fashion-MNIST (or MNIST) layout in a folder: PREFIX-images-idx3-ubyte
 * and PREFIX-labels-idx1-ubyte, each possibly with ".gz", where PREFIX is
 * "train" or "t10k".  err names the file that is missing or bad.
 */
int hp_dataset_load_dir(const char *dir, const char *prefix,
			struct hp_dataset *out, struct hp_error *err);

/* Training samples of the trainer's --data fashion-mnist (the Debian
 * package's training set) and of --data synthetic (its default
 * --synthetic-samples, which a job submitted by hetpool does not change). */
#define HP_FASHION_MNIST_SAMPLES 60000
#define HP_SYNTHETIC_SAMPLES 16384
/*
 * The training samples the trainer will find in data: "fashion-mnist",
 * "synthetic", or a folder's (the count in its train-labels-idx1-ubyte,
 * plain before .gz, as hp_dataset_load_dir() takes them); 0 when that
 * cannot be read (the loading then says why).  A global batch must not be
 * larger.
 */
int64_t hp_train_data_samples(const char *data);
/*
 * n synthetic samples of shape with `classes` labels, the same for the
 * same arguments: each class has a random pattern and each sample is its
 * class's pattern plus noise, so a net can learn it.  split 0 and 1 draw
 * disjoint samples (train and test).
 */
int hp_dataset_synthetic(int64_t n, const int64_t shape[3], int64_t classes,
			 uint64_t seed, int split, struct hp_dataset *out,
			 struct hp_error *err);
void hp_dataset_release(struct hp_dataset *d);
/* Set d->mean and d->std from d's own pixels (std 1 for a constant set). */
void hp_dataset_stats(struct hp_dataset *d);
/* Samples idx[0..n) as normalized floats (n * C*H*W) and their labels. */
void hp_dataset_gather(const struct hp_dataset *d, const int64_t *idx,
		       int64_t n, float *x, int32_t *labels);

/* ---- the seeded shuffle and the split ----------------------------------- */

/*
 * perm gets a permutation of 0..n-1 for `epoch` (Fisher-Yates on a
 * splitmix64 stream seeded from seed and epoch): every rank computes the
 * same one.  Step s of an epoch takes the global batch perm[s*B .. s*B+B),
 * rank r its contiguous slice of it (hp_split_offsets()).
 */
void hp_shuffle(int64_t n, uint64_t seed, int64_t epoch, int64_t *perm);

/* global split evenly: the first global % ranks ranks get one more. */
void hp_split_even(int64_t global, int ranks, int64_t *local);
/*
 * global split in proportion to weight[] (largest remainder: each rank
 * gets its exact share rounded down, the rest goes one by one to the
 * ranks furthest below their share), every rank at least min_local.  HP_EINVAL
 * when that cannot be (ranks * min_local > global) or a weight is not finite
 * and positive.
 */
int hp_split_proportional(int64_t global, int ranks, const double *weight,
			  int64_t min_local, int64_t *local);
/* offset[r] = local[0] + ... + local[r-1]. */
void hp_split_offsets(const int64_t *local, int ranks, int64_t *offset);
/*
 * Parse "b1,b2,...": exactly ranks positive numbers that sum to global;
 * the message says what is wrong.
 */
int hp_split_parse(const char *s, int ranks, int64_t global, int64_t *local,
		   struct hp_error *err);

/*
 * Run-time rebalancing.  Each step's per-rank compute times go in; over a
 * window of steps the median time of each rank is taken, and when the
 * slowest is more than `threshold` (0.05: 5%) above the fastest, a new
 * split in proportion to each rank's throughput is advised; the global
 * batch stays.  The first `settle` steps after a change are not counted
 * (a rebuilt engine's first steps are slow).
 *
 * The throughput is not one window's: each rank's time per sample (median
 * time / local batch) is averaged over the windows since it last changed,
 * the newest weighing at least 1/memory (HP_REBALANCE_MEMORY, a field
 * that may be set after init; 1: the last window alone), so the noise of one
 * window does not throw the split back and forth (on a shared core a
 * 20-step median moves by 5-10% with the work even).  A rank's average
 * starts over when its local batch changes (its time per sample at another
 * batch is another quantity: on a shared core it moves with the split by
 * as much as the gap being closed) and when a window's time per sample
 * differs from it by more than HP_REBALANCE_JUMP (a third): its conditions
 * changed.
 *
 * A re-split is advised only when the averages, too, put the slowest more
 * than the threshold above the fastest, and by more than their noise: the
 * gap, in logs, beyond HP_REBALANCE_Z of its standard error.  A window
 * median's relative error is taken as 1.2533 x 1.4826 x MAD / sqrt(window) /
 * median (that of a median of normal times, the spread from the median
 * absolute deviation), or, when larger, as the windows of the split differ
 * from one another (a speed that drifts over tens of steps moves whole
 * windows, which no window's MAD shows); an average's error follows from its
 * windows' and their weights (1/sqrt(k) of a window's for k windows; a
 * running average over `memory` windows counts as 2 x memory - 1 of them).
 * A gap under HP_REBALANCE_JUMP also waits for a second window of the same
 * split.  So a gap the noise explains waits for the windows that show
 * whether it lasts.  And only when, by those averages, the new split makes
 * the slowest rank faster by more than half the threshold (each re-split
 * costs `settle` steps).
 *
 * The defaults were checked by replaying 66 recorded runs of a rank slowed
 * by a CPU hog (docs/trainer.md, "Why these settings"): no other memory
 * (1, 2, 8), jump (0.1-0.5), z (1-3) or window (10, 30, 40 steps) left the
 * ranks within 5% in more of them.
 */
#define HP_REBALANCE_MEMORY 4
#define HP_REBALANCE_JUMP (1.0 / 3.0)
#define HP_REBALANCE_Z 2.0
struct hp_rebalance {
	int ranks, window, settle;
	double threshold;
	double *times;	    /* window x ranks */
	double *dev;	    /* window: scratch for the MAD */
	double *per_sample; /* ranks: the averaged time per sample */
	double *err2;	    /* ranks: the averaged squared relative error
			       of a window median */
	double *weight2;    /* ranks: sum of the average's squared weights */
	double *between2;   /* ranks: averaged squared log difference of a
			       window's time per sample from the average */
	int64_t *local;	    /* ranks: the local batch of that average */
	int *windows;	    /* ranks: windows in that average */
	/* HP_REBALANCE_MEMORY, _JUMP and _Z; each may be set after init
	 * (benchmarks/bench_rebalance_replay.c compares settings) */
	int memory;
	double jump, z;
	int filled, skip;
};
int hp_rebalance_init(struct hp_rebalance *rb, int ranks, int window,
		      double threshold, int settle);
void hp_rebalance_release(struct hp_rebalance *rb);
/* Forget the window and skip the next `settle` steps (after a change);
 * the averaged times per sample are kept. */
void hp_rebalance_reset(struct hp_rebalance *rb);
enum hp_rebalance_verdict {
	HP_REBALANCE_WAIT = 0,	   /* the window is not full yet */
	HP_REBALANCE_BALANCED = 1, /* full: within the threshold, or no
				      better integer split exists */
	HP_REBALANCE_RESPLIT = 2,  /* full: new_local advised */
};
/*
 * Add one step: step_s[r] is rank r's compute time at local[r].  When a
 * window completes, med_s gets the per-rank medians and the window starts
 * over; on HP_REBALANCE_RESPLIT new_local gets the advised split (each at
 * least min_local).
 */
enum hp_rebalance_verdict hp_rebalance_add(struct hp_rebalance *rb,
					   const double *step_s,
					   const int64_t *local, int64_t global,
					   int64_t min_local, double *med_s,
					   int64_t *new_local);
/* max / min - 1 of n times (0 for n < 2; HUGE_VAL with a time <= 0). */
double hp_time_spread(const double *t, int n);

/* ---- learning rate ------------------------------------------------------- */

enum hp_lr_sched {
	HP_LR_CONSTANT,
	HP_LR_STEP,	/* x gamma every step_every steps */
	HP_LR_COSINE,	/* half a cosine from the peak to lr_min */
	HP_LR_EXP_RAMP, /* lr_min to lr_max exponentially over the run */
};
struct hp_lr_plan {
	double lr;	      /* the rate at ref_batch */
	enum hp_lr_rule rule; /* HP_LR_LINEAR, HP_LR_SQRT or HP_LR_NONE */
	int64_t ref_batch, global_batch;
	int64_t warmup_steps; /* linear from peak / W to the peak */
	enum hp_lr_sched sched;
	int64_t step_every;
	double gamma;
	double lr_min, lr_max;
	int64_t total_steps;
};
/* Defaults: lr 0.01, rule HP_LR_NONE, constant, gamma 0.1, lr_min 0. */
void hp_lr_plan_init(struct hp_lr_plan *p);
/* Every figure in range, with a message naming the option. */
int hp_lr_plan_check(const struct hp_lr_plan *p, struct hp_error *err);
/* The rate after the scaling rule (the warm-up's target). */
double hp_lr_peak(const struct hp_lr_plan *p);
/*
 * The rate of step `step` (0-based).  During the first warmup_steps steps
 * the rate is peak * (step + 1) / warmup_steps; then the schedule runs on
 * the steps after the warm-up.  exp-ramp ignores rule and warm-up: step s
 * of T gets lr_min * (lr_max / lr_min)^(s / (T - 1)).
 */
double hp_lr_at(const struct hp_lr_plan *p, int64_t step);
/* Names ("constant", "step", "cosine", "exp-ramp") and the parser
 * (HP_EINVAL for another name).  The rules' are hp_lr_rule_name() and
 * hp_lr_rule_parse() (recommend.h). */
const char *hp_lr_sched_name(enum hp_lr_sched s);
int hp_lr_sched_parse(const char *s, enum hp_lr_sched *out);

/* ---- checkpoints --------------------------------------------------------- */

/*
 * A checkpoint: named float tensors and a JSON object of the run's state
 * (the trainer's; jansson).  The file is
 *   "HPCKPT1\n", the header's length (uint64 little-endian), the header
 *   (JSON: {"format": "hetpool-checkpoint", "version": 1, "meta": {...},
 *   "tensors": [{"name": ..., "numel": ...}, ...]}), the tensors' floats
 *   (little-endian, in the header's order), and a CRC-32 (zlib's) of
 *   everything before it (uint32 little-endian).
 */
struct json_t;
struct hp_ckpt_tensor {
	char *name;
	int64_t numel;
	float *data;
};
struct hp_ckpt {
	struct json_t *meta; /* owned (a reference) */
	struct hp_ckpt_tensor *t;
	int n, alloc;
	void *block; /* hp_ckpt_parse_in_place()'s buffer, the tensors' */
};
#define HP_CKPT_MAX_TENSORS 65536
#define HP_CKPT_MAX_HEADER ((size_t)16 << 20)

void hp_ckpt_init(struct hp_ckpt *c);
void hp_ckpt_release(struct hp_ckpt *c);
/* Append a tensor; name and data are copied.  data NULL declares it
 * only: hp_ckpt_write_from()'s fill gives its floats as they are
 * written. */
int hp_ckpt_add(struct hp_ckpt *c, const char *name, int64_t numel,
		const float *data);
/* The tensor called name, or NULL. */
const struct hp_ckpt_tensor *hp_ckpt_find(const struct hp_ckpt *c,
					  const char *name);
/*
 * Write atomically (hp_atomic_file): to PATH.tmp.PID.N, fsync, rename over
 * path, fsync the folder.  A crash leaves the old file or the new one,
 * never a mix.
 */
int hp_ckpt_write(const char *path, const struct hp_ckpt *c,
		  struct hp_error *err);
/*
 * The same, the floats of each tensor declared without data got from
 * fill(ctx, i, buf, err) (tensor i's numel floats into buf) as it is
 * written: a buffer as large as the largest such tensor is all the extra
 * memory (a model's state is not copied whole).  A fill that fails (not 0)
 * removes the temporary file and its status is returned.
 */
typedef int (*hp_ckpt_fill_fn)(void *ctx, int i, float *buf,
			       struct hp_error *err);
int hp_ckpt_write_from(const char *path, const struct hp_ckpt *c,
		       hp_ckpt_fill_fn fill, void *ctx, struct hp_error *err);
/*
 * Read a checkpoint held in buf (or a file).  A wrong magic, a header that
 * is not the format above, sizes that disagree or a wrong CRC are refused
 * with HP_EPARSE and a message saying which.  out is initialized here and
 * the caller's afterwards (hp_ckpt_release(), also after a failure).
 */
int hp_ckpt_parse(const void *buf, size_t len, struct hp_ckpt *out,
		  struct hp_error *err);
/*
 * The same, reading buf (malloc()'d, len bytes) in place: on success the
 * tensors' floats are in buf, moved within it to a 16-byte boundary, and
 * out owns it (hp_ckpt_release() frees it): a checkpoint read needs no
 * second copy of its floats.  On failure buf is the caller's still, to
 * free (its bytes may have moved).
 * Tensors added to out after it are refused (HP_EINVAL).
 */
int hp_ckpt_parse_in_place(void *buf, size_t len, struct hp_ckpt *out,
			   struct hp_error *err);
/* Read path in place (hp_ckpt_parse_in_place()). */
int hp_ckpt_read(const char *path, struct hp_ckpt *out, struct hp_error *err);

/* FNV-1a 64 of n bytes, continuing from h (start with HP_FNV1A64_INIT). */
#define HP_FNV1A64_INIT 0xcbf29ce484222325ull
uint64_t hp_fnv1a64(const void *p, size_t n, uint64_t h);

/* ---- metrics ------------------------------------------------------------- */

/* One training step, as a line of metrics.jsonl (docs/trainer.md). */
struct hp_step_record {
	int64_t step; /* 1-based: steps done */
	int64_t epoch;
	double loss;	 /* of the step's global batch */
	double accuracy; /* of the step's global batch, before the update */
	double lr;
	int ranks;
	const int64_t *local;	   /* ranks */
	const double *step_s;	   /* compute per rank */
	const double *allreduce_s; /* per rank (includes waiting) */
	double wall_step_s;	   /* the whole step on rank 0 */
	double samples_per_s;	   /* global batch / wall_step_s */
	double elapsed_s;	   /* since the run started */
};
/* The record as one JSON line without a newline; caller frees; NULL on
 * ENOMEM. */
char *hp_step_record_json(const struct hp_step_record *r);

/*
 * Keep only the lines of a metrics file that come at or before `step` (a
 * line's "step", or "at_step" for events); the file is cut in place
 * (truncated where the first later line starts: needs no free space), and
 * a pipe or a device is left as it is.  A missing file is not an error.
 * Used by --resume, so the steps after the checkpoint are not listed
 * twice.
 */
int hp_metrics_truncate(const char *path, int64_t step, struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_TRAIN_H */
