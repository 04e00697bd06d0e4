/*
 * recommend.h - the recommender: for a model, a dataset, a global batch
 * and a deadline, the configuration of least energy over a pool's free
 * devices that meets the deadline (or, when none does, the fastest), with
 * how to run it: the devices on each node, their local batch sizes, the
 * gradient weights and the learning-rate scale.  docs/recommender.md
 * gives the model of a configuration, the search and why it is exact.
 *
 * Ownership: struct hp_rec_job and struct hp_rec_result are the caller's;
 * hp_recommend() fills a result that hp_rec_result_release() frees.
 * hp_rec_result_json() returns text the caller frees.
 */
#ifndef HETPOOL_RECOMMEND_H
#define HETPOOL_RECOMMEND_H

#include <stdbool.h>
#include <stdint.h>

#include "hetpool/device.h"
#include "hetpool/estimate.h"
#include "hetpool/pool.h"
#include "hetpool/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Learning-rate rule when the global batch differs from the reference. */
enum hp_lr_rule {
	HP_LR_LINEAR = 0, /* lr x B / B_ref (Goyal et al. 2017) */
	HP_LR_SQRT = 1,	  /* lr x sqrt(B / B_ref) */
	HP_LR_NONE = 2,	  /* unchanged */
};
const char *hp_lr_rule_name(enum hp_lr_rule r);
int hp_lr_rule_parse(const char *s, enum hp_lr_rule *out);

/* Most device types in one configuration (mixed configurations are pairs). */
#define HP_REC_MAX_MIX 2

/* What to train and the user's constraints. */
struct hp_rec_job {
	int64_t samples;	      /* dataset size */
	int64_t epochs;		      /* or 0: steps given */
	int64_t steps;		      /* or 0: from epochs */
	int64_t batch;		      /* global batch, or 0: bounds */
	int64_t batch_min, batch_max; /* candidate global batches: the
					 powers of two within (at least
					 one; hp_rec_batches()) */
	int64_t ref_batch;	      /* the user's reference (0: batch) */
	enum hp_lr_rule lr_rule;      /* default linear */
	double deadline_s;	      /* wall clock */
	const char *device_type;      /* NULL: any */
	int ndevices;		      /* 0: any */
	int nnodes;		      /* 0: any */
	int max_mix;		      /* 0: HP_REC_MAX_MIX */
	int front;	   /* 0: `pareto` holds the configurations the search
			      costed; K (2..HP_REC_FRONT_MAX): the exact front at K
			      deadlines from the fastest to the least energy */
	double confidence; /* the deadline is judged on this quantile of
			      the predicted time (0 < c < 1); 0:
			      HP_REC_CONFIDENCE */
	/* The input pipeline (docs/estimator.md): one host core's CPU
	 * seconds a sample (decode, augmentation); 0: not modelled.  Each
	 * GPU type's step is then at least local batch x this / the cores
	 * per device of the pool's nodes that hold it (a node's cpu_cores
	 * over all its devices; the fewest over those nodes). */
	double input_sample_s;
};

/* Most deadlines of an exact time-energy front. */
#define HP_REC_FRONT_MAX 16

/* Devices of one type on one node, all at one local batch. */
struct hp_rec_group {
	int node; /* index in the pool */
	char type[32];
	int count;
	int64_t local_batch;
	double grad_weight; /* local_batch / global_batch, per device */
	enum hp_net_transport transport; /* its node's, resolved */
	double memory_bytes; /* predicted peak memory of each device at
				local_batch (the estimator's); NaN: not known */
};

/* One device type's part of a configuration. */
struct hp_rec_type {
	char type[32];
	int count;
	int64_t batch;	     /* samples of the global batch it takes */
	int64_t local_max;   /* its largest local batch */
	double step_time_s;  /* compute at local_max (estimator) */
	double power_w;	     /* all its devices */
	double memory_bytes; /* predicted peak memory of a device at
				local_max; NaN: not known */
};

struct hp_rec_config {
	struct hp_rec_group *groups; /* owned */
	int ngroups;
	struct hp_rec_type types[HP_REC_MAX_MIX];
	int ntypes;
	int ndevices, nnodes;
	int64_t global_batch, steps;
	double lr_scale;
	int64_t warmup_steps;
	double compute_time_s; /* slowest type's compute */
	double comm_time_s;    /* all-reduce: intra + inter */
	double intra_time_s, inter_time_s;
	double step_time_s, step_time_lo_s, step_time_hi_s;
	double startup_s;
	double time_s, time_lo_s, time_hi_s;
	double power_w; /* devices + nodes' base */
	double energy_j, energy_lo_j, energy_hi_j;
	bool meets_deadline;	     /* time_judged_s within the deadline */
	double time_judged_s;	     /* the job's time at the confidence
					quantile: what the deadline is
					judged on */
	double deadline_probability; /* that the job ends by the deadline */
};

/* A configuration that lost, and why. */
struct hp_rec_reject {
	struct hp_rec_config cfg; /* ngroups 0: none could be built */
	char what[64];		  /* "h100-sxm", "a100-80+v100" */
	char reason[160];
};

struct hp_rec_result {
	bool feasible;	  /* a configuration meets the deadline */
	bool found;	  /* choice holds a configuration */
	char reason[256]; /* why not feasible ("" when feasible) */
	struct hp_rec_config choice;
	struct hp_rec_config *pareto; /* sorted by time */
	int npareto;
	bool pareto_exact; /* each point the least energy at its time */
	struct hp_rec_reject *rejected;
	int nrejected;
	double deadline_s;
	double confidence;   /* the quantile the deadline was judged on */
	double comm_log_q90; /* the all-reduce's log error at its 90th
				percentile: the pool's transports' largest */
	int64_t evaluated;   /* configurations costed in full */
	char notes[4][160];  /* types left out and why */
	int nnotes;
};

/* The constants of the configuration model (docs/recommender.md). */
#define HP_REC_STARTUP_S 60.0	    /* per job */
#define HP_REC_STARTUP_NODE_S 5.0   /* per node used */
#define HP_REC_INTRA_LATENCY_S 5e-6 /* per ring step inside a node */
#define HP_REC_OVERLAP 0.0	    /* share of comm hidden by backward */
#define HP_REC_WARMUP_EPOCHS 5	    /* linear warm-up when lr_scale > 1 */
#define HP_REC_CONFIDENCE 0.9	    /* default quantile judged */
/* 90th percentile of |log(measured / predicted)| of the all-reduce model
 * out of sample (the namespace runs of 4 and 2 ranks, 1-64 MB, 200 and
 * 1000 Mbit/s: docs/estimator.md, "Multi-GPU"). */
#define HP_REC_COMM_LOG_Q90 0.4

/*
 * Recommend for the model w1 (a workload analysed at batch 1) on the
 * pool.  Bad job fields are refused with HP_EINVAL and a message naming
 * the field: among them batch bounds that hold no power of two, and a
 * global batch (or batch_max) larger than samples.  A job nothing can run
 * is not an error (result->found false, result->reason says why).  out is
 * the caller's (hp_rec_result_release()).
 */
int hp_recommend(const struct hp_estimator *est, const struct hp_catalog *cat,
		 const struct hp_workload *w1, const struct hp_pool *pool,
		 const struct hp_rec_job *job, struct hp_rec_result *out,
		 struct hp_error *err);
void hp_rec_result_release(struct hp_rec_result *r);

/* Most global batches one job searches (the powers of two up to 2^24). */
#define HP_REC_MAX_BATCHES 25

/*
 * The global batches hp_recommend() searches for job, ascending, into out
 * (room for HP_REC_MAX_BATCHES): job->batch alone when set, else every
 * power of two within [batch_min, batch_max].  Returns how many; 0 when
 * the bounds hold no power of two (or are not set).
 */
int hp_rec_batches(const struct hp_rec_job *job, int64_t *out);
void hp_rec_config_release(struct hp_rec_config *c);

/*
 * The result as JSON text (keys in docs/recommender.md); the caller frees
 * it.  NULL on ENOMEM.
 */
char *hp_rec_result_json(const struct hp_rec_result *r,
			 const struct hp_rec_job *job,
			 const struct hp_pool *pool);
/* The same with flags: HP_REC_JSON_COMPACT leaves out the indentation
 * (what a service sends: a third shorter, and faster to write). */
#define HP_REC_JSON_COMPACT 1u
char *hp_rec_result_json_ex(const struct hp_rec_result *r,
			    const struct hp_rec_job *job,
			    const struct hp_pool *pool, unsigned flags);

/*
 * Parse a duration: "90m", "2h", "1h30m", "45s", "1d", "1.5h" or plain
 * seconds ("3600").  Units d, h, m, s, each at most once, largest first.
 * HP_EINVAL (empty, garbage, zero, negative) or HP_ERANGE (over 10 years),
 * with a message naming the value.
 */
int hp_parse_duration(const char *s, double *seconds, struct hp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* HETPOOL_RECOMMEND_H */
