/*
 * search_int.h - the search's own pieces, shared by its files and nothing
 * else:
 *   classes.c  the pool as the search sees it: nodes alike for it grouped
 *              into classes, per device type the fewest nodes for a count
 *              and the bounds that hold for any configuration;
 *   pack.c     the packing of one (types, counts) onto the classes at
 *              given link levels: caps, groups, the depth-first search,
 *              the configuration it makes and its cost;
 *   pack_dp.c  the same packing by dynamic programming, when the DFS
 *              finds it hard;
 *   levels.c   the search over node counts and link levels of one
 *              (types, counts);
 *   cands.c    the candidate (types, counts) with their lower bounds, and
 *              their evaluation in bound order;
 *   front.c    the time-energy front;
 *   session.c  the driver: type sets, phases, the choice and the rest.
 * All the state of a search is in its session: several sessions run at
 * once on as many threads.
 */
#ifndef HP_RECOMMEND_SEARCH_INT_H
#define HP_RECOMMEND_SEARCH_INT_H

#include "recommend/recommend_int.h"

/* Most device types one search handles (per-type bounds are arrays). */
#define HP__REC_MAX_TYPES 64

/* Nodes that are alike for the search: the same base power, links and
 * free devices of every type.  net_payload_gbps and net_msg_s are the
 * link as hp__rec_node_net() gives it. */
struct hp__rec_class {
	double base_w;
	double intra_gbps, net_payload_gbps, net_msg_s;
	int nnodes; /* nodes in the class */
	int *free;  /* free devices per model type */
	int *nodes; /* pool indices, nnodes of them */
	int free_max;
};

/* The pool as the search sees it, for one model and global batch. */
struct hp__rec_classes {
	struct hp__rec_class *cls; /* base ascending */
	int ncls;
	int ntypes;
	int *node_free; /* [node * ntypes + t]: free devices of type t */
	/* Per model type t. */
	int64_t **free_top; /* [t][r]: free devices of t on its r fullest
			       nodes */
	int *nodes_with;    /* [t]: nodes with free devices of t */
	int **fewest_nodes; /* [t][n], n <= fewest_nodes_max[t]: fewest
			       nodes that hold n of them */
	int *fewest_nodes_max;
	double *base_min_w; /* [t]: least base power of t's nodes */
	/* [t]: the best network figures of t's nodes */
	double *net_payload_max_gbps, *net_msg_min_s;
	/* [node]: its link (hp__rec_node_net()) */
	double *node_payload_gbps, *node_msg_s;
	/* [t]: per device, whatever the split: the most samples per second,
	 * the least energy per sample (J), and a line under the energy of
	 * one step at local batch b: step_j_at0 + step_j_per_sample x b. */
	double dev_samples_per_s_max[HP__REC_MAX_TYPES];
	double dev_j_per_sample_min[HP__REC_MAX_TYPES];
	double dev_step_j_at0[HP__REC_MAX_TYPES];
	double dev_step_j_per_sample[HP__REC_MAX_TYPES];
};

int hp__rec_classes_init(struct hp__rec_classes *cl,
			 const struct hp__rec_model *m,
			 const struct hp_pool *pool, int64_t global_batch,
			 struct hp_error *err);
void hp__rec_classes_release(struct hp__rec_classes *cl);
/* Fewest nodes that hold n free devices of type t, or -1. */
int hp__rec_fewest_nodes(const struct hp__rec_classes *cl, int t, int n);
/* Free devices of type t in the pool. */
int64_t hp__rec_free_total(const struct hp__rec_classes *cl, int t);

/* A single type's candidates: they depend neither on the deadline nor on
 * the phase, so a session makes them once. */
struct hp__rec_single {
	struct hp__rec_cand *cv;
	int n;
	bool done;
	char why[160];
};

struct hp__rec_pack;

struct hp__rec_session {
	const struct hp__rec_model *m;
	const struct hp_pool *pool;
	struct hp__rec_params q; /* deadline_s: this search's */
	struct hp__rec_tuning tune;
	struct hp__rec_classes cl;
	struct hp__rec_stats *st, own_stats;
	/* This search's costed configurations: each candidate's best. */
	struct hp_rec_config *costed;
	int ncosted, acosted;
	struct hp__rec_pack *pk;       /* the last type set's packing state */
	struct hp__rec_single *single; /* per type set; pairs unused */
	int nsingle;
};

/* The two objectives: least energy meeting the deadline, or, when no
 * configuration meets it, least time. */
enum hp__rec_phase { HP__REC_ENERGY = 0, HP__REC_TIME = 1 };

/*
 * The packing problem of one (types, counts), with what the packings of
 * its type set share whatever the counts.  Terms are the all-reduce's
 * time in seconds; bases are the nodes' base power in watts.
 */
struct hp__rec_pack {
	struct hp__rec_session *S;
	int type[HP_REC_MAX_MIX];  /* model type indices */
	int count[HP_REC_MAX_MIX]; /* devices of each */
	int ntypes;
	int *rel; /* relevant classes (free devices of a type of the set),
		     base ascending */
	int nrel;
	int nnodes; /* nodes to use */
	/* Per relevant class (nrel, + 1). */
	int (*cap)[2];	     /* devices of each type a node may take at the
				current levels (0: not eligible) */
	int (*take_best)[2]; /* nodes of the class taken for each type */
	/* Groups: the eligible classes with equal caps at the current
	 * levels, each a run of segments (classes, base ascending). */
	int ngroups;
	int cap_max; /* the largest free count of a relevant class */
	/* An open-addressing table from a class's caps (cap0 * (cap_max +
	 * 1) + cap1) to its group and segment count: caps_n slots (a power
	 * of two, over twice the classes), so its size and clearing follow
	 * the classes, not cap_max squared (2 nodes of 4096 GPUs made a
	 * 134 MB table, cleared at every level) */
	int caps_n;
	int64_t *caps_key; /* -1: empty */
	int *caps_group, *caps_cnt;
	int (*group_cap)[2];
	int *group_nodes, *group_seg0, *group_nseg;
	int (*group_take)[2], (*group_take_best)[2]; /* nodes per type */
	int *seg_rel;				     /* rel indices, grouped */
	double *group_base_min_w; /* cheapest base of each group */
	/* Suffixes over the groups g..: */
	int (*cap_max_from)[2];	 /* the largest cap per type */
	int *nodes_from;	 /* nodes */
	double *base_min_from_w; /* the least group_base_min_w */
	int *cap_count_from;	 /* [(g * (cap_max + 1) + v) * 2 + j]: nodes
				    with cap v for type j */
	/* The DFS. */
	bool first_only;    /* stop at the first packing (feasibility) */
	double best_base_w; /* best base so far (strict improvement) */
	bool found;
	long max_visits, visits; /* before the DP takes over (0: none) */
	bool aborted;
	bool nomem;  /* the DP ran out of memory */
	bool no_dp;  /* a hard DFS is left aborted (the caller bounds) */
	int *dp_buf; /* the DP's choices, kept across calls */
	size_t dp_cap;
	/* Of the type set, whatever the counts. */
	int rel_nodes;		/* nodes of the relevant classes */
	double rel_base_min_w;	/* least base of a relevant node */
	double *intra_levels_s; /* every intra-node term a relevant class
				   can reach, distinct, ascending */
	int nintra_levels;
	double *intra_s; /* intra_s[intra_s_at[i] + k]: relevant class i's
			    intra-node term with k devices (k = 0..free_max) */
	int *intra_s_at;
	double *intra_min_s; /* [k]: least intra-node term of k devices on
				a relevant node that has them free */
	/* Per node count m, filled as counts come up (max_nodes of them). */
	double **net_s_at;	  /* [m]: each relevant class's network term
				     with m nodes, or NULL */
	double **net_levels_s_at; /* [m]: those, distinct, ascending */
	int *nnet_levels_at, max_nodes;
};

/* pack.c */
/* The shared part of type set `type` (ntypes 1 or 2); NULL on ENOMEM. */
struct hp__rec_pack *hp__rec_pack_new(struct hp__rec_session *S,
				      const int *type, int ntypes);
void hp__rec_pack_free(struct hp__rec_pack *P);
/* Fill net_s_at[m] and net_levels_s_at[m] (once); 0 or HP_ENOMEM. */
int hp__rec_pack_net_levels(struct hp__rec_pack *P, int m);
/* Caps at levels (intra_max_s, net_max_s), net_s the node count's
 * network terms; whether a cap changed, *all_full whether every eligible
 * class takes all its free devices. */
bool hp__rec_set_caps(struct hp__rec_pack *P, const double *net_s,
		      double intra_max_s, double net_max_s, bool *all_full);
/* Groups and suffix bounds from the caps (after hp__rec_set_caps). */
void hp__rec_set_groups(struct hp__rec_pack *P);
/* The least base of P->nnodes nodes at the caps set, below below_w
 * (INFINITY: none), its packing in take_best: the DFS, the DP when the
 * DFS runs past its visits (unless no_dp). */
double hp__rec_least_base(struct hp__rec_pack *P, double below_w);
/* The configuration of take_best with compute part cp, costed; 0 or
 * HP_ENOMEM. */
int hp__rec_build_config(const struct hp__rec_pack *P,
			 const struct hp__rec_comp *cp,
			 struct hp_rec_config *cfg);
/* pack_dp.c */
/* Whether the DP applies at the current groups (each serves one type)
 * and its tables are of a sane size. */
bool hp__rec_dp_able(const struct hp__rec_pack *P);
/* 1 and group_take_best when a packing below best_base_w exists, 0 when
 * none, HP_ENOMEM. */
int hp__rec_dp_solve(struct hp__rec_pack *P);
/* levels.c */
/*
 * Solve the packing of (types, counts) whose compute part is cp: phase
 * HP__REC_ENERGY, the least energy meeting the deadline with energy below
 * bound; HP__REC_TIME, the least time below bound.  1 and cfg when one is
 * found, 0 when none, negative on ENOMEM.  The type set's shared part is
 * kept in S->pk for the next counts of the same set.
 */
int hp__rec_pack_solve(struct hp__rec_session *S, const int *type,
		       const int *count, int ntypes,
		       const struct hp__rec_comp *cp, enum hp__rec_phase phase,
		       double bound, struct hp_rec_config *cfg);

/* A candidate (types, counts) with its lower bounds. */
struct hp__rec_cand {
	int count[HP_REC_MAX_MIX];
	double time_lb_s, energy_lb_j;
	struct hp__rec_comp cp;
};

/* The best configuration of one type set, or why there is none. */
struct hp__rec_set_best {
	struct hp_rec_config cfg;
	bool have;
	char why[160];
};

/* cands.c */
/* A single type's candidates: every count the batch, memory and the job's
 * constraints allow; *out the caller's.  When none, why says so.  0 or
 * HP_ENOMEM. */
int hp__rec_cands_single(struct hp__rec_session *S, int t,
			 struct hp__rec_cand **out, int *nout, char *why,
			 size_t whylen);
/* A pair's candidates whose bounds could beat bound (energy: and meet
 * the deadline); *out the caller's.  0 or HP_ENOMEM. */
int hp__rec_cands_pair(struct hp__rec_session *S, int t0, int t1,
		       enum hp__rec_phase phase, double bound,
		       struct hp__rec_cand **out, int *nout);
/* Pack the candidates of one type set (sorted here) in order of their
 * bounds until a bound reaches the set's best (or, prune_by_global, the
 * phase's best *global_best): the set's best into sb, each costed
 * configuration kept in the session.  0 or HP_ENOMEM. */
int hp__rec_cands_run(struct hp__rec_session *S, const int *type, int ntypes,
		      struct hp__rec_cand *cv, int nc, enum hp__rec_phase phase,
		      double *global_best, struct hp__rec_set_best *sb,
		      bool prune_by_global);

#endif
