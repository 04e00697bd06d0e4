/*
 * measure.h - public measurements of deep-learning training on GPUs,
 * shipped under data/measurements/ (provenance in its README.md), read into
 * one record type that the estimator fits on:
 *   - Lambda Labs deeplearning-benchmark: training throughput (samples/s)
 *     of 9 models, fp32 and fp16, on 1/2/4/8 GPUs of ~15 types;
 *   - Gavel: training steps/s of 26 job configurations on K80, P100, V100;
 *   - Zeus: time per epoch and measured average GPU power at each power
 *     limit, on V100, P100 and Quadro RTX 6000.
 *
 * Ownership: the loaders append to a caller-owned struct hp_measure_set,
 * released with hp_measure_set_release(); records hold no pointers.
 */
#ifndef HETPOOL_MEASURE_H
#define HETPOOL_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetpool/device.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One measured configuration.  NaN (or 0 for counts) when not known. */
struct hp_measurement {
	char source[16];  /* "lambda", "gavel", "zeus" */
	char model[64];	  /* as the source names it: "resnet50", "ResNet-18" */
	char dataset[32]; /* "imagenet", "cifar10", ...; "" if not stated */
	char device[32];  /* catalog id of the GPU type */
	char system[64];  /* the source's own name for the GPU or system */
	char optimizer[16];   /* Zeus; "" elsewhere */
	int ndevices;	      /* GPUs working together */
	int64_t batch;	      /* global batch over all ndevices; 0: unknown */
	double samples_per_s; /* global training throughput */
	double step_time_s;   /* one optimizer step (batch / samples_per_s) */
	double epoch_time_s;  /* Zeus: one epoch over the dataset */
	double power_w;	      /* measured average power per GPU; NaN: none */
	double power_limit_w; /* Zeus: the GPU power limit set; NaN elsewhere */
	double energy_j_per_sample; /* power_w x ndevices / samples_per_s */
	bool fp16;		    /* mixed precision (Lambda's fp16 table) */
	bool default_power; /* Zeus: the row at the highest power limit (the
			     * GPU's default); true for the other sources */
	bool consolidated;  /* Gavel: false for GPUs spread over servers */
};

struct hp_measure_set {
	struct hp_measurement *v;
	size_t n, alloc;
	size_t nskipped;  /* cells with no measurement (0.0, empty) */
	size_t nrejected; /* outliers dropped (logged at HP_LOG_INFO) */
};

void hp_measure_set_init(struct hp_measure_set *s);
void hp_measure_set_release(struct hp_measure_set *s);

/*
 * The catalog type for a GPU name as a source writes it, or NULL.  Strips
 * a system vendor ("LambdaCloud", "Lambda Cloud", "Dell", "SMC", "1CC")
 * and a GPU count ("2x ", "4xV100"), which goes to *ndevices (1 without
 * one; ndevices may be NULL), then resolves the rest with
 * hp_catalog_find().  source ("lambda", "gavel", "zeus" or NULL) applies
 * what is known of that source's hardware: Zeus's "v100" is a V100 PCIe
 * (its power limits top out at 250 W).
 */
const struct hp_device_type *hp_measure_device(const struct hp_catalog *cat,
					       const char *source,
					       const char *name, int *ndevices);

/*
 * Lambda: DIR/pytorch-train-throughput-fp32.csv and -fp16.csv, and the
 * global batch sizes of DIR/pytorch-train-bs-fp32.csv and, when present,
 * DIR/pytorch-train-bs-fp16.csv (without it fp16 rows have batch 0:
 * unknown).  A multi-GPU cell whose per-GPU throughput is more than
 * twice the best single-GPU throughput of the same model, precision and
 * GPU type is rejected as an outlier (some 4x/8x H100 NCF cells read
 * ~1e10 samples/s).  Lambda's "watt" column is nominal board power, not a
 * measurement: power_w stays NaN.
 */
int hp_measure_load_lambda(struct hp_measure_set *s,
			   const struct hp_catalog *cat, const char *dir,
			   struct hp_error *err);
/*
 * Gavel: simulation_throughputs_isolated.csv (steps/s).  0.0 = infeasible,
 * skipped; *_unconsolidated columns are kept with consolidated = false for
 * more than one GPU (for one GPU they repeat the consolidated figure).
 * The batch size in a job's name is per worker (one per GPU): batch =
 * that x ndevices.
 */
int hp_measure_load_gavel(struct hp_measure_set *s,
			  const struct hp_catalog *cat, const char *path,
			  struct hp_error *err);
/*
 * Zeus: summary_power_GPU.csv (GPU from the file name when gpu is NULL).
 * samples_per_s and energy_j_per_sample only for datasets of known size
 * (cifar100: 50,000 and imagenet: 1,281,167 training samples); the others
 * keep epoch_time_s and power_w only.
 */
int hp_measure_load_zeus(struct hp_measure_set *s, const struct hp_catalog *cat,
			 const char *path, const char *gpu,
			 struct hp_error *err);
/* All of DIR/lambda/, DIR/gavel/ and DIR/zeus/summary_power_*.csv. */
int hp_measure_load_dir(struct hp_measure_set *s, const struct hp_catalog *cat,
			const char *dir, struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_MEASURE_H */
