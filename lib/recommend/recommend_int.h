/*
 * recommend_int.h - internals of the recommender shared by its files and
 * the unit tests: the per-type tables of step time and power by local
 * batch (from the estimator), the leaf cost of one configuration's
 * compute part (the batch split), the all-reduce terms, and the search.
 */
#ifndef HP_RECOMMEND_INT_H
#define HP_RECOMMEND_INT_H

#include "hetpool/recommend.h"

/* Largest local batch the tables hold. */
#define HP__REC_MAX_LOCAL 65536

/* One device type's predictions by local batch b = 1..local_max. */
struct hp__rec_tt {
	char name[32];
	bool ok;	       /* usable: predicted, power known, fits at 1 */
	char why[160];	       /* when not ok */
	int64_t local_fit_max; /* largest local batch that fits (capped) */
	int64_t local_max;     /* table size: min(local_fit_max, cap) */
	double *step_s;	       /* step time at b, [0] unused; nondecreasing */
	double *step_lo_s, *step_hi_s; /* its interval */
	double *power_w;	       /* power per device at b */
	double *step_pt_s;  /* the point step time at b when step_s holds a
			       quantile (hp__rec_model_judge()); NULL: none */
	double power_min_w; /* smallest power_w over b */
	/* predicted peak memory of a device: mem1_bytes at b = 1, affine
	 * in b with mem_slope_bytes a sample (hp__rec_tt_memory()) */
	double mem1_bytes, mem_slope_bytes;
	int npred; /* estimator calls made */
	/* the input pipeline: host cores a device, one core's s a sample
	 * (either 0: not modelled) */
	double input_cores, input_sample_s;
};

struct hp__rec_model {
	struct hp__rec_tt *tt;
	int ntypes;
	double grad_bytes; /* gradient bytes all-reduced per step */
	/* The all-reduce terms are multiplied by these (1: the point; more
	 * once hp__rec_model_judge() has made the tables a quantile): inside
	 * a node (HP_REC_COMM_LOG_Q90's spread), and across nodes (the
	 * pool's transports', comm_log_q90). */
	double comm_scale, net_scale;
	double confidence; /* the quantile the tables hold (0.5: point) */
	/* The 90th percentile of the across-node all-reduce's log error: the
	 * largest of the pool's transports' (hp_comm_transport_log_q90());
	 * 0 before hp__rec_model_pool(): HP_REC_COMM_LOG_Q90. */
	double comm_log_q90;
	const struct hp_catalog *cat; /* to tell a node's CPUs */
};

/*
 * Make m's step times the quantile `confidence` (0 < confidence < 1) of
 * each prediction's distribution, so that the search judges the deadline
 * on it: log(actual / point) taken as a split normal whose median is the
 * point and whose 10th and 90th percentiles are the interval's
 * (step_lo_s, step_hi_s); the all-reduce's log error likewise, with
 * HP_REC_COMM_LOG_Q90 as its 90th percentile.  Keeps the point in
 * step_pt_s.  0 or HP_ENOMEM.
 */
int hp__rec_model_judge(struct hp__rec_model *m, double confidence,
			struct hp_error *err);
/* The standard normal's quantile and distribution (GSL). */
double hp__rec_z(double p);
/*
 * The probability that c (from a search on m's judged tables) finishes
 * within deadline_s: the z at which its time, compute and all-reduce each
 * at their z-quantile, reaches the deadline, through the normal
 * distribution.  Also turns c's times and energies back into the point
 * predictions (step_time_s, time_s, energy_j and their intervals), with
 * the judged time in time_judged_s.
 */
void hp__rec_config_judge(const struct hp__rec_model *m,
			  struct hp_rec_config *c, double deadline_s);

/*
 * Build tables for the given catalog types up to local batch cap: the
 * estimator at a grid of local batches (all up to 8, then four per
 * octave, and the largest), linear in between.  Types that cannot be
 * used get ok false and why.  Release with hp__rec_model_release().
 */
int hp__rec_model_build(const struct hp_estimator *est,
			const struct hp_catalog *cat,
			const struct hp_workload *w1, const char *const *types,
			int ntypes, int64_t cap, struct hp__rec_model *m,
			struct hp_error *err);
/* The same with an input pipeline: input_cores[i] host cores feed each
 * device of types[i] (0: not modelled for it; NULL: for none), at
 * input_sample_s CPU seconds a sample. */
int hp__rec_model_build_in(const struct hp_estimator *est,
			   const struct hp_catalog *cat,
			   const struct hp_workload *w1,
			   const char *const *types, int ntypes, int64_t cap,
			   const double *input_cores, double input_sample_s,
			   struct hp__rec_model *m, struct hp_error *err);
void hp__rec_model_release(struct hp__rec_model *m);

/* The compute part of a configuration: how the batch is split. */
struct hp__rec_comp {
	double compute_s;		   /* the slowest type's step time */
	double compute_lo_s, compute_hi_s; /* its interval */
	double devices_power_w;		   /* all devices' power */
	int64_t samples[HP_REC_MAX_MIX];   /* of the global batch, per type */
	int64_t local_hi[HP_REC_MAX_MIX];  /* local batch of the first
					      n_at_hi devices */
	int n_at_hi[HP_REC_MAX_MIX];	   /* the rest at local_hi - 1 */
	double step_s[HP_REC_MAX_MIX];	   /* each type's step time */
	double power_w[HP_REC_MAX_MIX];	   /* each type's devices' power */
};

/*
 * The leaf: split the global batch B over n[j] devices of types ty[j]
 * (k types, 1 or 2) into whole local batches, at least 1 each, none over
 * its type's memory, minimising the slowest type's step time (within a
 * type the batch is spread evenly: local batches differ by at most 1).
 * 0 and *out, or -1 when no split fits.
 */
int hp__rec_compute(const struct hp__rec_model *m, const int *ty, const int *n,
		    int k, int64_t B, struct hp__rec_comp *out);

/* The all-reduce of g gradient bytes (hp_comm_ddp(): DDP's buckets, no
 * overlap): within a node of k devices over bw_gbps with
 * HP_REC_INTRA_LATENCY_S per message, and across m nodes over a node's
 * network link as hp__rec_node_net() gives it (the better of ring and
 * tree). */
double hp__rec_intra_s(double bw_gbps, int k, double g);
double hp__rec_inter_s(double payload_gbps, double msg_s, int m, double g);
/*
 * Node nd's network link as the all-reduce across nodes sees it, by its
 * transport (hp_comm_net_transport()): the payload it carries (line rate
 * x the transport's share, 10^9 bits/s) and what one message costs (two
 * hops of latency and the transport's overhead, s).  A better link has
 * more of the one and less of the other, so the search's bounds take the
 * largest and the smallest of each.
 */
void hp__rec_node_net(const struct hp__rec_model *m,
		      const struct hp_pool_node *nd, double *payload_gbps,
		      double *msg_s);
/* Set m->comm_log_q90 from the pool's transports. */
void hp__rec_model_pool(struct hp__rec_model *m, const struct hp_pool *pool);

/*
 * How the search goes about its work; either setting leaves the answer
 * exact (the tests set them to exercise every path).
 */
struct hp__rec_tuning {
	/* Most (intra x network) levels of one node count searched level
	 * by level; more are searched by halving rectangles. */
	int level_grid_max_cells;
	/* Nodes a packing's depth-first search visits before dynamic
	 * programming solves it instead (the DFS is faster on few classes,
	 * the DP bounded on many); 0: the DP wherever it applies. */
	long dfs_max_visits;
};
#define HP__REC_LEVEL_GRID_MAX_CELLS 256
#define HP__REC_DFS_MAX_VISITS 2000

/* What the search needs besides the pool. */
struct hp__rec_params {
	int64_t global_batch, steps;
	double deadline_s;
	int only_type; /* model type index, or -1 */
	int ndevices, nnodes;
	int max_mix;
	const struct hp__rec_tuning *tuning; /* NULL: the defaults */
};

/* Search stats for tests and the benchmark. */
struct hp__rec_stats {
	int64_t candidates; /* type sets x counts considered */
	int64_t evaluated;  /* packed in full */
	int64_t leaves;	    /* packing sub-problems solved */
	int64_t dp;	    /* of them, by dynamic programming */
};

/*
 * The fast search over pool for one global batch.  Fills out (choice,
 * pareto, rejected, feasible, reason).  0, or HP_ENOMEM.
 */
int hp__rec_search(const struct hp__rec_model *m, const struct hp_pool *pool,
		   const struct hp__rec_params *q, struct hp_rec_result *out,
		   struct hp__rec_stats *st, struct hp_error *err);

/*
 * Several searches over one pool, model and job that differ only in the
 * deadline (the exact front) share a session: the pool's classes and the
 * single types' candidates are made once.  hp__rec_search() is one
 * session, one search.  A session holds all the state its searches
 * change (search_int.h); the model and pool it reads are only read, so
 * sessions over the same ones may run on as many threads at once.  One
 * session is used by one thread at a time.
 */
struct hp__rec_session;
int hp__rec_session_new(const struct hp__rec_model *m,
			const struct hp_pool *pool,
			const struct hp__rec_params *q,
			struct hp__rec_stats *st, struct hp__rec_session **out,
			struct hp_error *err);
int hp__rec_session_search(struct hp__rec_session *S, double deadline_s,
			   struct hp_rec_result *out, struct hp_error *err);
void hp__rec_session_free(struct hp__rec_session *S);

/*
 * Replace out->pareto (out: S's search at the job's deadline) by the
 * exact time-energy front at k >= 2 deadlines: the fastest, the least
 * energy with no deadline, k - 2 between (geometric), and out's choice;
 * each the least energy at its time.  Sets out->pareto_exact.  0 or
 * HP_ENOMEM.
 */
int hp__rec_front(struct hp__rec_session *S, int k, struct hp_rec_result *out,
		  struct hp_error *err);

/* A deep copy of s into d (the caller releases it).  0 or HP_ENOMEM. */
int hp__rec_config_copy(struct hp_rec_config *d, const struct hp_rec_config *s);

/* Replace out->pareto by the time-energy front of cfgs[0..n): sorted by
 * time (cfgs too, in place), each using less energy than every faster
 * one; copies.  0 or HP_ENOMEM (out unchanged). */
int hp__rec_set_front(struct hp_rec_result *out, struct hp_rec_config *cfgs,
		      int n);

/* Type index in m of a catalog id, or -1. */
int hp__rec_type_index(const struct hp__rec_model *m, const char *name);

/* The predicted peak memory of one device of tt at local batch b (the
 * estimator's, affine in b); NaN when it was not predicted. */
double hp__rec_tt_memory(const struct hp__rec_tt *tt, int64_t b);

#endif
